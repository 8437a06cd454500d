"""What may follow the signed revision of report.pdf: long-term validation updates (validation data in the DSS,
document timestamps in invisible signature fields, the XMP and Info dates), and once, the approval: the approval
status's value and drawings, and the signature in the cover's approval field (`auditor.trust.pdf_form`).

pyHanko's difference analysis says the same, but walks the whole structure tree once per object of an object
stream: minutes on a tagged report. This check reads only the objects the later revisions touch."""

from __future__ import annotations

import functools
from io import BytesIO
from typing import Any

from auditor.trust.layout import APPROVAL_FIELD, PDF_FIELD, STATUS_FIELD
from auditor.trust.pdf_form import entry, field_ref


def pdf_reader(data: bytes) -> Any:
    """pyHanko's reader of a PDF's bytes, lenient (WeasyPrint's files are read as written), for reading only. The
    same bytes get the same reader (the last two PDFs' are kept): opening one parses every revision's
    cross-reference stream in Python (~90 ms for a report), and one `verify` reads report.pdf in four checks. Code
    that hands a reader to pyHanko to write a new revision takes `fresh_reader`."""
    return _shared_reader(bytes(data))


@functools.lru_cache(maxsize=2)
def _shared_reader(data: bytes) -> Any:
    return fresh_reader(data)


def fresh_reader(data: bytes) -> Any:
    """A reader of its own (see `pdf_reader`)."""
    from pyhanko.pdf_utils.reader import PdfFileReader

    return PdfFileReader(BytesIO(data), strict=False)


def certification(reader: Any) -> Any:
    """report.pdf's certifying signature, the tool's (in `PDF_FIELD`; the approver's is another), or None."""
    return next((s for s in reader.embedded_regular_signatures if s.field_name == PDF_FIELD), None)


def certified_length(data: bytes) -> int:
    """The length of report.pdf's certified revision: where the byte range of its certifying signature ends."""
    return covered_end(certification(pdf_reader(data)))


def covered_end(signature: Any) -> int:
    """Where a signature's byte range ends: the end of the revision it signs."""
    byte_range = [int(n) for n in signature.byte_range]
    return byte_range[2] + byte_range[3]


LATER_CATALOG_KEYS = {"/DSS", "/AcroForm", "/Extensions"}  # what LTA updates may change in the catalog
LATER_INFO_KEYS = {"/ModDate", "/Producer"}
LATER_ACROFORM_KEYS = {"/Fields", "/SigFlags"}
APPROVAL_CHANGES = {"status-widget": {"/V", "/AP"}, "approval": {"/V", "/AP"}}  # the approval's revision


def later_revision_problem(reader: Any, signed_revision: int) -> str | None:
    """Why the revisions after `signed_revision` are more than long-term-validation updates (validation data in the
    DSS, document timestamps in invisible signature fields, the XMP and Info dates) and one approval (the status's
    value and drawings, the approval field's signature), or None."""
    from pyhanko.pdf_utils import generic

    xrefs = reader.xrefs
    for revision in range(signed_revision + 1, xrefs.total_revisions):
        old, new = reader.get_historical_resolver(revision - 1), reader.get_historical_resolver(revision)
        roles = _roles(new)
        approving = _signs_approval(old, new)
        for ref in xrefs.explicit_refs_in_revision(revision):
            if xrefs.get_introducing_revision(ref) >= revision:
                continue  # a new object matters only where a changed object points to it (checked below)
            before, after = old.get_object(ref), new.get_object(ref)
            role = roles.get((ref.idnum, ref.generation), "")
            if isinstance(after, generic.StreamObject):
                if role != "metadata":
                    return f"revision {revision} changes a stream of the signed document (object {ref.idnum})"
                continue
            if isinstance(after, generic.ArrayObject) and isinstance(before, generic.ArrayObject):
                if role == "contents" or list(after[:len(before)]) != list(before):
                    return f"revision {revision} changes an array of the signed document (object {ref.idnum})"
                if role == "annots":
                    problem = _new_annotations(after[len(before):], revision)
                    if problem:
                        return problem
                continue
            if not isinstance(after, generic.DictionaryObject) or not isinstance(before, generic.DictionaryObject):
                return f"revision {revision} replaces object {ref.idnum} of the signed document"
            changed = {k for k in set(after) | set(before) if after.get(k) != before.get(k)}
            allowed = {"catalog": LATER_CATALOG_KEYS, "info": LATER_INFO_KEYS, "acroform": LATER_ACROFORM_KEYS,
                       "dss": set(after) | set(before), "page": {"/Annots"},
                       **(APPROVAL_CHANGES if approving else {})}.get(role, set())
            if changed - allowed:
                return (f"revision {revision} changes {', '.join(sorted(changed - allowed))} of object {ref.idnum} "
                        f"({role or 'not validation data'})")
            if role == "page" and "/Annots" in changed:
                old_annots = list(before.get("/Annots", generic.ArrayObject()))
                new_annots = list(after["/Annots"].get_object())
                if new_annots[:len(old_annots)] != old_annots:
                    return f"revision {revision} removes or reorders annotations of a page"
                problem = _new_annotations(new_annots[len(old_annots):], revision)
                if problem:
                    return problem
    return None


