"""Strict models read from YAML: `StrictModel` (unknown keys are errors, frozen, strict types) and
`validate_yaml`, which turns pydantic's first error into one line with the file, line:column, the key and a fix
(nearest-key suggestions). Used by the spec and the policy packs; imports no evidence and no ML library."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar, Union

from pydantic import BaseModel, ConfigDict, ValidationError

from auditor.errors import InputError
from auditor.yaml_io import KEY_MARK

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """Unknown keys are errors (with a nearest-key suggestion); values are frozen once validated; types are strict
    (`seed: "7"` is text, not a number), except paths and dates, which YAML can only write as text."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


def validate_yaml(model: type[M], raw: Any, marks: dict[tuple, tuple[int, int]], path: Path, *,
                  context: dict[str, Any] | None = None, tags: Mapping[str, type[BaseModel]] | None = None) -> M:
    """Validate parsed YAML against a model; the first error becomes one line with its position and a fix. `tags`
    names the members of a tagged union of one-key items (the spec's evidence kinds → their options models)."""
    try:
        return model.model_validate(raw, context=context)
    except ValidationError as exc:
        raise yaml_error(exc, path, marks, model, tags or {}) from None


def yaml_error(exc: ValidationError, path: Path, marks: dict[tuple, tuple[int, int]], root: type[BaseModel],
               tags: Mapping[str, type[BaseModel]]) -> InputError:
    """Turn pydantic's first error (first in file order) into one line with position and a fix."""
    errors = [dict(e, loc=_yaml_loc(e["loc"], tags)) for e in exc.errors()]
    # An unknown key usually causes the "missing" error of the key it misspells: report it first.
    errors.sort(key=lambda e: (e["type"] != "extra_forbidden", _position(e["loc"], marks, key=True)))
    error = errors[0]
    loc = error["loc"]
    line, column = _position(loc, marks, key=error["type"] in ("extra_forbidden", "missing"))
    dotted = ".".join(str(p) for p in loc) or "(top level)"
    where = f"{line}:{column}" if line else None
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(root, loc[:-1], tags)
        near = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.5)
        fix = f"did you mean '{near[0]}'?" if near else f"allowed keys: {', '.join(allowed)}"
        return InputError(f"unknown key '{loc[-1]}' in {'.'.join(map(str, loc[:-1])) or 'the spec'}", file=path,
                          where=where, fix=fix)
    if kind == "missing":
        return InputError(f"missing required key '{dotted}'", file=path, where=where,
                          fix=f"add `{loc[-1]}:` under {'.'.join(map(str, loc[:-1])) or 'the top level'}")
    if kind == "unknown_evidence":
        given = error["input"]
        names = list(tags)
        if isinstance(given, dict) and len(given) == 1:
            name = str(next(iter(given)))
            near = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
            fix = f"did you mean '{near[0]}'?" if near else f"known kinds: {', '.join(names)}"
            return InputError(f"unknown evidence kind '{name}' in {dotted}", file=path, where=where, fix=fix)
        return InputError(f"{dotted} must be one `name: {{options}}` entry", file=path, where=where,
                          fix=f"write e.g. `- ranking_quality: {{}}`; kinds: {', '.join(names)}")
    if kind == "value_error":  # our own validators: the message already says what and how
        message, _, fix = error["msg"].removeprefix("Value error, ").partition("; ")
        return InputError(f"{dotted}: {message}", file=path, where=where, fix=fix or _fix_for(kind, loc))
    shown = repr(error["input"])[:60] if "input" in error and not isinstance(error["input"], dict) else ""
    return InputError(f"{dotted}: {error['msg']}" + (f" (got {shown})" if shown else ""),
                      file=path, where=where, fix=_fix_for(kind, loc))


def _fix_for(kind: str, loc: tuple) -> str:
    if kind.endswith("_type") or kind.endswith("_parsing"):
        return f"give `{loc[-1] if loc else 'it'}` a value of the expected type (see `auditor schema`)"
    if kind == "literal_error":
        return "use one of the allowed values"
    return "see `auditor schema` for what is allowed here"


def _yaml_loc(loc: tuple, tags: Mapping[str, type[BaseModel]]) -> tuple:
    """Drop the union tag pydantic repeats for tagged items: ('evidence', 0, 'x', 'x', ...) -> (..., 'x', ...)."""
    out: list[Any] = []
    for part in loc:
        if out and isinstance(out[-1], str) and part == out[-1] and out[-1] in tags and len(out) >= 2 \
                and isinstance(out[-2], int):
            continue
        out.append(part)
    return tuple(out)


def _position(loc: tuple, marks: dict[tuple, tuple[int, int]], *, key: bool = False) -> tuple[int, int]:
    """Where `loc` is written: its key (for unknown keys) or its value, else the closest enclosing place."""
    if key and (*loc, KEY_MARK) in marks:
        return marks[(*loc, KEY_MARK)]
    for cut in range(len(loc), -1, -1):
        if loc[:cut] in marks:
            return marks[loc[:cut]]
    return (0, 0)


def _allowed_keys(root: type[BaseModel], loc: tuple, tags: Mapping[str, type[BaseModel]]) -> list[str]:
    """The keys a mapping at `loc` may hold, walking the model's type annotations."""
    annotation: Any = root
    for part in loc:
        annotation = _unwrap(annotation)
        if isinstance(part, int):
            args = typing.get_args(annotation)
            annotation = args[0] if args else Any
        elif isinstance(annotation, type) and issubclass(annotation, BaseModel) and part in annotation.model_fields:
            annotation = annotation.model_fields[part].annotation
        elif part in tags:  # inside a tagged item (an evidence item of the spec)
            annotation = tags[part]
        else:
            return []
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return list(annotation.model_fields)
    return []


def _unwrap(annotation: Any) -> Any:
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, types.UnionType):
            args = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(args) != 1:
                return annotation
            annotation = args[0]
        else:
            return annotation
