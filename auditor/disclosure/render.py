"""The drafted statement as Markdown or HTML, from the templates in `report_templates/statement/` (one file of
sentences a language, one layout a format), rendered in the report's bounded, immutable sandbox.

Feature names and their meanings come from untrusted files. In HTML they pass `display.shown` and Jinja2's
autoescape, as in the report; in Markdown they pass `shown`, then `markdown_text`: `<`, `>` and `&` as entities (no
raw HTML) and the characters that make links, emphasis, code or tables backslash-escaped, so a name prints as
itself. The claim markers are made by `claims.Claim.marker` (JSON with `<`, `>`, `&` escaped) and pass unchanged.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import jinja2
from markupsafe import Markup

from auditor.core.display import shown
from auditor.core.errors import InputError
from auditor.disclosure.draft import Statement
from auditor.report.render import render_template, templates_dir, with_policy
from auditor.report.sandbox import ReportSandbox

Format = Literal["md", "html"]
LANGUAGES = ("en", "de")  # a file report_templates/statement/<language>.j2 each
SUFFIXES: dict[str, Format] = {".md": "md", ".markdown": "md", ".html": "html", ".htm": "html"}
_MARKDOWN = re.compile(r"([\\`*_\[\]|~])")


def markdown_text(value: Any) -> str:
    """A string as Markdown text that renders as itself (`shown` first, as everything a reader sees)."""
    text = shown(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", text)


def _finalize_markdown(value: Any) -> Any:
    """A printed string as Markdown text, marked safe so that autoescape (on, so that a macro's output is not
    escaped twice) leaves it; markup (macros, claim markers) passes unchanged."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return Markup(markdown_text(value))
    return value


def markdown_environment() -> ReportSandbox:
    """The sandbox of the Markdown statement: every printed string through `markdown_text` instead of HTML's
    escaping."""
    return ReportSandbox(loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=True,
                         undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                         keep_trailing_newline=True, finalize=_finalize_markdown)


def render_statement(statement: Statement, *, language: str = "en", fmt: Format = "md") -> str:
    """The statement in `language` as Markdown or a self-contained HTML page (with the report's content policy)."""
    if language not in LANGUAGES:
        raise InputError(f"no statement templates in language '{language}'", where="--language",
                         fix=f"choose one of {', '.join(LANGUAGES)}")
    context = {"s": statement, "language": language}
    if fmt == "html":
        return with_policy(render_template("statement/statement.html.j2", context, None))
    env = markdown_environment()
    return env.render_bounded(env.get_template("statement/statement.md.j2"), context)


def format_of(path_suffix: str) -> Format:
    """The format an output file's suffix asks for; bad input for any other."""
    found = SUFFIXES.get(path_suffix.lower())
    if found is None:
        raise InputError(f"cannot tell the statement's format from '{path_suffix or 'no suffix'}'", where="--out",
                         fix="name a .md or .html file")
    return found
