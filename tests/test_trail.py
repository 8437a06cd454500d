"""A trail nobody can rewrite (issue 54, item 1): the register edited by SQL — a response changed, a due date moved,
an event deleted, events reordered, an approval forged — is named by `auditor register check` and marked by `findings
show` and `history`; a chain rewritten *and rehashed* after an edit is still caught, against the head a later signed
run pinned and against a TSA anchor. On SQLite and on a real PostgreSQL server."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from auditor.cli import app
from auditor.register.store import Register
from tests.conftest import BOOKSTORE, PASS, _keygen, copy_bookstore
from tests.helpers import rehash_trail

runner = CliRunner()
SYSTEM = "catalogue-ranker"
DECLARED = ["genre_match", "price_in_range", "avg_review", "own_brand", "n_reviews", "publishing_year",
            "author_popularity"]


def _cli(*args: str, code: int = 0, env: dict[str, str] | None = None) -> str:
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == code, result.output
    return result.output


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def history(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two signed quarterly reviews of the bookstore (BASE-8 fails in both), a response recorded between them, the
    second approved: a register with runs, events and an approval, and the second run's bundle pinning the trail's
    head after the response."""
    base = tmp_path_factory.mktemp(f"trail-{request.param}")
    folder = base / "bookstore"
    folder.mkdir()
    copy_bookstore(folder)
    keys = _keygen(base / "keys")
    approver = base / "approver"
    if request.param == "sqlite":
        location = str(folder / "reports" / "register.sqlite")
    else:
        from tests import postgres

        location = postgres.fresh_database(request.getfixturevalue("postgres_server"), "trail_base")
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec.pop("findings")
    spec["model"]["name"] = SYSTEM
    spec.update(evidence=[{"ranking_quality": {"cutoffs": [10]}}, {"disclosure_consistency": {"declared": DECLARED}}],
                policies=["starter"], output={"dir": "reports", "formats": ["html"]},
                signing={"key": "../keys/signer.p12", "passphrase_env": "TEST_KEY_PASS",
                         "bundle_key": "../keys/bundle-ed25519.pem"})
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    env = {"TEST_KEY_PASS": PASS}
    report = ["report", str(folder / "audit.yaml"), "--register", location, "--quiet", "--fail-on", "never"]
    q1 = Path(_cli(*report, env=env).strip().splitlines()[-1]).parent
    if request.param == "postgresql":
        _cli("register", "settings", "--decisions", str(base / "decisions"), "--register", location)
    _cli("keygen", "--out", str(base / "jane"), "--passphrase-env", "TEST_KEY_PASS", "--name", "Jane Roe", env=env)
    _cli("keygen", "--out", str(approver), "--passphrase-env", "TEST_KEY_PASS", "--name", "Ann Approver", env=env)
    _cli("findings", "respond", f"{SYSTEM}/BASE-8", "--owner", "Search team", "--due", "2027-03-31", "--response",
         "Declare sales volume", "--key", str(base / "jane" / "signer.p12"), "--passphrase-env", "TEST_KEY_PASS",
         "--register", location, env=env)
    q2 = Path(_cli(*report, env=env).strip().splitlines()[-1]).parent
    _cli("approve", str(q2), "--as", "Jane Roe", "--key", str(approver / "signer.p12"), "--passphrase-env",
         "TEST_KEY_PASS", "--pubkey", str(keys / "bundle-ed25519.pub.pem"), "--trust", str(keys / "signer-cert.pem"),
         "--register", location, env=env)
    return {"kind": request.param, "location": location, "q1": q1, "q2": q2, "base": base}


@pytest.fixture
def register(history: dict[str, Any], tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A private copy of the module's register (the run folders stay shared: nothing here edits them)."""
    if history["kind"] == "sqlite":
        copy = tmp_path / "register.sqlite"
        shutil.copy(history["location"], copy)
        return str(copy)
    import re

    import psycopg

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:50]
    server = history["location"].rsplit("/", 1)[0]
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        # the commands' connection pools still hold the template: a copy needs it idle
        connection.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = 'trail_base' "
                           "AND pid <> pg_backend_pid()")
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}" TEMPLATE trail_base')
    return f"{server}/{name}"


def _sql(location: str, *statements: str) -> None:
    from auditor.register.store import register_url

    engine = create_engine(register_url(location))
    with engine.begin() as connection:
        for statement in statements:
            connection.execute(text(statement))
    engine.dispose()


def _check(location: str) -> tuple[int, str]:
    result = runner.invoke(app, ["register", "check", "--register", location])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def test_an_untouched_register_checks_out(register: str, history: dict[str, Any]) -> None:
    code, output = _check(register)
    assert code == 0, output
    assert output.startswith(f"OK   {SYSTEM}: ") and "intact" in output and "2 signed runs' pins hold" in output, \
        output


