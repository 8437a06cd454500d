"""The explainer registry: a new explainer is one class and one registry entry, and it reaches every evidence item
that runs explainers."""

from __future__ import annotations

import numpy as np
import pytest

from auditor.evidence.kinds.confidence import ENTRY as CONFIDENCE
from auditor.evidence.kinds.confidence import measure as confidence
from auditor.evidence.kinds.decision_path_accuracy import measure as decision_path_accuracy
from auditor.evidence.kinds.local_explanations import ENTRY as LOCAL
from auditor.evidence.kinds.local_explanations import measure as local_explanations
from auditor.explain import costs, registry
from auditor.explain.base import Attributions
from tests.conftest import make_bookstore_context


class Saliency:
    """A toy attribution explainer: each feature's deviation from the background mean times a fixed weight."""

    name = "saliency"

    def attribute(self, model, query, docs, masker, rng) -> Attributions:
        weights = np.linspace(1.0, 2.0, query.n_features)
        return Attributions(values=(query.X[docs] - query.background.mean(axis=0)) * weights)


TOY = registry.Explainer("saliency", "Saliency", "attribution", lambda options, scale: Saliency(), docs=(1, 3),
                         method_label="Saliency-{docs}", deterministic=True, cost=costs.treeshap)  # a row a document


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(registry.EXPLAINERS, "saliency", TOY)  # the one registration


def test_a_toy_explainer_appears_in_every_explainer_evidence(toy) -> None:
    assert {"saliency1", "saliency3"} <= set(registry.methods())
    ctx = make_bookstore_context(3)
    local = LOCAL.run(ctx, local_explanations.LocalExplanationsOptions(  # measured, then presented
        methods=["saliency1", "saliency3", "random"], k=3, k_curve=[], optimum_max_subsets=0))
    assert local.status == "ok"
    assert -1 <= local.metrics["local.saliency3.validity.mean"] <= 1
    assert {r["method"] for r in local.records} == {"saliency1", "saliency3", "random"}
    assert "Saliency-3" in [row[0] for row in local.tables[0].rows]

    options = confidence.ConfidenceOptions(methods=["saliency3"], k=3, path_top_k=3,
                                           criteria=["validity", "stability", "path_accuracy"])
    judged = CONFIDENCE.run(ctx, options)  # measured, then presented from its stored form
    assert judged.metrics["confidence.explanations"] > 0
    assert "confidence.saliency3.flagged_fraction" in judged.metrics
    assert all("stability" not in r["measures"] for r in judged.records)  # deterministic: no rerun
    assert "Saliency-3" in [row[0] for row in judged.tables[0].rows]

    paths = decision_path_accuracy.run(ctx, decision_path_accuracy.DecisionPathOptions(
        explainers=["saliency"], docs_per_query=2, top_k=3))
    assert paths.status == "ok"
    assert np.isfinite(paths.metrics["decision_path.saliency.value_change.spearman.mean"])
    # its top-2 attributions were taken from local_explanations' top-3 entry: no recomputation, same values
    assert paths.metrics["decision_path.saliency.rows"] == 0


def test_unknown_methods_are_refused_with_the_nearest_registered_name(toy) -> None:
    from pydantic import ValidationError

    from auditor.evidence.kinds.confidence.measure import ConfidenceOptions
    from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions

    with pytest.raises(ValidationError, match="unknown explainer 'saliency5'; did you mean 'saliency"):
        LocalExplanationsOptions(methods=["saliency5"])
    with pytest.raises(ValidationError, match="unknown explainer 'random'"):
        ConfidenceOptions(methods=["random"])  # a baseline is not judged


def test_methods_labels_and_sections_come_from_the_registry() -> None:
    from auditor.evidence.kinds.decision_path_accuracy.measure import DecisionPathOptions
    from auditor.evidence.kinds.local_explanations.measure import LocalExplanationsOptions

    methods = registry.methods()
    assert list(methods)[:3] == ["random", "shap1", "shap5"]
    assert methods["exs5"].docs == 5 and methods["exs5"].explainer.name == "exs"
    assert registry.label("shap1") == "SHAP-1 (KernelSHAP)" and registry.label("kernelshap") == "KernelSHAP"
    assert set(LocalExplanationsOptions.model_fields) >= {"kernelshap", "lime", "greedy", "search"}
    assert "greedy" not in DecisionPathOptions.model_fields  # only the attribution explainers' sections
    assert DecisionPathOptions().explainers == ["treeshap", "kernelshap", "lirme", "exs"]
    schema = LocalExplanationsOptions.model_json_schema()["properties"]["methods"]
    assert schema["items"]["enum"] == list(methods)
