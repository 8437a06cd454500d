"""The register of audits: an SQLite file by default, a PostgreSQL database for a team's shared register.

Every write is one transaction (SQLite: WAL and `BEGIN IMMEDIATE`, so two audits finishing at once queue for the
write lock instead of deadlocking; PostgreSQL: a transaction, findings inserted with ON CONFLICT DO NOTHING), so two
audits recording at once are both recorded and neither is half-recorded. A fault (a locked or damaged file, a
register from a newer auditor, a server that cannot be reached) is an `InputError` naming the register and the fix.
"""

from __future__ import annotations

import datetime as dt
import json
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.core.errors import InputError
from auditor.evidence.document import EvidenceDocument, as_document
from auditor.register import schema as s
from auditor.register import trail
from auditor.register.lifecycle import Event, Observed, review_events, state

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql
    from sqlalchemy.dialects import sqlite as sqlite_dialect

SQLITE_BUSY_SECONDS = 60  # how long a writer waits for another audit's transaction
POSTGRESQL_CONNECT_SECONDS = 10  # how long to wait for a register server to answer
_REBUILD_FIX = "move the file aside and re-index the run folders: `auditor register rebuild REPORTS-FOLDER`"


REGISTER_SCHEMES = ("postgresql", "postgresql+psycopg", "postgres", "sqlite")


def register_url(location: str | Path) -> str:
    """A SQLAlchemy URL for a register location: a `postgresql://` (or `sqlite://`) URL as given, a path as SQLite.
    Any other scheme is refused: `nope://x` is a mistake, not a file named `nope:/x`."""
    text = str(location)
    scheme = text.split("://", 1)[0].lower() if "://" in text else None
    if scheme is not None and scheme not in REGISTER_SCHEMES:
        from auditor.core.urls import shown

        raise InputError(f"a register is an SQLite file or a postgresql:// URL, not {scheme[:20]}://",
                         file=shown(text), fix="give a path (reports/register.sqlite) or postgresql://HOST/DATABASE")
    if text.startswith(("postgresql://", "postgresql+psycopg://", "postgres://")):
        return "postgresql+psycopg://" + text.split("://", 1)[1]
    if text.startswith("sqlite://"):
        return text
    return f"sqlite:///{Path(text).expanduser().absolute()}"


