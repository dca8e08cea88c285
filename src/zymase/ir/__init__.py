"""The IR layer: the only package that imports xDSL.

Everything else in zymase imports IR classes and dialects from here, so that an
xDSL upgrade touches one place. ``make_context()`` returns a context with every
dialect zymase reads or writes.

The dialects only the MLIR and JAX paths use (``stablehlo``, ``linalg``, ``tensor``,
``complex``, ``affine`` and ``affine_ext``) are imported on first use (``from
zymase.ir import linalg`` or ``ir.stablehlo``, :data:`_ON_DEMAND`), and contexts load
them when the parser first meets one of their ops or attributes: importing xDSL's
dialects is most of a ``zymase cc`` start-up, and the C path needs none of these
(``tests/python/test_startup_imports.py``). The standard dialects (``func``, ``arith``,
``math``, ``cf``, ``scf``, ``memref`` and zymase's ``arith_ext``, ``scf_ext``,
``memref_ext``), which the C and Numba paths do not build either, are names here that
import their module at the first attribute access (``ir/on_first_use.py``), so that
``from zymase.ir import arith`` stays an ordinary import; :class:`OpClasses` names their
classes in ``isinstance`` tuples without importing them.
"""

from __future__ import annotations

from zymase.ir import xdsl_import as _xdsl_import

