"""zymase's MLIR runtimes (the tape runtime, the memcpy adjoints, the run-time checks)
built as xDSL ops from a description kept with the sources, without xDSL's parser.

The runtimes are written as llvm-dialect MLIR text (``transforms/lower_tape.py``,
``autodiff/memcpy_adjoint.py``, ``autodiff/null_shadows.py``) and added to the modules
that call them. xDSL's parser takes 5-6 ms per kB of that text: 0.07 s of CPU, 9% of the
instructions of kpp's first ``zymase.grad`` call, in a process whose cache directory has
no pickled parse yet (``cache.parsed_mlir``; issue 29). Here each runtime function is
described once, as nested tuples of plain values (the op's class, its operands as
indices of the values defined before it, result types, properties, attributes,
successors, regions, the SSA names the text gave), generated from xDSL's own parse of the
same text and kept in :mod:`zymase.runtime_ops_data`, and built with ``Operation.create``
(about a tenth of the parse's time).

The description is looked up by the function's exact text, so a runtime edited without
regenerating the data is parsed as before (never built from a stale description), and
only under the xDSL version and the state of zymase's IR layer (``cache.ir_fingerprint``:
zymase's own op classes, ``zymase/ir``) that generated it, what a parse depends on
besides the text (``cache.parsed_mlir``'s key covers the same). ``python -m
zymase.runtime_ops`` regenerates the data after such a change;
``tests/python/test_runtime_ops.py`` checks that the data is current and that each module
built from it is the parse's (structurally equal, printed alike, SSA names included).
"""

from __future__ import annotations

import enum
import importlib
import re

#: a top-level function of a runtime's module text (two spaces of indentation)
_FUNCTION_START = re.compile(r"(?m)^(?=  llvm\.func )")


def split_functions(text: str) -> list[str] | None:
    """The texts of the functions of a runtime module (``builtin.module { llvm.func ...
    }``), or None when the module holds anything else at its top level."""
    body = text.strip()
    if not (body.startswith("builtin.module {") and body.endswith("}")):
        return None
    head, *functions = _FUNCTION_START.split(body[len("builtin.module {"):-1])
    if head.strip() or not functions:
        return None
    return [f.rstrip() for f in functions]


_classes: dict[tuple[str, str], type] = {}


def _class(module: str, name: str) -> type:
    cls = _classes.get((module, name))
    if cls is None:
        cls = _classes[(module, name)] = getattr(importlib.import_module(module), name)
    return cls


# ----- description (generation) --------------------------------------------------------


def _describe_value(v):
    """A property's or attribute's data as plain values (tagged tuples)."""
    from xdsl.ir import Attribute, Data, ParametrizedAttribute

    if isinstance(v, Attribute):
        cls = type(v)
        if isinstance(v, Data):
            return ("D", cls.__module__, cls.__qualname__, _describe_value(v.data))
        if isinstance(v, ParametrizedAttribute):
            return ("P", cls.__module__, cls.__qualname__, tuple(_describe_value(p) for p in v.parameters))
        raise TypeError(f"attribute {v!r} is neither data nor parametrized")
    if isinstance(v, enum.Enum):
        return ("E", type(v).__module__, type(v).__qualname__, v.value)
    if isinstance(v, tuple):
        return ("T", tuple(_describe_value(x) for x in v))
    if isinstance(v, frozenset):
        return ("F", tuple(sorted((_describe_value(x) for x in v), key=repr)))
    if v is None or isinstance(v, (bool, int, float, str, bytes)):
        return ("V", v)
    raise TypeError(f"cannot describe {type(v).__name__} {v!r}")


class _Tables:
    """The distinct op classes and attributes of the descriptions, each kept once and
    named by its index (an attribute is immutable: one instance serves every build)."""

    def __init__(self) -> None:
        self.classes: dict[tuple[str, str], int] = {}
        self.attributes: dict[tuple, int] = {}

    def op_class(self, cls) -> int:
        return self.classes.setdefault((cls.__module__, cls.__qualname__), len(self.classes))

    def attribute(self, attr) -> int:
        return self.attributes.setdefault(_describe_value(attr), len(self.attributes))


def describe_function(op, table: _Tables) -> tuple:
    """A top-level op of a parsed runtime module as plain values (module doc)."""
    values: dict = {}  # SSA value -> index, in the order the builder defines them
    blocks: dict = {}

    def region(r):
        out = []
        for b in r.blocks:
            blocks[b] = len(blocks)
            for a in b.args:
                values[a] = len(values)
            out.append((tuple(table.attribute(a.type) for a in b.args), tuple(a.name_hint for a in b.args),
                        b.name_hint, b))
        return tuple((types, names, hint, tuple(operation(o) for o in b.ops)) for types, names, hint, b in out)

    def operation(o):
        operands = []
        for x in o.operands:
            if x not in values:  # (the runtimes define every value before its uses in the text)
                raise ValueError(f"{o.name} uses a value defined after it")
            operands.append(values[x])
        successors = tuple(blocks[s] for s in o.successors) if all(s in blocks for s in o.successors) else None
        if successors is None:
            raise ValueError(f"{o.name} branches to a block of another region")
        regions = tuple(region(r) for r in o.regions)
        for res in o.results:
            values[res] = len(values)
        return (table.op_class(type(o)), tuple(operands),
                tuple(table.attribute(r.type) for r in o.results), tuple(r.name_hint for r in o.results),
                tuple(sorted((k, table.attribute(v)) for k, v in o.properties.items())),
                tuple(sorted((k, table.attribute(v)) for k, v in o.attributes.items())),
                successors, regions)

    return operation(op)


