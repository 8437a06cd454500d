"""JSON from a folder nobody vouches for: the envelopes, statements, evidence.json and the PDF's attachment."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64  # evidence.json is 8 levels deep, the statement 5


class BadJSON(ValueError):
    """JSON that verify refuses: not UTF-8, not JSON, a duplicate key, NaN or Infinity, nested too deeply."""


class _DuplicateKey(Exception):
    pass


def strict_json(data: bytes, what: str) -> Any:
    """Parse `data` refusing what parsers disagree on: with a key twice, Python's json keeps the last value and
    others the first, so a forged `payload` before the genuine one would show two readers two documents."""
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except UnicodeDecodeError:
        raise BadJSON(f"{what} is not UTF-8") from None
    except _DuplicateKey as exc:
        raise BadJSON(f"duplicate key {str(exc.args[0])[:40]!r} in {what}") from None
    except RecursionError:
        raise BadJSON(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise BadJSON(f"{what} is not JSON ({exc.msg}, line {exc.lineno})") from None
    except ValueError as exc:  # NaN or Infinity
        raise BadJSON(f"{what} is not JSON ({exc})") from None
    if _too_deep(value):
        raise BadJSON(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def json_object(value: object) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one: a part of an untrusted document that may be missing or of
    another type."""
    return value if isinstance(value, dict) else {}


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The dotted path of the first value that differs between two parsed JSON documents, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}{key}"
            found = first_difference(a[key], b[key], f"{path}{key}.")
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return path.rstrip(".") or None
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}{index}.")
            if found is not None:
                return found
        return None
    return None if a == b and type(a) is type(b) else path.rstrip(".")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    value = dict(pairs)
    if len(value) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _too_deep(value: Any) -> bool:
    """Whether `value` nests more than MAX_JSON_DEPTH levels (iterative: the comparisons after it recurse)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            if level > MAX_JSON_DEPTH:
                return True
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False
