"""The rule registry: derivative rules attached to op classes from the outside.

A rule answers three questions about one op (the Enzyme-MLIR interfaces):
``propagates`` (does a derivative flow from operand i to the results — used by
activity analysis), ``reverse`` (operand adjoints from result adjoints) and
``forward`` (result tangents from operand tangents). Rules fetch primal values
through ``ctx.primal(value)`` so that the engine decides whether a value is read
again, recomputed or cached on the tape.

Most rules are :class:`ScalarRule`: one adjoint expression per differentiable
operand, written against the dialect-neutral :class:`~zymase.autodiff.flavor.Emitter`;
the forward tangent follows by linearity (tangent = sum of the operand partials
applied to the operand tangents).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from zymase.autodiff.semantics import strong_zero
from zymase.autodiff.type_rules import is_float_vector
from zymase.ir import FloatAttr, Operation, SSAValue, is_float_type

if TYPE_CHECKING:
    from zymase.autodiff.flavor import Emitter

Partial = Callable[["Emitter", "Primals", SSAValue], SSAValue]


class Primals:
    """Access to the primal values an adjoint expression needs, resolved lazily by
    the engine (a value read in the reverse sweep may come from the tape)."""

    def __init__(self, ctx: "RuleContext", op: Operation):
        self.ctx = ctx
        self.op = op
        # the primal values the expression read: a partial built only from constants
        # cannot be infinite (see ScalarRule's strong zeros)
        self.read: list[SSAValue] = []

    def arg(self, i: int) -> SSAValue:
        self.read.append(self.op.operands[i])
        return self.ctx.primal(self.op.operands[i])

    def res(self, i: int = 0) -> SSAValue:
        self.read.append(self.op.results[i])
        return self.ctx.primal(self.op.results[i])

    def read_only_constants(self) -> bool:
        """Whether every primal value the expression read is a finite nonzero constant
        (``1/b`` of ``a / 2.0``): the partial is then finite."""
        return all(_finite_nonzero_constant(v) is not None for v in self.read)

    def varies(self, i: int) -> bool:
        """Whether operand ``i`` is computed anew in each iteration of a loop around the
        op (in the reverse sweep such a value is recomputed or taped per iteration)."""
        return self.ctx.varies_in_loop(self.op.operands[i])

    def arg_type(self, i: int):
        return self.op.operands[i].type


class RuleContext(Protocol):
    E: "Emitter"

    def primal(self, value: SSAValue) -> SSAValue: ...

    def varies_in_loop(self, value: SSAValue) -> bool: ...

    def wants(self, value: SSAValue) -> bool:
        """Whether the derivative with respect to ``value`` is needed (it is active)."""
        ...

    def may_be_nonfinite(self, value: SSAValue) -> bool:
        """Whether the primal ``value`` may be infinite or NaN at finite inputs
        (analysis.finiteness)."""
        ...

    def singular_here(self, op: Operation, rule: "ScalarRule") -> bool:
        """Whether ``op``'s value or partials may be infinite or NaN at finite operands
        (analysis.finiteness)."""
        ...


class Rule:
    def propagates(self, op: Operation, index: int) -> bool:
        raise NotImplementedError

    def reverse(self, ctx: RuleContext, op: Operation, dys: Sequence[SSAValue | None]) -> list[SSAValue | None]:
        raise NotImplementedError

    def forward(self, ctx: RuleContext, op: Operation, tangents: Sequence[SSAValue | None]) -> list[SSAValue | None]:
        raise NotImplementedError


def _finite_nonzero_constant(v: SSAValue) -> float | None:
    """The value of a float constant that is finite and nonzero, else None."""
    owner = getattr(v, "owner", None)
    value = getattr(owner, "value", None) if isinstance(owner, Operation) and owner.name in (
        "llvm.mlir.constant", "arith.constant") else None
    if not isinstance(value, FloatAttr):
        return None
    x = value.value.data
    return x if x == x and x not in (0.0, float("inf"), float("-inf")) else None


def is_constant_one(v: SSAValue) -> bool:
    """Whether ``v`` is the float constant 1."""
    return _finite_nonzero_constant(v) == 1.0


class _TimesOne:
    """The emitter a partial is applied to 1 with: a product with that 1 is its other
    factor and its negation a constant -1, so the shared coefficients hold no ``1.0 * b``
    even unoptimized (-O0). Everything else is the emitter's."""

    def __init__(self, E: "Emitter", one: SSAValue):
        self._E, self._one = E, one

    def mul(self, a, b):
        return b if a is self._one else a if b is self._one else self._E.mul(a, b)

    def neg(self, a):
        return self._E.const(-1.0, a.type) if a is self._one else self._E.neg(a)

    def __getattr__(self, name: str):
        return getattr(self._E, name)


