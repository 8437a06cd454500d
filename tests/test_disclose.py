"""The transparency statement (docs/disclose.md): `auditor disclose` drafts it from a run's evidence — every claim
and every footnote on a metric of that evidence.json, in English and German, hostile names printed as themselves —
and `disclosure_consistency.statement` checks a published one claim by claim (P2B-12).

The drafting tests read the session's `signed` run (the bookstore, light spec): no audit of their own. The reverse
check runs the `disclosure_consistency` plugin on the bookstore with the other kinds' results taken from that run; one
slow test runs it end to end through `auditor report` on a light spec."""

from __future__ import annotations

import copy
import datetime as dt
import html
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from auditor.checks.claims import Claim, judge, metrics_of, parse_claims
from auditor.cli import app
from auditor.core.errors import InputError
from auditor.core.feature_names import metric_name, metric_segments
from auditor.core.metric_names import Reading
from auditor.disclosure.command import disclose
from auditor.disclosure.draft import draft
from auditor.disclosure.render import render_statement
from auditor.evidence import REGISTRY
from auditor.evidence.base import EvidenceResult
from auditor.evidence.document import EvidenceItem, read_document
from auditor.judging.policy import bundled_policies_dir, evaluate, load_packs
from auditor.run.engine import input_files, prepare
from tests.conftest import LIGHT_SURROGATE, make_bookstore_context, write_spec

runner = CliRunner()
USED = ("global_importance", "surrogate", "parameter_influence", "exposure")


def _evidence(run: Path) -> dict[str, Any]:
    return json.loads((run / "evidence.json").read_text())


def _metrics(document: dict[str, Any]) -> dict[str, float | None]:
    return {k: v for item in document["evidence"].values() if item["status"] == "ok"
            for k, v in item["metrics"].items()}


# --- drafting ---------------------------------------------------------------------------------------------------------

def test_every_claim_and_footnote_of_the_drafted_statement_is_a_metric_of_its_run(signed: dict[str, Path]) -> None:
    document = _evidence(signed["run"])
    metrics = _metrics(document)
    segments = metric_segments(document["inputs"]["dataset"]["feature_names"])
    drafted = disclose(signed["spec"], run=signed["run"])
    claims = parse_claims(drafted.text)
    assert [c.marker() for c in claims] == [c.marker() for c in drafted.statement.claims]  # all made, all marked
    assert {c.kind for c in claims} == {"order", "weight", "direction", "paid", "own"}
    for claim in claims:
        for metric in metrics_of(claim, segments):
            assert metric is not None and metrics.get(metric) is not None, (claim, metric)
        assert judge(claim, metrics, segments).status != "false", claim  # a draft never contradicts its evidence
    cited = re.findall(r"^\[\^(\d+)\]: `([^`]+)` = ", drafted.text, re.M)
    referenced = set(re.findall(r"\[\^(\d+)\](?!:)", drafted.text))
    assert cited and {n for n, _ in cited} == referenced  # every note referenced, every reference noted
    assert all(metrics.get(metric) is not None for _, metric in cited)
    body = drafted.text.split("\n# ", 1)[1].split("\n## The measurement", 1)[0]
    body = re.sub(r"<!--.*?-->|^\d+\. ", "", body.split("\n", 1)[1], flags=re.M)  # markers, list numbers
    assert body.count(".[^") >= 15 and not re.findall(r"\.(?=\s|$)", body)  # every sentence ends on its footnote


def test_the_bookstore_statement_says_what_was_measured(signed: dict[str, Path]) -> None:
    text = disclose(signed["spec"], run=signed["run"]).text
    first = next(line for line in text.splitlines() if line.startswith("1. "))
    assert first.startswith("1. “The book's genre is the genre the shopper filtered on” matters most.[^")
    assert "Results for which it holds are placed higher." in first
    assert '<!-- claim: {"order": ["genre_match", "price_in_range", "avg_review", "own_brand", "sales_rank_log"]} -->' \
        in text
    assert "The paid parameter “A publisher paid for the placement” moves a result by 0.679 positions on average, " \
           "a small effect." in text
    assert "Our own products (“Published by the shop's own imprint”) are favoured" in text
    assert "`global_importance.within_share.genre_match` = 25.6% (95% interval" in text


