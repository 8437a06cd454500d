"""report.pdf's approval form: a status field shown at the top of every page ("Draft — awaiting approval by …") and an
empty, visible signature field on the cover, added in the revision the tool certifies (DocMDP level 2: filling
forms and signing allowed); `auditor approve` fills the status ("Approved by …, role, date") and signs that field in
one incremental update, which `auditor.trust.pdf_revisions` then holds to exactly those changes.

Appearances are drawn here (PDF/A wants every widget drawn and its fonts embedded): DejaVu Sans, the report's own
font, cut to the characters used and scaled to 1,000 units per em (pyHanko writes glyph widths in the font's own
units, which only a 1,000-unit font gets right)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from io import BytesIO
from pathlib import Path
from typing import Any

from auditor.trust.layout import APPROVAL_FIELD, APPROVAL_SLOT, STATUS_FIELD

FONTS = Path(__file__).resolve().parents[2] / "report_templates" / "fonts"
FONT, BOLD = FONTS / "DejaVuSans.ttf", FONTS / "DejaVuSans-Bold.ttf"
MM = 72 / 25.4
STATUS_SIZE = (92 * MM, 4.6 * MM)  # the status widget, right-aligned in the top margin of every page
STATUS_TOP = 8.2 * MM  # its top edge below the page's
STATUS_RIGHT = 14 * MM  # the page's right margin (print-layout.css)
APPROVAL_SIZE = (80 * MM, 16 * MM)  # the cover's approval box (`.approval-field` in print-layout.css)
FONT_SIZE = 7
STATUS_FONT_SIZE = 8
ALWAYS = "0123456789:-. UTC…"  # besides the text given: what pyHanko fills in for `%(ts)s`, and the cut's ellipsis
AWAITING_SIGNATURE = "Approval signature: awaiting the approver (auditor approve)"
DRAFT_COLOUR = (0.55, 0.11, 0.11)
DECIDED_COLOUR = {"approved": (0.09, 0.4, 0.2), "rejected": (0.55, 0.11, 0.11)}
FIELD_READ_ONLY = 1  # /Ff bit 1: a reader's viewer does not let anyone type into the status


def awaiting(approver: str | None) -> str:
    """The status of a signed report nobody has approved yet."""
    return f"Draft — awaiting approval by {_one_line(approver)}" if approver else "Draft — awaiting approval"


def decided(decision: str, approver: str, day: str) -> str:
    """The status after `auditor approve`: "Approved by Jane Roe, Head of Model Risk, 2026-11-29"."""
    return f"{decision.capitalize()} by {_one_line(approver)}, {day}"


def _one_line(text: str) -> str:
    """A person's name as one line of printable text (a status is one line; the names are the spec's and `--as`)."""
    return " ".join("".join(c if c.isprintable() else " " for c in text).split())


# --- adding the form (before the certification) ---------------------------------------------------------------------

def add_approval_form(writer: Any, status: str) -> None:
    """The status field, one widget at the top of every page, and the empty approval signature field on the cover
    (where the report reserved its box, `APPROVAL_SLOT`; at the foot of the cover for a report that did not)."""
    generic = _pdf()
    from pyhanko.sign import fields

    name = generic.NameObject
    # one text field a page, each its own widget, under one parent (`AuditorStatus.1`, `.2`, …): a form filler
    # (and pyHanko's difference analysis) updates a field's value and drawing together
    parent = generic.DictionaryObject({
        name("/FT"): name("/Tx"), name("/T"): generic.TextStringObject(STATUS_FIELD),
        name("/TU"): generic.TextStringObject("Approval status of this report"),
        name("/Ff"): generic.NumberObject(FIELD_READ_ONLY),
        name("/DA"): generic.TextStringObject(f"/F1 {FONT_SIZE} Tf 0 g"),
    })
    parent_ref = writer.add_object(parent)
    appearance = writer.add_object(_text_xobject(writer, status, STATUS_SIZE, DRAFT_COLOUR))
    kids = generic.ArrayObject()
    for index in range(int(writer.root["/Pages"]["/Count"])):
        page_ref = writer.find_page_for_modification(index)[0]
        page = page_ref.get_object()
        box = page["/MediaBox"]
        width, height = float(box[2]), float(box[3])
        right, top = width - STATUS_RIGHT, height - STATUS_TOP
        widget = generic.DictionaryObject({
            name("/T"): generic.TextStringObject(str(index + 1)), name("/V"): generic.TextStringObject(status),
            name("/Type"): name("/Annot"), name("/Subtype"): name("/Widget"), name("/Parent"): parent_ref,
            name("/Rect"): _rect(right - STATUS_SIZE[0], top - STATUS_SIZE[1], right, top),
            name("/F"): generic.NumberObject(4), name("/P"): page_ref,
            name("/AP"): generic.DictionaryObject({name("/N"): appearance}),
        })
        widget_ref = writer.add_object(widget)
        kids.append(widget_ref)
        _append_annotation(writer, page_ref, widget_ref)
    parent[name("/Kids")] = kids
    _acroform(writer)["/Fields"].append(parent_ref)
    writer.update_root()
    page_index, box = _approval_box(writer)
    # the approval's signature locks every field: after it, the status cannot change (a viewer enforces it too)
    fields.append_signature_field(writer, fields.SigFieldSpec(
        APPROVAL_FIELD, on_page=page_index, box=box,
        field_mdp_spec=fields.FieldMDPSpec(fields.FieldMDPAction.ALL)))
    approval = field_ref(writer.root, APPROVAL_FIELD)
    size = (box[2] - box[0], box[3] - box[1])
    approval.get_object()["/AP"] = generic.DictionaryObject({name("/N"): writer.add_object(
        _text_xobject(writer, AWAITING_SIGNATURE, size, (0.35, 0.38, 0.43), frame=True))})
    writer.mark_update(approval)


def _acroform(writer: Any) -> Any:
    generic = _pdf()

    root = writer.root
    if "/AcroForm" not in root:
        root[generic.NameObject("/AcroForm")] = writer.add_object(generic.DictionaryObject(
            {generic.NameObject("/Fields"): generic.ArrayObject()}))
    form = root["/AcroForm"]
    if isinstance(root.raw_get("/AcroForm"), generic.IndirectObject):
        writer.mark_update(root.raw_get("/AcroForm"))
    return form


def _append_annotation(writer: Any, page_ref: Any, annotation: Any) -> None:
    generic = _pdf()

    page = page_ref.get_object()
    raw = page.raw_get("/Annots") if "/Annots" in page else None
    if raw is None:
        page[generic.NameObject("/Annots")] = generic.ArrayObject([annotation])
    else:
        page["/Annots"].append(annotation)
        if isinstance(raw, generic.IndirectObject):
            writer.mark_update(raw)
    writer.mark_update(page_ref)


def _approval_box(writer: Any) -> tuple[int, tuple[int, int, int, int]]:
    """Where the cover reserved the approval box: the named destination `APPROVAL_SLOT` gives its page and its
    top-left corner; without one, the foot of the first page's right half."""
    pages = [writer.find_page_for_modification(i)[0] for i in range(int(writer.root["/Pages"]["/Count"]))]
    target = dict(_destinations(writer.root)).get(APPROVAL_SLOT)
    width_box, height_box = APPROVAL_SIZE
    if target is not None and len(target) >= 4:
        page_ref, left, top = target.raw_get(0), float(target[2]), float(target[3])
        index = next((i for i, ref in enumerate(pages) if ref.idnum == page_ref.idnum), None)
        if index is not None:
            return index, _points(left, top - height_box, left + width_box, top)
    first = pages[0].get_object()
    width = float(first["/MediaBox"][2])
    right = width - STATUS_RIGHT
    return 0, _points(right - width_box, 20 * MM, right, 20 * MM + height_box)


