"""The executive summary as plain data: the opinion and why in sentences, the findings to act on (with their law,
reason, recommended action and owner), what the evidence detected that no rule judged, the key numbers with their
intervals, and what the audit did not cover. Built from evidence.json alone, so the report can never say less than
the evidence, and tested without rendering.
"""

from __future__ import annotations

from typing import Any

from auditor.policy import Finding, group_findings

ACT_ON = ("FAIL", "ERROR", "WARN", "WAIVED")


def executive_summary(document: dict[str, Any], registry: dict[str, Any]) -> dict[str, Any]:
    """What the first pages say. `registry` maps evidence kind → plugin (for what an unrequested kind shows)."""
    findings = [Finding(**{**f, "interval": tuple(f["interval"]) if f.get("interval") else None})
                for f in document.get("findings", [])]
    groups = group_findings(findings)
    records = _records(document)
    detections = document.get("detections", [])
    unjudged = [{**d, "record": records.get(_detection_key(d))} for d in detections if not d.get("judged_by_rules")]
    act_on = [_group(g, records, detections) for g in groups if g[0].status in ACT_ON]
    passed = [_group(g, records, detections) for g in groups if g[0].status not in ACT_ON]
    return {
        "opinion": document.get("opinion", ""),
        "why": why(document.get("opinion", ""), groups, unjudged),
        "since": since_last_review(document),
        "act_on": act_on,
        "passed": passed,
        "unjudged": unjudged,
        "key_numbers": key_numbers(document.get("evidence", {})),
        "not_covered": not_covered(document, registry),
    }


def why(opinion: str, groups: list[list[Finding]], unjudged: list[dict[str, Any]]) -> list[str]:
    """The opinion's reasons in plain sentences, most serious first."""
    heads = [g[0] for g in groups]
    ids = {id(g[0]): " · ".join(f.rule for f in g) for g in groups}  # a requirement judged by several packs

    def named(findings: list[Finding]) -> str:
        return "; ".join(f"{ids[id(f)]} {f.title.rstrip('.')}" for f in findings)

    if opinion == "no policy applied":
        out = ["No policy pack was applied, so no rule judged the evidence; the measurements stand on their own."]
        if unjudged:
            out.append(f"The evidence detected {_count(len(unjudged), 'problem')} (listed below).")
        return out
    failing = [f for f in heads if f.status == "FAIL"]
    serious = [f for f in failing if f.severity in ("critical", "major")]
    out = []
    if serious:
        out.append(f"{_count(len(serious), 'requirement')} of critical or major severity failed: {named(serious)}.")
    other = [f for f in failing if f not in serious]
    if other:
        out.append(f"{_count(len(other), 'minor requirement')} failed: {named(other)}.")
    errors = [f for f in heads if f.status == "ERROR"]
    if errors:
        out.append(f"{_count(len(errors), 'requirement')} could not be judged because their evidence failed: "
                   + ", ".join(ids[id(f)] for f in errors) + ".")
    warns = [f for f in heads if f.status == "WARN"]
    unsure = [f for f in warns if f.inconclusive]
    if warns:
        out.append(f"{_count(len(warns), 'requirement')} gave a warning"
                   + (f", {len(unsure)} of them inconclusive (the 95% interval crosses the threshold, so the "
                      "sample cannot tell)" if unsure else "") + ": " + ", ".join(ids[id(f)] for f in warns) + ".")
    waived = [f for f in heads if f.status == "WAIVED"]
    if waived:
        out.append(f"{_count(len(waived), 'failure')} covered by an approved waiver: "
                   + ", ".join(ids[id(f)] for f in waived) + ".")
    if unjudged:
        out.append(f"The evidence detected {_count(len(unjudged), 'problem')} that no rule of the applied packs "
                   "judges: " + "; ".join(d["title"] for d in unjudged) + ". They are listed below; the opinion "
                   "cannot be plainly positive while they stand unjudged.")
    if not out:
        out.append(f"Every one of the {_count(len(heads), 'requirement')} passed with its whole 95% interval "
                   "inside the requirement (or was not applicable), and the evidence detected nothing that no rule "
                   "judged.")
    return out