class Register:
    """One register, opened (and migrated to this auditor's schema) on construction."""

    def __init__(self, location: str | Path, *, create: bool = True) -> None:
        from sqlalchemy import create_engine, event

        self.location = str(location)
        self.url = register_url(location)
        self.sqlite = self.url.startswith("sqlite")
        if self.sqlite:
            path = Path(self.url.removeprefix("sqlite:///"))
            if path.is_symlink():  # a link (dangling or not) would have us write a database where it points
                raise InputError("the register is a link", file=self.location,
                                 fix="give the register.sqlite file itself, not a link to it")
            if not create and not path.exists():
                raise InputError("no register here", file=self.location,
                                 fix="give `--register` the register.sqlite of your reports folder, or its "
                                     "postgresql:// URL")
            if path.exists() and not path.is_file():
                raise InputError("the register is not a regular file", file=self.location,
                                 fix="give the path of the register.sqlite file")
            if not create and path.stat().st_size == 0:  # reading must not turn any empty file into a register
                raise InputError("this file is empty, not a register", file=self.location,
                                 fix="give the register.sqlite that `auditor report` wrote in your reports folder")
            if create:
                with self._errors_of_folder(path.parent):
                    path.parent.mkdir(parents=True, exist_ok=True)
            self.engine = create_engine(self.url, connect_args={"timeout": SQLITE_BUSY_SECONDS,
                                                                "isolation_level": None})

            @event.listens_for(self.engine, "connect")
            def _pragmas(dbapi: Any, _record: Any) -> None:
                cursor = dbapi.cursor()
                cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_SECONDS * 1000}")
                cursor.execute("PRAGMA foreign_keys = ON")
                cursor.close()

            @event.listens_for(self.engine, "begin")
            def _immediate(connection: Any) -> None:
                connection.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            try:
                import psycopg  # noqa: F401 - SQLAlchemy's PostgreSQL driver
            except ImportError:
                raise InputError("a PostgreSQL register needs the psycopg package", file=self.location,
                                 fix="pip install 'auditor[postgres]'") from None
            self.engine = create_engine(self.url, connect_args={"connect_timeout": POSTGRESQL_CONNECT_SECONDS},
                                        pool_pre_ping=True)
        from auditor.core.urls import shown

        self.shown = shown(self.location)  # never a password, in any of its forms
        with self._errors():
            self._migrate()

    # --- faults ---------------------------------------------------------------------------------------------------

    @contextmanager
    def _errors_of_folder(self, folder: Path) -> Iterator[None]:
        try:
            yield
        except OSError as exc:
            raise InputError(f"cannot make the register's folder {folder} ({exc.strerror or exc})",
                             file=self.location, fix="check the path and that it is writable") from None

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Database faults as one line naming the register and the fix."""
        from sqlalchemy import exc

        try:
            yield
        except exc.OperationalError as error:
            text = str(error.orig or error).splitlines()[0]
            if "locked" in text:
                raise InputError(f"the register stayed locked by another process for {SQLITE_BUSY_SECONDS} s",
                                 file=self.shown, fix="let the other audit finish and run this again") from None
            if self.sqlite and ("not a database" in text or "malformed" in text):
                raise InputError(f"the register is damaged ({text})", file=self.shown, fix=_REBUILD_FIX) from None
            if self.sqlite:
                raise InputError(f"cannot use the register ({text})", file=self.shown,
                                 fix="check the path and that this folder is writable") from None
            raise InputError(f"cannot reach the register ({text})", file=self.shown,
                             fix="check the URL and that the PostgreSQL server is running; the password comes from "
                                 "PGPASSWORD or ~/.pgpass") from None
        except exc.DatabaseError as error:
            text = str(error.orig or error).splitlines()[0]
            if self.sqlite:
                raise InputError(f"the register is damaged or not a register ({text})", file=self.shown,
                                 fix=_REBUILD_FIX) from None
            raise InputError(f"the register refused the write ({text})", file=self.shown,
                             fix="check that the server accepts writes (not a read-only standby) and the value "
                                 "named") from None

    @contextmanager
    def _write(self) -> Iterator[Any]:
        with self._errors(), self.engine.begin() as connection:
            yield connection

    # --- schema ---------------------------------------------------------------------------------------------------

    def _migrate(self) -> None:
        from sqlalchemy import text

        with self.engine.begin() as connection:
            if not self.sqlite:  # one migrator at a time on a shared server
                connection.execute(text("SELECT pg_advisory_xact_lock(2026112634)"))
            version = self._version_of(connection)
            if version > s.SCHEMA_VERSION:
                raise InputError(f"the register was written by a newer auditor (schema version {version}; this one "
                                 f"reads up to {s.SCHEMA_VERSION})", file=self.shown,
                                 fix="upgrade auditor (pip install -U auditor) before using this register")
            for migrate in s.MIGRATIONS[version:]:
                migrate(connection)
            if version < s.SCHEMA_VERSION:
                connection.execute(s.meta.delete().where(s.meta.c.key == "schema_version"))
                connection.execute(s.meta.insert().values(key="schema_version", value=str(s.SCHEMA_VERSION)))

    def _version_of(self, connection: Any) -> int:
        """The schema version of the database as found: 0 when it holds no table (a new register); an InputError,
        touching nothing, when it is another application's database or its version is not ours to read."""
        from sqlalchemy import inspect, select

        tables = set(inspect(connection).get_table_names())
        if not tables:
            return 0
        foreign = InputError(f"this database is not an auditor register (it holds {', '.join(sorted(tables)[:5])}"
                             f"{', …' if len(tables) > 5 else ''})", file=self.shown,
                             fix="give the register `auditor report` wrote (register.sqlite in the reports folder), "
                                 "or an empty database for a new one")
        if "meta" not in tables or "runs" not in tables:
            raise foreign
        facts = dict(connection.execute(select(s.meta.c.key, s.meta.c.value)).all())
        raw = str(facts.get("schema_version", ""))
        if not raw.isdigit() or len(raw) > 6:
            raise InputError(f"the register's schema version is not a number ({raw[:20]!r})", file=self.shown,
                             fix=_REBUILD_FIX)
        version = int(raw)
        if version >= 2 and facts.get("application") != s.APPLICATION:
            raise foreign
        return version

    def schema_version(self) -> int:
        from sqlalchemy import select

        with self._errors(), self.engine.connect() as connection:
            return int(connection.execute(select(s.meta.c.value).where(s.meta.c.key == "schema_version")).scalar_one())

    # --- reading --------------------------------------------------------------------------------------------------

    def known(self, system: str, connection: Any | None = None) -> dict[str, tuple[Observed, list[Event]]]:
        """The system's findings, each as last observed, with its events oldest first."""
        from sqlalchemy import select

        with self._maybe(connection) as conn:
            rows = conn.execute(select(s.findings).where(s.findings.c.system == system)).mappings().all()
            names = dict(conn.execute(select(s.runs.c.id, s.runs.c.run_name)
                                      .where(s.runs.c.system == system)).all())
            history = conn.execute(select(s.events).join(s.findings, s.events.c.finding_id == s.findings.c.id)
                                   .where(s.findings.c.system == system).order_by(s.events.c.id)).mappings().all()
        out: dict[str, tuple[Observed, list[Event]]] = {
            r["key"]: (Observed(r["key"], r["source"], r["title"], r["severity"], "", r["evidence"]), [])
            for r in rows}
        keys = {r["id"]: r["key"] for r in rows}
        for e in history:
            if e["finding_id"] in keys:  # a finding another review made after the first query: not ours to read
                out[keys[e["finding_id"]]][1].append(_event(e, names))
        return out

    def previous(self, system: str) -> dict[str, Any] | None:
        """The system's latest recorded review (its row, with `document`: its evidence.json), or None."""
        from sqlalchemy import select

        with self._errors(), self.engine.connect() as connection:
            tomorrow = (dt.date.today() + dt.timedelta(days=1)).isoformat()  # a run "from the future" is no one's
            row = connection.execute(select(s.runs).where(s.runs.c.system == system)  # previous review
                                     .where(s.runs.c.evaluated_on <= tomorrow)
                                     .order_by(s.runs.c.evaluated_on.desc(), s.runs.c.id.desc()).limit(1)
                                     ).mappings().first()
        if row is None:
            return None
        return {**{k: v for k, v in row.items() if k != "evidence_gz"},
                "document": json.loads(zlib.decompress(row["evidence_gz"]))}

    def runs(self, system: str | None = None) -> list[dict[str, Any]]:
        """Recorded reviews, oldest first (without their documents)."""
        from sqlalchemy import select

        columns = [c for c in s.runs.c if c.name != "evidence_gz"]
        query = select(*columns).order_by(s.runs.c.system, s.runs.c.evaluated_on, s.runs.c.id)
        if system is not None:
            query = query.where(s.runs.c.system == system)
        with self._errors(), self.engine.connect() as connection:
            return [dict(r) for r in connection.execute(query).mappings()]

    def document(self, run_id: int) -> dict[str, Any]:
        from sqlalchemy import select

        with self._errors(), self.engine.connect() as connection:
            blob = connection.execute(select(s.runs.c.evidence_gz).where(s.runs.c.id == run_id)).scalar_one()
        return json.loads(zlib.decompress(blob))

    def findings(self, *, system: str | None = None, today: dt.date) -> list[dict[str, Any]]:
        """Every finding with its state on `today`: id, system, key, title, severity, first run, and `state`."""
        from sqlalchemy import select

        query = select(s.findings).order_by(s.findings.c.system, s.findings.c.first_seen, s.findings.c.id)
        if system is not None:
            query = query.where(s.findings.c.system == system)
        with self._errors(), self.engine.connect() as connection:
            rows = connection.execute(query).mappings().all()
            names = dict(connection.execute(select(s.runs.c.id, s.runs.c.run_name)).all())
            history: dict[str, list[Event]] = {}
            for e in connection.execute(select(s.events).order_by(s.events.c.id)).mappings():
                history.setdefault(e["finding_id"], []).append(_event(e, names))
        return [{**dict(r), "state": state(history.get(r["id"], []), today)} for r in rows]

    def finding(self, finding_id: str, *, today: dt.date) -> dict[str, Any]:
        """One finding by id; an unknown id is bad input with the nearest ids."""
        everything = self.findings(today=today)
        for row in everything:
            if row["id"] == finding_id:
                return row
        import difflib

        near = difflib.get_close_matches(finding_id, [r["id"] for r in everything], n=3)
        raise InputError(f"no finding '{finding_id}' in the register", file=self.shown,
                         fix=f"did you mean {', '.join(near)}?" if near else
                             "`auditor findings list` shows the ids")

    # --- writing --------------------------------------------------------------------------------------------------

    def record(self, document: EvidenceDocument | Mapping[str, Any], *, system: str, run_dir: Path,
               evidence_sha256: str, bundle_sha256: str | None, actor: str, verified: str | None = None) -> int:
        """Record one review and what it does to the system's findings, in one transaction. Returns its run id.
        `document` is the run's evidence, typed or as its evidence.json holds it (a rebuild keeps a v1 run's JSON as
        it was written; InputError when it is not an evidence document)."""
        stored = document.to_json() if isinstance(document, EvidenceDocument) else document
        document = as_document(document)
        recorded_at = _now()
        day = document.run["evaluated_on"]
        with self._write() as connection:
            if not self.sqlite:  # one review of a system at a time (SQLite's BEGIN IMMEDIATE does this for all)
                from sqlalchemy import text

                connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:system))"), {"system": system})
            run_id = connection.execute(s.runs.insert().values(fitted(s.runs, dict(
                system=system, model_version=(document.inputs["model"].get("version")),
                title=document.audit["title"], period=document.audit.get("period"), evaluated_on=day,
                started_at=document.run["started_at"], recorded_at=recorded_at, opinion=document.opinion,
                seed=document.seed, spec_sha256=document.spec["sha256"], evidence_sha256=evidence_sha256,
                bundle_sha256=bundle_sha256, run_dir=folder_key(run_dir), run_name=Path(run_dir).name,
                inputs=json.dumps(document.inputs, sort_keys=True),
                evidence_gz=zlib.compress(json.dumps(stored, sort_keys=True).encode(), 6),
                tool_version=document.tool["version"], verified=verified)))).inserted_primary_key[0]
            _results(connection, run_id, document)
            known = self.known(system, connection)
            added = review_events(document, known, run=Path(run_dir).name, day=day, actor=actor,
                                  assignments=document.assignments, waivers=document.waivers)
            self._chain(connection, system, "run", int(run_id))
            for key, (seen, new_events) in added.items():
                finding_id = f"{system}/{key}"
                if key not in known:
                    _insert_finding(connection, self.sqlite, **fitted(s.findings, dict(
                        id=finding_id, system=system, key=key, source=seen.source, title=seen.title,
                        severity=seen.severity, evidence=seen.evidence, first_run=run_id, first_seen=day)))
                for e in new_events:
                    event_id = connection.execute(s.events.insert().values(fitted(s.events, dict(
                        finding_id=finding_id, run_id=run_id if e.run else None, at=recorded_at,
                        **e.columns())))).inserted_primary_key[0]
                    self._chain(connection, system, "event", int(event_id))
        return int(run_id)

    def add_event(self, finding_id: str, event: Event, *, statement: str | None = None,
                  signer: str | None = None) -> None:
        """A response or an acceptance from the command line (`auditor findings respond|accept`), with the signed
        statement of the person who made it."""
        from sqlalchemy import select

        with self._write() as connection:
            system = str(connection.execute(select(s.findings.c.system).where(s.findings.c.id == finding_id))
                         .scalar() or "")
            self._lock(connection, system)
            event_id = connection.execute(s.events.insert().values(fitted(s.events, dict(
                finding_id=finding_id, at=_now(), statement=statement, signer=signer,
                **event.columns())))).inserted_primary_key[0]
            self._chain(connection, system, "event", int(event_id))

    def record_approval(self, *, run_dir: Path, bundle_sha256: str, decision: str, approver: str,
                        reason: str | None, statement_sha256: str, statement: str | None = None) -> None:
        from sqlalchemy import select

        with self._write() as connection:
            run_id = connection.execute(select(s.runs.c.id).where(s.runs.c.run_dir.in_(folder_keys(run_dir)))
                                        ).scalar()
            system = trail.system_of_run(connection, run_id)
            self._lock(connection, system)
            approval_id = connection.execute(s.approvals.insert().values(fitted(s.approvals, dict(
                run_id=run_id, bundle_sha256=bundle_sha256, decision=decision, approver=approver, reason=reason,
                at=_now(), statement_sha256=statement_sha256, statement=statement)))).inserted_primary_key[0]
            self._chain(connection, system, "approval", int(approval_id))

    # --- the trail ------------------------------------------------------------------------------------------------

    def _lock(self, connection: Any, system: str) -> None:
        """One writer of a system's chain at a time (SQLite's BEGIN IMMEDIATE locks the whole file already)."""
        if not self.sqlite:
            from sqlalchemy import text

            connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:system))"), {"system": system})

    def _chain(self, connection: Any, system: str, kind: str, ref: int) -> None:
        """The row just written, as the trail's next entry (its content read back as `check` will read it)."""
        from sqlalchemy import select

        table = {"run": s.runs, "event": s.events, "approval": s.approvals}[kind]
        row = dict(connection.execute(select(table).where(table.c.id == ref)).mappings().one())
        run_id = ref if kind == "run" else row.get("run_id")
        names = {} if run_id is None else dict(connection.execute(select(s.runs.c.id, s.runs.c.run_name)
                                                                  .where(s.runs.c.id == run_id)).all())
        trail.append(connection, system, kind, ref, trail.content(kind, row, names))

    def head(self, system: str) -> tuple[int, str]:
        """(length, hash) of the system's trail now: what a run pins."""
        with self._errors(), self.engine.connect() as connection:
            return trail.head(connection, system)

    def setting(self, key: str) -> str | None:
        from sqlalchemy import select

        with self._errors(), self.engine.connect() as connection:
            value = connection.execute(select(s.meta.c.value).where(s.meta.c.key == key)).scalar()
        return None if value is None else str(value)

    def set_setting(self, key: str, value: str) -> None:
        with self._write() as connection:
            connection.execute(s.meta.delete().where(s.meta.c.key == key))
            connection.execute(s.meta.insert().values(key=key, value=value))

    def check(self, *, system: str | None = None, tsa_roots: list[Any] | None = None,
              folders: bool = True) -> list[trail.SystemCheck]:
        """`auditor register check`: every system's trail against its rows, folders, pins and anchors."""
        with self._errors(), self.engine.connect() as connection:
            return trail.check(connection, system=system, register_id=self.setting("register_id") or "",
                               tsa_roots=tsa_roots, folders=folders)

    def add_anchor(self, system: str, seq: int, head: str, token: bytes) -> None:
        with self._write() as connection:
            connection.execute(s.anchors.insert().values(system=system, seq=seq, head=head, token=token, at=_now()))

    def approvals(self) -> list[dict[str, Any]]:
        from sqlalchemy import select

        with self._errors(), self.engine.connect() as connection:
            return [dict(r) for r in connection.execute(select(s.approvals).order_by(s.approvals.c.id)).mappings()]

    def has_run(self, run_dir: Path) -> bool:
        from sqlalchemy import select

        with self._errors(), self.engine.connect() as connection:
            return connection.execute(select(s.runs.c.id).where(s.runs.c.run_dir.in_(folder_keys(run_dir)))
                                      ).first() is not None

    def statements(self) -> set[str]:
        """Every signed statement the register holds (decisions and approvals), as text: what a rebuild skips."""
        from sqlalchemy import select

        with self._errors(), self.engine.connect() as connection:
            found = {str(v) for v in connection.execute(select(s.events.c.statement)
                                                         .where(s.events.c.statement.is_not(None))).scalars()}
            found |= {str(v) for v in connection.execute(select(s.approvals.c.statement)
                                                          .where(s.approvals.c.statement.is_not(None))).scalars()}
        return found

    @contextmanager
    def _maybe(self, connection: Any | None) -> Iterator[Any]:
        if connection is not None:
            yield connection
        else:
            with self._errors(), self.engine.connect() as conn:
                yield conn

    def close(self) -> None:
        self.engine.dispose()


