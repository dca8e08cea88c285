"""Type analysis's deduction rules: what each instruction of one function says.

:class:`RuleGraph` turns a function body into rules, each a small function that reads
the trees of some values and joins facts into others (``put``); the fixpoint
(:mod:`zymase.analysis.type_fixpoint`) runs them until nothing changes. Built once per
function, run per calling context.

Deductions (a worklist fixpoint over the function, both directions where sound)
-----------------------------------------------------------------------------
* loads/stores: the accessed type at offset 0 of the address (vectors and
  aggregates by their layout); the TBAA access type (``zymase.tbaa``: ``double``,
  ``float``, ``int``, ``any pointer``, ...) when present; a loaded/stored pointer
  links the memory's pointee tree with the pointer value's own tree. An integer
  load without TBAA whose only uses are stores is a copy (source and destination
  agree), not an ``int`` fact; in optimized modules (TBAA present), an integer
  *constant* stored without TBAA is a lowered memset and says nothing.
* ``llvm.getelementptr`` with the x86-64 data layout (:func:`size_align`,
  :func:`struct_offsets`; packed structs have no padding): constant offsets shift
  trees both ways; an index ``c + m*k`` with ``k`` unknown (``m`` from the element
  size and from ``mul``/``shl``/``add`` of the index) relates the pointers through
  a periodic part of period ``m`` (the uniform-array assumption Enzyme makes);
  periodic parts whose period does not divide ``m`` cannot be placed and are not
  passed on. An unknown byte offset (``m == 1``, e.g. a pointer difference) relates
  nothing, unless both pointers are known aligned to ``A`` (the ``align`` of their
  loads, stores and call arguments, or an allocator's result): the offset is then a
  multiple of ``A`` too (``std::vector::insert`` copies from ``begin + (pos - begin)``). Where constant
  offsets also relate the two pointers, by another amount (a stencil's
  ``select(i == 0, u, &u[i] - 8)``), the periodic part starts at ``-MAX_OFFSET``
  (a widening: the fixpoint would creep there one step per round).
* block arguments (phis), ``select``, ``bitcast``, ``addrspacecast``, ``freeze``,
  ``llvm.ptrmask``, a returned ``memcpy`` destination: same memory, both ways. A
  web of pointers linked by these and constant GEPs that contains a cycle with a
  nonzero net offset (a pointer advanced around a loop, ``p = phi(a, p + 8)``, also
  through nested loops) is periodic with the gcd of those offsets. Pointers loaded
  from and stored to the same cell (the same offset of one web) belong to one web
  too, so a pointer advanced in memory (``c->at++``, a ``std::vector``'s end pointer
  at -O0) is periodic with its step, at every offset (a widening: the fixpoint would
  otherwise creep one step per round up to ``MAX_OFFSET``).
* ``alloca`` / globals: their declared type's floats, pointers and integers
  (``i8`` arrays and unions say nothing: they are raw storage).
* calls to defined functions: the callee is analysed with the caller's argument
  and result trees as seeds, and its deductions about arguments and result flow
  back. Context-sensitive (cached) up to ``MAX_CALL_DEPTH`` nested callees and
  ``MAX_CONTEXTS`` contexts per callee; beyond that a context-free summary (the
  callee analysed once without caller information). Direct self-recursion shares
  the function's own argument trees; recursion through other functions uses the
  context-free summary when it is complete, else nothing.
* known external functions: ``malloc``/``calloc``/``aligned_alloc``/``new``: unknown
  content; ``realloc``: the content of the old block; ``memcpy``/``memmove`` (libc,
  ``_chk`` and intrinsic forms): source and destination agree over the copied
  length (all of it when the length is not constant); ``memset``: nothing;
  ``posix_memalign``: stores a pointer; libm functions with pointer outputs
  (``modf``, ``frexp``, ``sincos``, ``remquo``, ``lgamma_r`` and ``f`` variants).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from zymase.analysis.layout import FLOAT_SIZE, is_struct, size_align, store_size, struct_offsets
from zymase.analysis.type_tree import (
    EMPTY,
    MAX_OFFSET,
    TypeTree,
    array_tree,
    first_element,
    layout_tree,
    periodize,
    restrict,
    scalar_tree,
    shift,
)
from zymase.autodiff.registry import call_memory_rule
from zymase.ir import Attribute, Block, IntegerAttr, IntegerType, Operation, SSAValue, VectorType, llvm, llvm_ext
from zymase.analysis.op_classes import is_a

if TYPE_CHECKING:
    from zymase.analysis.type_fixpoint import Analyzer, Shared

__all__ = ["RuleGraph", "RET", "gep_offset", "const_int", "describe_op", "is_ptr"]


def is_ptr(v: SSAValue) -> bool:
    return is_a(v.type, llvm.LLVMPointerType)


def const_int(v: SSAValue) -> int | None:
    owner = v.owner
    if is_a(owner, llvm.ConstantOp) and is_a(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _affine(v: SSAValue, depth: int = 0) -> tuple[int, int]:
    """``(c, m)``: the integer ``v`` is ``c + m*k`` for some unknown integer ``k``."""
    c = const_int(v)
    if c is not None:
        return c, 0
    owner = v.owner
    if depth > 12 or not is_a(owner, Operation):
        return 0, 1
    name = owner.name
    if name in ("llvm.sext", "llvm.zext", "llvm.trunc", "llvm.freeze"):
        return _affine(owner.operands[0], depth + 1)
    if name in ("llvm.add", "llvm.sub") or (name == "llvm.or" and "isDisjoint" in owner.properties):
        c1, m1 = _affine(owner.operands[0], depth + 1)
        c2, m2 = _affine(owner.operands[1], depth + 1)
        return (c1 - c2 if name == "llvm.sub" else c1 + c2), math.gcd(m1, m2)
    if name == "llvm.mul":
        c1, m1 = _affine(owner.operands[0], depth + 1)
        c2, m2 = _affine(owner.operands[1], depth + 1)
        return c1 * c2, math.gcd(math.gcd(c1 * m2, c2 * m1), m1 * m2)
    if name == "llvm.shl":
        k = const_int(owner.operands[1])
        if k is not None and 0 <= k < 63:
            c1, m1 = _affine(owner.operands[0], depth + 1)
            return c1 << k, m1 << k
    return 0, 1


def gep_offset(op: Operation) -> tuple[int, int] | None:
    """``(c, m)``: the GEP's result is its base plus ``c + m*k`` bytes (``m >= 0``)."""
    ssa = iter(op.ssa_indices)
    t = op.elem_type
    c = m = 0
    for i, raw in enumerate(op.rawConstantIndices.iter_values()):
        idx: int | SSAValue = next(ssa) if raw == llvm.GEP_USE_SSA_VAL else raw
        if i == 0:
            elem = t
        elif is_struct(t):
            if not isinstance(idx, int):
                idx = const_int(idx)
                if idx is None:
                    return None
            offsets = struct_offsets(t)
            if not 0 <= idx < len(offsets):
                return None
            c += offsets[idx]
            t = t.types.data[idx]
            continue
        elif isinstance(t, llvm.LLVMArrayType):
            elem = t.type
        elif isinstance(t, VectorType):
            elem = t.element_type
        else:
            return None
        size = size_align(elem)[0]
        if isinstance(idx, int):
            c += idx * size
        else:
            ic, im = _affine(idx)
            c += ic * size
            m = math.gcd(m, im * size)
        t = elem
    return c, abs(m)


