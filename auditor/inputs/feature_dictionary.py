"""The feature dictionary: what each feature means and its unit, from the spec's `features:` block and an optional
CSV (`feature_dictionary:`), checked against the data's feature names. A regulator reads the report's figures
through it (AI Act Annex IV 2(d): the data's characteristics; P2B Art. 5: parameters described in plain words).
"""

from __future__ import annotations

import csv
import difflib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from auditor.core.display import code_point, flagged
from auditor.core.errors import InputError
from auditor.core.files import MAX_SMALL_BYTES, read_bytes

_YES_NO = {"yes/no", "no/yes", "y/n", "boolean", "bool", "flag", "true/false"}


def is_yes_no(unit: str | None) -> bool:
    """Whether a feature dictionary's unit says 0/1 means no/yes."""
    return (unit or "").replace(" ", "").lower() in _YES_NO


def build(inline: dict[str, Any], file: Path | None, names: list[str], *, spec_file: Path) -> dict[str, dict]:
    """{feature: {"meaning", "unit"}} for the features described; unknown names are bad input with the nearest."""
    out: dict[str, dict] = {}
    if file is not None:
        known = set(names)
        first: dict[str, int] = {}  # the line each feature is described on
        for line, name, info in _read_csv(file):  # checked row by row: a bad file stops at its first bad row
            if name not in known:
                _known(name, names, file=file, where=str(line))
            if name in first:  # the later row replaced the earlier one, without a word
                raise InputError(f"feature '{name[:40]}' is described twice (first on line {first[name]})", file=file,
                                 where=str(line), fix="describe each feature once")
            first[name] = line
            out[name] = info
    for name, info in inline.items():
        _known(name, names, file=spec_file, where=f"features.{name}")
        out[name] = {"meaning": info.meaning, "unit": info.unit}
    return {name: out[name] for name in names if name in out}  # in the data's feature order


def _known(name: str, names: list[str], *, file: Path, where: str) -> None:
    if name not in names:
        near = difflib.get_close_matches(name, names, n=1)
        raise InputError(f"'{name}' is not a feature of the data", file=file, where=where,
                         fix=f"did you mean '{near[0]}'?" if near else "use the data's feature names")


def _read_csv(path: Path) -> Iterator[tuple[int, str, dict]]:
    try:
        text = read_bytes(path, limit=MAX_SMALL_BYTES, what="feature dictionary").decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("the feature dictionary is not UTF-8 text", file=path, fix="save it as UTF-8 CSV") from None
    reader = csv.DictReader(io.StringIO(text))
    columns = [c.strip().lower() for c in reader.fieldnames or []]
    if "name" not in columns or "meaning" not in columns:
        raise InputError("the feature dictionary needs the columns `name` and `meaning` (and optionally `unit`)",
                         file=path, where="1", fix="add a header line: name,meaning,unit")
    try:
        for row in reader:
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items() if isinstance(v, str)}
            if not row.get("name"):
                continue
            if not row.get("meaning"):
                raise InputError(f"feature '{row['name']}' has no meaning", file=path, where=str(reader.line_num),
                                 fix="say in a few words what the feature measures")
            yield reader.line_num, row["name"], {"meaning": row["meaning"], "unit": row.get("unit") or None}
    except csv.Error as exc:
        raise InputError(f"not valid CSV ({exc})", file=path, where=str(reader.line_num),
                         fix="check quotes and commas on that line") from None


def name_warning(name: str, most: int = 8) -> str | None:
    """Why a feature's name is not what it looks like, by code point: letters of another script mixed in (a
    Cyrillic "ѕponsored", U+0455, passes for the paid-placement flag), letters that only look Latin, characters
    nobody sees. The dictionary prints it beside the name; None for a plain name."""
    found = flagged(name)
    if not found:
        return None
    listed = "; ".join(f"{code_point(char)} at position {position} "
                       f"({'invisible' if why.startswith('invisible') else 'a letter of another script'})"
                       for position, char, why in found[:most])
    more = f"; and {len(found) - most} more" if len(found) > most else ""
    return f"⚠ This name is not what it looks like: {listed}{more}."
