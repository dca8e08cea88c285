"""Type analysis's lattice: :class:`TypeTree`, what a pointer points to, byte by byte.

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

The functions here are the lattice's operations, all on immutable trees: ``join``
(least upper bound, returning its first operand itself when the second adds
nothing, which is how the fixpoint sees that nothing changed), ``shift`` (the tree
seen from another offset), ``periodize`` (seen from an unknown element of an array),
``window``/``restrict`` (the bytes a copy carries), ``truncate`` (the depth bound),
``first_element`` and ``layout_tree`` (the tree of a declared LLVM type).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from zymase.analysis.layout import is_struct, scalar_kind, size_align, store_size, struct_offsets
from zymase.ir import Attribute, IntegerType, VectorType, llvm

__all__ = ["TypeTree", "EMPTY", "FLOAT_KINDS", "MAX_OFFSET", "MAX_DEPTH", "join", "shift", "periodize",
           "window", "restrict", "truncate", "first_element", "array_tree", "scalar_tree", "layout_tree"]

#: Base types of floating-point bytes.
FLOAT_KINDS = frozenset({"f16", "bf16", "f32", "f64", "f80", "f128"})
#: Offsets kept in a tree: [-MAX_OFFSET, MAX_OFFSET).
MAX_OFFSET = 1024
#: Levels of nested pointee trees kept (pointer to pointer to ...).
MAX_DEPTH = 5


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


def array_tree(kind: str, size: int) -> TypeTree:
    """An array of scalars of ``kind`` (``size`` bytes each) from offset 0 on."""
    return TypeTree(layers=[_Layer(size, 0, {o: kind for o in range(size)}, {})])


def scalar_tree(kind: str, size: int, pointee: TypeTree | None = None) -> TypeTree:
    fixed = {o: kind for o in range(size)}
    return TypeTree(fixed, {0: pointee} if pointee is not None else None)


# Joins of pointee trees repeat: a fixpoint joins the same few trees (a Numba array's
# meminfo and data pointees, say) into each value many times, and each join walks both
# trees to their depth. The last results are kept, keyed by the two trees' ids; the
# entry holds both trees, so the ids cannot be reused while it lives.
_POINTEE_JOINS: dict[tuple[int, int], tuple[TypeTree, TypeTree, TypeTree]] = {}
_POINTEE_JOINS_MAX = 4096


def _join_pointees(old: TypeTree, t: TypeTree) -> TypeTree:
    key = (id(old), id(t))
    hit = _POINTEE_JOINS.get(key)
    if hit is not None and hit[0] is old and hit[1] is t:
        return hit[2]
    j = join(old, t)
    if len(_POINTEE_JOINS) >= _POINTEE_JOINS_MAX:
        _POINTEE_JOINS.clear()
    _POINTEE_JOINS[key] = (old, t, j)
    return j


def _join_ptr_maps(a: dict[int, TypeTree], b: dict[int, TypeTree]) -> dict[int, TypeTree] | None:
    """a joined with b, or None when b adds nothing."""
    new = None
    for o, t in b.items():
        old = a.get(o)
        j = t if old is None else _join_pointees(old, t)
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
        out_p[r] = t if r not in out_p else join(out_p[r], t)


def _join_layer(a: _Layer, b: _Layer) -> _Layer:
    pattern = _join_kinds(a.pattern, b.pattern)
    pptrs = _join_ptr_maps(a.pptrs, b.pptrs)
    if pattern is None and pptrs is None and b.start >= a.start:
        return a
    return _Layer(a.period, min(a.start, b.start),
                  pattern if pattern is not None else a.pattern,
                  pptrs if pptrs is not None else a.pptrs)


def join(a: TypeTree, b: TypeTree) -> TypeTree:
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


def shift(t: TypeTree, c: int) -> TypeTree:
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


def periodize(t: TypeTree, m: int, start: int) -> TypeTree:
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


def window(t: TypeTree, lo: int, hi: int, *, layers: bool = True) -> TypeTree:
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


def restrict(t: TypeTree, n: int | None) -> TypeTree:
    """What a copy of ``n`` bytes (None: unknown length) from offset 0 carries."""
    if t.is_empty():
        return t
    if n is not None and n <= MAX_OFFSET:
        return window(t, 0, n)
    limit = MAX_OFFSET if n is None else n
    fixed = {o: k for o, k in t._fixed.items() if 0 <= o < limit}
    ptrs = {o: p for o, p in t._ptrs.items() if 0 <= o < limit}
    layers = [_Layer(l.period, max(l.start, 0), l.pattern, l.pptrs) for l in t._layers]
    return TypeTree(fixed, ptrs, layers)


def truncate(t: TypeTree, depth: int) -> TypeTree:
    if t.depth() <= depth:
        return t
    if depth == 0:
        return TypeTree(t._fixed, None, [_Layer(l.period, l.start, l.pattern, {}) for l in t._layers])
    return TypeTree(
        t._fixed, {o: truncate(p, depth - 1) for o, p in t._ptrs.items()},
        [_Layer(l.period, l.start, l.pattern, {o: truncate(p, depth - 1) for o, p in l.pptrs.items()})
         for l in t._layers],
    )



def layout_tree(t: Attribute, *, declared: bool = False) -> TypeTree:
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
        inner = layout_tree(elem, declared=declared)
        size = size_align(elem)[0]
        if inner.is_empty() or size == 0:
            return EMPTY
        return periodize(inner, size, 0)
    fixed: dict[int, str] = {}
    _layout_into(t, 0, fixed, declared)
    return TypeTree(fixed)


def _layout_into(t: Attribute, base: int, fixed: dict[int, str], declared: bool) -> None:
    if base >= MAX_OFFSET:
        return
    kind = scalar_kind(t)
    if kind is not None:
        for o in range(base, min(base + store_size(t), MAX_OFFSET)):
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
    if is_struct(t):
        if declared and t.struct_name.data.startswith("union."):
            return
        for off, ft in zip(struct_offsets(t), t.types.data):
            _layout_into(ft, base + off, fixed, declared)


def first_element(t: TypeTree, m: int) -> TypeTree:
    """The facts of ``t`` about its first ``m`` bytes, and its periodic parts (what
    every element of an array of ``m``-byte elements starting at offset 0 shares)."""
    return join(window(t, 0, m, layers=False), TypeTree(None, None, t._layers))
