"""The transparency statement (docs/disclose.md): `claims` (the claim markers, the bands, judging a claim against
the evidence), `draft` (a statement from a run's evidence.json), `render` (its templates, per language, in the report
sandbox)."""
