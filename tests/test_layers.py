"""Layering: what the spec and policy modules load, and which packages may import which."""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ML_LIBRARIES = ("lightgbm", "numba", "matplotlib", "sklearn", "shap", "xgboost", "catboost", "onnxruntime", "mlflow")


def test_importing_the_spec_and_the_policies_loads_no_ml_library() -> None:
    """`auditor validate`, policy tooling and worker start-up read specs and packs: they must not pay for (or
    depend on) the ML libraries."""
    code = ("import sys, auditor.judging.policy, auditor.inputs.spec\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({ML_LIBRARIES!r})))\n"
            "auditor.inputs.spec.AuditSpec.model_json_schema()\n"
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({ML_LIBRARIES!r})))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split("\n")[:2] == ["[]", "[]"], out.stdout


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


# The stages of the pipeline, lowest first (docs/architecture.md, "Stages"): a stage's modules import the stages
# before it, never one after it. The root holds only the two ways in, `cli.py` and `api.py`.
STAGES = {
    "core": "helpers every stage uses: errors, safe reads, YAML, how names, numbers and text are shown",
    "trust": "keys, PKI, DSSE, PAdES, timestamps, PKCS#11, approvals, signing and verification",
    "scoring": "tree ensembles as arrays, masked rows scored off the trees, our TreeSHAP",
    "models": "the model kinds behind one `Ranker`, the counting wrapper, the maskers",
    "inputs": "the spec, the ranking data, the feature dictionary",
    "checks": "pure measures on arrays",
    "explain": "the local explainers",
    "surrogate": "the ILMART twin",
    "evidence": "the evidence kinds, the executor, the typed evidence document",
    "judging": "policy packs, findings, waivers, the opinion",
    "register": "the register of audits and its trail",
    "report": "the report, the executive summary, the history site",
    "run": "the engine, costs and budget, progress, the run's inputs, comparing runs",
    "disclosure": "the transparency statement",
    "commands": "render, init, precompile, JUnit and MLflow logging",
}
WAYS_IN = ("__init__", "__main__", "cli", "api")
# The one import up the stages: the spec's evidence keys are the kinds' registry entries and their options models
# (light: pydantic only, no plugin is loaded).
UPWARD = {("auditor/inputs/spec.py", "auditor.evidence"), ("auditor/inputs/spec.py", "auditor.evidence.registry")}


@functools.cache
def _tree(path: Path) -> ast.Module:
    """A file's syntax tree, parsed once for every check of this module."""
    return ast.parse(path.read_text(encoding="utf-8"))


@functools.cache
def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    """The modules a file imports when it runs (top level or inside functions), not those under TYPE_CHECKING."""
    tree = _tree(path)
    typing_only = {id(sub) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in
                   ast.unparse(node.test) for sub in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.lineno, node.module))
    return out


def _stage_problems(package: Path) -> list[str]:
    bad = [f"auditor/{path.name} sits in the root: place it in a stage" for path in sorted(package.glob("*.py"))
           if path.stem not in WAYS_IN]
    bad += [f"auditor/{folder.name}/ is not a stage of STAGES" for folder in sorted(package.iterdir())
            if folder.is_dir() and (folder / "__init__.py").exists() and folder.name not in STAGES]
    order = list(STAGES)
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package.parent).as_posix()
        stage = path.relative_to(package).parts[0]
        if stage not in STAGES:
            continue
        for line, name in _runtime_imports(path):
            parts = name.split(".")
            if parts[0] != "auditor" or len(parts) < 2 or (relative, name) in UPWARD:
                continue
            if parts[1] in WAYS_IN[2:] or (parts[1] in STAGES and order.index(parts[1]) > order.index(stage)):
                bad.append(f"{relative}:{line} imports {name}, a later stage")
    return bad


def test_each_stage_imports_only_the_stages_before_it() -> None:
    """Issue 52 item 5: the pipeline reads from the folders, and its imports run one way — the algorithms never
    reach the evidence plugins, the pipeline, the report, the spec or the CLI; trust code never the register."""
    assert not _stage_problems(ROOT / "auditor")


def test_the_stage_check_sees_a_violation(tmp_path: Path) -> None:
    """A module left in the root, an unknown stage and an import up the stages are each reported."""
    package = tmp_path / "auditor"
    for folder in ("checks", "extra"):
        (package / folder).mkdir(parents=True)
        (package / folder / "__init__.py").write_text("", encoding="utf-8")
    (package / "stray.py").write_text("", encoding="utf-8")
    (package / "checks" / "x.py").write_text("def f():\n    from auditor.run.engine import run_audit\n",
                                             encoding="utf-8")
    assert _stage_problems(package) == ["auditor/stray.py sits in the root: place it in a stage",
                                        "auditor/extra/ is not a stage of STAGES",
                                        "auditor/checks/x.py:2 imports auditor.run.engine, a later stage"]


