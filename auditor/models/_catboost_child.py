"""Rehearse loading a CatBoost model in a throw-away process (run as a script).

`python -I _catboost_child.py MEMORY_LIMIT FORMAT FOLDER < model.cbm|model.json` imports catboost (its Python
extension is the only way to its reader; no auditor code), loads the bytes (`cbm`: as `load_model(blob=...)`; `json`:
from a file in FOLDER, as `load_model(path, format="json")`), scores probe rows, and exports the model as JSON (via
FOLDER). The parent makes and removes FOLDER: a child that crashes leaves no copy of the model behind.
It prints one JSON line, {"ok": true, "n_features": ...} or {"ok": false, "stage": ..., "error": ...}, then on
success the JSON export: the parent checks that text (`catboost_check`), so a .cbm file is checked as CatBoost read
it. CatBoost's own messages go to /dev/null. See auditor/models/rehearsal.py.
"""

from __future__ import annotations

import json
import os
import resource
import sys

PROBES = [0.0, float("nan"), 1e30, -1e30, 0.5, 1.0, -1.0, 3.0]


def main() -> int:
    memory, fmt, folder = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a crash leaves no core file behind
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    report = os.fdopen(os.dup(1), "wb")
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)  # CatBoost writes its log to stdout and stderr
    os.dup2(quiet, 2)
    data = sys.stdin.buffer.read()

    def fail(stage: str, error: str) -> int:
        report.write((json.dumps({"ok": False, "stage": stage, "error": error[:300]}) + "\n").encode("utf-8"))
        report.flush()
        return 1

    import catboost

    model = catboost.CatBoost()
    try:
        if fmt == "cbm":
            model.load_model(blob=data)
        else:
            source = os.path.join(folder, "model.json")
            with open(source, "wb") as handle:
                handle.write(data)
            model.load_model(source, format="json")
    except Exception as exc:
        return fail("load", str(exc))
    try:
        target = os.path.join(folder, "export.json")
        model.save_model(target, format="json")
        with open(target, "rb") as export:
            exported = export.read()
    except Exception as exc:
        return fail("export", str(exc))
    names = model.feature_names_ or []
    try:
        if not any(indices() for indices in (model.get_cat_feature_indices, model.get_text_feature_indices,
                                             model.get_embedding_feature_indices)):
            # (a model with other than float features is refused by the parent, from the export)
            rows = [[value] * max(len(names), 1) for value in PROBES]
            model.predict(rows, prediction_type="RawFormulaVal", thread_count=1)
    except Exception as exc:
        return fail("predict", str(exc))
    report.write((json.dumps({"ok": True, "n_features": len(names)}) + "\n").encode("utf-8"))
    report.write(exported)
    report.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