#: the alignment of what the C and C++ allocators return on x86-64 (glibc's malloc,
#: __STDCPP_DEFAULT_NEW_ALIGNMENT__)
_ALLOCATOR_ALIGNMENT = 16
_ALLOCATORS = frozenset({"malloc", "calloc", "realloc", "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t"})


def _known_alignment(ptr: SSAValue, depth: int = 0) -> int:
    """The largest alignment ``ptr`` is known to have from its own definition (an
    allocator's result, an alloca) or its uses: ``align`` of a load or store through it
    or of a call argument (LLVM makes a lower alignment undefined behaviour), and the
    alignment of a GEP from it, as far as its offsets are multiples of it (``&a[i]``
    read as a double: ``a`` is 8-aligned too)."""
    best = 1
    owner = ptr.owner
    if isinstance(owner, llvm.AllocaOp) and owner.alignment is not None:
        best = owner.alignment.value.data
    elif isinstance(owner, llvm.CallOp) and _callee(owner) in _ALLOCATORS:
        best = _ALLOCATOR_ALIGNMENT
    for use in ptr.uses:
        user = use.operation
        align = None
        if isinstance(user, llvm.LoadOp) or isinstance(user, llvm.StoreOp) and use.index == 1:
            align = user.properties.get("alignment")
        elif isinstance(user, (llvm.CallOp, llvm.CallIntrinsicOp)):
            attrs = user.attributes.get("arg_attrs") or user.properties.get("arg_attrs")
            # an indirect call's first operand is the callee
            index = use.index - (1 if isinstance(user, llvm.CallOp) and user.callee is None else 0)
            if attrs is not None and 0 <= index < len(attrs.data):
                align = attrs.data[index].data.get("llvm.align")
        elif isinstance(user, llvm.GEPOp) and use.index == 0 and depth < 2:
            off = gep_offset(user)
            if off is not None:
                # base = result - (c + m*k): aligned to what both terms are
                best = max(best, math.gcd(math.gcd(*off), _known_alignment(user.result, depth + 1)))
        if isinstance(align, IntegerAttr):
            best = max(best, align.value.data)
    return best


