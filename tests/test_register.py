"""The register of audits: findings with a life across quarterly reviews, on SQLite and on a real PostgreSQL.

The scenario is issue 34's: Q1 as the bookstore is audited today (sales_rank_log is an undeclared main parameter:
BASE-8 fails), the finding gets a response with `auditor findings respond`, Q2 is the same audit (the finding is
responded, the report prints its owner, due date and response and opens with what changed), Q3 declares
sales_rank_log (BASE-8 passes: remediated, linked to Q3's run). No `baseline:` anywhere.
"""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.errors import InputError
from auditor.evidence.document import EvidenceDocument
from auditor.register import schema
from auditor.register.lifecycle import Event, Observed, review_events, state
from auditor.register.store import Register
from tests.conftest import PASS, copy_bookstore, settled
from tests.helpers import document_of

runner = CliRunner()
BOOKSTORE = Path(__file__).resolve().parent.parent / "examples" / "bookstore"
DECLARED = ["genre_match", "price_in_range", "avg_review", "own_brand", "n_reviews", "publishing_year",
            "author_popularity"]
DAY = "2026-11-26"


# --- the lifecycle, as pure functions -----------------------------------------------------------------------------

def _doc(findings: list[tuple[str, str]], *, detections: tuple[dict, ...] = (),
         ok: tuple[str, ...] = ()) -> EvidenceDocument:
    return document_of(findings=[{"rule": r, "status": s, "title": f"rule {r}", "severity": "major"}
                                 for r, s in findings],
                       detections=list(detections), evidence={name: {} for name in ok}, run={"evaluated_on": DAY})


def _apply(known: dict, added: dict) -> dict:
    out = {k: (v[0], list(v[1])) for k, v in known.items()}
    for key, (seen, events) in added.items():
        out.setdefault(key, (seen, []))[1].extend(events)
    return out


def test_a_finding_opens_gets_a_response_and_is_remediated_only_by_a_review_that_judged_it() -> None:
    today = dt.date.fromisoformat(DAY)
    q1 = review_events(_doc([("BASE-8", "FAIL"), ("BASE-1", "PASS")]), {}, run="q1", day=DAY, actor="me",
                       assignments=[], waivers=[])
    assert [e.event for e in q1["BASE-8"][1]] == ["opened"] and "BASE-1" not in q1
    known = _apply({}, q1)
    known["BASE-8"][1].append(Event("responded", DAY, "me", owner="Search team", due="2027-01-31", response="fix"))
    now = state(known["BASE-8"][1], today)
    assert (now.status, now.owner, now.due, now.first_seen) == ("responded", "Search team", "2027-01-31", DAY)
    assert state(known["BASE-8"][1], dt.date(2027, 2, 1)).status == "overdue"
    skipped = review_events(_doc([("BASE-8", "SKIPPED")]), known, run="q2", day=DAY, actor="me", assignments=[],
                            waivers=[])
    assert skipped == {}, "a rule that was not judged says nothing about its finding"
    q3 = review_events(_doc([("BASE-8", "PASS")]), known, run="q3", day=DAY, actor="me", assignments=[], waivers=[])
    known = _apply(known, q3)
    assert state(known["BASE-8"][1], today).status == "remediated"
    assert state(known["BASE-8"][1], today).remediated_in == "q3"
    q4 = review_events(_doc([("BASE-8", "FAIL")]), known, run="q4", day=DAY, actor="me", assignments=[], waivers=[])
    assert [e.event for e in q4["BASE-8"][1]] == ["reopened"]


