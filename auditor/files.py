"""Reading files we were handed: regular files only, with a size cap where the content is parsed whole (and writing
new files, never over an existing one).

A FIFO, a device (`/dev/urandom`) or a socket named as an input would block or read without end; a 20 GB "spec"
would exhaust memory before the parser could object. Every reader of a user-named file goes through here.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from auditor.errors import InputError

MiB = 1 << 20
MAX_YAML_BYTES = 1 * MiB  # specs and policy packs: a real one is a few KB
MAX_JSON_BYTES = 256 * MiB  # evidence.json of a run (baseline, diff)
MAX_SMALL_BYTES = 16 * MiB  # feature-name lists, query files, keys, certificates
MAX_MODEL_BYTES = 1024 * MiB  # a model file, read whole (5,000 trees of 511 leaves are ~400 MB of text)


def write_new(path: Path, text: str) -> None:
    """Write a file that must not exist yet (never overwrite a user's file): an existing path or an OS error is
    one InputError naming the file and the fix."""
    if path.exists():
        raise InputError("the file exists already", file=path, fix="choose another --out or move the file away")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as handle:
            handle.write(text)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror})", file=path, fix="choose another --out") from None


def kind_of(mode: int) -> str:
    """A file type in words, for the error message."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def check_regular(path: Path, *, what: str = "file", fix: str | None = None) -> int:
    """Raise unless `path` is a regular file (symbolic links are followed); return its size in bytes."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"no such {what}", file=path, fix=fix or "check the path") from None
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror})", file=path, fix=fix or "check the path and "
                         "its permissions") from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(f"this is {kind_of(info.st_mode)}, not a regular {what}", file=path,
                         fix=fix or f"give the path of a regular {what}")
    return int(info.st_size)


def read_bytes(path: Path, *, limit: int | None = None, what: str = "file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes. The type is checked on the opened descriptor, so a
    FIFO swapped in after a check still cannot block the read (it is opened non-blocking)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InputError(f"no such {what}", file=path, fix="check the path") from None
    except OSError as exc:
        raise InputError(f"cannot read the {what} ({exc.strerror})", file=path,
                         fix="check the path and its permissions") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"this is {kind_of(info.st_mode)}, not a regular {what}", file=path,
                             fix=f"give the path of a regular {what}")
        if limit is not None and info.st_size > limit:
            raise InputError(f"the {what} is {info.st_size / MiB:.1f} MiB, more than the {limit / MiB:g} MiB "
                             f"allowed", file=path, fix=f"give the right file (a {what} is never this large)")
        data = handle.read(limit + 1 if limit is not None else -1)
    if limit is not None and len(data) > limit:  # grew while we read it
        raise InputError(f"the {what} is larger than the {limit / MiB:g} MiB allowed", file=path,
                         fix=f"give the right file (a {what} is never this large)")
    return data