@pytest.mark.parametrize(("language", "words"), [("en", ("How we rank results", "matters most", "95% interval")),
                                                 ("de", ("Wie wir Ergebnisse ordnen", "zählt am meisten",
                                                         "95-%-Intervall"))])
def test_english_and_german_render_as_markdown_and_html(signed: dict[str, Path], language: str,
                                                        words: tuple[str, ...]) -> None:
    statement = draft(read_document(_evidence(signed["run"])), run=signed["run"].name)
    markdown = render_statement(statement, language=language, fmt="md")
    page = render_statement(statement, language=language, fmt="html")
    for text in (markdown, page):
        assert all(word in html.unescape(text) for word in words), (language, text[:400])
        assert [c.marker() for c in parse_claims(text)] == [c.marker() for c in statement.claims]
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page and f'lang="{language}"' in page
    assert page.count('<li id="note-') == len(statement.footnotes) == markdown.count("\n[^")


def test_the_latest_run_of_the_spec_is_drafted_and_a_spec_without_one_is_bad_input(signed: dict[str, Path],
                                                                                     tmp_path: Path) -> None:
    result = runner.invoke(app, ["disclose", str(signed["spec"])])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("<!-- Drafted by auditor") and signed["run"].name in result.stderr
    out = tmp_path / "statement.html"
    assert runner.invoke(app, ["disclose", str(signed["spec"]), "--run", str(signed["run"]), "-l", "de",
                               "--out", str(out)]).exit_code == 0
    assert "Wie wir Ergebnisse ordnen" in out.read_text()
    again = runner.invoke(app, ["disclose", str(signed["spec"]), "--out", str(out)])
    assert again.exit_code == 2 and "exists already" in again.stderr  # never overwritten
    wrong = runner.invoke(app, ["disclose", str(signed["spec"]), "--out", str(tmp_path / "s.pdf")])
    assert wrong.exit_code == 2 and "name a .md or .html file" in wrong.stderr
    spec = yaml.safe_load(signed["spec"].read_text())
    spec.pop("signing")
    for section in ("model", "dataset", "background"):
        spec[section]["path"] = str(signed["spec"].parent / spec[section]["path"])
    spec["output"] = {"dir": str(tmp_path / "none")}
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(spec))
    none = runner.invoke(app, ["disclose", str(other)])
    assert none.exit_code == 2 and "no run of this spec" in none.stderr and "auditor report" in none.stderr
    assert "Traceback" not in none.output


HOSTILE = 'x<script>alert(1)</script> [see](javascript:alert(1)) *b* `c` --> "q" \\ | ~ &amp;\n# h\u202e'


