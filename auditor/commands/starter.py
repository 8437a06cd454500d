"""`auditor init`: a commented starter spec that validates as written, for a given model and dataset.

Every value that comes from outside (the model file's feature names, paths, the title, pack names) is written by
PyYAML (`_flow`), never pasted into the text: a feature name is whatever the model file says, and one holding a
line break, `: `, `#` or a tag would otherwise add keys (waivers, an executor address) to the spec. The comments
are fixed text. Before the text is returned it is read back and must be exactly the data `init` meant to write.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from auditor.core.errors import InputError
from auditor.core.yaml_io import parse_yaml
from auditor.evidence import REGISTRY
from auditor.inputs.data import infer_format
from auditor.judging.policy import LoadedPack, load_pack
from auditor.models import KINDS, kind_from_file, kind_from_suffix

if TYPE_CHECKING:
    from auditor.inputs.spec import ModelKindName


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
    packs = [load_pack(name, base_dir=Path.cwd()) for name in policies]
    base = spec_path.resolve().parent
    model_rel = Path(os.path.relpath(model.resolve(), base)).as_posix()
    data_rel = Path(os.path.relpath(dataset.resolve(), base)).as_posix()
    items, evidence = _evidence_lines(packs, _feature_names(model, kind))
    inferred = kind == kind_from_suffix(model)
    meant: dict[str, Any] = {  # what the text below must read back as, key for key
        "audit": {"title": title, "organisation": organisation},
        "model": {"path": model_rel} if inferred else {"path": model_rel, "kind": kind},
        "dataset": {"path": data_rel, "format": fmt, "nan_policy": "reject"},
        "evidence": items, "policies": list(policies), "seed": 0, "output": {"dir": "reports"}}
    if inferred:
        kind_line = f"  # kind: {_flow(kind)}        # inferred from the file name ({KINDS[kind].label})"
    else:
        kind_line = f"  kind: {_flow(kind)}          # {KINDS[kind].label}: a .json file is read as LightGBM unless set"
    shown_name = spec_path.name if _PLAIN_NAME.fullmatch(spec_path.name) else "<this file>"
    csv_hint = ("\n  # CSV/Parquet columns (defaults shown):\n  # query_column: qid\n  # label_column: label\n"
                "  # doc_id_column: doc_id\n"
                "  # attribute_columns: []   # e.g. [sex, race_ethnicity]: kept beside the data, never features "
                "(selection_rates)\n") if fmt != "svmlight" else \
        "\n  # feature_names: features.txt   # one name a line (optional)\n"
    text = f"""# Audit spec written by `auditor init`. Check it with `auditor validate {shown_name}`,
# run it with `auditor report {shown_name}`. Paths are relative to this file.
audit:
  title: {_flow(title)}
  organisation: {_flow(organisation)}
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
  path: {_flow(model_rel)}
{kind_line}
  # trust: false        # pickles and Python callables run code when loaded: only with trust: true
  # version: "2026.11.1" # the model's version in your registry
  # training_date: 2026-11-01

dataset:
  path: {_flow(data_rel)}
  format: {_flow(fmt)}
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

policies: {_flow(list(policies))}   # built-in names (`auditor policies list`) or paths to your own packs

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
    _check_reads_back(text, meant, spec_path)
    return text


