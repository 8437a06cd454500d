"""Strict models read from YAML: `StrictModel` (unknown keys are errors, frozen, strict types) and
`validate_yaml`, which turns pydantic's first error into one line with the file, line:column, the key and a fix
(nearest-key suggestions). Used by the spec and the policy packs; imports no evidence and no ML library."""

from __future__ import annotations

import contextlib
import datetime as dt
import difflib
import os
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar, Union

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Strict, ValidationError, ValidationInfo
from pydantic_core import ErrorDetails

from auditor.core.errors import InputError, shorten
from auditor.core.files import kind_of
from auditor.core.yaml_io import KEY_MARK, day_problem, shown_key

M = TypeVar("M", bound=BaseModel)
MAX_SUGGESTED = 100  # longest name given to difflib, whose matching is quadratic in the lengths


def nearest(word: str, names: Sequence[str], *, n: int = 1, cutoff: float = 0.6) -> list[str]:
    """difflib's close matches with bounded work: a name longer than MAX_SUGGESTED (a megabyte key, say) is no
    typo of a real name, so it is not compared."""
    if len(word) > MAX_SUGGESTED:
        return []
    return difflib.get_close_matches(word, [name for name in names if len(name) <= MAX_SUGGESTED], n=n,
                                     cutoff=cutoff)


# Paths in a spec: relative to the spec's folder (the `base_dir` of the validation context), checked to exist.

def _resolve(value: Path, info: ValidationInfo, *, want: Literal["file", "dir", "any"]) -> Path:
    base = (info.context or {}).get("base_dir")
    try:
        path = value.expanduser()
    except RuntimeError:  # `~` with no HOME and no password entry, or `~someone` who does not exist
        raise ValueError(f"cannot tell which home folder '{shorten(str(value))}' starts from; "
                         "write the full path") from None
    if base is not None and not path.is_absolute():
        path = Path(base) / path
    relocate = (info.context or {}).get("relocate")
    if relocate:  # an archived run's spec (`auditor report --from-run`): read this input from where it was kept
        with contextlib.suppress(OSError, RuntimeError, ValueError):
            path = relocate.get(path.resolve(), path)
    if want == "any" or (relocate is not None and not os.path.lexists(path)):
        return path  # an archived run's spec: files it did not keep (its signing keys) are never read by a rerun
    try:
        return _checked(path, want)
    except OSError as exc:  # a name too long, a loop of links, a folder we may not read
        raise ValueError(f"cannot open {shorten(str(path))} ({exc.strerror or exc}); check the path") from None


def _checked(path: Path, want: Literal["file", "dir"]) -> Path:
    if not path.exists():
        raise ValueError(f"no such {'file' if want == 'file' else 'folder'}: {shorten(str(path))}; "
                         "check the path (relative paths start from the spec's folder)")
    if want == "file" and path.is_dir():
        raise ValueError(f"{path} is a folder, but a file is expected here; give the path of the file inside it")
    if want == "file" and not path.is_file():  # a FIFO or a device would block or never end
        raise ValueError(f"{path} is {kind_of(path.stat().st_mode)}, not a regular file; give the path of a file")
    return path


def _file(value: Path, info: ValidationInfo) -> Path:
    return _resolve(value, info, want="file")


def any_path(value: Path, info: ValidationInfo) -> Path:
    return _resolve(value, info, want="any")


def _folder(value: Path, info: ValidationInfo) -> Path:
    path = _resolve(value, info, want="dir")
    if not path.is_dir():
        raise ValueError(f"{path} is a file, but a folder is expected here; give the folder that holds it")
    return path


InputFile = Annotated[Path, Strict(False), AfterValidator(_file)]
InputFolder = Annotated[Path, Strict(False), AfterValidator(_folder)]
OutputPath = Annotated[Path, Strict(False), AfterValidator(any_path)]


def _existing_day(value: Any) -> Any:
    """`'2026-02-30'` written as text: say which part does not exist (pydantic says "day value is outside expected
    range", which reads as a format error)."""
    if isinstance(value, str):
        problem = day_problem(value)
        if problem is not None:
            raise ValueError(f"{shorten(value, 40)} does not exist: {problem}; write a day that exists (YYYY-MM-DD)")
    return value


Day = Annotated[dt.date, BeforeValidator(_existing_day)]  # a date in a spec; YAML's own dates are checked on load


class StrictModel(BaseModel):
    """Unknown keys are errors (with a nearest-key suggestion); values are frozen once validated; types are strict
    (`seed: "7"` is text, not a number), except paths and dates, which YAML can only write as text."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)


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
    errors: list[ErrorDetails] = [{**e, "loc": _yaml_loc(e["loc"], tags)} for e in exc.errors()]
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
        near = nearest(str(loc[-1]), allowed, cutoff=0.5)
        fix = f"did you mean '{near[0]}'?" if near else f"allowed keys: {', '.join(allowed)}"
        return InputError(f"unknown key {shown_key(str(loc[-1]))} in {'.'.join(map(str, loc[:-1])) or 'the spec'}",
                          file=path, where=where, fix=fix)
    if kind == "missing":
        return InputError(f"missing required key '{dotted}'", file=path, where=where,
                          fix=f"add `{loc[-1]}:` under {'.'.join(map(str, loc[:-1])) or 'the top level'}")
    if kind == "unknown_evidence":
        given = error["input"]
        names = list(tags)
        if isinstance(given, dict) and len(given) == 1:
            name = str(next(iter(given)))
            near = nearest(name, names, cutoff=0.5)
            fix = f"did you mean '{near[0]}'?" if near else f"known kinds: {', '.join(names)}"
            return InputError(f"unknown evidence kind {shown_key(name)} in {dotted}", file=path, where=where,
                              fix=fix)
        return InputError(f"{dotted} must be one `name: {{options}}` entry", file=path, where=where,
                          fix=f"write e.g. `- ranking_quality: {{}}`; kinds: {', '.join(names)}")
    if kind == "value_error":  # our own validators: the message already says what and how
        message, _, fix = error["msg"].removeprefix("Value error, ").partition("; ")
        return InputError(f"{dotted}: {message}", file=path, where=where, fix=fix or _fix_for(kind, loc))
    if not loc:  # not a mapping at all: the file may be anything, so none of it is quoted
        return InputError(f"the top level must be a mapping of keys ({', '.join(list(root.model_fields)[:3])}, ...), "
                          f"not {_kind(error.get('input'))}", file=path, where=where,
                          fix="give the right file, or write its keys at the top level")
    shown = _shown(error.get("input"))
    return InputError(f"{dotted}: {error['msg']}" + (f" (got {shown})" if shown else ""),
                      file=path, where=where, fix=_fix_for(kind, loc))


def _shown(value: Any) -> str:
    """A wrong scalar, quoted short. Reached only for a mapping whose every key is the model's (unknown keys are
    reported first), so a file that is not ours shows at most its key names."""
    if isinstance(value, (dict, list)) or value is None:
        return ""
    return shorten(repr(value), 60)


def _kind(value: Any) -> str:
    """A YAML value's kind in words, for a top level that is not a mapping."""
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    return "empty" if value is None else f"a single {type(value).__name__} value"


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
