"""Is an ONNX graph one the audit may run, and does ONNX Runtime load it? A reader of the graph, then a rehearsal.

An ONNX file is a program: its graph names the operators ONNX Runtime runs. What the reader refuses, before any
native code sees the bytes (the protobuf is parsed by the `onnx` package's Python classes):

- operators outside the ONNX standard: only the domains `ai.onnx` (written "") and `ai.onnx.ml`, each operator
  one the installed `onnx` knows, plus functions the model itself defines from those. ONNX Runtime runs other
  domains only from custom-operator libraries registered in the session, and the auditor registers none; a graph
  that names one is refused here with the operator's name instead of failing later;
- `Loop`, whose iteration count can come from the data, so no probe row can bound its run time (measured: a
  `Loop` of 10^13 iterations hangs ONNX Runtime's session until it is killed); `Scan` and `If` stay, their work is
  bounded by their inputs;
- model-local functions named like an operator ONNX Runtime registers (standard or its contrib domains, e.g.
  `('', 'Loop')` or `('com.microsoft', 'Gelu')`): ONNX Runtime resolves a node to its own operator first, so such
  a function shows one body and runs another operator (a real `Loop`, a contrib kernel). Function bodies are
  checked by the same rules, with their own opset imports;
- tensors kept in external files (`data_location: EXTERNAL`): a model would read files named by its author from
  beside it (ONNX Runtime refuses absolute paths but reads relative ones);
- anything but one input — a float or double tensor [rows × features] with a fixed feature count and a free row
  count — and one output of one score per row (shape [rows] or [rows, 1]); a metadata property `feature_names`
  (comma-separated, our convention: ONNX has no field for them) must name each input column once.

`rehearse_onnx` then creates the session and scores probe rows in a throw-away process (`_onnx_child.py`), so a
graph that crashes, exhausts memory or hangs ONNX Runtime does so there; it also measures the memory of batches
of rows, from which `onnx_scoring.plan_batches` chooses the audit's batch size. Random cuts and byte changes of the
example's graph (61 cuts, 150 changes) were all refused cleanly by ONNX Runtime itself; the rehearsal is the
defence for what a crafted graph may do that those did not (docs/security.md).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.core.errors import InputError
from auditor.models.rehearsal import MiB, rehearse

CHILD = Path(__file__).with_name("_onnx_child.py")
REHEARSAL_SECONDS = 60.0  # plus a second per MiB of model
STANDARD = ("", "ai.onnx", "ai.onnx.ml")
REFUSED_OPS = {"Loop"}
_EXPORT = ("export the model again from the framework that trained it (torch.onnx.export, tf2onnx, skl2onnx) with "
           "standard operators only")
_FLOAT, _DOUBLE = 1, 11  # onnx.TensorProto.FLOAT, DOUBLE
_EXTERNAL = 1  # onnx.TensorProto.EXTERNAL


@dataclass(frozen=True)
class Graph:
    """What the audit needs to know about a checked graph."""

    input_name: str
    output_name: str
    n_features: int
    dtype: str  # "float32" or "float64"
    opset: int
    n_nodes: int
    producer: str
    feature_names: tuple[str, ...] | None = None  # metadata_props `feature_names`: comma-separated, in input order


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:  # pragma: no cover - the extra is part of dev
        raise InputError("the model is an ONNX model but onnx is not installed",
                         fix="pip install 'auditor[onnx]'") from None
    return onnx


def check_graph(data: bytes, *, file: Path) -> Graph:
    """Parse and check the model (module docstring); InputError naming what is wrong and how to export it."""
    onnx = _onnx()
    try:
        model = onnx.ModelProto.FromString(data)
    except Exception as exc:  # google.protobuf.message.DecodeError, RecursionError
        raise InputError(f"not an ONNX model ({type(exc).__name__}: {str(exc)[:80]})", file=file,
                         fix="save the model with `onnx.save(model, 'model.onnx')`") from None
    if not model.HasField("graph") or model.ir_version <= 0:
        raise InputError("not an ONNX model (no graph)", file=file,
                         fix="save the model with `onnx.save(model, 'model.onnx')`")
    _check_text(model, file)
    functions = _local_functions(model, file)
    _check_opsets(model.opset_import, functions, "opset_import", file)
    for function in model.functions:
        where = f"function {function.name[:60]}"
        _check_opsets(function.opset_import, functions, f"{where}.opset_import", file)
        _check_nodes(function.node, functions, where, file)
    _check_nodes(model.graph.node, functions, "graph", file)
    for where, tensor in _tensors(model):
        if tensor.data_location == _EXTERNAL or len(tensor.external_data):
            raise InputError(f"tensor '{tensor.name[:60]}' is kept in an external file", file=file, where=where,
                             fix="save the model with its tensors inside: `onnx.save(model, 'model.onnx', "
                                 "save_as_external_data=False)`")
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    name, n_features, dtype = _input(model.graph, file)
    return Graph(input_name=name, output_name=_output(model.graph, file), n_features=n_features, dtype=dtype,
                 opset=int(opset), n_nodes=len(model.graph.node),
                 producer=f"{model.producer_name} {model.producer_version}".strip(),
                 feature_names=_feature_names(model, n_features, file))


def _check_text(model: Any, file: Path) -> None:
    """Every text field (names, domains, operator types, metadata) is UTF-8: protobuf hands an invalid one over as
    bytes, which ONNX Runtime would read as some other name."""
    string = model.DESCRIPTOR.fields_by_name["producer_name"].type  # FieldDescriptor.TYPE_STRING
    stack = [model]
    while stack:
        message = stack.pop()
        for field, value in message.ListFields():
            repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == 3  # protobuf < 5.28
            values = value if repeated else [value]
            if field.type == string and any(isinstance(v, bytes) for v in values):
                raise InputError(f"a {field.name} in the model is not UTF-8 text", file=file,
                                 fix="save the model again; the file is damaged or was edited")
            if field.message_type is not None:
                stack.extend(values)


def _domain(domain: str) -> str:
    """`ai.onnx` and "" are one domain, for ONNX Runtime as for the standard."""
    return "" if domain == "ai.onnx" else domain


@functools.cache
def runtime_operators() -> frozenset[tuple[str, str]]:
    """Every (domain, operator) ONNX Runtime or the `onnx` package defines, at any version: the standard's and
    ONNX Runtime's contrib domains (`com.microsoft`, ...). ONNX Runtime resolves a node to these before any
    model-local function of the same name."""
    onnx = _onnx()
    names = {(_domain(s.domain), s.name) for s in onnx.defs.get_all_schemas_with_history()}
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as state

        names |= {(_domain(s.domain), s.name) for s in state.get_all_operator_schema()}
    except (ImportError, AttributeError):  # pragma: no cover - every onnxruntime 1.x has it
        raise InputError("cannot list ONNX Runtime's operators to check the model's functions",
                         fix="reinstall onnxruntime (`pip install 'auditor[onnx]'`)") from None
    return frozenset(names)


def _local_functions(model: Any, file: Path) -> set[tuple[str, str]]:
    """The (domain, name) of each function the model defines; refused when ONNX Runtime has an operator of that
    name (it would run its operator, not the body shown) or when two functions share it."""
    functions: set[tuple[str, str]] = set()
    taken = runtime_operators()
    for function in model.functions:
        key = (_domain(function.domain), function.name)
        where = f"function {function.name[:60]}"
        if key in taken:
            raise InputError(f"the model defines a function '{function.name[:60]}' in domain "
                             f"'{function.domain[:60]}', the name of an ONNX Runtime operator: ONNX Runtime would run "
                             "its operator, not the function's body", file=file, where=where,
                             fix=f"{_EXPORT}; give model-local functions a domain of their own")
        if key in functions:
            raise InputError(f"the model defines function '{function.name[:60]}' of domain "
                             f"'{function.domain[:60]}' twice", file=file, where=where, fix=_EXPORT)
        functions.add(key)
    return functions


def _check_opsets(opsets: Any, functions: set[tuple[str, str]], where: str, file: Path) -> None:
    """Imported domains are the standard's or those of the model's own functions."""
    local = {domain for domain, _ in functions}
    for opset in opsets:
        if opset.domain not in STANDARD and opset.domain not in local:
            raise InputError(f"the model imports operator domain '{opset.domain[:60]}', which is not standard ONNX",
                             file=file, where=where,
                             fix=f"{_EXPORT}; custom operators are not run (no custom-operator library is loaded)")


def _check_nodes(nodes: Any, functions: set[tuple[str, str]], where: str, file: Path) -> None:
    """Every node, in this graph and the subgraphs of its attributes, runs a standard operator or a local function."""
    onnx = _onnx()
    stack = [(node, where) for node in nodes]
    while stack:
        node, place = stack.pop()
        domain = node.domain
        if (_domain(domain), node.op_type) in functions:  # never an operator's name: `_local_functions`
            pass
        elif domain not in STANDARD:
            raise InputError(f"node '{node.name[:60]}' runs '{node.op_type[:60]}' from domain '{domain[:60]}', "
                             "which is not standard ONNX", file=file, where=place,
                             fix=f"{_EXPORT}; custom operators are not run (no custom-operator library is loaded)")
        elif not onnx.defs.has(node.op_type, "" if domain == "ai.onnx" else domain):  # "" and ai.onnx: one domain
            raise InputError(f"node '{node.name[:60]}' runs '{node.op_type[:60]}', which is not an ONNX operator",
                             file=file, where=place, fix=_EXPORT)
        elif node.op_type in REFUSED_OPS and domain in ("", "ai.onnx"):
            raise InputError(f"node '{node.name[:60]}' is a Loop, whose iteration count can come from the data, "
                             "so its run time has no bound", file=file, where=place,
                             fix="export the scoring graph without Loop (unroll it, or use Scan)")
        for attribute in node.attribute:
            inner = [attribute.g] if attribute.HasField("g") else []
            for graph in [*inner, *attribute.graphs]:
                stack.extend((sub, f"{place} > {node.op_type} '{node.name[:40]}'") for sub in graph.node)


def _tensors(model: Any) -> Any:
    """Every tensor the model carries: initializers, sparse initializers and node attributes, in every graph."""
    graphs = [("graph", model.graph)]
    nodes = [(f"function {f.name}", n) for f in model.functions for n in f.node]
    while graphs or nodes:
        if graphs:
            where, graph = graphs.pop()
            yield from ((where, t) for t in graph.initializer)
            for sparse in graph.sparse_initializer:
                yield where, sparse.values
                yield where, sparse.indices
            nodes.extend((where, n) for n in graph.node)
            continue
        where, node = nodes.pop()
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield where, attribute.t
            yield from ((where, t) for t in attribute.tensors)
            if attribute.HasField("sparse_tensor"):
                yield where, attribute.sparse_tensor.values
            if attribute.HasField("g"):
                graphs.append((where, attribute.g))
            graphs.extend((where, g) for g in attribute.graphs)


def _input(graph: Any, file: Path) -> tuple[str, int, str]:
    """(name, number of features, dtype) of the one input a ranker takes."""
    initialized = {t.name for t in graph.initializer}
    inputs = [v for v in graph.input if v.name not in initialized]
    fix = ("export the ranker with one input, a float tensor [rows × features] whose first axis is dynamic "
           "(torch.onnx.export(..., dynamic_axes={'input': {0: 'rows'}}))")
    if len(inputs) != 1:
        raise InputError(f"the model has {len(inputs)} inputs ({', '.join(v.name[:40] for v in inputs[:4])}); a "
                         "ranker takes one, the documents' features", file=file, where="graph.input", fix=fix)
    value = inputs[0]
    tensor = value.type.tensor_type
    if not value.type.HasField("tensor_type") or tensor.elem_type not in (_FLOAT, _DOUBLE):
        raise InputError(f"input '{value.name[:60]}' is not a float or double tensor", file=file,
                         where="graph.input", fix=fix)
    dims = tensor.shape.dim if tensor.HasField("shape") else []
    if len(dims) != 2:
        raise InputError(f"input '{value.name[:60]}' has {len(dims)} axes, a ranker's input has 2 (rows × "
                         "features)", file=file, where="graph.input", fix=fix)
    rows, features = dims
    if not features.HasField("dim_value") or features.dim_value < 1:
        raise InputError(f"input '{value.name[:60]}' does not fix its number of features", file=file,
                         where="graph.input", fix=fix.replace("whose first axis", "whose second axis is fixed and "
                                                              "whose first axis"))
    if rows.HasField("dim_value") and rows.dim_value > 0:
        raise InputError(f"input '{value.name[:60]}' takes exactly {rows.dim_value} row(s) per call", file=file,
                         where="graph.input", fix=fix)
    return value.name, int(features.dim_value), "float32" if tensor.elem_type == _FLOAT else "float64"


def _feature_names(model: Any, n_features: int, file: Path) -> tuple[str, ...] | None:
    """The input's column names when the model carries them: metadata property `feature_names`, comma-separated, in
    input order (ONNX itself has no place for them; `examples/rankers/train.py` writes them so). Without them a
    CSV's feature columns are read in file order."""
    text = next((p.value for p in model.metadata_props if p.key == "feature_names"), None)
    if text is None:
        return None
    names = tuple(name.strip() for name in text.split(","))
    if len(names) != n_features or len(set(names)) != n_features or not all(names):
        raise InputError(f"metadata feature_names lists {len(names)} names (distinct, non-empty: "
                         f"{len(set(n for n in names if n))}) for an input of {n_features} features", file=file,
                         where="metadata_props", fix="write one distinct name per input column, comma-separated, "
                                                     "or leave the property out")
    return names


