"""The per-type AD interface (Enzyme-MLIR's ``AutoDiffTypeInterface``).

A type that carries derivatives answers three questions: the type of its shadow
(tangent/adjoint), how to build a zero of that shadow, and how to add two shadows
(adjoint accumulation, tangent sums). The engine asks these questions here instead
of assuming floats, so a plug-in dialect whose values are differentiable registers
a :class:`TypeRule` for its type class and the engine needs no change.

The builtin floats are the default registrations: their shadow is the type itself,
zero is a float constant and add is the flavor's float addition (``arith.addf`` or
``llvm.fadd``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zymase.analysis.op_classes import is_a
from zymase.ir import Attribute, Float16Type, Float32Type, Float64Type, Float80Type, SSAValue, VectorType, is_float_type

if TYPE_CHECKING:
    from zymase.autodiff.flavor import Emitter


@dataclass(frozen=True)
class TypeRule:
    """``zero(E, t)`` (the zero shadow of a value of type ``t``) and ``add(E, a, b)``
    (the sum of two shadows) emit ops through the emitter ``E`` at its insertion
    point; ``shadow_type(t)`` maps a primal type to its shadow type, used in the
    signatures of derivative functions. (The engine keeps a value's adjoint in the
    value's own type, so a rule whose shadow type differs works at the boundary
    only.) ``applies(t)`` narrows the rule to some instances of its type class (float
    tensors, not integer tensors: the class is one for both)."""

    zero: Callable[["Emitter", Attribute], SSAValue]
    add: Callable[["Emitter", SSAValue, SSAValue], SSAValue]
    shadow_type: Callable[[Attribute], Attribute] = lambda t: t
    # which types of the registered class the rule covers (a struct of floats, not
    # every struct)
    applies: Callable[[Attribute], bool] = lambda t: True


class TypeRegistry:
    """Type rules keyed by type class (subclasses match their base's rule)."""

    def __init__(self) -> None:
        self.by_type: dict[type, TypeRule] = {}
        #: type class -> the rule lookup finds for it (None: none), filled on first sight:
        #: every value's type is asked about (activity, refusals, the generators), and a
        #: class without a rule of its own (integers, pointers) went through every
        #: registered class's isinstance, slow for xDSL's attribute classes (ABCs)
        self._by_class: dict[type, TypeRule | None] = {}

    def register(self, type_class: type, rule: TypeRule) -> None:
        self.by_type[type_class] = rule
        self._by_class.clear()

    def lookup(self, t: Attribute) -> TypeRule | None:
        cls = type(t)
        try:
            rule = self._by_class[cls]
        except KeyError:
            rule = self.by_type.get(cls)
            if rule is None:
                rule = next((r for c, r in self.by_type.items() if issubclass(cls, c)), None)
            self._by_class[cls] = rule
        return rule if rule is not None and rule.applies(t) else None


TYPES = TypeRegistry()


def register_type(type_class: type, rule: TypeRule) -> None:
    TYPES.register(type_class, rule)


def is_differentiable_type(t: Attribute) -> bool:
    """Whether values of type ``t`` carry derivatives (a rule is registered)."""
    return TYPES.lookup(t) is not None


def carries_derivatives(t: Attribute) -> bool:
    """A value of type ``t`` in memory or in a call's result holds derivatives: a float
    (including those without rules, which are refused where they meet active data) or
    a float aggregate."""
    return is_float_type(t) or is_differentiable_type(t)


def shadow_type(t: Attribute) -> Attribute:
    """The type of the shadow of a ``t`` value; non-differentiable types (pointers,
    memrefs, integers) are their own shadow type."""
    rule = TYPES.lookup(t)
    return t if rule is None else rule.shadow_type(t)


def shadow_types(t: Attribute, width: int) -> list[Attribute]:
    """The shadows of a ``t`` value in vector mode at ``width``: one shadow per lane,
    each of :func:`shadow_type` (the derivative function takes and returns them side
    by side; its lanes' arithmetic is emitted side by side too, which LLVM's SLP
    vectorizer turns into ``<width x T>`` operations). Width 1 is the scalar mode."""
    return [shadow_type(t)] * width


def _float_zero(E: "Emitter", t: Attribute) -> SSAValue:
    return E.v(E.flavor.const(0.0, t))


def _float_add(E: "Emitter", a: SSAValue, b: SSAValue) -> SSAValue:
    return E.float_op(E.flavor.binary("add", a, b))


FLOAT = TypeRule(zero=_float_zero, add=_float_add)
for _cls in (Float16Type, Float32Type, Float64Type, Float80Type):
    register_type(_cls, FLOAT)


# LLVM structs and arrays whose every leaf is a float (``{double, double}``, what C's
# complex arithmetic and C++'s std::complex return from ``__muldc3``/``cexp`` and pass
# between functions at -O0) carry derivatives leaf by leaf: the shadow has the same
# type, zero is ``zeroinitializer``, add adds the leaves. Aggregates holding pointers or
# integers have no rule (their shadows would mix primal and derivative data).


def _aggregate_leaves(t: Attribute) -> list[Attribute] | None:
    """The leaf types of a struct/array in field order, or None when one is not a float."""
    from zymase.ir import llvm

    if isinstance(t, (Float16Type, Float32Type, Float64Type, Float80Type)):
        return [t]
    if isinstance(t, llvm.LLVMStructType):
        parts = [_aggregate_leaves(x) for x in t.types.data]
    elif isinstance(t, llvm.LLVMArrayType):
        parts = [_aggregate_leaves(t.type)] * t.size.data
    else:
        return None
    if not parts or any(p is None for p in parts):
        return None
    return [leaf for p in parts for leaf in p]  # type: ignore[union-attr]


def _is_float_aggregate(t: Attribute) -> bool:
    leaves = _aggregate_leaves(t)
    # a big array value is a vectorizer's or a copy's, not arithmetic to differentiate
    return leaves is not None and len(leaves) <= 64


def aggregate_positions(t: Attribute, prefix: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Attribute]]:
    """The (extractvalue position, float type) of every leaf of a float aggregate."""
    from zymase.ir import llvm

    if isinstance(t, llvm.LLVMStructType):
        return [p for i, x in enumerate(t.types.data) for p in aggregate_positions(x, prefix + (i,))]
    if isinstance(t, llvm.LLVMArrayType):
        return [p for i in range(t.size.data) for p in aggregate_positions(t.type, prefix + (i,))]
    return [(prefix, t)]


