"""Declared dependencies between evidence items: a plugin `uses` others, the engine runs them first (spec order
otherwise) and hands their results over; `dataset` and `governance` are ordinary plugins every audit has."""

from __future__ import annotations

import pytest

from auditor.evidence import ALWAYS, ALWAYS_PRESENT, REGISTRY, run_order
from auditor.evidence.options import EvidenceOptions
from auditor.evidence.registry import EvidenceKind


def _plugin(name: str, uses: tuple[str, ...] = ()) -> EvidenceKind:
    return EvidenceKind(name, EvidenceOptions, __name__, name, name, "auditor.evidence.costs:none", uses=uses)


def test_run_order_puts_used_items_first_and_keeps_spec_order_otherwise() -> None:
    plugins = {p.name: p for p in (_plugin("a"), _plugin("b", uses=("d",)), _plugin("c"), _plugin("d"),
                                   _plugin("e", uses=("b", "missing")))}
    assert run_order(["a", "b", "c", "d", "e"], plugins) == ["a", "c", "d", "b", "e"]
    assert run_order(["e", "d", "b"], plugins) == ["d", "b", "e"]
    assert run_order(["b", "a"], plugins) == ["b", "a"]  # a used kind that is not requested is not added
    assert run_order(["disclosure_consistency", "ranking_quality", "surrogate"]) == [
        "ranking_quality", "surrogate", "disclosure_consistency"]


def test_a_cycle_of_uses_is_a_registry_error() -> None:
    plugins = {p.name: p for p in (_plugin("a", uses=("b",)), _plugin("b", uses=("a",)), _plugin("c"))}
    with pytest.raises(ValueError, match="cycle: a, b"):
        run_order(["a", "b", "c"], plugins)


def test_every_used_kind_is_registered_and_the_always_present_items_are_plugins() -> None:
    for plugin in REGISTRY.values():
        assert set(plugin.uses) <= set(REGISTRY), plugin.name
    assert run_order(list(REGISTRY)) and "surrogate" in REGISTRY["disclosure_consistency"].uses
    assert tuple(ALWAYS) == ALWAYS_PRESENT and not set(ALWAYS) & set(REGISTRY)  # never requested in a spec
