"""examples/notebook.ipynb runs top to bottom in a real Jupyter kernel (nbclient, ipykernel), shows the audit's
summary inline, and its rendered page shows that summary in headless Chromium."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

NOTEBOOK = ROOT / "examples" / "notebook.ipynb"


@pytest.fixture(scope="module")
def executed() -> object:
    nbformat = pytest.importorskip("nbformat", reason="nbformat is in the dev extra (make test installs it)")
    nbclient = pytest.importorskip("nbclient", reason="nbclient is in the dev extra (make test installs it)")
    pytest.importorskip("ipykernel", reason="the notebook needs a Jupyter kernel: ipykernel (dev extra)")
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    client = nbclient.NotebookClient(notebook, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(NOTEBOOK.parent)}})
    client.execute()
    return notebook


def _outputs(notebook: object, kind: str) -> list[str]:
    out = []
    for cell in notebook.cells:  # type: ignore[attr-defined]
        for output in cell.get("outputs", []):
            if kind == "stream" and output.get("output_type") == "stream":
                out.append(output["text"])
            elif kind in output.get("data", {}):
                out.append(output["data"][kind])
    return out


@pytest.mark.slow
def test_the_notebook_audits_fixes_and_audits_again(executed):
    shown = _outputs(executed, "text/html")
    frames = [html for html in shown if "<iframe sandbox=" in html]
    assert len(frames) == 3, "both audits and the saved run read back show their summary inline"
    assert all("Executive summary" in frame for frame in frames)
    assert frames[1] == frames[2], "the run read back shows the same summary as the run (issue 58)"
    assert _outputs(executed, "image/png"), "shap's waterfall of the audit's attributions is drawn (issue 58)"
    printed = "".join(_outputs(executed, "stream"))
    undeclared = re.search(r"measured main parameters not declared: \[(.*)\]", printed)
    assert undeclared and undeclared.group(1), printed  # the first audit finds one
    before, after = re.search(r"before: (\S+) \| after: (\S+)", printed).groups()
    assert before == "negative" and after != "negative", printed
    assert "same as the run's: True" in printed
    assert any("P2B-4" in html and "PASS" in html for html in shown)  # the rule that failed passes


@pytest.mark.slow
def test_the_rendered_notebook_shows_the_summary(executed, tmp_path):
    from nbconvert import HTMLExporter

    from auditor.report.browser import Chromium, file_url, find_chromium

    if find_chromium() is None:
        pytest.skip("no Chromium (Debian `chromium`) to look at the rendered notebook")
    body, _ = HTMLExporter(template_name="basic").from_notebook_node(executed)
    page = tmp_path / "notebook.html"
    page.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>{body}</body></html>')
    with Chromium() as browser:
        view = browser.view(file_url(page), 1280, height=2400, screenshot=True)
    assert not view.console_errors, view.console_errors
    import matplotlib.image

    pixels = matplotlib.image.imread(io.BytesIO(view.screenshot), format="png")
    inked = (pixels[..., :3].mean(axis=2) < 0.9).mean()
    assert inked > 0.02, "the rendered notebook is blank"
    (Path(tmp_path) / "notebook.png").write_bytes(view.screenshot)
