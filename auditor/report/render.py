"""HTML report from the evidence document: Jinja2, autoescaped everywhere, self-contained (inline CSS and SVG).

Every string a template prints goes through `auditor.core.display.shown` once (the environment's `finalize`, `prose`,
table cells, the `shown` filter) before autoescape: names from untrusted files cannot reorder the report's text
(bidi overrides), hide characters, pass for another name (mixed scripts) or stall WeasyPrint (10,000 characters).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypedDict

import jinja2
from markupsafe import Markup, escape

from auditor.core.display import NAME_CHARS, TEXT_CHARS, TITLE_CHARS, shown
from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, kind_of, read_bytes
from auditor.core.numbers import figure, percent
from auditor.core.words import counted
from auditor.evidence import REGISTRY
from auditor.evidence.base import EvidenceResult, Figure
from auditor.evidence.document import EvidenceDocument
from auditor.evidence.registry import EvidenceKind
from auditor.inputs.feature_dictionary import name_warning
from auditor.judging.policy import STATUS_ORDER as POLICY_STATUS_ORDER
from auditor.report.assurance import engagement
from auditor.report.glossary import IMPORTANCE, LAW_NUMBERS, REFERENCES, glossary_for, measured, uses
from auditor.report.ll144 import WHY_TEST
from auditor.report.sandbox import CompiledTemplates, ReportSandbox, template_error, unsafe_names
from auditor.report.summary import executive_summary
from auditor.report.wording import DATASET_FACTS, requirement_text

STATUS_ORDER = list(POLICY_STATUS_ORDER)
SEVERITY_ORDER = ["critical", "major", "minor", "info"]


def templates_dir() -> Path:
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "_bundled" / "report_templates", here.parent / "report_templates"):
        if candidate.is_dir():
            return candidate
    raise RuntimeError("the report templates are missing from this installation")


_COMPILED = CompiledTemplates()  # for `environment`'s settings only


def environment(extra_dir: Path | None = None) -> ReportSandbox:
    """Every template, ours and an organisation's, renders in the sandbox (auditor/report/sandbox.py)."""
    folders = [str(extra_dir)] if extra_dir else []
    env = ReportSandbox(
        bytecode_cache=_COMPILED,
        loader=jinja2.FileSystemLoader([*folders, str(templates_dir())]),
        autoescape=True,  # feature names, doc ids and query ids come from untrusted files
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize,  # every string a template prints passes `shown` once, then autoescape
    )
    env.filters["shown"] = shown_html
    env.globals.update(NAME_CHARS=NAME_CHARS, TITLE_CHARS=TITLE_CHARS)
    env.filters["num"] = figure
    env.filters["pct"] = percent
    env.filters["prose"] = prose
    env.filters["breakable"] = breakable
    env.filters["counted"] = counted
    env.filters["requirement"] = lambda f: requirement_text(f.requirement, f.metric, f.value)  # in the value's unit
    env.globals["cell"] = cell
    env.globals["aspect"] = aspect
    return env


_TICKED = re.compile(r"(`[^`\n]+`)")
# a spec key named in a sentence ("not stated (audit.qualifications)"): set as code, never as words (issue 56)
_SPEC_KEY = re.compile(r"(?<![\w.&#;/-])((?:audit|dataset|model|background|output|signing|masking|executor)"
                       r"\.[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*)(?![\w-])")


def prose(text: Any) -> Markup:
    """Report text (rule rationales, remedies, notes, limitations) shown (`auditor.core.display.shown`: names in it may
    hide characters or run for pages) and escaped, with its `backticked` names set as code and the spec keys it names
    (backticked or not: `audit.x`, an evidence kind, its options) in small grey type (`code.key`: a reference for
    whoever edits the spec, not words for the reader; the sentence says it in words); the escaping comes first, so
    no text can inject markup."""
    parts = _TICKED.split(str(escape(shown(text, lines=True))))
    return Markup("".join((f'<code class="key">{part[1:-1]}</code>' if _is_key(part[1:-1]) else
                           f"<code>{part[1:-1]}</code>") if index % 2 else
                          _SPEC_KEY.sub(r'<code class="key">\1</code>', part)
                          for index, part in enumerate(parts)))