TAMPERING: dict[str, tuple[Callable[[], list[str]], str]] = {
    "a response changed": (lambda: ["UPDATE finding_events SET response = 'Nothing to do', actor = 'Bob' "
                                    "WHERE event = 'responded'"], "was edited (actor: 'CN=Jane Roe' → 'Bob'"),
    "a due date moved": (lambda: ["UPDATE finding_events SET due = '2099-12-31' WHERE event = 'responded'"],
                         "due: '2027-03-31' → '2099-12-31'"),
    "an event deleted": (lambda: ["DELETE FROM finding_events WHERE event = 'seen'"], "was deleted from the register"),
    "events reordered": (lambda: [], "reordered"),  # _swap_two_events
    "an approval forged": (lambda: ["INSERT INTO approvals (run_id, bundle_sha256, decision, approver, reason, at, "
                                    "statement_sha256) SELECT id, bundle_sha256, 'approved', 'Mallory', NULL, "
                                    "'2026-12-01T00:00:00+00:00', '" + "0" * 64 + "' FROM runs LIMIT 1"],
                           "approved by Mallory) of"),
}


@pytest.mark.parametrize("case", list(TAMPERING))
def test_every_edit_by_sql_is_named(register: str, case: str, tmp_path: Path) -> None:
    statements, expected = TAMPERING[case]
    if case == "events reordered":  # swap two events' places by id, keeping every row
        _swap_two_events(register)
    else:
        _sql(register, *statements())
    code, output = _check(register)
    assert code == 1, output
    failed = [line for line in output.splitlines() if line.startswith("FAIL")]
    assert failed and expected in failed[0], output
    shown = _cli("findings", "show", f"{SYSTEM}/BASE-8", "--register", register)
    assert shown.startswith(f"BROKEN TRAIL {SYSTEM}: "), shown
    listed = _cli("findings", "list", "--register", register)
    assert listed.startswith(f"BROKEN TRAIL {SYSTEM}: "), listed
    _cli("history", "--out", str(tmp_path / "site"), "--register", register)
    page = (tmp_path / "site" / f"{SYSTEM}.html").read_text()
    assert "trail of this system is broken" in page
    assert "trail broken" in (tmp_path / "site" / "index.html").read_text()


def _swap_two_events(location: str) -> None:
    """The first two events of BASE-8 exchange their rows' contents (ids kept): the history reads in another order."""
    from auditor.register.store import register_url

    engine = create_engine(register_url(location))
    columns = ("event", "run_id", "on_day", "at", "actor", "owner", "due", "response", "statement", "signer")
    with engine.begin() as connection:
        rows = connection.execute(text(f"SELECT id, {', '.join(columns)} FROM finding_events WHERE finding_id = "
                                       f"'{SYSTEM}/BASE-8' ORDER BY id")).all()
        first, second = rows[0], rows[1]
        for target, source in ((first, second), (second, first)):
            assignments = ", ".join(f"{c} = :{c}" for c in columns)
            connection.execute(text(f"UPDATE finding_events SET {assignments} WHERE id = :id"),
                               {"id": target[0], **dict(zip(columns, source[1:], strict=True))})
    engine.dispose()


def _rewrite(location: str) -> None:
    """What a database administrator who knows the trail would do: change the response, then recompute the content
    and hash of every trail entry from there on, so the chain is whole again."""
    _sql(location, "UPDATE finding_events SET response = 'Nothing to do' WHERE event = 'responded'")
    rehash_trail(location, SYSTEM)


def test_a_rehashed_rewrite_is_caught_by_the_pinned_head(register: str, history: dict[str, Any]) -> None:
    """The chain is whole again after the rewrite, but Q2's signed bundle pinned the head it saw after the response:
    the trail at that length now has another head."""
    _rewrite(register)
    code, output = _check(register)
    assert code == 1, output
    assert "the trail was rewritten before entry" in output and history["q2"].name in output, output


def test_a_rehashed_rewrite_is_caught_by_an_anchor(register: str, trust_services: Any, tmp_path: Path) -> None:
    """Anchored by the TSA, then rewritten and rehashed (and the run folders out of reach, so no pin helps): the
    anchor no longer matches. The anchor is also kept as a file apart from the database."""
    root = trust_services.write_root_pem(tmp_path / "root.pem")
    anchored = _cli("register", "check", "--register", register, "--anchor", "--timestamp-url", trust_services.url_tsa,
                    "--trust", str(root), "--anchor-out", str(tmp_path / "anchors"))
    assert "anchored: catalogue-ranker at entry" in anchored, anchored
    saved = json.loads(next((tmp_path / "anchors").glob("*.anchor.json")).read_text())
    assert saved["system"] == SYSTEM and len(saved["head"]) == 64
    _rewrite(register)
    _sql(register, "UPDATE runs SET run_dir = run_dir || '-moved'")  # no folder: the pins cannot speak
    code, output = _check(register)
    assert code == 1 and "which the TSA anchored on" in output, output


def test_a_register_migrated_from_version_1_chains_what_it_held(tmp_path: Path, history: dict[str, Any]) -> None:
    """A register written before the trail: the migration starts each chain from the events it holds, marked as
    recorded before the trail, and check says how many."""
    if history["kind"] != "sqlite":
        pytest.skip("the migration is the same SQL on both; its fixture is an SQLite file")
    import sqlite3

    old = tmp_path / "v1.sqlite"
    shutil.copy(history["location"], old)
    with sqlite3.connect(old) as connection:  # back to what a version-1 register held
        connection.execute("DROP TABLE trail")
        connection.execute("DROP TABLE anchors")
        connection.execute("DELETE FROM meta WHERE key != 'schema_version'")
        connection.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    Register(old).close()
    code, output = _check(str(old))
    assert code == 0 and "recorded before the trail" in output, output
