"""The audit spec: strict Pydantic models, safe YAML loading, and errors that name file, line, key and fix."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, Union, get_args

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    create_model,
    model_validator,
)

from auditor.core.errors import InputError, shorten
from auditor.core.files import MAX_DATA_BYTES, MAX_DOCS_PER_QUERY, MAX_YAML_BYTES, read_bytes
from auditor.core.urls import credentials_in, switched_off
from auditor.core.yaml_io import parse_yaml
from auditor.core.yaml_models import Day, InputFile, InputFolder, M, OutputPath, StrictModel, any_path
from auditor.core.yaml_models import validate_yaml as _validate_yaml
from auditor.evidence import REGISTRY
from auditor.evidence.registry import version as kinds_version


def _no_credentials(value: str | None) -> str | None:
    """A service URL without a password or token in it: the spec is archived with the run and its URLs are printed
    and signed."""
    found = credentials_in(value) if value is not None else []
    if found:
        raise ValueError(f"the URL carries {' and '.join(found)}: a spec never holds credentials (it is archived in "
                         "the run, printed and signed); put them in an environment variable or the service's own "
                         "credential store (PGPASSWORD or ~/.pgpass for PostgreSQL, MLFLOW_TRACKING_TOKEN for "
                         "MLflow)")
    return value


ServiceUrl = Annotated[str, AfterValidator(_no_credentials)]


def _register(value: str | bool, info: ValidationInfo) -> str | bool:
    """A register: `false` (none), a `postgresql://` URL as written, or a path (relative to the spec's folder)."""
    if value is True:
        raise ValueError("`register: true` names no register; give a path or a postgresql:// URL (or false for none)")
    if switched_off(value):  # `register: "off"`, as `--register off`
        return False
    if value is False or "://" in value:
        return value if value is False else str(_no_credentials(value))
    return str(any_path(Path(value), info))


RegisterLocation = Annotated[str | bool, AfterValidator(_register)]


class ProviderFacts(StrictModel):
    """What the audited provider is, as facts the laws' scope depends on: a pack that `applies_to` a kind of provider
    is "not applicable" when the fact is false, and judged with "applicability not stated" when it is left out."""

    gatekeeper: bool | None = Field(None, description="Designated gatekeeper under the DMA (Art. 3) for the "
                                                      "service audited.")
    high_risk: bool | None = Field(None, description="The ranker is (part of) a high-risk AI system under the AI Act "
                                                     "(Art. 6, Annex III).")
    online_platform: bool | None = Field(None, description="An online platform under the DSA (Art. 3(i)).")
    very_large_platform: bool | None = Field(None, description="A very large online platform or search engine "
                                                               "designated under the DSA (Art. 33).")
    intermediation_service: bool | None = Field(None, description="An online intermediation service or search "
                                                                  "engine under P2B (Reg. 2019/1150 Art. 1-2).")
    employment_decision_tool: bool | None = Field(
        None, description="The ranker is an automated employment decision tool used for candidates or employees in "
                          "New York City (NYC Local Law 144 of 2021, Admin. Code §20-870; 6 RCNY §5-300).")
    jp_specified_platform: bool | None = Field(
        None, description="A specified digital platform provider designated under Japan's Act on Improving "
                          "Transparency and Fairness of Digital Platforms (Act No. 38 of 2020, Art. 4).")


PROVIDER_FACTS = tuple(ProviderFacts.model_fields)


Level = Literal["low", "medium", "high"]


class RiskAnalysis(StrictModel):
    """The audit risk analysis of one audited obligation (Delegated Regulation (EU) 2024/436 Art. 9): what only the
    auditor can judge, printed in the dsa-audit document."""

    inherent: Level = Field(description="Risk of non-compliance from the service's nature, design and use "
                                        "(Art. 2(10)).")
    control: Level = Field(description="Risk that the provider's internal controls miss a misstatement (Art. 2(11)).")
    detection: Level = Field(description="Risk that the audit misses a relevant misstatement (Art. 2(9)).")
    reasoning: str = Field(min_length=1, max_length=4000, description="Why, in the auditor's words.")


class ThirdParty(StrictModel):
    """A third party the audit consulted (DSA Art. 37(4)(f); Annex I Section F.1 of Reg. 2024/436)."""

    name: str = Field(min_length=1)
    contact: str | None = Field(None, description="Its representative and contact information.")
    dates: str | None = Field(None, description="Date(s) of the consultation.")
    input: str | None = Field(None, description="What it provided.")


class TeamMember(StrictModel):
    """A member of the auditing team (Annex I Section B.2 of Reg. 2024/436)."""

    name: str = Field(min_length=1)
    organisation: str | None = None
    email: str | None = None
    responsibilities: str | None = Field(None, description="Their responsibilities and the work they did.")


class AuditMeta(StrictModel):
    """Who audits what, and why: printed on the report's cover."""

    title: str = Field(min_length=1, description="Title of the audit report.")
    organisation: str = Field(min_length=1, description="Organisation whose ranking system is audited.")
    owner: str | None = Field(None, description="Person or team responsible for the model.")
    period: str | None = Field(None, description="Period under review, e.g. 2026-Q4.")
    purpose: str | None = Field(None, description="Why the audit is done, e.g. the regulation it answers.")
    retention_years: int | None = Field(None, ge=0, le=100, description="How long the organisation keeps this "
                                        "run folder (years); policy rules check it (e.g. DSA Art. 34(3): 3).")
    limitations: list[str] = Field([], description="Known limitations the model owner records; printed in the "
                                                   "report's limitations section.")
    data_origin: Literal["real", "synthetic", "mixed"] | None = Field(
        None, description="Whether the audited data are real users' queries, synthetic, or both (on the cover).")
    intended_use: str | None = Field(None, description="What the ranking system is for, in the owner's words "
                                                       "(AI Act Annex IV 1(a)).")
    out_of_scope: list[str] = Field([], description="Uses the system is not meant for.")
    human_oversight: str | None = Field(None, description="How people oversee the ranking and can correct it "
                                                          "(AI Act Art. 14).")
    auditor: str | None = Field(None, description="Who ran the audit (person or team).")
    approver: str | None = Field(None, description="Who approved the report.")
    auditor_subject: str | None = Field(None, min_length=3, max_length=500,
                                        description="The auditor's certificate subject (RFC 4514, e.g. "
                                                    "`CN=Ann Auditor,O=Example Bank`): `auditor approve` refuses an "
                                                    "approval by that person (four eyes).")
    approver_subject: str | None = Field(None, min_length=3, max_length=500,
                                         description="The approver's certificate subject (RFC 4514): only that "
                                                     "person's approval is taken (`auditor approve`, `verify`).")
    independence: str | None = Field(None, description="The auditor's independence from the model owner, in one "
                                                       "statement (e.g. a separate team, no part in building it).")
    addressee: str | None = Field(None, description="To whom the report is addressed (e.g. the board, a "
                                                    "regulator).")
    assurance: Literal["reasonable", "limited"] | None = Field(
        None, description="The level of assurance the engagement gives (ISAE 3000): `reasonable` (a positive "
                          "conclusion) or `limited` (nothing came to our attention).")
    qualifications: str | None = Field(None, description="The auditor's qualifications, in one statement.")
    place: str | None = Field(None, description="Where the report is issued (city).")
    distribution_date: Day | None = Field(
        None, strict=False, description="The date the audited tool is distributed, i.e. put to use (YYYY-MM-DD): "
                                        "NYC LL144's published summary states it beside the audit's date, and the "
                                        "audit may be at most a year older (6 RCNY §5-301(a), §5-303).")
    address: str | None = Field(None, description="The audited provider's address (DSA Art. 37(4)(a)).")
    contact: str | None = Field(None, description="The audited provider's point of contact (DSA Art. 37(4)(a)).")
    team: list[TeamMember] = Field([], description="The auditing team (dsa-audit: Annex I Section B.2).")
    standards: list[str] = Field([], description="Auditing, independence and quality standards the auditing "
                                                 "organisation applies (dsa-audit: Annex I Section B.4-6).")
    third_parties: list[ThirdParty] = Field([], description="Third parties the audit consulted (DSA Art. 37(4)(f)).")
    risk_assessment: dict[str, RiskAnalysis] = Field(
        {}, description="The audit risk analysis per audited obligation, keyed by the provision as the pack's "
                        "`covers` names it (e.g. `Art. 27(1)`): inherent, control and detection risk with the "
                        "reasoning (Reg. 2024/436 Art. 9).")
    materiality: dict[str, str] = Field(
        {}, description="The materiality threshold per audited obligation, in the auditor's words, keyed by the "
                        "provision (Reg. 2024/436 Art. 10(2)(a)); default: the thresholds of its rules.")
    provider: ProviderFacts = Field(ProviderFacts(), description="What the provider is, for the laws' scope: "
                                                                 "`{gatekeeper, high_risk, online_platform, "
                                                                 "very_large_platform, intermediation_service, "
                                                                 "employment_decision_tool, jp_specified_platform}`.")


ModelKindName = Literal["lightgbm", "sklearn", "xgboost", "catboost", "onnx", "mlflow",
                        "callable"]  # models.KINDS, in order


class ModelSpec(StrictModel):
    """The ranker under audit."""

    path: InputFile | None = Field(None, description="Model file (LightGBM .txt/.json, scikit-learn .skops, XGBoost "
                                                     ".json/.ubj, CatBoost .cbm/.json, ONNX .onnx).")
    kind: ModelKindName | None = Field(
        None, description="Model kind; inferred from the file name when left out (a .json file is read as LightGBM: "
                          "set `xgboost` or `catboost` for theirs), `mlflow` when `uri` is given.")
    uri: ServiceUrl | None = Field(None, min_length=1, max_length=2000,
                                   description="Kind `mlflow`: the logged model, `models:/<name>/<version>` (or "
                                               "`@<alias>`), `runs:/<run id>/<path>`, or a folder holding an "
                                               "MLmodel file (relative to the spec). Its LightGBM, XGBoost, CatBoost "
                                               "or ONNX file is checked and loaded as that kind's file is.")
    tracking_uri: ServiceUrl | None = Field(None, min_length=1, max_length=2000,
                                     description="Kind `mlflow`: the MLflow tracking server or store (e.g. "
                                                 "`sqlite:///mlflow.db`, relative to the spec; "
                                                 "`https://mlflow.example`); default $MLFLOW_TRACKING_URI.")
    entry: str | None = Field(None, description="`module:function` for kind `callable` (needs `trust: true`).")
    trust: bool = Field(False, description="Allow pickles and Python callables, which run code when loaded.")
    name: str | None = Field(None, min_length=1, max_length=200, pattern=r"^[^/\s][^/]*$",
                             description="The audited system's stable name across versions (e.g. catalogue-ranker): "
                                         "the register follows its findings and figures from review to review. "
                                         "Without it, the registered model's name (kind `mlflow`), else the audit's "
                                         "title.")
    version: str | None = Field(None, min_length=1, description="The model's version in the owner's registry "
                                                                "(kind `mlflow`: the registered version when left "
                                                                "out).")
    training_date: Day | None = Field(None, strict=False, description="When the model was trained "
                                                                      "(YYYY-MM-DD).")
    preprocessing: str | None = Field(None, min_length=1, max_length=2000,
                                      description="What the data went through before the model scores them, when "
                                                  "the audited features are not the raw ones (e.g. a scikit-learn "
                                                  "Pipeline's transforms: the Python API fills this in); printed "
                                                  "with the model in the report.")

    @model_validator(mode="after")
    def _kind_and_source(self) -> ModelSpec:
        if self.kind == "mlflow" or (self.kind is None and self.uri is not None):
            if self.uri is None:
                raise ValueError("kind `mlflow` needs `uri: models:/<name>/<version>` (or runs:/<run id>/<path>, or "
                                 "a folder holding an MLmodel file)")
            if self.path is not None or self.entry is not None:
                extra = "path" if self.path is not None else "entry"
                raise ValueError(f"kind `mlflow` reads the model from `uri`: remove `{extra}`")
            object.__setattr__(self, "kind", "mlflow")
            return self
        if self.uri is not None or self.tracking_uri is not None:
            raise ValueError(f"`{'uri' if self.uri is not None else 'tracking_uri'}` is for kind `mlflow` (a model "
                             "logged with MLflow); remove it, or set `kind: mlflow`")
        if self.kind == "callable" or (self.kind is None and self.entry):
            if not self.entry:
                raise ValueError("kind `callable` needs `entry: module:function`")
            object.__setattr__(self, "kind", "callable")
            return self
        if self.path is None:
            raise ValueError("give the model file in `path` (or a model logged with MLflow in `uri`)")
        if self.kind is None:
            from auditor.models import kind_from_suffix

            kind = kind_from_suffix(self.path)
            if kind is None:
                raise ValueError(f"cannot tell the model kind from '{self.path.name}'; set `kind` (one of "
                                 f"{', '.join(get_args(ModelKindName))})")
            object.__setattr__(self, "kind", kind)
        return self


class WhyTestData(StrictModel):
    """Why an audit used test data instead of historical data, and where they come from (6 RCNY §5-302)."""

    why: Literal["no_historical_data", "insufficient_historical_data"] = Field(
        description="`no_historical_data`: the tool has not been used yet (nor by other employers whose data could "
                    "serve); `insufficient_historical_data`: too little for a statistically significant audit.")
    how: str = Field(min_length=1, max_length=2000, description="How the test data were generated and obtained.")


class DataDescription(StrictModel):
    """Where the audited data come from, in the owner's words: what a reader needs to judge what the figures
    generalise to (the exposure "merit" and every quality figure rest on the labels)."""

    frame: str | None = Field(None, max_length=2000, description="The sampling frame: which queries were drawn, from "
                                                                 "what population (e.g. 80 searches drawn at random "
                                                                 "from the shop's EU search log).")
    window: str | None = Field(None, max_length=500, description="The time window the queries come from.")
    labels: str | None = Field(None, max_length=2000, description="Where the relevance labels come from (editors, "
                                                                  "clicks, purchases) and how they were graded.")
    data_type: Literal["historical", "test"] | None = Field(
        None, description="NYC LL144 (6 RCNY §5-302): `historical` — data from the tool's real use (this employer's "
                          "or others'); `test` — data made or gathered for the audit, allowed when too little "
                          "historical data exists (`test_data` then says why and how).")
    test_data: WhyTestData | None = Field(None, description="For `data_type: test`: why historical data was not used "
                                                         "and how the test data were generated and obtained (6 RCNY "
                                                         "§5-302): printed in the published summary.")

    @model_validator(mode="after")
    def _test_data_explained(self) -> DataDescription:
        if self.data_type == "test" and self.test_data is None:
            raise ValueError("test data need `test_data: {why: ..., how: ...}`: why historical data was not used and "
                             "how the test data were generated and obtained (6 RCNY §5-302)")
        if self.data_type != "test" and self.test_data is not None:
            raise ValueError("`test_data` explains test data: set `data_type: test`, or leave `test_data` out")
        return self


class DatasetSpec(StrictModel):
    """The query-document data the audit runs on."""

    path: InputFile = Field(description="SVMlight/LETOR (.txt, .gz), CSV or Parquet file.")
    description: DataDescription | None = Field(None, description="The data's sampling frame, time window and "
                                                                  "label source, printed in the report's Scope.")
    format: Literal["svmlight", "csv", "parquet"] | None = Field(None, description="Inferred from the name.")
    feature_names: InputFile | None = Field(None, description="File with one feature name a line.")
    query_column: str = Field("qid", description="CSV/Parquet: the query id column.")
    label_column: str | None = Field("label", description="CSV/Parquet: the relevance label column.")
    doc_id_column: str | None = Field(None, description="CSV/Parquet: the document id column.")
    feature_columns: list[str] | None = Field(None, description="CSV/Parquet: feature columns (default: numeric).")
    attribute_columns: list[str] = Field(
        [], description="CSV/Parquet: columns read beside the data as text and never given to the model (e.g. sex, "
                        "race_ethnicity for a bias audit, `selection_rates`); they are no features by default.")
    query_file: InputFile | None = Field(None, description="SVMlight without qid: file of group sizes.")
    zero_based: bool | Literal["auto"] = Field("auto", description="SVMlight: are feature indices 0-based?")
    nan_policy: Literal["reject", "missing"] = Field(
        "reject", description="Missing/infinite feature values: reject the data, or pass them as missing.")
    max_label: int = Field(31, ge=1, description="Highest allowed relevance grade.")
    sample_queries: int | None = Field(
        None, ge=1, description="Audit a stratified sample of this many queries (by query length and label mix, "
                                "seeded by the spec's seed). Parquet is then read one row group at a time, keeping "
                                "only the sampled queries: memory stays bounded on files larger than RAM.")
    max_bytes: int = Field(
        MAX_DATA_BYTES, ge=1 << 20, description="Most memory reading the data may take, in bytes: the file's text "
                                                "(inflated) with the arrays parsed from it, estimated while reading, "
                                                "and the dense feature matrix. Default 4 GiB.")
    max_docs_per_query: int = Field(
        MAX_DOCS_PER_QUERY, ge=2, description="Most documents a query may have: the audit compares every pair of "
                                              "a query's documents (MSLR-WEB30K has at most 1,251).")


class MaskingSpec(StrictModel):
    """How a feature is removed when an explanation is tested (see auditor/models/masking.py)."""

    strategy: Literal["mean", "median", "zero", "background"] = Field(
        "mean", description="Replace masked features by the background mean (default), median, zero, or by "
                            "background rows (the masked score is the mean over `samples` rows).")
    samples: int = Field(20, ge=1, le=1000, description="Background rows for strategy `background`: a masked "
                                                       "score is the mean score over them.")
    rows: int | None = Field(
        None, ge=1, le=1000, description="Strategy `background` measured as the listwise peers do: validity is the "
                                         "tau averaged over N masked rankings, one per background row (local "
                                         "explanations report it beside the score-averaged one; `background_search` "
                                         "optimises it). Explainers that need one masked score take the mean over "
                                         "the same N rows (as `samples: N`). Give `rows` or `samples`, not both.")

    @model_validator(mode="before")
    @classmethod
    def _rows_are_samples_too(cls, data: Any) -> Any:
        """`rows: N` masks with the same N rows as `samples: N` (so every evidence item sees the same rows)."""
        if isinstance(data, dict) and data.get("rows") is not None:
            if "samples" in data:
                raise ValueError("`rows` (tau averaged over background rows) and `samples` (scores averaged over "
                                 "them) are two measures of the same rows: give one")
            if data.get("strategy") != "background":
                raise ValueError("`rows` are background rows: set `strategy: background`")
            data = {**data, "samples": data["rows"]}
        return data


class ExecutorSpec(StrictModel):
    """Where per-query work runs (auditor/evidence/executor.py). The evidence is the same under every executor."""

    kind: Literal["auto", "serial", "processes", "dask"] = Field(
        "auto", description="auto: worker processes when there is enough per-query work, else this process; "
                            "serial; processes (local worker processes); dask (a Dask distributed cluster).")
    jobs: int | None = Field(None, ge=1, description="Cores the audit may use: worker processes, and the threads "
                                                     "of this process (default: every CPU; 1 = serial on one "
                                                     "core). For dask without an address: LocalCluster workers.")
    address: ServiceUrl | None = Field(None, min_length=1, description="Dask scheduler address, e.g. "
                                                                       "tcp://10.0.0.5:8786 (kind dask; default: a "
                                                                       "LocalCluster).")

    @model_validator(mode="after")
    def _address_needs_dask(self) -> ExecutorSpec:
        if self.address is not None and self.kind != "dask":
            raise ValueError("`address` is a Dask scheduler: set `kind: dask` too")
        return self


class BudgetSpec(StrictModel):
    """A time budget for the evidence: the engine samples queries and leaves out optional work so the cost
    model's estimate fits, the same way for the same spec and seed, and says what it chose (auditor/run/budget.py)."""

    minutes: float = Field(gt=0, le=100_000, description="Minutes the evidence and the report may take, estimated "
                                                         "at the reference scoring speed of the model (validate "
                                                         "prints the estimate).")


class FeatureInfo(StrictModel):
    """What one feature means, for the report's feature dictionary."""

    meaning: str = Field(min_length=1, description="What the feature measures, in plain words.")
    unit: str | None = Field(None, min_length=1, description="Its unit or scale, e.g. EUR, days, 0-1, yes/no.")

    @model_validator(mode="before")
    @classmethod
    def _short_form(cls, data: Any) -> Any:
        """`price: Price of the book` is `price: {meaning: Price of the book}`."""
        return {"meaning": data} if isinstance(data, str) else data


class Assignment(StrictModel):
    """Who acts on a rule's finding, and by when (printed beside the finding in the executive summary)."""

    rule: str = Field(min_length=1, description="Rule id, e.g. P2B-4.")
    owner: str = Field(min_length=1, description="Person or team responsible for the remedy.")
    due: Day = Field(strict=False, description="Date the remedy is due (YYYY-MM-DD).")
    note: str | None = Field(None, description="What was agreed.")


class Waiver(StrictModel):
    """An accepted exception: turns a rule's FAIL into WAIVED until it expires."""

    rule: str = Field(min_length=1, description="Rule id, e.g. BASE-1.")
    justification: str = Field(min_length=1)
    approver: str = Field(min_length=1)
    expires: Day = Field(strict=False, description="Last day the waiver applies (YYYY-MM-DD).")


class OutputSpec(StrictModel):
    """Where run folders go and what is rendered. evidence.json is always written."""

    dir: OutputPath = Field(Path("reports"), description="Folder for run folders (relative to the spec).")
    formats: list[Literal["html", "pdf"]] = Field(
        ["html"], description="Renderings besides evidence.json: `html` (report.html) and `pdf` (report.pdf, "
                              "PDF/A-3b with evidence.json attached).")
    documents: list[Literal["report", "ll144-summary", "dsa-audit"]] = Field(
        ["report"], description="The documents to render, each in every format of `formats`: `report` (the audit "
                                "report), `ll144-summary` (NYC Local Law 144's summary of results, a page to post: "
                                "ll144-summary.html/.pdf; needs `selection_rates`), `dsa-audit` (a DSA Art. 37 "
                                "audit report after Annex I of Reg. 2024/436; needs the `eu-dsa-art27-34` pack). "
                                "auditor/report/documents.py.")
    timings: bool = Field(False, description="Show wall-clock cost tables in report.html/pdf. They differ between "
                                             "identical runs, so the reports are byte-reproducible only when false.")
    templates: InputFolder | None = Field(
        None, description="An organisation's template folder: a template there (e.g. sections/cover.html.j2) "
                          "replaces the default of the same name; `custom.css` is added after the default CSS.")
    archive_inputs: Literal["decisive", "all"] = Field(
        "decisive", description="What the run keeps of its inputs under inputs/ (listed in the signed bundle, so the "
                                "run verifies and reruns on its own): `decisive` the spec, its policy packs, "
                                "templates, feature dictionary and name/query files, a published statement and the "
                                "baseline's evidence; `all` the model and the data too.")
    archive_max_mb: float = Field(256, gt=0, le=1_000_000, description="The most the archive may hold, in MiB: an "
                                                                      "input that would pass it is listed, not kept.")


class Pkcs11Spec(StrictModel):
    """A signing key held by a PKCS#11 token (an HSM, a smart card, SoftHSM2): it signs there and never leaves it."""

    module: InputFile = Field(description="The token's PKCS#11 library, e.g. /usr/lib/softhsm/libsofthsm2.so.")
    token: str = Field(min_length=1, description="The token's label.")
    key_label: str = Field(min_length=1, description="Label of the RSA private key on the token.")
    cert_label: str | None = Field(None, description="Label of its certificate on the token (default: key_label).")
    cert: InputFile | None = Field(None, description="The certificate as a file (PEM/DER), when the token holds "
                                                     "none.")


class SigningSpec(StrictModel):
    """Sign the run: a PAdES signature in report.pdf and a DSSE bundle over every file (see docs/signing.md)."""

    key: InputFile | None = Field(None, description="PKCS#12 file (.p12) with the RSA signing key and its X.509 "
                                                    "certificate (`auditor keygen` makes one); or `pkcs11`.")
    pkcs11: Pkcs11Spec | None = Field(None, description="Sign with a key held by a PKCS#11 token instead of `key`.")
    passphrase_env: str = Field("AUDITOR_KEY_PASS", min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                                description="Name of the environment variable that holds the passphrase of "
                                            "`key` and `bundle_key` (never the passphrase itself).")
    pin_env: str = Field("AUDITOR_PKCS11_PIN", min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
                         description="Name of the environment variable that holds the token's user PIN.")
    bundle_key: InputFile | None = Field(None, description="Ed25519 private key (PEM, encrypted with the "
                                                           "passphrase) that signs bundle.dsse.json; with `pkcs11` "
                                                           "and no bundle_key, the token's key signs it.")
    chain: list[InputFile] = Field([], description="CA certificates (PEM/DER) from the signer's issuer up to the "
                                                   "root, embedded for long-term validation (default: those in "
                                                   "the PKCS#12 file).")
    timestamp_url: ServiceUrl | None = Field(None, pattern=r"^https?://[^\s]+$", max_length=2000,
                                      description="An RFC 3161 time-stamping authority: the PDF signature gets its "
                                                  "timestamp (PAdES B-T), the validation data and a document "
                                                  "timestamp follow (B-LTA), and the bundle's signature is "
                                                  "timestamped too. Also AUDITOR_TSA_URL or --timestamp-url.")
    timestamp_roots: list[InputFile] = Field([], description="The TSA's root certificates (PEM/DER), to which its "
                                                             "tokens must chain (also AUDITOR_TSA_ROOTS, a "
                                                             "path list).")

    @model_validator(mode="after")
    def _one_key(self) -> SigningSpec:
        if (self.key is None) == (self.pkcs11 is None):
            raise ValueError("name the signing key once: either `key` (a PKCS#12 file) or `pkcs11` (a token)")
        if self.key is not None and self.bundle_key is None:
            raise ValueError("`bundle_key` is missing: the Ed25519 key that signs bundle.dsse.json "
                             "(`auditor keygen` makes one)")
        return self


def _evidence_union() -> Any:
    """One tagged union member per registered evidence kind: `- name: {options}`."""
    members = []
    for name, plugin in REGISTRY.items():
        fields: dict[str, Any] = {name: (plugin.options, ...)}
        item = create_model(f"{plugin.options.__name__}Item",
                            __config__=ConfigDict(extra="forbid", frozen=True, strict=True, defer_build=True),
                            **fields)
        members.append(Annotated[item, Tag(name)])

    def tag(value: Any) -> str | None:
        if isinstance(value, BaseModel):
            return next(iter(type(value).model_fields))
        if isinstance(value, dict) and len(value) == 1:
            return str(next(iter(value)))
        return None

    return Annotated[Union[tuple(members)], Discriminator(  # noqa: UP007 - a runtime tuple of members
        tag, custom_error_type="unknown_evidence", custom_error_message="unknown evidence kind")]


if TYPE_CHECKING:  # a one-key model per kind, built at run time from the registry
    EvidenceItem: TypeAlias = BaseModel
else:
    EvidenceItem = _evidence_union()
_KINDS_VERSION = [kinds_version()]  # the registry as the union above was built from it


def refresh_kinds() -> None:
    """Rebuild the spec's evidence items after a kind was registered (`auditor.evidence.registry.register`): a kind
    registered from any module is a spec key, in the JSON Schema and in error hints without editing this file."""
    if _KINDS_VERSION[0] == kinds_version():
        return
    AuditSpec.model_fields["evidence"].annotation = list[_evidence_union()]  # type: ignore[misc,assignment]
    AuditSpec.model_rebuild(force=True)
    _KINDS_VERSION[0] = kinds_version()


class AuditSpec(StrictModel):
    """A declarative audit: the model, the data, the evidence wanted and the policies that judge it."""

    audit: AuditMeta
    model: ModelSpec
    dataset: DatasetSpec
    background: DatasetSpec | None = Field(
        None, description="Reference data for masking and samplers (e.g. the training set); default: the dataset.")
    masking: MaskingSpec = MaskingSpec()
    executor: ExecutorSpec = ExecutorSpec()
    budget: BudgetSpec | None = Field(None, description="A time budget, e.g. `{minutes: 15}`: per-query evidence "
                                                        "audits a seeded sample of queries chosen so the estimate "
                                                        "fits (default: no budget, everything as specified).")
    evidence: list[EvidenceItem] = Field(min_length=1, description="Evidence items, each `- name: {options}`.")
    policies: list[str] = Field([], description="Built-in pack names or paths to policy YAML files.")
    waivers: list[Waiver] = Field([], description="Accepted exceptions to rules.")
    findings: list[Assignment] = Field([], description="Owners and due dates for the remedies of rules' findings.")
    features: dict[str, FeatureInfo] = Field({}, description="Feature dictionary: what each feature means and its "
                                                             "unit, e.g. `price: {meaning: Price, unit: EUR}`.")
    feature_dictionary: InputFile | None = Field(
        None, description="CSV file with columns `name`, `meaning` and optionally `unit`: the feature dictionary "
                          "(entries in `features` take precedence).")
    seed: int = Field(0, ge=0, description="Seed for every random draw; same spec + seed ⇒ same evidence.")
    output: OutputSpec = OutputSpec()
    signing: SigningSpec | None = Field(None, description="Sign the run (PDF signature and DSSE bundle).")
    baseline: InputFolder | None = Field(None, description="Run folder of the previous review (holds "
                                                           "evidence.json): the report gets a 'since last review' "
                                                           "section comparing this run with it (without it: the "
                                                           "system's previous review in the register).")
    register_location: RegisterLocation | None = Field(  # `register:` (BaseModel's metaclass has a `register`)
        None, alias="register",
        description="The register of audits and findings: a path (an SQLite file, relative to the spec), a "
                    "postgresql:// URL (a team's shared register), or false for none. Default: register.sqlite in "
                    "the output folder (docs/governance.md).")

    @model_validator(mode="before")
    @classmethod
    def _short_evidence_forms(cls, data: Any) -> Any:
        """Accept `- ranking_quality` and `- ranking_quality:` (no options) as `- ranking_quality: {}`."""
        if isinstance(data, dict) and isinstance(data.get("evidence"), list):
            items = []
            for item in data["evidence"]:
                if isinstance(item, str):
                    item = {item: {}}
                elif isinstance(item, dict) and len(item) == 1 and next(iter(item.values())) is None:
                    item = {next(iter(item)): {}}
                items.append(item)
            data = {**data, "evidence": items}
        return data

    def evidence_items(self) -> list[tuple[str, Any]]:
        """(name, options) pairs in spec order. `masking.rows` becomes the default `background_rows` of the items
        that measure validity under background rows (local_explanations)."""
        out = []
        for item in self.evidence:
            name = next(iter(type(item).model_fields))
            options = getattr(item, name)
            if self.masking.rows is not None and "background_rows" in type(options).model_fields and \
                    "background_rows" not in options.model_fields_set:
                options = options.model_copy(update={"background_rows": self.masking.rows})
            out.append((name, options))
        return out


# --- loading ----------------------------------------------------------------------------------------------------

def load_spec(path: str | Path, *, relocate: dict[Path, Path] | None = None) -> tuple[AuditSpec, dict[str, Any]]:
    """Read and validate a spec file. Returns the spec and the raw mapping (kept in evidence.json as written).
    `relocate`: inputs read from elsewhere (resolved path → file), an archived run's (`auditor report --from-run`):
    the spec's text, and so its sha256 in evidence.json, stay as they were."""
    path = Path(path)
    if not path.exists():
        raise InputError("no such file", file=path, fix="give the path of an audit spec (YAML)")
    if path.is_dir():
        raise InputError("this is a folder, not a spec file", file=path, fix="give the path of the YAML file")
    try:
        text = read_bytes(path, limit=MAX_YAML_BYTES, what="spec file").decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("the spec is not UTF-8 text", file=path, fix="save it as UTF-8 YAML") from None
    raw, marks = parse_yaml(text, path)
    if not isinstance(raw, dict):
        raise InputError("the spec must be a mapping of keys (audit, model, dataset, evidence, ...)", file=path,
                         where="1:1", fix="start from `auditor init`")
    refresh_kinds()
    context: dict[str, Any] = {"base_dir": path.parent.resolve()}
    if relocate is not None:
        context["relocate"] = {Path(k).resolve(): Path(v) for k, v in relocate.items()}
    spec = validate_yaml(AuditSpec, raw, marks, path, context=context)
    _refuse_repeats(spec, marks, path)
    return spec, raw


def _refuse_repeats(spec: AuditSpec, marks: dict[tuple[str | int, ...], tuple[int, int]], path: Path) -> None:
    """Lists whose repeats were silently dropped or doubled: an evidence kind listed twice (its results are kept by
    name, so the later item replaced the first without a word) and a feature column listed twice (two features of
    one name)."""
    evidence = [name for name, _ in spec.evidence_items()]
    lists: list[tuple[tuple[str | int, ...], list[str]]] = [(("evidence",), evidence)]
    for role in ("dataset", "background"):
        ds = getattr(spec, role)
        if ds is not None and ds.feature_columns:
            lists.append(((role, "feature_columns"), list(ds.feature_columns)))
    for loc, names in lists:
        first: dict[str, int] = {}
        for index, name in enumerate(names):
            if name in first:
                line, column = marks.get((*loc, index), (0, 0))
                dotted = ".".join(map(str, loc))
                what = "evidence kind" if loc == ("evidence",) else "column"
                fix = (f"merge their options into one `- {name}:` item" if loc == ("evidence",) else
                       "list each column once")
                raise InputError(f"{dotted}.{index}: {what} '{shorten(name, 60)}' is listed more than once (first as "
                                 f"{dotted}.{first[name]})", file=path, where=f"{line}:{column}" if line else None,
                                 fix=fix)
            first[name] = index


def validate_yaml(model: type[M], raw: Any, marks: dict[tuple[str | int, ...], tuple[int, int]], path: Path, *,
                  context: dict[str, Any] | None = None) -> M:
    """`yaml_models.validate_yaml` with the evidence kinds as the spec's tagged items (nearest-kind errors, the
    keys allowed inside an item)."""
    return _validate_yaml(model, raw, marks, path, context=context,
                          tags={name: plugin.options for name, plugin in REGISTRY.items()})


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the spec, for editors (YAML language servers) to complete and check specs."""
    refresh_kinds()
    schema = AuditSpec.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "auditor audit spec"
    return schema

