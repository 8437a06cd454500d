"""The engagement facts an assurance report states (ISAE 3000: addressee, subject matter, criteria and whether the
law applies, responsibilities, procedures, level of assurance, conclusion in standard form, date and place), as
rows for the report. Facts come from the spec; a missing one is printed "not stated", never invented."""

from __future__ import annotations

from typing import Any

from auditor.evidence.document import EvidenceDocument

CRITERIA_WORDS = "the criteria of the packs applied"


def conclusion(level: str | None, opinion: str) -> str:
    """The conclusion in the standard form of the engagement's level of assurance, from the opinion."""
    if level is None:
        return (f"No assurance conclusion in standard form: the level of assurance is not stated (reasonable or "
                f"limited: audit.assurance). The overall opinion ({opinion}) is the verdict of the rules applied, "
                "not an assurance conclusion.")
    if opinion == "no policy applied":
        return "No criteria were applied, so no conclusion is given."
    if level == "reasonable":
        return {
            "positive": f"In our opinion the ranking system meets, in all material respects, {CRITERIA_WORDS}.",
            "positive with comments": f"In our opinion, except for the matters in the findings, the ranking system "
                                      f"meets, in all material respects, {CRITERIA_WORDS}.",
        }.get(opinion, f"In our opinion, because of the matters in the findings, the ranking system does not meet "
                       f"{CRITERIA_WORDS}.")
    return {
        "positive": f"Based on the procedures performed and the evidence obtained, nothing has come to our attention "
                    f"that causes us to believe that the ranking system does not meet, in all material respects, "
                    f"{CRITERIA_WORDS}.",
        "positive with comments": f"Based on the procedures performed and the evidence obtained, except for the "
                                  f"matters in the findings, nothing has come to our attention that causes us to "
                                  f"believe that the ranking system does not meet, in all material respects, "
                                  f"{CRITERIA_WORDS}.",
    }.get(opinion, f"Based on the procedures performed and the evidence obtained, matters have come to our attention "
                   f"that cause us to believe that the ranking system does not meet, in all material respects, "
                   f"{CRITERIA_WORDS}: see the findings.")


def _other_law(law: dict[str, Any]) -> str:
    """A law the built-in packs know but this audit did not apply: whether it binds the provider, and what that
    means for the criteria."""
    where = f"{law['title']} ({law['pack']}, not applied)"
    if law["applicability"].startswith("not applicable"):
        return f"{where}: {law['applicability']}"
    if law["applicability"].startswith("applies"):
        return f"{where}: {law['applicability']}; this report does not judge it: apply the pack to cover it"
    return f"{where}: {law['applicability'].removesuffix(': judged as if it applied')}; this report does not judge it"


def _not_covered(document: EvidenceDocument) -> str:
    """The laws that bind the provider (wholly or in part) but no applied pack judged: the conclusion is silent on
    them, and says so (a case handler would otherwise read "the packs applied" as the law that applies)."""
    unjudged = [f"{law['title']} (applies{' in part' if 'rules do not' in law['applicability'] else ''})"
                for law in document.other_laws
                if str(law.get("applicability", "")).startswith("applies")]  # not "applicability not established"
    if not unjudged:
        return ""
    return f" It does not cover the laws no applied pack judged: {'; '.join(unjudged)}."


def engagement(document: EvidenceDocument, section_titles: dict[str, str]) -> list[tuple[str, str | list[str]]]:
    """(term, statement) rows of the engagement, in the order an assurance report gives them; the criteria are one
    line a pack."""
    audit = document.audit
    model = (document.spec.get("content") or {}).get("model") or {}
    inputs = document.inputs.get("model") or {}
    system = model.get("name") or audit.get("title") or "the ranking system"
    version = model.get("version") or inputs.get("version")
    owner, auditor = audit.get("owner") or "the model owner", audit.get("auditor") or "the auditor"
    criteria = [f"{p['title']} ({p['pack']} {p['version']}): {p.get('applicability', 'applies')}"
                for p in document.policies] or ["none (no policy pack applied)"]
    criteria += [_other_law(law) for law in document.other_laws]
    sections = [section_titles[name] for name, _ in document.items() if name in section_titles]
    procedures = (f"{len(sections)} measurements — {', '.join(sections)} — with seed {document.seed}"
                  if sections else "")
    run = document.run
    when = run.get("evaluated_on") or "not stated"
    return [
        ("Addressee", audit.get("addressee") or "not stated (audit.addressee)"),
        ("Subject matter", f"the ranking model {system}{f' version {version}' if version else ''}, for its intended "
                           "use (cover)"),
        ("Criteria", criteria),
        ("Responsibilities", f"{owner} answers for the ranking system and for the facts the spec states about it; "
                             f"{auditor} for the procedures and the conclusion."),
        ("Procedures", f"{procedures}, each as its section states, on the data of the input manifest; 95% "
                       "intervals resample whole queries." if procedures else "none (no evidence ran)"),
        ("Assurance", {"reasonable": "reasonable (ISAE 3000): a conclusion in positive form",
                       "limited": "limited (ISAE 3000): a conclusion in negative form, on what came to our "
                                  "attention"}.get(audit.get("assurance") or "", "not stated (audit.assurance)")),
        ("Conclusion", conclusion(audit.get("assurance"), document.opinion) + _not_covered(document)),
        ("Qualifications", audit.get("qualifications") or "not stated (audit.qualifications)"),
        ("Date and place", f"{when}, {audit.get('place') or 'place not stated (audit.place)'}"),
    ]
