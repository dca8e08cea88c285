"""MLIR front end: MLIR text in, JIT-compiled Python callables out.

``compile(text)`` runs the MLIR half of the pipeline (docs/architecture.md, section 1):

    parse + verify -> (if the module asks for derivatives: linalg/scf -> cf, then
    the enzyme pass) -> lower-to-llvm (structured ops -> loops -> branches; memref
    -> descriptors) -> llvm writer -> LLVM O-level pipeline -> MCJIT

and returns a :class:`CompiledModule` whose attributes are the module's public
functions, callable with Python numbers and, for memref parameters, NumPy arrays
(:mod:`zymase.frontends.ndarray`).

Calling convention. Each public ``func.func`` becomes an external ``llvm.func``
with the C ABI. Functions returning nothing or one scalar (other than ``i1``) are
called directly through ctypes. Functions returning several values (an LLVM
first-class struct) or an ``i1`` get a small generated wrapper
``__zymase_abi_<name>(args..., ptr out)`` that stores the results into a C struct:
an LLVM struct returned by value only matches the C ABI up to 16 bytes on x86-64
(three f64 come back in xmm0-2, but C returns such a struct through a hidden
pointer), and an ``i1`` return leaves the upper bits of ``al`` undefined. The
out-pointer wrapper is correct for any number and mix of results, and LLVM inlines
the callee into it. Functions with memref parameters get the wrapper too: it takes
each memref descriptor by pointer and loads it, since an LLVM struct argument is
not passed like a C struct.
"""

from __future__ import annotations

import ctypes
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from zymase.errors import ZymaseError
from zymase.ir import (
    Attribute,
    Block,
    ComplexType,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FunctionType,
    IndexType,
    IntegerType,
    MemRefType,
    ModuleOp,
    Region,
    VerifyException,
    enzyme,
    func,
    i8,
    i64,
    llvm,
    parse_mlir,
)
from zymase.transforms.lower_to_llvm import lower_to_llvm
from zymase.transforms.lowering_registry import PTR, llvm_op, lower_type

__all__ = ["compile", "CompiledModule", "CompiledFunction", "ArgumentError"]

ABI_WRAPPER_PREFIX = "__zymase_abi_"


class ArgumentError(ZymaseError, TypeError):
    """A compiled function was called with the wrong arguments.

    Both a :class:`ZymaseError` (zymase's user errors) and a :class:`TypeError`
    (what Python raises for a wrong call), so either ``except`` catches it.
    """


# --------------------------------------------------------------------------- compile


def compile(  # noqa: A001
    text: str, *, opt_level: int = 2, filename: str = "<mlir>", structured_ad: bool = True,
    strong_zero: bool = True,
) -> CompiledModule:
    """Compile MLIR text (func/arith/math/cf/scf + enzyme ops) to native code.

    ``opt_level`` (0-3) is used both for the LLVM optimization pipeline and the
    code generator. ``structured_ad`` differentiates scf ops at the structured
    level (region rules); False lowers scf to cf branches first (the CFG path).
    ``strong_zero=False``: IEEE propagation in derivatives (a zero adjoint times an
    infinite partial is NaN) instead of strong zeros (zymase.autodiff.semantics).
    Errors in the input raise :class:`ZymaseError`.
    """
    from zymase.autodiff.semantics import derivative_semantics
    from zymase.llvm import toolchain
    from zymase.llvm.jit import jit
    from zymase.llvm.writer import write_llvm_ir

    text = _source_text(text)
    module = parse_mlir(text, filename)
    _verify(module, "the input")
    from zymase.transforms.lower_complex import lower_complex

    complex_signatures = {name: t for name, t in _public_signatures(module).items() if _has_complex(t)}
    lower_complex(module)  # complex<T> -> pairs of T; the callables take and return Python complex
    if _has_diff_ops(module):
        from zymase.autodiff.rounded_partials import vectorizable_barriers

        # (toolchain.optimize below turns the barriers into fences once LLVM 22 is done)
        with derivative_semantics(strong_zero=strong_zero), \
                vectorizable_barriers("llvm.canonicalize" not in text and "math.canonicalize" not in text):
            differentiate(module, structured_ad=structured_ad)

    signatures = _public_signatures(module)
    lower_to_llvm(module)
    wrapped = _add_abi_wrappers(module, signatures)
    module.verify()  # a failure here is a bug in zymase, not in the input

    ll_text = write_llvm_ir(module)
    optimized = toolchain.optimize(ll_text, opt_level, for_jit=True)
    engine = jit(optimized, opt=opt_level)
    return CompiledModule(engine, signatures, wrapped, optimized, complex_signatures)