def _stage_imports(package: Path) -> dict[str, list[str]]:
    """The stages each stage's modules import when they run (the way-in modules excepted), in stage order."""
    found: dict[str, set[str]] = {name: set() for name in STAGES}
    for path in package.rglob("*.py"):
        stage = path.relative_to(package).parts[0]
        if stage in STAGES:
            found[stage] |= {name.split(".")[1] for _, name in _runtime_imports(path)
                             if name.startswith("auditor.") and name.split(".")[1] in STAGES} - {stage}
    return {stage: sorted(found[stage], key=list(STAGES).index) for stage in STAGES}


def test_the_architecture_page_lists_the_stages_as_the_code_has_them() -> None:
    """docs/architecture.md's stage table is STAGES, in order, each with the stages its modules import (read from the
    code, so the page cannot drift from it)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    marker = "<!-- stages: checked by tests/test_layers.py -->"
    assert marker in text
    table = text.split(marker, 1)[1].strip().split("\n\n", 1)[0]
    expected = ["| stage | what it holds | imports |", "| --- | --- | --- |"]
    imports = _stage_imports(ROOT / "auditor")
    expected += [f"| `auditor/{name}/` | {job} | {', '.join(imports[name]) or '—'} |" for name, job in STAGES.items()]
    assert table.splitlines() == expected, "\n".join(expected)


# Imports made inside a function to load a module on first use that form a cycle; each loads a lower module's
# factory or a step of a migration. No other cycle may appear, at module level none at all.
LAZY_CYCLES = {
    frozenset({"auditor.evidence.base", "auditor.evidence.executor"}),  # an executor task builds a worker's context
    frozenset({"auditor.explain.listwise", "auditor.explain.options"}),  # the options model builds its explainer
    frozenset({"auditor.models", "auditor.models.mlflow"}),  # an MLflow model hands its file to the kind's loader
    frozenset({"auditor.register.schema", "auditor.register.trail"}),  # migration 2 chains the existing rows
}


def _cycles(package: Path, *, module_level: bool) -> list[frozenset[str]]:
    """The import cycles among the package's modules (strongly connected components of two or more)."""
    names = {}
    for path in package.rglob("*.py"):
        name = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        names[name] = path

    def module_of(name: str) -> str | None:
        while name and name not in names:
            name = name.rpartition(".")[0]
        return name if name and name != package.name else None

    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        top = {node.lineno for node in _tree(path).body if isinstance(node, (ast.Import, ast.ImportFrom))}
        graph[name] = {target for line, imported in _runtime_imports(path)
                       if (not module_level or line in top)
                       and (target := module_of(imported)) is not None and target != name}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                top_of_stack = stack.pop()
                component.add(top_of_stack)
                if top_of_stack == node:
                    break
            if len(component) > 1:
                cycles.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_import_cycle_in_auditor() -> None:
    """No module imports one that imports it back: none when modules load, and on first use only the listed ones."""
    package = ROOT / "auditor"
    assert _cycles(package, module_level=True) == []
    assert set(_cycles(package, module_level=False)) <= LAZY_CYCLES


def test_the_cycle_check_sees_a_cycle(tmp_path: Path) -> None:
    package = tmp_path / "auditor"
    package.mkdir()
    (package / "a.py").write_text("import auditor.b\n", encoding="utf-8")
    (package / "b.py").write_text("def f():\n    from auditor.a import x\n", encoding="utf-8")
    assert _cycles(package, module_level=True) == []
    assert _cycles(package, module_level=False) == [frozenset({"auditor.a", "auditor.b"})]


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


def test_the_policies_load_without_the_spec_or_scipy_stats() -> None:
    """Policy tooling reads packs with the YAML helpers of `inputs.yaml_models`, not through the spec (which builds
    the evidence registry); the evidence modules import scipy.stats only when they compute."""
    code = ("import sys, auditor.judging.policy\n"
            "print(sorted(m for m in ('auditor.inputs.spec', 'scipy.stats', "
            "'auditor.evidence.kinds.confidence.measure') "
            "if m in sys.modules))\n"
            "import auditor.inputs.spec\n"
            "print('scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["[]", "False"], out.stdout


SPEC_IMPORT_SECONDS = 0.3  # issue 39: `import auditor.inputs.spec` on a quiet machine (0.19-0.22 s measured)
UNDER_LOAD = 1.5  # the suite's own load on 2 cores adds up to half to an import's CPU time (0.31-0.35 s in CI)


def test_the_spec_imports_light_and_quickly() -> None:
    """Every command and worker reads a spec: it loads no plugin, no numpy and no pandas (the options models live in
    auditor/evidence/kinds/<kind>/options.py; pandas alone would add 0.3 s) — of a kind's package only its entry and
    options, never what it measures or presents —, and imports in SPEC_IMPORT_SECONDS on a quiet machine. Measured
    as the CPU time of the import, the least of 9 fresh processes; the test runs beside the rest of the suite,
    which stretches it by up to UNDER_LOAD (the quiet figure: `python -X importtime -c "import auditor.inputs.spec"`,
    0.22 s)."""
    from auditor.evidence import REGISTRY

    code = ("import sys, time\n"
            "started = time.process_time()\n"
            "import auditor.inputs.spec\n"
            "print(time.process_time() - started)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numpy', 'pandas', 'scipy') or "
            "m.startswith('auditor.evidence.kinds.') and m.split('.')[3] in sys.argv[1:] and "
            "m.rsplit('.', 1)[1] not in ('options', *sys.argv[1:])))\n")
    times = []
    for _ in range(9):
        out = subprocess.run([sys.executable, "-c", code, *REGISTRY], capture_output=True, text=True, check=True,
                             cwd=ROOT).stdout.split("\n")
        assert out[1] == "[]", out
        times.append(float(out[0]))
    assert min(times) <= SPEC_IMPORT_SECONDS * UNDER_LOAD, times


def test_no_plugin_imports_another() -> None:
    """Plugins use each other only through declared `uses` and the results handed over: no module of a kind's
    package imports another kind's but its options model; what two share lives in a module that is not a plugin
    (explainers, importance, feature_names, sweeps...)."""
    from auditor.evidence import ALWAYS, REGISTRY

    kinds = set(REGISTRY) | set(ALWAYS)
    bad = []
    for kind in sorted(kinds):
        for path in sorted((ROOT / "auditor" / "evidence" / "kinds" / kind).glob("*.py")):
            for line, name in _imports(path):
                parts = name.split(".")
                if (parts[:3] == ["auditor", "evidence", "kinds"] and len(parts) > 3 and parts[3] in kinds - {kind}
                        and parts[4:5] != ["options"]):  # another kind's options are data, as the spec reads them
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
               "identity", "pdf_form", "pdf_revisions", "pdf_sign", "pdf_approval", "pdf_verify", "pdf_attachment",
               "bundle", "token_chain",
               "run_folder", "roles", "approval", "decision", "adoption", "restamp", "sign", "verify")
