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
)


def _v1(connection: Connection) -> None:
    """The first schema. Named tables, so a later table added to `metadata` is made by its own migration."""
    metadata.create_all(connection, tables=[meta, runs, rule_results, detections, metrics, findings, events,
                                            approvals])


MIGRATIONS: list[Callable[[Connection], None]] = [_v1]  # MIGRATIONS[i] brings a register to version i + 1
SCHEMA_VERSION = len(MIGRATIONS)
