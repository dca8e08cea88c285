"""Type analysis (Enzyme's TypeAnalysis, simplified): what pointers point to.

For every pointer-typed SSA value of one ``llvm.func`` the analysis deduces a
:class:`TypeTree`: which byte offsets, relative to the pointer, hold ``f32``,
``f64`` (also ``f16``/``bf16``/``f80``/``f128``), integers (``int``), pointers
(``ptr``, with what *they* point to), or nothing known (``unknown``). The AD engine
uses it to decide what a ``memcpy``/``memmove`` means on shadow memory (a copy of
``n`` bytes of doubles: the reverse adds ``n/8`` doubles) and to reject copies whose
contents cannot be deduced with a readable error (:meth:`TypeInfo.explain`).

Usage::

    info = analyze_types(func_op, module)
    info.of(p)                          # TypeTree of what p points to
    info.of(p).at(8)                    # 'f64'
    info.float_type_in_range(p, 64)     # 'f64', None (no floats) or ZymaseError

Model
=====
A :class:`TypeTree` is a map *byte offset -> base type*, kept per byte, plus the
trees of pointees of pointer fields (nested up to ``MAX_DEPTH`` levels), plus
*periodic parts*: patterns that repeat every ``period`` bytes at offsets
``>= start``. Periodic information comes from dynamic indices: ``p[i].x`` says
"every ``sizeof(*p)`` bytes". A byte's type is the fact at its known offset if
there is one, else that of the periodic part with the largest period that says
something: after optimization ``ps[i].pos[k]`` is ``(double *)&ps[i] + k``, an
unbounded period of 8 that must not override the layout of the struct array
(period 56). Offsets are kept within ``[-MAX_OFFSET, MAX_OFFSET)``.

Facts about one byte join in a small lattice: ``int`` is the weakest concrete
type (integer accesses to float memory happen: bit copies, lowered memsets), so
``int`` joined with a float or ``ptr`` gives the float or ``ptr``; two different
floats, or a float and a pointer, give ``mixed`` (contradictory facts; a copy over
such bytes is rejected).

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
  passed on; an unknown byte offset (``m == 1``) relates nothing.
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

Known limits
------------
* Unions and type punning give ``mixed`` bytes or (integers) are overridden by floats.
* One ``start`` per periodic part; joining two starts keeps the lower one.
* ``inttoptr``/``ptrtoint`` arithmetic, pointers inside SSA aggregates or vectors,
  indirect calls and variadic arguments carry no information; neither does
  ``!tbaa.struct`` (the reader drops it), so a struct copy at -O2 is typed only by
  the fields the program accesses.
* The top-level function knows nothing about its callers unless ``arg_types`` is
  given to :func:`analyze_types`.
* :meth:`TypeInfo.float_type_in_range` accepts unknown bytes that look like struct
  padding (a gap shorter than the alignment of the next known scalar); an unused
  ``float`` field placed exactly in such a gap is indistinguishable from padding.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from zymase.autodiff.registry import call_memory_rule
from zymase.errors import ZymaseError
from zymase.ir import (
    Attribute,
    Block,
    BlockArgument,
    Float16Type,
    Float32Type,
    Float64Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    SSAValue,
    VectorType,
    llvm,
    llvm_ext,
    location_of,
)

__all__ = [
    "TypeTree",
    "TypeInfo",
    "analyze_types",
    "size_align",
    "struct_offsets",
    "FLOAT_KINDS",
]

#: Base types of floating-point bytes.
FLOAT_KINDS = frozenset({"f16", "bf16", "f32", "f64", "f80", "f128"})
#: Offsets kept in a tree: [-MAX_OFFSET, MAX_OFFSET).
MAX_OFFSET = 1024
#: Levels of nested pointee trees kept (pointer to pointer to ...).
MAX_DEPTH = 5
#: Nesting of context-sensitive callee analyses (deeper: context-free summaries).
MAX_CALL_DEPTH = 4
#: Context-sensitive analyses of one callee per analyze_types call (more: context-free).
MAX_CONTEXTS = 16

_FLOAT_SIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "f80": 16, "f128": 16}
_C_NAME = {"f16": "_Float16", "bf16": "__bf16", "f32": "float", "f64": "double",
           "f80": "long double", "f128": "__float128"}

# --------------------------------------------------------------------------------------
# x86-64 data layout
# --------------------------------------------------------------------------------------


def _float_kind(t: Attribute) -> str | None:
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, llvm.BFloat16Type):
        return "bf16"
    if isinstance(t, llvm.Float80Type):
        return "f80"
    if isinstance(t, llvm.Float128Type):
        return "f128"
    return None


def _scalar_kind(t: Attribute) -> str | None:
    if isinstance(t, llvm.LLVMPointerType):
        return "ptr"
    if isinstance(t, IntegerType):
        return "int"
    return _float_kind(t)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def _is_struct(t: Attribute) -> bool:
    return isinstance(t, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType))


def size_align(t: Attribute) -> tuple[int, int]:
    """(allocation size, ABI alignment) in bytes of an LLVM type on x86-64.

    ``iN``: ``ceil(N/8)`` bytes rounded up to a power-of-two alignment (at most 16,
    ``i128`` is 16/16 as in LLVM 18+); ``f80`` is 16/16; pointers 8/8; arrays
    ``N * size``; structs with natural alignment and tail padding; packed structs
    without padding and alignment 1; vectors naturally aligned (power of two).
    """
    if isinstance(t, IntegerType):
        nbytes = max(1, (t.width.data + 7) // 8)
        align = min(_pow2_at_least(nbytes), 16)
        return -(-nbytes // align) * align, align
    if isinstance(t, llvm.LLVMPointerType):
        return 8, 8
    kind = _float_kind(t)
    if kind is not None:
        size = _FLOAT_SIZE[kind]
        return size, size
    if isinstance(t, llvm.LLVMArrayType):
        size, align = size_align(t.type)
        return t.size.data * size, align
    if isinstance(t, VectorType):
        count = math.prod(t.get_shape())
        elem = t.element_type
        bits = elem.width.data if isinstance(elem, IntegerType) else 8 * size_align(elem)[0]
        nbytes = max(1, (count * bits + 7) // 8)
        align = _pow2_at_least(nbytes)
        return align, align
    if _is_struct(t):
        offsets, size, align = _struct_layout(t)
        return size, align
    return 0, 1  # void, opaque struct, unknown


def _struct_layout(t: Attribute) -> tuple[list[int], int, int]:
    packed = isinstance(t, llvm_ext.LLVMPackedStructType)
    offset, max_align, offsets = 0, 1, []
    for ft in t.types.data:
        size, align = size_align(ft)
        if packed:
            align = 1
        offset = -(-offset // align) * align
        offsets.append(offset)
        offset += size
        max_align = max(max_align, align)
    return offsets, -(-offset // max_align) * max_align, max_align


def struct_offsets(t: Attribute) -> list[int]:
    """Byte offsets of the fields of an ``!llvm.struct`` / ``!llvm.packed_struct``."""
    return _struct_layout(t)[0]


def _store_size(t: Attribute) -> int:
    """Bytes a load/store of ``t`` touches (``i1`` touches 1, ``f80`` 10)."""
    if isinstance(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if _float_kind(t) == "f80":
        return 10
    return size_align(t)[0]


# --------------------------------------------------------------------------------------
# TypeTree
# --------------------------------------------------------------------------------------


def _join_kind(a: str | None, b: str | None) -> str | None:
    if a == b or b is None:
        return a
    if a is None:
        return b
    if a == "mixed" or b == "mixed":
        return "mixed"
    if a == "int":
        return b
    if b == "int":
        return a
    return "mixed"


def _clamp_ok(o: int) -> bool:
    return -MAX_OFFSET <= o < MAX_OFFSET


class _Layer:
    """One periodic part: ``pattern`` (residue -> base type) and ``pptrs`` (residue ->
    pointee tree) repeat every ``period`` bytes at offsets ``>= start``."""

    __slots__ = ("period", "start", "pattern", "pptrs")

    def __init__(self, period: int, start: int, pattern: dict[int, str], pptrs: dict[int, TypeTree]):
        self.period = period
        self.start = max(start, -MAX_OFFSET)
        self.pattern = pattern
        self.pptrs = {o: t for o, t in pptrs.items() if not t.is_empty()}

    def canon(self):
        return (
            self.period,
            self.start,
            tuple(sorted(self.pattern.items())),
            tuple(sorted((o, t._canon()) for o, t in self.pptrs.items())),
        )


class TypeTree:
    """What a pointer points to: byte offset -> base type, pointees of pointer fields,
    and periodic parts.

    Base types: ``'f32'``, ``'f64'`` (and ``'f16'``, ``'bf16'``, ``'f80'``, ``'f128'``),
    ``'int'``, ``'ptr'``, ``'unknown'`` (nothing known) and ``'mixed'`` (contradictory
    facts, e.g. the same bytes read as float and as double).

    A tree is immutable. ``at(o)`` gives the type of byte ``o``, ``pointee(o)`` the
    tree of the pointer stored at ``o``; ``runs(lo, hi)`` lists maximal runs of equal
    type. Facts at known offsets come first; where there are none, the periodic
    parts ("every ``period`` bytes from offset ``start`` on", from dynamic indices)
    answer, the one with the largest period first: an array of structs (period 32)
    is more specific than an array inside each struct indexed dynamically (period 8),
    which after optimization looks like an unbounded index. ``period``/``start`` are
    those of the largest period. ``str(tree)`` prints e.g.
    ``{[0,4):int [8,16):f64 [16,20):f32 [24,32):ptr->{[0,8):f64}} every 32 bytes from 0``.
    """

    __slots__ = ("_fixed", "_ptrs", "_layers", "_key", "_depth")

    def __init__(
        self,
        fixed: dict[int, str] | None = None,
        ptrs: dict[int, TypeTree] | None = None,
        layers: Iterable[_Layer] = (),
    ):
        self._fixed = fixed or {}
        self._ptrs = {o: t for o, t in (ptrs or {}).items() if not t.is_empty()}
        kept = [layer for layer in layers if layer.pattern or layer.pptrs]
        self._layers: tuple[_Layer, ...] = tuple(sorted(kept, key=lambda l: -l.period))
        self._key = None
        self._depth = None

    # ----------------------------------------------------------------- queries

    @property
    def period(self) -> int | None:
        """The largest period of the periodic parts in bytes, or None."""
        return self._layers[0].period if self._layers else None

    @property
    def start(self) -> int:
        """First offset the periodic part with the largest period applies to."""
        return self._layers[0].start if self._layers else 0

    def periods(self) -> list[tuple[int, int]]:
        """``(period, start)`` of every periodic part, largest period first."""
        return [(l.period, l.start) for l in self._layers]

    def is_empty(self) -> bool:
        """Nothing is known."""
        return not (self._fixed or self._ptrs or self._layers)

    def at(self, offset: int) -> str:
        """The base type of the byte at ``offset`` (``'unknown'`` if nothing is known)."""
        kind = self._fixed.get(offset)
        if kind is not None and kind != "int":
            return kind
        # ``int`` is the weakest fact (an integer array that holds the bits of doubles,
        # read back as doubles at dynamic indices: issue 23 item 6), so a periodic part
        # saying more about the byte is joined with it
        for layer in self._layers:
            if offset >= layer.start:
                periodic = layer.pattern.get(offset % layer.period)
                if periodic is not None:
                    return _join_kind(kind, periodic)
        return kind or "unknown"

    def pointee(self, offset: int) -> TypeTree:
        """What the pointer stored at ``offset`` points to (empty if unknown)."""
        tree = self._ptrs.get(offset)
        if tree is not None:
            return tree
        for layer in self._layers:
            if offset >= layer.start:
                tree = layer.pptrs.get(offset % layer.period)
                if tree is not None:
                    return tree
        return EMPTY

    def extent(self) -> int:
        """One past the last byte >= 0 described explicitly (for periodic parts: one
        full period past ``max(start, 0)``)."""
        end = max((o + 1 for o in self._fixed if o >= 0), default=0)
        for layer in self._layers:
            end = max(end, max(layer.start, 0) + layer.period)
        return end

    def runs(self, lo: int, hi: int) -> list[tuple[int, int, str]]:
        """Maximal runs ``(begin, end, base type)`` of equal type covering ``[lo, hi)``."""
        out: list[tuple[int, int, str]] = []
        for o in range(lo, hi):
            k = self.at(o)
            if out and out[-1][2] == k and out[-1][1] == o:
                out[-1] = (out[-1][0], o + 1, k)
            else:
                out.append((o, o + 1, k))
        return out

    def kinds(self) -> set[str]:
        """Every base type mentioned anywhere in the tree (pointees excluded)."""
        out = set(self._fixed.values())
        for layer in self._layers:
            out.update(layer.pattern.values())
        return out

    # ------------------------------------------------------------- identity

    def _canon(self):
        if self._key is None:
            self._key = (
                tuple(sorted(self._fixed.items())),
                tuple(sorted((o, t._canon()) for o, t in self._ptrs.items())),
                tuple(layer.canon() for layer in self._layers),
            )
        return self._key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeTree) and self._canon() == other._canon()

    def __hash__(self) -> int:
        return hash(self._canon())

    def depth(self) -> int:
        """Levels of pointee trees (0: no pointer field has a known pointee)."""
        if self._depth is None:
            children = list(self._ptrs.values())
            for layer in self._layers:
                children.extend(layer.pptrs.values())
            self._depth = 1 + max(t.depth() for t in children) if children else 0
        return self._depth

    # ------------------------------------------------------------- printing

    @staticmethod
    def _fmt_runs(kinds: dict[int, str], ptrs: dict[int, TypeTree]) -> str:
        parts: list[list] = []
        for o in sorted(kinds):
            k = kinds[o]
            run = parts[-1] if parts else None
            if run and run[1] == o and run[2] == k and not (k == "ptr" and o in ptrs):
                run[1] = o + 1
            else:
                parts.append([o, o + 1, k])
        text = []
        for b, e, k in parts:
            item = f"[{b},{e}):{k}"
            if k == "ptr" and b in ptrs:
                item += f"->{ptrs[b]}"
            text.append(item)
        return "{" + " ".join(text) + "}"

    def __str__(self) -> str:
        items = []
        if self._fixed or self._ptrs or not self._layers:
            items.append(self._fmt_runs(self._fixed, self._ptrs))
        for layer in self._layers:
            items.append(f"{self._fmt_runs(layer.pattern, layer.pptrs)} every {layer.period} bytes from {layer.start}")
        return " + ".join(items)

    def __repr__(self) -> str:
        return f"TypeTree({self})"


EMPTY = TypeTree()


def _array_tree(kind: str, size: int) -> TypeTree:
    """An array of scalars of ``kind`` (``size`` bytes each) from offset 0 on."""
    return TypeTree(layers=[_Layer(size, 0, {o: kind for o in range(size)}, {})])


def _scalar_tree(kind: str, size: int, pointee: TypeTree | None = None) -> TypeTree:
    fixed = {o: kind for o in range(size)}
    return TypeTree(fixed, {0: pointee} if pointee is not None else None)


def _join_ptr_maps(a: dict[int, TypeTree], b: dict[int, TypeTree]) -> dict[int, TypeTree] | None:
    """a joined with b, or None when b adds nothing."""
    new = None
    for o, t in b.items():
        old = a.get(o)
        j = t if old is None else _join(old, t)
        if j is not old:
            if new is None:
                new = dict(a)
            new[o] = j
    return new


def _join_kinds(a: dict[int, str], b: dict[int, str]) -> dict[int, str] | None:
    """a joined with b, or None when b adds nothing."""
    if b.items() <= a.items():
        # the common case in a fixpoint (b already in a), decided at C speed: the loop
        # below costs a Python step per byte of a large object, per join (type analysis
        # of unoptimized C++ spent minutes here)
        return None
    new = None
    for o, k in b.items():
        old = a.get(o)
        j = _join_kind(old, k)
        if j != old:
            if new is None:
                new = dict(a)
            new[o] = j
    return new


def _fold_into(kinds: dict[int, str], ptrs: dict[int, TypeTree], g: int,
               out_k: dict[int, str], out_p: dict[int, TypeTree]) -> None:
    """Offsets taken modulo ``g``, joined into ``out_k``/``out_p`` (mutated)."""
    for o, k in kinds.items():
        r = o % g
        out_k[r] = _join_kind(out_k.get(r), k)
    for o, t in ptrs.items():
        r = o % g
        out_p[r] = t if r not in out_p else _join(out_p[r], t)


def _join_layer(a: _Layer, b: _Layer) -> _Layer:
    pattern = _join_kinds(a.pattern, b.pattern)
    pptrs = _join_ptr_maps(a.pptrs, b.pptrs)
    if pattern is None and pptrs is None and b.start >= a.start:
        return a
    return _Layer(a.period, min(a.start, b.start),
                  pattern if pattern is not None else a.pattern,
                  pptrs if pptrs is not None else a.pptrs)


def _join(a: TypeTree, b: TypeTree) -> TypeTree:
    """Least upper bound; returns ``a`` itself when ``b`` adds nothing."""
    if b is a or b.is_empty():
        return a
    if a.is_empty():
        return b
    fixed = _join_kinds(a._fixed, b._fixed)
    ptrs = _join_ptr_maps(a._ptrs, b._ptrs)
    layers = None
    if b._layers:
        mine = {l.period: l for l in a._layers}
        changed = False
        for lb in b._layers:
            la = mine.get(lb.period)
            j = lb if la is None else _join_layer(la, lb)
            if j is not la:
                mine[lb.period] = j
                changed = True
        if changed:
            layers = mine.values()
    if fixed is None and ptrs is None and layers is None:
        return a
    return TypeTree(
        fixed if fixed is not None else a._fixed,
        ptrs if ptrs is not None else a._ptrs,
        layers if layers is not None else a._layers,
    )


def _shift(t: TypeTree, c: int) -> TypeTree:
    """Offset ``o`` becomes ``o + c`` (the tree seen from ``pointer - c``)."""
    if c == 0 or t.is_empty():
        return t
    fixed = {o + c: k for o, k in t._fixed.items() if _clamp_ok(o + c)}
    ptrs = {o + c: p for o, p in t._ptrs.items() if _clamp_ok(o + c)}
    layers = []
    for l in t._layers:
        P = l.period
        layers.append(_Layer(P, l.start + c, {(r + c) % P: k for r, k in l.pattern.items()},
                             {(r + c) % P: p for r, p in l.pptrs.items()}))
    return TypeTree(fixed, ptrs, layers)


def _periodize(t: TypeTree, m: int, start: int) -> TypeTree:
    """``t`` seen from an unknown element of an array with stride ``m``.

    The facts at known offsets repeat every ``m`` bytes (from ``start`` or the lowest
    offset described); periodic parts whose period divides ``m`` stay as they are;
    others (a finer structure than the stride) cannot be placed and are dropped.
    """
    if t.is_empty():
        return t
    pattern: dict[int, str] = {}
    pptrs: dict[int, TypeTree] = {}
    _fold_into(t._fixed, t._ptrs, m, pattern, pptrs)
    lows = [start, *t._fixed, *t._ptrs]
    layers = []
    for l in t._layers:
        if m % l.period:
            continue
        lows.append(l.start)
        if l.period == m:
            _fold_into(l.pattern, l.pptrs, m, pattern, pptrs)
        else:
            layers.append(_Layer(l.period, min(l.start, start), l.pattern, l.pptrs))
    layers.append(_Layer(m, min(lows), pattern, pptrs))
    return TypeTree(None, None, layers)


def _window(t: TypeTree, lo: int, hi: int, *, layers: bool = True) -> TypeTree:
    """Only the facts about bytes in ``[lo, hi)``, periodic parts expanded (or, with
    ``layers=False``, left out)."""
    lo, hi = max(lo, -MAX_OFFSET), min(hi, MAX_OFFSET)
    if not layers or not t._layers:
        return TypeTree({o: k for o, k in t._fixed.items() if lo <= o < hi},
                        {o: p for o, p in t._ptrs.items() if lo <= o < hi})
    fixed: dict[int, str] = {}
    ptrs: dict[int, TypeTree] = {}
    for o in range(lo, hi):
        k = t.at(o)
        if k != "unknown":
            fixed[o] = k
        if k == "ptr":
            p = t.pointee(o)
            if not p.is_empty():
                ptrs[o] = p
    return TypeTree(fixed, ptrs)


def _restrict(t: TypeTree, n: int | None) -> TypeTree:
    """What a copy of ``n`` bytes (None: unknown length) from offset 0 carries."""
    if t.is_empty():
        return t
    if n is not None and n <= MAX_OFFSET:
        return _window(t, 0, n)
    limit = MAX_OFFSET if n is None else n
    fixed = {o: k for o, k in t._fixed.items() if 0 <= o < limit}
    ptrs = {o: p for o, p in t._ptrs.items() if 0 <= o < limit}
    layers = [_Layer(l.period, max(l.start, 0), l.pattern, l.pptrs) for l in t._layers]
    return TypeTree(fixed, ptrs, layers)


def _truncate(t: TypeTree, depth: int) -> TypeTree:
    if t.depth() <= depth:
        return t
    if depth == 0:
        return TypeTree(t._fixed, None, [_Layer(l.period, l.start, l.pattern, {}) for l in t._layers])
    return TypeTree(
        t._fixed, {o: _truncate(p, depth - 1) for o, p in t._ptrs.items()},
        [_Layer(l.period, l.start, l.pattern, {o: _truncate(p, depth - 1) for o, p in l.pptrs.items()})
         for l in t._layers],
    )



def _layout_tree(t: Attribute, *, declared: bool = False) -> TypeTree:
    """The tree of memory holding a value of type ``t``.

    ``declared``: the type of an alloca or global, where ``i8`` arrays and unions are
    raw storage and say nothing, and so does an array of 32- or 64-bit integers that is
    the whole object (``uint64_t buf[n]``, a serializer's buffer: it may hold the bits
    of floats, issue 23 item 6; its accesses say what it holds). A top-level array too
    large to expand is periodic.
    """
    if declared and isinstance(t, llvm.LLVMArrayType) and isinstance(t.type, IntegerType) and t.type.width.data in (32, 64):
        return EMPTY
    if isinstance(t, llvm.LLVMArrayType) and size_align(t)[0] > MAX_OFFSET:
        elem = t.type
        if declared and isinstance(elem, IntegerType) and elem.width.data == 8:
            return EMPTY
        inner = _layout_tree(elem, declared=declared)
        size = size_align(elem)[0]
        if inner.is_empty() or size == 0:
            return EMPTY
        return _periodize(inner, size, 0)
    fixed: dict[int, str] = {}
    _layout_into(t, 0, fixed, declared)
    return TypeTree(fixed)


def _layout_into(t: Attribute, base: int, fixed: dict[int, str], declared: bool) -> None:
    if base >= MAX_OFFSET:
        return
    kind = _scalar_kind(t)
    if kind is not None:
        for o in range(base, min(base + _store_size(t), MAX_OFFSET)):
            fixed[o] = kind
        return
    if isinstance(t, llvm.LLVMArrayType) or isinstance(t, VectorType):
        elem = t.type if isinstance(t, llvm.LLVMArrayType) else t.element_type
        count = t.size.data if isinstance(t, llvm.LLVMArrayType) else math.prod(t.get_shape())
        if declared and isinstance(elem, IntegerType) and elem.width.data == 8:
            return
        size = size_align(elem)[0]
        for i in range(count):
            if base + i * size >= MAX_OFFSET:
                break
            _layout_into(elem, base + i * size, fixed, declared)
        return
    if _is_struct(t):
        if declared and t.struct_name.data.startswith("union."):
            return
        for off, ft in zip(struct_offsets(t), t.types.data):
            _layout_into(ft, base + off, fixed, declared)


# --------------------------------------------------------------------------------------
# Small IR helpers
# --------------------------------------------------------------------------------------

def _is_ptr(v: SSAValue) -> bool:
    return isinstance(v.type, llvm.LLVMPointerType)


def _const_int(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, llvm.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


def _affine(v: SSAValue, depth: int = 0) -> tuple[int, int]:
    """``(c, m)``: the integer ``v`` is ``c + m*k`` for some unknown integer ``k``."""
    c = _const_int(v)
    if c is not None:
        return c, 0
    owner = v.owner
    if depth > 12 or not isinstance(owner, Operation):
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
        k = _const_int(owner.operands[1])
        if k is not None and 0 <= k < 63:
            c1, m1 = _affine(owner.operands[0], depth + 1)
            return c1 << k, m1 << k
    return 0, 1


def _gep_offset(op: Operation) -> tuple[int, int] | None:
    """``(c, m)``: the GEP's result is its base plus ``c + m*k`` bytes (``m >= 0``)."""
    ssa = iter(op.ssa_indices)
    t = op.elem_type
    c = m = 0
    for i, raw in enumerate(op.rawConstantIndices.iter_values()):
        idx: int | SSAValue = next(ssa) if raw == llvm.GEP_USE_SSA_VAL else raw
        if i == 0:
            elem = t
        elif _is_struct(t):
            if not isinstance(idx, int):
                idx = _const_int(idx)
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


