"""Reading files we were handed: regular files only, with a size cap where the content is parsed whole (and writing
new files, never over an existing one; or replacing one whole, `replace_file`).

A FIFO, a device (`/dev/urandom`) or a socket named as an input would block or read without end; a 20 GB "spec"
would exhaust memory before the parser could object. Every reader of a user-named file goes through here.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.core.errors import InputError

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

MiB = 1 << 20
MAX_YAML_BYTES = 1 * MiB  # specs and policy packs: a real one is a few KB
MAX_JSON_BYTES = 256 * MiB  # evidence.json of a run (baseline, diff)
MAX_SMALL_BYTES = 16 * MiB  # feature-name lists, query files, keys, certificates
MAX_MODEL_BYTES = 1024 * MiB  # a model file, read whole (5,000 trees of 511 leaves are ~400 MB of text)
MAX_INFLATE_RATIO = 100  # a gzip file may inflate to this many times its size (real LETOR: 5x, MQ2008 and
INFLATE_FLOOR = 64 * MiB  # LightGBM's example) once past this many bytes; a decompression bomb: 200-1000x
_CHUNK = 4 * MiB
# Bounds on what a data file may make the audit build (docs/security.md, "Data files"); both are spec keys
# (here, not in auditor.inputs.data, so the spec imports no pandas).
MAX_DATA_BYTES = 4096 * MiB  # `dataset.max_bytes`: the file's text + parsed arrays + the dense matrix, estimated
MAX_DOCS_PER_QUERY = 2_000  # `dataset.max_docs_per_query`: evidence builds documents² arrays per query (MQ2008
# has at most 121 documents a query, MSLR-WEB30K 1,251, LightGBM's lambdarank example 27)


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


def replace_file(path: Path, data: bytes, *, fix: str) -> None:
    """Write `data` as `path`, complete or absent: into a temporary file beside it, then renamed over it, so a file
    there is replaced in one step and no reader sees half of one. An OS error is one InputError naming the file
    (`fix`: what to do), and no temporary file is left behind."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror or type(exc).__name__})", file=path, fix=fix) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it private (0600); the file is for its readers (CI, a site)
        os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write ({exc.strerror or type(exc).__name__})", file=path, fix=fix) from None
    finally:
        with contextlib.suppress(OSError):  # gone once renamed
            os.unlink(tmp)


def check_new_file(path: Path, *, option: str) -> None:
    """Refuse, before any work, a path a command would write a file to (replacing one there) when it cannot: a
    folder or another non-regular file at the path, a folder that does not exist or is not a folder, or one this
    user may not write to. `option` names the command-line option in the fix."""
    fix = f"give {option} a file path in an existing folder you may write to"
    try:
        _check_new_file(path, option, fix)
    except OSError as exc:  # a name too long, a loop of links
        raise InputError(f"cannot use this path ({exc.strerror or type(exc).__name__})", file=path, fix=fix) from None


def _check_new_file(path: Path, option: str, fix: str) -> None:
    if os.path.isdir(path):
        raise InputError("this is a folder, not a file", file=path, fix=f"give {option} a file path inside it")
    if os.path.lexists(path) and not path.is_symlink():
        mode = os.lstat(path).st_mode
        if not stat.S_ISREG(mode):
            raise InputError(f"this is {kind_of(mode)}, not a regular file", file=path, fix=fix)
    folder = path.parent
    if not folder.exists():
        raise InputError(f"the folder {folder} does not exist", file=path, fix=f"make it first, or {fix}")
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder", file=path, fix=fix)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"the folder {folder} is not writable", file=path, fix=fix)


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
    """The bytes of a regular file of at most `limit` bytes (symbolic links followed), or one InputError naming it.
    The type is checked on the opened descriptor, so a FIFO swapped in after a check still cannot block the read
    (it is opened non-blocking)."""
    try:
        return read_regular(path, limit=limit)
    except Unreadable as exc:
        raise exc.input_error(path, what) from None


