"""A run verifies and reruns by itself (issue 53, item 1): the inputs that decide it are archived in the run
(inputs/, listed in the bundle), `verify` judges what the run holds, `--inputs` compares the files at hand with it,
and `auditor report --from-run` reruns the audit from the archive — the documented quarterly cycle, with the spec
edited in place, included."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from auditor.cli import app
from tests.conftest import BOOKSTORE, PASS, _keygen, copy_bookstore

runner = CliRunner()


def _spec(folder: Path, title: str, **extra: object) -> Path:
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    spec.pop("findings", None)
    spec["audit"]["title"] = title
    spec.update(evidence=[{"ranking_quality": {"cutoffs": [5]}}], register=False,
                output={"dir": "reports", "formats": ["html"], **extra},
                signing={"key": "../keys/signer.p12", "passphrase_env": "TEST_KEY_PASS",
                         "bundle_key": "../keys/bundle-ed25519.pem"})
    path = folder / "audit.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def _report(spec: Path) -> Path:
    result = runner.invoke(app, ["report", str(spec), "--quiet", "--fail-on", "never"], env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    return Path(result.stdout.strip()).parent


def _verify(run: Path, keys: Path, *extra: str) -> tuple[int, list[str]]:
    result = runner.invoke(app, ["verify", str(run), "--trust", str(keys / "signer-cert.pem"), "--pubkey",
                                 str(keys / "bundle-ed25519.pub.pem"), *extra])
    assert "Traceback" not in result.output, result.output
    return result.exit_code, result.output.splitlines()


@pytest.fixture(scope="module")
def quarters(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Three quarterly runs of one spec, edited in place between them (its title, as a reviewer would)."""
    base = tmp_path_factory.mktemp("quarters")
    folder = base / "bookstore"
    folder.mkdir()
    copy_bookstore(folder)
    keys = _keygen(base / "keys")
    runs = {}
    for quarter in ("Q1", "Q2", "Q3"):
        runs[quarter] = _report(_spec(folder, f"Catalogue ranker, {quarter}"))
    return {**runs, "keys": keys, "folder": folder}


@pytest.mark.slow
def test_editing_the_spec_in_place_leaves_earlier_quarters_verified(quarters: dict[str, Path]) -> None:
    """Q1 and Q2 stay VERIFIED after the spec was edited for the quarters after them; `--inputs` reports the edited
    spec as changed and names the copy the run kept."""
    for quarter in ("Q1", "Q2"):
        code, lines = _verify(quarters[quarter], quarters["keys"])
        assert code == 0 and lines[-1] == "verdict: VERIFIED", lines
        assert any(line.startswith("OK   inputs/files/audit.yaml: sha256 matches") for line in lines), lines
    code, lines = _verify(quarters["Q1"], quarters["keys"], "--inputs")
    assert code == 1, lines
    spec_line = next(line for line in lines if line.startswith("FAIL ../../audit.yaml"))
    assert "spec: sha256 differs" in spec_line and "the run kept its own copy, inputs/files/audit.yaml" in spec_line
    archived = yaml.safe_load((quarters["Q1"] / "inputs" / "files" / "audit.yaml").read_text())
    assert archived["audit"]["title"] == "Catalogue ranker, Q1"


@pytest.mark.slow
def test_a_run_reruns_from_its_archive_with_identical_evidence(quarters: dict[str, Path], tmp_path: Path) -> None:
    """`report --from-run Q1` runs Q1's archived spec and packs (not the spec as edited since): the same evidence
    (all but the run's times and the register's view), in a new folder; nothing is written inside the run."""
    before = {p: p.read_bytes() for p in quarters["Q1"].rglob("*") if p.is_file()}
    result = runner.invoke(app, ["report", "--from-run", str(quarters["Q1"]), "--out", str(tmp_path / "rerun"),
                                 "--quiet", "--fail-on", "never"])
    assert result.exit_code == 0, result.output
    again = json.loads((Path(result.stdout.strip()).parent / "evidence.json").read_text())
    original = json.loads((quarters["Q1"] / "evidence.json").read_text())
    assert {k: v for k, v in again.items() if k not in ("run", "review")} == \
        {k: v for k, v in original.items() if k not in ("run", "review")}
    assert again["audit"]["title"] == "Catalogue ranker, Q1"
    assert {p: p.read_bytes() for p in quarters["Q1"].rglob("*") if p.is_file()} == before
    inside = runner.invoke(app, ["report", "--from-run", str(quarters["Q1"]), "--out", str(quarters["Q1"] / "x")])
    assert inside.exit_code == 2 and "inside the run folder" in inside.output, inside.output
    both = runner.invoke(app, ["report", str(quarters["folder"] / "audit.yaml"), "--from-run", str(quarters["Q1"]),
                               "--out", str(tmp_path / "x")])
    assert both.exit_code == 2 and "takes no spec" in both.output


