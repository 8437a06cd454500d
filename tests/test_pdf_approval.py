"""The approval inside report.pdf (issue 57, item 4): the tool certifies at DocMDP level 2 over a status field on
every page ("Draft — awaiting approval by …") and an empty approval signature field; the approval fills the status
and signs that field in one incremental update; pyHanko's own difference analysis calls it form filling, ours
accepts exactly that and refuses anything more.

Built on a two-page WeasyPrint PDF (pyHanko's difference analysis reads every object: a minute on a whole report);
tests/test_approval.py approves whole signed runs through the command."""

from __future__ import annotations

import hashlib
import types
from io import BytesIO
from pathlib import Path

import pytest
from typer.testing import CliRunner

from auditor.cli import app
from auditor.trust.layout import APPROVAL_FIELD, PDF_FIELD, STATUS_FIELD
from auditor.trust.pdf_approval import approve_pdf, check_pdf_approval, pinned
from auditor.trust.pdf_form import entry, field_ref
from auditor.trust.pdf_revisions import certification, later_revision_problem, pdf_reader
from auditor.trust.pdf_sign import sign_pdf
from tests.conftest import PASS

HTML = ('<html><body><h1>Report</h1><div id="approval-field" style="width:80mm;height:16mm"></div>'
        '<p style="break-before: page">page two</p></body></html>')


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tool's key and an approver's (two identities)."""
    root = tmp_path_factory.mktemp("keys")
    made = {}
    for who, name in (("tool", "auditor report signer"), ("approver", "Jane Roe")):
        result = CliRunner().invoke(app, ["keygen", "--out", str(root / who), "--passphrase-env", "TEST_KEY_PASS",
                                          "--name", name], env={"TEST_KEY_PASS": PASS})
        assert result.exit_code == 0, result.output
        made[who] = root / who
    return made


def _signer(folder: Path):
    from pyhanko.sign.signers import SimpleSigner

    return SimpleSigner.load_pkcs12(str(folder / "signer.p12"), passphrase=PASS.encode())


@pytest.fixture(scope="module")
def certified(keys: dict[str, Path]) -> bytes:
    from weasyprint import HTML as Page

    material = types.SimpleNamespace(timestamp_url=None, signer=_signer(keys["tool"]), details={"subject": "tool"})
    return sign_pdf(Page(string=HTML).write_pdf(), material, approver="Head of Model Risk")


def _statuses(pdf: bytes) -> list[str]:
    """The status each page shows, read from its widget."""
    reader = pdf_reader(pdf)
    values = []
    for page in reader.root["/Pages"]["/Kids"]:
        widgets = [a.get_object() for a in page.get_object()["/Annots"]
                   if "/Parent" in a.get_object() and str(a.get_object()["/Parent"].get("/T")) == STATUS_FIELD]
        assert len(widgets) == 1
        values.append(str(widgets[0]["/V"]))
    return values


def _approved(certified: bytes, keys: dict[str, Path], **changes) -> bytes:
    options = {"decision": "approved", "approver": "Jane Roe, Head of Model Risk", "day": "2026-11-29",
               "reason": None, "certificate_subject": "CN=Jane Roe", **changes}
    return approve_pdf(certified, _signer(keys["approver"]), **options)


def _validated(pdf: bytes, keys: dict[str, Path]) -> dict[str, object]:
    """pyHanko's validation, with its difference analysis, of every signature: field -> status."""
    from pyhanko.keys import load_cert_from_pemder
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko_certvalidator import ValidationContext

    context = ValidationContext(trust_roots=[load_cert_from_pemder(str(keys[who] / "signer-cert.pem"))
                                             for who in ("tool", "approver")])
    return {s.field_name: validate_pdf_signature(s, context) for s in pdf_reader(pdf).embedded_regular_signatures}


def test_certified_for_form_filling_with_a_draft_status_on_every_page(certified: bytes) -> None:
    from pyhanko.sign.fields import MDPPerm

    reader = pdf_reader(certified)
    permissions = reader.root["/Perms"]["/DocMDP"]["/Reference"][0]["/TransformParams"]
    assert int(permissions["/P"]) == MDPPerm.FILL_FORMS.value  # level 2
    assert _statuses(certified) == ["Draft — awaiting approval by Head of Model Risk"] * 2
    approval = field_ref(reader.root, APPROVAL_FIELD).get_object()
    assert "/V" not in approval and approval.raw_get("/P").idnum == reader.root["/Pages"]["/Kids"].raw_get(0).idnum
    left, bottom, right, top = (float(v) for v in approval["/Rect"])
    assert round((right - left) / 72 * 25.4) == 80 and round((top - bottom) / 72 * 25.4) == 16
    for widget in (approval, *(k.get_object() for k in entry(field_ref(reader.root, STATUS_FIELD).get_object(),
                                                                "/Kids"))):
        assert "/N" in widget["/AP"] and int(widget["/F"]) & 4  # drawn and printed (PDF/A)
    assert pinned(certified) is None and check_pdf_approval(certified, certificate_sha256=None, decision=None) is None