def _describe_op(op: Operation) -> str:
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


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


# Known external functions ---------------------------------------------------------

_ALLOCATORS = {"malloc", "calloc", "valloc", "pvalloc", "aligned_alloc", "memalign",
               "_Znwm", "_Znam", "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
               "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t"}
_REALLOCATORS = {"realloc", "reallocf"}
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

_RET = "<return value>"

# --------------------------------------------------------------------------------------
# The fixpoint
# --------------------------------------------------------------------------------------


class _Shared:
    """State of one :func:`analyze_types` call: symbols, rule graphs, callee summaries."""

    def __init__(self, module: ModuleOp | None):
        self.funcs: dict[str, Operation] = {}
        self.globals: dict[str, Operation] = {}
        if module is not None:
            for op in module.body.block.ops:
                if isinstance(op, llvm.FuncOp):
                    self.funcs[op.sym_name.data] = op
                elif isinstance(op, llvm.GlobalOp):
                    self.globals[op.sym_name.data] = op
        # TBAA anywhere: the module was compiled with optimization (clang -O1 or more)
        self.has_tbaa = module is not None and any(
            "zymase.tbaa" in op.attributes for op in module.walk() if isinstance(op, (llvm.LoadOp, llvm.StoreOp))
        )
        self.graphs: dict[int, _Graph] = {}
        self.cache: dict[tuple, tuple[tuple[TypeTree, ...], TypeTree]] = {}
        self.contexts: dict[str, int] = {}
        self.rule_applications = 0  # deduction rules run, over every context (a cost measure)
        self.plain: dict[str, tuple[tuple[TypeTree, ...], TypeTree] | None] = {}

    def graph(self, func: Operation) -> _Graph:
        g = self.graphs.get(id(func))
        if g is None:
            g = self.graphs[id(func)] = _Graph(self, func)
        return g

    def summary(
        self, callee: Operation, seeds: tuple[TypeTree, ...], ret_seed: TypeTree, stack: tuple[str, ...]
    ) -> tuple[tuple[TypeTree, ...], TypeTree] | None:
        """What ``callee`` deduces about its arguments and result, analysed with
        ``seeds``/``ret_seed`` as what is known at the call site (None: nothing)."""
        name = callee.sym_name.data
        key = (name, seeds, ret_seed)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        if name in stack:
            return self.plain.get(name)  # recursion through other functions
        if len(stack) >= MAX_CALL_DEPTH or self.contexts.get(name, 0) >= MAX_CONTEXTS:
            return self.plain_summary(callee)
        self.contexts[name] = self.contexts.get(name, 0) + 1
        sub = _Analyzer(self.graph(callee), seeds, ret_seed, stack + (name,), plain=False)
        sub.run()
        result = self.cache[key] = sub.summary()
        return result

    def plain_summary(self, callee: Operation) -> tuple[tuple[TypeTree, ...], TypeTree] | None:
        """The context-free summary of ``callee`` (its callees summarised the same way)."""
        name = callee.sym_name.data
        if name in self.plain:
            return self.plain[name]
        self.plain[name] = None  # in progress: recursion sees nothing
        sub = _Analyzer(self.graph(callee), (), EMPTY, (name,), plain=True)
        sub.run()
        result = self.plain[name] = sub.summary()
        return result


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