def _results(connection: Any, run_id: int, document: EvidenceDocument) -> None:
    """Rule verdicts, detections and metrics of one review."""
    rules = [{"run_id": run_id, "pack": f.pack, "rule": f.rule, "title": f.title, "severity": f.severity,
              "status": f.status, "metric": f.metric, "value": _number(f.value),
              "ci_low": _number((f.interval or (None, None))[0]),
              "ci_high": _number((f.interval or (None, None))[1])} for f in document.findings]
    found = [{"run_id": run_id, "finding_key": d.key, "kind": d.kind, "title": d.title, "severity": d.severity,
              "evidence": d.evidence, "value": _number(d.value), "judged": int(bool(d.judged_by_rules))}
             for d in document.detections]
    values = [{"run_id": run_id, "name": name, "value": _number(value)}
              for result in document.evidence.values() for name, value in result.metrics.items()]
    for table, rows in ((s.rule_results, rules), (s.detections, found), (s.metrics, values)):
        if rows:
            connection.execute(table.insert(), [fitted(table, row) for row in rows])


FIELDS = {"runs.system": "the system's name (spec `model.name`)", "runs.model_version": "the model's version",
          "runs.period": "the audit's period (spec `audit.period`)", "runs.run_name": "the run folder's name",
          "runs.title": "the audit's title", "findings.id": "a finding's id (the system's name and a rule id)",
          "rule_results.rule": "a rule's id", "rule_results.pack": "a policy pack's id",
          "detections.kind": "a detection's kind"}