# the dialects below are imported without parsing their ops' assembly formats until
# first used, nor importing asyncio (zymase/ir/xdsl_import.py)
_xdsl_import.begin()
from xdsl.context import Context
from xdsl.dialects import builtin
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FileLineColLoc,
    Float16Type,
    Float32Type,
    Float64Type,
    Float80Type,
    Float128Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntAttr,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
    UnknownLoc,
    VectorType,
    f16,
    f32,
    f64,
    i1,
    i8,
    i32,
    i64,
)
from xdsl.dialects.builtin import DYNAMIC_INDEX, ComplexType, NoneAttr, StridedLayoutAttr, TensorType
from xdsl.ir.affine import (
    AffineBinaryOpExpr,
    AffineBinaryOpKind,
    AffineConstantExpr,
    AffineDimExpr,
    AffineExpr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.parser import Parser
from xdsl.passes import ModulePass
from xdsl.printer import Printer
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free
from xdsl.utils.exceptions import ParseError, VerifyException

from zymase.analysis.op_classes import is_a
from zymase.errors import ZymaseError
from zymase.ir import enzyme, llvm_ext
_xdsl_import.end()

from zymase.ir.on_first_use import MODULES as _FIRST_USE_MODULES, DialectModule as _DialectModule, OpClasses

# the standard dialects, imported at their first attribute access (module doc)
arith = _DialectModule(_FIRST_USE_MODULES["arith"])
cf = _DialectModule(_FIRST_USE_MODULES["cf"])
func = _DialectModule(_FIRST_USE_MODULES["func"])
math = _DialectModule(_FIRST_USE_MODULES["math"])
scf = _DialectModule(_FIRST_USE_MODULES["scf"])
memref = _DialectModule(_FIRST_USE_MODULES["memref"])
arith_ext = _DialectModule(_FIRST_USE_MODULES["arith_ext"])
scf_ext = _DialectModule(_FIRST_USE_MODULES["scf_ext"])
memref_ext = _DialectModule(_FIRST_USE_MODULES["memref_ext"])

#: name -> (module, attribute or None for the module itself) of what is imported on first use
_ON_DEMAND = {
    "stablehlo": ("zymase.ir.stablehlo", None),  # read from JAX (frontends/jax.py)
    "chlo": ("zymase.ir.chlo", None),  # the elementwise math JAX emits beside StableHLO
    "affine_ext": ("zymase.ir.affine_ext", None),
    "linalg": ("xdsl.dialects.linalg.ops", None),  # the op classes (GenericOp, YieldOp, IndexOp)
    "tensor": ("xdsl.dialects.tensor", None),
    "affine": ("xdsl.dialects.affine", None),  # the op classes; AFFINE_EXT adds the syntax xDSL lacks
    "complex": ("xdsl.dialects.complex", None),  # lowered to pairs of floats before AD (transforms/lower_complex)
    # xDSL's builder and pattern rewriter, which the C and Numba paths do not use
    "Builder": ("xdsl.builder", "Builder"),
    "InsertPoint": ("xdsl.builder", "InsertPoint"),
    "GreedyRewritePatternApplier": ("xdsl.pattern_rewriter", "GreedyRewritePatternApplier"),
    "PatternRewriter": ("xdsl.pattern_rewriter", "PatternRewriter"),
    "PatternRewriteWalker": ("xdsl.pattern_rewriter", "PatternRewriteWalker"),
    "RewritePattern": ("xdsl.pattern_rewriter", "RewritePattern"),
}


def __getattr__(name: str):
    """What :data:`_ON_DEMAND` names (dialects, xDSL classes), imported when first asked for, and
    ``PICKLE_IDENTITY``."""
    if name == "PICKLE_IDENTITY":
        globals()[name] = _pickle_identity()
        return globals()[name]
    if name not in _ON_DEMAND:
        raise AttributeError(f"module 'zymase.ir' has no attribute '{name}'")
    import importlib

    module_name, attribute = _ON_DEMAND[name]
    with _xdsl_import.importing_xdsl():
        value = importlib.import_module(module_name)
    value = getattr(value, attribute) if attribute else value
    globals()[name] = value
    return value


def _dialect(module_name: str, attribute: str):
    """A factory of the dialect ``attribute`` of ``module_name`` (for a context's lazy
    registration)."""

    def load():
        import importlib

        with _xdsl_import.importing_xdsl():
            return getattr(importlib.import_module(module_name), attribute)

    return load


#: the dialects a context registers without loading: (name, module, attribute); the
#: parser loads one when it meets its first op, type or attribute
_LAZY_DIALECTS = (
    ("func", "xdsl.dialects.func", "Func"),
    ("arith", "zymase.ir.arith_ext", "ARITH_EXT"),  # xDSL's arith plus remf/index_castui
    ("math", "xdsl.dialects.math", "Math"),
    ("cf", "xdsl.dialects.cf", "Cf"),
    ("scf", "zymase.ir.scf_ext", "SCF_EXT"),  # xDSL's scf plus the scf.parallel syntax
    ("memref", "zymase.ir.memref_ext", "MEMREF_EXT"),  # xDSL's memref plus textual cast/copy
    ("tensor", "xdsl.dialects.tensor", "Tensor"),  # tensor.from_elements / extract / splat around enzyme.batch
    ("linalg", "xdsl.dialects.linalg", "Linalg"),
    ("complex", "xdsl.dialects.complex", "Complex"),
    ("affine", "zymase.ir.affine_ext", "AFFINE_EXT"),  # xDSL's affine plus affine.max and the if/parallel syntax
    ("stablehlo", "zymase.ir.stablehlo", "StableHLO"),  # read from JAX (frontends/jax.py)
    ("sdy", "zymase.ir.stablehlo", "Sdy"),  # the sharding rules JAX attaches to some StableHLO ops
    ("chlo", "zymase.ir.chlo", "CHLO"),  # the elementwise math JAX emits beside StableHLO (jnp.arctan, jnp.square, ...)
)

FLOAT_TYPES = (Float16Type, Float32Type, Float64Type, Float80Type)


def float_width(t: Attribute) -> int:
    """Bit width of a floating-point type, or of a vector's float lanes (decides fpext
    vs fptrunc)."""
    if isinstance(t, VectorType):
        t = t.element_type
    return t.bitwidth if isinstance(t, FLOAT_TYPES) else 64  # type: ignore[attr-defined]


def is_float_type(t: Attribute) -> bool:
    """True for the scalar floating-point types we differentiate."""
    return is_a(t, FLOAT_TYPES)  # (asked of every value's type: an ABC test per miss)


_PLUGIN_DIALECTS: list = []


def register_dialect(dialect) -> None:
    """Make a plug-in dialect (an xDSL ``Dialect``, e.g. one built from IRDL) known to
    every context zymase creates: the parser of ``zymase.mlir.compile`` and
    ``zymase-opt`` then read its ops. Its derivative rules are registered separately
    (``zymase.autodiff.registry.REGISTRY.register``)."""
    if all(d.name != dialect.name for d in _PLUGIN_DIALECTS):
        _PLUGIN_DIALECTS.append(dialect)


def dialect_from_irdl(text: str):
    """Build a dialect from its IRDL definition (``irdl.dialect @name {...}``), the
    way a plug-in dialect is declared without Python op classes; the op classes are
    in the returned dialect's ``operations``. Invalid IRDL becomes a ZymaseError."""
    from xdsl.dialects import irdl
    from xdsl.interpreters.irdl import make_dialect

    ctx = Context()
    ctx.load_dialect(builtin.Builtin)
    ctx.load_dialect(irdl.IRDL)
    try:
        module = Parser(ctx, text, "<irdl>").parse_module()
    except ParseError as exc:
        reason = str(exc).strip().splitlines()[-1]
        raise ZymaseError(f"cannot parse IRDL: {reason}", hint="check the irdl.dialect definition") from None
    dialects = [op for op in module.walk() if isinstance(op, irdl.DialectOp)]
    if len(dialects) != 1:
        raise ZymaseError(f"expected one irdl.dialect, found {len(dialects)}", hint="define one dialect per text")
    return make_dialect(dialects[0])


def make_context() -> Context:
    """A context with every dialect zymase uses (llvm is the extended one), plus the
    plug-in dialects given to :func:`register_dialect`."""
    ctx = Context(allow_unregistered=False)
    for dialect in (
        builtin.Builtin,
        llvm_ext.LLVM_EXT,
        enzyme.Enzyme,
        *_PLUGIN_DIALECTS,
    ):
        ctx.load_dialect(dialect)
    for name, module_name, attribute in _LAZY_DIALECTS:
        if name not in ctx.registered_dialect_names:  # a plug-in dialect of that name wins
            ctx.register_dialect(name, _dialect(module_name, attribute))
    return ctx


_HEX_DENSE = None


def _hex_floats_as_raw(text: str) -> str:
    """MLIR prints non-finite float elements as bit patterns (``dense<0xFFF0000000000000>
    : tensor<f64>``, JAX's -inf); xDSL 0.74 reads such a token as an integer and converts
    it to a float (1.8e19; a bf16 -inf, ``0xFF80``, became 65536 until session 33). The raw-data spelling ``dense<"0x...">`` (little-endian
    element bytes) is read exactly, so dense float literals holding bit patterns are
    rewritten to it before parsing."""
    global _HEX_DENSE
    import re
    import struct

    if "dense<" not in text or "0x" not in text:
        return text
    if _HEX_DENSE is None:
        _HEX_DENSE = re.compile(r"dense<([^\"<>]*0x[^\"<>]*)>(\s*:\s*(?:tensor|vector)<([0-9x?]*?)(bf16|f16|f32|f64)>)")
    formats = {"f16": "<e", "f32": "<f", "f64": "<d"}
    widths = {"bf16": 16, "f16": 16, "f32": 32, "f64": 64}

    def element(token: str, kind: str) -> bytes:
        if token.lower().startswith("0x"):
            return int(token, 16).to_bytes(widths[kind] // 8, "little")
        if kind == "bf16":  # the high half of the float32, rounded to nearest even
            bits = struct.unpack("<I", struct.pack("<f", float(token)))[0]
            return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).to_bytes(2, "little")
        return struct.pack(formats[kind], float(token))

    def raw(m) -> str:
        kind = m.group(4)
        tokens = re.findall(r"0x[0-9A-Fa-f]+|[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?", m.group(1))
        data = b"".join(element(t, kind) for t in tokens)
        return f'dense<"0x{data.hex().upper()}">{m.group(2)}'

    return _HEX_DENSE.sub(raw, text)


def parse_mlir(text: str, filename: str = "<input>") -> ModuleOp:
    """Parse MLIR text into a module; syntax errors become ZymaseError."""
    text = _hex_floats_as_raw(text)
    try:
        module = Parser(make_context(), text, filename).parse_module()
    except ParseError as exc:
        # xDSL's message: "file:line:col", the source line, a caret, the reason.
        lines = [l.strip() for l in str(exc).strip().splitlines() if l.strip()]
        where = lines[0] if lines else filename
        reason = lines[-1] if len(lines) > 1 else "syntax error"
        raise ZymaseError(
            f"cannot parse MLIR: {reason}",
            location=where,
            hint="check the MLIR syntax (the generic form is always accepted)",
        ) from None
    return module


def module_to_bytes(module: ModuleOp) -> bytes:
    """``module`` as bytes to keep on disk (pickled; :func:`module_from_bytes` reads it
    back in about a sixth of the time xDSL's parser takes on its text). The bytes are
    only for this xDSL version and Python (:data:`PICKLE_IDENTITY`)."""
    import pickle

    return pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL)