_Rule = Callable[["_Analyzer"], None]


class _Graph:
    """The deduction rules of one function, built once and run per calling context."""

    def __init__(self, shared: _Shared, func: Operation):
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
        def fn(an: _Analyzer) -> None:
            an.put(a, an.of(b))
            an.put(b, an.of(a))
        self.rule((a, b), fn)

    def into(self, dst: object, src: object) -> None:
        self.rule((src,), lambda an: an.put(dst, an.of(src)))

    def fact(self, p: SSAValue, tree: TypeTree) -> None:
        self.rule((), lambda an: an.put(p, tree))

    def offset(self, src: SSAValue, dst: SSAValue, c: int) -> None:
        def fn(an: _Analyzer) -> None:
            an.put(dst, _shift(an.of(src), -c))
            an.put(src, _shift(an.of(dst), c))
        self.rule((src, dst), fn)

    def strided(self, src: SSAValue, dst: SSAValue, c: int, m: int, *, start: int = 0) -> None:
        """dst = src + c + m*k, k unknown: both see the same period-m pattern (from
        offset ``start`` of ``dst`` on)."""
        def fn(an: _Analyzer) -> None:
            # forward: element 0's facts, and periodic parts in phase with the stride
            seen = _shift(an.of(src), -c)
            element = _join(_window(seen, 0, m, layers=False), TypeTree(None, None, seen._layers))
            an.put(dst, _periodize(element, m, start))
            an.put(src, _shift(_periodize(an.of(dst), m, start), c))
        self.rule((src, dst), fn)

    def cell(self, p: SSAValue, v: SSAValue) -> None:
        """The pointer ``v`` is stored at offset 0 of ``p`` (load or store)."""
        self.cells.append((p, v))

        def fn(an: _Analyzer) -> None:
            an.put(p, _scalar_tree("ptr", 8, an.of(v)))
            an.put(v, an.of(p).pointee(0))
        self.rule((p, v), fn)

    def copy(self, dst: SSAValue, src: SSAValue, n: int | None) -> None:
        def fn(an: _Analyzer) -> None:
            an.put(dst, _restrict(an.of(src), n))
            an.put(src, _restrict(an.of(dst), n))
        self.rule((dst, src), fn)

    # ------------------------------------------------------------- building

    def _build(self) -> None:
        self.links: list[tuple[SSAValue, SSAValue, int]] = []
        self.cells: list[tuple[SSAValue, SSAValue]] = []
        addressof: dict[str, SSAValue] = {}
        for block in self.blocks:
            for op in block.ops:
                self._op(op, addressof)
            term = block.last_op
            if term is not None:
                for succ, values in _successor_operands(term):
                    for arg, val in zip(succ.args, values):
                        if _is_ptr(arg) and val is not arg:
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
        size = _store_size(t)
        if kind is not None:
            self.fact(p, _scalar_tree(kind, min(size, _FLOAT_SIZE.get(kind, size))))
        if isinstance(t, IntegerType) and kind is None:
            if is_load and _is_int_copy(op):
                for use in value.uses:
                    self.copy(use.operation.ptr, p, size)
                return
            if not is_load:
                if self.has_tbaa and (
                    _const_int(value) is not None or isinstance(value.owner, (llvm.ZeroOp, llvm.UndefOp))
                ):
                    # optimized code where C accesses carry TBAA: an untagged integer
                    # constant store is a lowered memset and says nothing about floats
                    return
                if isinstance(value.owner, llvm.LoadOp) and _is_int_copy(value.owner):
                    return  # the other half of an integer copy (handled at the load)
        if _is_ptr(value):
            self.cell(p, value)
            return
        self.fact(p, _layout_tree(t))

    def _op(self, op: Operation, addressof: dict[str, SSAValue]) -> None:
        if isinstance(op, llvm.LoadOp):
            self._access(op, op.ptr, op.dereferenced_value.type, op.dereferenced_value, True)
        elif isinstance(op, llvm.StoreOp):
            self._access(op, op.ptr, op.value.type, op.value, False)
        elif isinstance(op, llvm.GEPOp):
            off = _gep_offset(op)
            if off is None:
                return
            c, m = off
            if m == 0:
                self.link(op.ptr, op.result, c)
            elif m >= 2:
                self.strided(op.ptr, op.result, c, m)
        elif isinstance(op, (llvm.BitcastOp, llvm_ext.AddrSpaceCastOp, llvm_ext.FreezeOp)):
            if op.results and _is_ptr(op.results[0]) and _is_ptr(op.operands[0]):
                self.link(op.operands[0], op.results[0], 0)
        elif isinstance(op, llvm.SelectOp):
            if _is_ptr(op.res):
                self.link(op.lhs, op.res, 0)
                self.link(op.rhs, op.res, 0)
        elif isinstance(op, llvm.AllocaOp):
            tree = _layout_tree(op.elem_type, declared=True)
            if not tree.is_empty():
                self.fact(op.res, tree)
        elif isinstance(op, llvm.AddressOfOp):
            name = op.global_name.root_reference.data
            if name in addressof:
                self.link(addressof[name], op.result, 0)
            else:
                addressof[name] = op.result
                glob = self.shared.globals.get(name)
                if glob is not None:
                    tree = _layout_tree(glob.global_type, declared=True)
                    if not tree.is_empty():
                        self.fact(op.result, tree)
        elif isinstance(op, (llvm_ext.AtomicRMWOp, llvm_ext.AtomicCmpXchgOp)):
            val = op.operands[-1]
            if _is_ptr(val):
                self.cell(op.operands[0], val)
            else:
                self.fact(op.operands[0], _layout_tree(val.type))
        elif isinstance(op, llvm.ReturnOp):
            if op.arg is not None and _is_ptr(op.arg):
                self.same(_RET, op.arg)
        elif isinstance(op, llvm.CallIntrinsicOp):
            self._intrinsic(op)
        elif isinstance(op, llvm.CallOp):
            self._call(op)

    def _intrinsic(self, op: Operation) -> None:
        parts = op.intrin.data.split(".")
        base = parts[1] if len(parts) > 1 else ""
        args = list(op.args)
        if base in ("memcpy", "memmove") and len(args) >= 3:
            self.copy(args[0], args[1], _const_int(args[2]))
        elif base in _SAME_INTRINSICS and op.results and _is_ptr(op.results[0]) and args:
            self.link(args[0], op.results[0], 0)

    def _call(self, op: Operation) -> None:
        name = _callee(op)
        if name is None:
            return  # indirect call: nothing known
        args = list(op.args)
        result = op.results[0] if op.results and _is_ptr(op.results[0]) else None
        callee = self.shared.funcs.get(name)
        if callee is not None and callee.body.blocks:
            self._defined_call(op, callee, args, result)
            return
        if name in _ALLOCATORS:
            return
        if name in _REALLOCATORS and result is not None and args and _is_ptr(args[0]):
            self.copy(result, args[0], None)
        elif name in _COPIES:
            d, s, n = _COPIES[name]
            if len(args) > max(d, s, n):
                self.copy(args[d], args[s], _const_int(args[n]))
        if name in _RETURNS_DST and result is not None and args:
            self.link(args[0], result, 0)
        for index, kind, size in _LIBM_OUT.get(name, ()):
            if index < len(args) and _is_ptr(args[index]):
                self.fact(args[index], _scalar_tree(kind, size))
        rule = call_memory_rule(name)
        if rule is not None:  # BLAS: its vectors and matrices are arrays of its precision
            for index, (kind, size) in rule.pointee_types(op).items():
                if index < len(args) and _is_ptr(args[index]):
                    self.fact(args[index], _array_tree(kind, size))

    def _defined_call(self, op: Operation, callee: Operation, args: list[SSAValue],
                      result: SSAValue | None) -> None:
        formals = callee.body.blocks.first.args
        pairs = [(i, a) for i, (a, f) in enumerate(zip(args, formals)) if _is_ptr(a) and _is_ptr(f)]
        if callee is self.func:  # direct self-recursion: share the argument trees
            for i, a in pairs:
                self.same(a, formals[i])
            if result is not None:
                self.same(result, _RET)
            return
        nformals = len(formals)

        def fn(an: _Analyzer) -> None:
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


