"""`auditor implementation-report`: the draft of a system's audit implementation report (DSA Art. 37(6)) from the
register, written into a new folder; with the provider's person's key, adopted and signed by them
(`adoption.dsse.json`, trust/adoption.py). `--check FOLDER` verifies an adopted report offline."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError

STEM = "implementation-report"


def write_draft(register: Any, system: str, out: Path, *, formats: tuple[str, ...], today: dt.date,
                identity: Any = None, timestamp_url: str | None = None, tsa_roots: list[Any] | None = None) -> Path:
    """The draft (and, with `identity`, its adoption) in a new folder under `out`, complete or absent."""
    from auditor import __version__
    from auditor.report.implementation import draft
    from auditor.report.render import render_template, with_policy
    from auditor.run.engine import check_output_folder, rename_free

    check_output_folder(out)
    report = draft(register, system, today=today)
    html = with_policy(render_template("documents/implementation-report.html.j2",
                                       {"s": report, "version": __version__}, None))
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".implementation-", dir=out))
    try:
        files = []
        if "html" in formats:
            (tmp / f"{STEM}.html").write_text(html, encoding="utf-8")
            files.append(f"{STEM}.html")
        if "pdf" in formats:
            from auditor.report.pdf import fixed_date, render_pdf

            (tmp / f"{STEM}.pdf").write_bytes(render_pdf(html, attachment=None, date=fixed_date(today.isoformat()),
                                                         title="Audit implementation report"))
            files.append(f"{STEM}.pdf")
        if identity is not None:
            from auditor.trust.adoption import ADOPTION_FILE, sign_adoption

            (tmp / ADOPTION_FILE).write_bytes(sign_adoption(identity, tmp, files, document=STEM, system=system,
                                                            audit_run=report.audit_run, timestamp_url=timestamp_url,
                                                            tsa_roots=tsa_roots))
        slug = re.sub(r"[^a-z0-9]+", "-", system.lower()).strip("-")[:60] or "system"
        return rename_free(tmp, out, f"{STEM}-{slug}-{today.isoformat()}")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def check(folder: Path) -> str:
    """One line: who adopted the report in `folder` and when; InputError when it does not verify."""
    from auditor.trust.adoption import ADOPTION_FILE, check_adoption

    if not (folder / ADOPTION_FILE).is_file():
        raise InputError("no adoption statement: the report is an unadopted draft", file=folder / ADOPTION_FILE,
                         fix="adopt it: `auditor implementation-report --system S --key YOUR.p12`")
    try:
        adopted = check_adoption(folder)
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"the adoption does not verify: {exc}", file=folder / ADOPTION_FILE,
                         fix="draw the report again and have the provider's person adopt it") from None
    return f"adopted by {adopted.adopted_by} at {adopted.time}: {', '.join(adopted.files)} unchanged"