def _points(*values: float) -> tuple[int, int, int, int]:
    left, bottom, right, top = (round(v) for v in values)
    return left, bottom, right, top


def _destinations(root: Any) -> Iterator[tuple[str, Any]]:
    """The document's named destinations (the name tree under /Names /Dests), as (name, array)."""
    names = entry(root, "/Names")
    if names is None or "/Dests" not in names:
        return
    pending = [names["/Dests"]]
    seen = 0
    while pending and seen < 100_000:
        node = pending.pop()
        seen += 1
        pending.extend(entry(node, "/Kids", []))
        pairs = entry(node, "/Names", [])
        for index in range(0, len(pairs) - 1, 2):
            value = pairs[index + 1]
            yield str(pairs[index]), entry(value, "/D", value) if isinstance(value, dict) else value


# --- filling it (the approval) ---------------------------------------------------------------------------------------

def fill_status(writer: Any, status: str, decision: str) -> None:
    """The status's value and drawing on every page, in the writer's (incremental) revision."""
    generic = _pdf()

    ref = field_ref(writer.root, STATUS_FIELD)
    if ref is None:
        raise ValueError("report.pdf has no approval status field")
    appearance = writer.add_object(_text_xobject(writer, status, STATUS_SIZE, DECIDED_COLOUR[decision]))
    for kid in ref.get_object()["/Kids"]:
        widget = kid.get_object()
        widget[generic.NameObject("/V")] = generic.TextStringObject(status)
        widget[generic.NameObject("/AP")] = generic.DictionaryObject({generic.NameObject("/N"): appearance})
        writer.mark_update(kid)


