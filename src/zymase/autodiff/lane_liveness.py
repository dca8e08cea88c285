"""Lane liveness for Laplacian mode: which ops' gradient lanes nothing needs.

A Laplacian-mode entry (autodiff/laplacian.py) returns the value and the Laplacian lane;
its N gradient lanes matter only where they reach a second-order term (a nonlinear op
takes ``sum_k f''[g_k, g_k]`` of its operands' lanes) through linear code. In
``w . tanh(W x + b)`` the 64 gradient lanes of ``tanh(...)``, stored into a new array
and read only by the linear ``np.dot(w, h)``, are dead: their shadows need no
allocation, zeroing, stores or loads. This backward analysis finds such ops; the
generator emits only the Laplacian lane for them (``ForwardGenerator.live_lanes``).

Model. Nodes are the primal function's SSA values. Pointers and aggregates that hold
them are grouped into memory classes (union-find, Steensgaard-like: a GEP, a select or
phi of pointers, a pointer stored into or loaded from memory, an aggregate holding a
pointer all join one class), a class standing for every object its pointers may reach;
pointer arguments share one class, except ``noalias`` ones (each its own: the kernel's
result slot). Need flows backward: a needed float's lanes need its operands' lanes
(every op's tangent is linear in its operands' tangents); a needed float load needs its
pointer's class; a needed class needs the floats stored into it and the classes copied
into it. Roots: the operands of every op that is not one of the known linear ones (its
second-order term reads their lanes; unknown calls, defined callees, BLAS calls and
anything unrecognized are roots too: conservative), and pointers returned. Floats
returned and memory reached from arguments are not roots: at a Laplacian entry only the
Laplacian lane of the outputs is defined (the Numba kernel reads nothing else).

An op is lane-dead when it is a linear float op, a move of a pointer (GEP, select,
load, store, phi) or a shadow bookkeeping call (allocation, reference count, free,
memset, memcpy) and the node it writes is not needed. Nonlinear ops keep every lane
(their operands are roots; their result lanes, when unread, are dead code LLVM drops)."""

from __future__ import annotations

from zymase.analysis.memory import DEALLOCATED_ARG, args_marked, callee_name, holds_pointer, memory_kind
from zymase.ir import Operation, OpResult, SSAValue, is_float_type

#: float ops whose tangent is linear in the operands' tangents and whose second-order
#: term is zero (for fmul and fdiv: when one factor, or the numerator alone, is active)
_LINEAR = ("llvm.fadd", "llvm.fsub", "llvm.fneg", "llvm.fpext", "llvm.fptrunc", "llvm.select", "llvm.freeze")
#: ops that move values into or out of aggregates: their operands and results join a class
_AGGREGATE_MOVES = ("llvm.extractvalue", "llvm.insertvalue", "llvm.extractelement", "llvm.insertelement",
                    "llvm.shufflevector")
_CONSTANTS = ("llvm.mlir.zero", "llvm.mlir.undef", "llvm.mlir.poison", "llvm.mlir.constant")
#: memory kinds that only move or manage a class's shadow (lane-dead with their class)
_BOOKKEEPING = ("derive", "select", "alloca", "malloc", "calloc", "nrt_alloc", "refcount", "free", "memset",
                "realloc")


def _pointerish(v: SSAValue) -> bool:
    return holds_pointer(v.type)


def _constant(v: SSAValue) -> bool:
    """A constant (null, undef, a number): it points at nothing and has no lanes."""
    return isinstance(v, OpResult) and not v.owner.operands and v.owner.name in _CONSTANTS


