"""What the explainer items' options share: one field per explainer options section of the registry (`kernelshap:`,
`lime:`, ...) and the `methods:`-style lists, checked against the registry. Light: the spec imports it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import Field, create_model, field_validator

from auditor.evidence.options import EvidenceOptions
from auditor.explain import registry

OptionsT = TypeVar("OptionsT", bound=EvidenceOptions)


def with_sections(model: type[OptionsT], kinds: tuple[registry.Kind, ...] = ("attribution", "selection")
                  ) -> type[OptionsT]:
    """`model` with one field per options section of the registry's explainers of these kinds (`kernelshap:`,
    `lime:`, ...), each defaulting to the section's defaults: a new explainer's options reach every item that
    runs it without editing these items."""
    fields: dict[str, Any] = {name: (options, options()) for name, options in registry.sections(kinds).items()}
    return create_model(model.__name__, __base__=model, __module__=model.__module__, __doc__=model.__doc__,
                        **fields)  # the same class to a type checker: the sections are read with getattr


def method_list(default: list[str], *, allowed: Callable[[], list[str]], description: str) -> Any:
    """A `methods:`-style field: a non-empty list of registry names (checked by `check_methods`), the allowed ones
    listed in the JSON Schema."""
    def schema(extra: dict[str, Any]) -> None:
        extra.setdefault("items", {})["enum"] = allowed()

    return Field(default, min_length=1, description=description, json_schema_extra=schema)


def methods_validator(field: str, allowed: Callable[[], list[str]], what: str = "explainer") -> Any:
    """The validator of a `method_list` field: known names, duplicates dropped (first kept)."""
    def check(cls: Any, value: list[str]) -> list[str]:
        return registry.check_names(value, allowed(), what)

    return field_validator(field)(classmethod(check))


def method_names() -> list[str]:
    return list(registry.methods())


def judged_method_names() -> list[str]:
    """The methods whose explanations someone might rely on (every one but baselines such as RANDOM), judged under
    the audit's masking (so not the search under local explanations' background rows)."""
    return [name for name, m in registry.methods().items()
            if not m.explainer.baseline and not m.explainer.background_rows]


def default_method_names() -> list[str]:
    return registry.default_methods()


def attribution_names() -> list[str]:
    """The attribution explainers compared with per-document ground truth (decision paths): listwise ones, whose
    one row explains the whole query, are not among them."""
    return [e.name for e in registry.attribution_explainers() if e.per_document]
