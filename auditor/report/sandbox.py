"""The Jinja2 sandbox every report template renders in, and bad-input errors that name the template at fault.

An organisation's template folder (`output.templates`) comes from people who may not run the audit. In a plain
Jinja2 environment `{{ cycler.__init__.__globals__.os.popen('id').read() }}` runs a shell command. Here templates
render in `ImmutableSandboxedEnvironment` (no `_`-attributes, no unsafe callables, no mutation of the data), with
the cheap ways to exhaust the machine bounded: ranges share one budget per render, `*` and `**` may not build
huge strings or numbers, width arguments of filters are capped, `lipsum` is gone, and the output has a size cap.
What a template may do is in docs/security.md.
"""

from __future__ import annotations

import operator
from pathlib import Path
from types import TracebackType
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

from auditor.core.errors import InputError

RANGE_BUDGET = 1_000_000  # range() items per render, all calls together
MAX_BUILT = 10_000_000  # characters or items one `*` may build
MAX_POWER_BITS = 100_000  # size of a result of `**`
MAX_OUTPUT = 512 * 1024 * 1024  # characters of one rendered report
MAX_WIDTH = 10_000  # width arguments of center, indent, wordwrap, truncate
_WIDTH_FILTERS = {"center": ("width",), "indent": ("width",), "wordwrap": ("width",), "truncate": ("length",)}


class ReportSandbox(ImmutableSandboxedEnvironment):
    """Jinja2's immutable sandbox with bounded ranges, repetition, powers and filter widths."""

    intercepted_binops = frozenset({"*", "**"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.range_left = RANGE_BUDGET
        self.globals.pop("lipsum", None)
        self.globals["range"] = self._budgeted_range
        for name, keywords in _WIDTH_FILTERS.items():
            self.filters[name] = _capped(self.filters[name], keywords)

    def unsafe_undefined(self, obj: Any, attribute: str) -> jinja2.Undefined:
        """Refuse at once (Jinja2's default returns an undefined that fails later with a vaguer message)."""
        raise SecurityError(f"access to attribute {attribute!r} of a {type(obj).__name__!r} object is unsafe")

    def _budgeted_range(self, *args: int) -> range:
        items = range(*args)
        self.range_left -= len(items)
        if self.range_left < 0:
            raise SecurityError(f"the template asks for more than {RANGE_BUDGET:,} range() items in one report")
        return items

    def call_binop(self, context: jinja2.runtime.Context, op: str, left: Any, right: Any) -> Any:
        if op == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(count, int) and len(seq) * count > MAX_BUILT:
                    raise SecurityError(f"the template builds a value of more than {MAX_BUILT:,} items with `*`")
            return operator.mul(left, right)
        if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 \
                and left.bit_length() * abs(right) > MAX_POWER_BITS:
            raise SecurityError(f"the template computes a number of more than {MAX_POWER_BITS:,} bits with `**`")
        return operator.pow(left, right)

    def render_bounded(self, template: jinja2.Template, context: dict[str, Any]) -> str:
        """Render, refusing output beyond MAX_OUTPUT characters (a loop that repeats a large value)."""
        chunks, total = [], 0
        for chunk in template.generate(**context):
            total += len(chunk)
            if total > MAX_OUTPUT:
                raise SecurityError(f"the report would be larger than {MAX_OUTPUT:,} characters")
            chunks.append(chunk)
        return "".join(chunks)


class CompiledTemplates(jinja2.BytecodeCache):
    """Templates compiled once per process, for one environment's settings (the code Jinja2 writes depends on them:
    give each kind of environment its own). A report renders about 40 templates, and compiling them took 0.2 s of
    every render: an API user's or a test session's audits, a run's other documents. Entries are keyed by file and
    checked against the source's checksum (Jinja2's buckets), so an edited or an organisation's template compiles
    anew; nothing is written to disk."""

    def __init__(self) -> None:
        self._compiled: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        code = self._compiled.get(bucket.key)
        if code is not None:
            bucket.bytecode_from_string(code)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._compiled[bucket.key] = bucket.bytecode_to_string()


def _capped(original: Any, keywords: tuple[str, ...]) -> Any:
    """A filter whose width arguments (positional after the value, or by keyword) are at most MAX_WIDTH."""

    passed = 1 if hasattr(original, "jinja_pass_arg") else 0  # the environment comes before the value

    def capped(*args: Any, **kwargs: Any) -> Any:
        widths = [*args[passed + 1:passed + 2], *(kwargs[k] for k in keywords if k in kwargs)]
        if any(isinstance(w, int) and w > MAX_WIDTH for w in widths):
            raise SecurityError(f"a filter width above {MAX_WIDTH:,} is not allowed in report templates")
        return original(*args, **kwargs)

    for attribute in ("jinja_pass_arg",):  # keep how Jinja2 passes the environment/context to the filter
        if hasattr(original, attribute):
            setattr(capped, attribute, getattr(original, attribute))
    return capped


def unsafe_names(env: jinja2.Environment, source: str) -> list[tuple[int, str]]:
    """(line, name) of every `_`-attribute a template names (`x.__init__`, `x['_y']`, `x|attr('_z')`): found at
    load time, before any evidence runs; the sandbox refuses them again at render time."""
    found = []
    for node in env.parse(source).find_all((nodes.Getattr, nodes.Getitem, nodes.Filter)):
        if isinstance(node, nodes.Getattr):
            name = node.attr
        elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const):
            name = node.arg.value
        elif isinstance(node, nodes.Filter) and node.name == "attr" and node.args \
                and isinstance(node.args[0], nodes.Const):
            name = node.args[0].value
        else:
            continue
        if isinstance(name, str) and name.startswith("_"):
            found.append((node.lineno, name))
    return found


def template_error(exc: BaseException, folders: list[Path]) -> InputError | None:
    """An error raised while rendering, as bad input naming the template file and line — when the innermost
    template frame is in one of `folders` (an organisation's). None when the fault is in our own templates."""
    frame = _innermost_template_frame(exc.__traceback__)
    if frame is None:
        if isinstance(exc, SecurityError) and folders:  # the whole render's budget, not one line's
            return InputError(f"the templates tried something report templates may not do ({exc})", file=folders[0],
                              fix="find the loop that repeats large values (docs/security.md)")
        return None
    file, line = frame
    if not any(Path(file).resolve().is_relative_to(folder.resolve()) for folder in folders):
        return None
    if isinstance(exc, SecurityError):
        problem = f"the template tried something report templates may not do ({exc})"
        fix = "remove it: templates may read the report's data but not Python internals (docs/security.md)"
    elif isinstance(exc, RecursionError):
        problem, fix = "the template recurses without end", "make the recursive macro stop"
    else:
        problem = f"the template failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        fix = "fix the template, or remove it to use the default"
    return InputError(problem, file=file, where=str(line), fix=fix)


def _innermost_template_frame(tb: TracebackType | None) -> tuple[str, int] | None:
    """Jinja2 rewrites tracebacks so that template code shows as frames of the template file."""
    found = None
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.endswith((".j2", ".css", ".html")) and Path(name).is_file():
            found = (name, tb.tb_lineno)
        tb = tb.tb_next
    return found
