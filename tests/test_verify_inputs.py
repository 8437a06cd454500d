"""`auditor verify --inputs [--inputs-root DIR]`: every input the bundle names is found and re-hashed, or fails.

One signed run is made for the module (a light spec with an organisation's template folder and a local policy
pack, so every input sits in one folder beside the run's `reports/`); each test copies that folder (the run and its
inputs, same relative paths) into its own tmp_path before it changes anything.
"""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from auditor.trust.run_folder import check_input, input_places
from tests.conftest import BOOKSTORE, PASS, ROOT, _keygen, copy_bookstore

runner = CliRunner()
HINT = "outside the run, not compared (`auditor verify --inputs` compares the file at hand)"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A signed run at `<base>/bookstore/reports/<run>`, its inputs in `<base>/bookstore`, its keys in `<base>/keys`."""
    base = tmp_path_factory.mktemp("inputs")
    folder = base / "bookstore"
    folder.mkdir()
    copy_bookstore(folder)
    shutil.copy(ROOT / "policies" / "starter.yaml", folder / "pack.yaml")
    brand = folder / "brand"
    (brand / "sections").mkdir(parents=True)
    (brand / "sections" / "cover.html.j2").write_text(
        '<header class="cover"><h1>ACME audit: {{ doc.audit.title }}</h1></header>\n')
    (brand / "custom.css").write_text("h2 { color: #aa0000; }\n")
    _keygen(base / "keys")
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec.pop("findings", None)
    spec.update(evidence=[{"ranking_quality": {}}], policies=["./pack.yaml"], register=False,
                output={"dir": "reports", "formats": ["html"], "templates": "brand"},
                signing={"key": "../keys/signer.p12", "passphrase_env": "TEST_KEY_PASS",
                         "bundle_key": "../keys/bundle-ed25519.pem"})
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = runner.invoke(app, ["report", str(folder / "audit.yaml"), "--quiet", "--fail-on", "never"],
                           env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    return {"base": base, "run": Path(result.stdout.strip()).parent}


def _copy(made: dict[str, Path], tmp_path: Path) -> tuple[Path, Path]:
    """(run folder, inputs folder) of a private copy of the module's run and its inputs (keys stay shared)."""
    shutil.copytree(made["base"] / "bookstore", tmp_path / "bookstore")
    return tmp_path / "bookstore" / "reports" / made["run"].name, tmp_path / "bookstore"


def _verify(made: dict[str, Path], run: Path, *extra: str) -> tuple[int, list[str]]:
    keys = made["base"] / "keys"
    result = runner.invoke(app, ["verify", str(run), "--trust", str(keys / "signer-cert.pem"),
                                 "--pubkey", str(keys / "bundle-ed25519.pub.pem"), *extra])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output.splitlines()


def _inputs(run: Path) -> dict[str, str]:
    """{name: role} of the bundle's input subjects."""
    statement = json.loads(base64.b64decode(json.loads((run / "bundle.dsse.json").read_text())["payload"]))
    return {s["name"]: s["annotations"]["role"] for s in statement["subject"] if s["annotations"]["kind"] == "input"}


def _line(lines: list[str], name: str) -> str:
    found = [line for line in lines if line.split(" ", 1)[1].lstrip().startswith(f"{name}: ")]
    assert len(found) == 1, (name, lines)
    return found[0]


def test_every_input_is_listed_and_matches(made: dict[str, Path], tmp_path: Path) -> None:
    run, _ = _copy(made, tmp_path)
    inputs = _inputs(run)
    assert inputs == {"../../audit.yaml": "spec", "../../pack.yaml": "policy pack starter", "../../model.txt": "model",
                      "../../test.csv": "dataset", "../../train.csv": "background",
                      "../../brand/custom.css": "template custom.css",
                      "../../brand/sections/cover.html.j2": "template sections/cover.html.j2"}
    code, lines = _verify(made, run, "--inputs")
    assert code == 0 and lines[-1] == "verdict: VERIFIED", lines
    for name, role in inputs.items():
        assert _line(lines, name) == f"OK   {name}: {role}: sha256 matches"


def test_a_changed_input_fails_with_inputs_and_is_not_read_without(made: dict[str, Path], tmp_path: Path) -> None:
    """A run verifies by what it holds: the model changed beside it fails only `--inputs`, which compares the files
    at hand; without it the run is VERIFIED and the input lines say they were not compared."""
    run, folder = _copy(made, tmp_path)
    data = bytearray((folder / "model.txt").read_bytes())
    data[100] ^= 0x01
    (folder / "model.txt").write_bytes(bytes(data))
    code, lines = _verify(made, run, "--inputs")
    assert code == 1 and lines[-1] == "verdict: NOT VERIFIED (1 problem)", lines
    assert _line(lines, "../../model.txt").startswith(
        "FAIL ../../model.txt: model: sha256 differs (file changed since signing)")
    assert _line(lines, "../../test.csv") == "OK   ../../test.csv: dataset: sha256 matches"
    code, lines = _verify(made, run)
    assert code == 0 and lines[-1] == "verdict: VERIFIED", lines
    assert _line(lines, "../../model.txt") == f"SKIP ../../model.txt: model: {HINT}"