class _Analyzer:
    """One run of a function's rules to the fixpoint, in one calling context."""

    def __init__(self, graph: _Graph, seeds: Sequence[TypeTree], ret_seed: TypeTree,
                 stack: tuple[str, ...], plain: bool):
        self.graph = graph
        self.stack = stack
        self.plain = plain
        self.state: dict[object, TypeTree] = {}
        for arg, seed in zip(graph.formals, seeds):
            if seed is not None and not seed.is_empty() and _is_ptr(arg):
                self.state[arg] = _truncate(seed, MAX_DEPTH)
        if not ret_seed.is_empty():
            self.state[_RET] = ret_seed
        n = len(graph.rules)
        self.queue: deque[int] = deque(range(n))
        self.queued: set[int] = set(range(n))

    def of(self, v: object) -> TypeTree:
        return self.state.get(v, EMPTY)

    def put(self, v: object, tree: TypeTree) -> None:
        if tree.is_empty():
            return
        old = self.state.get(v, EMPTY)
        new = _join(old, _truncate(tree, MAX_DEPTH))
        if new is not old:
            self.state[v] = new
            for r in self.graph.users.get(v, ()):
                if r not in self.queued:
                    self.queued.add(r)
                    self.queue.append(r)

    def run(self) -> None:
        rules = self.graph.rules
        applied = 0
        while self.queue:
            idx = self.queue.popleft()
            self.queued.discard(idx)
            rules[idx](self)
            applied += 1
        self.graph.shared.rule_applications += applied

    def summary(self) -> tuple[tuple[TypeTree, ...], TypeTree]:
        return tuple(self.of(a) for a in self.graph.formals), self.of(_RET)


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


