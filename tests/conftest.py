"""Shared fixtures and helpers: small real LightGBM models on data the tests make themselves, copies of the bookstore
example (files, spec writing, an AuditContext on it, a signed run and its checks), the bad-input baseline folder.

No test module imports another (tests/test_layers.py checks): what several share lives here, in tests/inputs.py (the
bad-input baseline, the example rankers' files) or in tests/helpers.py (other small helpers)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np
import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.core.threads import THREADS_ENV, cpu_count

# When pytest-xdist's workers already fill the cores, each audit's LightGBM calls, numba kernels and thread pools run
# on one thread, as in an executor's worker: two workers of two threads each on two cores wasted 8% of the suite's
# CPU time contending. For the same reason an audit that does not ask for `jobs` starts no worker processes
# (`executor.usable_jobs`): a pool's start cost the bookstore's audit 4 CPU seconds. Evidence does not depend on
# either (tests/test_executor.py, which asks for its workers, and test_surrogate.py); the tests of the thread budget
# itself unset it. Subprocesses the tests start inherit it.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) >= cpu_count():
    os.environ.setdefault(THREADS_ENV, "1")

pytest.register_assert_rewrite("tests.helpers", "tests.inputs")  # their asserts explain failures as a test's do
pytest_plugins = ["tests.trust_fixtures"]  # trust_services (TSA, OCSP, CRL on 127.0.0.1), softhsm_token
ROOT = Path(__file__).resolve().parents[1]
BOOKSTORE = ROOT / "examples" / "bookstore"


def shared_data_dir() -> Path:
    """`$AUDITOR_DATA`, else `../shared/data` beside the repository."""
    env = os.environ.get("AUDITOR_DATA")
    return Path(env) if env else ROOT.parent / "shared" / "data"


def make_queries(rng: np.random.Generator, n_queries: int, n_features: int, *, min_docs: int = 3,
                 max_docs: int = 25) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Random ranking data whose labels depend on the first features (so a model learns something)."""
    sizes = rng.integers(min_docs, max_docs + 1, size=n_queries)
    X = rng.random((int(sizes.sum()), n_features))
    signal = 2.0 * X[:, 0] + X[:, 1] - 0.5 * X[:, 2] + 0.3 * rng.standard_normal(len(X))
    y = np.clip(np.floor((signal - signal.min()) / (np.ptp(signal) / 4.999)), 0, 4)
    return X, y, sizes


@pytest.fixture(scope="session")
def lambdamart() -> tuple[lgb.Booster, np.ndarray, np.ndarray, np.ndarray]:
    """A small real LambdaMART and the data it was trained on."""
    rng = np.random.default_rng(11)
    X, y, sizes = make_queries(rng, 60, 6)
    params = {"objective": "lambdarank", "num_leaves": 7, "min_data_in_leaf": 10, "learning_rate": 0.2,
              "verbosity": -1, "seed": 1, "deterministic": True, "force_row_wise": True, "num_threads": 1}
    booster = lgb.train(params, lgb.Dataset(X, y, group=sizes), num_boost_round=20)
    return booster, X, y, sizes


# The example's evidence, made cheap enough to run many times in the test suite.
LIGHT_LOCAL = {"local_explanations": {"methods": ["random", "treeshap1", "greedy_cover_eps", "validity_search"],
                                      "k": 3, "k_curve": [], "queries": 8}}


LIGHT_PATHS = {"decision_path_accuracy": {"explainers": ["treeshap", "lirme"], "top_k": 3, "docs_per_query": 2,
                                          "queries": 6}}


LIGHT_PAIRWISE = {"pairwise": {"queries": 4, "background_size": 200}}


LIGHT_CONFIDENCE = {"confidence": {"methods": ["treeshap1", "greedy_cover_eps", "validity_search"], "k": 3,
                                   "queries": 5}}
LIGHT_SURROGATE = {"surrogate": {"interactions": 2, "num_leaves": 7, "max_rounds": 80, "top_effects": 3,
                                 "top_pairs": 1}}
# Where a test checks a run's signatures, files or verification, not what its evidence says (trusted time, PKCS#11):
# four quick kinds make a 14-page PDF in two thirds of the light spec's time (24 pages). The session's `signed` run
# keeps the light spec: the statement drafted from it needs the surrogate.
SIGNATURE_EVIDENCE = ("exposure", "ranking_quality", "global_importance", "parameter_influence")