# ----- building ------------------------------------------------------------------------


def _value(d):
    tag = d[0]
    if tag == "D":
        return _class(d[1], d[2])(_value(d[3]))
    if tag == "P":
        return _class(d[1], d[2]).new(tuple(_value(p) for p in d[3]))
    if tag == "E":
        return _class(d[1], d[2])(d[3])
    if tag == "T":
        return tuple(_value(x) for x in d[1])
    if tag == "F":
        return frozenset(_value(x) for x in d[1])
    return d[1]


def _build(d, values: list, blocks: list, classes: list, attrs: list):
    from xdsl.ir import Block, Region

    cls, operands, result_types, result_names, properties, attributes, successors, regions = d
    built_regions = []
    for blocks_d in regions:
        region_blocks = []
        for arg_types, arg_names, hint, _ in blocks_d:
            b = Block(arg_types=[attrs[t] for t in arg_types])
            b.name_hint = hint
            for a, arg_hint in zip(b.args, arg_names):
                a.name_hint = arg_hint
                values.append(a)
            blocks.append(b)
            region_blocks.append(b)
        for b, (_, _, _, ops) in zip(region_blocks, blocks_d):
            b.add_ops([_build(o, values, blocks, classes, attrs) for o in ops])
        built_regions.append(Region(region_blocks))
    op = classes[cls].create(
        operands=[values[i] for i in operands], result_types=[attrs[t] for t in result_types],
        properties={k: attrs[v] for k, v in properties}, attributes={k: attrs[v] for k, v in attributes},
        successors=[blocks[i] for i in successors], regions=built_regions)
    for r, hint in zip(op.results, result_names):
        r.name_hint = hint
        values.append(r)
    return op


#: the data module's classes and attributes, made once per process
_tables: tuple[list, list] | None = None


def built_module(text: str):
    """The module xDSL's parser makes of the runtime ``text``, built from the kept
    descriptions; None when a function of it has none (then the caller parses)."""
    functions = split_functions(text)
    if functions is None:
        return None
    from zymase import runtime_ops_data as data
    from zymase.cache import ir_fingerprint
    from zymase.ir import _xdsl_version

    if data.XDSL_VERSION != _xdsl_version() or data.IR_FINGERPRINT != ir_fingerprint():
        return None  # described by another xDSL or another state of zymase's dialects
    described = [data.FUNCTIONS.get(f) for f in functions]
    if any(d is None for d in described):
        return None
    from zymase.ir import ModuleOp

    global _tables
    if _tables is None:
        _tables = [_class(m, n) for m, n in data.CLASSES], [_value(a) for a in data.ATTRIBUTES]
    return ModuleOp([_build(d, [], [], *_tables) for d in described])


# ----- the runtimes and the data file -------------------------------------------------


def runtime_texts() -> list[str]:
    """The runtime module texts the engine adds to modules as they are (without
    ``ZYMASE_TAPE_STATS``' counter, whose modules are parsed)."""
    from zymase.autodiff.memcpy_adjoint import _MEMCPY_ADJOINT, _WHOLE_FLOATS
    from zymase.autodiff.null_shadows import _CHECK
    from zymase.transforms.lower_tape import _CACHE_RUNTIME

    texts = [_CACHE_RUNTIME.replace("{TAPE_STATS}", ""), _WHOLE_FLOATS, _CHECK]
    for ftype in ("f64", "f32"):
        texts.append(_MEMCPY_ADJOINT.format(name=f"__zymase_memcpy_adjoint_{ftype}", t=ftype,
                                            size=8 if ftype == "f64" else 4))
    return texts


def generate() -> str:
    """The source of :mod:`zymase.runtime_ops_data` for the runtimes as they are now."""
    from zymase.cache import ir_fingerprint
    from zymase.ir import _xdsl_version, parse_mlir
    from zymase.ir.xdsl_import import importing_xdsl

    functions, table = {}, _Tables()
    with importing_xdsl():
        for text in runtime_texts():
            parsed = parse_mlir(text, "<zymase runtime>")
            for source, op in zip(split_functions(text), parsed.body.block.ops, strict=True):
                functions[source] = describe_function(op, table)
    lines = ['"""The runtimes\' functions as zymase.runtime_ops builds them; generated by',
             '``python -m zymase.runtime_ops``: do not edit."""', "",
             f"XDSL_VERSION = {_xdsl_version()!r}", f"IR_FINGERPRINT = {ir_fingerprint()!r}", "", "CLASSES = ["]
    lines += [f"    {c!r}," for c in table.classes]
    lines += ["]", "", "ATTRIBUTES = ["]
    lines += [f"    {a!r}," for a in table.attributes]
    lines += ["]", "", "FUNCTIONS = {"]
    for source, d in functions.items():
        lines.append(f"    {source!r}:\n        {d!r},")
    lines.append("}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    from pathlib import Path

    Path(__file__).with_name("runtime_ops_data.py").write_text(generate())
