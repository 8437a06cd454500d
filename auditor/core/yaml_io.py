"""YAML as plain data for every file the tool reads as YAML (specs, policy packs): safe tags only, duplicate keys
refused, positions kept for error messages, and bounded — no alias bomb, no nesting deep enough to exhaust the
stack. Loads no ML library, so `auditor.inputs.spec` and `auditor.judging.policy` stay quick to import.
"""

from __future__ import annotations

import calendar
import re
from pathlib import Path
from typing import Any

import yaml

from auditor.core.errors import InputError

KEY_MARK = "\0key"
MAX_NODES = 100_000  # values after expanding aliases; a real spec or pack has a few hundred
MAX_DEPTH = 64  # nesting of mappings and lists; a real spec is under 10 deep
MAX_NUMBER_CHARS = 100  # a YAML number; `1:1:1...` (base 60) costs one big multiplication a digit

Marks = dict[tuple, tuple[int, int]]
_DAY = re.compile(r"(\d{4})-(\d\d?)-(\d\d?)")
_QUOTED = re.compile(r"'[^'\n]*'|\"[^\"\n]*\"")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.@-]{0,63}")


def shown_key(key: str) -> str:
    """A key for an error line: quoted when it is a name (`datset`), else not at all. A file that is not YAML can
    still parse as a mapping (a line of /etc/shadow ends in `:::`, so the whole line is a key)."""
    return f"'{key}'" if _NAME.fullmatch(key) else "(not shown: not a name)"


def day_problem(text: str) -> str | None:
    """Why `YYYY-MM-DD...` names no day ("February 2026 has 28 days"), or None when it does or is no such text.
    Python's own words ("day is out of range for month") do not say which part is wrong."""
    match = _DAY.match(text)
    if match is None:
        return None
    year, month, day = (int(part) for part in match.groups())
    if year < 1:
        return "there is no year 0"
    if not 1 <= month <= 12:
        return f"there is no month {month}"
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        return f"{calendar.month_name[month]} {year} has {days} days"
    return None


class _BadValue(Exception):
    """A scalar refused while constructing, with its place (converted to an InputError by parse_yaml)."""

    def __init__(self, problem: str, fix: str, node: yaml.Node) -> None:
        super().__init__(problem)
        self.problem, self.fix, self.mark = problem, fix, node.start_mark


class _Bounded:
    """Numbers of bounded length and dates that name their fault and place (PyYAML raises a bare ValueError without
    either), for both loaders below."""

    construct_yaml_int: Any
    construct_yaml_float: Any
    construct_yaml_timestamp: Any

    def construct_bounded_number(self, node: yaml.ScalarNode) -> Any:
        """No real number is 100 characters long; a long one costs PyYAML quadratic time (base 60)."""
        if len(node.value) > MAX_NUMBER_CHARS:
            raise _BadValue(f"a number of {len(node.value):,} characters",
                            f"numbers here have at most {MAX_NUMBER_CHARS} characters", node)
        if node.tag.endswith(":int"):
            return self.construct_yaml_int(node)
        return self.construct_yaml_float(node)

    def construct_checked_timestamp(self, node: yaml.ScalarNode) -> Any:
        """`2026-02-30` unquoted: PyYAML's ValueError has no place and does not say what is wrong."""
        try:
            return self.construct_yaml_timestamp(node)
        except (ValueError, OverflowError):
            problem = day_problem(node.value) or "it is not a valid date and time"
            raise _BadValue(f"{node.value[:40]} does not exist: {problem}", "write a day that exists (YYYY-MM-DD)",
                            node) from None


class _BoundedLoader(_Bounded, yaml.SafeLoader):
    """PyYAML's pure-Python SafeLoader: its messages and places are the ones a refused file is reported with."""


_LOADERS: list[type] = [_BoundedLoader]
if hasattr(yaml, "CSafeLoader"):  # PyYAML built with libyaml (its wheels are)
    class _FastLoader(_Bounded, yaml.CSafeLoader):  # type: ignore[misc]
        """libyaml's parser with the same constructors and resolver: the same data and the same places (line and
        column in characters), about ten times faster — an audit parses its spec and every pack several times. A
        document it or our checks refuse is parsed again by `_BoundedLoader`, so every message is that loader's."""

    _LOADERS.insert(0, _FastLoader)
for _loader in _LOADERS:
    _loader.add_constructor("tag:yaml.org,2002:int", _Bounded.construct_bounded_number)  # type: ignore[attr-defined]
    _loader.add_constructor("tag:yaml.org,2002:float", _Bounded.construct_bounded_number)  # type: ignore[attr-defined]
    _loader.add_constructor("tag:yaml.org,2002:timestamp",  # type: ignore[attr-defined]
                            _Bounded.construct_checked_timestamp)


def _unquoted(problem: str) -> str:
    """PyYAML's problem without the document text it quotes (an alias or tag name, a token): in a file that is
    not YAML at all, that text is whatever the file holds. One quoted character (`'\\t'`) says enough."""
    return _QUOTED.sub(lambda m: m.group(0) if len(m.group(0)) <= 6 or m.group(0)[1] == "<" else "(not shown)",
                       problem)