class TypeInfo:
    """The result of :func:`analyze_types` for one function."""

    def __init__(self, func: Operation, analyzer: _Analyzer):
        self.func = func
        self._state = analyzer.state
        self._has_tbaa = analyzer.graph.has_tbaa
        #: deduction rules applied to reach the fixpoint, callee contexts included: the
        #: analysis's cost, which tests bound (a fixpoint that creeps offset by offset
        #: up to MAX_OFFSET costs hundreds of times more than one that widens)
        self.rule_applications = analyzer.graph.shared.rule_applications
        from zymase.autodiff.common import PREPARED_SUFFIX

        self._name = analyzer.graph.name.removesuffix(PREPARED_SUFFIX)  # the user's function

    def of(self, ptr_value: SSAValue) -> TypeTree:
        """What ``ptr_value`` points to (an empty tree if nothing is known)."""
        return self._state.get(ptr_value, EMPTY)

    def float_type_in_range(self, ptr_value: SSAValue, nbytes: int | None, op: Operation | None = None) -> str | None:
        """The single float type (``'f32'``, ``'f64'``, ...) of all float bytes in
        ``[0, nbytes)`` behind ``ptr_value`` (``nbytes=None``: a length not known at
        compile time; what is known of the memory is checked), or None when the range
        certainly holds no floats.

        Raises the :meth:`explain` error when floats of different types are mixed,
        when bytes hold contradictory types, or when bytes of unknown type could hold
        floats (unknown bytes that look like struct padding are accepted). ``op`` is
        the instruction the answer is for (the error names it); by default the first
        ``memcpy``/``memmove``/``memset`` using ``ptr_value`` (with length ``nbytes``
        when there are several).
        """
        problem, ftype = _classify(self.of(ptr_value), nbytes)
        if problem is not None:
            if op is None:
                op = _user_op(ptr_value, nbytes)
            raise self.explain(ptr_value, op, reason=problem)
        return ftype

    def explain(self, ptr_value: SSAValue, op: Operation | None, *, reason: str | None = None) -> ZymaseError:
        """The readable "cannot deduce type" error for the memory behind ``ptr_value``
        at instruction ``op``: names the value (its name hint, else its defining
        instruction and line, or which argument it is), the instruction, the function
        and the source line, what is known, and how to help. ``reason`` overrides the
        description of what is wrong (default: from the tree of ``ptr_value``)."""
        tree = self.of(ptr_value)
        mixed = False
        if reason is None:
            problem = _classify(tree, None)[0]
            reason = problem if problem is not None else "its contents are not known"
        if isinstance(reason, _Problem):
            mixed, reason = reason.mixed, reason.text
        construct = _describe_op(op) if op is not None else None
        verb = next((w for w in ("memcpy", "memmove", "memset") if construct and w in construct), None)
        what = f"the memory that {_describe_value(ptr_value, self._name)} points to"
        if verb is not None:
            what += f", copied by this {verb}"
        if mixed:
            message = f"cannot deduce a single floating-point type for {what}: {reason}"
        else:
            message = f"cannot deduce the type of {what}: {reason}"
        location = location_of(op) if op is not None else None
        if location is None and isinstance(ptr_value.owner, Operation):
            location = location_of(ptr_value.owner)
        if mixed:
            hint = (f"copy the fields one by one instead of with one {verb or 'copy'}, "
                    "so that each copy moves a single floating-point type")
        else:
            known = sorted(k for k in tree.kinds() if k in FLOAT_KINDS)
            elem = f"{_C_NAME[known[0]]}*" if len(known) == 1 else "double* or float*"
            instead = f"instead of the {verb}" if verb else "before this instruction"
            hint = (f"let the analysis see the element type: read or write the memory through a "
                    f"{elem} in this function (e.g. copy with a loop over typed elements {instead}); "
                    "a C cast alone does not help, it leaves no trace in the IR")
            if not self._has_tbaa:
                hint += "; or compile with -O1 or higher so that TBAA type information is available"
        if location is None:
            hint += "; compile with -g to see source lines in messages"
        return ZymaseError(message, construct=construct, function=self._name, location=location, hint=hint)