def module_from_bytes(data: bytes) -> ModuleOp | None:
    """The module :func:`module_to_bytes` made, or None when ``data`` is not one (written
    by another version of xDSL or Python: the caller parses the text again)."""
    import pickle

    try:
        module = pickle.loads(data)
    except Exception:  # noqa: BLE001 - any failure to load means "not a module of ours"
        return None
    return module if isinstance(module, ModuleOp) else None


def _pickle_identity() -> str:
    import sys

    return f"xdsl {_xdsl_version()} python {sys.version}"


def _xdsl_version() -> str:
    """xDSL's version, from the name of its ``dist-info`` directory beside the package
    (an installed wheel has one); otherwise as ``xdsl.__version__`` reads it, with
    importlib.metadata, whose import (email, csv, ...) is 1% of a ``zymase cc`` build."""
    import os

    import xdsl

    site = os.path.dirname(os.path.dirname(os.path.abspath(xdsl.__file__)))
    try:
        found = [n for n in os.listdir(site) if n.startswith("xdsl-") and n.endswith(".dist-info")]
    except OSError:
        found = []
    if len(found) == 1:
        return found[0][len("xdsl-"):-len(".dist-info")]
    return str(xdsl.__version__)


# PICKLE_IDENTITY (what the bytes of :func:`module_to_bytes` depend on besides the module,
# part of a cache key) is computed on first use by ``__getattr__``