def _is_int_copy(load: Operation) -> bool:
    """An integer load without TBAA whose only uses are stores of the loaded value:
    a copy of bytes of any type (e.g. a small memcpy turned into ``load i64``/``store``)."""
    v = load.dereferenced_value
    if not isinstance(v.type, IntegerType) or "zymase.tbaa" in load.attributes and _tbaa_kind(
        load.attributes["zymase.tbaa"].data
    ) is not None:
        return False
    users = [use.operation for use in v.uses]
    return bool(users) and all(isinstance(u, llvm.StoreOp) and u.value is v and u.ptr is not v for u in users)


def _callee(op: Operation) -> str | None:
    if isinstance(op, llvm.CallOp) and op.callee is not None:
        return op.callee.root_reference.data
    return None


def describe_op(op: Operation) -> str:
    """A short human name of an instruction: ``call @malloc``, ``load``, ``getelementptr``."""
    name = _callee(op)
    if name is not None:
        return f"call @{name}"
    if isinstance(op, llvm.CallIntrinsicOp):
        return f"call @{op.intrin.data}"
    if isinstance(op, llvm.CallOp):
        return "indirect call"
    if isinstance(op, llvm.AddressOfOp):
        return f"@{op.global_name.root_reference.data}"
    return op.name.removeprefix("llvm.")


def _successor_operands(term: Operation) -> list[tuple[Block, Sequence[SSAValue]]]:
    if isinstance(term, llvm.BrOp):
        return [(term.successor, list(term.arguments))]
    if isinstance(term, llvm.CondBrOp):
        return [(term.then_block, list(term.then_arguments)), (term.else_block, list(term.else_arguments))]
    if isinstance(term, llvm_ext.SwitchOp):
        lists = [list(term.default_operands)] + [list(c) for c in term.case_operand_lists()]
        blocks = [term.default_destination, *term.case_destinations]
        return list(zip(blocks, lists))
    return []


def _tbaa_kind(name: str) -> str | None:
    """The base type a TBAA scalar type name stands for (None: says nothing)."""
    n = name.strip()
    if n in ("double",):
        return "f64"
    if n == "float":
        return "f32"
    if n == "long double":
        return "f80"
    if n in ("_Float16", "__fp16", "half"):
        return "f16"
    if n == "__bf16":
        return "bf16"
    if n in ("__float128", "_Float128"):
        return "f128"
    if n in ("any pointer", "vtable pointer") or n.startswith("p") and n[1:2].isdigit():
        return "ptr"
    if n in ("omnipotent char", "char", "signed char", "unsigned char", "any data access"):
        return None
    ints = ("int", "long", "short", "long long", "bool", "_Bool", "__int128", "wchar_t",
            "char16_t", "char32_t", "_BitInt")
    if n in ints or n.startswith("unsigned ") or n.startswith("_BitInt"):
        return "int"
    return None


