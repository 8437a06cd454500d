"""Reading a tree library's JSON model dump before its checker walks it: one place for the errors every JSON kind
(XGBoost, CatBoost) gives for text that is not JSON, nested too deeply, not UTF-8, or not that library's dump, and
for the size of JSON each kind reads.

JSON costs memory far beyond its bytes. Measured on this machine (peak resident memory of the whole load, per MB of
JSON, beyond ~0.3 GB for the libraries themselves; `json.loads` and our checker alone: 4.5-6.5x): XGBoost 18-20x
(its own parse of the JSON ~13x, the tree arrays ~7x), CatBoost up to 60x for deep oblivious trees (each tree of
depth 10 becomes 2,047 nodes of tree arrays), a LightGBM dump 4.6x. `JSON_CAPS` keeps the whole load under ~2 GB,
so that a 4 GB machine survives; a larger model needs `AUDITOR_MAX_JSON_MODEL_MB` on a machine with the memory.
The caps hold for the files and for the JSON a library writes in the rehearsal (a .cbm or UBJSON file's export).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.models.rehearsal import JSON_CAP_ENV, TOO_LARGE, MiB

JSON_CAPS = {"XGBoost": 64 * MiB, "CatBoost": 24 * MiB, "LightGBM": 256 * MiB}  # measured: the module docstring


def json_cap(library: str) -> int:
    """Bytes of `library`'s JSON this tool reads: JSON_CAPS, or `AUDITOR_MAX_JSON_MODEL_MB` for every kind."""
    text = os.environ.get(JSON_CAP_ENV, "").strip()
    if not text:
        return JSON_CAPS[library]
    if not text.isdigit() or int(text) < 1:
        raise InputError(f"{JSON_CAP_ENV}={text[:20]} is not a whole number of MiB", where=JSON_CAP_ENV,
                         fix="set it to the MiB of JSON model a load may read, or unset it")
    return int(text) * MiB


def check_json_size(size: int, *, file: Path, library: str) -> None:
    """InputError unless `size` bytes of `library` JSON are within its cap (before the bytes are parsed)."""
    cap = json_cap(library)
    if size > cap:
        raise InputError(f"the model is {size / MiB:,.1f} MiB of {library} JSON, more than the {cap / MiB:,.0f} MiB "
                         "this tool reads (loading and checking it takes many times its size in memory)", file=file,
                         fix=TOO_LARGE)


def parse_json_dump(text: bytes, *, file: Path, library: str, key: str, save_again: str, save_json: str,
                    what: str = "the model") -> dict[str, Any]:
    """The dump as a dict whose `key` is an object, else InputError naming the file (and the line and column of a
    JSON syntax error); `library` is written with its article ("an XGBoost"), `save_again` / `save_json` are the
    fixes for a damaged file and for a file that is not the library's JSON dump."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", file=file, where=f"{exc.lineno}:{exc.colno}",
                         fix=save_again) from None
    except (RecursionError, UnicodeDecodeError) as exc:
        problem = "nested too deeply" if isinstance(exc, RecursionError) else "not UTF-8 text"
        raise InputError(f"{what} is not {library} JSON model ({problem})", file=file, fix=save_again) from None
    if not isinstance(doc, dict) or not isinstance(doc.get(key), dict):
        raise InputError(f"not {library} JSON model (no `{key}` object)", file=file, fix=save_json)
    return doc
