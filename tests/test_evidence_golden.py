"""The bookstore's evidence, pinned: every metric of the demo audit (the `demo` fixture: the bundled example, every
evidence kind, both packs) and a digest of everything else each item writes, compared with `tests/golden/
bookstore-evidence.json`. A speed-up or a refactor must leave the evidence as it was; a change of method that moves it
is made on purpose, documented, and the file regenerated:

    AUDITOR_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/test_evidence_golden.py

The run block (times, host), the register's review and the findings are left out: they depend on the clock (waivers
expire, the last review ages); the findings follow from the metrics, which are here. So are the detections of the
engagement's dates (a review period not yet ended on the day the demo runs)."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

GOLDEN = Path(__file__).parent / "golden" / "bookstore-evidence.json"
DIGITS = 9  # significant digits kept: a last-bit difference of BLAS between machines is not a change of evidence
NOISE = 1e-12  # an error measure (a key ending in "error": additivity, efficiency) below this is rounding, i.e. 0: its
# value is the last bits of a sum (2e-16 on one machine, 9e-16 on another), not evidence
PARTS = ("records", "tables", "per_query", "notes", "summary", "detections", "error", "status", "figures",
         "how_to_read", "facts", "options")
CLOCK = ("review-period-not-ended", "data-period-after-audit", "distributed-before-audit")  # the day decides them


def _timeless(detections: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [d for d in detections if d.get("kind") not in CLOCK]


def _rounded(value: Any, key: str = "") -> Any:
    if isinstance(value, float):
        if key.endswith("error") and abs(value) < NOISE:
            return 0.0
        return value if not math.isfinite(value) else float(f"{value:.{DIGITS}g}")
    if isinstance(value, dict) and isinstance(value.get("__array__"), str) and str(value.get("dtype")).startswith(
            "float"):  # a stored array (evidence/figures.py `encode`): its numbers rounded like any other
        numbers = (repr(_rounded(float(token), key)) for token in value["__array__"].split())
        return {**value, "__array__": " ".join(numbers)}
    if isinstance(value, dict):
        return {name: _rounded(item, name) for name, item in value.items()}
    if isinstance(value, list):
        return [_rounded(item, key) for item in value]
    return value


def _hash(value: Any) -> str:
    text = json.dumps(_rounded(value), sort_keys=True, ensure_ascii=True, allow_nan=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def digest(document: dict[str, Any]) -> dict[str, Any]:
    """What the golden file keeps of an evidence.json: per item its metrics (rounded), model rows and a hash of each
    other part; the audit-level detections' hash."""
    items = {}
    for name, item in sorted(document["evidence"].items()):
        items[name] = {"metrics": _rounded(item["metrics"]), "n_model_rows": item["n_model_rows"],
                       "parts": {part: _hash(_timeless(item[part]) if part == "detections" else item[part])
                                 for part in PARTS if part in item}}
    return {"evidence": items, "detections": _hash(_timeless(document["detections"])), "schema": document["schema"]}


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Each changed, added or removed leaf as one line `path: old -> new`."""
    lines: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key, "<absent>"), b.get(key, "<absent>"), f"{path}.{key}" if path else key)
        elif a != b and not (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)):
            lines.append(f"{path}: {a!r} -> {b!r}")

    walk(old, new, "")
    return lines


@pytest.mark.slow
def test_the_bookstore_evidence_is_what_it_was(demo: Path) -> None:
    """Same spec, seed and data as the golden file: the same evidence, unless the file was regenerated on purpose."""
    now = digest(json.loads((demo / "evidence.json").read_text()))
    if os.environ.get("AUDITOR_UPDATE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(GOLDEN.read_text())
    changed = differences(pinned, now)
    assert not changed, (f"{len(changed)} evidence values changed against {GOLDEN.name} (if on purpose: document the "
                         "change and regenerate, see this module's docstring):\n" + "\n".join(changed[:60]))


def test_the_digest_sees_a_changed_value_and_ignores_the_last_bits() -> None:
    """The comparison is not vacuous: a metric moved in its 6th digit, or a table cell, is reported; a difference in
    the 15th digit is not."""
    document = {"schema": "s", "detections": [], "evidence": {"x": {
        "metrics": {"x.m": 0.123456789012}, "n_model_rows": 10, "tables": [{"rows": [[1.5, "a"]]}], "notes": []}}}
    base = digest(document)
    ulp = json.loads(json.dumps(document))
    ulp["evidence"]["x"]["metrics"]["x.m"] = 0.123456789012 + 1e-15
    assert differences(base, digest(ulp)) == []
    noisy = [json.loads(json.dumps(document)) for _ in range(2)]
    for error, copy in zip((2e-16, 9e-16), noisy, strict=True):
        copy["evidence"]["x"]["metrics"]["x.additivity.max_abs_error"] = error
        copy["evidence"]["x"]["tables"][0]["rows"].append({"efficiency_error": error})
    assert differences(digest(noisy[0]), digest(noisy[1])) == []
    moved = json.loads(json.dumps(document))
    moved["evidence"]["x"]["metrics"]["x.m"] = 0.1234572
    cell = json.loads(json.dumps(document))
    cell["evidence"]["x"]["tables"][0]["rows"][0][0] = 1.6
    assert [line.split(":")[0] for line in differences(base, digest(moved))] == ["evidence.x.metrics.x.m"]
    assert [line.split(":")[0] for line in differences(base, digest(cell))] == ["evidence.x.parts.tables"]
    stored = {**document, "evidence": {"x": {**document["evidence"]["x"], "facts": {
        "phi": {"__array__": "0.1 -2.5 nan", "dtype": "float64", "shape": [3]}}}}}
    last_bits, moved_array = json.loads(json.dumps(stored)), json.loads(json.dumps(stored))
    last_bits["evidence"]["x"]["facts"]["phi"]["__array__"] = f"{0.1 + 1e-16!r} -2.5 nan"
    moved_array["evidence"]["x"]["facts"]["phi"]["__array__"] = "0.1 -2.5001 nan"
    assert differences(digest(stored), digest(last_bits)) == []
    assert [line.split(":")[0] for line in differences(digest(stored), digest(moved_array))] == [
        "evidence.x.parts.facts"]
