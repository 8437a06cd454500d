"""The built-in evidence kinds, one package a kind (issue 52): `__init__.py` its registry entry (`ENTRY`: options,
metrics, title, what it uses, what a budget may leave out; light, the spec imports it), `options.py` its spec options
and metric names (pydantic only), `cost.py` its cost estimator, `measure.py` what it measures (`run(ctx, options)`:
arrays in, an `EvidenceResult` out) and `present.py` what the documents say from its stored result (the key figures
it offers page 2, its Limitations sentences). `BUILTIN` is the report's order of sections."""

BUILTIN = ("dataset", "governance", "ranking_quality", "global_importance", "local_explanations",
           "decision_path_accuracy", "disclosure_consistency", "parameter_influence", "pairwise", "confidence",
           "exposure", "selection_rates", "surrogate")
ALWAYS_BUILTIN = ("dataset", "governance")
