"""Layering: what the spec and policy modules load, and which packages may import which."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ML_LIBRARIES = ("lightgbm", "numba", "matplotlib", "sklearn", "shap", "xgboost", "catboost", "onnxruntime")


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