def _has_complex(ftype: FunctionType) -> bool:
    return any(isinstance(t, ComplexType) for t in (*ftype.inputs.data, *ftype.outputs.data))


def _source_text(text: object) -> str:
    """``compile``'s ``text`` as a str: UTF-8 bytes are decoded, anything else is an error."""
    if isinstance(text, (bytes, bytearray)):
        try:
            return bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ZymaseError(
                f"'text' is bytes that are not UTF-8 ({exc.reason} at byte {exc.start})",
                hint="pass the MLIR source as a str, decoded with its encoding",
            ) from None
    if not isinstance(text, str):
        raise ZymaseError(
            f"'text' must be MLIR source (a str), got {type(text).__name__}",
            hint="zymase.mlir.compile(path.read_text())",
        )
    return text


def differentiate(module: ModuleOp, *, structured_ad: bool = True) -> None:
    """The differentiation stage of :func:`compile`: the enzyme pass, then (for the
    structured path) remove-unnecessary-enzyme-ops, whose caches become buffers and
    whose adjoint cells become values carried by the scf ops."""
    from zymase.transforms.lower_structured import prepare_for_differentiation

    prepare_for_differentiation(module, structured=structured_ad)
    _run_enzyme_pass(module)
    if structured_ad:
        from zymase.transforms.enzyme_cleanup import remove_unnecessary_enzyme_ops

        remove_unnecessary_enzyme_ops(module)
    _verify(module, "the differentiated module")


def _verify(module: ModuleOp, what: str) -> None:
    try:
        module.verify()
    except VerifyException as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ZymaseError(
            f"{what} does not verify: {first}",
            hint="fix the MLIR (xdsl-opt / mlir-opt show the full diagnostic)",
        ) from None


def _has_dialect(module: ModuleOp, dialect: str) -> bool:
    return any(op.dialect_name() == dialect for op in module.walk())


def _has_diff_ops(module: ModuleOp) -> bool:
    return any(isinstance(op, (enzyme.AutoDiffOp, enzyme.FwdDiffOp, enzyme.BatchOp, enzyme.AutoDiffRegionOp,
                               enzyme.FwdDiffRegionOp)) for op in module.walk())


def _run_enzyme_pass(module: ModuleOp) -> None:
    """Differentiate: enzyme.autodiff/fwddiff become calls to generated functions."""
    try:
        from zymase.transforms.enzyme_pass import run_enzyme_pass
    except ModuleNotFoundError as exc:
        if exc.name != "zymase.transforms.enzyme_pass":
            raise
        raise ZymaseError(
            "this zymase build cannot differentiate MLIR yet (no enzyme pass)",
            construct="enzyme.autodiff",
            hint="remove the enzyme.autodiff/enzyme.fwddiff ops or update zymase",
        ) from None
    run_enzyme_pass(module)


def _public_signatures(module: ModuleOp) -> dict[str, FunctionType]:
    """Public function definitions: the ones the compiled module exposes."""
    signatures = {}
    for op in module.body.block.ops:
        if isinstance(op, func.FuncOp) and not op.is_declaration:
            visibility = op.sym_visibility.data if op.sym_visibility is not None else "public"
            if visibility == "public":
                signatures[op.sym_name.data] = op.function_type
    return signatures


# --------------------------------------------------------------------------- ABI