def print_mlir(op: Operation, *, generic_dialects: frozenset[str] = frozenset()) -> str:
    """Print an op (usually a module) as MLIR text. Ops of ``generic_dialects`` are
    printed in the generic form (``"enzyme.init"() : () -> ...``): a tool that does
    not know those dialects (mlir-opt --allow-unregistered-dialect) can parse the
    generic form only, and everything else keeps its custom syntax."""
    import io

    stream = io.StringIO()
    printer = _GenericFor(generic_dialects, stream=stream) if generic_dialects else Printer(stream=stream)
    printer.print_op(op)
    return stream.getvalue() + "\n"


class _GenericFor(Printer):
    """A printer that switches to the generic form for the ops of some dialects."""

    def __init__(self, dialects: frozenset[str], **kwargs):
        super().__init__(**kwargs)
        self.generic_dialects = dialects

    def print_op(self, op: Operation) -> None:
        generic = self.print_generic_format
        self.print_generic_format = generic or op.dialect_name() in self.generic_dialects
        try:
            super().print_op(op)
        finally:
            self.print_generic_format = generic


def in_system_header(location: Attribute | None) -> bool:
    """Whether a location is in a header the toolchain installed (libstdc++, the C
    library, clang's own headers): messages name the user's line that reached it
    instead (the reader follows ``inlinedAt``, the inliner gives such ops the call's
    location), since the user cannot act on a line of ``stl_list.h``."""
    if not isinstance(location, FileLineColLoc):
        return False
    path = location.filename.data
    return path.startswith(("/usr/", "/opt/")) and "/include/" in path


def location_of(op: Operation) -> str | None:
    """``file:line:col`` of an op, when it carries a FileLineColLoc."""
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return None


def convert_scf_to_cf(module: ModuleOp) -> None:
    """Lower scf.for/if/while to cf branches in place (xDSL's convert-scf-to-cf)."""
    with _xdsl_import.importing_xdsl():  # (it imports the arith and cf dialects)
        from xdsl.transforms.convert_scf_to_cf import ConvertScfToCf

    ConvertScfToCf().apply(make_context(), module)


def xdsl_pass(name: str) -> ModulePass:
    """One of xDSL's generic passes by its xdsl-opt name (canonicalize, cse, dce)."""
    with _xdsl_import.importing_xdsl():  # (they may import dialects)
        from xdsl.transforms.canonicalize import CanonicalizePass
        from xdsl.transforms.common_subexpression_elimination import CommonSubexpressionElimination
        from xdsl.transforms.dead_code_elimination import DeadCodeElimination

    return {"canonicalize": CanonicalizePass, "cse": CommonSubexpressionElimination, "dce": DeadCodeElimination}[name]()
