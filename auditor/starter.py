"""`auditor init`: a commented starter spec that validates as written, for a given model and dataset."""

from __future__ import annotations

import os
from pathlib import Path

from auditor.data import infer_format
from auditor.errors import InputError
from auditor.evidence import REGISTRY
from auditor.policy import load_pack


def starter_spec(*, model: Path, dataset: Path, spec_path: Path, policies: list[str], title: str,
                 organisation: str) -> str:
    for path, what in ((model, "model"), (dataset, "dataset")):
        if not path.is_file():
            raise InputError(f"no {what} file here", file=path, fix=f"give the path of the {what} file")
    fmt = infer_format(dataset)
    for name in policies:
        load_pack(name, base_dir=Path.cwd())
    base = spec_path.resolve().parent
    model_rel = Path(os.path.relpath(model.resolve(), base)).as_posix()
    data_rel = Path(os.path.relpath(dataset.resolve(), base)).as_posix()
    evidence = "\n".join(f"  - {name}: {{}}    # {plugin.description}" for name, plugin in REGISTRY.items())
    csv_hint = ("\n  # CSV/Parquet columns (defaults shown):\n  # query_column: qid\n  # label_column: label\n"
                "  # doc_id_column: doc_id\n") if fmt != "svmlight" else \
        "\n  # feature_names: features.txt   # one name a line (optional)\n"
    return f"""# Audit spec written by `auditor init`. Check it with `auditor validate {spec_path.name}`,
# run it with `auditor report {spec_path.name}`. Paths are relative to this file.
audit:
  title: {_quote(title)}
  organisation: {_quote(organisation)}
  # owner: Ranking team
  # period: 2026-Q4
  # purpose: Ranking transparency under Regulation (EU) 2019/1150 Art. 5

model:
  path: {_quote(model_rel)}
  # trust: false        # pickles and Python callables run code when loaded: only with trust: true

dataset:
  path: {_quote(data_rel)}
  format: {fmt}
  nan_policy: reject    # or `missing`: pass missing values to the model as missing{csv_hint}
evidence:
{evidence}

policies: [{", ".join(policies)}]   # built-in names (`auditor policies list`) or paths to your own packs

# waivers:              # accepted exceptions: FAIL becomes WAIVED until the expiry date
#   - {{rule: BASE-2, justification: "...", approver: "J. Doe", expires: 2027-03-31}}

seed: 0                 # same spec + seed => same evidence.json

output:
  dir: reports
"""


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
