"""`auditor render`: a run's report drawn again from its evidence.json alone (issue 52, item 3).

The figures are stored as data (a chart's name and its arguments) and drawn when a document is rendered, so the
rendering of a run made by this version is the run's own report, byte for byte (the demo's, with every kind of
figure: tests/test_print_quality.py, which reads the layout that rendering printed); through an organisation's
templates it changes only where they do. A signed run's evidence is compared with its bundle first; evidence
written before figures were kept renders without them and says why; evidence that is not ours is one line, exit 2,
and nothing written.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.evidence.base import FIGURES_NOT_KEPT
from auditor.report.render import templates_dir


def _render(*args: str, code: int = 0) -> tuple[str, str]:
    result = CliRunner().invoke(app, ["render", *args])
    assert result.exit_code == code, result.output
    return result.stdout, result.stderr


def _folders(out: Path) -> list[Path]:
    return sorted(out.iterdir()) if out.is_dir() else []


def test_a_corrected_wording_reaches_the_rendered_report(unsigned: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A presenting kind's sentences are made from its stored facts when a run is rendered (issue 52: measure, then
    present): a reading guide corrected since the run shows in the rendering, while the run's evidence, which the
    rendering does not touch, keeps what the run said."""
    from auditor.evidence.kinds.ranking_quality import present

    before = (unsigned / "evidence.json").read_bytes()
    said = json.loads(before)["evidence"]["ranking_quality"]["how_to_read"]
    assert said == present.HOW_TO_READ
    monkeypatch.setattr(present, "HOW_TO_READ", "nDCG@k, as the corrected guide explains it.")
    folder = Path(_render(str(unsigned), "--out", str(tmp_path / "out"))[0].strip())
    html = (folder / "report.html").read_text(encoding="utf-8")
    assert "nDCG@k, as the corrected guide explains it." in html and said[:60] not in html
    assert (unsigned / "evidence.json").read_bytes() == before


@pytest.mark.slow  # two renderings
def test_a_changed_template_changes_only_what_it_changes(unsigned: Path, tmp_path: Path) -> None:
    """An organisation's cover template: the cover changes, nothing else; each rendering gets its own folder."""
    first = Path(_render(str(unsigned), "--out", str(tmp_path / "out"))[0].strip())
    mine = tmp_path / "templates" / "sections"
    mine.mkdir(parents=True)
    cover = (templates_dir() / "sections" / "cover.html.j2").read_text(encoding="utf-8")
    (mine / "cover.html.j2").write_text(cover.replace("</header>", "<p>Rendered for the board</p></header>", 1),
                                        encoding="utf-8")
    stdout, _ = _render(str(unsigned), "--out", str(tmp_path / "out"), "--template", str(tmp_path / "templates"))
    again = Path(stdout.strip())
    assert again != first and again.name.startswith(f"{unsigned.name}-rendered")
    changed = (again / "report.html").read_text(encoding="utf-8")
    assert "Rendered for the board" in changed
    plain = (first / "report.html").read_text(encoding="utf-8")
    assert changed.replace("<p>Rendered for the board</p>", "", 1) == plain


@pytest.mark.slow  # a PDF rendered
def test_a_signed_run_renders_after_its_bundle_is_checked(signed: dict[str, Path], tmp_path: Path) -> None:
    """With --pubkey the bundle's signature is verified, then evidence.json's digest; the HTML is the run's (the
    signer block included: it describes the run rendered), and the command says the rendering is not signed. (A
    rendered PDF is the run's too, byte for byte: test_print_quality's `test_a_fresh_run_renders_byte_for_byte`.)"""
    run, keys = signed["run"], signed["keys"]
    stdout, stderr = _render(str(run), "--out", str(tmp_path), "--pubkey", str(keys / "bundle-ed25519.pub.pem"))
    folder = Path(stdout.strip())
    assert (folder / "report.html").read_bytes() == (run / "report.html").read_bytes()
    assert not (folder / "report.pdf").exists()  # HTML unless asked
    assert "this rendering is not signed" in stderr
    assert json.loads((folder / "rendered.json").read_text())["bundle"].startswith("signature verified")
    _, stderr = _render(str(run), "--out", str(tmp_path / "wrong"), "--pubkey", str(keys / "signer-cert.pem"), code=2)
    assert "bundle does not verify" in stderr and not (tmp_path / "wrong").exists()


