"""A marker call site and the C calling convention around it, for :mod:`zymase.llvm.markers`
and :mod:`zymase.llvm.batch_call`: the site and its error, the builder that inserts code
before the call (C's default argument promotions undone, the N lanes of a value C passes
as one struct taken apart, the derivatives handed back as the call declares its result:
a value, a struct, or through an ``sret`` pointer), and the types of the IR named in C's
words for messages."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type

from zymase.errors import ZymaseError
from zymase.ir import (ArrayAttr, Attribute, Float16Type, Float32Type, Float64Type, Float80Type,
                       Float128Type, DenseArrayBase, IntegerAttr, IntegerType, Operation, SSAValue,
                       VectorType, float_width, i64, is_float_type, llvm, llvm_ext, location_of)


@dataclass
class _Site:
    call: Operation
    mode: str  # "rev" or "fwd"
    marker_fn: str
    caller: str


def _err(site: _Site, message: str, hint: str) -> ZymaseError:
    return ZymaseError(
        message,
        construct=f"call @{site.marker_fn}",
        function=site.caller,
        location=location_of(site.call),
        hint=hint,
    )


def c_type_name(t: Attribute) -> str:
    """A type of the IR in the words of C (for messages)."""
    names = {Float16Type: "_Float16", BFloat16Type: "__bf16", Float32Type: "float", Float64Type: "double",
             Float80Type: "long double", Float128Type: "__float128"}
    if type(t) in names:
        return names[type(t)]
    if isinstance(t, IntegerType):
        return {1: "_Bool", 8: "char", 16: "short", 32: "int", 64: "long", 128: "__int128"}.get(
            t.width.data, f"a {t.width.data}-bit integer")
    if isinstance(t, llvm.LLVMPointerType):
        return "a pointer"
    if isinstance(t, VectorType):
        return f"vector of {t.get_shape()[0]} {c_type_name(t.element_type)}"
    if isinstance(t, llvm.LLVMStructType):
        return "a struct"
    return str(t)


class _Builder:
    """Inserts ops before the call site being rewritten."""

    def __init__(self, call: Operation):
        self.call = call
        self.block = call.parent_block()

    def insert(self, op: Operation) -> Operation:
        op.location = self.call.location
        self.block.insert_op_before(op, self.call)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.insert(op).results[0]

    def lane_shadow(self, buffer: SSAValue, stride: SSAValue, k: int) -> SSAValue:
        """Shadow ``k`` of an ``enzyme_dupv`` buffer: ``k * stride`` bytes into it."""
        if k == 0:
            return buffer
        offset = self.v(llvm.MulOp(stride, self.v(llvm.ConstantOp(IntegerAttr(k, stride.type), stride.type))))
        return self.v(llvm.GEPOp(buffer, [llvm.GEP_USE_SSA_VAL], IntegerType(8), ssa_indices=[offset]))

    def fconst(self, value: float, t: Attribute) -> SSAValue:
        from zymase.ir import FloatAttr

        return self.v(llvm.ConstantOp(FloatAttr(value, t), t))

    def coerce(self, v: SSAValue, t: Attribute, site: _Site, i: int, position: int, fname: str) -> SSAValue:
        """C's default argument promotions in variadic calls (float -> double,
        char/short -> int) undone to the parameter's type."""
        if v.type == t:
            return v
        if is_float_type(v.type) and is_float_type(t):
            wider = float_width(t) > float_width(v.type)
            return self.v(llvm.FPExtOp(v, t) if wider else llvm.FPTruncOp(v, t))
        if isinstance(v.type, IntegerType) and isinstance(t, IntegerType):
            if t.width.data < v.type.width.data:
                return self.v(llvm.TruncOp(v, t))
            return self.v(llvm.SExtOp(v, t))
        raise _err(site, f"argument {position} of {site.marker_fn} is {c_type_name(v.type)}, but parameter "
                   f"{i + 1} of '{fname}' is {c_type_name(t)}",
                   "pass a value of the parameter's type (or check the enzyme_* markers)")

    def lanes(self, values: list[SSAValue], width: int, t: Attribute, site: _Site, what: str) -> tuple[list[SSAValue], int]:
        """The first ``width`` lanes of type ``t`` at the start of ``values`` and how many
        of the values they took. Enzyme's vector reverse mode reads a result's N adjoints
        as one ``[N x double]``, which C passes as a struct: in registers, as the scalars
        themselves (two doubles) or vectors of them (``<2 x float>``), and through a
        ``byval`` pointer once it is larger than 16 bytes (three doubles or more);
        zymase's N scalars are the same arguments at N = 2. Each lane is converted to
        ``t`` as C's promotions are undone."""
        lanes: list[SSAValue] = []
        used = 0
        while len(lanes) < width and used < len(values):
            v = values[used]
            held = self._byval_type(v)
            if held is not None:
                agg = self.v(llvm.LoadOp(v, held))
                parts = [self.v(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, path), agg, f))
                         for path, f in _scalar_paths(held)]
            elif isinstance(v.type, VectorType):
                parts = [self.v(llvm_ext.ExtractElementOp(v, self.v(llvm.ConstantOp(IntegerAttr(k, i64), i64))))
                         for k in range(v.type.get_shape()[0])]
            else:
                parts = [v]
            if not all(is_float_type(p.type) for p in parts) or len(lanes) + len(parts) > width:
                break
            lanes += [p if p.type == t else self.v(llvm.FPExtOp(p, t) if float_width(t) > float_width(p.type)
                                                   else llvm.FPTruncOp(p, t)) for p in parts]
            used += 1
        if len(lanes) < width:
            raise _err(site, f"{what} (enzyme_width {width}: {width} adjoints, one per lane, got {len(lanes)})",
                       "pass d_ret (1.0 for a gradient) before the tape, once per lane, or all lanes as one "
                       f"struct of {width} {c_type_name(t)} (Enzyme's [{width} x {c_type_name(t)}])")
        return lanes, used

    def _byval_type(self, v: SSAValue) -> Attribute | None:
        """The type a ``byval`` argument ``v`` of the call points to (an aggregate C
        passes in memory), else None."""
        attrs = self.call.attributes.get("arg_attrs")
        if not isinstance(v.type, llvm.LLVMPointerType) or not isinstance(attrs, ArrayAttr):
            return None
        args = list(self.call.args)
        for k in range(len(args) - 1, -1, -1):
            if args[k] is v and k < len(attrs.data):
                return attrs.data[k].data.get("llvm.byval")
        return None

    def deliver(self, results: list[SSAValue], sret: SSAValue | None, site: _Site) -> None:
        """Hand the derivative results back in the C return convention of the call."""
        call = self.call
        want = call.returned.type if call.returned is not None else None
        if sret is not None:
            packed = self._pack(results)
            declared = _sret_type(call)
            if declared is not None and not _holds(declared, packed.type):
                raise _err(site, f"{site.marker_fn} returns {c_spelling(packed.type)}, but the call is declared "
                           f"to return {c_spelling(declared)}", _DECLARE_HINT)
            self.insert(llvm.StoreOp(packed, sret))
            return
        if want is None:
            return
        if not results:
            value = self.v(llvm.ZeroOp.build(result_types=[want])) if not is_float_type(want) else self.fconst(0.0, want)
        elif len(results) == 1 and is_float_type(want) and is_float_type(results[0].type):
            r = results[0]
            value = r if r.type == want else self.v(
                llvm.FPExtOp(r, want) if float_width(want) > float_width(r.type) else llvm.FPTruncOp(r, want)
            )
        else:
            packed = self._pack(results)
            if packed.type == want:
                value = packed
            elif not _holds(packed.type, want):
                # the bytes would not be the values the declaration names (two floats
                # read from two doubles): refused, never reinterpreted
                raise _err(site, f"{site.marker_fn} returns {c_spelling(packed.type)}, but the call is declared "
                           f"to return {c_spelling(want)}", _DECLARE_HINT)
            else:
                # Same bytes, other C ABI spelling (e.g. {float, float} returned as
                # <2 x float>): reinterpret through a stack slot.
                one = self.v(llvm.ConstantOp(IntegerAttr(1, i64), i64))
                slot = self.v(llvm.AllocaOp(one, packed.type, alignment=16))
                self.insert(llvm.StoreOp(packed, slot))
                value = self.v(llvm.LoadOp(slot, want))
        call.returned.replace_all_uses_with(value)

    def _pack(self, results: list[SSAValue]) -> SSAValue:
        if len(results) == 1:
            return results[0]
        st = llvm.LLVMStructType.from_type_list([r.type for r in results])
        agg = self.v(llvm.UndefOp(st))
        for i, r in enumerate(results):
            agg = self.v(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [i]), agg, r))
        return agg