class Unreadable(Exception):
    """A path that is not read: missing, not a regular file (a FIFO, device, socket, folder, or a symbolic link where
    links are not followed), larger than allowed, or an OS error. The message is what it is ("missing", "a FIFO
    (named pipe), not a regular file"...); `input_error` says it as bad input."""

    def __init__(self, message: str, *, missing: bool = False, kind: str | None = None,
                 limit: int | None = None) -> None:
        super().__init__(message)
        self.missing, self.kind, self.limit = missing, kind, limit

    def input_error(self, path: Path, what: str) -> InputError:
        if self.missing:
            return InputError(f"no such {what}", file=path, fix="check the path")
        if self.kind is not None:
            return InputError(f"this is {self.kind}, not a regular {what}", file=path,
                              fix=f"give the path of a regular {what}")
        if self.limit is not None:
            return InputError(f"the {what} is {self}", file=path,
                              fix=f"give the right file (a {what} is never this large)")
        return InputError(f"cannot read the {what} ({self})", file=path, fix="check the path and its permissions")


def _kind(mode: int) -> str:
    return "a symbolic link" if stat.S_ISLNK(mode) else kind_of(mode)


def open_regular(path: Path, *, follow: bool = True) -> io.BufferedReader:
    """`path` opened for reading only if it is a regular file, or Unreadable: the type is checked before opening
    (opening a FIFO blocks, a device may act) and again on the descriptor, opened non-blocking (something swapped in
    between). `follow=False` refuses a symbolic link (`O_NOFOLLOW`): a run folder's files, which an adversary may
    have replaced by links."""
    try:
        mode = os.stat(path, follow_symlinks=follow).st_mode
        if not stat.S_ISREG(mode):
            raise Unreadable(f"{_kind(mode)}, not a regular file", kind=_kind(mode))
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else os.O_NOFOLLOW))
    except (FileNotFoundError, NotADirectoryError):
        raise Unreadable("missing", missing=True) from None
    except OSError as exc:
        raise Unreadable(f"unreadable ({exc.strerror or type(exc).__name__})") from None
    except ValueError:  # a NUL, or a lone surrogate from JSON: no file can have this name
        raise Unreadable("missing (a name no file can have)", missing=True) from None
    handle = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        handle.close()
        raise Unreadable("replaced while being read: not a regular file", kind=_kind(mode))
    return handle


def read_regular(path: Path, *, limit: int | None = None, follow: bool = True) -> bytes:
    """The bytes of a regular file (`open_regular`), at most `limit` of them; Unreadable otherwise."""
    with open_regular(path, follow=follow) as handle:
        size = os.fstat(handle.fileno()).st_size
        if limit is not None and size > limit:
            raise Unreadable(f"{size / MiB:.1f} MiB, more than the {limit / MiB:g} MiB allowed", limit=limit)
        data = handle.read(limit + 1 if limit is not None else -1)  # + 1: the file may grow while it is read
    if limit is not None and len(data) > limit:
        raise Unreadable(f"larger than the {limit / MiB:g} MiB allowed", limit=limit)
    return data


def sha256_file(path: Path, *, what: str = "file") -> str:
    """sha256 (hex) of a regular file: the identity of every input and artifact in evidence.json and the bundle; one
    InputError naming it when it is not a readable regular file."""
    try:
        return sha256_regular(path)
    except Unreadable as exc:
        raise exc.input_error(path, what) from None


def sha256_regular(path: Path, *, follow: bool = True, prefix: int | None = None) -> str:
    """sha256 (hex) of a regular file, read in blocks (`open_regular`), or of its first `prefix` bytes (fewer when
    the file is shorter); Unreadable otherwise."""
    digest = hashlib.sha256()
    left = prefix if prefix is not None else -1
    with open_regular(path, follow=follow) as handle:
        while left != 0:
            block = handle.read(1 << 20 if left < 0 else min(left, 1 << 20))
            if not block:
                break
            digest.update(block)
            left = left - len(block) if left > 0 else left
    return digest.hexdigest()