def _records(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each finding's life as the register records it (`review.findings`, by rule id or detection key); without a
    register, the spec's `findings:` as the owner, due date and response."""
    review = document.get("review") or {}
    if "findings" in review:
        return {f["key"]: f for f in review["findings"]}
    return {a["rule"]: {"owner": a["owner"], "due": str(a["due"]), "response": a.get("note")}
            for a in document.get("assignments", [])}


def _detection_key(detection: dict[str, Any]) -> str:
    from auditor.register.lifecycle import finding_key

    return finding_key(detection)


def since_last_review(document: dict[str, Any]) -> dict[str, Any] | None:
    """What the summary opens with when the register knows the system: the previous review, findings opened,
    remediated and overdue, status changes and inputs changed; or that this is the system's first review."""
    review = document.get("review")
    if not review:
        return None
    if "error" in review:
        return {"error": review["error"], "system": review["system"]}
    rows = review.get("findings", [])
    diff = document.get("since_last_review") or {}
    return {"system": review["system"], "previous": review.get("previous"),
            "opened": [r for r in rows if _new_now(r)],
            "reopened": [r for r in rows if any(e["event"] == "reopened" and e.get("run") == "this review"
                                                for e in r.get("events", []))],
            "remediated": [r for r in rows if r["status"] == "remediated"],
            "overdue": [r for r in rows if r["status"] == "overdue"],
            "status_changes": diff.get("findings", []),
            "inputs_changed": [i["input"] for i in diff.get("inputs", []) if i.get("changed")],
            "metrics_moved": len(diff.get("metrics", [])), "first": review.get("previous") is None}


def _new_now(row: dict[str, Any]) -> bool:
    """A finding this review opened (its first event is this review's)."""
    events = row.get("events", [])
    return bool(events) and events[0]["event"] == "opened" and events[0].get("run") == "this review"


def _group(group: list[Finding], records: dict[str, dict], detections: list[dict[str, Any]]) -> dict[str, Any]:
    head = group[0]
    rules = [f.rule for f in group]
    return {
        "head": head,
        "rules": group,
        "citations": list(dict.fromkeys(f.citation for f in group)),
        "remedy": next((f.remedy for f in group if f.remedy), ""),
        "rationale": head.rationale,
        "record": _record(rules, records),
        "detections": [d for d in detections if set(d.get("judged_by_rules") or ()) & set(rules)],
        "measured": measured(head),
    }


def _record(rules: list[str], records: dict[str, dict]) -> dict[str, Any] | None:
    """The register's record of a finding that several packs' rules judge: the one someone answered (an owner or
    an acceptance), else the first."""
    found = [records[r] for r in rules if r in records]
    return next((r for r in found if r.get("owner") or r.get("approver")), found[0] if found else None)


def measured(finding: Finding) -> str:
    """The measured value in a few characters, with its interval: `0.840 (0.815–0.864)`; the message when the
    rule judged no value (presence of evidence, skipped, error)."""
    if finding.value is None:
        return "evidence present" if finding.status == "PASS" else finding.message
    if finding.requirement.startswith("share of queries"):
        text = f"{finding.value:.0%} of queries"
        low_high = finding.interval and (f"{finding.interval[0]:.0%}", f"{finding.interval[1]:.0%}")
    else:
        text = _figure(finding.value)
        low_high = finding.interval and (_figure(finding.interval[0]), _figure(finding.interval[1]))
    return f"{text} ({low_high[0]}–{low_high[1]})" if low_high else text


def _figure(value: float) -> str:
    """Three significant figures; an error below 1e-9 is exact for a reader."""
    if value != 0 and abs(value) < 1e-9:
        return "< 1e-9 (exact)"
    if float(value).is_integer() and abs(value) < 1e12:
        return f"{int(value):,}"
    return f"{value:.3g}"


def key_numbers(evidence: dict[str, Any]) -> list[dict[str, Any]]:
    """The few figures a reader should remember, each with its interval where it has one."""
    rows: list[dict[str, Any]] = []

    def metric(kind: str, name: str) -> float | None:
        value = evidence.get(kind, {}).get("metrics", {}).get(name)
        return None if value is None else float(value)

    def add(label: str, kind: str, name: str, *, stem: str | None = None, share: bool = False) -> None:
        value = metric(kind, name)
        if value is None:
            return
        stem = stem or name.removesuffix(".mean")
        low, high = metric(kind, f"{stem}.ci95_low"), metric(kind, f"{stem}.ci95_high")
        rows.append({"label": label, "value": value, "low": low, "high": high, "share": share, "evidence": kind})

    quality = evidence.get("ranking_quality", {}).get("metrics", {})
    cutoffs = sorted(int(k.split("@")[1].split(".")[0]) for k in quality if k.startswith("ranking_quality.ndcg@")
                     and k.endswith(".mean"))
    if cutoffs:
        add(f"Ranking quality: mean nDCG@{cutoffs[-1]}", "ranking_quality", f"ranking_quality.ndcg@{cutoffs[-1]}.mean")
    records = evidence.get("global_importance", {}).get("records", [])
    if records:
        top = sorted(records, key=lambda r: r.get("rank", 0))[:3]
        for record in top:
            rows.append({"label": f"Main parameter #{record['rank']}: {record['feature']} (share of what orders "
                                  "documents within a query)", "value": record.get("within_query.share"),
                         "low": None, "high": None, "share": True, "evidence": "global_importance"})
    local = evidence.get("local_explanations", {}).get("metrics", {})
    methods = [k.removeprefix("local.").removesuffix(".validity.mean") for k in local
               if k.endswith(".validity.mean") and k.count(".") == 3 and not k.startswith(("local.optimum.",
                                                                                          "local.random."))]
    if methods:
        best = max(methods, key=lambda m: local[f"local.{m}.validity.mean"])
        add(f"Best explainer's validity ({best})", "local_explanations", f"local.{best}.validity.mean")
        add("RANDOM feature sets' validity (the floor)", "local_explanations", "local.random.validity.mean")
    add("Surrogate fidelity (Kendall tau with the model's rankings)", "surrogate", "surrogate.fidelity.kendall.mean")
    influence = evidence.get("parameter_influence", {}).get("metrics", {})
    for name in sorted(k for k in influence if k.endswith(".rank_shift.mean") and not k.startswith("influence.max.")):
        feature = name.removeprefix("influence.").removesuffix(".rank_shift.mean")
        add(f"Positions a document owes to '{feature}' (mean)", "parameter_influence", name)
    if metric("exposure", "exposure.own.ratio") is not None:
        add("Own products' attention ÷ what their relevance earns (exposure ratio)", "exposure", "exposure.own.ratio")
    else:
        add("Largest exposure ratio of a group (attention ÷ what its relevance earns)", "exposure",
            "exposure.max.ratio")
    add("Declared vs measured order of main parameters (Kendall tau)", "disclosure_consistency",
        "disclosure.rank_correlation")
    add("Share of explanations flagged as low-confidence", "confidence", "confidence.flagged_fraction", share=True)
    return rows


def not_covered(document: dict[str, Any], registry: dict[str, Any]) -> list[str]:
    """What the audit did not look at: evidence not requested or not produced, sampled queries, stated exclusions."""
    evidence = document.get("evidence", {})
    out = []
    for name, plugin in registry.items():
        result = evidence.get(name)
        if result is None:
            out.append(f"{plugin.title} ({name}) was not requested: {plugin.description}")
        elif result.get("status") != "ok":
            out.append(f"{plugin.title} ({name}) did not produce results: {result.get('error', '')}")
    facts = evidence.get("dataset", {}).get("metrics", {})
    if "dataset.population.n_queries" in facts:
        out.append(f"Only a stratified sample of {int(facts['dataset.n_queries']):,} of "
                   f"{int(facts['dataset.population.n_queries']):,} queries was audited.")
    budget = document.get("budget") or {}
    if budget.get("queries") is not None or budget.get("reduced_sizes") or budget.get("fits") is False:
        out += [f"Time budget ({budget['minutes']:g} minutes): {sentence}" for sentence in budget.get("choices", [])]
    for use in document.get("audit", {}).get("out_of_scope") or []:
        out.append(f"Out of scope by the owner's statement: {use}")
    return out


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
