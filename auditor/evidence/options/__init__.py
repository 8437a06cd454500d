"""Evidence kinds' spec options: one module a kind (`<kind>.py`: its options model and the metric names it can
emit), importing no plugin, no numpy and no pandas, so `import auditor.inputs.spec` stays light (a test keeps it so)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class EvidenceOptions(BaseModel):
    """Base of every evidence item's options: unknown keys are errors, values are frozen, types are strict."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True)