_SURROGATE = re.compile("[\ud800-\udfff]")  # YAML's "\\udc80" escape makes one: text UTF-8 cannot write


def parse_yaml(text: str, path: Path) -> tuple[Any, Marks]:
    """Safe-load YAML and remember the line/column of every key and item; duplicate keys are errors."""
    if len(_LOADERS) > 1:
        try:
            return _parse(text, path, _LOADERS[0])
        except Exception:  # refused: parsed again, for the pure-Python loader's message and place
            pass
    return _parse(text, path, _BoundedLoader)


def _parse(text: str, path: Path, loader_class: type) -> tuple[Any, Marks]:
    try:
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _check_size(node, path)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{mark.line + 1}:{mark.column + 1}" if mark else None
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        if "could not determine a constructor" in problem:
            tag = problem.split("'")[1] if "'" in problem else ""
            named = f"YAML tag {tag[:80]}" if "python/" in tag else "a YAML tag (`!name`)"
            raise InputError(f"{named} is not allowed (specs are plain data)", file=path, where=where,
                             fix="remove the tag") from None
        raise InputError(f"invalid YAML: {_unquoted(problem)}", file=path, where=where,
                         fix="check indentation, colons and quotes on that line") from None
    except _BadValue as exc:
        raise InputError(exc.problem, file=path, where=f"{exc.mark.line + 1}:{exc.mark.column + 1}",
                         fix=exc.fix) from None
    except yaml.YAMLError as exc:
        raise InputError(f"invalid YAML: {_unquoted(str(exc).splitlines()[0])}", file=path,
                         fix="check the YAML syntax") from None
    except RecursionError:
        raise InputError(f"the YAML is nested too deeply (more than {MAX_DEPTH} levels)", file=path,
                         fix="flatten it: a spec or policy pack is a few levels deep") from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a date like 2027-02-30
        raise InputError(f"invalid YAML value ({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})",
                         file=path, fix="check dates and numbers") from None
    marks: Marks = {}
    if node is not None:
        _collect_marks(node, (), marks, path)
    return data, marks


def _check_size(root: yaml.Node, path: Path) -> None:
    """Refuse a document that expands to more than MAX_NODES values, nests deeper than MAX_DEPTH or refers to
    itself. Aliases point at the same node, so sizes are counted once per node (memoised), iteratively."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    open_nodes: set[int] = set()
    while stack:
        node, depth, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(child)] for child in children)
            if size[key] > MAX_NODES:
                _refuse(node, path, f"the YAML expands to more than {MAX_NODES:,} values (aliases included)",
                        "write the values out; `&anchor` / `*alias` may not multiply a document")
            continue
        if key in size:
            continue
        if key in open_nodes:
            _refuse(node, path, "a YAML alias refers to a value that contains it", "remove the recursive `*alias`")
        if depth > MAX_DEPTH:
            _refuse(node, path, f"the YAML is nested more than {MAX_DEPTH} levels deep",
                    "flatten it: a spec or policy pack is a few levels deep")
        open_nodes.add(key)
        stack.append((node, depth, True))
        stack.extend((child, depth + 1, False) for child in _children(node) if id(child) not in size)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _refuse(node: yaml.Node, path: Path, problem: str, fix: str) -> None:
    raise InputError(problem, file=path, where=f"{node.start_mark.line + 1}:{node.start_mark.column + 1}", fix=fix)


def _collect_marks(node: yaml.Node, loc: tuple, marks: Marks, path: Path) -> None:
    """Positions of every value under its loc, and of every key under (*loc, KEY_MARK)."""
    marks[loc] = (node.start_mark.line + 1, node.start_mark.column + 1)
    if isinstance(node, yaml.ScalarNode) and (found := _SURROGATE.search(node.value)) is not None:
        code = f"{ord(found.group()):04x}"
        named = f"{'.'.join(str(part) for part in loc)}: " if loc else ""
        _refuse(node, path, f"{named}the text holds U+{code.upper()}, a lone surrogate (half of a UTF-16 pair, not a "
                "character), which evidence.json and the report cannot hold",
                f"write the character itself, or remove the `\\u{code}` escape")
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if not isinstance(key, str):
                raise InputError("a key must be plain text, not a list or mapping", file=path,
                                 where=f"{key_node.start_mark.line + 1}:{key_node.start_mark.column + 1}",
                                 fix="write the key as a word")
            if key in seen:
                raise InputError(f"key {shown_key(key)} appears twice", file=path,
                                 where=f"{key_node.start_mark.line + 1}:{key_node.start_mark.column + 1}",
                                 fix="keep one of them")
            seen.add(key)
            marks[(*loc, key, KEY_MARK)] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _collect_marks(value_node, (*loc, key), marks, path)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _collect_marks(item, (*loc, index), marks, path)