def test_a_detection_a_rule_now_judges_is_merged_not_remediated() -> None:
    """A review whose packs now judge a detection (a rule added, or one that now reads its metric) still finds it:
    its finding joins the rule's, it is not reported as fixed (issue 56: "1 remediated" that never happened)."""
    today = dt.date.fromisoformat(DAY)
    detection = {"kind": "group-over-exposed", "subject": "own_brand = yes", "title": "over-exposed",
                 "severity": "major", "evidence": "exposure"}
    q1 = review_events(_doc([], detections=(detection,), ok=("exposure",)), {}, run="q1", day=DAY, actor="me",
                       assignments=[], waivers=[])
    key = next(iter(q1))
    known = _apply({}, q1)
    judged = {**detection, "judged_by_rules": ["P2B-11"]}
    q2 = review_events(_doc([("P2B-11", "WARN")], detections=(judged,), ok=("exposure",)), known, run="q2",
                       day=DAY, actor="me", assignments=[], waivers=[])
    assert [e.event for e in q2[key][1]] == ["merged"] and "P2B-11" in q2[key][1][0].reason
    assert state(_apply(known, q2)[key][1], today).status == "merged"
    gone = review_events(_doc([("P2B-11", "PASS")], ok=("exposure",)), known, run="q3", day=DAY, actor="me",
                         assignments=[], waivers=[])
    assert [e.event for e in gone[key][1]] == ["remediated"]  # no longer detected: fixed


def test_waivers_are_acceptances_that_lapse_and_spec_owners_are_responses() -> None:
    doc = _doc([("P2B-4", "WAIVED")])
    added = review_events(doc, {}, run="q1", day=DAY, actor="me",
                          assignments=[{"rule": "P2B-4", "owner": "Team", "due": "2027-01-31", "note": "declare"}],
                          waivers=[{"rule": "P2B-4", "approver": "CRO", "expires": "2026-12-31",
                                    "justification": "terms change in January"}])
    events = added["P2B-4"][1]
    assert [e.event for e in events] == ["opened", "responded", "accepted"]
    assert state(events, dt.date(2026, 12, 1)).status == "accepted"
    assert state(events, dt.date(2027, 1, 15)).status == "responded"  # the acceptance lapsed; the response holds
    assert state(events, dt.date(2027, 2, 15)).status == "overdue"
    again = review_events(doc, _apply({}, added), run="q2", day=DAY, actor="me",
                          assignments=[{"rule": "P2B-4", "owner": "Team", "due": "2027-01-31", "note": "declare"}],
                          waivers=[])
    assert [e.event for e in again["P2B-4"][1]] == ["seen"], "the same owner is not recorded twice"


def test_unjudged_detections_are_findings_keyed_by_what_they_are_about() -> None:
    detection = {"kind": "explainer-no-better-than-random", "subject": "lirme5", "title": "LIRME-5 …",
                 "severity": "major", "evidence": "local_explanations", "judged_by_rules": []}
    judged = {**detection, "subject": "exs5", "judged_by_rules": ["BASE-7"]}
    added = review_events(_doc([], detections=(detection, judged)), {}, run="q1", day=DAY, actor="me",
                          assignments=[], waivers=[])
    assert list(added) == ["explainer-no-better-than-random:lirme5"]
    gone = review_events(_doc([], ok=("local_explanations",)), _apply({}, added), run="q2", day=DAY, actor="me",
                         assignments=[], waivers=[])
    assert [e.event for e in gone["explainer-no-better-than-random:lirme5"][1]] == ["remediated"]
    assert review_events(_doc([]), _apply({}, added), run="q2", day=DAY, actor="me", assignments=[],
                         waivers=[]) == {}, "evidence that did not run remediates nothing"
    assert Observed("k", "rule", "t", "major", "FAIL").source == "rule"


# --- the scenario, end to end through the command line ------------------------------------------------------------

@pytest.fixture(params=["sqlite", "postgresql"])
def register_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "reports" / "register.sqlite")
    return request.getfixturevalue("postgres_url")


