"""HTML report from the evidence document: Jinja2, autoescaped everywhere, self-contained (inline CSS and SVG)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2

from auditor.evidence import REGISTRY
from auditor.evidence.base import EvidenceResult

STATUS_ORDER = ["FAIL", "ERROR", "WARN", "WAIVED", "PASS", "SKIPPED"]
SEVERITY_ORDER = ["critical", "major", "minor", "info"]


def templates_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_bundled" / "report_templates", here.parent / "report_templates"):
        if candidate.is_dir():
            return candidate
    raise RuntimeError("the report templates are missing from this installation")


def environment(extra_dir: Path | None = None) -> jinja2.Environment:
    folders = [str(extra_dir)] if extra_dir else []
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader([*folders, str(templates_dir())]),
        autoescape=True,  # feature names, doc ids and query ids come from untrusted files
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["num"] = _num
    return env


def render_html(document: dict[str, Any], results: dict[str, EvidenceResult], *, spec_text: str,
                signer: dict[str, str] | None = None, timings: bool = False, templates: Path | None = None) -> str:
    """The report as one self-contained HTML page. Deterministic: no wall-clock time is rendered, only the
    evaluation day, and tables marked `volatile` (wall-clock costs) only when `timings` is true (spec
    `output.timings`); `signer` (subject and certificate fingerprint) is printed on the cover of signed runs."""
    findings = sorted(document["findings"], key=lambda f: (STATUS_ORDER.index(f["status"]),
                                                           SEVERITY_ORDER.index(f["severity"]), f["rule"]))
    counts = {status: sum(1 for f in findings if f["status"] == status) for status in STATUS_ORDER}
    sections = [
        {"name": name, "title": REGISTRY[name].title, "result": result}
        for name, result in results.items() if name in REGISTRY
    ]
    return environment(templates).get_template("report.html.j2").render(
        doc=document, findings=findings, counts=counts, sections=sections, dataset=results["dataset"],
        spec_text=spec_text, limitations=_limitations(document, results), signer=signer,
        timings=timings,
    )


def _limitations(document: dict[str, Any], results: dict[str, EvidenceResult]) -> list[str]:
    """What the evidence cannot show, in plain words; generic ones first, then those of this run."""
    out = [
        "The evidence describes the model's behaviour on the audited dataset only; other queries, other users "
        "or later data may behave differently.",
        "Feature importance describes how the model uses its inputs, not why the world is as it is: it is not "
        "causal, and correlated features can share or swap importance.",
    ]
    dataset = results["dataset"].metrics
    if dataset.get("dataset.all_zero_label_queries", 0) > 0 and "ranking_quality" in results:
        out.append(f"{int(dataset['dataset.all_zero_label_queries'])} queries have no relevant document; their "
                   "nDCG is set by convention (see the ranking-quality note), not measured.")
    if "dataset.population.n_queries" in dataset:
        out.append(f"The audit covers a stratified sample of {int(dataset['dataset.n_queries']):,} of "
                   f"{int(dataset['dataset.population.n_queries']):,} queries: query-level figures are estimates, "
                   "and their intervals are over the sampled queries (sampling error included, the other "
                   "queries not seen).")
    if dataset.get("dataset.single_doc_queries", 0) > 0:
        out.append(f"{int(dataset['dataset.single_doc_queries'])} queries have a single document: they cannot "
                   "be ranked and are left out of within-query measures.")
    out += [f"Recorded by the model owner: {item}" for item in document["audit"].get("limitations") or []]
    for name, result in results.items():
        if result.status != "ok":
            out.append(f"Evidence '{name}' did not produce results ({result.status}): {result.error}")
    return out


def _num(value: Any, digits: int = 4) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, int) or (float(value).is_integer() and abs(value) < 1e12):
        return f"{int(value):,}"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if value != 0 and abs(value) < 1e-3:
        return f"{value:.2e}"
    return f"{value:.{digits}g}"


def check_templates(folder: Path) -> None:
    """Compile every template of an organisation's folder, so a broken one is bad input before any work."""
    from auditor.errors import InputError

    env = environment(folder)
    for path in sorted(folder.rglob("*.j2")):
        name = path.relative_to(folder).as_posix()
        try:
            env.get_template(name)
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"template error: {exc.message}", file=path, where=str(exc.lineno),
                             fix="fix the template, or remove it to use the default") from None