def _renamed(document: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """The run's evidence as if feature `old` had been called `new` (no dictionary entry: its name is shown)."""
    doc = copy.deepcopy(document)
    names = doc["inputs"]["dataset"]["feature_names"]
    names[names.index(old)] = new
    doc["feature_dictionary"].pop(old, None)
    for item in doc["evidence"].values():
        item["metrics"] = {re.sub(rf"\.{old}(?=\.|$)", "." + metric_name(new), k): v
                           for k, v in item["metrics"].items()}
        for record in item.get("records", []):
            if record.get("feature") == old:
                record["feature"] = new
    return doc


def test_a_hostile_feature_name_prints_as_itself_and_round_trips_through_its_claims(signed: dict[str, Path]) -> None:
    statement = draft(read_document(_renamed(_evidence(signed["run"]), "genre_match", HOSTILE)))
    assert statement.parameters[0].feature == HOSTILE
    for fmt in ("md", "html"):
        text = render_statement(statement, language="en", fmt=fmt)
        assert "<script" not in text and "&amp;amp;" in text  # no markup from the name; its `&` is text
        assert text.count("-->") == text.count("<!--")  # the name ends no comment
        assert "\u202e" not in text and "⟨U+202E⟩" in text  # shown, as everywhere
        assert [c.features for c in parse_claims(text)][:2] == [statement.claims[0].features, (HOSTILE,)]
    markdown = render_statement(statement, language="en", fmt="md")
    assert r"\[see\](javascript:alert(1)) \*b\* \`c\`" in markdown  # no link, emphasis or code from it
    assert "\n# h" not in markdown  # its line break starts no heading


# --- the claims and their judging ---------------------------------------------------------------------------------

def test_a_claim_holds_is_false_or_uncertain_by_its_interval_against_the_band() -> None:
    segments = {"a": "a", "b": "b"}

    def share(value: float, low: float, high: float, name: str = "a") -> dict[str, float]:
        key = f"global_importance.within_share.{name}"
        return {key: value, f"{key}.ci95_low": low, f"{key}.ci95_high": high}

    most = Claim("weight", ("a",), "most")
    assert judge(most, share(0.25, 0.22, 0.28), segments).status == "holds"
    assert judge(most, share(0.08, 0.07, 0.09), segments).status == "false"
    assert judge(most, share(0.21, 0.18, 0.24), segments).status == "uncertain"
    assert judge(most, share(0.19, 0.21, 0.24), segments).status == "uncertain"  # interval widened to hold its value
    assert judge(most, {}, segments).status == "unchecked"
    order = Claim("order", ("a", "b"))
    both = {**share(0.30, 0.28, 0.32), **share(0.10, 0.09, 0.11, "b")}
    assert judge(order, both, segments).status == "holds"
    assert judge(Claim("order", ("b", "a")), both, segments).status == "false"
    assert judge(order, {**share(0.30, 0.2, 0.4), **share(0.25, 0.2, 0.3, "b")}, segments).status == "uncertain"
    paid = Claim("paid", ("p q",), "none")
    verdict = judge(paid, {"influence.p_q.rank_shift.mean": 0.68, "influence.p_q.rank_shift.ci95_low": 0.59,
                           "influence.p_q.rank_shift.ci95_high": 0.77}, {})
    assert verdict.status == "false" and "below 0.100 positions" in verdict.why
    own = judge(Claim("own", ("own_brand",), "neutral"), {"exposure.own.counterfactual.share_change": 0.004}, {})
    assert own.status == "holds" and own.readings[0][1] == Reading(0.004)


def test_claims_parse_from_markdown_and_html_and_refuse_anything_else(tmp_path: Path) -> None:
    text = ('# T\n\nA.[^1] <!-- claim: {"weight": "a", "is": "a lot"} -->\n<!-- a comment -->\n'
            '<p>B <!--claim:{"order":["a","b"]}--></p>\n<!-- claim: {"own": "o", "is": "favoured"} -->')
    assert [(c.kind, c.features, c.band, c.line) for c in parse_claims(text)] == [
        ("weight", ("a",), "a lot", 3), ("order", ("a", "b"), None, 5), ("own", ("o",), "favoured", 6)]
    for bad, words in (('{"weight": "a"}', "\"is\": one of 'most', 'a lot'"),
                       ('{"weight": "a", "is": "huge"}', "one of 'most'"),
                       ('{"order": ["a"]}', "lists 2 to"), ('{"order": ["a", "a"]}', "twice"),
                       ('{"rank": "a", "is": "up"}', "exactly one of order"),
                       ('{"weight": "a", "is": "most", "x": 1}', "unknown key 'x'"), ("[1]", "not a JSON object"),
                       ("{nope", "not a JSON object")):
        with pytest.raises(InputError) as caught:
            parse_claims(f"line one\n<!-- claim: {bad} -->", file=tmp_path / "s.md")
        assert caught.value.one_line().startswith(f"{tmp_path / 's.md'}:2: ") and words in caught.value.one_line()
    assert parse_claims("<!-- claim: " + "x" * 5) == []  # an unclosed comment is no claim


# --- the reverse check ----------------------------------------------------------------------------------------------

def _check(statement: Path | None, document: dict[str, Any]) -> tuple[EvidenceResult, dict[str, str]]:
    """disclosure_consistency on the bookstore, the kinds it uses taken from `document` (the signed run), judged by
    eu-p2b-art5: its result and each rule's status."""
    ctx = make_bookstore_context()
    ctx.inputs = {name: EvidenceResult(name=name, metrics=dict(document["evidence"][name]["metrics"]))
                  for name in USED}
    kind = REGISTRY["disclosure_consistency"]
    options = {"declared": ["genre_match", "price_in_range", "avg_review"], "resamples": 20,
               **({"statement": str(statement)} if statement is not None else {})}
    validated = kind.options.model_validate(options)
    result = kind.run(ctx, validated)
    if result.status == "ok":  # presented from its stored form, as the engine does
        result.options = validated.model_dump(mode="json")
        result.present(kind.presented(EvidenceItem.model_validate(result.to_json())))
    findings = evaluate(load_packs(["eu-p2b-art5"], base_dir=bundled_policies_dir()), {result.name: result},
                        requested={result.name}, waivers=[], today=dt.date(2026, 11, 27))
    return result, {f.rule: f.status for f in findings}


def test_a_statement_the_model_bears_out_passes_and_a_contradicted_one_fails(signed: dict[str, Path],
                                                                             tmp_path: Path) -> None:
    document = _evidence(signed["run"])
    kept = tmp_path / "kept.md"
    kept.write_text('# Ranking\n\nWhether the genre matches matters most. <!-- claim: {"weight": "genre_match", '
                    '"is": "most"} -->\nThen the price range. <!-- claim: {"order": ["genre_match", '
                    '"price_in_range", "avg_review"]} -->\n')
    result, statuses = _check(kept, document)
    assert statuses["P2B-12"] == "PASS" and result.metrics["disclosure.statement.claims"] == 2
    assert result.metrics["disclosure.statement.false_claims"] == 0
    assert not [d for d in result.detections if d.kind == "statement-claim-false"]

    changed = tmp_path / "changed.md"
    changed.write_text('# Ranking\n\nSales matter most. <!-- claim: {"weight": "sales_rank_log", "is": "most"} -->\n'
                       '<!-- claim: {"order": ["sales_rank_log", "genre_match"]} -->\n'
                       'Paid placement has no effect. <!-- claim: {"paid": "sponsored", "is": "none"} -->\n')
    result, statuses = _check(changed, document)
    assert statuses["P2B-12"] == "FAIL" and result.metrics["disclosure.statement.false_claims"] == 3
    found = [d for d in result.detections if d.kind == "statement-claim-false"]
    assert [d.subject for d in found] == ["weight: sales_rank_log", "order: sales_rank_log, genre_match",
                                         "paid: sponsored"]
    assert all(d.judged_by == ("disclosure.statement.false_claims",) and "Art. 27(1)" in d.citation for d in found)
    assert "changed.md, line 3: the statement says 'sales_rank_log' matters most; measured 8.2%" in found[0].message
    table = result.tables[-1]
    assert table.title == "Claims of the published statement" and [row[3] for row in table.rows] == ["FALSE"] * 3

    drafted = tmp_path / "drafted.md"
    drafted.write_text(disclose(signed["spec"], run=signed["run"]).text)
    result, statuses = _check(drafted, document)
    assert statuses["P2B-12"] == "PASS" and result.metrics["disclosure.statement.claims"] >= 10


def test_without_a_statement_the_rule_is_skipped_and_a_bad_one_is_bad_input(signed: dict[str, Path],
                                                                            tmp_path: Path) -> None:
    result, statuses = _check(None, _evidence(signed["run"]))
    assert statuses["P2B-12"] == "UNMEASURED" and "disclosure.statement.false_claims" in result.unmeasured
    assert "unmeasured" in result.to_json()
    typo = tmp_path / "typo.md"
    typo.write_text('Intro.\n\n<!-- claim: {"weight": "genre_mach", "is": "most"} -->\n')
    kind = REGISTRY["disclosure_consistency"]
    with pytest.raises(InputError, match=r"typo\.md:3: the claim names 'genre_mach'.*did you mean 'genre_match'"):
        kind.check(kind.options.model_validate({"declared": ["genre_match"], "statement": str(typo)}),
                   make_bookstore_context().data)


def _report_with_statement(bookstore: Path) -> tuple[Path, Path, dict[str, Any]]:
    """A light spec checking `terms.md` through `auditor report` (P2B-12 expected to fail): the spec, the report
    and evidence.json."""
    spec = yaml.safe_load((bookstore / "audit.yaml").read_text())
    evidence = [{"global_importance": {"top": 11}}, LIGHT_SURROGATE,
                {"disclosure_consistency": {"declared": ["genre_match", "price_in_range"], "resamples": 20,
                                            "statement": "terms.md"}}]
    path = write_spec(bookstore, evidence=evidence, policies=["eu-p2b-art5"],
                      output={"dir": "reports", "formats": ["html"]}, register=False,
                      audit={**spec["audit"], "provider": {"intermediation_service": True}})
    result = runner.invoke(app, ["report", str(path), "--quiet"])
    assert result.exit_code == 1, result.output
    report = Path(result.stdout.strip())
    return path, report, _evidence(report.parent)


def test_report_checks_the_published_statement_end_to_end(bookstore: Path) -> None:
    """A light spec through `auditor report` (4 s): P2B-12 fails on a contradicted claim, the detection reaches
    evidence.json and the report, and the statement is an input of the run (hashed in a signed run's bundle)."""
    (bookstore / "terms.md").write_text('Sales matter most. <!-- claim: {"weight": "sales_rank_log", "is": "most"} '
                                        '-->\n')
    path, report, document = _report_with_statement(bookstore)
    assert {f["rule"]: f["status"] for f in document["findings"]}["P2B-12"] == "FAIL"
    assert [d["subject"] for d in document["detections"] if d["kind"] == "statement-claim-false"] == [
        "weight: sales_rank_log"]
    assert "Claims of the published statement" in report.read_text()
    assert ("evidence disclosure_consistency.statement", bookstore / "terms.md") in input_files(prepare(path))
    # presented again from its stored facts, byte for byte, where the statement no longer lies (its path is an
    # input of the run, never an option evidence.json stores)
    assert "statement" not in document["evidence"]["disclosure_consistency"]["options"]
    (bookstore / "terms.md").unlink()
    rendered = runner.invoke(app, ["render", str(report.parent), "--out", str(bookstore / "rendered")])
    assert rendered.exit_code == 0, rendered.output
    assert (Path(rendered.stdout.strip()) / "report.html").read_bytes() == report.read_bytes()


def test_a_published_claim_turns_false_when_the_model_changes_so_sales_rank_log_leads(signed: dict[str, Path],
                                                                                       bookstore: Path) -> None:
    """The issue's own case: the statement drafted from this quarter's run is published; next quarter's model is
    retrained so sales volume orders the results (trained on labels made from `sales_rank_log`): the published
    'genre matters most' becomes a false claim, a detection, and P2B-12 fails."""
    import lightgbm as lgb
    import numpy as np
    import pandas as pd

    (bookstore / "terms.md").write_text(disclose(signed["spec"], run=signed["run"]).text)
    train = pd.read_csv(bookstore / "train.csv")
    features = [c for c in train.columns if c not in ("qid", "doc_id", "label")]
    sales = train.groupby("qid", sort=False)["sales_rank_log"].rank(pct=True)
    label = np.minimum((sales * 4).astype(int), 3)  # grades from the query's sales ranks
    groups = train.groupby("qid", sort=False).size().to_numpy()
    booster = lgb.train({"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.1, "min_data_in_leaf": 20,
                         "deterministic": True, "force_row_wise": True, "num_threads": 1, "seed": 7,
                         "verbosity": -1},
                        lgb.Dataset(train[features], label=label, group=groups), num_boost_round=40)
    booster.save_model(str(bookstore / "model.txt"))
    _, _, document = _report_with_statement(bookstore)
    shares = {f: document["evidence"]["global_importance"]["metrics"][f"global_importance.within_share.{f}"]
              for f in ("sales_rank_log", "genre_match")}
    assert shares["sales_rank_log"] > 0.5 > shares["genre_match"]  # the retrained model is led by sales
    assert {f["rule"]: f["status"] for f in document["findings"]}["P2B-12"] == "FAIL"
    false = [d["subject"] for d in document["detections"] if d["kind"] == "statement-claim-false"]
    assert "weight: genre_match" in false, false


def test_the_dsa_pack_judges_a_false_claim_too() -> None:
    """DSA Art. 27(1) asks the same statement of an online platform: DSA-13 fails on a false claim as P2B-12 does,
    so an audit applying only the DSA pack leaves no false claim unjudged."""
    result = EvidenceResult(name="disclosure_consistency", metrics={"disclosure.statement.false_claims": 1.0})
    for packs, rules in ((["eu-dsa-art27-34"], {"DSA-13"}), (["eu-p2b-art5", "eu-dsa-art27-34"], {"P2B-12", "DSA-13"})):
        findings = evaluate(load_packs(packs, base_dir=bundled_policies_dir()), {result.name: result},
                            requested={result.name}, waivers=[], today=dt.date(2026, 11, 27),
                            provider={"online_platform": True, "intermediation_service": True})
        judged = {f.rule: f.status for f in findings if f.metric == "disclosure.statement.false_claims"}
        assert judged == dict.fromkeys(rules, "FAIL")