class _ProbePrimals(Primals):
    """The primal values a partial reads, for :func:`zero_probe`: a value that varies in
    the loop around the op stands in as 1.0 when it is finite at finite inputs
    (analysis.finiteness); ``usable`` turns false when one may not be."""

    def __init__(self, ctx: "RuleContext", op: Operation):
        super().__init__(ctx, op)
        self.usable = True

    def _read(self, v: SSAValue) -> SSAValue:
        self.read.append(v)
        if not self.ctx.varies_in_loop(v):
            return self.ctx.primal(v)
        if self.ctx.may_be_nonfinite(v) or not is_float_type(v.type):
            self.usable = False
        return self.ctx.E.const(1.0, v.type) if is_float_type(v.type) else self.ctx.primal(v)

    def arg(self, i: int) -> SSAValue:
        return self._read(self.op.operands[i])

    def res(self, i: int = 0) -> SSAValue:
        return self._read(self.op.results[i])


def zero_probe(ctx, op: Operation, rule: "ScalarRule", f: Partial, d: SSAValue) -> SSAValue | None:
    """An i1 that is true when the guarded term ``f(d)`` of ``op`` in a loop may be NaN at a
    zero ``d`` (a partial ``1/m`` with ``m = 0``), computed from loop-invariant values and
    constants only, or None when that cannot be told once for the whole loop.

    It is ``f`` applied to a zero ``d``, with the values that vary in the loop replaced by
    1.0: it can be, provided that (1) those values are finite at finite inputs (the
    analysis says so; overflow of arithmetic on finite values is not tracked, as
    everywhere under strong zeros) and (2) when the op may be singular here, the operands
    that make it so (its ``regular_if``'s, all of them when it has none) are
    loop-invariant. Then every factor that may be non-finite is loop-invariant, and the
    term at a zero ``d``, a chain of products and quotients started by ``d``, is NaN in
    some iteration exactly when it is NaN with the stand-ins. Where the probe is false the
    unguarded term is a zero of some sign at a zero ``d``; adjoint accumulations ignore
    the sign of zero (``Emitter.accumulate``'s ``nsz``)."""
    if not ctx.varies_in_loop(op.results[0]) or not is_float_type(d.type):
        return None  # not in a loop: the guard runs once
    if ctx.singular_here(op, rule):
        poles = [i for i, _ in rule.regular_if] or range(len(op.operands))
        if any(ctx.varies_in_loop(op.operands[i]) for i in poles):
            return None
    E = ctx.E
    block, anchor = E.block, E.anchor
    last = anchor.prev_op if anchor is not None else block.last_op  # what precedes the probe
    saved, E.flags = E.flags, frozenset()  # no nnan/ninf/nsz on what tests for NaN
    try:
        probe = _ProbePrimals(ctx, op)
        value = f(E, probe, E.const(0.0, d.type))
        if probe.usable:
            return E.fcmp("uno", value, value)
    finally:
        E.flags = saved
    built, o = [], last.next_op if last is not None else block.first_op
    while o is not None and o is not anchor:
        built.append(o)
        o = o.next_op
    for o in reversed(built):  # the probe's ops, unused: taken back
        if not any(r.uses for r in o.results):
            block.erase_op(o)
    return None


