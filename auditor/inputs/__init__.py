"""What an audit reads before anything runs: the spec, the ranking data (SVMlight/LETOR, CSV, Parquet), the feature
dictionary, and YAML read with positions so every bad input names its file, line and fix."""