# Known external functions ---------------------------------------------------------

_ALLOCATORS = {"malloc", "calloc", "valloc", "pvalloc", "aligned_alloc", "memalign",
               "_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
               "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t"}
_REALLOCATORS = {"realloc", "reallocf", "__zymase_tape_realloc"}  # the last: analysis/memory.TAPE_POOL
# name -> (dst, src, length) operand indices
_COPIES = {"memcpy": (0, 1, 2), "memmove": (0, 1, 2), "__memcpy_chk": (0, 1, 2),
           "__memmove_chk": (0, 1, 2), "mempcpy": (0, 1, 2)}
_RETURNS_DST = {"memcpy", "memmove", "__memcpy_chk", "__memmove_chk", "memset", "__memset_chk"}
# libm functions with pointer outputs: name -> [(argument, base type, bytes)]
_LIBM_OUT = {
    "modf": [(1, "f64", 8)], "modff": [(1, "f32", 4)],
    "frexp": [(1, "int", 4)], "frexpf": [(1, "int", 4)], "frexpl": [(1, "int", 4)],
    "sincos": [(1, "f64", 8), (2, "f64", 8)], "sincosf": [(1, "f32", 4), (2, "f32", 4)],
    "remquo": [(2, "int", 4)], "remquof": [(2, "int", 4)],
    "lgamma_r": [(1, "int", 4)], "lgammaf_r": [(1, "int", 4)],
    "posix_memalign": [(0, "ptr", 8)],
}
_SAME_INTRINSICS = {"ptrmask", "launder", "strip"}  # llvm.ptrmask, llvm.launder.invariant.group, ...

RET = "<return value>"


class _Webs:
    """Pointers related by constant offsets (union-find with the offset of every
    pointer from its web's root), and the gcd of the net offsets of the cycles each
    web contains (its period; a web without cycles has none)."""

    #: passes joining pointers of the same cell; more only when cells hold pointers
    #: to cells nested deeper (a pass may merge webs whose cells then coincide)
    MAX_CELL_PASSES = 8

    def __init__(self) -> None:
        self.parent: dict[object, object] = {}
        self.pot: dict[object, int] = {}  # v = parent[v] + pot[v]
        self.period: dict[object, int] = {}

    def find(self, v: object) -> tuple[object, int]:
        """(root of ``v``'s web, offset of ``v`` from it)."""
        parent, pot = self.parent, self.pot
        path = []
        while parent.get(v, v) is not v:
            path.append(v)
            v = parent[v]
        root, total = v, 0
        for u in reversed(path):  # compress: offsets relative to the root
            total += pot[u]
            parent[u], pot[u] = root, total
        return root, (pot[path[0]] if path else 0)

    def union(self, a: object, b: object, c: int) -> bool:
        """``b`` is ``a + c``; True when two webs became one."""
        ra, oa = self.find(a)
        rb, ob = self.find(b)
        if ra is rb:
            d = oa + c - ob
            if d:
                self.period[ra] = math.gcd(self.period.get(ra, 0), abs(d))
            return False
        self.parent[rb], self.pot[rb] = ra, oa + c - ob
        if rb in self.period:
            self.period[ra] = math.gcd(self.period.get(ra, 0), self.period.pop(rb))
        return True

    def join_cells(self, cells: Sequence[tuple[SSAValue, SSAValue]]) -> None:
        """Join the pointers ``v`` of ``cells`` (``v`` loaded from or stored at ``p``)
        whose ``p`` are the same offset of the same web, until no webs merge."""
        for _ in range(self.MAX_CELL_PASSES):
            first: dict[tuple[object, int], SSAValue] = {}
            merged = False
            for p, v in cells:
                key = self.find(p)
                other = first.setdefault(key, v)
                if other is not v and self.union(other, v, 0):
                    merged = True
            if not merged:
                return

    def period_of(self, v: object) -> int | None:
        return self.period.get(self.find(v)[0])

    def periodic(self) -> list[tuple[object, int, list[tuple[object, int]]]]:
        """(root, period, [(pointer, offset from root)]) of every web with a cycle."""
        members: dict[object, list[tuple[object, int]]] = {}
        for v in list(self.parent):
            root, off = self.find(v)
            if root in self.period:
                members.setdefault(root, []).append((v, off))
        return [(root, self.period[root], vs) for root, vs in members.items()]