def _needs_wrapper(inputs: Sequence[Attribute], results: Sequence[Attribute]) -> bool:
    if any(isinstance(t, MemRefType) for t in inputs):
        return True  # descriptors are passed by pointer (see _add_abi_wrappers)
    if not results:
        return False
    if len(results) > 1:
        return True
    t = results[0]
    return isinstance(t, IntegerType) and t.width.data == 1


def _stored_type(t: Attribute) -> Attribute:
    """How a result is stored in the out-struct: ``i1`` as a byte (C ``bool``)."""
    t = lower_type(t)
    if isinstance(t, IntegerType) and t.width.data == 1:
        return i8
    return t


def _add_abi_wrappers(module: ModuleOp, signatures: dict[str, FunctionType]) -> dict[str, str]:
    """Add ``__zymase_abi_<name>(args..., ptr out)`` for functions that need one;
    returns each wrapped function's wrapper name. A wrapper name never collides with
    a symbol of the module (a user's function may be called ``__zymase_abi_f`` too):
    underscores are appended until it is free."""
    wrapped: dict[str, str] = {}
    taken = {op.sym_name.data for op in module.body.block.ops if getattr(op, "sym_name", None) is not None}
    for name, ftype in signatures.items():
        results = list(ftype.outputs.data)
        if not _needs_wrapper(ftype.inputs.data, results):
            continue
        inputs = [lower_type(t) for t in ftype.inputs.data]
        lowered = [lower_type(t) for t in results]
        struct = llvm.LLVMStructType.from_type_list([_stored_type(t) for t in results])
        # A memref descriptor (a struct) is passed by pointer: LLVM passes a
        # first-class struct argument differently from C's struct-by-value.
        block = Block(arg_types=[PTR if isinstance(t, MemRefType) else lower_type(t)
                                 for t in ftype.inputs.data] + [PTR])
        *params, out = block.args
        ops: list = []
        args = []
        for param, original, t in zip(params, ftype.inputs.data, inputs):
            if isinstance(original, MemRefType):
                load = llvm_op("llvm.load")(param, t)
                ops.append(load)
                param = load.results[0]
            args.append(param)
        if not lowered:
            ret_type = None
        else:
            ret_type = lowered[0] if len(lowered) == 1 else llvm.LLVMStructType.from_type_list(lowered)
        call = llvm.CallOp(name, *args, return_type=ret_type)
        ops.append(call)
        for i, t in enumerate(lowered):
            if len(lowered) == 1:
                value = call.results[0]
            else:
                extract = llvm.ExtractValueOp(
                    DenseArrayBase.from_list(i64, [i]), call.results[0], t
                )
                ops.append(extract)
                value = extract.res
            if _stored_type(results[i]) != t:
                zext = llvm.ZExtOp(value, i8)
                ops.append(zext)
                value = zext.res
            slot = llvm.GEPOp(out, [0, i], struct)
            ops += [slot, llvm_op("llvm.store")(value, slot.result)]
        ops.append(llvm.ReturnOp())
        block.add_ops(ops)
        wrapper_name = ABI_WRAPPER_PREFIX + name
        while wrapper_name in taken:
            wrapper_name += "_"
        taken.add(wrapper_name)
        wrapper = llvm.FuncOp(
            wrapper_name,
            llvm.LLVMFunctionType([a.type for a in block.args], None),
            linkage=llvm.LinkageAttr("external"),
            body=Region([block]),
        )
        module.body.block.add_op(wrapper)
        wrapped[name] = wrapper_name
    return wrapped


# --------------------------------------------------------------------------- ctypes


@dataclass(frozen=True)
class _CType:
    """How one MLIR scalar type crosses the ctypes boundary."""

    ctype: type
    convert: Callable[[object], object]
    spelling: str


