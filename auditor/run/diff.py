"""Period-over-period comparison of two run folders (`auditor diff`, and a spec's `baseline:`).

Reads only the runs' evidence.json: findings whose status changed (first: what a reviewer acts on), inputs whose
file changed (hashes of model, data, spec, packs), metrics that moved beyond both runs' 95% intervals, main
parameters that entered or left, and the population stability index (PSI) of every feature from the compact
distributions stored under the dataset facts. Stable features are summed up in one line, not listed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from auditor.checks.distribution import psi
from auditor.core.errors import InputError
from auditor.core.files import MAX_JSON_BYTES, read_bytes
from auditor.core.numbers import figure, with_interval
from auditor.evidence.document import EvidenceDocument, FindingPart, as_document, read_document
from auditor.judging.policy import STATUS_ORDER


def load_run(path: Path, *, where: str | None = None, spec_file: Path | None = None) -> EvidenceDocument:
    """evidence.json of a run folder (or the file itself) as the typed document (a v1 run read as v2); bad input
    names the path and how to fix it."""
    file = path / "evidence.json" if path.is_dir() else path
    if not file.is_file():
        raise InputError("no evidence.json here", file=spec_file or path, where=where,
                         fix=f"give a run folder written by `auditor report` ({path})")
    from auditor.trust.strict_json import BadJSON, strict_json

    try:  # as `verify` reads it: no key twice, no NaN, no number of thousands of digits, not too deep
        doc = strict_json(read_bytes(file, limit=MAX_JSON_BYTES, what="evidence file"), "evidence.json")
    except BadJSON as exc:
        raise InputError(str(exc)[:300], file=file, fix="give an untouched run folder") from None
    if not isinstance(doc, dict) or "schema" not in doc:
        raise InputError("not an auditor evidence.json (no `schema`)", file=file, fix="give a run folder")
    return read_document(doc, file=str(file))


WORST_FIRST = STATUS_ORDER


def _by_finding(document: EvidenceDocument) -> dict[str, FindingPart]:
    """A run's findings by identity (the rules of every pack that judge one fact, as the report and the register
    know them), each its worst rule's verdict."""
    def rank(status: str) -> int:
        return WORST_FIRST.index(status) if status in WORST_FIRST else len(WORST_FIRST)

    out: dict[str, FindingPart] = {}
    for f in document.findings:
        key = f.finding or f.rule
        held = out.get(key)
        if held is None or rank(f.status) < rank(held.status):
            out[key] = f
    return out


def compare(old: EvidenceDocument | dict[str, Any], new: EvidenceDocument | dict[str, Any], *, old_name: str = "A",
            new_name: str = "B", file: Path | None = None) -> dict[str, Any]:
    """What changed from run `old` to run `new`, as plain data (rendered as a table and in HTML). Either may be a
    v1 run: both are read as the typed document (auditor/evidence/document.py)."""
    old, new = as_document(old), as_document(new)
    before, after = _by_finding(old), _by_finding(new)
    findings = [{"rule": key, "title": (after.get(key) or before[key]).title,
                 "before": before[key].status if key in before else "—",
                 "after": after[key].status if key in after else "—"}
                for key in sorted(set(before) | set(after))
                if (before[key].status if key in before else None) != (after[key].status if key in after else None)]
    metrics = []
    for name, result in sorted(old.evidence.items()):
        now_item = new.item(name)
        for key, was in result.estimates():
            found = None if now_item is None else now_item.reading(key)
            if found is None or was.low is None or was.high is None:
                continue
            value, low, high, now = was.value, was.low, was.high, found.value
            new_low, new_high = found.low, found.high
            outside_new = new_low is None or new_high is None or not new_low <= value <= new_high
            if not low <= now <= high and outside_new:  # beyond both runs' intervals: not sampling noise
                metrics.append({"metric": key, "before": value, "interval": [low, high], "after": now,
                                "interval_after": None if new_low is None or new_high is None else [new_low, new_high],
                                "change": now - value})
    main_before, main_after = _main_parameters(old), _main_parameters(new)
    drift: list[dict[str, Any]] = []
    dist_old, dist_new = _distributions(old), _distributions(new)
    for feature in dist_old:
        if feature in dist_new:
            value = psi(dist_old[feature], dist_new[feature])
            drift.append({"feature": feature, "psi": value, "level": _psi_level(value)})
    drift.sort(key=lambda d: -d["psi"])
    notes = []
    if not dist_old or not dist_new:
        notes.append("Feature distributions are missing from one run (written before they were stored): no PSI.")
    missing = sorted(set(dist_old) ^ set(dist_new))
    if dist_old and dist_new and missing:
        notes.append(f"Features in only one run (no PSI): {', '.join(missing)}.")
    stable = [d for d in drift if d["level"] == "stable"]
    return {"old": old_name, "new": new_name,
            "old_evaluated_on": old.run.get("evaluated_on"),
            "new_evaluated_on": new.run.get("evaluated_on"),
            "opinion": [old.opinion, new.opinion],
            "findings": findings, "inputs": input_changes(old, new), "metrics": metrics,
            "stable_features": {"count": len(stable), "max_psi": max((d["psi"] for d in stable), default=None)},
            "main_parameters": {"before": main_before, "after": main_after,
                                "entered": [f for f in main_after if f not in main_before],
                                "left": [f for f in main_before if f not in main_after]},
            "drift": drift, "notes": notes}


