"""Layering: what the spec and policy modules load, and which packages may import which."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ML_LIBRARIES = ("lightgbm", "numba", "matplotlib", "sklearn", "shap", "xgboost", "catboost", "onnxruntime", "mlflow")


def test_importing_the_spec_and_the_policies_loads_no_ml_library() -> None:
    """`auditor validate`, policy tooling and worker start-up read specs and packs: they must not pay for (or
    depend on) the ML libraries."""
    code = ("import sys, auditor.policy, auditor.spec\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({ML_LIBRARIES!r})))\n"
            "auditor.spec.AuditSpec.model_json_schema()\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({ML_LIBRARIES!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split("\n")[:2] == ["[]", "[]"], out.stdout


LOWER = ("explain", "checks", "surrogate")
UPPER = ("evidence", "engine", "report", "spec", "executor", "cli")


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every module a file imports (top level or inside functions), absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.level:  # relative: resolve against the file's package
                package = path.relative_to(ROOT).with_suffix("").parts[:-node.level]
                out.append((node.lineno, ".".join([*package, node.module])))
            else:
                out.append((node.lineno, node.module))
                out += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return out


@pytest.mark.parametrize("package", LOWER)
def test_algorithm_packages_import_nothing_from_the_layers_above(package: str) -> None:
    """explain/, checks/ and surrogate/ are pure functions of arrays and a model: they never reach up into the
    evidence plugins, the pipeline, the report, the spec, the executor or the CLI."""
    bad = []
    for path in sorted((ROOT / "auditor" / package).rglob("*.py")):
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] == "auditor" and len(parts) > 1 and parts[1] in UPPER:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


MEASURING = ("evidence", "checks", "explain", "surrogate")


def test_measuring_code_never_draws_or_words_the_report() -> None:
    """Measuring returns data; presenting reads the stored evidence (issue 52): no module of evidence/, checks/,
    explain/ or surrogate/ imports the report layer — figures are a chart's name and its data, drawn at render time."""
    bad = []
    for package in MEASURING:
        for path in sorted((ROOT / "auditor" / package).rglob("*.py")):
            bad += [f"{path.relative_to(ROOT)}:{line} imports {name}" for line, name in _imports(path)
                    if name == "auditor.report" or name.startswith("auditor.report.")]
    assert not bad, "\n".join(bad)


def test_the_layer_check_sees_a_violation(tmp_path: Path) -> None:
    """The check above would fail on a file that reaches up (so its silence means something)."""
    probe = ROOT / "auditor" / "explain" / "_probe_layers.py"
    probe.write_text("def f():\n    from auditor.engine import prepare\n", encoding="utf-8")
    try:
        assert (2, "auditor.engine") in _imports(probe)
        with pytest.raises(AssertionError, match=r"_probe_layers\.py:2 imports auditor\.engine"):
            test_algorithm_packages_import_nothing_from_the_layers_above("explain")
    finally:
        probe.unlink()