_DECLARE_HINT = ("declare the marker function to return the derivatives' own types, in argument order "
                 "(e.g. typedef struct { double dx, dy; } grad2; for two double arguments)")


def _scalar_fields(t: Attribute) -> list[Attribute]:
    """The scalars of a value of type ``t`` in memory order (structs, arrays and vectors
    flattened): what a C declaration of the same bytes must list."""
    if isinstance(t, llvm.LLVMStructType):
        return [s for f in t.types.data for s in _scalar_fields(f)]
    if isinstance(t, llvm.LLVMArrayType):
        return _scalar_fields(t.type) * t.size.data
    if isinstance(t, VectorType):
        return [t.element_type] * t.get_shape()[0]
    return [t]


def _scalar_paths(t: Attribute, path: tuple[int, ...] = ()) -> list[tuple[list[int], Attribute]]:
    """The extractvalue positions and types of the scalars of an aggregate ``t``, in
    memory order (vectors inside it are left whole)."""
    if isinstance(t, llvm.LLVMStructType):
        return [p for k, f in enumerate(t.types.data) for p in _scalar_paths(f, (*path, k))]
    if isinstance(t, llvm.LLVMArrayType):
        return [p for k in range(t.size.data) for p in _scalar_paths(t.type, (*path, k))]
    return [(list(path), t)]


def _holds(outer: Attribute, inner: Attribute) -> bool:
    """Whether a value of type ``outer`` begins with the scalars of ``inner``, in order
    (the same bytes spelled another way, possibly followed by more)."""
    a, b = _scalar_fields(outer), _scalar_fields(inner)
    return len(a) >= len(b) and a[:len(b)] == b


def c_spelling(t: Attribute) -> str:
    """A type of the IR in the words of C, structs, arrays and vectors as ``{double, double}``."""
    fields = _scalar_fields(t)
    names = ["void *" if isinstance(f, llvm.LLVMPointerType) else c_type_name(f) for f in fields]
    return names[0] if len(names) == 1 else "{" + ", ".join(names) + "}"


def _sret_type(call: Operation) -> Attribute | None:
    """The type the hidden result pointer of ``call`` points to (its ``sret(T)``)."""
    attrs = call.attributes.get("arg_attrs")
    if isinstance(attrs, ArrayAttr) and attrs.data:
        return attrs.data[0].data.get("llvm.sret")
    return None