def test_moved_inputs_are_found_under_inputs_root(made: dict[str, Path], tmp_path: Path) -> None:
    run, folder = _copy(made, tmp_path)
    moved = tmp_path / "archive" / "run"
    moved.parent.mkdir()
    run.rename(moved)  # the run folder alone, elsewhere: `../../model.txt` no longer leads to the model
    inputs = _inputs(moved)

    code, lines = _verify(made, moved, "--inputs")
    assert code == 1 and lines[-1] == f"verdict: NOT VERIFIED ({len(inputs)} problems)", lines
    assert _line(lines, "../../model.txt") == ("FAIL ../../model.txt: model: not found at ../../model.txt: cannot be "
                                               "checked (give --inputs-root DIR if the inputs were moved)")

    code, lines = _verify(made, moved, "--inputs", "--inputs-root", str(folder))
    assert code == 0 and lines[-1] == "verdict: VERIFIED", lines
    for name, role in inputs.items():
        expected = folder / name.removeprefix("../../")
        assert _line(lines, name) == f"OK   {name}: {role}: sha256 matches (found under --inputs-root: {expected})"

    nowhere = tmp_path / "nowhere"
    code, lines = _verify(made, moved, "--inputs-root", str(nowhere))  # a root that is not a folder: bad input
    assert code == 2 and "no such folder" in lines[-1] and "--inputs-root" in lines[-1], lines


def test_inputs_root_falls_back_to_the_file_name(made: dict[str, Path], tmp_path: Path) -> None:
    run, folder = _copy(made, tmp_path)
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(folder / "brand" / "sections" / "cover.html.j2", flat)
    (folder / "brand" / "sections" / "cover.html.j2").unlink()
    code, lines = _verify(made, run, "--inputs", "--inputs-root", str(flat))
    assert code == 0, lines
    name = "../../brand/sections/cover.html.j2"
    assert _line(lines, name) == (f"OK   {name}: template sections/cover.html.j2: sha256 matches (found under "
                                  f"--inputs-root: {flat / 'cover.html.j2'})")
    assert _line(lines, "../../model.txt") == "OK   ../../model.txt: model: sha256 matches"  # the recorded path first


def test_without_inputs_a_missing_input_is_skipped_with_the_hint(made: dict[str, Path], tmp_path: Path) -> None:
    run, folder = _copy(made, tmp_path)
    (folder / "train.csv").unlink()
    code, lines = _verify(made, run)
    assert code == 0 and lines[-1] == "verdict: VERIFIED", lines
    assert _line(lines, "../../train.csv") == f"SKIP ../../train.csv: background: {HINT}"
    assert _line(lines, "../../test.csv") == f"SKIP ../../test.csv: dataset: {HINT}"
    assert _line(lines, "../../audit.yaml") == ("SKIP ../../audit.yaml: spec: outside the run, not compared; the run "
                                                "keeps its own copy, inputs/files/audit.yaml (`auditor verify "
                                                "--inputs` compares the file at hand)")


def test_a_changed_template_is_caught(made: dict[str, Path], tmp_path: Path) -> None:
    run, folder = _copy(made, tmp_path)
    (folder / "brand" / "custom.css").write_text("h2 { color: #00aa00; }\n")
    code, lines = _verify(made, run, "--inputs")
    assert code == 1, lines
    assert _line(lines, "../../brand/custom.css").startswith(
        "FAIL ../../brand/custom.css: template custom.css: sha256 differs")


def test_inputs_are_not_read_when_the_bundle_is_not_authenticated(made: dict[str, Path], tmp_path: Path) -> None:
    run, _ = _copy(made, tmp_path)
    keys = made["base"] / "keys"
    result = runner.invoke(app, ["verify", str(run), "--trust", str(keys / "signer-cert.pem"), "--inputs"])
    lines = result.output.splitlines()
    assert result.exit_code == 1
    assert _line(lines, "../../model.txt") == ("SKIP ../../model.txt: model: not checked (the bundle is not "
                                               "authenticated, so paths it names outside the run folder are not read)")


def test_inputs_root_lookups_stay_inside_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    recorded = tmp_path / "run" / "x"
    assert input_places("../../a/b.txt", recorded, root) == [(recorded, False), (root / "a" / "b.txt", True),
                                                             (root / "b.txt", True)]
    assert input_places("../../b.txt", recorded, root) == [(recorded, False), (root / "b.txt", True)]
    assert input_places("../a/../../etc/passwd", recorded, root) == [(recorded, False), (root / "passwd", True)]
    assert input_places("../..", recorded, root) == [(recorded, False)]
    assert input_places("../../a/b.txt", recorded, None) == [(recorded, False)]
    (root / "secret").mkdir(parents=True)
    (root / "secret" / "passwd").write_text("x")
    verdict = check_input("../a/../../secret/passwd", recorded, "0" * 64, "model", authentic=True, required=True,
                           inputs_root=root)
    assert not verdict.ok and "not found" in verdict.message  # `..` past the leading ones: only the name is tried


def test_input_files_names_the_callable_module_templates_and_baseline(made: dict[str, Path], tmp_path: Path) -> None:
    """What the audit reads beyond model, data and packs (no audit run: `prepare` only)."""
    from auditor.run.engine import input_files, prepare

    _, folder = _copy(made, tmp_path)
    (folder / "verify_inputs_ranker.py").write_text("def score(X):\n    return 2.0 * X[:, 0] + X[:, 4]\n")
    (folder / "brand" / "sections" / "cover-link.html.j2").symlink_to("cover.html.j2")  # listed by its target
    spec = yaml.safe_load((folder / "audit.yaml").read_text())
    spec.pop("signing")
    spec.update(model={"kind": "callable", "entry": "verify_inputs_ranker:score", "trust": True},
                baseline=f"reports/{made['run'].name}")
    (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    listed = {role: path for role, path in input_files(prepare(folder / "audit.yaml"))}
    assert listed["model module"].resolve() == (folder / "verify_inputs_ranker.py").resolve()
    assert listed["baseline evidence"] == folder / "reports" / made["run"].name / "evidence.json"
    assert {role for role in listed if role.startswith("template ")} == {"template custom.css",
                                                                          "template sections/cover.html.j2"}
    assert "model" not in listed