def breakable(text: Any) -> Markup:
    """A technical line (`influence.max.topk_changed_share = 0.7442; …`) that may break after a key's dots, not
    inside a word (a reader review, W10: "topk_change d_share"); numbers keep their points."""
    return Markup(re.sub(r"\.(?=[a-z_])", ".<wbr>", str(escape(shown(text, lines=True)))))


def _is_key(name: str) -> bool:
    """Whether a backticked name is a spec key: `audit.x`, an evidence kind, or a kind's option (`pairwise.queries`)."""
    head = name.split(".")[0]
    return bool(_SPEC_KEY.fullmatch(name)) or (head in REGISTRY and re.fullmatch(r"[a-z_][a-z0-9_.]*", name)
                                               is not None)


def _finalize(value: Any) -> Any:
    """What `{{ ... }}` prints: a plain string as `shown` (line breaks kept: HTML shows them as spaces), before
    autoescape; markup (filters that showed it already, macros, our SVG) and numbers pass unchanged."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return shown(value, lines=True)
    return value


def shown_html(value: Any, limit: int = TEXT_CHARS, lines: bool = False) -> Markup:
    """The `shown` filter: `{{ name|shown(NAME_CHARS) }}` for a name standing alone (a feature in the dictionary,
    a file, the title), line breaks marked too, escaped here since its markup is not finalized again."""
    return Markup(escape(shown(value, limit=limit, lines=lines)))


class _Section(TypedDict):
    """An evidence section of the report, as its template reads it."""

    name: str
    title: str
    result: EvidenceResult
    tables: list[dict[str, Any]]
    layout: str | None  # `sections/evidence_<name>.html.j2` when a kind has its own layout, else the generic one


def render_html(document: EvidenceDocument, results: dict[str, EvidenceResult], *, spec_text: str,
                signer: dict[str, str] | None = None, timings: bool = False, templates: Path | None = None) -> str:
    """The report as one self-contained HTML page. Deterministic: no wall-clock time is rendered, only the
    evaluation day, and tables marked `volatile` (wall-clock costs) only when `timings` is true (spec
    `output.timings`); `signer` (subject and certificate fingerprint) is printed on the cover of signed runs."""
    findings = sorted(document.findings, key=lambda f: (STATUS_ORDER.index(f.status), SEVERITY_ORDER.index(f.severity),
                                                        f.rule))
    counts = {status: sum(1 for f in findings if f.status == status) for status in STATUS_ORDER}
    plugins: dict[str, EvidenceKind] = REGISTRY  # typed here: the evidence package makes it on first use
    sections: list[_Section] = [
        {"name": name, "title": plugins[name].title, "result": drawn(result),
         "tables": table_layout(name, result, timings), "layout": own_layout(name, templates)}
        for name, result in results.items() if name in plugins
    ]
    appendix_tables = [t for s in sections for t in s["tables"] if t["appendix"]]
    titles = {s["name"]: s["title"] for s in sections}
    importance = next(({r["feature"]: r.get(kind.feature_shares) for r in results[name].records}
                       for name, kind in plugins.items() if kind.feature_shares and name in results
                       and results[name].status == "ok"), {})
    features_all, features_shown = feature_rows(document, importance)
    limitations, glossary = _limitations(document, results), glossary_for(document)
    context = dict(doc=document, findings=findings, counts=counts, sections=sections, dataset=results["dataset"],
                   features_all=features_all, features_shown=features_shown,
                   spec_text=shown_html(spec_text, SPEC_CHARS, lines=True),
                   limitations=limitations, signer=signer, timings=timings,
                   summary=executive_summary(document, plugins), importance=importance,
                   glossary=glossary, references=cited(document, limitations, glossary, results=results),
                   appendix_tables=appendix_tables,
                   section_titles=titles, engagement=engagement(document, titles), dataset_facts=DATASET_FACTS,
                   why_test=WHY_TEST)
    return with_policy(render_template("report.html.j2", context, templates))


def cited(document: EvidenceDocument, *texts: Any,
          results: Mapping[str, EvidenceResult] | None = None) -> dict[str, tuple[str, str]]:
    """The references this report cites (issue 56: only what ran): those whose in-text citation ("Singh et al.
    2020") appears in its evidence (as `results` present it, else as stored), its limitations or its glossary."""
    parts: list[str] = [str(texts)]
    shown: Mapping[str, Any] = document.evidence if results is None else results
    for item in shown.values():  # the prose the report prints of each item (not its data)
        parts += [item.summary, item.how_to_read, *item.notes, *item.unmeasured.values()]
        parts += [t.title + " " + t.note for t in item.tables]
        parts += [f.caption + " " + f.description for f in item.figures or []]
        parts += [d.message for d in item.detections]
    parts += [f.rationale + " " + f.threshold_reason + " " + f.citation for f in document.findings]
    parts += [str(p.get("title", "")) for p in document.policies]  # the laws of the packs applied
    words = "\n".join(parts)
    return {key: ref for key, ref in REFERENCES.items()
            if ref[0] in words or (key in LAW_NUMBERS and LAW_NUMBERS[key] in words)}


@dataclasses.dataclass(frozen=True)
class DrawnFigure:
    """A figure of the evidence drawn for a template: its texts and its labelled SVG (`plots.draw`)."""

    title: str
    svg: str
    caption: str
    description: str

    @classmethod
    def of(cls, figure: Figure) -> DrawnFigure:
        from auditor.report.plots import draw  # here: matplotlib loads when a report is drawn, not with the spec

        return cls(figure.title, draw(figure), figure.caption, figure.description)


def drawn(result: EvidenceResult) -> EvidenceResult:
    """The result as templates read it: its figures drawn from their data (`r.figures`: title, svg, caption)."""
    if not result.figures:
        return result
    return dataclasses.replace(result, figures=[DrawnFigure.of(f) for f in result.figures])  # type: ignore[misc]


SPEC_CHARS = 200_000  # of the spec as written, in the appendix (the file itself is hashed in the manifest)
FEATURES_SHOWN = 15  # wider data shows its most important features in Scope, all of them in Appendix A


def feature_rows(document: EvidenceDocument, importance: dict[str, Any]) -> tuple[list[dict], list[dict]]:
    """The feature dictionary's rows (data order) and the rows Scope shows: all of them for up to 16 features,
    else the FEATURES_SHOWN most important (by within-query share; data order when importance is unknown)."""
    described = document.feature_dictionary
    rows = [{"name": name, "meaning": (described.get(name) or {}).get("meaning"),
             "unit": (described.get(name) or {}).get("unit"), "share": importance.get(name),
             "warning": name_warning(name)}
            for name in document.inputs["dataset"].get("feature_names", [])]
    if len(rows) <= FEATURES_SHOWN + 1:
        return rows, rows
    ranked = sorted(rows, key=lambda r: -(r["share"] or 0.0)) if importance else rows
    return rows, ranked[:FEATURES_SHOWN]


LONG_TABLE = 16  # a table with more rows shows its first BODY_ROWS in the evidence section, all of them in Appendix B
BODY_ROWS = 8


def table_layout(name: str, result: EvidenceResult, timings: bool) -> list[dict[str, Any]]:
    """Where each table of an evidence item goes: its first rows in the section (`body`), and the whole table in
    Appendix B when that is more than the section shows (`appendix`, with an anchor the section links to)."""
    out = []
    shown = [t for t in result.tables if timings or not t.volatile]
    for index, table in enumerate(shown):
        n = len(table.rows)
        body = table.body_rows if table.body_rows is not None else (BODY_ROWS if n > LONG_TABLE else n)
        out.append({"table": table, "body": min(body, n), "appendix": body < n,
                    "anchor": f"full-{name}-{index + 1}", "section": name})
    return out


def own_layout(name: str, templates: Path | None) -> str | None:
    """The template of a kind with a layout of its own (`sections/evidence_<name>.html.j2`, an organisation's folder
    first), or None: the generic `evidence_section` macro draws it."""
    wanted = f"sections/evidence_{name}.html.j2"
    folders = ([templates] if templates is not None else []) + [templates_dir()]
    return wanted if any((folder / wanted).is_file() for folder in folders) else None


def render_template(name: str, context: dict[str, Any], templates: Path | None) -> str:
    """Render in the sandbox; a fault of an organisation's template is bad input naming its file and line."""
    try:
        env = environment(templates)
        return env.render_bounded(env.get_template(name), context)
    except Exception as exc:
        error = template_error(exc, [templates] if templates is not None else [])
        if error is None:
            raise
        raise error from None


# No script runs and nothing is fetched when the report is opened, whatever a template wrote: the first element
# of the document (before any template markup) is this policy. Styles and SVG are inline; images are data: URLs.
CONTENT_POLICY = ('<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
                  "style-src 'unsafe-inline'; img-src data:; font-src data:; form-action 'none'; "
                  "base-uri 'none'\">")


def with_policy(html: str) -> str:
    """The HTML with CONTENT_POLICY as the first element of <head>, ahead of anything a template wrote there; when
    a template put markup before <head>, the policy goes first (browsers then open the head for it)."""
    opening = _OPENING.match(html)
    if opening is not None:
        return html[:opening.end()] + "\n" + CONTENT_POLICY + html[opening.end():]
    doctype = _DOCTYPE.match(html)
    cut = doctype.end() if doctype is not None else 0
    return html[:cut] + CONTENT_POLICY + html[cut:]


_DOCTYPE = re.compile(r"\s*<!DOCTYPE html>", re.IGNORECASE)
_OPENING = re.compile(r"\s*(?:<!DOCTYPE html>\s*)?(?:<html\b[^<>]*>\s*)?<head\b[^<>]*>", re.IGNORECASE)


def _limitations(document: EvidenceDocument, results: dict[str, EvidenceResult]) -> list[str]:
    """What the evidence cannot show, in plain words: the generic limits first, then those measured in this run
    (samples, explanation size against the feature count, surrogate fidelity, explainers found wanting)."""
    out = ["The evidence describes the model's behaviour on the audited dataset only; other queries, other users "
           "or later data may behave differently."]
    if uses(measured(document), IMPORTANCE):  # only where this audit measured importance or attributions
        out.append("Feature importance describes how the model uses its inputs, not why the world is as it is: it "
                   "is not causal, and correlated features can share or swap importance.")
    budget = document.budget or {}
    if budget.get("fits") is False:
        out.append(budget["choices"][-1])
    dataset = results["dataset"].metrics
    n_queries = int(dataset["dataset.n_queries"])
    if "dataset.population.n_queries" in dataset:
        out.append(f"The audit covers a stratified sample of {n_queries:,} of "
                   f"{int(dataset['dataset.population.n_queries']):,} queries: query-level figures are estimates, "
                   "and their intervals are over the sampled queries (sampling error included, the other "
                   "queries not seen).")
    if dataset.get("dataset.single_doc_queries", 0) > 0:
        single = int(dataset['dataset.single_doc_queries'])
        out.append(f"{counted(single, 'query')} {'has' if single == 1 else 'have'} a single document: "
                   f"{'it' if single == 1 else 'they'} cannot be ranked and {'is' if single == 1 else 'are'} left out "
                   "of within-query measures.")
    rankable = n_queries - int(dataset.get("dataset.single_doc_queries", 0))
    for name, kind in REGISTRY.items():
        result = results.get(name)
        if kind.coverage is None or result is None or result.status != "ok" or kind.coverage[0] not in result.metrics:
            continue
        key, excluded, what = kind.coverage
        audited = int(result.metrics[key] + result.metrics.get(excluded, 0))
        if audited < rankable:
            out.append(f"{what} were computed on {audited:,} of the {rankable:,} rankable queries (a seeded "
                       f"sample, its size set in the spec: `{name}.queries`); their intervals cover that sample only.")
    for name, kind in REGISTRY.items():
        result = results.get(name)
        if result is not None and result.status == "ok":
            out += kind.limits(result.metrics, dataset)
    self_checks = {check for kind in REGISTRY.values() for check in kind.self_checks}
    wanting = [d.title for d in document.detections if d.kind in self_checks]
    if wanting:
        out.append("What the evidence found wanting in its own tools (details in Findings): "
                   + "; ".join(w[:1].lower() + w[1:] if w[1:2].islower() else w for w in wanting) + ".")
    out += [f"Recorded by the model owner: {item}" for item in document.audit.get("limitations") or []]
    for name, result in results.items():
        if result.status != "ok":
            out.append(f"Evidence '{name}' did not produce results ({result.status}): {result.error}")
    return out


def aspect(svg: str) -> float:
    """Height over width of a matplotlib SVG (its `width`/`height` attributes in pt); 0 when they are absent. Tall
    figures (small multiples) get more room in print than single plots."""
    match = _SIZE.search(svg[:600])
    return float(match.group(2)) / float(match.group(1)) if match and float(match.group(1)) > 0 else 0.0


_SIZE = re.compile(r'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"')


def cell(value: Any, column: str) -> str:
    """A table cell by what its column holds: shares as percentages, other numbers
    by `figure`; text (ids, names) as `shown` with its line breaks marked."""
    if isinstance(value, str):
        return shown_html(value)
    name = column.lower()
    if isinstance(value, float) and "share" in name and 0 <= value <= 1:
        return percent(value)
    return figure(value)


def check_templates(folder: Path) -> None:
    """Compile every template of an organisation's folder, so a broken one is bad input before any work."""
    env = environment(folder)
    root = folder.resolve()
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            try:
                target = path.resolve(strict=True)
            except (OSError, RuntimeError):  # a link to nothing, or a loop of links (exit 3 before)
                raise InputError("a link that leads nowhere (its target does not exist, or it links to itself)",
                                 file=path, fix="remove the link, or copy the file into the folder") from None
            if not target.is_relative_to(root):
                raise InputError("a link to a file outside the templates folder", file=path,
                                 fix="copy the file into the folder instead of linking to it")
        if not path.is_dir() and not path.is_file():
            raise InputError(f"this is {kind_of(path.stat().st_mode)}, not a regular file", file=path,
                             fix="remove it from the templates folder")
    for path in sorted([*folder.rglob("*.j2"), *folder.glob("custom.css")]):
        name = path.relative_to(folder).as_posix()
        try:
            source = read_bytes(path, limit=MAX_SMALL_BYTES, what="template").decode("utf-8")
            unsafe = unsafe_names(env, source)
            env.get_template(name)
        except UnicodeDecodeError:
            raise InputError("the template is not UTF-8 text", file=path, fix="save it as UTF-8") from None
        except jinja2.TemplateSyntaxError as exc:
            raise InputError(f"template error: {exc.message}", file=path, where=str(exc.lineno),
                             fix="fix the template, or remove it to use the default") from None
        if unsafe:
            line, attribute = unsafe[0]
            raise InputError(f"the template reads '{attribute}', a Python internal that report templates may not "
                             "use", file=path, where=str(line),
                             fix="remove it: templates may read the report's data only (docs/security.md)")
