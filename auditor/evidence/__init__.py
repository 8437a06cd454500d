"""Evidence plugins: one module a kind, each with one entry in the registry (`auditor/evidence/registry.py`).

`REGISTRY` holds the kinds a spec can request; `ALWAYS` the two items every audit has (`dataset`: data facts,
`governance`: facts about the audit record), which rules address like any other. `run_order` puts the requested
items in the order they run: a kind that `uses` another runs after it, otherwise spec order. Importing this package
loads no plugin: an entry imports its module when it runs.
"""

from __future__ import annotations

from auditor.evidence.registry import ALWAYS, ALWAYS_PRESENT, KINDS, EvidenceKind

REGISTRY = KINDS  # the requestable kinds (the name the engine, the spec and the packs know it by)

__all__ = ["ALWAYS", "ALWAYS_PRESENT", "REGISTRY", "EvidenceKind", "run_order"]


def run_order(names: list[str], plugins: dict[str, EvidenceKind] | None = None) -> list[str]:
    """The requested evidence kinds in the order they run: each after the requested kinds it `uses`, otherwise in
    the given (spec) order — of the kinds ready to run, the first listed runs next. A kind used but not requested
    is not added. Raises ValueError on a cycle of `uses` (a registry error, never the user's)."""
    plugins = plugins if plugins is not None else REGISTRY
    requested = set(names)
    waiting = {name: {used for used in plugins[name].uses if used in requested and used != name} for name in names}
    done: list[str] = []
    while len(done) < len(names):
        ready = next((name for name in names if name not in done and waiting[name] <= set(done)), None)
        if ready is None:
            cycle = [name for name in names if name not in done]
            raise ValueError(f"evidence kinds that use each other in a cycle: {', '.join(cycle)}")
        done.append(ready)
    return done