def signature_evidence(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The bookstore's evidence list cut to `SIGNATURE_EVIDENCE`."""
    return [item for item in evidence if next(iter(item)) in SIGNATURE_EVIDENCE]


LIGHT = {"local_explanations": LIGHT_LOCAL, "decision_path_accuracy": LIGHT_PATHS, "pairwise": LIGHT_PAIRWISE,
         "confidence": LIGHT_CONFIDENCE, "surrogate": LIGHT_SURROGATE}


def copy_bookstore(folder: Path, source: Path = BOOKSTORE) -> Path:
    """The bookstore's model and data (not its spec) copied from `source` into `folder`, made if absent."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("model.txt", "test.csv", "train.csv"):
        shutil.copy(source / name, folder / name)
    return folder


@pytest.fixture
def bookstore(tmp_path: Path) -> Path:
    """A copy of the bundled example in a temporary folder (tests may edit it), with lighter local explanations."""
    folder = tmp_path / "bookstore"
    folder.mkdir()
    copy_bookstore(folder)
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec["evidence"] = [next((LIGHT[name] for name in item if name in LIGHT), item) for item in spec["evidence"]]
    spec.pop("signing", None)  # the example signs with keys made by `make demo`; tests that sign make their own
    spec.pop("findings", None)  # owners of P2B rules: tests that change the packs would have to drop them
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    return folder


@pytest.fixture(scope="session")
def frame() -> Any:
    """The bookstore's test data as a DataFrame (the Python API's tests)."""
    import pandas as pd

    return pd.read_csv(BOOKSTORE / "test.csv")


@pytest.fixture(scope="session")
def booster() -> lgb.Booster:
    """The bookstore's model as a LightGBM Booster (the Python API's tests)."""
    return lgb.Booster(model_file=str(BOOKSTORE / "model.txt"))


def settled(spec: dict[str, Any]) -> dict[str, Any]:
    """The bookstore spec reviewing a period that has ended (2025-Q4, its data too): the engagement's dates then
    decide no finding, whatever day the suite runs (the demo's own 2026-Q4 is open until the year ends)."""
    spec["audit"]["period"] = "2025-Q4"
    if spec.get("dataset", {}).get("description"):
        spec["dataset"]["description"]["window"] = "2025-Q4"
    return spec


def write_spec(folder: Path, **overrides: Any) -> Path:
    """Write the bookstore spec with top-level keys replaced (None deletes a key). (tests/inputs.py's
    `write_base_spec` writes the small bad-input baseline spec instead.)"""
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec["output"] = {"dir": "reports"}
    for key, value in overrides.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def bookstore_inputs() -> tuple[Any, Any, Any]:
    """The bundled example's model, test data and background (train.csv), loaded as its spec says."""
    from auditor.inputs.data import load_ranking_data
    from auditor.models.lightgbm import load_lightgbm

    model = load_lightgbm(BOOKSTORE / "model.txt")
    kwargs = {"format": "csv", "n_features": model.n_features, "model_feature_names": model.feature_names,
              "query_column": "qid", "label_column": "label", "doc_id_column": "doc_id"}
    data = load_ranking_data(BOOKSTORE / "test.csv", **kwargs)
    background = load_ranking_data(BOOKSTORE / "train.csv", **kwargs)
    return model, data, background


def make_bookstore_context(n_queries: int | None = None, **options: Any) -> Any:
    """A fresh AuditContext on the bundled example (seed 3, train.csv as background): every query, or `n_queries`
    sampled with seed 0; `options` (feature_units...) go to AuditContext."""
    from auditor.evidence.base import AuditContext
    from auditor.inputs.data import sample_data
    from auditor.models.base import CountingRanker

    model, data, background = bookstore_inputs()
    if n_queries is not None:
        data = sample_data(data, n_queries, np.random.default_rng(0))
    return AuditContext(data=data, model=CountingRanker(model), seed=3, background=background, **options)


@pytest.fixture
def base(tmp_path: Path) -> Path:
    """tmp_path holding the bad-input baseline (tests/inputs.py): model.txt, test.csv and an empty output folder
    `out`."""
    tmp = tmp_path.resolve()
    for name in ("model.txt", "test.csv"):
        shutil.copy(BOOKSTORE / name, tmp / name)
    (tmp / "out").mkdir()
    return tmp


@pytest.fixture(scope="session")
def mq2008_trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The MQ2008 example trained by its own script into a temporary folder, with its spec pointing at the data:
    trained once a session, by the first worker that needs it (tests read it; test_mq2008 writes its run into
    `out/` of it).

    Skips with the reason when the shared data is absent; CI never relies on a model left in examples/.
    """
    fold1 = shared_data_dir() / "MQ2008" / "Fold1"
    if not (fold1 / "test.txt").is_file():
        pytest.skip(f"MQ2008 Fold1 not found in {fold1} (set AUDITOR_DATA to the shared data folder)")
    with shared_by_workers(tmp_path_factory, "mq2008") as (folder, made):
        if made:
            return folder
        spec = importlib.util.spec_from_file_location("mq2008_train", ROOT / "examples" / "mq2008" / "train.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.train(fold1, folder)
        shutil.copy(ROOT / "examples" / "mq2008" / "features.txt", folder / "features.txt")
        text = (ROOT / "examples" / "mq2008" / "audit.yaml").read_text()
        (folder / "audit.yaml").write_text(text.replace("../../../shared/data/MQ2008/Fold1/test.txt",
                                                        str(fold1 / "test.txt")))
        return folder


@pytest.fixture(scope="session")
def postgres_server() -> Any:
    """A real PostgreSQL server for the session (tests/postgres.py); skips with the reason when none can start."""
    from tests import postgres

    if postgres.binaries() is None:
        pytest.skip("PostgreSQL is not installed (Debian package `postgresql`; .ci/run installs it)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed (pip install 'auditor[postgres]')")
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="auditor-postgres-"))  # under /tmp: the server's user must reach it
    try:
        context = postgres.server(folder)
        url = context.__enter__()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"PostgreSQL could not start: {exc}")
    yield url
    context.__exit__(None, None, None)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_url(postgres_server: str, request: pytest.FixtureRequest) -> str:
    """A fresh, empty database on the session's server."""
    import re

    from tests import postgres

    name = "t_" + re.sub(r"[^a-z0-9]+", "_", request.node.name.lower())[:50]
    return postgres.fresh_database(postgres_server, name)


PASS = "correct horse battery staple"


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail with TimeoutError instead of hanging the suite: SIGALRM interrupts Python-level loops, a backtracking
    regex (CPython's `re` checks signals) and a blocking read."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError(f"did not finish within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _keygen(folder: Path) -> Path:
    result = CliRunner().invoke(app, ["keygen", "--out", str(folder), "--passphrase-env", "TEST_KEY_PASS"],
                                env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    return folder


WHOLE_AUDITS = ("signed", "demo")  # session fixtures that each make a whole audit (shared by the workers)


@pytest.hookimpl(tryfirst=True)  # before `-m "not slow"` selects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that reads a whole audit made by a fixture is slow, as the `slow` marker says ("or a whole audit in its
    fixtures"): `make test-fast` leaves it out even when its own body is quick."""
    for item in items:
        if set(getattr(item, "fixturenames", ())) & set(WHOLE_AUDITS) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
    items[:] = heaviest_files_first(items)


def heaviest_files_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The files with the most slow tests first, those without any last (each file's tests in their order): the
    workers take files in this order (`--dist loadfile --no-loadscope-reorder`, Makefile), so the session ends on
    quick files. xdist's own order (most tests first) ended it on files of one or two whole audits, one worker
    idle for their ~10 s. Ahead of them all, the first file that uses each whole-audit fixture (WHOLE_AUDITS)."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    weight = {name: (sum(1 for item in tests if item.get_closest_marker("slow") is not None), len(tests))
              for name, tests in files.items()}
    order = sorted(files, key=lambda name: (-weight[name][0], -weight[name][1]))
    # each whole-audit fixture made first thing, one per worker, by the first file that uses it: made later, a
    # worker that asks for it while the other makes it waits (10 s of an idle core when the demo was made at 60 s)
    makers = [next(name for name in order if any(fixture in getattr(item, "fixturenames", ()) for item in files[name]))
              for fixture in WHOLE_AUDITS if any(fixture in getattr(item, "fixturenames", ()) for item in items)]
    order = list(dict.fromkeys([*makers, *order]))
    return [item for name in order for item in files[name]]


@pytest.fixture(scope="session")
def signed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One signed bookstore run (light spec) and its keys, for the session and its workers (tests/test_signing.py
    and the modules that verify or approve runs); tests copy the run folder before tampering (`_copy`)."""
    with shared_by_workers(tmp_path_factory, "signed") as (root, made):
        folder = root / "bookstore"
        if made:
            return {"run": Path((root / ".run").read_text()), "keys": root / "keys", "spec": folder / "audit.yaml"}
        folder.mkdir()
        copy_bookstore(folder)
        keys = _keygen(root / "keys")
        spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
        spec["evidence"] = [next((LIGHT[name] for name in item if name in LIGHT), item) for item in spec["evidence"]]
        spec["output"] = {"dir": "reports", "formats": ["html", "pdf"]}
        spec["signing"] = {"key": "../keys/signer.p12", "passphrase_env": "TEST_KEY_PASS",
                           "bundle_key": "../keys/bundle-ed25519.pem"}
        (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        result = CliRunner().invoke(app, ["report", str(folder / "audit.yaml"), "--quiet", "--fail-on", "never"],
                                    env={"TEST_KEY_PASS": PASS})
        assert result.exit_code == 0, result.output
        run = Path(result.stdout.strip()).parent
        (root / ".run").write_text(str(run))
        return {"run": run, "keys": keys, "spec": folder / "audit.yaml"}


@contextlib.contextmanager
def shared_by_workers(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[tuple[Path, bool]]:
    """A folder every pytest-xdist worker of this session sees, held under a lock: (folder, made already). The first
    worker to get here makes what goes in it; the others wait and read it. For read-only session fixtures whose
    making costs a whole audit: made once per session instead of once per worker."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    root = base.parent if base.name.startswith("popen-gw") else base  # under xdist: the session's folder
    folder = root / f"shared-{name}"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            made = (folder / ".made").is_file()
            folder.mkdir(exist_ok=True)
            yield folder, made
            (folder / ".made").touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled example's full audit (every evidence kind, both packs), unsigned, as HTML and PDF: one run
    shared by the report's layout and print-quality tests — and by the session's workers (tests only read it)."""
    with shared_by_workers(tmp_path_factory, "demo") as (folder, made):
        if made:
            return Path((folder / ".run").read_text())
        copy_bookstore(folder)
        spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
        spec.pop("signing")
        spec["output"] = {"dir": "reports", "formats": ["html", "pdf"]}
        (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        from auditor.run.engine import run_audit

        run_dir = run_audit(folder / "audit.yaml").run_dir
        (folder / ".run").write_text(str(run_dir))
        return run_dir


def _copy(signed: dict[str, Path], name: str) -> Path:
    """A copy of the signed run next to it (same relative paths to the inputs)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # the run is shared by the session's workers too
    name = f"{name}-{worker}" if worker else name
    target = signed["run"].parent / name
    for n in range(2, 1000):  # the run is shared by the session's modules: a name once
        if not target.exists():
            break
        target = signed["run"].parent / f"{name}-{n}"
    shutil.copytree(signed["run"], target)
    return target


def verify(signed: dict[str, Path], run: Path, *, trust: Path | None = None) -> tuple[int, str]:
    """`auditor verify` on a (copy of the) signed run with its keys: exit code and output, never a traceback."""
    keys = signed["keys"]
    result = CliRunner().invoke(app, ["verify", str(run), "--trust", str(trust or keys / "signer-cert.pem"),
                                      "--pubkey", str(keys / "bundle-ed25519.pub.pem")])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output


def _statement(run: Path) -> dict:
    """The in-toto statement a run's bundle.dsse.json signs."""
    import base64
    import json

    return json.loads(base64.b64decode(json.loads((run / "bundle.dsse.json").read_text())["payload"]))


def _bundle_key(keys: Path) -> Any:
    """The Ed25519 private key that signs the bundle."""
    from cryptography.hazmat.primitives import serialization

    return serialization.load_pem_private_key((keys / "bundle-ed25519.pem").read_bytes(), password=PASS.encode())