def _distributions(document: EvidenceDocument) -> dict[str, dict[str, Any]]:
    """Each feature's compact distribution as the dataset facts stored it."""
    dataset = document.item("dataset")
    return {} if dataset is None else {d["feature"]: d for d in dataset.records if "feature" in d}


def input_changes(old: EvidenceDocument, new: EvidenceDocument) -> list[dict[str, Any]]:
    """Each input of the two runs (spec, model, dataset, background, feature dictionary, policy packs) with its
    file name and SHA-256 before and after, and whether its content changed."""
    def files(doc: EvidenceDocument) -> dict[str, dict[str, Any]]:
        inputs = doc.inputs
        out = {"spec": doc.spec}
        for key in ("model", "dataset", "background", "feature_dictionary"):
            if isinstance(inputs.get(key), dict) and inputs[key].get("sha256"):
                out[key.replace("_", " ")] = inputs[key]
        for pack in doc.policies:
            out[f"policy pack {pack.get('pack')}"] = {"file": pack.get("source"), "sha256": pack.get("sha256")}
        return out

    before, after = files(old), files(new)
    rows = []
    for name in [*before, *(n for n in after if n not in before)]:
        a, b = before.get(name, {}), after.get(name, {})
        rows.append({"input": name, "file_before": a.get("file"), "file_after": b.get("file"),
                     "sha256_before": a.get("sha256"), "sha256_after": b.get("sha256"),
                     "changed": a.get("sha256") != b.get("sha256")})
    return rows


def _main_parameters(doc: EvidenceDocument) -> list[str]:
    gi = doc.item("global_importance")
    count = None if gi is None else gi.value("global_importance.main_parameters")
    if gi is None or not count:
        return []
    ranked = sorted((r for r in gi.records if "feature" in r), key=lambda r: r.get("rank", 0))
    return [r["feature"] for r in ranked[: int(count)]]


def stable_line(diff: dict[str, Any]) -> str:
    """The stable features in one line (never pages of 'PSI 0.0000')."""
    stable = diff.get("stable_features") or {"count": 0, "max_psi": None}
    if not stable["count"]:
        return "no feature is stable (PSI < 0.1)" if diff["drift"] else "no feature distributions to compare"
    return (f"{stable['count']} of {len(diff['drift'])} features stable (PSI < 0.1; the largest of them "
            f"{figure(stable['max_psi'])})")


def _short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "—"


def _psi_level(value: float) -> str:
    """The usual reading of PSI: < 0.1 stable, 0.1-0.25 moderate shift, > 0.25 major shift."""
    return "major" if value > 0.25 else "moderate" if value > 0.1 else "stable"


def text_table(diff: dict[str, Any]) -> str:
    """The comparison as plain text for the terminal."""
    lines = [f"{diff['old']} ({diff['old_evaluated_on']}) -> {diff['new']} ({diff['new_evaluated_on']}); opinion "
             f"{diff['opinion'][0]} -> {diff['opinion'][1]}", "", "Findings that changed status:"]
    lines += [f"  {f['rule']:<10} {f['before']:>8} -> {f['after']:<8} {f['title']}" for f in diff["findings"]] or \
        ["  none"]
    changed = [i for i in diff["inputs"] if i["changed"]]
    lines += ["", "Inputs that changed (SHA-256):"]
    lines += [f"  {i['input']:<30} {i['file_before'] or '—'} {_short(i['sha256_before'])} -> "
              f"{i['file_after'] or '—'} {_short(i['sha256_after'])}" for i in changed] or \
        ["  none: same model, data, spec and packs"]
    lines += ["", "Metrics that moved beyond both runs' 95% intervals:"]
    lines += [f"  {m['metric']:<45} {with_interval(m['before'], *m['interval'])} -> {figure(m['after'])}"
              for m in diff["metrics"]] or ["  none"]
    mp = diff["main_parameters"]
    lines += ["", f"Main parameters entered: {', '.join(mp['entered']) or 'none'}; left: "
              f"{', '.join(mp['left']) or 'none'}", "", "Feature drift (PSI, largest first):"]
    lines += [f"  {d['feature']:<30} {d['psi']:8.4f}  {d['level']}" for d in diff["drift"] if d["level"] != "stable"]
    lines.append(f"  {stable_line(diff)}")
    lines += [f"note: {n}" for n in diff["notes"]]
    return "\n".join(lines) + "\n"


def render_html(diff: dict[str, Any]) -> str:
    """The comparison as a self-contained HTML page (autoescaped, the report's stylesheet)."""
    from auditor.report.render import render_template, with_policy

    return with_policy(render_template("diff.html.j2", {"diff": diff}, None))