class _Problem:
    """Why :meth:`TypeInfo.float_type_in_range` has no answer."""

    def __init__(self, text: str, mixed: bool = False):
        self.text = text
        self.mixed = mixed

    def __str__(self) -> str:
        return self.text


_KIND_TEXT = {**_C_NAME, "int": "integer", "ptr": "pointer"}


def _fmt_range(lo: int, hi: int) -> str:
    return f"byte {lo}" if hi == lo + 1 else f"bytes [{lo}, {hi})"


def _classify(tree: TypeTree, nbytes: int | None) -> tuple[_Problem | None, str | None]:
    """(problem or None, float type or None) for the bytes [0, nbytes)."""
    if nbytes is not None and nbytes <= 0:
        return None, None
    if tree.is_empty():
        span = f"none of the {nbytes} bytes" if nbytes is not None else "none of its bytes"
        return _Problem(f"{span} is ever read or written with a known type in this function or its "
                        "callees, so it could hold doubles, floats, integers or pointers"), None
    end = tree.extent()
    beyond = False
    if nbytes is None:
        hi = end
    elif tree.period is not None:
        hi = min(nbytes, end + max(p for p, _ in tree.periods()))
    else:
        hi = min(nbytes, MAX_OFFSET)
        beyond = nbytes > MAX_OFFSET
    runs = tree.runs(0, hi)
    floats: dict[str, tuple[int, int]] = {}
    unknown: list[tuple[int, int]] = []
    max_align = 1
    for i, (lo, up, kind) in enumerate(runs):
        if kind == "mixed":
            return _Problem(f"{_fmt_range(lo, up)} are accessed with contradictory types "
                            "(as different floating-point types, or as a float and a pointer)", True), None
        if kind in FLOAT_KINDS:
            floats.setdefault(kind, (lo, up))
            max_align = max(max_align, _FLOAT_SIZE[kind])
        elif kind == "ptr":
            max_align = max(max_align, 8)
        elif kind == "unknown":
            if not _padding(tree, runs, i, nbytes, max_align):
                unknown.append((lo, up))
    if len(floats) > 1:
        (k1, r1), (k2, r2) = list(floats.items())[:2]
        return _Problem(f"it holds both {_C_NAME[k1]} ({_fmt_range(*r1)}) and {_C_NAME[k2]} "
                        f"({_fmt_range(*r2)})", True), None
    if unknown or beyond:
        total = f"of the {nbytes} bytes " if nbytes is not None else ""
        first = unknown[0] if unknown else (MAX_OFFSET, nbytes)
        known = ", ".join(f"{_fmt_range(lo, up)} {_KIND_TEXT.get(k, k)}" for lo, up, k in runs if k != "unknown")
        verb = "is" if first[1] == first[0] + 1 else "are"
        text = (f"{_fmt_range(*first)} {total}{verb} never read or written with a known type, "
                "so they could hold floating-point values")
        if known:
            text += f" (known: {known})"
        return _Problem(text), None
    return None, next(iter(floats), None)


