"""The report sandbox's bounds, one by one: what an organisation template may not do (docs/security.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from jinja2.sandbox import SecurityError

from auditor.report import sandbox
from auditor.report.render import environment


def render(source: str, **context: object) -> str:
    env = environment()
    return env.render_bounded(env.from_string(source), context)


@pytest.mark.parametrize(("source", "needle"), [
    ("{{ cycler.__init__.__globals__ }}", "unsafe"),
    ("{{ (cycler|attr('__init__')) }}", "unsafe"),
    ("{{ ''.__class__.__mro__ }}", "unsafe"),
    ("{% for i in range(600000) %}{% endfor %}{% for i in range(600000) %}{% endfor %}", "range() items"),
    ("{{ 'x' * 20000000 }}", "with `*`"),
    ("{{ [1] * 20000000 }}", "with `*`"),
    ("{{ 10 ** 100000 }}", "with `**`"),
    ("{{ 'a'|center(100000) }}", "filter width"),
    ("{{ 'a'|indent(width=100000) }}", "filter width"),
    ("{{ items.append(1) }}", "unsafe"),
], ids=["globals", "attr-filter", "mro", "range-budget", "string-repetition", "list-repetition", "power",
        "center-width", "indent-width", "mutation"])
def test_template_may_not(source: str, needle: str) -> None:
    with pytest.raises(SecurityError, match=re.escape(needle)):
        render(source, items=[])


def test_lipsum_is_gone_and_output_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "lipsum" not in environment().globals
    monkeypatch.setattr(sandbox, "MAX_OUTPUT", 1000)
    with pytest.raises(SecurityError, match="larger than"):
        render("{% for i in range(200) %}{{ 'abcdefghij' }}{% endfor %}")


def test_reading_the_report_data_is_allowed() -> None:
    assert render("{{ rows|map(attribute='name')|join(', ') }} {{ '%.2f'|format(x) }} {{ n * 3 }}",
                  rows=[{"name": "<b>a</b>"}, {"name": "b"}], x=0.5, n=2) == "&lt;b&gt;a&lt;/b&gt;, b 0.50 6"


def test_compiled_templates_are_shared_and_an_edited_one_compiles_anew(tmp_path: Path) -> None:
    """The per-process cache of compiled templates (auditor/report/sandbox.py): a second environment reads what the
    first compiled; the same file edited is compiled again from its new text, not taken from the cache."""
    import jinja2

    from auditor.report.sandbox import CompiledTemplates, ReportSandbox

    cache = CompiledTemplates()
    (tmp_path / "t.j2").write_text("one {{ x }}")

    def render() -> str:
        env = ReportSandbox(loader=jinja2.FileSystemLoader(str(tmp_path)), bytecode_cache=cache)
        return env.get_template("t.j2").render(x=1)

    assert render() == "one 1" and len(cache._compiled) == 1
    compiled = dict(cache._compiled)
    assert render() == "one 1" and cache._compiled == compiled
    (tmp_path / "t.j2").write_text("two {{ x }}")
    assert render() == "two 1" and cache._compiled != compiled