def _aggregate_zero(E: "Emitter", t: Attribute) -> SSAValue:
    from zymase.ir import llvm

    return E.v(llvm.ZeroOp.build(result_types=[t]))


def _aggregate_add(E: "Emitter", a: SSAValue, b: SSAValue) -> SSAValue:
    from zymase.ir import DenseArrayBase, i64, llvm

    total = a
    for pos, leaf in aggregate_positions(a.type):
        where = DenseArrayBase.from_list(i64, list(pos))
        x = E.v(llvm.ExtractValueOp(where, a, leaf))
        y = E.v(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, list(pos)), b, leaf))
        total = E.v(llvm.InsertValueOp(DenseArrayBase.from_list(i64, list(pos)), total, E.add(x, y)))
    return total


def _register_aggregates() -> None:
    from zymase.ir import llvm

    rule = TypeRule(zero=_aggregate_zero, add=_aggregate_add, applies=_is_float_aggregate)
    register_type(llvm.LLVMStructType, rule)
    register_type(llvm.LLVMArrayType, rule)


_register_aggregates()


# Small vectors of floats in LLVM IR (``<2 x float>``: how x86-64 passes and returns
# ``float _Complex`` / ``std::complex<float>``) carry derivatives lane by lane: the
# shadow has the same type, zero is a splat of 0.0 and add is the lane-wise fadd. Only
# the ops whose rules know about lanes may touch active vectors (``VECTOR_SAFE_OPS``);
# the engine refuses the others by name (refusals.reject_unsupported).


def is_float_vector(t: Attribute) -> bool:
    """A fixed-length one-dimensional vector of floats with at most 64 lanes."""
    return (is_a(t, VectorType) and len(t.get_shape()) == 1 and not any(t.get_scalable_dims())
            and isinstance(t.element_type, (Float16Type, Float32Type, Float64Type)) and t.get_shape()[0] <= 64)


def _vector_zero(E: "Emitter", t: Attribute) -> SSAValue:
    return E.v(E.flavor.const(0.0, t))


def _register_vectors() -> None:
    from zymase.ir import VectorType

    register_type(VectorType, TypeRule(zero=_vector_zero, add=_float_add, applies=is_float_vector))


_register_vectors()
