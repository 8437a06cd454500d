"""Regenerate the page samples of docs/report-example.md from the bundled example's current report.

Runs the bookstore audit (unsigned, into a temporary folder), renders the chosen pages of report.pdf with poppler
(pdftoppm) and screenshots report.html in headless Chromium at a phone's and a desktop's width. Needs poppler-utils
and chromium (Debian packages). Usage, from the repository root:

    .venv/bin/python docs/report-pages/regenerate.py
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
# page samples: (file name, a heading the page must show); the page is found by its text, so the samples follow
# the report when sections move
PAGES = [("bookstore-cover", "Contents"), ("bookstore-summary", "Findings by severity"),
         ("bookstore-local", "(local_explanations)"), ("bookstore-surrogate", "(surrogate)"),
         ("bookstore-exposure", "(exposure)"),
         ("bookstore-appendix", "Appendix B — The spec, inputs, verification and the full tables")]
WIDTHS = {"bookstore-phone": 390, "bookstore-desktop": 1280}


def main() -> int:
    sys.path.insert(0, str(ROOT))
    from auditor.report.browser import Chromium, file_url
    from auditor.run.engine import run_audit

    for tool in ("pdftoppm", "pdftotext"):
        if shutil.which(tool) is None:
            print(f"{tool} is missing: apt-get install poppler-utils", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        spec = yaml.safe_load((ROOT / "examples" / "bookstore" / "audit.yaml").read_text())
        spec.pop("signing", None)
        for key in ("model", "dataset", "background"):
            spec[key]["path"] = str(ROOT / "examples" / "bookstore" / spec[key]["path"])
        spec["output"] = {"dir": str(folder / "runs"), "formats": ["html", "pdf"]}
        (folder / "audit.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        run = run_audit(folder / "audit.yaml").run_dir
        pdf = run / "report.pdf"
        pages = int(re.search(r"Pages:\s+(\d+)", subprocess.run(["pdfinfo", str(pdf)], capture_output=True,
                                                                 text=True, check=True).stdout).group(1))
        texts = [subprocess.run(["pdftotext", "-f", str(n), "-l", str(n), str(pdf), "-"], capture_output=True,
                                text=True, check=True).stdout for n in range(1, pages + 1)]
        for name, heading in PAGES:
            # the contents page names every section: look past it, but for the cover itself
            page = next(n for n, text in enumerate(texts, 1) if heading in text and (n > 1 or name.endswith("cover")))
            subprocess.run(["pdftoppm", "-r", "60", "-png", "-singlefile", "-f", str(page), "-l", str(page), str(pdf),
                            str(OUT / name)], check=True)
            print(f"{name}.png: page {page} of {pages}")
        with Chromium() as browser:
            for name, width in WIDTHS.items():
                view = browser.view(file_url(run / "report.html"), width, height=1100 if width > 600 else 844,
                                    screenshot=True)
                (OUT / f"{name}.png").write_bytes(view.screenshot)
                print(f"{name}.png: {width} px wide, page scroll width {view.scroll_width}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
