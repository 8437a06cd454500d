"""The register's tables (SQLAlchemy Core) and their versioned migrations.

The register is an index of results, never of data rows: one row per audit run (with its evidence.json, compressed,
so a later review can compare with it wherever the run folder went), the verdict of every rule, every detection,
every metric, the findings that live across reviews with their append-only events, and the approvers' sign-offs.

Migrations are numbered functions applied in order inside one transaction; `meta.schema_version` says how far a
register has come. A register written by a newer auditor (a higher version) is refused, never downgraded. The
schema is small and ships inside the wheel, so Alembic's script folder and environment would add more than they
give; the same discipline holds: a released migration is never edited, a change is a new one.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import (
    Column,
    Connection,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()
APPLICATION = "auditor register"  # meta's marker: a database without it is another application's, left untouched

meta = Table("meta", metadata, Column("key", String(64), primary_key=True), Column("value", Text, nullable=False))

runs = Table(
    "runs", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("system", String(200), nullable=False),  # the lineage key: spec `model.name`
    Column("model_version", String(200)),
    Column("title", Text, nullable=False),
    Column("period", String(200)),
    Column("evaluated_on", String(10), nullable=False),  # ISO day of the evaluation
    Column("started_at", String(40), nullable=False),
    Column("recorded_at", String(40), nullable=False),
    Column("opinion", String(40), nullable=False),
    Column("seed", Integer),
    Column("spec_sha256", String(64), nullable=False),
    Column("evidence_sha256", String(64), nullable=False),
    Column("bundle_sha256", String(64)),  # bundle.dsse.json of a signed run
    Column("run_dir", Text, nullable=False, unique=True),
    Column("run_name", String(255), nullable=False),
    Column("inputs", Text, nullable=False),  # the evidence's inputs manifest (files and their hashes), as JSON
    Column("evidence_gz", LargeBinary, nullable=False),  # evidence.json, zlib-compressed
    Column("tool_version", String(40), nullable=False),
    Column("verified", Text),  # v3: how a rebuild found the folder (None: recorded by the run itself)
)
Index("runs_by_system", runs.c.system, runs.c.evaluated_on, runs.c.id)

rule_results = Table(
    "rule_results", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("pack", String(200), nullable=False),
    Column("rule", String(200), nullable=False),
    Column("title", Text, nullable=False),
    Column("severity", String(20), nullable=False),
    Column("status", String(20), nullable=False),
    Column("metric", Text),
    Column("value", Float),
    Column("ci_low", Float),
    Column("ci_high", Float),
)
Index("rule_results_by_run", rule_results.c.run_id)

detections = Table(
    "detections", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("finding_key", Text, nullable=False),
    Column("kind", String(200), nullable=False),
    Column("title", Text, nullable=False),
    Column("severity", String(20), nullable=False),
    Column("evidence", String(200), nullable=False),
    Column("value", Float),
    Column("judged", Integer, nullable=False),  # 1 when an applied rule judges it
)
Index("detections_by_run", detections.c.run_id)

metrics = Table(
    "metrics", metadata,
    Column("run_id", Integer, ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    Column("name", Text, nullable=False),
    Column("value", Float),
)
Index("metrics_by_run", metrics.c.run_id, metrics.c.name)

findings = Table(
    "findings", metadata,
    Column("id", String(420), primary_key=True),  # `<system>/<rule id or detection key>`
    Column("system", String(200), nullable=False),
    Column("key", Text, nullable=False),
    Column("source", String(20), nullable=False),  # "rule" or "detection"
    Column("evidence", String(200), nullable=False),  # the evidence item that detects it ("" for a rule)
    Column("title", Text, nullable=False),
    Column("severity", String(20), nullable=False),
    Column("first_run", Integer, ForeignKey("runs.id"), nullable=False),
    Column("first_seen", String(10), nullable=False),
)
Index("findings_by_system", findings.c.system)

events = Table(
    "finding_events", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("finding_id", String(420), ForeignKey("findings.id"), nullable=False),
    Column("event", String(20), nullable=False),  # opened, seen, responded, accepted, remediated, reopened
    Column("run_id", Integer, ForeignKey("runs.id")),  # the review that showed it (opened, seen, remediated...)
    Column("on_day", String(10), nullable=False),  # the day it counts from (the review's evaluation day, or today)
    Column("at", String(40), nullable=False),  # when it was recorded (UTC)
    Column("actor", Text, nullable=False),
    Column("owner", Text),
    Column("due", String(10)),
    Column("response", Text),
    Column("approver", Text),
    Column("until", String(10)),
    Column("reason", Text),
    Column("statement", Text),  # v2: the decision's signed statement (DSSE envelope JSON), when a person signed it
    Column("signer", Text),  # v2: the signing certificate's subject
)
Index("events_by_finding", events.c.finding_id, events.c.id)

approvals = Table(
    "approvals", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", Integer, ForeignKey("runs.id")),
    Column("bundle_sha256", String(64), nullable=False),
    Column("decision", String(20), nullable=False),  # approved, rejected
    Column("approver", Text, nullable=False),
    Column("reason", Text),
    Column("at", String(40), nullable=False),
    Column("statement_sha256", String(64), nullable=False),
    Column("statement", Text),  # v2: approval.dsse.json itself
)


def _v1(connection: Connection) -> None:
    """The first schema. Named tables, so a later table added to `metadata` is made by its own migration."""
    metadata.create_all(connection, tables=[meta, runs, rule_results, detections, metrics, findings, events,
                                            approvals])


MIGRATIONS: list[Callable[[Connection], None]] = [_v1]  # MIGRATIONS[i] brings a register to version i + 1
SCHEMA_VERSION = len(MIGRATIONS)


# --- version 2: the trail (issue 54) ---------------------------------------------------------------------------------

trail = Table(
    "trail", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("system", String(200), nullable=False),
    Column("seq", Integer, nullable=False),  # 1, 2, ... per system
    Column("kind", String(20), nullable=False),  # run, event, approval
    Column("ref", Integer, nullable=False),  # the row's id in runs, finding_events or approvals
    Column("content", Text, nullable=False),  # the record as canonical JSON (auditor.register.trail.content)
    Column("prev", String(64), nullable=False),  # the hash of the system's previous entry ("0" * 64 first)
    Column("hash", String(64), nullable=False),  # sha256 of prev + "\n" + content
    Column("pre_chain", Integer, nullable=False),  # 1: recorded before the register kept a trail (migrated)
)
Index("trail_by_system", trail.c.system, trail.c.seq, unique=True)

anchors = Table(
    "anchors", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("system", String(200), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("head", String(64), nullable=False),
    Column("token", LargeBinary, nullable=False),  # RFC 3161 over auditor.register.trail.anchor_bytes
    Column("at", String(40), nullable=False),
)


def _v2(connection: Connection) -> None:
    """The trail: a hash chain per system over every run, event and approval, and its anchors; the signed
    statements of decisions beside their rows; the register's identity and marker in `meta`. The events a register
    already holds start its chain, marked as recorded before it (`pre_chain`)."""
    import secrets

    from sqlalchemy import inspect, text

    metadata.create_all(connection, tables=[trail, anchors])
    for table, column in (("finding_events", "statement"), ("finding_events", "signer"), ("approvals", "statement")):
        if column not in {c["name"] for c in inspect(connection).get_columns(table)}:  # (v1 of this code makes them)
            connection.execute(text(f"ALTER TABLE {table} ADD COLUMN {column} TEXT"))
    for key, value in (("application", APPLICATION), ("register_id", secrets.token_hex(16)),
                       ("unsigned_decisions", "refused")):
        connection.execute(meta.delete().where(meta.c.key == key))
        connection.execute(meta.insert().values(key=key, value=value))
    from auditor.register.trail import chain_existing

    chain_existing(connection)


MIGRATIONS.append(_v2)
SCHEMA_VERSION = len(MIGRATIONS)


# --- version 3: how a rebuild found each run (issue 55) --------------------------------------------------------------

def _v3(connection: Connection) -> None:
    """`runs.verified`: NULL for a run its own audit recorded; for one `auditor register rebuild` indexed, what
    verifying its folder found ("verified", "unsigned", or "unverified: <the first failed check>")."""
    from sqlalchemy import inspect, text

    if "verified" not in {c["name"] for c in inspect(connection).get_columns("runs")}:
        connection.execute(text("ALTER TABLE runs ADD COLUMN verified TEXT"))


MIGRATIONS.append(_v3)
SCHEMA_VERSION = len(MIGRATIONS)