def _stride_start(src: SSAValue, dst: SSAValue, c: int, webs: Sequence[_Webs]) -> int:
    """Where the periodic part a dynamic GEP ``dst = src + c + m*k`` gives starts: offset 0
    of ``dst``, unless constant offsets also lead from ``src`` to ``dst`` by another
    amount (``u[i - 1] if i > 0 else u[i]``: ``select(i == 0, u, &u[i] - 8)`` is ``u``
    and ``&u[i] - 8`` at once). Around that cycle each round moves the start down by the
    difference, to ``-MAX_OFFSET`` one round after the other (a rule run per step: 6,000
    for a 232-op stencil); it starts there (a widening, as for the cells' webs)."""
    for w in webs:
        rs, os_ = w.find(src)
        rd, od = w.find(dst)
        if rs is rd and od - os_ != c:
            return -MAX_OFFSET
    return 0


def _below_strided(strides: Sequence[tuple[SSAValue, SSAValue, int, int]], plain: "_Webs"
                   ) -> dict[SSAValue, list[tuple[object, int]]]:
    """For the ends ``dst`` of dynamic GEPs, the pointers a constant ``d > 0`` bytes below
    them by constant offsets alone (``&a[n] - 8``; not in a web with a cycle, whose
    pointers are periodic already): the periodic part a dynamic GEP gives starts at its
    own offset 0, so those pointers' first bytes would be unknown."""
    ends = {dst for _, dst, _, _ in strides}
    webs: dict[object, list[tuple[object, int]]] = {}
    for v in set(plain.parent) | set(plain.parent.values()):
        root, off = plain.find(v)
        if root not in plain.period:
            webs.setdefault(root, []).append((v, off))
    out: dict[SSAValue, list[tuple[object, int]]] = {}
    for dst in ends:
        root, od = plain.find(dst)
        below = [(v, od - ov) for v, ov in webs.get(root, ()) if ov < od and v is not dst]
        if below:
            out[dst] = below
    return out


_Rule = Callable[["Analyzer"], None]