@pytest.mark.slow
def test_what_was_not_archived_must_be_at_hand_unchanged(quarters: dict[str, Path], tmp_path: Path) -> None:
    """The model was not archived (`archive_inputs: decisive`): changed beside the run, the rerun refuses in one
    line naming it; archived with `all`, the rerun needs nothing outside the run."""
    folder = tmp_path / "bookstore"
    shutil.copytree(quarters["folder"], folder, ignore=shutil.ignore_patterns("reports"))
    shutil.copytree(quarters["keys"], tmp_path / "keys")
    decisive = _report(_spec(folder, "Decisive only"))
    everything = _report(_spec(folder, "Everything", archive_inputs="all"))
    data = bytearray((folder / "model.txt").read_bytes())
    data[200] ^= 0x01
    (folder / "model.txt").write_bytes(bytes(data))
    refused = runner.invoke(app, ["report", "--from-run", str(decisive), "--out", str(tmp_path / "a"), "--quiet"])
    assert refused.exit_code == 2, refused.output
    assert "the model was not archived" in refused.output and "has changed since the run" in refused.output
    assert len(refused.output.strip().splitlines()) == 1
    index = json.loads((everything / "inputs" / "index.json").read_text())
    assert {e["role"]: e["archived"] for e in index["inputs"]}["model"] == "files/model.txt"
    rerun = runner.invoke(app, ["report", "--from-run", str(everything), "--out", str(tmp_path / "b"), "--quiet",
                                "--fail-on", "never"])
    assert rerun.exit_code == 0, rerun.output


@pytest.mark.slow
def test_an_input_over_the_archive_cap_is_listed_not_kept(quarters: dict[str, Path], tmp_path: Path) -> None:
    folder = tmp_path / "bookstore"
    shutil.copytree(quarters["folder"], folder, ignore=shutil.ignore_patterns("reports"))
    shutil.copytree(quarters["keys"], tmp_path / "keys")
    result = runner.invoke(app, ["report", str(_spec(folder, "Capped", archive_inputs="all", archive_max_mb=0.2)),
                                 "--fail-on", "never"], env={"TEST_KEY_PASS": PASS})
    assert result.exit_code == 0, result.output
    assert "note: not archived in the run (over output.archive_max_mb): dataset test.csv" in result.output
    run = Path(result.stdout.strip().splitlines()[-1]).parent
    entries = {e["role"]: e for e in json.loads((run / "inputs" / "index.json").read_text())["inputs"]}
    assert entries["dataset"]["archived"] is None and "archive_max_mb" in entries["dataset"]["not_archived"]
    assert entries["spec"]["archived"] == "files/audit.yaml"


@pytest.mark.parametrize(("key", "url", "form"), [
    ("register", "postgresql://auditor:s3cret@db.example/register", "a password"),
    ("register", "postgresql://db.example/register?password=s3cret", "`password=`"),
    ("model.tracking_uri", "https://mlflow.example/?token=abc", "`token=`"),
    ("signing.timestamp_url", "https://user:pw@tsa.example/tsr", "a password"),
    ("executor.address", "tcp://tok3n@10.0.0.5:8786", "a user name"),
])
def test_a_spec_with_credentials_in_a_url_is_refused(tmp_path: Path, key: str, url: str, form: str) -> None:
    """A spec is archived, printed and signed: `validate` refuses a URL that carries a password or a token, in one
    line naming the key and where the secret belongs — and never prints the secret."""
    spec = yaml.safe_load((BOOKSTORE / "audit.yaml").read_text())
    copy_bookstore(tmp_path)
    spec.pop("signing")
    target, _, leaf = key.rpartition(".")
    section = spec.setdefault(target, {}) if target else spec
    if key == "model.tracking_uri":
        spec["model"] = {"uri": "models:/bookstore/1", "tracking_uri": url}
    elif key == "signing.timestamp_url":
        section.update(key="model.txt", bundle_key="model.txt", timestamp_url=url)
    elif key == "executor.address":
        section.update(kind="dask", address=url)
    else:
        section[leaf] = url
    (tmp_path / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = runner.invoke(app, ["validate", str(tmp_path / "audit.yaml"), "--quiet"])
    assert result.exit_code == 2, result.output
    assert "a spec never holds credentials" in result.output and form in result.output, result.output
    assert "s3cret" not in result.output and "token=abc" not in result.output and "tok3n" not in result.output \
        and "user:pw" not in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1, result.output
