"""The evidence.json attached to report.pdf (PDF/A-3) against the run folder's."""

from __future__ import annotations

from typing import Any

from auditor.core.files import MAX_JSON_BYTES
from auditor.trust.certificates import quiet_pyhanko
from auditor.trust.layout import ATTACHMENT
from auditor.trust.pdf_revisions import pdf_reader
from auditor.trust.strict_json import BadJSON, first_difference, strict_json
from auditor.trust.verdict import Verdict

# What report.pdf's attached evidence.json may hold in its `run` block (engine.reproducible_document): the rest of
# that block (times, durations, host, executor) stays in the folder's copy only.
ATTACHED_RUN_KEYS = {"evaluated_on", "note"}


def check_pdf_evidence(data: bytes, evidence: Any, file: str = "report.pdf") -> Verdict:
    """The evidence.json attached to report.pdf (or another PDF document of the run: PDF/A-3) equals the folder's
    evidence.json in every value but the `run` block, where it keeps only the evaluation day."""
    name = f"{file} (attached evidence.json)"
    if not isinstance(evidence, dict):
        return Verdict(False, name, "not compared: the folder's evidence.json does not read as a JSON object")
    with quiet_pyhanko():
        try:
            attached = strict_json(attachment(data, ATTACHMENT), "the attachment")
        except NoAttachment as exc:
            return Verdict(False, name, str(exc))
        except BadJSON as exc:
            return Verdict(False, name, f"the attachment does not read as JSON ({exc})")
        except Exception as exc:
            return Verdict(False, name, f"unreadable PDF ({type(exc).__name__})")
    if not isinstance(attached, dict):
        return Verdict(False, name, "the attachment is not a JSON object")
    run, attached_run = evidence.get("run"), attached.get("run")
    if not isinstance(run, dict) or not isinstance(attached_run, dict) or set(attached_run) - ATTACHED_RUN_KEYS \
            or attached_run.get("evaluated_on") != run.get("evaluated_on"):
        return Verdict(False, name, "differs from evidence.json in the run block (evaluated_on)")
    try:
        where = first_difference({k: v for k, v in attached.items() if k != "run"},
                                 {k: v for k, v in evidence.items() if k != "run"})
    except RecursionError:
        return Verdict(False, name, "not compared: the attachment is nested too deeply")
    if where is not None:
        return Verdict(False, name, f"differs from evidence.json at {where or 'the top level'}")
    return Verdict(True, name, "equals evidence.json (all but the run block's times and host)")


class NoAttachment(Exception):
    """The PDF holds no single readable attachment of that name (the message says what it holds instead)."""


def attachment(data: bytes, filename: str) -> bytes:
    """The one embedded file named `filename`, inflated with a size cap (a stream may be a decompression bomb)."""
    import zlib

    reader = pdf_reader(data)
    try:
        names = reader.root["/Names"]["/EmbeddedFiles"]["/Names"]
    except KeyError:
        raise NoAttachment("no evidence.json attached (the PDF has no embedded files)") from None
    specs = [names[i + 1] for i in range(0, len(names) - 1, 2) if str(names[i]) == filename]
    if len(specs) != 1:
        raise NoAttachment(f"expected one attached {filename}, found {len(specs)}")
    stream = specs[0].get_object()["/EF"]["/F"].get_object()
    filters = stream.get("/Filter")
    raw: bytes = stream.encoded_data
    if filters is None:
        body = raw
    elif str(filters) == "/FlateDecode":
        inflate = zlib.decompressobj()
        body = inflate.decompress(raw, MAX_JSON_BYTES + 1)
        if len(body) > MAX_JSON_BYTES or inflate.unconsumed_tail:
            raise NoAttachment(f"the attached {filename} inflates beyond {MAX_JSON_BYTES >> 20} MiB")
    else:
        raise NoAttachment(f"the attached {filename} uses an unexpected filter {str(filters)[:40]}")
    return body