class RuleGraph:
    """The deduction rules of one function, built once and run per calling context."""

    def __init__(self, shared: Shared, func: Operation):
        self.shared = shared
        self.func = func
        self.name = func.sym_name.data if hasattr(func, "sym_name") else "?"
        self.rules: list[_Rule] = []
        self.users: dict[object, list[int]] = {}
        self.blocks = list(func.body.blocks) if func.regions else []
        self.formals = list(self.blocks[0].args) if self.blocks else []
        self.has_tbaa = shared.has_tbaa or any(
            "zymase.tbaa" in op.attributes for block in self.blocks for op in block.ops
        )
        self._build()

    def rule(self, inputs: Iterable[object], fn: _Rule) -> None:
        idx = len(self.rules)
        self.rules.append(fn)
        for v in inputs:
            self.users.setdefault(v, []).append(idx)

    # ------------------------------------------------------------- rule kinds

    def same(self, a: object, b: object) -> None:
        def fn(an: Analyzer) -> None:
            an.put(a, an.of(b))
            an.put(b, an.of(a))
        self.rule((a, b), fn)

    def into(self, dst: object, src: object) -> None:
        self.rule((src,), lambda an: an.put(dst, an.of(src)))

    def fact(self, p: SSAValue, tree: TypeTree) -> None:
        self.rule((), lambda an: an.put(p, tree))

    def offset(self, src: SSAValue, dst: SSAValue, c: int) -> None:
        def fn(an: Analyzer) -> None:
            an.put(dst, shift(an.of(src), -c))
            an.put(src, shift(an.of(dst), c))
        self.rule((src, dst), fn)

    def strided(self, src: SSAValue, dst: SSAValue, c: int, m: int, *, start: int = 0,
                forward_only: bool = False) -> None:
        """dst = src + c + m*k, k unknown: both see the same period-m pattern (from
        offset ``start`` of ``dst`` on; ``forward_only``: dst learns from src, not back)."""
        # the rule runs again whenever either end grows, mostly with the other end as it
        # was: each direction's tree is kept for the input it came from (trees are
        # immutable, and both directions pure functions of their input)
        last = [None, EMPTY, None, EMPTY]  # src tree, what it gives dst; dst tree, what it gives src

        def fn(an: Analyzer) -> None:
            seen = an.of(src)
            if seen is not last[0]:
                # forward: element 0's facts, and periodic parts in phase with the stride
                last[0], last[1] = seen, periodize(first_element(shift(seen, -c), m), m, start)
            an.put(dst, last[1])
            if forward_only:
                return
            back = an.of(dst)
            if back is not last[2]:
                last[2], last[3] = back, shift(periodize(back, m, start), c)
            an.put(src, last[3])
        self.rule((src, dst), fn)

    def cell(self, p: SSAValue, v: SSAValue) -> None:
        """The pointer ``v`` is stored at offset 0 of ``p`` (load or store)."""
        self.cells.append((p, v))

        def fn(an: Analyzer) -> None:
            an.put(p, scalar_tree("ptr", 8, an.of(v)))
            an.put(v, an.of(p).pointee(0))
        self.rule((p, v), fn)

    def copy(self, dst: SSAValue, src: SSAValue, n: int | None) -> None:
        def fn(an: Analyzer) -> None:
            an.put(dst, restrict(an.of(src), n))
            an.put(src, restrict(an.of(dst), n))
        self.rule((dst, src), fn)

    # ------------------------------------------------------------- building

    def _build(self) -> None:
        self.links: list[tuple[SSAValue, SSAValue, int]] = []
        self.cells: list[tuple[SSAValue, SSAValue]] = []
        self.strides: list[tuple[SSAValue, SSAValue, int, int]] = []
        addressof: dict[str, SSAValue] = {}
        for block in self.blocks:
            for op in block.ops:
                self._op(op, addressof)
            term = block.last_op
            if term is not None:
                for succ, values in _successor_operands(term):
                    for arg, val in zip(succ.args, values):
                        if is_ptr(arg) and val is not arg:
                            self.link(val, arg, 0)
        self._emit_links()

    def link(self, a: SSAValue, b: SSAValue, c: int) -> None:
        """``b`` is ``a + c`` (GEP with constant offsets, phi edge, cast, select)."""
        self.links.append((a, b, c))

    def _emit_links(self) -> None:
        """Rules for the links. Links that close a cycle with a nonzero net offset (a
        pointer advanced around a loop: ``p = phi(a, p + 8)``) make their whole web
        of pointers periodic with the gcd of those offsets; other links relate their
        two ends (``same``/``offset``).

        The loop-carried pointer may also live in memory (unoptimized code, a cursor
        field, a std::vector's end pointer: load, advance, store back), a cycle the
        links alone do not close. So the webs are computed twice: from the links
        (``plain``), and with the pointers loaded from or stored to the same cell (the
        same offset of the same web) joined at offset 0 (``cells``), which closes
        those cycles. Where the cells give a usable period, the web is periodic with
        it (a widening: without it the fixpoint grows the pointee tree one step per
        round up to MAX_OFFSET); elsewhere the plain webs decide, as if there were no
        cells (the cell rules relate the pointers either way)."""
        plain = _Webs()
        for a, b, c in self.links:
            plain.union(a, b, c)
        cells = _Webs()
        for a, b, c in self.links:
            cells.union(a, b, c)
        cells.join_cells(self.cells)

        def web(v: SSAValue) -> _Webs:
            g = cells.period_of(v)
            return cells if g is not None and g >= 2 else plain

        for a, b, c in self.links:
            if web(a).period_of(a) is not None:
                continue
            if c == 0:
                self.same(a, b)
            else:
                self.offset(a, b, c)
        below = _below_strided(self.strides, plain)
        for src, dst, c, m in self.strides:
            self.strided(src, dst, c, m, start=_stride_start(src, dst, c, (plain, cells)))
            for v, d in below.get(dst, ()):
                # v = dst - d = src + (c - d) + m*k: an element the same unknown number of
                # steps in (``c + n - 2``: LLVM's ``&c[n] - 16``), seeing the pattern
                # from its own offset 0 on as dst does (only forward: the bytes below
                # src's start that the back direction would claim are not src's to say)
                self.strided(src, v, c - d, m, forward_only=True)
        for webs in (cells, plain):
            # a pointer kept in a cell moves both ways between the cell's users (each
            # sees the others' facts at offset 0, whatever their offsets in the web),
            # so the periodic part starts nowhere in particular: it covers the bytes
            # before the pointer too, rather than creeping down one step per round
            start = -MAX_OFFSET if webs is cells else 0
            for root, g, vs in webs.periodic():
                if g < 2:
                    continue  # walked byte by byte: no usable relation
                for v, off in vs:
                    if web(v) is webs:
                        self.strided(root, v, off, g, start=start)

    def _access(self, op: Operation, p: SSAValue, t: Attribute, value: SSAValue, is_load: bool) -> None:
        tbaa = op.attributes.get("zymase.tbaa")
        kind = _tbaa_kind(tbaa.data) if tbaa is not None else None
        size = store_size(t)
        if kind is not None:
            self.fact(p, scalar_tree(kind, min(size, FLOAT_SIZE.get(kind, size))))
        if isinstance(t, IntegerType) and kind is None:
            if is_load and _is_int_copy(op):
                for use in value.uses:
                    self.copy(use.operation.ptr, p, size)
                return
            if not is_load:
                if self.has_tbaa and (
                    const_int(value) is not None or isinstance(value.owner, (llvm.ZeroOp, llvm.UndefOp))
                ):
                    # optimized code where C accesses carry TBAA: an untagged integer
                    # constant store is a lowered memset and says nothing about floats
                    return
                if isinstance(value.owner, llvm.LoadOp) and _is_int_copy(value.owner):
                    return  # the other half of an integer copy (handled at the load)
        if is_ptr(value):
            self.cell(p, value)
            return
        self.fact(p, layout_tree(t))

    def _op(self, op: Operation, addressof: dict[str, SSAValue]) -> None:
        if is_a(op, llvm.LoadOp):
            self._access(op, op.ptr, op.dereferenced_value.type, op.dereferenced_value, True)
        elif is_a(op, llvm.StoreOp):
            self._access(op, op.ptr, op.value.type, op.value, False)
        elif is_a(op, llvm.GEPOp):
            off = gep_offset(op)
            if off is None:
                return
            c, m = off
            if m % 2:
                # an odd stride: both pointers aligned to A make the offset a multiple of A
                align = min(_known_alignment(op.ptr), _known_alignment(op.result))
                if align > 1 and c % align == 0:
                    m = math.lcm(m, align)
            if m == 0:
                self.link(op.ptr, op.result, c)
            elif m >= 2:
                self.strides.append((op.ptr, op.result, c, m))  # its rule: _emit_links
        elif is_a(op, (llvm.BitcastOp, llvm_ext.AddrSpaceCastOp, llvm_ext.FreezeOp)):
            if op.results and is_ptr(op.results[0]) and is_ptr(op.operands[0]):
                self.link(op.operands[0], op.results[0], 0)
        elif is_a(op, llvm.SelectOp):
            if is_ptr(op.res):
                self.link(op.lhs, op.res, 0)
                self.link(op.rhs, op.res, 0)
        elif is_a(op, llvm.AllocaOp):
            tree = layout_tree(op.elem_type, declared=True)
            if not tree.is_empty():
                self.fact(op.res, tree)
        elif is_a(op, llvm.AddressOfOp):
            name = op.global_name.root_reference.data
            if name in addressof:
                self.link(addressof[name], op.result, 0)
            else:
                addressof[name] = op.result
                glob = self.shared.globals.get(name)
                if glob is not None:
                    tree = layout_tree(glob.global_type, declared=True)
                    if not tree.is_empty():
                        self.fact(op.result, tree)
        elif is_a(op, (llvm_ext.AtomicRMWOp, llvm_ext.AtomicCmpXchgOp)):
            val = op.operands[-1]
            if is_ptr(val):
                self.cell(op.operands[0], val)
            else:
                self.fact(op.operands[0], layout_tree(val.type))
        elif is_a(op, llvm.ReturnOp):
            if op.arg is not None and is_ptr(op.arg):
                self.same(RET, op.arg)
        elif is_a(op, llvm.CallIntrinsicOp):
            self._intrinsic(op)
        elif is_a(op, llvm.CallOp):
            self._call(op)

    def _intrinsic(self, op: Operation) -> None:
        parts = op.intrin.data.split(".")
        base = parts[1] if len(parts) > 1 else ""
        args = list(op.args)
        if base in ("memcpy", "memmove") and len(args) >= 3:
            self.copy(args[0], args[1], const_int(args[2]))
        elif base in _SAME_INTRINSICS and op.results and is_ptr(op.results[0]) and args:
            self.link(args[0], op.results[0], 0)

    def _call(self, op: Operation) -> None:
        name = _callee(op)
        if name is None:
            return  # indirect call: nothing known
        args = list(op.args)
        result = op.results[0] if op.results and is_ptr(op.results[0]) else None
        callee = self.shared.funcs.get(name)
        if callee is not None and callee.body.blocks:
            self._defined_call(op, callee, args, result)
            return
        if name in _ALLOCATORS:
            return
        if name in _REALLOCATORS and result is not None and args and is_ptr(args[0]):
            self.copy(result, args[0], None)
        elif name in _COPIES:
            d, s, n = _COPIES[name]
            if len(args) > max(d, s, n):
                self.copy(args[d], args[s], const_int(args[n]))
        if name in _RETURNS_DST and result is not None and args:
            self.link(args[0], result, 0)
        for index, kind, size in _LIBM_OUT.get(name, ()):
            if index < len(args) and is_ptr(args[index]):
                self.fact(args[index], scalar_tree(kind, size))
        rule = call_memory_rule(name)
        if rule is not None:  # BLAS: its vectors and matrices are arrays of its precision
            for index, (kind, size) in rule.pointee_types(op).items():
                if index < len(args) and is_ptr(args[index]):
                    self.fact(args[index], array_tree(kind, size))

    def _defined_call(self, op: Operation, callee: Operation, args: list[SSAValue],
                      result: SSAValue | None) -> None:
        formals = callee.body.blocks.first.args
        pairs = [(i, a) for i, (a, f) in enumerate(zip(args, formals)) if is_ptr(a) and is_ptr(f)]
        if callee is self.func:  # direct self-recursion: share the argument trees
            for i, a in pairs:
                self.same(a, formals[i])
            if result is not None:
                self.same(result, RET)
            return
        nformals = len(formals)

        def fn(an: Analyzer) -> None:
            if an.plain:
                found = an.graph.shared.plain_summary(callee)
            else:
                seeds = [EMPTY] * nformals
                for i, a in pairs:
                    seeds[i] = an.of(a)
                ret_seed = an.of(result) if result is not None else EMPTY
                found = an.graph.shared.summary(callee, tuple(seeds), ret_seed, an.stack)
            if found is None:
                return
            trees, ret = found
            for i, a in pairs:
                an.put(a, trees[i])
            if result is not None:
                an.put(result, ret)

        self.rule([a for _, a in pairs] + ([result] if result is not None else []), fn)