def has_approval_form(root: Any) -> bool:
    """Whether a report.pdf was certified with the approval form (runs signed before it allow no changes)."""
    return field_ref(root, STATUS_FIELD) is not None and field_ref(root, APPROVAL_FIELD) is not None


def field_ref(root: Any, name: str) -> Any:
    """The reference of the document's top-level form field named `name`, or None."""
    generic = _pdf()

    form = entry(root, "/AcroForm")
    for ref in entry(form, "/Fields", []) if form is not None else []:
        if isinstance(ref, generic.IndirectObject) and str(entry(ref.get_object(), "/T", "")) == name:
            return ref
    return None


def entry(dictionary: Any, key: str, default: Any = None) -> Any:
    """A PDF dictionary's value, resolved (pyHanko's `get` gives the raw reference)."""
    if key in dictionary:
        return dictionary[key]
    return default


def stamp_style(text: str) -> Any:
    """The approval signature's drawing in the cover's box: who decided, in which role, when (`%(ts)s`: the signing
    time, UTC), by which certificate — drawn in the report's font (embedded, as PDF/A wants)."""
    from pyhanko.pdf_utils import layout
    from pyhanko.pdf_utils.text import TextBoxStyle
    from pyhanko.stamp import TextStampStyle

    return TextStampStyle(
        stamp_text=text, border_width=1, background=None, timestamp_format="%Y-%m-%d %H:%M:%S UTC",
        text_box_style=TextBoxStyle(font=_font(text), font_size=FONT_SIZE, leading=FONT_SIZE + 2),
        inner_content_layout=layout.SimpleBoxLayoutRule(
            x_align=layout.AxisAlignment.ALIGN_MIN, y_align=layout.AxisAlignment.ALIGN_MID,
            margins=layout.Margins(6, 6, 4, 4), inner_content_scaling=layout.InnerScaling.SHRINK_TO_FIT))


# --- drawing ---------------------------------------------------------------------------------------------------------

