"""Reading a tree library's JSON model dump before its checker walks it: one place for the errors every JSON kind
(XGBoost, CatBoost) gives for text that is not JSON, nested too deeply, not UTF-8, or not that library's dump."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from auditor.errors import InputError


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