def test_the_policies_load_without_the_spec_or_scipy_stats() -> None:
    """Policy tooling reads packs with the YAML helpers of `auditor.yaml_models`, not through the spec (which builds
    the evidence registry); the evidence modules import scipy.stats only when they compute."""
    code = ("import sys, auditor.policy\n"
            "print(sorted(m for m in ('auditor.spec', 'scipy.stats', 'auditor.evidence.confidence') "
            "if m in sys.modules))\n"
            "import auditor.spec\n"
            "print('scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["[]", "False"], out.stdout


SPEC_IMPORT_SECONDS = 0.3  # issue 39: `import auditor.spec` on a quiet machine (0.19-0.22 s measured)
UNDER_LOAD = 1.5  # the suite's own load on 2 cores adds up to half to an import's CPU time (0.31-0.35 s in CI)


def test_the_spec_imports_light_and_quickly() -> None:
    """Every command and worker reads a spec: it loads no plugin, no numpy and no pandas (the options models live in
    auditor/evidence/options/; pandas alone would add 0.3 s), and imports in SPEC_IMPORT_SECONDS on a quiet
    machine. Measured as the CPU time of the import, the least of 9 fresh processes; the test runs beside the rest
    of the suite, which stretches it by up to UNDER_LOAD (the quiet figure: `python -X importtime -c "import
    auditor.spec"`, 0.22 s)."""
    from auditor.evidence import REGISTRY

    code = ("import sys, time\n"
            "started = time.process_time()\n"
            "import auditor.spec\n"
            "print(time.process_time() - started)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas', 'scipy') or "
            "m.startswith('auditor.evidence.') and m.split('.')[2] in sys.argv[1:]))\n")
    times = []
    for _ in range(9):
        out = subprocess.run([sys.executable, "-c", code, *REGISTRY], capture_output=True, text=True, check=True,
                             cwd=ROOT).stdout.split("\n")
        assert out[1] == "[]", out
        times.append(float(out[0]))
    assert min(times) <= SPEC_IMPORT_SECONDS * UNDER_LOAD, times


def test_no_plugin_imports_another() -> None:
    """Plugins use each other only through declared `uses` and the results handed over: what two share lives in a
    module that is not a plugin (explainers, importance, feature_names, sweeps...)."""
    from auditor.evidence import ALWAYS, REGISTRY

    kinds = set(REGISTRY) | set(ALWAYS)
    bad = []
    for kind in sorted(kinds):
        path = ROOT / "auditor" / "evidence" / f"{kind}.py"
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[:2] == ["auditor", "evidence"] and len(parts) > 2 and parts[2] in kinds - {kind}:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not bad, "\n".join(bad)


def _test_module_imports(path: Path) -> list[str]:
    """Where `path` imports a test module (tests/test_*.py): absolutely, relatively or by its bare name."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(part for part in ("tests" if node.level else "", node.module or "") if part)
            names = [base, *(f"{base}.{a.name}" if base else a.name for a in node.names)]
        else:
            continue
        found += [f"{path.name}:{node.lineno} imports {name}" for name in names
                  if name.removeprefix("tests.").split(".")[0].startswith("test_")]
    return found


def test_no_test_module_imports_another(tmp_path: Path) -> None:
    """Issue 39: what several test modules share lives in tests/conftest.py (fixtures, the bookstore's helpers),
    tests/inputs.py or tests/helpers.py, never in a test module another imports."""
    probe = tmp_path / "test_probe.py"
    probe.write_text("from tests.test_cli import report\nfrom . import test_x\nimport test_y\n"
                     "from tests.conftest import write_spec\nfrom tests import helpers\n", encoding="utf-8")
    assert _test_module_imports(probe) == ["test_probe.py:1 imports tests.test_cli",
                                           "test_probe.py:1 imports tests.test_cli.report",
                                           "test_probe.py:2 imports tests.test_x", "test_probe.py:3 imports test_y"]
    bad = [hit for path in sorted((ROOT / "tests").glob("*.py")) for hit in _test_module_imports(path)]
    assert not bad, "\n".join(bad)


# The trust package (auditor/trust/__init__.py): each module imports only those listed before it, and outside the
# package only the core helpers below — never the register, the engine, the report or the commands.
TRUST_ORDER = ("layout", "verdict", "strict_json", "certificates", "dsse", "net", "timestamps", "token", "keys",
               "identity", "pdf_revisions", "pdf_sign", "pdf_verify", "pdf_attachment", "bundle", "token_chain",
               "run_folder", "roles", "approval", "decision", "restamp", "sign", "verify")
TRUST_MAY_IMPORT = ("auditor.errors", "auditor.files", "auditor.display", "auditor.spans", "auditor.urls",
                    "auditor.__version__")


def _trust_problems(folder: Path) -> list[str]:
    bad = []
    modules = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    bad += [f"auditor/trust/{name}.py is not placed in TRUST_ORDER" for name in modules if name not in TRUST_ORDER]
    for path in sorted(folder.glob("*.py")):
        rank = TRUST_ORDER.index(path.stem) if path.stem in TRUST_ORDER else len(TRUST_ORDER)
        for line, name in _imports(path):
            parts = name.split(".")
            if parts[0] != "auditor" or name in ("auditor", "auditor.trust") or \
                    any(name == m or name.startswith(m + ".") for m in TRUST_MAY_IMPORT):
                continue
            if parts[:2] == ["auditor", "trust"] and parts[2] in TRUST_ORDER and TRUST_ORDER.index(parts[2]) < rank:
                continue
            if parts[:2] == ["auditor", "trust"] and parts[2] not in TRUST_ORDER:
                continue  # a name imported from the package itself: its module is checked by the line above
            bad.append(f"auditor/trust/{path.name}:{line} imports {name}")
    return bad


def test_the_trust_package_imports_in_one_direction() -> None:
    """Keys, PKI helpers, DSSE, timestamps, PKCS#11, PAdES, the run folder, approvals, signing and verification: one
    direction of imports (no cycle), and nothing above the trust code (the register is written by the commands)."""
    assert not _trust_problems(ROOT / "auditor" / "trust")


def test_the_trust_check_sees_a_violation(tmp_path: Path) -> None:
    """An upward import, a reach into the register and an unplaced module are each reported."""
    folder = tmp_path / "trust"
    folder.mkdir()
    (folder / "layout.py").write_text("from auditor.trust.verify import verify_run\n", encoding="utf-8")
    (folder / "keys.py").write_text("from auditor.register.store import Register\nfrom auditor.trust import dsse\n",
                                    encoding="utf-8")
    (folder / "extra.py").write_text("", encoding="utf-8")
    problems = _trust_problems(folder)
    assert problems == ["auditor/trust/extra.py is not placed in TRUST_ORDER",
                        "auditor/trust/keys.py:1 imports auditor.register.store",
                        "auditor/trust/keys.py:1 imports auditor.register.store.Register",
                        "auditor/trust/layout.py:1 imports auditor.trust.verify",
                        "auditor/trust/layout.py:1 imports auditor.trust.verify.verify_run"], problems


def test_no_private_name_crosses_modules() -> None:
    """A name starting with `_` is its module's own: no other module of the package imports it."""
    bad = []
    for path in sorted((ROOT / "auditor").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("auditor"):
                bad += [f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}.{a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, "\n".join(bad)
