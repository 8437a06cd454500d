"""`auditor init`: a commented starter spec that validates as written, for a given model and dataset."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

from auditor.data import infer_format
from auditor.errors import InputError
from auditor.evidence import REGISTRY
from auditor.models import KINDS, kind_from_file, kind_from_suffix
from auditor.policy import LoadedPack, load_pack

if TYPE_CHECKING:
    from auditor.spec import ModelKindName


def starter_spec(*, model: Path, dataset: Path, spec_path: Path, policies: list[str], title: str,
                 organisation: str) -> str:
    for path, what in ((model, "model"), (dataset, "dataset")):
        if not path.is_file():
            raise InputError(f"no {what} file here", file=path, fix=f"give the path of the {what} file")
    fmt = infer_format(dataset)
    kind = kind_from_file(model)
    if kind is None:
        names = ", ".join(f"{s} ({k.name})" for k in KINDS.values() for s in k.suffixes)
        raise InputError("cannot tell which kind of model this is from its name", file=model,
                         fix=f"give a model file ending in one of {names}, or .json (LightGBM, XGBoost or CatBoost)")
    if kind == kind_from_suffix(model):
        kind_line = f"  # kind: {kind}        # inferred from the file name ({KINDS[kind].label})"
    else:
        kind_line = f"  kind: {kind}          # {KINDS[kind].label}: a .json file is read as LightGBM unless set"
    packs = [load_pack(name, base_dir=Path.cwd()) for name in policies]
    base = spec_path.resolve().parent
    model_rel = Path(os.path.relpath(model.resolve(), base)).as_posix()
    data_rel = Path(os.path.relpath(dataset.resolve(), base)).as_posix()
    evidence = _evidence_lines(packs, _feature_names(model, kind))
    csv_hint = ("\n  # CSV/Parquet columns (defaults shown):\n  # query_column: qid\n  # label_column: label\n"
                "  # doc_id_column: doc_id\n"
                "  # attribute_columns: []   # e.g. [sex, race_ethnicity]: kept beside the data, never features "
                "(selection_rates)\n") if fmt != "svmlight" else \
        "\n  # feature_names: features.txt   # one name a line (optional)\n"
    return f"""# Audit spec written by `auditor init`. Check it with `auditor validate {spec_path.name}`,
# run it with `auditor report {spec_path.name}`. Paths are relative to this file.
audit:
  title: {_quote(title)}
  organisation: {_quote(organisation)}
  # owner: Ranking team
  # period: 2026-Q4
  # purpose: Ranking transparency under Regulation (EU) 2019/1150 Art. 5
  # data_origin: real   # real, synthetic or mixed (printed on the cover)
  # intended_use: Orders the products of a catalogue search for shoppers in the EU
  # out_of_scope: [Credit or employment decisions]
  # human_oversight: The merchandising team reviews the top results weekly and can pin or demote items
  # auditor: Model Risk team   # who ran the audit
  # approver: Head of Model Risk
  # independence: The auditors took no part in building or training the model
  # limitations: [Known limitations the model owner records]

model:
  path: {_quote(model_rel)}
{kind_line}
  # trust: false        # pickles and Python callables run code when loaded: only with trust: true
  # version: "2026.11.1" # the model's version in your registry
  # training_date: 2026-11-01

dataset:
  path: {_quote(data_rel)}
  format: {fmt}
  nan_policy: reject    # or `missing`: pass missing values to the model as missing{csv_hint}
# background:           # reference data, e.g. the training set: masking, the samplers and the surrogate use it;
#   path: train.csv     #   without it they use the audited data itself
#   doc_id_column: doc_id

# masking: {{strategy: mean}}   # what a removed feature becomes: mean (default), median or zero
# budget: {{minutes: 15}}       # a time budget: per-query evidence samples queries so the estimate fits
#                              #   (`auditor validate` prints the estimate per evidence item)

# features:             # what each feature means, for the report's feature dictionary (or a CSV file:
#   price: {{meaning: Price of the item, unit: EUR}}   #   feature_dictionary: features.csv, columns name,meaning,unit)

evidence:
{evidence}

policies: [{", ".join(policies)}]   # built-in names (`auditor policies list`) or paths to your own packs

# waivers:              # accepted exceptions: FAIL becomes WAIVED until the expiry date
#   - {{rule: BASE-2, justification: "...", approver: "J. Doe", expires: 2027-03-31}}

# findings:             # who acts on a rule's finding, by when (printed beside it in the executive summary)
#   - {{rule: BASE-1, owner: Ranking team, due: 2027-01-31}}

# signing:              # sign report.pdf and the run (`auditor keygen --out keys` makes the identity)
#   key: keys/signer.p12
#   passphrase_env: AUDITOR_KEY_PASS
#   bundle_key: keys/bundle-ed25519.pem

seed: 0                 # same spec + seed => same evidence.json

output:
  dir: reports
  # formats: [html, pdf]
"""


def _evidence_lines(packs: list[LoadedPack], features: list[str]) -> str:
    """Every evidence kind the packs need, in registry order, with the options it cannot do without; the other
    kinds commented out; kinds a pack names that this installation lacks, as a comment."""
    needed = [name for loaded in packs for name in loaded.evidence()]
    lines = []
    for name, plugin in REGISTRY.items():
        options = "{}"
        if name == "disclosure_consistency":
            options = "{declared: []}   # TO FILL: the parameters your terms disclose, most important first"
        elif name == "parameter_influence":
            guessed = [f for f in features if _SENSITIVE.search(f)]
            options = (f"{{sensitive: [{', '.join(guessed)}]}}   # paid or otherwise sensitive parameters"
                       + ("" if guessed else " (TO FILL)"))
        elif name == "exposure":
            guessed = [f for f in features if _OWN.search(f)][:1]
            options = (f"{{group: [{guessed[0]}], own: {{{guessed[0]}: 1}}}}   # the platform's own products (flag = 1)"
                       if guessed else "{group: []}   # TO FILL: group columns, e.g. an own-brand flag; own: {flag: 1}")
        line = f"  - {name}: {options}" + ("" if "#" in options else f"    # {plugin.description}")
        lines.append(line if name in needed else f"  # {line.strip()}    (not needed by the policies)")
    for name in dict.fromkeys(needed):
        if name not in REGISTRY:
            lines.append(f"  # {name}: needed by the policies, not available in this installation")
    return "\n".join(lines)


_SENSITIVE = re.compile(r"sponsor|paid|promot|commission|advert|boost", re.IGNORECASE)
_OWN = re.compile(r"own_?brand|(?:^|_)own(?:_|$)|house_?brand|private_?label|first_?party", re.IGNORECASE)


def _feature_names(model: Path, kind: ModelKindName) -> list[str]:
    """The model's feature names when it stores them (for guessing sensitive parameters); [] otherwise."""
    try:
        from auditor.models import load_model
        from auditor.spec import ModelSpec

        ranker = load_model(ModelSpec(path=model.resolve(), kind=kind), base_dir=model.resolve().parent)
        return list(ranker.feature_names or [])
    except Exception:  # a guess only: init must still write the spec
        return []


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