def _ctype(t: Attribute, *, function: str, result: bool = False) -> _CType:
    if isinstance(t, Float64Type):
        return _CType(ctypes.c_double, float, "f64")
    if isinstance(t, Float32Type):
        return _CType(ctypes.c_float, float, "f32")
    if isinstance(t, IndexType):
        return _CType(ctypes.c_int64, _integer_of_width(64), "index")
    if isinstance(t, IntegerType):
        width = t.width.data
        by_width = {1: ctypes.c_bool, 8: ctypes.c_int8, 16: ctypes.c_int16,
                    32: ctypes.c_int32, 64: ctypes.c_int64}
        if width in by_width:
            return _CType(by_width[width], _integer_of_width(width), f"i{width}")
    if isinstance(t, llvm.LLVMPointerType):
        return _CType(ctypes.c_void_p, _as_address, "!llvm.ptr")
    if isinstance(t, MemRefType) and not result:
        from zymase.frontends.ndarray import memref_parameter

        param = memref_parameter(t, function=function)
        return _CType(param.ctype, param.convert, param.spelling)
    hint = "use f32/f64/i1/i8/i16/i32/i64/index at the boundary"
    if isinstance(t, MemRefType):
        hint = "return scalars, or write results into a memref argument"
    if isinstance(t, Float16Type):
        hint = "ctypes has no f16: take/return f32 and convert inside (arith.extf/truncf)"
    raise ZymaseError(
        f"type {t} cannot be passed between Python and compiled code",
        function=function,
        hint=hint,
    )


def _integer_of_width(width: int) -> Callable[[object], int]:
    """An integer argument for a signless ``i<width>``: any value in the signed or
    unsigned range (ctypes would silently wrap a larger one)."""

    def convert(x: object) -> int:
        v = operator.index(x)
        if width > 1 and not -(1 << (width - 1)) <= v < (1 << width):
            raise TypeError(f"{v} does not fit in i{width}")
        if width == 1 and v not in (0, 1):
            raise TypeError(f"{v} is not a boolean (i1 takes 0, 1, False or True)")
        return v

    return convert


def _as_address(x: object) -> object:
    """Accept ints, ctypes objects and anything with a numpy-style data pointer."""
    if x is None or isinstance(x, int):
        return x
    iface = getattr(x, "__array_interface__", None)
    if iface is not None:
        return iface["data"][0]
    return ctypes.cast(x, ctypes.c_void_p).value