def _padding(tree: TypeTree, runs: list[tuple[int, int, str]], i: int, nbytes: int | None, max_align: int) -> bool:
    """Whether the unknown run ``runs[i]`` looks like struct padding."""
    lo, up, _ = runs[i]
    if lo == 0 or runs[i - 1][2] == "unknown":
        return False
    gap = up - lo
    if i + 1 < len(runs) or tree.at(up) != "unknown":
        nxt = tree.at(up)
        if nxt in FLOAT_KINDS:
            align = _FLOAT_SIZE[nxt]
        elif nxt == "ptr":
            align = 8
        elif nxt == "int":
            n = 1
            while n < 8 and tree.at(up + n) == "int":
                n += 1
            align = 1
            while align * 2 <= n:
                align *= 2
        else:
            return False
        return gap < align and up % align == 0
    # trailing gap at the end of the range
    return nbytes is not None and up == nbytes and gap < max_align and up % max_align == 0


def _user_op(v: SSAValue, nbytes: int | None) -> Operation | None:
    candidates = []
    for use in v.uses:
        u = use.operation
        text = _describe_op(u)
        if any(w in text for w in ("memcpy", "memmove", "memset")):
            candidates.append(u)
    for u in candidates:
        length = u.operands[2] if len(u.operands) > 2 else None
        if length is not None and _const_int(length) == nbytes:
            return u
    if candidates:
        return candidates[0]
    return v.owner if isinstance(v.owner, Operation) else None