class LaneLiveness:
    """The lane-dead ops of the Laplacian-mode function being generated from ``region``
    (``act``: its activity; ``flavor``: its terminators' operands)."""

    def __init__(self, fop: Operation, region, act, flavor):
        self.act = act
        self._parent: dict[SSAValue, SSAValue] = {}
        self._edges: dict[SSAValue, list[SSAValue]] = {}
        self._roots: list[SSAValue] = []
        self._dead_candidates: list[tuple[Operation, SSAValue]] = []
        blocks = list(region.blocks)
        self._arguments(fop, blocks[0])
        for b in blocks:
            for op in b.ops:
                self._visit(op, flavor)
        self.needed = self._propagate()
        self.dead_ops = {op for op, node in self._dead_candidates if self._find(node) not in self.needed}

    # ----- union-find over memory classes -------------------------------------------
    def _find(self, v: SSAValue) -> SSAValue:
        root = v
        while (p := self._parent.get(root, root)) is not root:
            root = p
        while v is not root:  # path compression
            self._parent[v], v = root, self._parent.get(v, v)
        return root

    def _union(self, *vs: SSAValue) -> None:
        roots = [self._find(v) for v in vs if not _constant(v)]
        for r in roots[1:]:
            if r is not roots[0]:
                self._parent[r] = roots[0]

    def _edge(self, needed: SSAValue, then: SSAValue) -> None:
        """If ``needed``'s lanes are, so are ``then``'s."""
        self._edges.setdefault(needed, []).append(then)

    def _root(self, *vs: SSAValue) -> None:
        self._roots.extend(v for v in vs if not _constant(v))

    # ----- the walk -----------------------------------------------------------------
    def _arguments(self, fop: Operation, entry) -> None:
        restrict = args_marked(fop, "llvm.noalias")
        shared = [a for i, a in enumerate(entry.args) if _pointerish(a) and i not in restrict]
        if shared:
            self._union(*shared)

    def _visit(self, op: Operation, flavor) -> None:
        if op.regions:
            self._root(*op.operands, *op.results)  # structured control flow: not modelled
            for inner in op.walk():
                self._root(*inner.operands, *inner.results)
            return
        if op.successors or flavor.is_return(op):
            self._terminator(op, flavor)
            return
        if DEALLOCATED_ARG in op.attributes:
            # a custom deallocator: its shadow's release goes with the pointer's class
            self._dead_candidates.append((op, op.operands[op.attributes[DEALLOCATED_ARG].value.data]))
            return
        kind = memory_kind(op)
        if kind is not None:
            self._memory(op, kind)
            return
        if op.name in _CONSTANTS:
            return
        if op.name in ("llvm.icmp", "llvm.fcmp") or (
                op.name not in ("llvm.call", "llvm.call_intrinsic", "llvm.ptrtoint", "llvm.inline_asm")
                and not any(self.act.is_active(v) or _pointerish(v) for v in (*op.operands, *op.results))):
            return  # a comparison, or integer arithmetic: no lanes, no memory
        if op.name in _AGGREGATE_MOVES:
            self._union(*op.operands, *op.results)
            self._dead_candidates.append((op, op.results[0]))
            return
        active = [o for o in op.operands if self.act.is_active(o)]
        floats = [r for r in op.results if is_float_type(r.type) and self.act.is_active(r)]
        if len(op.results) == 1 and floats and not any(_pointerish(o) for o in op.operands) \
                and self._is_linear(op, active):
            for o in active:
                self._edge(floats[0], o)
            self._dead_candidates.append((op, floats[0]))
            return
        # nonlinear, a call, or not recognized: its operands' lanes are needed
        self._root(*op.operands)
        for r in op.results:
            if _pointerish(r):
                self._root(r)

    def _is_linear(self, op: Operation, active: list[SSAValue]) -> bool:
        if op.name in _LINEAR:
            return op.name != "llvm.select" or not self.act.is_active(op.operands[0])
        if op.name == "llvm.fmul":
            return len(active) <= 1
        if op.name == "llvm.fdiv":
            return not self.act.is_active(op.operands[1])
        return False

    def _memory(self, op: Operation, kind: str) -> None:
        ops, res = op.operands, op.results
        if kind == "derive":
            self._union(res[0], ops[0])
            self._dead_candidates.append((op, res[0]))
        elif kind == "select":
            self._union(res[0], ops[1], ops[2])
            self._dead_candidates.append((op, res[0]))
        elif kind == "load":
            if _pointerish(res[0]):
                self._union(res[0], op.ptr)
                self._dead_candidates.append((op, op.ptr))
            else:
                self._edge(res[0], op.ptr)
                self._dead_candidates.append((op, res[0]))
        elif kind == "store":
            if _pointerish(op.value):
                self._union(op.value, op.ptr)
            else:
                self._edge(op.ptr, op.value)
            self._dead_candidates.append((op, op.ptr))
        elif kind == "memcpy":
            self._edge(ops[0], ops[1])
            self._dead_candidates.append((op, ops[0]))
        elif kind == "realloc":
            self._union(res[0], ops[0])
            self._dead_candidates.append((op, res[0]))
        elif kind in _BOOKKEEPING and callee_name(op) != "NRT_MemInfo_call_dtor":
            # a fresh object (its own class), or a reference count, free or memset of one
            self._dead_candidates.append((op, res[0] if res and _pointerish(res[0]) else ops[0]))
        else:
            # BLAS call rules (every lane in one call), globals, memrefs, tape pools ...
            self._root(*ops, *res)

    def _terminator(self, op: Operation, flavor) -> None:
        if flavor.is_return(op):
            self._root(*(v for v in flavor.return_values(op) if _pointerish(v)))
            return
        for succ, operands in zip(op.successors, flavor.successor_operands(op)):
            for arg, v in zip(succ.args, operands):
                if _pointerish(arg):
                    self._union(arg, v)
                else:
                    self._edge(arg, v)
        self._root(*(o for o in op.operands if o not in
                     {v for operands in flavor.successor_operands(op) for v in operands}))

    def _propagate(self) -> set[SSAValue]:
        """The needed class representatives: closure of the roots over the edges."""
        edges: dict[SSAValue, list[SSAValue]] = {}
        for a, bs in self._edges.items():
            edges.setdefault(self._find(a), []).extend(self._find(b) for b in bs)
        needed: set[SSAValue] = set()
        work = [self._find(r) for r in self._roots]
        while work:
            v = work.pop()
            if v in needed:
                continue
            needed.add(v)
            work.extend(edges.get(v, ()))
        return needed

    def is_dead(self, v: SSAValue) -> bool:
        """Whether ``v``'s gradient lanes (or its class's shadows) are needed by nothing."""
        return self._find(v) not in self.needed