def _output(graph: Any, file: Path) -> str:
    fix = "export the ranker with one output, its score: shape [rows] or [rows, 1]"
    if len(graph.output) != 1:
        raise InputError(f"the model has {len(graph.output)} outputs; a ranker gives one, the score", file=file,
                         where="graph.output", fix=fix)
    value = graph.output[0]
    tensor = value.type.tensor_type
    if not value.type.HasField("tensor_type") or tensor.elem_type not in (_FLOAT, _DOUBLE):
        raise InputError(f"output '{value.name[:60]}' is not a float or double tensor", file=file,
                         where="graph.output", fix=fix)
    dims = tensor.shape.dim if tensor.HasField("shape") else []
    if len(dims) > 2 or (len(dims) == 2 and dims[1].HasField("dim_value") and dims[1].dim_value != 1):
        shape = " × ".join(str(d.dim_value) if d.HasField("dim_value") else (d.dim_param or "?") for d in dims)
        raise InputError(f"output '{value.name[:60]}' has shape [{shape}], not one score per row", file=file,
                         where="graph.output", fix=fix)
    return value.name


def rehearse_onnx(data: bytes, graph: Graph, *, file: Path, max_rows: int = 65_536) -> dict[str, Any]:
    """Create the session and score probe rows in a throw-away process, then probe the memory of batches up to
    `max_rows` rows (`_onnx_child.memory_probe`); its report, or InputError if that fails, crashes, runs out of
    memory or time."""
    memory = 2048 * MiB + 16 * len(data)  # the interpreter, ONNX Runtime, the weights and their working copies
    outcome, _ = rehearse(CHILD, [graph.input_name, str(graph.n_features), graph.dtype, str(max_rows)], data,
                          file=file, library="ONNX Runtime", fix=_EXPORT, memory=memory,
                          timeout=REHEARSAL_SECONDS + len(data) / MiB)
    return outcome
