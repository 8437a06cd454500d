"""Commands beside `auditor report` that work on finished runs: `diff`, `render`, `init` (a starter spec), and the
JUnit file and MLflow logging a report run writes after it."""