def fitted(table: Any, values: dict[str, Any]) -> dict[str, Any]:
    """`values` for a row of `table`, checked against what every register (SQLite and PostgreSQL) can keep: text
    without NUL characters, within the column's length. A value that does not fit is one line naming it, before
    anything is written (the run folder is written all the same)."""
    for column in table.c:
        value = values.get(column.name)
        if not isinstance(value, str):
            continue
        what = FIELDS.get(f"{table.name}.{column.name}", f"the register's {table.name}.{column.name}")
        if "\x00" in value:
            raise InputError(f"{what} holds a NUL character, which a register cannot keep",
                             fix="remove the NUL character from where it came from (the spec, a pack, the data)")
        limit = getattr(column.type, "length", None)
        if limit is not None and len(value) > limit:
            raise InputError(f"{what} is {len(value):,} characters long; the register keeps at most {limit}",
                             fix="shorten it")
    return values


def folder_key(run_dir: Path) -> str:
    """How the register names a run folder: its absolute path with links and `..` resolved, so one folder spelled
    two ways is one run."""
    return str(Path(run_dir).resolve())


def folder_keys(run_dir: Path) -> list[str]:
    """The names a run folder may be recorded under: resolved, and as registers before this one kept it."""
    return sorted({folder_key(run_dir), str(Path(run_dir).absolute())})


