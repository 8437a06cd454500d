"""One audit from spec to run folder: the engine (the pipeline), the executor (per-query work across processes), what
each item costs and the budget that plans it, progress, and the run's copy of its inputs."""