def _evidence_lines(packs: list[LoadedPack], features: list[str]) -> tuple[list[dict[str, Any]], str]:
    """Every evidence kind the packs need, in registry order, with the options it cannot do without; the other
    kinds commented out; kinds a pack names that this installation lacks, as a comment. Returns the items as data
    (what the lines must read back as) and the lines."""
    needed = [name for loaded in packs for name in loaded.evidence()]
    items: list[dict[str, Any]] = []
    lines = []
    for name, plugin in REGISTRY.items():
        options: dict[str, Any] = {}
        note = plugin.description
        if name == "disclosure_consistency":
            options, note = {"declared": []}, "TO FILL: the parameters your terms disclose, most important first"
        elif name == "parameter_influence":
            guessed = [f for f in features if _SENSITIVE.search(f)]
            options = {"sensitive": guessed}
            note = "paid or otherwise sensitive parameters" + ("" if guessed else " (TO FILL)")
        elif name == "exposure":
            own = [f for f in features if _OWN.search(f)][:1]
            options = {"group": own, "own": {own[0]: 1}} if own else {"group": []}
            note = ("the platform's own products (flag = 1)" if own
                    else "TO FILL: group columns, e.g. an own-brand flag; own: {flag: 1}")
        gap = "    " if note == plugin.description else "   "
        line = f"  - {_flow(name)}: {_flow(options)}{gap}# {note}"
        if name in needed:
            items.append({name: options})
            lines.append(line)
        else:
            lines.append(f"  # {line.strip()}    (not needed by the policies)")
    for name in dict.fromkeys(needed):
        if name not in REGISTRY:
            lines.append(f"  # {_flow(name)}: needed by the policies, not available in this installation")
    return items, "\n".join(lines)


_SENSITIVE = re.compile(r"sponsor|paid|promot|commission|advert|boost", re.IGNORECASE)
_OWN = re.compile(r"own_?brand|(?:^|_)own(?:_|$)|house_?brand|private_?label|first_?party", re.IGNORECASE)


def _feature_names(model: Path, kind: ModelKindName) -> list[str]:
    """The model's feature names when it stores them (for guessing sensitive parameters); [] otherwise."""
    try:
        from auditor.inputs.spec import ModelSpec
        from auditor.models import load_model

        ranker = load_model(ModelSpec(path=model.resolve(), kind=kind), base_dir=model.resolve().parent)
        return list(ranker.feature_names or [])
    except Exception:  # a guess only: init must still write the spec
        return []


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")  # a spec file name the header comment may show
_BREAKS = ("\r", "\n", "\x85", "\u2028", "\u2029", "\ufeff")  # line breaks to YAML 1.1 (and a BOM)


def _flow(value: Any) -> str:
    """`value` as one line of YAML, written by PyYAML: quoted and escaped as the emitter decides, so no text from a
    model file or a path can end the line, open a key, a comment, an anchor or a tag. One line (line breaks of
    every kind, U+2028 and U+0085 too, escaped), so a comment may follow it, or hold it in a commented example."""
    for dumper in (yaml.SafeDumper, _Escaping):  # readable first; if that breaks the line, text as ASCII "..."
        text = yaml.dump([value], Dumper=dumper, default_flow_style=True, allow_unicode=dumper is yaml.SafeDumper,
                         width=1 << 30).rstrip("\n")
        if not any(mark in text for mark in _BREAKS):
            return text[1:-1]  # the list's brackets: a value in flow style is valid in block style too
    raise ValueError("YAML could not write a value on one line")  # unreachable: "..." escapes every break


class _Escaping(yaml.SafeDumper):
    """Every text double-quoted: with ASCII output, each line break (and every other non-ASCII or control
    character) is written as an escape (`\\n`, `\\L`, `\\N`, `\\uFEFF`), so the value stays on its line."""

    def represent_str(self, data: str) -> yaml.ScalarNode:
        return self.represent_scalar("tag:yaml.org,2002:str", data, style='"')


_Escaping.add_representer(str, _Escaping.represent_str)


def _check_reads_back(text: str, meant: dict[str, Any], spec_path: Path) -> None:
    """The written spec, read as `auditor validate` reads it, holds exactly the data `init` meant to write: no
    value added a key, and every value (a feature name, byte for byte) comes back as it was."""
    data, _ = parse_yaml(text, spec_path)
    if data != meant:  # a fault of ours, not the user's input: exit 3 rather than a spec that says other things
        raise RuntimeError("the starter spec does not read back as the data it was written from")