def _insert_finding(connection: Any, sqlite: bool, **values: Any) -> None:
    """Insert a finding unless another audit recording at the same moment already did."""
    statement: sqlite_dialect.Insert | postgresql.Insert
    if sqlite:
        from sqlalchemy.dialects.sqlite import insert as sqlite_insert

        statement = sqlite_insert(s.findings)
    else:
        from sqlalchemy.dialects.postgresql import insert as postgresql_insert

        statement = postgresql_insert(s.findings)
    connection.execute(statement.values(**values).on_conflict_do_nothing(index_elements=["id"]))


def _event(row: Any, run_names: dict[int, str]) -> Event:
    signature = "signed" if row.get("statement") else \
        "unsigned" if row["event"] in ("responded", "accepted") and row["run_id"] is None and \
        not str(row["actor"]).startswith("auditor ") else None
    return Event(event=row["event"], on_day=row["on_day"], actor=row["actor"],
                 run=run_names.get(row["run_id"]) if row["run_id"] is not None else None, owner=row["owner"],
                 due=row["due"], response=row["response"], approver=row["approver"], until=row["until"],
                 reason=row["reason"], signature=signature)


def _number(value: Any) -> float | None:
    try:
        return None if value is None else float(value)
    except (TypeError, ValueError):
        return None


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