class ScalarRule(Rule):
    """A single-result op with one partial (adjoint expression) per operand; ``None``
    marks an operand without derivative (an integer exponent, a rounding op).

    Strong zeros (:mod:`zymase.autodiff.semantics`): a term ``dy * partial`` whose
    partial may be infinite or NaN is guarded, ``dy == 0 ? 0 : dy * partial``, so that a
    zero adjoint or tangent stays zero. The partials of a ``singular`` rule may be so at
    finite arguments (division, sqrt, log), unless the operands ``regular_if`` lists are
    bounded away from the pole: ``((1, "positive"),)`` for a division whose divisor is
    at least a positive constant. Other partials are primal values, non-finite only when
    a singular op upstream made them so. analysis.finiteness decides both.
    ``bounded`` rules (fabs, fmin, ...) have partials 0 or +-1 whatever the primal
    values and are never guarded."""

    def __init__(self, *partials: Partial | None, name: str = "", bounded: bool = False, singular: bool = False,
                 regular_if: tuple[tuple[int, str], ...] = (),
                 finite_value_if: tuple[tuple[int, str], ...] | None = ()):
        self.partials = partials
        self.name = name
        self.bounded = bounded
        self.singular = singular
        self.regular_if = regular_if
        # for singular rules: when the value itself is finite (None: always; sqrt's
        # partial is infinite at 0 where its value is 0)
        self.finite_value_if = finite_value_if

    def _term(self, ctx, op: Operation, f: Partial, d: SSAValue) -> SSAValue:
        """``f`` applied to the adjoint or tangent ``d``, guarded for strong zeros. In a
        loop whose every iteration reaches the partial's possible singularity through the
        same loop-invariant values, the guard also asks whether the term at a zero ``d``
        is NaN there (:func:`zero_probe`), which is the same in every iteration: the loop
        is then versioned on that question (transforms/strong_zero_versioning)."""
        primals = Primals(ctx, op)
        term = f(ctx.E, primals, d)
        if not self._needs_guard(ctx, op, primals, d, term):
            return term
        E = ctx.E
        dead = E.fcmp("oeq", d, E.zero(d.type))
        # asked of the class: some contexts refuse any attribute they lack (autodiff/laplacian)
        versions = hasattr(type(ctx), "versions_guards") and ctx.versions_guards
        singular = zero_probe(ctx, op, self, f, d) if versions else None
        if singular is None:
            return E.select(dead, E.zero(d.type), term)
        from zymase.transforms.strong_zero_versioning import invariant_guard

        return invariant_guard(E, dead, singular, term)

    def _needs_guard(self, ctx, op: Operation, primals: Primals, d: SSAValue, term: SSAValue) -> bool:
        """Whether ``term`` (the partial applied to ``d``) may be infinite or NaN where
        ``d`` is zero, so that a zero ``d`` must give a zero term (strong zeros)."""
        if self.bounded or not strong_zero() or primals.read_only_constants():
            return False
        if not ctx.singular_here(op, self) and not any(ctx.may_be_nonfinite(v) for v in primals.read):
            return False
        # (vectors too: a lane nobody reads has a zero adjoint, and its partial may be
        # infinite, as 1/x of a lane clang left undefined and zymase made zero)
        return (is_float_type(d.type) or is_float_vector(d.type)) and term.type == d.type

    def partial_value(self, ctx, op: Operation, i: int) -> SSAValue | None:
        """d(result)/d(operand ``i``) as a value (the partial applied to 1), for tangents
        that several lanes share (autodiff/lane_combos). None when it may be infinite or
        NaN: a zero tangent times it must stay zero, which only the guarded per-lane term
        ensures."""
        f = self._partial(i)
        d = op.operands[i]
        if f is None or not is_float_type(d.type):
            return None
        primals = Primals(ctx, op)
        one = ctx.E.const(1.0, d.type)
        term = f(_TimesOne(ctx.E, one), primals, one)
        return None if self._needs_guard(ctx, op, primals, one, term) else term


    def _partial(self, i: int) -> Partial | None:
        return self.partials[i] if i < len(self.partials) else None

    def propagates(self, op, index):
        return self._partial(index) is not None

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        out: list[SSAValue | None] = []
        for i, operand in enumerate(op.operands):
            f = self._partial(i)
            # Only active operands get an adjoint: an inactive operand's partial
            # would fetch primal values (and tape them in loops) for nothing.
            wanted = f is not None and dy is not None and ctx.wants(operand)
            out.append(self._term(ctx, op, f, dy) if wanted else None)
        return out

    def forward(self, ctx, op, tangents):
        total = None
        for i, t in enumerate(tangents):
            f = self._partial(i)
            if f is None or t is None:
                continue
            term = self._term(ctx, op, f, t)
            total = term if total is None else ctx.E.add(total, term)
        return [total]


