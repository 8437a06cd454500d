"""The executive summary as plain data: the opinion and why in sentences, the findings to act on (with their law,
reason, recommended action and owner), what the evidence detected that no rule judged, the key numbers with their
intervals, and what the audit did not cover. Built from evidence.json alone, so the report can never say less than
the evidence, and tested without rendering.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from auditor.core.numbers import figure, interval, percent, points
from auditor.core.words import counted
from auditor.evidence.document import EvidenceDocument, EvidenceItem, FindingPart
from auditor.judging.policy import Finding, findings_of, group_findings
from auditor.report.wording import (
    cell_text,
    fact,
    is_share,
    measured_sentence,
    remedy_for,
    remedy_setup,
    technical,
    thresholds_in_percent,
    thresholds_in_points,
)

if TYPE_CHECKING:
    from auditor.evidence.registry import KeyFigure

ACT_ON = ("FAIL", "ERROR", "WARN", "WAIVED")
SUMMARY_ROWS = 8  # findings listed by name on the one-page summary; the rest are counted (the page never grows)
SUMMARY_FIGURES = 8  # key figures on it
SEVERITY_ORDER = {"critical": 0, "major": 1, "minor": 2, "info": 3}
VERDICT_ORDER = {"FAIL": 0, "ERROR": 1, "DETECTED": 2, "WARN": 3, "WAIVED": 4}
METHOD_LIMIT = "detected: a limit of the audit's methods"
VERDICT = {"FAIL": "fails", "ERROR": "could not be judged (evidence failed)", "WARN": "warning",
           "WAIVED": "fails, waived", "DETECTED": "detected, unjudged"}


def executive_summary(document: EvidenceDocument, registry: dict[str, Any]) -> dict[str, Any]:
    """What the first pages say. `registry` maps evidence kind → plugin (for what an unrequested kind shows)."""
    groups = group_findings(findings_of(document))
    records = _records(document)
    detections = [d.model_dump() for d in document.detections]
    unjudged = [{**d, "record": records.get(_detection_key(d)), "subject": _detection_key(d)} for d in detections
                if not d.get("judged_by_rules")]
    ran = {name for name, item in document.evidence.items() if item.status == "ok"}
    items = document.evidence
    act_on = [_group(g, records, detections, ran, registry, items) for g in groups if g[0].status in ACT_ON]
    passed = [_group(g, records, detections, ran, registry, items) for g in groups
              if g[0].status not in (*ACT_ON, "UNMEASURED")]
    unmeasured = [_group(g, records, detections, ran, registry, items) for g in groups
                  if g[0].status == "UNMEASURED"]
    scope = _law_scope(document)
    for number, detection in enumerate(unjudged, 1):
        detection["anchor"] = f"detection-{number}"
        detection["related"] = _related(detection, act_on + passed)
        detection["bears_on"] = _bears_on(detection.get("citation", ""), scope)
    figures = key_numbers(document.evidence, document.findings)
    facts = {g["head"].rule: g["fact"] for g in act_on}
    return {
        "opinion": document.opinion,
        "headline": headline(document.opinion, groups, unjudged, facts, items),
        "since": since_last_review(document),
        "act_on": act_on,
        "passed": passed,
        "unmeasured": unmeasured,  # requirements the spec left unmeasured: a limit of scope, each with its fix
        "unjudged": unjudged,
        "rows": finding_rows(act_on, unjudged, {check for kind in registry.values()
                                                for check in getattr(kind, "self_checks", ())}),
        "key_numbers": figures,
        "key_figures": figures[:SUMMARY_FIGURES],
        "passed_rules": _passed_rules(passed),
        # requirements not measured come first: what the spec could still ask for (the cards say how)
        "not_covered": [f"{g['head'].title.rstrip('.')} ({' · '.join(f.rule for f in g['rules'])}) was not "
                        f"measured: {g['head'].message.removeprefix('not measured: ')}" for g in unmeasured]
        + not_covered(document, registry),
        # one unmeasured requirement by its title, several by their count (page 2 stays one page: issue 36)
        "not_covered_brief": ([f"“{g['head'].title.rstrip('.')}” (not measured)" for g in unmeasured]
                              if len(unmeasured) <= 1 else [f"{len(unmeasured)} requirements (not measured)"])
        + not_covered(document, registry, brief=True),
        "covered": covered(document, registry, len(passed)),
    }


def headline(opinion: str, groups: list[list[Finding]], unjudged: list[dict[str, Any]],
             facts: dict[str, str] | None = None, evidence: Mapping[str, EvidenceItem] | None = None) -> list[str]:
    """The opinion and its reason in two sentences of plain titles (rule ids are for the findings' cards): what was
    found where the evidence names it (`facts`: a finding's judged detection, by rule id), else the requirement."""
    heads = [g[0] for g in groups]
    facts = facts or {}
    warnings = [f for f in heads if f.status == "WARN"]
    if opinion == "no policy applied":
        return ["No policy pack was applied, so no rule judged the evidence and there is no opinion.",
                f"The evidence detected {counted(len(unjudged), 'problem')} (below)." if unjudged else
                "The evidence detected no problem; the measurements stand on their own."]
    failing = [f for f in heads if f.status == "FAIL"]
    serious = [f for f in failing if f.severity in ("critical", "major")]
    broken = [f for f in heads if f.status == "ERROR" and f.severity == "critical"]
    items = [counted(n, noun, plural) for n, noun, plural in (
        (len(failing) - len(serious), "failing minor requirement", None),
        (sum(f.status == "ERROR" for f in heads) - len(broken), "requirement that could not be judged",
         "requirements that could not be judged"),
        (len(warnings), "warning", None),
        (sum(f.status == "WAIVED" for f in heads), "waived failure", None),
        (sum(f.status == "UNMEASURED" for f in heads), "requirement not measured", "requirements not measured"),
        (len(unjudged), "detected problem", None)) if n]
    unmeasured = [f.severity for f in heads if f.status == "UNMEASURED"]
    weighty = {sev: unmeasured.count(sev) for sev in ("critical", "major") if sev in unmeasured}
    if weighty:  # page 2 says how serious what was not checked is (Coverage names it)
        weight = unmeasured[0] if len(unmeasured) == 1 else ", ".join(f"{n} {sev}" for sev, n in weighty.items())
        items = [f"{item} ({weight})" if item.endswith("not measured") else item for item in items]
    if unjudged:
        items[-1] += " no applied rule judges"
    risks = _risks(warnings, facts, evidence or {})
    named_warnings = [f for f in warnings if f.rule in facts and not risks]  # else the risk sentence names them
    if warnings and len(warnings) <= 2 and named_warnings and not any(
            f.status == "FAIL" and f.severity in ("critical", "major") for f in heads):  # an adverse fact, in words
        items = [f"{item} ({_titles(named_warnings, facts=facts)})" if item.endswith(("warning", "warnings")) else item
                 for item in items]
    passed = f"{counted(sum(f.status in ('PASS', 'SKIPPED') for f in heads), 'requirement')} passed or did not apply."
    if serious or broken:
        named = _titles(serious + broken, facts=facts)
        first = (f"The opinion is {opinion} because {_a_requirement(serious)} of critical or major severity "
                 f"{'is' if len(serious) == 1 else 'are'} not met: {named}." if serious else
                 f"The opinion is {opinion} because the evidence for {counted(len(broken), 'critical requirement')}"
                 f" failed, so {'it' if len(broken) == 1 else 'they'} could not be judged: {named}.")
        return [first, (f"Besides, the findings hold {_joined(items)}; " if items else "") +
                (passed if items else passed[:1].upper() + passed[1:])]
    if items:
        return [f"The opinion is {opinion}: no critical or major requirement fails, but the findings hold "
                f"{_joined(items)}.", *risks, passed[:1].upper() + passed[1:]]
    every = "the one requirement" if len(heads) == 1 else f"every one of the {counted(len(heads), 'requirement')}"
    return [f"The opinion is {opinion}: {every} passed with its whole 95% interval inside the requirement, or did "
            "not apply.",
            "The evidence detected nothing that no rule judges."]


def _risks(warnings: list[Finding], facts: dict[str, str], items: Mapping[str, EvidenceItem]) -> list[str]:
    """An adverse measurement a law sets no level for, in plain words beside a positive opinion (issue 56, item 6):
    a critical or major rule that can only warn (a comparison, such as the four-fifths rule under LL144) and whose
    whole interval lies beyond its level. It does not make the opinion negative; it must not read as an all-clear."""
    beyond = [f for f in warnings if f.severity in ("critical", "major") and not f.inconclusive
              and f.value is not None and "FAIL" not in f.requirement]
    measured = [measured_sentence(f, item=items.get(f.evidence)).split(" — ")[0].rstrip(".") for f in beyond]
    return [f"A risk no law sets a level for: {facts.get(f.rule, fact(f, items.get(f.evidence))).rstrip('.')}; "
            f"{said[:1].lower() + said[1:]}, {_side(f.requirement)} over its whole interval. What this means for "
            "the owner's obligations is for counsel to assess." for f, said in zip(beyond, measured, strict=True)]


def _side(requirement: str) -> str:
    """"WARN if < 0.8" as "below the comparison level of 0.8" (several conditions: as the rule states them)."""
    match = re.fullmatch(r"WARN if ([<>]=?) (\S+)", requirement.strip())
    if match is None:
        return f"beyond the comparison level ({requirement})"
    side = "below" if match.group(1).startswith("<") else "above"
    return f"{side} the comparison level of {match.group(2)}"


def _passed_rules(passed: list[dict[str, Any]]) -> dict[str, Any]:
    """The requirements that passed or did not apply, in pack-and-number order (BASE-2 before BASE-10), and how
    many rules they are (a requirement two packs judge is one requirement, two rules)."""
    def natural(rule: str) -> tuple:
        return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", rule))

    ids = sorted((" · ".join(sorted((f.rule for f in g["rules"]), key=natural)) for g in passed),
                 key=lambda text: natural(text.split(" · ")[0]))
    return {"requirements": len(passed), "rules": sum(len(g["rules"]) for g in passed), "ids": ", ".join(ids)}


def _a_requirement(findings: list[Finding]) -> str:
    return "a requirement" if len(findings) == 1 else counted(len(findings), "requirement")


def _titles(findings: list[Finding], most: int = 3, facts: dict[str, str] | None = None) -> str:
    titles = [f"“{(facts or {}).get(f.rule, f.title).rstrip('.')}”" for f in findings]
    shown = "; ".join(titles[:most])
    return shown + (f"; and {len(titles) - most} more" if len(titles) > most else "")


def _clause(text: str, most: int = 170) -> str:
    """The first sentence of a threshold's reason, cut at a clause boundary to at most `most` characters."""
    first = text.split(". ")[0].rstrip(".")
    if len(first) <= most:
        return first
    cut = first.rfind("; ", 0, most)
    return first[:cut] if cut > 40 else ""


def _joined(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def finding_rows(act_on: list[dict[str, Any]], unjudged: list[dict[str, Any]],
                 self_checks: Collection[str] = ()) -> dict[str, Any]:
    """The summary's table of findings by severity: a plain title, the verdict, owner and due date; at most
    SUMMARY_ROWS named, the rest counted by severity. A detection of one of the kinds' `self_checks` (the audit's
    own methods failing their check: an explainer no better than random) says so in its verdict, so it does not
    read as a defect of the ranker."""
    rows = [{"severity": g["head"].severity, "title": g["fact"].rstrip("."), "status": g["head"].status,
             "subject": g["subject"],
             "verdict": "inconclusive warning" if g["head"].inconclusive else VERDICT[g["head"].status],
             "record": g["record"] or {}, "anchor": g["anchor"]} for g in act_on]
    rows += [{"severity": d["severity"], "title": d["title"].rstrip("."), "status": "DETECTED", "subject": d["subject"],
              "verdict": METHOD_LIMIT if d.get("kind") in self_checks else VERDICT["DETECTED"],
              "record": d.get("record") or {}, "anchor": d["anchor"]}
             for d in unjudged]
    rows.sort(key=lambda r: (SEVERITY_ORDER.get(r["severity"], 4), VERDICT_ORDER.get(r["status"], 5)))
    rest = rows[SUMMARY_ROWS:]
    by_severity = [f"{sum(r['severity'] == s for r in rest)} {s}" for s in SEVERITY_ORDER
                   if any(r["severity"] == s for r in rest)]
    return {"shown": rows[:SUMMARY_ROWS], "more": len(rest), "more_by_severity": ", ".join(by_severity),
            "total": len(rows)}


def covered(document: EvidenceDocument, registry: dict[str, Any], passed: int) -> str:
    """What the audit looked at, in one sentence (evidence items counted as Scope counts them)."""
    kinds = [k for k in document.evidence if k in registry]
    packs = [p["pack"] for p in document.policies]
    queries = int(document.metric("dataset", "dataset.n_queries") or 0)
    docs = int(document.metric("dataset", "dataset.n_docs") or 0)
    text = (f"{counted(len(kinds), 'evidence item')} on {counted(queries, 'query')} ({counted(docs, 'document')})"
            if queries else counted(len(kinds), "evidence item"))
    if packs:
        text += f", judged by {counted(len(packs), 'policy pack')} ({', '.join(packs)})"
        assumed = [p["pack"] for p in document.policies if "as if it applied" in str(p.get("applicability", ""))]
        if assumed:  # a reader review (W7): failing items of these read as established legal exposure
            who = f"{len(assumed)} of them" if len(assumed) > 1 else assumed[0]
            text += f", {who} judged as if the law applied (applicability not established)"
    return text + f"; {counted(passed, 'requirement')} passed or did not apply (Appendix A)."


def _records(document: EvidenceDocument) -> dict[str, dict[str, Any]]:
    """Each finding's life as the register records it (`review.findings`, by rule id or detection key); without a
    register, the spec's `findings:` as the owner, due date and response."""
    review = document.review or {}
    if "findings" in review:
        return {f["key"]: f for f in review["findings"]}
    return {a["rule"]: {"owner": a["owner"], "due": str(a["due"]), "response": a.get("note")}
            for a in document.assignments}


def _detection_key(detection: dict[str, Any]) -> str:
    from auditor.register.lifecycle import finding_key

    return finding_key(detection)


def since_last_review(document: EvidenceDocument) -> dict[str, Any] | None:
    """What the summary opens with when the register knows the system: the previous review, findings opened,
    remediated and overdue, status changes and inputs changed; or that this is the system's first review."""
    review = document.review
    if not review:
        return None
    if "error" in review:
        return {"error": review["error"], "system": review["system"]}
    rows = review.get("findings", [])
    diff = document.since_last_review or {}
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


def _group(group: list[Finding], records: dict[str, dict], detections: list[dict[str, Any]], ran: set[str],
           registry: dict[str, Any], items: Mapping[str, EvidenceItem] | None = None) -> dict[str, Any]:
    head = group[0]
    item = (items or {}).get(head.evidence)  # what the figure is about, where its kind says (wording.phrase_of)
    rules = [f.rule for f in group]
    judged = [d for d in detections if set(d.get("judged_by_rules") or ()) & set(rules)]
    # a detection carries the severity of the strongest rule that judges it: only that rule's finding is titled by
    # it, so one title never shows two severities; a weaker rule judging it too states its own measured fact
    titled = [d for d in judged if d["severity"] == head.severity] if head.status in ("FAIL", "WARN", "WAIVED") else []
    return {
        # what was found, where the evidence names it (its judged detection: "Undeclared main ranking parameter:
        # sales_rank_log"), else the measured value in the rule's words; the requirement when it judged nothing
        # (issue 56: facts first)
        "fact": _fact(titled) if titled else fact(head, item) if head.status in ("FAIL", "WARN", "WAIVED")
        else head.title,
        "head": head,
        "rules": group,
        "citations": _distinct_citations([f.citation for f in group]),
        "remedy": _first_confirm(head, remedy_for(next((f.remedy for f in group if f.remedy), ""), ran, registry)),
        "remedy_setup": remedy_setup(next((f.remedy for f in group if f.remedy), ""), ran, registry),
        "rationale": head.rationale,
        "record": _record(rules, records),
        "detections": [d for d in detections if set(d.get("judged_by_rules") or ()) & set(rules)],
        "measured": measured(head),
        "sentence": measured_sentence(head, item=item),
        "technical": [technical(f) for f in group],
        # each technical line once, with the metric it prints (`data-ref`, auditor/report/consistency.py) when its
        # value is the metric's (a per-query rule's value is a share of queries)
        "technical_refs": _technical_lines(group),
        # what the severity is printed for (consistency.py): the detection that titles it, else the finding
        "subject": _detection_key(titled[0]) if titled else head.finding or head.rule,
        # what `measured` prints (consistency.py), unless it prints a word ("stated") and no number
        "ref": None if head.value is None or head.requirement.startswith("share of queries")
        or not re.search(r"\d", measured(head)) else f"metric:{head.evidence}:{head.metric}",
        "anchor": "finding-" + "-".join(rules).lower(),
    }


def _technical_lines(group: list[Finding]) -> list[tuple[str, str | None]]:
    """Each metric's technical line once (`metric = value; requirement`), the requirements of the rules that judge it
    joined (a reader review, W10: one key printed twice, the second broken across lines), with the metric it prints
    (`data-ref`, auditor/report/consistency.py) when its value is the metric's (a per-query rule's value is a share of
    queries)."""
    lines: dict[str, tuple[list[str], str | None]] = {}
    for f in group:
        line = technical(f)
        head, sep, requirement = line.partition("; ") if f.value is not None else (line, "", "")
        ref = None if f.value is None or f.requirement.startswith("share of queries") \
            else f"metric:{f.evidence}:{f.metric}"
        requirements, _ = lines.setdefault(head, ([], ref))
        if sep and requirement not in requirements:
            requirements.append(requirement)
    return [(head + "".join(f"; {r}" for r in requirements) if len(requirements) < 2 else
             f"{head}; " + " · ".join(f"{rule}: {r}" for rule, r in _by_rule(group, head, requirements)), ref)
            for head, (requirements, ref) in lines.items()]


def _by_rule(group: list[Finding], head: str, requirements: list[str]) -> list[tuple[str, str]]:
    """Which rules hold each requirement of one technical line ("BASE-9, P2B-9")."""
    return [(", ".join(f.rule for f in group if technical(f) == f"{head}; {r}"), r) for r in requirements]


CONDITION = re.compile(r"(?:FAIL|WARN) if ([<>]=?) (-?\d+(?:\.\d+)?(?:e-?\d+)?)")


def _first_confirm(head: Finding, remedy: str) -> str:
    """An inconclusive warning whose estimate itself meets the requirement: the remedy waits for an audit that
    confirms the level (a reader review, s67 W-N1: an own-products ratio of 0.976 was told to remove the flag, where
    only its interval reached the warning level)."""
    if not remedy or not head.inconclusive or head.value is None:
        return remedy
    requirement = head.requirement.split(":", 1)[1] if head.requirement.startswith("share of queries") \
        else head.requirement
    conditions = CONDITION.findall(requirement)
    if not conditions or any(_holds(head.value, op, float(level)) for op, level in conditions):
        return remedy
    return (f"The estimate itself meets the requirement; only its 95% interval reaches past it, so the data cannot "
            f"tell: audit again on more queries first. If that confirms it: {remedy[:1].lower()}{remedy[1:]}")


def _holds(value: float, op: str, level: float) -> bool:
    return {"<": value < level, "<=": value <= level, ">": value > level, ">=": value >= level}[op]


def _fact(judged: list[dict[str, Any]]) -> str:
    """A finding's judged detections as one title: the first, and how many more (each has its card)."""
    titles = list(dict.fromkeys(str(d["title"]).rstrip(".") for d in judged))
    heads = {title.split(": ", 1)[0] for title in titles}
    if len(titles) > 1 and len(heads) == 1 and all(": " in title for title in titles):
        # one kind of fact about several subjects names them all (a reader review, W5: "f11_score; and 1 more" hid
        # the second undeclared parameter): "Undeclared main ranking parameter (2): f11_score and f75_score"
        subjects = [title.split(": ", 1)[1] for title in titles]
        named = subjects[:3] + ([f"{len(subjects) - 3} more"] if len(subjects) > 3 else [])
        return f"{heads.pop()} ({len(subjects)}): {_joined(named)}"
    return titles[0] + (f"; and {len(titles) - 1} more" if len(titles) > 1 else "")


REGULATIONS = {"eu-dma-art6-5": "2022/1925", "eu-dsa-art27-34": "2022/2065", "eu-ai-act-annex-iv": "2024/1689",
               "eu-p2b-art5": "2019/1150", "us-nyc-ll144": "RCNY",
               "jp-tfdpa-ranking": "Act No. 38 of 2020"}  # the built-in packs' laws, by what their citations carry


def _law_scope(document: EvidenceDocument) -> dict[str, str]:
    """Regulation number → a note for citations of a law that does not bind this provider or that no applied pack
    judges (from the policies' and the other laws' applicability)."""
    out = {}
    for law in document.other_laws:
        number = REGULATIONS.get(law["pack"])
        if number:
            out[number] = ("not applicable to this provider" if law["applicability"].startswith("not applicable")
                           else "its pack was not applied")
    for pack in document.policies:
        number = REGULATIONS.get(pack["pack"])
        if number and pack.get("applicability", "").startswith("not applicable"):
            out[number] = "not applicable to this provider"
        elif number:
            out.pop(number, None)
    return out


def _bears_on(citation: str, scope: dict[str, str]) -> list[str]:
    """The citation's laws, each marked when it does not bind this provider or no applied pack judges it."""
    out = []
    for part in (p for p in citation.split("; ") if p):
        notes = [note for number, note in scope.items() if number in part]
        out.append(f"{part} ({notes[0]})" if notes else part)
    return out


def _related(detection: dict[str, Any], groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules that judge another detection about the same subject in the same evidence (the own products' attention
    gap is unjudged while P2B-11 judges the model's own lift of them): named beside the unjudged one, so two
    severities about one subject are explained, not contradictory."""
    key = (detection.get("evidence"), detection.get("subject"))
    return [{"rules": " · ".join(f.rule for f in g["rules"]), "severity": g["head"].severity, "subject": g["subject"],
             "status": g["head"].status, "title": g["head"].title, "anchor": g["anchor"],
             "detections": [d["title"] for d in g["detections"] if (d.get("evidence"), d.get("subject")) == key]}
            for g in groups if key[1] and any((d.get("evidence"), d.get("subject")) == key for d in g["detections"])]


def _distinct_citations(citations: list[str]) -> list[str]:
    """Each article once: two packs citing "Reg. (EU) 2019/1150 (P2B) Art. 5(1) — …" and "Reg. (EU) 2019/1150
    Art. 5(1) — …" name the same law (the first wording is kept)."""
    seen: dict[str, str] = {}
    for citation in citations:
        for part in citation.split("; "):
            key = re.sub(r"\s*\([A-Z0-9]{2,}\)|\s+", "", part.split(" — ")[0]).lower()
            seen.setdefault(key, part)
    return list(seen.values())


def _record(rules: list[str], records: dict[str, dict]) -> dict[str, Any] | None:
    """The register's record of a finding that several packs' rules judge: the one someone answered (an owner or
    an acceptance), else the first."""
    found = [records[r] for r in rules if r in records]
    return next((r for r in found if r.get("owner") or r.get("approver")), found[0] if found else None)


def measured(finding: Finding) -> str:
    """The measured value in a few characters, with its interval, in the one style of the key figures (a share in
    %): `0.840 (0.815 to 0.864)`, `44.3% (32.9% to 54.4%)`; the message when the rule judged no value (presence of
    evidence, skipped, error)."""
    if finding.value is None:
        return "evidence present" if finding.status == "PASS" else finding.message
    unit = None if finding.requirement.startswith("share of queries") else \
        cell_text(finding.metric, finding.value, finding.interval)
    if unit is not None:  # "47 days", "stated", "-0.8 pp (...)": what the number means, in its threshold's unit
        return unit
    if finding.requirement.startswith("share of queries"):
        text = f"{percent(finding.value)} of queries"
        low_high = finding.interval and interval(*finding.interval, share=True)
    else:
        share = is_share(finding.metric, finding.value)
        text = percent(finding.value) if share else figure(finding.value)
        low_high = finding.interval and interval(min(finding.interval[0], finding.value),
                                                 max(finding.interval[1], finding.value), share=share)
    return f"{text} ({low_high})" if low_high else text


def _reference_parts(point: str, why: str) -> dict[str, Any]:
    """A key figure's reference as the templates print it: the whole text, and the point and its reason apart;
    `reference_met`: its requirement is met, so its reason is the first page 2 leaves out when crowded
    (`report.pdf`)."""
    return {"reference": point + (f" — {why}" if why else ""), "reference_point": point, "reference_why": why,
            "reference_met": point.endswith(("(here: met)", "(here: within it)"))}


UNJUDGED = "Not judged by any rule"  # a key figure no applied rule judges


def key_numbers(evidence: Mapping[str, EvidenceItem], findings: Sequence[FindingPart] = ()) -> list[dict[str, Any]]:
    """The few figures a reader should remember, most telling first, each printed with its interval in the document's
    one style and a reference point: the applied rule's requirement and why it sits there, else what the scale
    means."""
    rows: list[dict[str, Any]] = []
    judged: dict[str, list[FindingPart]] = {}
    for f in findings:
        if f.value is not None and not f.requirement.startswith("share of queries"):
            judged.setdefault(f.metric, []).append(f)

    def reference(name: str, scale: str, share: bool = False, in_points: bool = False) -> tuple[str, str]:
        """The reference point, and apart from it why the threshold sits there (page 2 drops the reasons when it
        would not fit on one page otherwise: `report.pdf.render_pdf`)."""
        rules = judged.get(name) or judged.get(name.removesuffix(".mean")) or []
        if not rules:  # said, so a figure without a verdict is not read as met (a reader review: the accuracy gap)
            return f"{scale.rstrip('. ')}. {UNJUDGED}", ""
        # several packs' rules on one metric: the one that decides it (a FAIL before a WARN), as the findings do
        rules = sorted(rules, key=lambda f: VERDICT_ORDER.get(f.status, 9))
        why = _clause(rules[0].threshold_reason)
        requirement = rules[0].requirement
        if share:  # the thresholds in the value's own unit: "WARN if > 35.0%", not "> 0.35" beside 14.7%
            requirement = thresholds_in_percent(requirement)
        elif in_points:  # "WARN if > +1.0 pp" beside +10.7 pp
            requirement = thresholds_in_points(requirement)
        # a rule that only warns sets a level to compare with, not a requirement (LL144's four-fifths comparison)
        word = "Required" if "FAIL" in requirement else "Compared with"
        # the verdict beside its requirement (a reader review: three of eight figures failed, shown as bare numbers)
        head = rules[0]
        here = ("inconclusive warning" if head.inconclusive and head.status == "WARN" else
                {"FAIL": "fails", "WARN": "warning", "WAIVED": "fails, waived"}.get(head.status,
                                                                                   "met" if word == "Required"
                                                                                   else "within it"))
        return f"{scale}. {word}: {requirement} (here: {here})", why or ""

    def texts(offer: KeyFigure, item: EvidenceItem) -> tuple[str, str] | None:
        """The figure's value and its interval as printed, in its unit; None when the item does not hold it."""
        found = item.reading(offer.metric)
        if found is None:
            return None
        value, low, high = found.value, found.low, found.high
        if offer.points:
            spread = "" if low is None or high is None else f"{points(min(low, value))} to {points(max(high, value))}"
            return points(value), spread
        shown = percent if offer.share else figure
        return shown(value), ("" if low is None or high is None else
                              interval(min(low, value), max(high, value), share=offer.share))

    def judged_first(offer: KeyFigure) -> tuple[KeyFigure, list[KeyFigure]]:
        """Of a fact's figures, the one an applied rule judges (the worst verdict's, when several are), else the
        offer itself; and the others, printed beside it."""
        candidates = [offer, *offer.also]
        ruled = [c for c in candidates if judged.get(c.metric)]
        chosen = min(ruled, key=lambda c: min(VERDICT_ORDER.get(f.status, 9) for f in judged[c.metric]),
                     default=offer)
        return chosen, [c for c in candidates if c is not chosen]

    def add(offer: KeyFigure, kind: str) -> None:
        item = evidence.get(kind)
        chosen, beside = judged_first(offer)
        printed = None if item is None else texts(chosen, item)
        if item is None or printed is None:
            return
        found = item.reading(chosen.metric)
        assert found is not None  # texts read it
        scale = chosen.scale
        for other in beside:  # "…; their attention ÷ what their relevance earns: 1.73 (1.55 to 1.94)"
            shown = texts(other, item)
            if shown is not None and other.aside:
                scale += f"; {other.aside}: {shown[0]}" + (f" ({shown[1]})" if shown[1] else "")
        rows.append({"label": chosen.label, "value": found.value, "low": found.low, "high": found.high,
                     "share": chosen.share, "evidence": kind, "metric": chosen.metric,
                     "value_text": printed[0], "interval_text": printed[1],
                     **_reference_parts(*reference(chosen.metric, scale, chosen.share, chosen.points))})

    from auditor.evidence.registry import KINDS  # the kinds' own figures, most telling first

    offered = [(offer, name) for name, kind in KINDS.items() if name in evidence
               for offer in kind.figures(evidence[name])]
    for offer, name in sorted(offered, key=lambda pair: pair[0].order):
        add(offer, name)
    return rows


def _short(title: str) -> str:
    """A law's title before its dash ("DSA Art. 27 and 34"), for the one-page summary that must stay one page."""
    return title.split(" — ")[0]


def not_covered(document: EvidenceDocument, registry: dict[str, Any], *, brief: bool = False) -> list[str]:
    """What the audit did not look at: evidence not requested or not produced, sampled queries, stated exclusions.
    `brief`: each in a few words, for the one-page summary, what matters most first (a law that binds the provider,
    then one that may, before evidence not requested), since page 2 shows the first few."""
    evidence = document.evidence
    out: list[str] = []
    first: list[str] = []  # brief: laws that apply, whole or in part
    maybe: list[str] = []  # brief: laws that may apply
    for name, plugin in registry.items():
        result = evidence.get(name)
        if result is None:
            # the kind's name is the spec's key: after the words, in small type (`prose`), for whoever adds it
            out.append(f"{plugin.title} (not requested)" if brief else
                       f"{plugin.title} was not requested: {plugin.description.rstrip('. ')} (the spec's evidence "
                       f"item `{name}`)")
        elif result.status != "ok":
            out.append(f"{plugin.title} (no results)" if brief else
                       f"{plugin.title} did not produce results (the spec's evidence item `{name}`): {result.error}")
    dataset = evidence.get("dataset")
    facts = dataset.metrics if dataset is not None else {}
    if "dataset.population.n_queries" in facts:
        out.append(f"Only a stratified sample of {int(facts['dataset.n_queries'] or 0):,} of "
                   f"{int(facts['dataset.population.n_queries'] or 0):,} queries was audited.")
    budget = document.budget or {}
    if budget.get("queries") is not None or budget.get("reduced_sizes") or budget.get("fits") is False:
        choices = budget.get("choices", [])
        out += ([f"Time budget ({budget['minutes']:g} minutes): {counted(len(choices), 'reduction')} of the work"]
                if brief else [f"Time budget ({budget['minutes']:g} minutes): {sentence}" for sentence in choices])
    for law in document.other_laws:
        if law["applicability"].startswith("applies"):
            # "applies: …; 7 of 13 rules do not: …" — a law that binds the provider only in part says so on every
            # page (Scope and the engagement print the whole sentence)
            part = "rules do not" in law["applicability"]
            (first if brief else out).append(
                f"{_short(law['title'])} (applies{' in part' if part else ''}, not judged)" if brief else
                f"{law['title']}: {law['applicability'] if part else 'applies to this provider'}, but its pack "
                f"({law['pack']}) was not applied, so this report does not judge it")
        elif not law["applicability"].startswith("not applicable"):
            (maybe if brief else out).append(
                f"{_short(law['title'])} (may apply, not judged)" if brief else
                f"{law['title']}: {law['applicability']}; its pack ({law['pack']}) was not applied")
    for use in document.audit.get("out_of_scope") or []:
        out.append(f"{use} (out of scope)" if brief else f"Out of scope by the owner's statement: {use}")
    return first + maybe + out
