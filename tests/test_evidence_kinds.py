"""Evidence kinds as self-describing units: one module and one registry entry make a kind a spec key, a costed item of
`validate` and the budget, a run item with its metrics judged by packs and a report section — proven by a toy kind
defined here and registered nowhere else. And every registered kind and explainer carries a cost estimate that fits
what the bookstore audit counts."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from pydantic import Field
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.evidence.options import EvidenceOptions
from auditor.evidence.registry import ALWAYS, KINDS, EvidenceKind, KeyFigure, register, unregister

runner = CliRunner()


ROOT = Path(__file__).resolve().parents[1]

class ToyOptions(EvidenceOptions):
    queries: int | None = Field(None, ge=1, description="Audit a sample of this many queries (default all).")
    per_document: int = Field(2, ge=1, description="Model rows the toy scores per document.")


def run(ctx: Any, options: ToyOptions) -> Any:
    """Scores each document `per_document` times and measures the mean score: real model rows, numbers only (its
    sentences and table are `section`'s)."""
    from auditor.evidence.base import EvidenceResult

    X = ctx.data.X
    for _ in range(options.per_document):
        scores = ctx.model.predict(X)
    result = EvidenceResult(name="toy_kind")
    result.metrics["toy_kind.mean_score"] = float(np.mean(scores))
    result.metrics["toy_kind.queries"] = float(options.queries or ctx.data.n_queries)  # as if it sampled them
    result.facts["best_score"] = float(np.max(scores))  # a fact no metric holds, for the presenter
    return result


def section(item: Any, options: ToyOptions) -> Any:
    """The toy's report section, from its stored result alone."""
    from auditor.evidence.base import Section, Table

    mean = item.metrics["toy_kind.mean_score"]
    return Section(summary=f"A toy kind ran, {options.per_document} rows a document.",
                   how_to_read="The toy kind's one figure: the mean score.",
                   tables=[Table(title="Toy table", columns=["figure", "value"],
                                 rows=[["mean score", round(mean, 4)],
                                       ["best score", round(item.facts["best_score"], 4)]])])


def cost(options: ToyOptions, shape: Any, earlier: set[str]) -> tuple[int, int, float, str]:
    queries, n = shape.sample(options.queries)
    return queries, int(options.per_document * queries * n), 0.0, f"{options.per_document} rows a document"


def key_figures(result: Any) -> list[KeyFigure]:
    return [KeyFigure(5, "The toy's mean score", "toy_kind.mean_score", "what the toy scale means")]


def limitations(metrics: Any, dataset: Any) -> list[str]:
    return [f"The toy looked at {int(metrics['toy_kind.queries'])} of {int(dataset['dataset.n_queries'])} queries."]


TOY = EvidenceKind("toy_kind", ToyOptions, __name__, "Toy evidence", "A kind defined in a test module.", cost,
                   metrics=("toy_kind.mean_score", "toy_kind.queries"), sampled=True,
                   coverage=("toy_kind.queries", "", "Toy figures"), key_figures=key_figures,
                   limitations=limitations, section=section)


@pytest.fixture
def toy() -> Any:
    register(TOY)
    yield TOY
    unregister(TOY.name)


def _spec(folder: Path, evidence: list[Any], name: str = "toy.yaml") -> Path:
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec.update(evidence=evidence, output={"dir": "reports", "formats": ["html"]})
    path = folder / name
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def test_a_toy_kind_registered_in_one_module_is_a_whole_evidence_kind(toy: EvidenceKind, bookstore: Path) -> None:
    from auditor.evidence.registry import metrics_table
    from auditor.inputs.spec import json_schema

    assert "toy_kind" in json.dumps(json_schema())
    assert "| `toy_kind` | `toy_kind.` | `toy_kind.mean_score`<br>`toy_kind.queries` |" in metrics_table()
    spec = _spec(bookstore, [{"ranking_quality": {}}, {"toy_kind": {"per_document": 3, "queries": 5}}])
    checked = runner.invoke(app, ["validate", str(spec)])
    assert checked.exit_code == 0, checked.output
    line = next(line for line in checked.output.splitlines() if line.strip().startswith("toy_kind"))
    docs = int(pd_rows(bookstore))
    estimated = int(line.split("model rows")[0].split()[-1].replace(",", ""))
    assert 0 < estimated <= 3 * docs and "3 rows a document" in line, line  # 5 queries' documents, 3 times

    bad = _spec(bookstore, [{"toy_kind": {"per_documnet": 3}}], "bad.yaml")
    refused = runner.invoke(app, ["validate", str(bad)])
    assert refused.exit_code == 2 and "per_document" in refused.output  # its options are checked, with a hint

    result = runner.invoke(app, ["report", str(spec), "--out", str(bookstore / "out"), "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    run_dir = Path(result.stdout.strip()).parent
    evidence = json.loads((run_dir / "evidence.json").read_text())
    assert np.isfinite(evidence["evidence"]["toy_kind"]["metrics"]["toy_kind.mean_score"])
    assert evidence["evidence"]["toy_kind"]["n_model_rows"] >= 3 * docs  # counted as it ran
    compared = {c["evidence"]: c for c in evidence["run"]["cost"]["compared"]}
    assert compared["toy_kind"]["estimated_rows"] == estimated
    toy_item = evidence["evidence"]["toy_kind"]  # presented from what it stored: its options, its facts
    assert toy_item["options"] == {"queries": 5, "per_document": 3} and "best_score" in toy_item["facts"]
    assert toy_item["summary"] == "A toy kind ran, 3 rows a document." and toy_item["tables"][0]["title"] == "Toy table"
    html = (run_dir / "report.html").read_text()
    assert "Toy evidence" in html and "Toy table" in html and "best score" in html
    assert "Toy figures were computed on 5 of the" in html  # the scope names a sampled kind's coverage
    assert "The toy looked at 5 of" in html  # its own Limitations sentence
    summary = html[:html.index("Toy table")]
    assert "The toy&#39;s mean score" in summary and "what the toy scale means" in summary  # first key figure


def test_the_budget_samples_a_toy_kind_marked_sampled(toy: EvidenceKind) -> None:
    from auditor.run.budget import choose
    from auditor.run.cost import Shape

    shape = Shape(sizes=np.full(400, 30), features=12, trees=80, background_docs=1000, background_queries=40,
                  rows_per_second=1000.0)
    items = [("toy_kind", ToyOptions(per_document=5))]
    choice = choose(items, shape, minutes=0.5, render_seconds=0.0)
    assert choice.fits and choice.items[0][1].queries is not None and choice.items[0][1].queries < 400
    assert any("toy_kind" in sentence for sentence in choice.sentences)


def test_a_pack_rule_may_name_the_toy_kind_s_metric(toy: EvidenceKind, tmp_path: Path) -> None:
    from auditor.judging.policy import check_metrics, load_packs

    pack = tmp_path / "toy-pack.yaml"
    rule = {"id": "TOY-1", "title": "Toy score", "evidence": "toy_kind", "metric": "toy_kind.mean_score",
            "severity": "minor", "citation": "none", "fail_if": "< -1e9", "remedy": "none", "rationale": "a toy",
            "threshold_reason": "a toy"}
    pack.write_text(yaml.safe_dump({"pack": "toy-pack", "title": "Toy", "version": "1", "rules": [rule]}))
    check_metrics(load_packs([str(pack)], base_dir=tmp_path), KINDS, {"toy_kind"})  # a declared metric: no error
    pack.write_text(yaml.safe_dump({"pack": "toy-pack", "title": "Toy", "version": "1",
                                    "rules": [{**rule, "metric": "toy_kind.mean_scor"}]}))
    with pytest.raises(InputError, match="mean_score"):  # an undeclared one is refused, the declared one named
        check_metrics(load_packs([str(pack)], base_dir=tmp_path), KINDS, {"toy_kind"})


def pd_rows(folder: Path) -> int:
    """Documents of the bookstore's test data (the dataset the spec audits)."""
    return sum(1 for _ in (folder / "test.csv").open()) - 1


def test_every_kind_and_explainer_carries_a_cost_estimate() -> None:
    """No kind or explainer goes uncosted (the cost model reads the registry only): each estimator resolves and
    returns (queries, rows, seconds, basis) for the default options; every explainer has a rows function."""
    from auditor.explain import registry
    from auditor.run.cost import Shape

    shape = Shape(sizes=np.full(20, 25), features=12, trees=80, background_docs=500, background_queries=20,
                  rows_per_second=1e5, reference=None)
    for kind in [*KINDS.values(), *ALWAYS.values()]:
        options = kind.options() if kind.name not in ("parameter_influence", "exposure") else \
            kind.options.model_construct(**{f: v.default for f, v in kind.options.model_fields.items()})
        queries, rows, seconds, basis = kind.estimator()(options, shape, {})
        assert queries >= 0 and rows >= 0 and seconds >= 0 and isinstance(basis, str), kind.name
    for explainer in registry.EXPLAINERS.values():
        assert callable(explainer.cost), explainer.name


@pytest.mark.slow
def test_cost_estimates_are_within_a_factor_of_3_of_the_bookstore_s_counted_rows(demo: Path) -> None:
    """The conformance of every kind's estimator with what its plugin counted on the bookstore (the demo: every kind
    at the example's options). Differences under 1% of the audit's rows are not judged: they move no estimate of
    time (decision paths re-explain the few queries local explanations leave out, which the data's shape cannot
    tell)."""
    compared = json.loads((demo / "evidence.json").read_text())["run"]["cost"]["compared"]
    floor = 0.01 * sum(c["rows"] for c in compared)
    off = [f"{c['evidence']}: estimated {c['estimated_rows']:,}, counted {c['rows']:,}" for c in compared
           if abs(c["rows"] - c["estimated_rows"]) > floor and not
           (c["rows"] / 3 <= c["estimated_rows"] <= 3 * c["rows"])]
    assert not off, "\n".join(off)
    assert {c["evidence"] for c in compared} == set(KINDS) - {"toy_kind", *ELSEWHERE}  # the demo runs every kind


def test_the_cost_model_the_budget_and_the_report_name_no_kind_and_no_explainer() -> None:
    """They read the registries' entries only: no string in their code (docstrings aside) names a kind or an
    explainer, so a kind cannot be special-cased there and forgotten elsewhere (the report's summary and
    Limitations take a kind's key figures and sentences from its entry)."""
    import ast

    from auditor.explain import registry

    names = set(KINDS) | set(ALWAYS) | set(registry.EXPLAINERS) | set(registry.methods())
    root = Path(__file__).resolve().parents[1] / "auditor"
    for module in ("run/cost.py", "run/budget.py", "report/summary.py", "report/render.py"):
        tree = ast.parse((root / module).read_text())
        if module.startswith("report/"):  # the report reads the data facts every audit has
            names -= set(ALWAYS)
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and node.body
                      and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
        strings = [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                   and isinstance(node.value, str) and id(node) not in docstrings]
        named = sorted({name for name in names for text in strings if name in text.replace("-", "_").split()
                        or text == name})
        assert not named, f"{module} names {named}"


def _generated_block(path: Path, start: str, end: str, make: Callable[[], str]) -> str:
    """The block of `path` between the line starting with `start` and `end` (rewritten from `make` with
    AUDITOR_UPDATE_GOLDEN=1, as the golden evidence is)."""
    import os

    text = path.read_text()
    head, rest = text.split(start, 1)
    marker, rest = rest.split("\n", 1)
    block, tail = rest.split(end, 1)
    if os.environ.get("AUDITOR_UPDATE_GOLDEN") == "1":
        path.write_text(f"{head}{start}{marker}\n{make()}{end}{tail}")
        return make()
    return block


def test_the_readme_lists_every_registered_kind_as_the_registry_describes_it() -> None:
    """README.md's table of evidence kinds is generated from the registry (`registry.readme_table`); regenerate
    with AUDITOR_UPDATE_GOLDEN=1 (as the golden evidence) after changing an entry."""
    from auditor.evidence.registry import readme_table

    table = _generated_block(ROOT / "README.md", "<!-- evidence kinds: generated", "<!-- end of evidence kinds -->",
                             readme_table)
    assert table == readme_table(), "README.md's table of evidence kinds is stale: regenerate it (see docstring)"
    assert all(kind.readme for kind in KINDS.values() if kind.name != "toy_kind")


def test_docs_metrics_lists_every_kind_s_names_and_defines_each_prefix() -> None:
    """docs/metrics.md's table of kinds and the names they declare is generated from the registry
    (`registry.metrics_table`, regenerated as the README's), and every prefix a kind declares has its section."""
    from auditor.evidence.registry import metrics_table

    path = ROOT / "docs" / "metrics.md"
    table = _generated_block(path, "<!-- metric names: generated", "<!-- end of metric names -->", metrics_table)
    assert table == metrics_table(), "docs/metrics.md's table of kinds is stale: regenerate it (see docstring)"
    headings = [line for line in path.read_text().splitlines() if line.startswith("## `")]
    for kind in [*ALWAYS.values(), *KINDS.values()]:
        for prefix in {pattern.split(".", 1)[0] for pattern in kind.metrics}:
            assert any(h.startswith(f"## `{prefix}.") for h in headings), f"docs/metrics.md defines no {prefix}.*"


# Kinds the bookstore demo does not run, and the example whose audit checks them instead (tests/test_selection_rates.py:
# its cost estimate and every metric pattern it declares)
ELSEWHERE = {"selection_rates": "examples/hiring (no bookstore data records sex or race/ethnicity)"}

# Metric patterns the bundled example does not emit, and when a kind does: every other declared pattern must appear
# in the demo's evidence, so a pattern that no code emits any more is found (a pack could name it and never be judged)
CONDITIONAL = {
    "local.{method}.{validity_rows.{mean|ci95_low|ci95_high}|completeness_rows.mean}": "with `background_rows`",
    "dataset.population.{n_queries|n_docs}": "with `dataset.sample_queries`",
    "disclosure.statement.{claims|false_claims|uncertain_claims|unchecked_claims}": "with `statement`",
    **dict.fromkeys((
        "ranking_quality.group.{column}.{value}.pairwise_accuracy",
        "ranking_quality.group.{column}.{value}.pairwise_accuracy.{ci95_low|ci95_high}",
        "ranking_quality.group.{column}.gap", "ranking_quality.group.{column}.gap.{ci95_low|ci95_high}",
        "ranking_quality.group.{gap|columns}", "ranking_quality.group.gap.{ci95_low|ci95_high}"),
        "with group columns beside the data (`dataset.attribute_columns`): tests/test_annex_iv.py"),
}


@pytest.mark.slow
def test_every_declared_metric_pattern_is_emitted_by_the_demo_or_says_when(demo: Path) -> None:
    from auditor.evidence.registry import metric_pattern

    evidence = json.loads((demo / "evidence.json").read_text())["evidence"]
    unused = set()
    for name, kind in [*KINDS.items(), *ALWAYS.items()]:
        if name == "toy_kind" or name in ELSEWHERE:
            continue
        emitted = [*evidence[name]["metrics"], *evidence[name].get("per_query", {})]
        unused |= {p for p in kind.metrics if not any(metric_pattern(p).fullmatch(m) for m in emitted)}
    assert unused == set(CONDITIONAL), sorted(unused ^ set(CONDITIONAL))