def _describe_value(v: SSAValue, fname: str) -> str:
    if v.name_hint:
        return f"'%{v.name_hint}'"
    if isinstance(v, BlockArgument):
        block = v.block
        region = block.parent
        if region is not None and region.blocks.first is block:
            return f"the {_ordinal(v.index + 1)} argument of '{fname}'"
        return "a pointer merged where control flow joins (a phi)"
    owner = v.owner
    text = f"the result of '{_describe_op(owner)}'"
    loc = location_of(owner)
    if loc is not None:
        text += f" at {loc}"
    return text


def analyze_types(func_op: Operation, module: ModuleOp | None = None, *,
                  arg_types: Sequence[TypeTree | None] | None = None) -> TypeInfo:
    """Type analysis of one ``llvm.func``.

    ``module`` (default: the function's parent module) provides callee bodies for
    the interprocedural part and global types. ``arg_types`` optionally seeds what the
    pointer arguments point to (e.g. known from a caller).
    """
    if module is None:
        parent = func_op.parent_op()
        while parent is not None and not isinstance(parent, ModuleOp):
            parent = parent.parent_op()
        module = parent
    shared = _Shared(module)
    seeds = [t if t is not None else EMPTY for t in (arg_types or ())]
    name = func_op.sym_name.data if hasattr(func_op, "sym_name") else "?"
    analyzer = _Analyzer(shared.graph(func_op), seeds, EMPTY, (name,), plain=False)
    analyzer.run()
    return TypeInfo(func_op, analyzer)