class CompiledFunction:
    """A compiled public function, callable with Python numbers.

    Holds a reference to its :class:`CompiledModule`, so the JIT code stays alive
    while the function object does.
    """

    def __init__(self, owner: CompiledModule, name: str, ftype: FunctionType, wrapper: str | None,
                 complex_signature: FunctionType | None = None):
        self.name = name
        self.signature = ftype
        #: the signature before complex<T> became pairs of T: arguments are then
        #: Python complex numbers, split here, and result pairs are joined back
        self._complex = complex_signature
        self._owner = owner
        self._params = [_ctype(t, function=name) for t in ftype.inputs.data]
        self._results = [_ctype(t, function=name, result=True) for t in ftype.outputs.data]
        argtypes = [p.ctype for p in self._params]
        if wrapper is not None:
            fields = [(f"r{i}", r.ctype) for i, r in enumerate(self._results)]
            self._out_type = type(f"{name}_results", (ctypes.Structure,), {"_fields_": fields})
            proto = ctypes.CFUNCTYPE(None, *argtypes, ctypes.c_void_p)
            self._fn = proto(owner._engine.address(wrapper))
        else:
            self._out_type = None
            restype = self._results[0].ctype if self._results else None
            proto = ctypes.CFUNCTYPE(restype, *argtypes)
            self._fn = proto(owner._engine.address(name))

    def _describe(self) -> str:
        params = ", ".join(p.spelling for p in self._params)
        results = ", ".join(r.spelling for r in self._results)
        return f"{self.name}({params}) -> ({results})"

    def __call__(self, *args: object, **kwargs: object) -> object:
        if self._complex is not None and not kwargs:
            return self._call_complex(args)
        return self._call(args, kwargs)

    def _call(self, args: tuple, kwargs: dict) -> object:
        if kwargs:
            raise ArgumentError(
                f"{self.name}() takes positional arguments only",
                function=self.name,
                hint=f"call it as {self._describe()}",
            )
        if len(args) != len(self._params):
            raise ArgumentError(
                f"{self.name}() takes {len(self._params)} argument"
                f"{'' if len(self._params) == 1 else 's'} but {len(args)} "
                f"{'was' if len(args) == 1 else 'were'} given",
                function=self.name,
                hint=f"the signature is {self._describe()}",
            )
        converted = []
        for k, (p, a) in enumerate(zip(self._params, args), start=1):
            try:
                converted.append(p.convert(a))
            except (TypeError, ValueError, OverflowError, ctypes.ArgumentError) as exc:
                raise ArgumentError(
                    f"bad argument {k} for {self.name}(): {exc}",
                    function=self.name,
                    hint=f"the signature is {self._describe()}",
                ) from None
        if self._out_type is None:
            return self._fn(*converted)
        out = self._out_type()
        self._fn(*converted, ctypes.addressof(out))
        values = tuple(getattr(out, f"r{i}") for i in range(len(self._results)))
        if not values:
            return None
        return values if len(values) > 1 else values[0]

    def _call_complex(self, args: tuple) -> object:
        ins = list(self._complex.inputs.data)
        if len(args) != len(ins):
            raise ArgumentError(
                f"{self.name}() takes {len(ins)} argument{'' if len(ins) == 1 else 's'} but {len(args)} given",
                function=self.name, hint=f"the signature is {self._complex}")
        flat: list = []
        for k, (t, a) in enumerate(zip(ins, args), start=1):
            if isinstance(t, ComplexType):
                try:
                    z = complex(a)
                except (TypeError, ValueError):
                    raise ArgumentError(f"bad argument {k} for {self.name}(): expected a complex number, "
                                        f"got {type(a).__name__}", function=self.name,
                                        hint=f"the signature is {self._complex}") from None
                flat += [z.real, z.imag]
            else:
                flat.append(a)
        out = self._call(tuple(flat), {})
        values = list(out) if isinstance(out, tuple) else ([] if out is None else [out])
        it = iter(values)
        joined = [complex(next(it), next(it)) if isinstance(t, ComplexType) else next(it)
                  for t in self._complex.outputs.data]
        if not joined:
            return None
        return tuple(joined) if len(joined) > 1 else joined[0]

    def __repr__(self) -> str:
        return f"<zymase compiled function {self._describe()}>"


class CompiledModule:
    """The compiled public functions of one MLIR module, as attributes.

    ``functions`` maps names to :class:`CompiledFunction`; ``llvm_ir`` is the
    optimized LLVM IR that was JIT-compiled (handy for inspection). The JIT engine
    lives as long as this object or any of its functions.
    """

    def __init__(
        self,
        engine: object,
        signatures: dict[str, FunctionType],
        wrapped: dict[str, str],
        llvm_ir: str,
        complex_signatures: dict[str, FunctionType] | None = None,
    ):
        self._engine = engine
        self.llvm_ir = llvm_ir
        complex_signatures = complex_signatures or {}
        self.functions: dict[str, CompiledFunction] = {
            name: CompiledFunction(self, name, ftype, wrapped.get(name), complex_signatures.get(name))
            for name, ftype in signatures.items()
        }

    def __getattr__(self, name: str) -> CompiledFunction:
        functions = self.__dict__.get("functions", {})
        if name in functions:
            return functions[name]
        raise AttributeError(
            f"compiled module has no public function '{name}' "
            f"(it has: {', '.join(sorted(functions)) or 'none'})"
        )

    def __getitem__(self, name: str) -> CompiledFunction:
        return self.functions[name]

    def __dir__(self) -> list[str]:
        return [*super().__dir__(), *self.functions]

    def __repr__(self) -> str:
        return f"<zymase compiled module: {', '.join(self.functions)}>"