def _copy(run: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    return copy


def test_evidence_changed_after_a_signed_run_is_not_rendered(signed: dict[str, Path], tmp_path: Path) -> None:
    run = _copy(signed["run"], tmp_path)
    text = (run / "evidence.json").read_text(encoding="utf-8")
    (run / "evidence.json").write_text(text.replace('"opinion": "', '"opinion": "x', 1), encoding="utf-8")
    _, stderr = _render(str(run), "--out", str(tmp_path / "out"), code=2)
    assert "differs from the digest the run's signed bundle lists" in stderr
    assert _folders(tmp_path / "out") == []


@pytest.fixture(scope="module")
def unsigned(signed: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's signed light run without its bundle: an unsigned run whose evidence.json tests may edit."""
    copy = tmp_path_factory.mktemp("unsigned") / signed["run"].name
    shutil.copytree(signed["run"], copy)
    for name in ("bundle.dsse.json", "bundle.tsr"):
        (copy / name).unlink(missing_ok=True)
    return copy


def test_evidence_written_before_figures_were_kept_renders_without_them(unsigned: Path, tmp_path: Path) -> None:
    run = _copy(unsigned, tmp_path)
    document = json.loads((run / "evidence.json").read_text())
    for item in document["evidence"].values():
        for key in ("figures", "options", "facts"):  # none of them was kept before v2
            item.pop(key, None)
    document.pop("evidence_order")
    (run / "evidence.json").write_text(json.dumps(document), encoding="utf-8")
    _render(str(run), "--out", str(tmp_path / "out"), code=2)  # v2 keeps figures: without them it is not ours
    document["schema"] = "auditor.evidence/v1"  # what runs before figures were kept wrote
    (run / "evidence.json").write_text(json.dumps(document), encoding="utf-8")
    stdout, stderr = _render(str(run), "--out", str(tmp_path / "out"))
    html = (Path(stdout.strip()) / "report.html").read_text(encoding="utf-8")
    said = "figures are not in the run"
    assert "<svg" not in html and said in html and said in FIGURES_NOT_KEPT
    assert "keeps no figure data" in stderr
    assert "evidence schema auditor.evidence/v1" in html  # the footer names the schema it was written in


NOT_OURS = "what no chart takes"


@pytest.mark.parametrize(("edit", "words"), [
    (lambda f: f.update(chart="pie_chart"), "names a chart this version cannot draw"),
    (lambda f: f["data"].update(values={"__array__": "1 2 x", "dtype": "float64", "shape": [3]}), NOT_OURS),
    (lambda f: f["data"].update(values={"__array__": "1 2", "dtype": "float64", "shape": [3]}), NOT_OURS),
    (lambda f: f["data"].update(values={"__array__": "1", "dtype": "object", "shape": [1]}), NOT_OURS),
    (lambda f: f["data"].update(surprise=1), "holds data its chart cannot draw"),
])
def test_figure_data_that_is_not_ours_is_one_line_and_nothing_written(unsigned: Path, tmp_path: Path, edit,
                                                                      words: str) -> None:
    run = _copy(unsigned, tmp_path)
    document = json.loads((run / "evidence.json").read_text())
    edit(_stored_figure(document))
    (run / "evidence.json").write_text(json.dumps(document), encoding="utf-8")
    _, stderr = _render(str(run), "--out", str(tmp_path / "out"), code=2)
    assert words in stderr and len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr
    assert [p for p in _folders(tmp_path / "out") if not p.name.startswith(".")] == []
    assert not any(p.name.startswith(".") for p in _folders(tmp_path / "out"))


def _stored_figure(document: dict[str, Any]) -> dict[str, Any]:
    """The first figure a run keeps, of an item rendered as stored: one whose kind presented nothing again, as a run
    written before its kind presented (no stored options; a presenting kind's figures are made anew)."""
    item = document["evidence"]["ranking_quality"]
    item.pop("options")
    figure: dict[str, Any] = item["figures"][0]
    return figure


@pytest.mark.parametrize("edit", [lambda item: item.update(records=[["q", 3]]),
                                  lambda item: item["options"].update(cutoffs="ten"),
                                  lambda item: item.update(records=[{"query": "q"}])],
                         ids=["records not ours", "options not ours", "a record without its figures"])
def test_facts_that_are_not_ours_are_one_line_and_nothing_written(unsigned: Path, tmp_path: Path, edit) -> None:
    """A presenting kind's stored records, facts or options this version cannot present: one line naming the
    item, exit 2, nothing written (an unsigned run is rendered as it is, so nothing caught this before)."""
    run = _copy(unsigned, tmp_path)
    document = json.loads((run / "evidence.json").read_text())
    edit(document["evidence"]["ranking_quality"])
    (run / "evidence.json").write_text(json.dumps(document), encoding="utf-8")
    _, stderr = _render(str(run), "--out", str(tmp_path / "out"), code=2)
    assert "evidence.ranking_quality" in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert "Traceback" not in stderr and [p for p in _folders(tmp_path / "out")] == []


def test_what_is_not_a_run_or_writes_into_one_is_refused(unsigned: Path, tmp_path: Path) -> None:
    _, stderr = _render(str(tmp_path), code=2)
    assert "not a run folder" in stderr
    _, stderr = _render(str(unsigned), "--out", str(unsigned / "inside"), code=2)
    assert "inside the run folder" in stderr
    _, stderr = _render(str(unsigned), "--format", "docx", code=2)
    assert "not a format" in stderr
    run = _copy(unsigned, tmp_path)
    (run / "evidence.json").write_text('{"evidence": {}}', encoding="utf-8")
    _, stderr = _render(str(run), "--out", str(tmp_path / "out"), code=2)
    assert "is not an audit's evidence" in stderr


def test_a_run_folder_loads_back_as_an_audit_result(unsigned: Path, signed: dict[str, Path], tmp_path: Path) -> None:
    """`auditor.load` / `AuditResult.load` (issue 58): the opinion, findings, metrics, tables and the inline summary
    of a run folder, from its evidence alone; a signed run's bundle checked first; a loaded run is not saved again."""
    import auditor
    from auditor.api import AuditResult
    from auditor.core.errors import InputError

    result = auditor.load(unsigned)
    document = json.loads((unsigned / "evidence.json").read_text())
    assert result.opinion == document["opinion"] and result.folder == unsigned
    assert len(result.findings) == len(document["findings"]) > 0
    assert set(result.metrics["evidence"]) == set(document["evidence"])
    quality = result.tables("ranking_quality")
    assert quality and all(len(frame) for frame in quality.values())
    assert "Overall opinion" in result.report_html()  # drawn from the evidence (its bundle removed: no signer)
    assert "srcdoc=" in result._repr_html_() and result.opinion in repr(result)
    with pytest.raises(InputError, match="holds its run folder already"):
        result.save(tmp_path / "again")
    assert not (tmp_path / "again").exists()
    keys = signed["keys"]
    mine = AuditResult.load(signed["run"], pubkey=keys / "bundle-ed25519.pub.pem")
    assert mine.opinion == result.opinion and mine.document.evidence.keys() == result.document.evidence.keys()
    with pytest.raises(InputError, match="bundle does not verify"):
        AuditResult.load(signed["run"], pubkey=keys / "signer-cert.pem")