def _roles(resolver: Any) -> dict[tuple[int, int], str]:
    """(object number, generation) of the objects LTA updates may touch, and what each is."""
    from pyhanko.pdf_utils import generic

    roles: dict[tuple[int, int], str] = {}

    def mark(value: Any, role: str) -> None:
        if isinstance(value, generic.IndirectObject):
            roles[(value.idnum, value.generation)] = role

    trailer = resolver.trailer_view
    root = trailer.raw_get("/Root")
    mark(root, "catalog")
    catalog = root.get_object()
    if "/Info" in trailer:
        mark(trailer.raw_get("/Info"), "info")
    for key, role in (("/Metadata", "metadata"), ("/AcroForm", "acroform"), ("/DSS", "dss")):
        if key in catalog:
            mark(catalog.raw_get(key), role)
    if "/AcroForm" in catalog and "/Fields" in catalog["/AcroForm"]:
        mark(catalog["/AcroForm"].raw_get("/Fields"), "fields")
        status = field_ref(catalog, STATUS_FIELD)
        if status is not None:
            mark(status, "status")
            for kid in entry(status.get_object(), "/Kids", ()):
                mark(kid, "status-widget")
        mark(field_ref(catalog, APPROVAL_FIELD), "approval")
    pending = [catalog.raw_get("/Pages")]
    while pending:
        node_ref = pending.pop()
        node = node_ref.get_object()
        if node.get("/Type") == "/Pages":
            pending.extend(node.raw_get("/Kids") if not isinstance(node.raw_get("/Kids"), generic.IndirectObject)
                           else node["/Kids"])
            continue
        mark(node_ref, "page")
        if "/Annots" in node:
            mark(node.raw_get("/Annots"), "annots")
        if "/Contents" in node:
            mark(node.raw_get("/Contents"), "contents")
            contents = node["/Contents"]
            if isinstance(contents, generic.ArrayObject):
                for part in contents:
                    mark(part, "contents")
    return roles


def _signs_approval(old: Any, new: Any) -> bool:
    """Whether this revision signs the approval field (unsigned in the revision before)."""
    before = field_ref(old.trailer_view["/Root"], APPROVAL_FIELD)
    after = field_ref(new.trailer_view["/Root"], APPROVAL_FIELD)
    return before is not None and after is not None and "/V" not in old.get_object(before) and \
        "/V" in new.get_object(after)


def _new_annotations(added: list[Any], revision: int) -> str | None:
    """Annotations a later revision adds must be invisible signature (or timestamp) widgets."""
    for item in added:
        annot = item.get_object()
        field_type = annot.get("/FT") or (annot["/Parent"].get_object().get("/FT") if "/Parent" in annot else None)
        rect = [float(v) for v in annot.get("/Rect", [0, 0, 0, 0])]
        invisible = len(rect) == 4 and (rect[2] - rect[0]) * (rect[3] - rect[1]) == 0
        if annot.get("/Subtype") != "/Widget" or field_type != "/Sig" or not invisible:
            return f"revision {revision} adds a visible annotation or a field that is not a signature"
    return None