TRUST_MAY_IMPORT = ("auditor.core.errors", "auditor.core.files", "auditor.core.display", "auditor.core.spans",
                    "auditor.core.urls", "auditor.__version__")


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


def test_the_architecture_page_names_every_module_and_only_modules_that_exist() -> None:
    """Every path docs/architecture.md names exists, and every module has a row in its table (its own, or its
    package's for the packages described as one row)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`(auditor/[A-Za-z0-9_/]+(?:\.py|/))`", text))
    missing = sorted(path for path in named if not (ROOT / path).exists() and path != "auditor/_bundled/")  # (wheel)
    assert not missing, missing
    table = text.split("## Modules and their one job", 1)[1].split("\n\n", 2)[1]
    rows = set(re.findall(r"^\| `(auditor/[A-Za-z0-9_/]+(?:\.py|/))`", table, re.M)) | \
        set(re.findall(r"^\| `auditor/[a-z_/]+\.py`, `(auditor/[A-Za-z0-9_/]+\.py)`", table, re.M))
    unlisted = []
    for path in sorted((ROOT / "auditor").rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        if path.stem in ("__init__", "__main__") or "_bundled" in relative:
            continue
        if relative not in rows and not any(relative.startswith(row) for row in rows if row.endswith("/")):
            unlisted.append(relative)
    assert not unlisted, unlisted


def test_a_presenting_kind_measures_without_prose() -> None:
    """Measure, then present (issue 52): in a kind with a `section`, no module but `present.py` (and `phrases.py`)
    writes a summary, a reading guide, a note or a figure, and the only tables it makes are wall-clock ones (never
    stored, so never presented again): what the report says is made from the stored result, by the auditor that
    renders it."""
    from auditor.evidence import ALWAYS, REGISTRY

    prose = {"summary", "how_to_read", "notes", "figures"}
    bad = []
    for kind in [*REGISTRY.values(), *ALWAYS.values()]:
        if kind.section is None or not kind.module.startswith("auditor.evidence.kinds."):
            continue
        folder = ROOT / "auditor" / "evidence" / "kinds" / kind.name
        for path in sorted(folder.glob("*.py")):
            if path.name in ("present.py", "phrases.py", "options.py", "__init__.py"):
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            base_table = any(isinstance(n, ast.ImportFrom) and n.module == "auditor.evidence.base"
                             and any(a.name == "Table" for a in n.names) for n in ast.walk(tree))
            for node in ast.walk(tree):
                where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}"
                if isinstance(node, ast.Attribute) and node.attr in prose and isinstance(node.ctx, ast.Store):
                    bad.append(f"{where} sets .{node.attr}")
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                        and node.func.attr in ("append", "extend", "insert") \
                        and isinstance(node.func.value, ast.Attribute) and node.func.value.attr in prose:
                    bad.append(f"{where} adds to .{node.func.value.attr}")
                elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    keywords = {k.arg for k in node.keywords}
                    if node.func.id == "Figure":
                        bad.append(f"{where} makes a figure")
                    elif node.func.id == "Table" and base_table and not any(
                            k.arg == "volatile" and isinstance(k.value, ast.Constant) and k.value.value is True
                            for k in node.keywords):
                        bad.append(f"{where} makes a table that is not wall-clock")
                    elif node.func.id == "EvidenceResult" and keywords & prose:
                        bad.append(f"{where} writes {sorted(keywords & prose)}")
    assert not bad, "\n".join(bad)