def read_inflated(path: Path, *, limit: int, what: str = "file", cost: Callable[[bytes], int] | None = None,
                  fix: str | None = None) -> bytes:
    """The bytes of a regular file, inflated when it is gzip, under the caps of `open_inflated`."""
    out = io.BytesIO()
    with open_inflated(path, limit=limit, what=what, cost=cost, fix=fix) as stream:
        try:
            while chunk := stream.read(_CHUNK):
                out.write(chunk)
        except (OSError, EOFError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise InputError(f"cannot read the {what} ({exc.__class__.__name__}: {exc})", file=path,
                             fix="check that the file is complete (a cut or damaged .gz cannot be inflated)") from None
    return out.getvalue()


@contextlib.contextmanager
def open_inflated(path: Path, *, limit: int, what: str = "file", cost: Callable[[bytes], int] | None = None,
                  fix: str | None = None) -> Iterator[io.BufferedReader]:
    """A regular file as a binary stream, inflated when it is gzip, that raises InputError as soon as a cap is
    passed, before memory is spent: the bytes plus `cost(chunk)` (what parsing them will build, estimated by the
    caller) within `limit`, and a gzip file inflating at most MAX_INFLATE_RATIO times its size (past
    INFLATE_FLOOR)."""
    fix = fix or f"give the right file (a {what} is never this large)"
    with _open_regular(path, what) as raw:
        size = os.fstat(raw.fileno()).st_size
        compressed = raw.read(2) == b"\x1f\x8b"
        raw.seek(0)
        if not compressed and size > limit:
            raise InputError(_over(what, limit, size, estimate=False, inflated=False), file=path, fix=fix)
        source = gzip.GzipFile(fileobj=raw, mode="rb") if compressed else raw
        meter = _Meter(raw, path, compressed, limit=limit, what=what, cost=cost, fix=fix)
        yield io.BufferedReader(_Capped(source, meter), buffer_size=_CHUNK)


def _open_regular(path: Path, what: str) -> io.BufferedReader:
    try:
        return open_regular(path)
    except Unreadable as exc:
        raise exc.input_error(path, what) from None


class _Meter:
    """Stream and count: the cap and the inflation ratio, checked on every chunk as it arrives."""

    def __init__(self, raw: io.BufferedReader, path: Path, compressed: bool, *, limit: int, what: str,
                 cost: Callable[[bytes], int] | None, fix: str) -> None:
        self.raw, self.path, self.compressed, self.limit = raw, path, compressed, limit
        self.what, self.cost, self.fix = what, cost, fix
        self.seen = self.spent = 0

    def add(self, chunk: bytes) -> None:
        self.seen += len(chunk)
        self.spent += len(chunk) + (self.cost(chunk) if self.cost is not None else 0)
        if self.spent > self.limit:
            raise InputError(_over(self.what, self.limit, self.seen, estimate=self.cost is not None,
                                   inflated=self.compressed), file=self.path, fix=self.fix)
        read = max(self.raw.tell(), 1)
        if self.compressed and self.seen > max(INFLATE_FLOOR, MAX_INFLATE_RATIO * read):
            raise InputError(f"this gzip file inflates more than {MAX_INFLATE_RATIO} times its size ("
                             f"{_size(read)} read gave {_size(self.seen)}): a decompression bomb, or data too "
                             "repetitive to read compressed", file=self.path,
                             fix="if the file is genuine, decompress it (`gunzip -k`) and name the plain file")


class _Capped(io.RawIOBase):
    """A raw stream over `source` whose every chunk goes through the meter; fills the caller's buffer (a gzip
    stream returns short reads), so a peek at the start sees a whole first chunk."""

    def __init__(self, source: io.BufferedIOBase, meter: _Meter) -> None:
        self.source, self.meter = source, meter

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        filled = 0
        while filled < len(view):
            chunk = self.source.read(len(view) - filled)
            if not chunk:
                break
            self.meter.add(chunk)
            view[filled:filled + len(chunk)] = chunk
            filled += len(chunk)
        return filled


def _over(what: str, limit: int, seen: int, *, estimate: bool, inflated: bool) -> str:
    """The message of a cap: the file's size, or the memory reading it would take (text and parsed arrays)."""
    size = f"{_size(seen)}{' inflated' if inflated else ''}"
    if not estimate:
        return f"the {what} is larger than the {_size(limit)} allowed ({size})"
    return (f"reading the {what} would take more than the {_size(limit)} allowed (its text and the arrays parsed "
            f"from it, estimated after {size})")


def _size(count: int) -> str:
    """Bytes in the unit a reader takes in at a glance: 64 bytes, 16 MiB, 4 GiB."""
    for unit, name in ((1 << 30, "GiB"), (MiB, "MiB"), (1 << 10, "KiB")):
        if count >= unit:
            return f"{count / unit:,.1f}".removesuffix(".0") + f" {name}"
    return f"{count} bytes"