class CallMemoryRule(Rule):
    """The rule of an external function that reads and writes memory through its pointer
    arguments (BLAS and LAPACK routines, MPI communication): the whole call
    is differentiated at once, by calls the rule emits, without looking into the callee.

    The engine treats such a call as a memory op (``analysis.memory.memory_kind`` gives
    ``"call_rule"``): activity and shadow analysis ask :meth:`reads`, :meth:`writes` and
    :meth:`scalar_inputs`; the generators call :meth:`structure` in the forward sweep (the
    emitter right after the primal call's copy ``clone``) and :meth:`reverse_memory` at
    the call's mirror point, as for loads and stores (``autodiff/memory.ShadowCode``). The
    generator ``g`` gives the rule ``g.E``, ``g.act``, ``g.vmap``, ``g.shadow_of``, ``g.tmap``
    (forward mode), and in reverse mode ``g.primal``, ``g.fetch_shadow``,
    ``g.fetch_computed_in``, ``g._take_adjoint``, ``g._accumulate`` and
    ``g.unwritten_after(op, ptr)`` (whether the reverse sweep may read the memory again)."""

    def propagates(self, op: Operation, index: int) -> bool:
        return False  # memory flow: analysis.memory.MemoryModel asks reads/writes

    def reads(self, op: Operation) -> list[int]:
        """Operand positions of the pointers to floating-point data the call reads."""
        raise NotImplementedError

    def writes(self, op: Operation) -> list[int]:
        """Operand positions of the pointers the call writes through."""
        raise NotImplementedError

    def float_outputs(self, op: Operation) -> list[int]:
        """Of :meth:`writes`, the pointers to floating-point data (they get shadows; a
        status integer does not)."""
        return self.writes(op)

    def output_reads(self, op: Operation, index: int) -> list[int]:
        """Of :meth:`reads`, the pointers whose data the output at operand position
        ``index`` depends on (all of them unless the rule knows better: gesv's factors do
        not depend on its right-hand sides)."""
        return self.reads(op)

    def check(self, op: Operation) -> None:
        """Raise a ZymaseError when this call cannot be differentiated by the rule (asked
        once the call touches active data)."""

    def scalar_inputs(self, op: Operation) -> list[int]:
        """Operand positions of floating-point values the call's outputs depend on."""
        return []

    def receives(self, op: Operation) -> bool:
        """Whether what the call writes may be active whatever this function's inputs are
        (an MPI receive: the data comes from another process): its float outputs then
        always get shadows."""
        return False

    def pointee_types(self, op: Operation) -> dict[int, tuple[str, int]]:
        """Operand position -> (element type in analysis/types.py's names, its size in
        bytes) for the pointers the call reads or writes as arrays of that type (type
        analysis takes them as facts about the memory)."""
        return {}

    def structure(self, g, op: Operation, clone: Operation, *, forward_mode: bool) -> None:
        raise NotImplementedError

    def reverse_memory(self, g, op: Operation) -> None:
        raise NotImplementedError

    def lane_by_lane(self, op: Operation) -> bool:
        """Vector mode: whether the generators may call :meth:`structure` and
        :meth:`reverse_memory` once per lane, with that lane's maps selected
        (``g.lane_index``; the rule then does the primal side once, on lane 0, and frees
        what it kept after the last lane). Rules that have not been written so are
        refused at width > 1."""
        return False