def _spec(folder: Path, declared: list[str]) -> Path:
    spec = settled(yaml.safe_load((BOOKSTORE / "audit.yaml").read_text()))
    for key in ("signing", "findings"):
        spec.pop(key)
    spec["model"]["name"] = "catalogue-ranker"
    spec["evidence"] = [{"ranking_quality": {"cutoffs": [10]}}, {"disclosure_consistency": {"declared": declared}}]
    spec["policies"] = ["starter"]
    spec["output"] = {"dir": "reports", "formats": ["html"]}
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _report(spec: Path, register: str) -> Path:
    result = runner.invoke(app, ["report", str(spec), "--register", register, "--quiet", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    return Path(result.stdout.strip()).parent


def _cli(*args: str, env: dict[str, str] | None = None) -> str:
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def _person(folder: Path, name: str) -> Path:
    """A person's own key and certificate (`auditor keygen --name`): what they sign their decisions with."""
    _cli("keygen", "--out", str(folder), "--passphrase-env", "TEST_KEY_PASS", "--name", name, "--organisation",
         "Example Bank", env={"TEST_KEY_PASS": PASS})
    return folder / "signer.p12"


def _text(run: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", (run / "report.html").read_text()))


@pytest.mark.slow
def test_three_quarterly_reviews(tmp_path: Path, register_location: str) -> None:
    copy_bookstore(tmp_path)
    spec = _spec(tmp_path, DECLARED)
    q1 = _report(spec, register_location)
    listed = _cli("findings", "list", "--register", register_location)
    assert re.search(r"catalogue-ranker/BASE-8\s+open\s+major", listed), listed
    assert "First review of catalogue-ranker" in _text(q1)
    assert "No owner recorded" in _text(q1) and "findings:" not in _text(q1)

    jane = _person(tmp_path / "jane", "Jane Roe")
    decisions = tmp_path / "reports" / "decisions"
    if "://" in register_location:  # a server's register keeps its decision files where its settings say
        _cli("register", "settings", "--decisions", str(decisions), "--register", register_location)
    unsigned = runner.invoke(app, ["findings", "respond", "catalogue-ranker/BASE-8", "--owner", "x", "--due",
                                   "2027-03-31", "--response", "y", "--as", "Jane Roe", "--register",
                                   register_location])
    assert unsigned.exit_code == 2 and "signed by the person who makes it" in unsigned.stderr, unsigned.output
    _cli("findings", "respond", "catalogue-ranker/BASE-8", "--owner", "Search & Discovery team", "--due",
         "2027-03-31", "--response", "Declare sales volume in the terms", "--key", str(jane), "--passphrase-env",
         "TEST_KEY_PASS", "--register", register_location, env={"TEST_KEY_PASS": PASS})
    assert len(list(decisions.glob("catalogue-ranker/*-responded-BASE-8-*.dsse.json"))) == 1
    q2 = _report(spec, register_location)
    assert re.search(r"catalogue-ranker/BASE-8\s+responded", _cli("findings", "list", "--register",
                                                                   register_location))
    text = _text(q2)
    assert f"Since the last review of catalogue-ranker ( {q1.name} " in text
    same_day = json.loads((q1 / "evidence.json").read_text())["run"]["evaluated_on"] == \
        json.loads((q2 / "evidence.json").read_text())["run"]["evaluated_on"]  # (not across midnight)
    assert ("the same day as this review: a re-run, not a period's change" in text) == same_day
    assert ("the same day: a re-run, not a period's change" in text or  # page 2's line too (its short form when
            "The last review is a re-run of the same day" in text) == same_day  # nothing changed)
    assert "owner Search &amp; Discovery team, due 2027-03-31" in text
    assert "Response Declare sales volume in the terms" in text
    doc2 = json.loads((q2 / "evidence.json").read_text())
    assert doc2["since_last_review"]["old"] == q1.name and "baseline" not in doc2["spec"]["content"]
    assert doc2["review"]["previous"]["run"] == q1.name

    q3 = _report(_spec(tmp_path, ["sales_rank_log", *DECLARED]), register_location)
    listed = _cli("findings", "list", "--register", register_location, "--status", "remediated")
    assert "catalogue-ranker/BASE-8" in listed, listed
    shown = _cli("findings", "show", "catalogue-ranker/BASE-8", "--register", register_location)
    assert [line.split()[1] for line in shown.splitlines()[1:]] == ["opened", "responded", "seen", "remediated"]
    assert "remediated by" in shown and q3.name in shown and "by O=Example Bank,CN=Jane Roe (signed)" in shown, shown
    text = _text(q3)
    assert "1 finding remediated (Every main ranking parameter is declared)" in text and "BASE-8 FAIL → PASS" in text
    runs = Register(register_location).runs("catalogue-ranker")
    assert [r["run_name"] for r in runs] == [q1.name, q2.name, q3.name]
    assert [r["opinion"] for r in runs][-1] != "negative"

    rebuilt = tmp_path / "rebuilt.sqlite"  # the register lost: the run folders and the decisions bring it back
    out = _cli("register", "rebuild", str(tmp_path / "reports"), "--register", str(rebuilt), "--decisions",
               str(decisions))
    assert "3 run(s) indexed" in out and "1 signed decision(s)" in out, out
    again = _cli("findings", "show", "catalogue-ranker/BASE-8", "--register", str(rebuilt))
    assert again.splitlines()[1:] == shown.replace("by auditor report", "by auditor register rebuild").splitlines()[1:]
    assert _cli("register", "check", "--register", str(rebuilt)).startswith("OK   catalogue-ranker: ")

    _cli("history", "--out", str(tmp_path / "board"), "--register", register_location)  # the board's view
    page = (tmp_path / "board" / "catalogue-ranker.html").read_text()
    assert all(run.name in page for run in (q1, q2, q3))
    figures = re.findall(r"<figure.*?</figure>", page, flags=re.S)
    assert any("nDCG@10" in f for f in figures) and any("undeclared" in f.lower() for f in figures), \
        "the trends of nDCG and of the undeclared share"


# --- faults: never lost, never half-recorded, one line each ----------------------------------------------------------

def _record_one(location: str, document: dict, run_dir: str) -> int:
    return Register(location).record(document, system="catalogue-ranker", run_dir=Path(run_dir),
                                     evidence_sha256="0" * 64, bundle_sha256=None, actor="test")


@pytest.fixture(scope="module")
def one_review(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One light bookstore review's evidence document (no register)."""
    folder = tmp_path_factory.mktemp("one")
    copy_bookstore(folder)
    run = _report(_spec(folder, DECLARED), "off")
    return json.loads((run / "evidence.json").read_text())


def test_two_audits_recording_at_once_are_both_recorded(tmp_path: Path, one_review: dict,
                                                        register_location: str) -> None:
    Register(register_location)  # created before the race: the race is on the write, not on the schema
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        ids = pool.starmap(_record_one, [(register_location, one_review, str(tmp_path / f"run{i}")) for i in range(6)])
    assert len(set(ids)) == 6
    register = Register(register_location)
    assert len(register.runs("catalogue-ranker")) == 6
    rows = register.findings(system="catalogue-ranker", today=dt.date.fromisoformat(DAY))
    assert [r["id"] for r in rows] == ["catalogue-ranker/BASE-8"]
    assert [e.event for e in rows[0]["state"].events].count("opened") == 1  # serialised: one review opened it


def test_a_register_of_a_newer_auditor_is_refused(tmp_path: Path) -> None:
    location = tmp_path / "register.sqlite"
    Register(location)
    with sqlite3.connect(location) as connection:
        connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(schema.SCHEMA_VERSION + 1),))
    with pytest.raises(InputError, match=r"newer auditor .*upgrade auditor"):
        Register(location)


def test_a_damaged_or_locked_register_is_one_line_and_the_run_is_still_written(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    copy_bookstore(tmp_path)
    spec = _spec(tmp_path, DECLARED)
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    result = runner.invoke(app, ["report", str(spec), "--register", str(damaged), "--quiet"])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: {damaged}: the register is damaged"), result.stderr
    assert "auditor register rebuild" in lines[0]
    run = Path(result.stdout.strip()).parent
    assert (run / "evidence.json").is_file()
    assert json.loads((run / "evidence.json").read_text())["review"]["error"].startswith("the register is damaged")

    locked = tmp_path / "locked.sqlite"
    Register(locked)
    monkeypatch.setattr("auditor.register.store.SQLITE_BUSY_SECONDS", 1)
    holder = sqlite3.connect(locked, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(InputError, match="locked by another process"):
            _record_one(str(locked), json.loads((run / "evidence.json").read_text()), str(tmp_path / "r"))
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_an_unreachable_postgresql_is_one_line(tmp_path: Path) -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(InputError) as caught:
        Register("postgresql://auditor:secret@127.0.0.1:9/nowhere")
    line = caught.value.one_line()
    assert "cannot reach the register" in line and "secret" not in line and "PostgreSQL server is running" in line


def test_rebuild_indexes_run_folders_in_the_order_they_were_evaluated(tmp_path: Path, one_review: dict) -> None:
    reports = tmp_path / "reports"
    for i, day in enumerate(["2026-03-31", "2026-06-30", "2026-09-30"]):
        run = reports / f"review-{2 - i}"  # folder names in the opposite order of the days
        run.mkdir(parents=True)
        document = json.loads(json.dumps(one_review))
        document["run"]["evaluated_on"] = day
        if i == 2:  # the last review passes BASE-8
            for f in document["findings"]:
                f["status"] = "PASS" if f["rule"] == "BASE-8" else f["status"]
        (run / "evidence.json").write_text(json.dumps(document))
    out = _cli("register", "rebuild", str(reports))
    assert out.startswith("3 run(s) indexed")
    register = Register(reports / "register.sqlite")
    assert [r["evaluated_on"] for r in register.runs()] == ["2026-03-31", "2026-06-30", "2026-09-30"]
    row = register.finding("catalogue-ranker/BASE-8", today=dt.date(2026, 10, 1))
    assert row["state"].status == "remediated" and row["state"].first_seen == "2026-03-31"
    assert _cli("register", "rebuild", str(reports)).startswith("0 run(s) indexed")


def test_unknown_finding_ids_and_impossible_days_are_one_line(tmp_path: Path, one_review: dict) -> None:
    location = str(tmp_path / "register.sqlite")
    _record_one(location, one_review, str(tmp_path / "run"))
    result = runner.invoke(app, ["findings", "respond", "catalogue-ranker/BASE-9", "--owner", "x", "--due",
                                 "2027-01-01", "--response", "y", "--register", location])
    assert result.exit_code == 2 and "did you mean catalogue-ranker/BASE-8" in result.stderr, result.output
    result = runner.invoke(app, ["findings", "respond", "catalogue-ranker/BASE-8", "--owner", "x", "--due",
                                 "2027-02-30", "--response", "y", "--register", location])
    assert result.exit_code == 2 and "February 2027 has 28 days" in result.stderr, result.output
    result = runner.invoke(app, ["findings", "list", "--register", str(tmp_path / "none.sqlite")])
    assert result.exit_code == 2 and "no register here" in result.stderr, result.output


def test_same_spec_seed_and_register_state_give_the_same_evidence(tmp_path: Path) -> None:
    copy_bookstore(tmp_path)
    spec = _spec(tmp_path, DECLARED)
    first = _report(spec, str(tmp_path / "a.sqlite"))
    second = _report(spec, str(tmp_path / "b.sqlite"))
    a, b = (json.loads((run / "evidence.json").read_text()) for run in (first, second))
    assert a.pop("run") and b.pop("run")
    assert a == b and a["review"]["previous"] is None