def _text_xobject(writer: Any, text: str, size: tuple[float, float], colour: tuple[float, float, float], *,
                  frame: bool = False) -> Any:
    """One line of text in a box of `size`, shrunk to fit when long: the status (bold, right-aligned), or with
    `frame` the unsigned approval field (a grey box, the text centred)."""
    from pyhanko.pdf_utils import layout
    from pyhanko.pdf_utils.text import TextBox, TextBoxStyle
    from pyhanko.pdf_utils.writer import init_xobject_dictionary

    rule = layout.SimpleBoxLayoutRule(
        x_align=layout.AxisAlignment.ALIGN_MID if frame else layout.AxisAlignment.ALIGN_MAX,
        y_align=layout.AxisAlignment.ALIGN_MID, margins=layout.Margins(*(4 * (6 if frame else 0,))),
        inner_content_scaling=layout.InnerScaling.SHRINK_TO_FIT)
    style = TextBoxStyle(font=_font(text, FONT if frame else BOLD), font_size=FONT_SIZE if frame else STATUS_FONT_SIZE,
                         box_layout_rule=rule, text_color=colour)
    box = TextBox(style, writer, box=layout.BoxConstraints(width=size[0], height=size[1]))
    box.content = text
    drawn = box.as_form_xobject()
    if not frame:
        return drawn
    width, height = size
    background = b"q 0.95 0.95 0.95 rg 0 0 %g %g re f 0.6 0.6 0.6 RG 0.5 w 0 0 %g %g re S Q " % (
        width, height, width, height)
    return init_xobject_dictionary(background + drawn.data, width, height, drawn["/Resources"])


def _font(text: str, path: Path = FONT) -> Any:
    from pyhanko.pdf_utils.font.opentype import GlyphAccumulator, GlyphAccumulatorFactory

    data = _font_bytes(frozenset(text), path)

    class Factory(GlyphAccumulatorFactory):
        def create_font_engine(self, writer: Any, obj_stream: Any = None) -> GlyphAccumulator:
            return GlyphAccumulator(writer=writer, font_handle=BytesIO(data), font_size=self.font_size,
                                    obj_stream=obj_stream)

    return Factory(font_file=str(path), font_size=FONT_SIZE)


# The form fonts: DejaVu cut to Latin, Greek, Cyrillic and common punctuation, at 1,000 units per em (`form_font`);
# reading one takes a tenth of the time of the whole font, which every signed run and approval would pay. Text with
# other characters falls back to the whole font, scaled when used.
FORM_RANGES = frozenset((*range(0x20, 0x250), *range(0x370, 0x530), *range(0x2000, 0x2070), 0x20AC, 0x2122))


def form_font_path(path: Path) -> Path:
    return path.with_name(path.stem + "-form.ttf")


def form_font(path: Path, out: Path) -> None:
    """Write the form font of `path` (how report_templates/fonts/*-form.ttf were made; tests/test_pdf_approval.py
    checks them against it)."""
    font = _cut(path, unicodes=sorted(FORM_RANGES), names=True)
    font.save(str(out))


@functools.lru_cache(maxsize=16)
def _font_bytes(characters: frozenset[str], path: Path) -> bytes:
    """A DejaVu font cut to `characters` (and the digits pyHanko's time stamp needs) at 1,000 units per em."""
    wanted = characters | set(ALWAYS)
    form = form_font_path(path)
    source = form if form.is_file() and all(ord(c) in FORM_RANGES for c in wanted) else path
    font = _cut(source, unicodes=sorted(ord(c) for c in wanted))
    out = BytesIO()
    font.save(out)
    return out.getvalue()


def _cut(path: Path, *, unicodes: Sequence[int], names: bool = False) -> Any:
    """The font at `path` cut to `unicodes`, at 1,000 units per em (pyHanko writes glyph widths in font units)."""
    import logging

    from fontTools import subset
    from fontTools.ttLib import TTFont
    from fontTools.ttLib.scaleUpem import scale_upem

    logging.getLogger("fontTools").setLevel(logging.ERROR)  # "FFTM NOT subset": a table no PDF reader uses
    font = TTFont(str(path))
    options = subset.Options()
    options.layout_features = ["*"]
    options.notdef_outline = True
    if names:  # the form fonts keep the family's names and licence
        options.name_IDs = ["*"]
        options.name_languages = ["*"]
    cutter = subset.Subsetter(options)
    cutter.populate(unicodes=list(unicodes))
    cutter.subset(font)
    if font["head"].unitsPerEm != 1000:
        scale_upem(font, 1000)
    return font


def _pdf() -> Any:
    """pyHanko's PDF object types (its constructors carry no type hints)."""
    from pyhanko.pdf_utils import generic

    return generic


def _rect(*values: float) -> Any:
    generic = _pdf()

    return generic.ArrayObject([generic.FloatObject(round(v, 3)) for v in values])