def test_the_approval_is_form_filling_to_pyhanko_and_to_us(certified: bytes, keys: dict[str, Path]) -> None:
    approved = _approved(certified, keys)
    assert approved.startswith(certified)  # an incremental update
    assert _statuses(approved) == ["Approved by Jane Roe, Head of Model Risk, 2026-11-29"] * 2
    reader = pdf_reader(approved)
    assert later_revision_problem(reader, certification(reader).signed_revision) is None
    found = _validated(approved, keys)
    assert set(found) == {PDF_FIELD, APPROVAL_FIELD}
    assert found[PDF_FIELD].docmdp_ok and found[PDF_FIELD].modification_level.name == "FORM_FILLING"
    assert all(status.bottom_line for status in found.values()), found
    approver_sha256 = hashlib.sha256(found[APPROVAL_FIELD].signing_cert.dump()).hexdigest()
    verdict = check_pdf_approval(approved, certificate_sha256=approver_sha256, decision="approved",
                                 recorded=pinned(approved))
    assert verdict is not None and verdict.ok, verdict
    for wrong in ({"decision": "rejected"}, {"certificate_sha256": "0" * 64}, {"recorded": None}):
        arguments = {"certificate_sha256": approver_sha256, "decision": "approved", "recorded": pinned(approved),
                     **wrong}
        verdict = check_pdf_approval(approved, **arguments)
        assert verdict is not None and not verdict.ok, (wrong, verdict)


def test_anything_more_than_the_approval_is_refused(certified: bytes, keys: dict[str, Path]) -> None:
    """An update after the certification that fills the status without signing, changes the status again after
    the approval, or slips another change into the approval's revision, is not an approval."""
    from pyhanko.pdf_utils import generic
    from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter

    from auditor.trust.pdf_form import fill_status

    def problem(pdf: bytes) -> str | None:
        reader = pdf_reader(pdf)
        return later_revision_problem(reader, certification(reader).signed_revision)

    writer = IncrementalPdfFileWriter(BytesIO(certified))
    fill_status(writer, "Approved by nobody", "approved")
    out = BytesIO()
    writer.write(out)
    assert "status-widget" in (problem(out.getvalue()) or "")

    approved = _approved(certified, keys)
    writer = IncrementalPdfFileWriter(BytesIO(approved))
    fill_status(writer, "Approved by somebody else", "approved")
    out = BytesIO()
    writer.write(out)
    assert "status-widget" in (problem(out.getvalue()) or "")

    writer = IncrementalPdfFileWriter(BytesIO(certified))
    writer.root[generic.NameObject("/Lang")] = generic.TextStringObject("de")  # a change of the certified content
    writer.update_root()
    from pyhanko.sign import fields, signers

    from auditor.trust.pdf_form import stamp_style

    fill_status(writer, "Approved by Jane Roe", "approved")
    meta = signers.PdfSignatureMetadata(field_name=APPROVAL_FIELD, subfilter=fields.SigSeedSubFilter.PADES)
    mixed = signers.PdfSigner(meta, _signer(keys["approver"]), stamp_style=stamp_style("x")).sign_pdf(writer)
    assert "/Lang" in (problem(mixed.getvalue()) or "")
    assert not _validated(mixed.getvalue(), keys)[PDF_FIELD].docmdp_ok  # pyHanko agrees


def test_the_shipped_form_fonts_are_the_cut_of_the_report_s_fonts(tmp_path: Path) -> None:
    """report_templates/fonts/*-form.ttf are what `form_font` makes of the report's fonts (same characters, 1,000
    units per em, the family's licence in their names); a name outside them falls back to the whole font."""
    from fontTools.ttLib import TTFont

    from auditor.trust.pdf_form import BOLD, FONT, FORM_RANGES, _font_bytes, form_font, form_font_path

    for source in (FONT, BOLD):
        fresh = tmp_path / source.name
        form_font(source, fresh)
        shipped, made = TTFont(str(form_font_path(source))), TTFont(str(fresh))
        assert shipped["head"].unitsPerEm == made["head"].unitsPerEm == 1000
        assert shipped.getBestCmap() == made.getBestCmap() and set(made.getBestCmap()) <= FORM_RANGES
        assert shipped.getGlyphOrder() == made.getGlyphOrder()
        assert "Copyright (c) 2003 by Bitstream" in str(shipped["name"].getDebugName(0))  # the notice kept
    beyond = TTFont(__import__("io").BytesIO(_font_bytes(frozenset("Zoë Ωmega Ж ש"), FONT)))
    assert ord("ש") in beyond.getBestCmap() and beyond["head"].unitsPerEm == 1000  # Hebrew: the whole font