class Registry:
    """Rules keyed by op class, plus rules for calls keyed by the callee's neutral
    name (libm functions, LLVM intrinsics), plus call-level memory rules keyed by the
    external function's name (:class:`CallMemoryRule`)."""

    def __init__(self):
        self.by_op: dict[type, Rule] = {}
        self.by_function: dict[str, Rule] = {}
        self.call_rules: dict[str, CallMemoryRule] = {}
        # lookup's answer per op class, None included: most ops the engine asks about
        # (loads, stores, branches) have no rule, and finding that out is a scan of
        # every registered class (about 1% of a build); cleared when a rule is registered
        self._by_class: dict[type, Rule | None] = {}

    def register(self, op_class: type, rule: Rule) -> None:
        self.by_op[op_class] = rule
        self._by_class.clear()

    def register_function(self, name: str, rule: Rule) -> None:
        self.by_function[name] = rule

    def register_call_rule(self, name: str, rule: CallMemoryRule) -> None:
        self.call_rules[name] = rule

    def lookup(self, op: Operation) -> Rule | None:
        """The rule of ``op``'s class, else of the first registered class it is an
        instance of (a subclass, such as the extended llvm ops), else None."""
        op_class = type(op)
        if op_class in self._by_class:
            return self._by_class[op_class]
        _load_dialect_rules(op_class)
        rule = self.by_op.get(op_class)
        if rule is None:
            rule = next((r for cls, r in self.by_op.items() if issubclass(op_class, cls)), None)
        self._by_class[op_class] = rule
        return rule


REGISTRY = Registry()
_loaded = False


def call_memory_rule(name: str | None) -> CallMemoryRule | None:
    """The call-level memory rule of the external function ``name``, if it has one."""
    if name is None:
        return None
    if not _loaded:
        load_all_rules()
    return REGISTRY.call_rules.get(name)


def register(*op_classes: type) -> Callable[[Rule], Rule]:
    def deco(rule: Rule) -> Rule:
        for cls in op_classes:
            REGISTRY.register(cls, rule)
        return rule

    return deco


def load_all_rules() -> Registry:
    """Import every rule module (each registers itself) and return the registry; the
    rules of the standard dialects only once their dialect is imported
    (:data:`_DIALECT_RULES`)."""
    global _loaded
    _loaded = True
    from zymase.autodiff.rules import aggregates as _g  # noqa: F401
    from zymase.autodiff.rules import blas as _b  # noqa: F401
    from zymase.autodiff.rules import complex as _c  # noqa: F401
    from zymase.autodiff.rules import enzyme_ops as _e  # noqa: F401
    from zymase.autodiff.rules import libm as _l  # noqa: F401
    from zymase.autodiff.rules import llvm as _v  # noqa: F401
    from zymase.autodiff.rules import mpi as _p  # noqa: F401
    from zymase.autodiff.rules import numba_linalg as _n  # noqa: F401
    from zymase.autodiff.rules import vector_reduce as _vr  # noqa: F401

    for module_name, rules in _DIALECT_RULES.items():
        if module_name in sys.modules:
            importlib.import_module(rules)
    return REGISTRY


#: the rule modules of the standard dialects, by the module defining the op classes
#: they register: imported by :func:`load_all_rules` when that module is imported, else
#: by :meth:`Registry.lookup` at the first op of one of its classes (or of a subclass).
#: The C and Numba paths build llvm-dialect ops only and import neither the dialects
#: nor these rules (zymase/ir/on_first_use.py).
_DIALECT_RULES = {
    "xdsl.dialects.arith": "zymase.autodiff.rules.arith",
    "zymase.ir.arith_ext": "zymase.autodiff.rules.arith",
    "xdsl.dialects.math": "zymase.autodiff.rules.math",
    "xdsl.dialects.memref": "zymase.autodiff.rules.memref",
    "zymase.ir.memref_ext": "zymase.autodiff.rules.memref",
    "xdsl.dialects.scf": "zymase.autodiff.rules.scf",
    "zymase.ir.scf_ext": "zymase.autodiff.rules.scf",
}


def _load_dialect_rules(op_class: type) -> None:
    """Import the rule module of ``op_class``'s dialect (or of a class it extends) if it
    has one (:data:`_DIALECT_RULES`); it registers its rules, clearing the answers
    :meth:`Registry.lookup` kept."""
    for cls in op_class.__mro__:
        rules = _DIALECT_RULES.get(cls.__module__)
        if rules is not None and rules not in sys.modules:
            importlib.import_module(rules)
