"""A throw-away PostgreSQL server for the test session: initdb into a temporary folder, pg_ctl on 127.0.0.1 at a free
port, trust authentication for one role, stopped at the end. Real server, real driver (psycopg): the register's
tests run on it as on SQLite. Without PostgreSQL's binaries the tests that need it skip with the reason (.ci/run
installs Debian's `postgresql`)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def binaries() -> Path | None:
    """The folder of initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(folder, "initdb").exists() and Path(folder, "pg_ctl").exists():
            return Path(folder)
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def server(folder: Path) -> Iterator[str]:
    """A running server; yields the URL of its `postgres` database (role `auditor`, no password)."""
    bin_dir = binaries()
    if bin_dir is None:
        raise RuntimeError("PostgreSQL is not installed (Debian package `postgresql`; .ci/run installs it)")
    data = folder / "data"
    data.mkdir(parents=True)
    run_as: list[str] = []
    if os.geteuid() == 0:  # initdb refuses root: run the server as the `postgres` user Debian's package made
        try:
            user = pwd.getpwnam("postgres")
        except KeyError:
            raise RuntimeError("running as root and there is no `postgres` user to run the server as") from None
        for path in (folder, data):
            os.chown(path, user.pw_uid, user.pw_gid)
        run_as = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True, "timeout": 120}
    subprocess.run([*run_as, str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "auditor",
                    "--no-sync", "-E", "UTF8"], **quiet)
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {folder} -c fsync=off"
    subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(folder / "log"),
                    "-w", "start"], **quiet)
    try:
        yield f"postgresql://auditor@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*run_as, str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)


def fresh_database(url: str, name: str) -> str:
    """A new empty database on the server of `url`; its URL."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')
    return url.rsplit("/", 1)[0] + f"/{name}"
