"""Benchmark: read a LETOR/SVMlight file with auditor's reader, side by side with scikit-learn's parser.

Writes synthetic MQ2008-like files (dense features, 6-decimal values, `#docid = GX...` comments, queries of
5-120 documents), then times each reader in a fresh subprocess and reports wall time and peak RSS:

* `auditor`  - `auditor.inputs.data.load_ranking_data(path, format="svmlight")`: the whole product reader
               (parse, doc ids, checks, grouping by query);
* `sklearn`  - `sklearn.datasets.load_svmlight_file(path, query_id=True)` alone: scikit-learn's Cython parser,
               the peer library on the same file (parse only: no doc ids, checks or grouping).

The product requirement checked at the end: a 1M-row LETOR file (46 features, plain text) read in under 30 s.

    .venv/bin/python benchmarks/read_letor.py                 # 100k and 1M rows, 46 features, plus the 1M .gz
    .venv/bin/python benchmarks/read_letor.py --quick         # 100k rows only (smoke run)
    .venv/bin/python benchmarks/read_letor.py --rows 1000000 --features 136 --no-gzip --readers auditor --profile
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import smoke  # noqa: E402

REQUIRED_ROWS = 1_000_000
REQUIRED_SECONDS = 30.0
GENERATOR_VERSION = 2  # bump when the file layout changes, so cached files in --workdir are rewritten
CHUNK_ROWS = 50_000
MIN_DOCS, MAX_DOCS = 5, 120
READERS = ("auditor", "sklearn")


# --- synthetic data ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Layout:
    """Byte template of one fixed-width line and where its variable digits go."""

    template: np.ndarray  # uint8, one line including the newline
    qid_cols: np.ndarray  # byte columns of the query number
    value_blocks: list[tuple[int, int, int, int]]  # (first feature, last feature + 1, start byte, stride)
    docid_cols: np.ndarray  # byte columns of the 12 digits of `GXaaa-bb-ccccccc`


def _layout(n_features: int, qid_width: int) -> Layout:
    """`L qid:Q 1:0.000000 ... n:0.000000 #docid = GX000-00-0000000 inc = 1 prob = 0.1` as a fixed template.

    Features whose index has the same number of digits have equally wide `j:d.dddddd` fields, so each such run
    of features is one strided block (start byte, stride) that a (rows, features, 8) array can be copied into.
    """
    parts: list[bytes] = [b"0 qid:", b"0" * qid_width]
    pos = 6 + qid_width
    qid_cols = np.arange(6, pos)
    blocks = []
    first = 1
    while first <= n_features:
        last = min(10 ** len(str(first)), n_features + 1)  # features first..last-1 have equally long indices
        stride = len(f" {first}:") + 8
        blocks.append((first - 1, last - 1, pos + len(f" {first}:"), stride))
        for j in range(first, last):
            parts.append(f" {j}:0.000000".encode())
        pos += stride * (last - first)
        first = last
    head = b" #docid = GX"
    parts.append(head)
    pos += len(head)
    docid_cols = np.array([*range(pos, pos + 3), *range(pos + 4, pos + 6), *range(pos + 7, pos + 14)])
    parts.append(b"000-00-0000000 inc = 1 prob = 0.1\n")
    template = np.frombuffer(b"".join(parts), dtype=np.uint8)
    return Layout(template, qid_cols, blocks, docid_cols)


def _value_tables() -> tuple[np.ndarray, np.ndarray]:
    """Lookup tables for `d.dddddd` (value v/1e6, v in 0..1_000_000) as 8 bytes packed in a uint64 (little-endian
    byte order assumed, as on x86 and ARM).

    `high[v // 1000] | low[v % 1000]` is the text of v: the tables are small enough to stay in cache, which makes
    the gather several times faster than one 1M-entry table.
    """
    def pack(columns: list[np.ndarray], first_byte: int) -> np.ndarray:
        out = np.zeros(len(columns[0]), dtype=np.uint64)
        for k, column in enumerate(columns):
            out |= column.astype(np.uint64) << np.uint64(8 * (first_byte + k))
        return out

    h = np.arange(1001)
    high = pack([48 + h // 1000, np.full(h.size, ord(".")), 48 + h // 100 % 10, 48 + h // 10 % 10, 48 + h % 10], 0)
    lo = np.arange(1000)
    low = pack([48 + lo // 100, 48 + lo // 10 % 10, 48 + lo % 10], 5)
    return high, low


def _put_digits(buf: np.ndarray, columns: np.ndarray, numbers: np.ndarray) -> None:
    """Write one number per row as a zero-padded decimal into the byte columns `columns` of `buf`."""
    width = len(columns)
    for k in range(width):
        buf[:, columns[k]] = 48 + (numbers // 10 ** (width - 1 - k)) % 10


def _query_ids(rng: np.random.Generator, rows: int) -> np.ndarray:
    """Per-row query number: contiguous queries of MIN_DOCS..MAX_DOCS documents (the last one absorbs the rest)."""
    sizes = rng.integers(MIN_DOCS, MAX_DOCS + 1, size=rows // MIN_DOCS + 1)
    ends = np.cumsum(sizes)
    n = int(np.searchsorted(ends, rows, side="left")) + 1
    sizes = sizes[:n].copy()
    sizes[-1] = rows - int(ends[n - 2]) if n > 1 else rows
    if n > 1 and sizes[-1] < MIN_DOCS:  # too short a tail: fold it into the previous query
        sizes[-2] += sizes[-1]
        sizes = sizes[:-1]
    return np.repeat(np.arange(len(sizes)), sizes)


def write_letor(path: Path, rows: int, n_features: int, seed: int) -> None:
    """Write a deterministic MQ2008-like (46 features) or MSLR-like (136 features) dense LETOR file.

    Values are `d.dddddd` in [0, 1] with many exact 0s and 1s as in the normalised LETOR sets; labels are graded
    0-2 (MQ2008-like) or 0-4 (other shapes). Lines are built as bytes, a chunk of rows at a time.
    """
    rng = np.random.default_rng(seed)
    queries = _query_ids(rng, rows)
    qid_width = len(str(int(queries[-1]))) + 1
    qids = 10 ** (qid_width - 1) + queries  # all the same width
    grade_p = [0.80, 0.13, 0.07] if n_features == 46 else [0.50, 0.30, 0.13, 0.05, 0.02]
    labels = rng.choice(len(grade_p), size=rows, p=grade_p)
    lay = _layout(n_features, qid_width)
    high, low = _value_tables()
    width = lay.template.size
    with path.open("wb") as out:
        for start in range(0, rows, CHUNK_ROWS):
            stop = min(start + CHUNK_ROWS, rows)
            n = stop - start
            values = rng.integers(0, 1_000_000, size=(n, n_features), dtype=np.int32)
            kind = rng.random((n, n_features), dtype=np.float32)
            values[kind < 0.25] = 0
            values[kind > 0.92] = 1_000_000
            thousands, units = np.divmod(values, 1000)
            text = (high[thousands] | low[units]).view(np.uint8).reshape(n, n_features, 8)
            buf = np.empty((n, width), dtype=np.uint8)
            buf[:] = lay.template
            buf[:, 0] = 48 + labels[start:stop]
            _put_digits(buf, lay.qid_cols, qids[start:stop])
            for lo, hi, first_byte, stride in lay.value_blocks:
                block = buf[:, first_byte:first_byte + stride * (hi - lo)].reshape(n, hi - lo, stride)
                block[:, :, :8] = text[:, lo:hi]
            doc_numbers = (np.arange(start, stop, dtype=np.int64) * 7_919_000_003 + 12_345) % 10**12  # unique
            _put_digits(buf, lay.docid_cols, doc_numbers)
            out.write(buf)


def gzip_file(src: Path, dst: Path, level: int = 6) -> None:
    """Compress as `gzip -6` would (the usual level for distributed data)."""
    with src.open("rb") as fin, gzip.open(dst, "wb", compresslevel=level) as fout:
        shutil.copyfileobj(fin, fout, length=4 << 20)


def ensure_file(workdir: Path, rows: int, n_features: int, seed: int, gz: bool) -> tuple[Path, float | None]:
    """The data file for this shape, written unless a matching one is already there. Returns (path, seconds)."""
    plain = workdir / f"letor_{rows}x{n_features}_seed{seed}.txt"
    path = plain.with_name(plain.name + ".gz") if gz else plain
    meta = path.with_name(path.name + ".meta.json")
    want = {"version": GENERATOR_VERSION, "rows": rows, "features": n_features, "seed": seed}
    if path.is_file() and meta.is_file():
        have = json.loads(meta.read_text())
        if have.get("spec") == want and have.get("bytes") == path.stat().st_size:
            return path, None
    if gz:
        plain, _ = ensure_file(workdir, rows, n_features, seed, gz=False)
    start = time.perf_counter()
    if gz:
        gzip_file(plain, path)
    else:
        write_letor(path, rows, n_features, seed)
    seconds = time.perf_counter() - start
    meta.write_text(json.dumps({"spec": want, "bytes": path.stat().st_size}))
    return path, seconds


# --- measuring (child side) -------------------------------------------------------------------------------------

def _status_mb(field: str) -> float:
    """`VmRSS` (now) or `VmHWM` (peak) of this process from /proc, in MB (1e6 bytes).

    Not `ru_maxrss`: Linux carries the parent's high-water mark across fork+exec into it, so a child started by a
    parent that has just written a big file would report the parent's peak.
    """
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024 / 1e6
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6  # no /proc: best effort


def child(reader: str, path: Path, profile: bool) -> None:
    """Run one reader once in this (fresh) process and print one JSON line: seconds, rows, features, RSS."""
    import sklearn.datasets  # both readers use it; imported before the clock starts

    if reader == "auditor":
        from auditor.inputs.data import load_ranking_data

        def run() -> tuple[int, int]:
            data = load_ranking_data(path, format="svmlight")
            return data.n_docs, data.n_features
    else:
        def run() -> tuple[int, int]:
            X, _, _ = sklearn.datasets.load_svmlight_file(str(path), query_id=True)
            return X.shape[0], X.shape[1]

    base = _status_mb("VmRSS")
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    start = time.perf_counter()
    rows, features = run()
    seconds = time.perf_counter() - start
    if profiler is not None:
        import pstats

        profiler.disable()
        stats = pstats.Stats(profiler, stream=sys.stderr).strip_dirs()
        stats.sort_stats("tottime").print_stats(12)
        stats.sort_stats("cumulative").print_stats(20)
    print(json.dumps({"seconds": seconds, "rows": rows, "features": features, "base_rss_mb": base,
                      "peak_rss_mb": _status_mb("VmHWM")}))


# --- measuring (parent side) ------------------------------------------------------------------------------------

@dataclass
class Result:
    """One reader on one file: median seconds (None when stopped at the timeout) and largest peak RSS."""

    rows: int
    features: int
    file_mb: float
    file_name: str
    reader: str
    seconds: float | None
    peak_rss_mb: float | None
    base_rss_mb: float | None
    runs: int
    timeout: float


def measure(reader: str, path: Path, rows: int, features: int, repeat: int, timeout: float) -> Result:
    """Median wall time and largest peak RSS over up to `repeat` fresh subprocesses; checks the shape read back.

    A run that takes more than a minute is not repeated (one such run is already a stable figure), and one that
    exceeds `timeout` is stopped and recorded as such.
    """
    times, peaks, bases = [], [], []
    for _ in range(repeat):
        out = _run_child(reader, path, profile=False, timeout=timeout)
        if out is None:
            break
        if (out["rows"], out["features"]) != (rows, features):
            raise SystemExit(f"{reader} read {out['rows']}x{out['features']} from {path.name}, "
                             f"expected {rows}x{features}")
        times.append(out["seconds"])
        peaks.append(out["peak_rss_mb"])
        bases.append(out["base_rss_mb"])
        if out["seconds"] > 60:
            break
    return Result(rows, features, path.stat().st_size / 1e6, path.name, reader,
                  statistics.median(times) if times else None, max(peaks) if peaks else None,
                  max(bases) if bases else None, len(times), timeout)


def _run_child(reader: str, path: Path, *, profile: bool, timeout: float) -> dict[str, float] | None:
    """One fresh `--child` process; its JSON line, or None when it was stopped at `timeout` seconds."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", reader, str(path)]
    if profile:
        cmd.append("--profile")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        return None
    if proc.returncode != 0:
        raise SystemExit(f"{reader} on {path.name} failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
    if profile:
        print(proc.stderr, file=sys.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def table(results: list[Result]) -> str:
    """Markdown table of the measurements."""
    lines = ["| rows | features | file | file MB | reader | seconds | rows/s | peak RSS MB | RSS before call MB |",
             "|---:|---:|---|---:|---|---:|---:|---:|---:|"]
    for r in results:
        kind = ".txt.gz" if r.file_name.endswith(".gz") else ".txt"
        if r.seconds is None:
            figures = f"> {r.timeout:,.0f} (stopped) | < {r.rows / r.timeout:,.0f} | ? | ?"
        else:
            figures = f"{r.seconds:.2f} | {r.rows / r.seconds:,.0f} | {r.peak_rss_mb:,.0f} | {r.base_rss_mb:,.0f}"
        lines.append(f"| {r.rows:,} | {r.features} | {kind} | {r.file_mb:,.0f} | {r.reader} | {figures} |")
    return "\n".join(lines)


def verdict(results: list[Result]) -> str:
    """PASS/FAIL line for the product requirement (1M rows, 46 features, plain file, auditor's reader)."""
    hits = [r for r in results if r.reader == "auditor" and r.rows == REQUIRED_ROWS and r.features == 46
            and not r.file_name.endswith(".gz")]
    if not hits:
        return f"requirement (1M rows under {REQUIRED_SECONDS:.0f} s): not measured in this run (use the default sizes)"
    r = hits[0]
    if r.seconds is None:
        return (f"FAIL: auditor did not finish {r.rows:,} rows x {r.features} features within {r.timeout:,.0f} s "
                f"(limit {REQUIRED_SECONDS:.0f} s)")
    ok = r.seconds < REQUIRED_SECONDS
    return (f"{'PASS' if ok else 'FAIL'}: auditor reads {r.rows:,} rows x {r.features} features in {r.seconds:.1f} s "
            f"({'under' if ok else 'over'} the {REQUIRED_SECONDS:.0f} s limit)")


def machine() -> str:
    """One line describing the machine the numbers come from."""
    model = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = f"{model} / {line.split(':', 1)[1].strip()}"
                break
    except OSError:
        pass
    return (f"{os.cpu_count()} CPUs, processor: {model}, Python {platform.python_version()}, "
            f"numpy {np.__version__}, scikit-learn {_version('sklearn')}")


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except ImportError:
        return "absent"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, nargs="+", default=[100_000, 1_000_000], help="file sizes in rows")
    parser.add_argument("--features", type=int, nargs="+", default=[46], help="46 (MQ2008-like), 136 (MSLR-like)")
    parser.add_argument("--gzip", action=argparse.BooleanOptionalAction, default=True,
                        help="also measure a .gz copy of the largest 46-feature file (default: on)")
    parser.add_argument("--quick", action="store_true", help="100k rows only, no .gz: a smoke run")
    parser.add_argument("--readers", nargs="+", choices=READERS, default=list(READERS), help="readers on plain files")
    parser.add_argument("--gzip-readers", nargs="+", choices=READERS, default=["auditor"],
                        help="readers on the .gz file (default: auditor only)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="fresh processes per reader and file, median time shown; runs over 60 s are not repeated")
    parser.add_argument("--workdir", type=Path, help="keep (and reuse) the generated files here")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds allowed per reader run; a run stopped there is shown as '> timeout'")
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file (after each reader run)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the results already in --json and measure only the (file, reader) pairs missing")
    parser.add_argument("--profile", action="store_true",
                        help="also run auditor's reader once under cProfile on the largest plain file")
    parser.add_argument("--child", nargs=2, metavar=("READER", "PATH"), help=argparse.SUPPRESS)
    smoke.add_flag(parser)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], Path(args.child[1]), args.profile)
        return 0
    if args.quick:
        args.rows, args.gzip = [100_000], False
    if args.smoke:  # a 1,000-row file, read once by each reader in its own process
        args.rows, args.features, args.gzip, args.repeat, args.workdir = [1_000], [46], False, 1, None

    tmp = None if args.workdir else tempfile.TemporaryDirectory(prefix="read_letor_")
    workdir = args.workdir or Path(tmp.name)
    workdir.mkdir(parents=True, exist_ok=True)
    print(f"machine: {machine()}")
    print(f"files in {workdir}")
    jobs: list[tuple[int, int, Path, list[str]]] = []
    for features in args.features:
        for rows in sorted(args.rows):
            path, seconds = ensure_file(workdir, rows, features, args.seed, gz=False)
            jobs.append((rows, features, path, args.readers))
            _report_generation(path, seconds)
    if args.gzip and 46 in args.features:
        rows = max(args.rows)
        path, seconds = ensure_file(workdir, rows, 46, args.seed, gz=True)
        jobs.append((rows, 46, path, args.gzip_readers))
        _report_generation(path, seconds)

    if "auditor" in args.readers + (args.gzip_readers if args.gzip else []) and not args.smoke:
        warm_up(workdir, args.seed, args.timeout)  # (smoke mode: one process fewer; the run itself is the same)
    results: list[Result] = []
    done: dict[tuple[str, str], Result] = {}
    if args.resume and args.json and args.json.is_file():
        done = {(r.file_name, r.reader): r for r in (Result(**d) for d in json.loads(args.json.read_text()))}
    for rows, features, path, readers in jobs:
        for reader in readers:
            if (path.name, reader) in done:
                results.append(done[(path.name, reader)])
                print(f"  {reader:8s} {path.name}: kept from {args.json}", flush=True)
                continue
            result = measure(reader, path, rows, features, args.repeat, args.timeout)
            took = "stopped at the timeout" if result.seconds is None else (
                f"{result.seconds:.2f} s (median of {result.runs}), peak RSS {result.peak_rss_mb:,.0f} MB")
            print(f"  {reader:8s} {path.name}: {took}", flush=True)
            results.append(result)
            if args.json:  # after every run, with any earlier results this run did not redo
                keep = [r for key, r in done.items() if key not in {(x.file_name, x.reader) for x in results}]
                args.json.write_text(json.dumps([vars(r) for r in results + keep], indent=1))
    if args.profile and "auditor" in args.readers:
        rows, features, path, _ = max((j for j in jobs if not j[2].name.endswith(".gz")), key=lambda j: j[0])
        print(f"\ncProfile of auditor on {path.name} (profiled time is inflated; see the table for real time):",
              file=sys.stderr)
        _run_child("auditor", path, profile=True, timeout=args.timeout)

    print()
    print(table(results))
    print()
    print(verdict(results))
    if tmp is not None:
        tmp.cleanup()
    return 0


def warm_up(workdir: Path, seed: int, timeout: float) -> None:
    """One untimed auditor run on a 1,000-row file, so that a JIT cache (numba `cache=True`) is filled first.

    The measured runs are then the steady state a user sees from the second run on; this first run's time, which
    includes any compiling, is printed for the record.
    """
    path, _ = ensure_file(workdir, 1_000, 46, seed, gz=False)
    out = _run_child("auditor", path, profile=False, timeout=timeout)
    took = "stopped at the timeout" if out is None else f"{out['seconds']:.2f} s for the call"
    print(f"  warm-up: auditor on {path.name}: {took} (first run in this tree; compiles if no JIT cache)", flush=True)


def _report_generation(path: Path, seconds: float | None) -> None:
    size = path.stat().st_size / 1e6
    how = "reused" if seconds is None else f"written in {seconds:.1f} s (not part of the measurements)"
    print(f"  {path.name}: {size:,.0f} MB, {how}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
