"""Memory in activity analysis for memrefs (func/arith/memref code).

The memref counterpart of :mod:`zymase.analysis.memory`: a memref value is
*shadowed* when the memory it views may hold active data; it then has a shadow
memref of the same shape holding derivatives. Shadows start at duplicated
(``enzyme_dup``) memref arguments and follow views (``memref.subview``,
``memref.cast``) and block arguments. Storing active data into a memref that has no
shadow yet gives its allocation (``memref.alloc``/``memref.alloca``) a zeroed
shadow.

Storing active data into memory the user declared constant (an ``enzyme_const``
memref argument) drops that data's derivative, as Enzyme-MLIR does: the classic
``@set`` example stores its active argument into a constant array and is
differentiated through its return value alone. Reading such memory back would then
lose a derivative silently, so a load from memory that received active data
without a shadow is an error.

The interface (``is_pointer``, ``handles``, ``transfer``, ``need_shadow``,
``stored_to_shadow``, ``is_memory_call``) is the one
:func:`zymase.analysis.activity.analyze` drives.
"""

from __future__ import annotations

from zymase.analysis.memory import UNSEEN_WRITES
from zymase.errors import ZymaseError
from zymase.ir import (BlockArgument, MemRefType, OpClasses, Operation, SSAValue, arith, func, is_float_type,
                       location_of, memref)
from zymase.ir import memref_ext

# (named: the C and Numba paths do not import the memref dialect, zymase/ir/on_first_use.py)
_VIEWS = OpClasses("memref.SubviewOp", "memref_ext.CastOp")
_ALLOCATIONS = OpClasses("memref.AllocOp", "memref.AllocaOp")


def is_memref(v: SSAValue) -> bool:
    return isinstance(v.type, MemRefType)


def _is_memref_select(op: Operation) -> bool:
    """``arith.select`` choosing between two memrefs: no shadow is selected with it, so
    memory holding active data may not be chosen this way (``MemrefModel.transfer``)."""
    return isinstance(op, arith.SelectOp) and is_memref(op.results[0])


def memref_model(fname: str, entry_args, arg_activities, region) -> "MemrefModel | None":
    """A model when the function body uses memrefs, else None (no memory)."""
    uses = any(is_memref(a) for a in entry_args) or any(
        op.dialect_name() == "memref" for op in region.walk()
    )
    return MemrefModel(fname, entry_args, arg_activities) if uses else None


class MemrefModel:
    def __init__(self, fname: str, entry_args, arg_activities):
        self.fname = fname
        self.entry_args = list(entry_args)
        self.dup_args = {
            a for a, act in zip(entry_args, arg_activities) if (act.is_dup or act.is_active) and is_memref(a)
        }
        self._incoming: dict = {}
        # roots of memory that received active data but has no shadow (-> op that wrote)
        self.unshadowed_writes: dict[SSAValue | Operation, Operation] = {}

    # ---- the interface used by analyze() ---------------------------------------------
    def is_pointer(self, v: SSAValue) -> bool:
        return is_memref(v)

    def handles(self, op: Operation) -> bool:
        if op.dialect_name() == "memref" or _is_memref_select(op):
            return True
        return self.is_memory_call(op)

    def is_memory_call(self, op: Operation) -> bool:
        return isinstance(op, func.CallOp) and any(is_memref(o) for o in op.operands)

    def transfer(self, op: Operation, info, incoming) -> None:
        self._incoming = incoming
        shadowed = info.shadowed
        if isinstance(op, func.CallOp):
            if any(o in shadowed for o in op.operands):
                raise ZymaseError(
                    "a call that passes memrefs holding active data cannot be differentiated yet",
                    construct=f"func.call @{op.callee.root_reference.data}",
                    function=self.fname,
                    location=location_of(op),
                    hint="inline the callee into the differentiated function",
                )
            if any(o in info.varied for o in op.operands):
                info.varied.update(r for r in op.results if is_float_type(r.type))
        elif isinstance(op, memref.LoadOp):
            if op.memref in shadowed and is_float_type(op.res.type):
                info.varied.add(op.res)
        elif isinstance(op, memref.StoreOp):
            if op.value in info.varied:
                self._write(op.memref, op, info, incoming)
        elif isinstance(op, memref_ext.CopyOp):
            if op.source in shadowed:
                self._write(op.destination, op, info, incoming)
        elif isinstance(op, _VIEWS):
            if op.operands[0] in shadowed:
                shadowed.add(op.results[0])
        elif _is_memref_select(op) and any(o in shadowed for o in op.operands[1:]):
            # the loads through the selected memref read no shadow: their derivatives
            # were constants (zero adjoints for the chosen memref, wrong tangents)
            raise ZymaseError(
                "arith.select between memrefs holding active data cannot be differentiated yet "
                "(their shadows are not selected with them)",
                construct="arith.select",
                function=self.fname,
                location=location_of(op),
                hint="load from each memref and select the loaded values, or branch with scf.if",
            )

    def _write(self, target: SSAValue, op: Operation, info, incoming) -> None:
        """Active data goes into ``target``: give it a shadow, or note the loss."""
        if target in info.shadowed:
            return
        if self.shadowable(target):
            self.need_shadow(target, op, info, incoming)
        else:
            for root in self._roots(target):
                self.unshadowed_writes.setdefault(root, op)

    def need_shadow(self, p: SSAValue, where: Operation | None, info, incoming) -> None:
        work = [p]
        while work:
            v = work.pop()
            if v in info.shadowed:
                continue
            info.shadowed.add(v)
            if isinstance(v, BlockArgument):
                if v.block.parent is not None and v.block is v.block.parent.blocks[0]:
                    continue  # a dup argument (only those are shadowable)
                work.extend(incoming.get(v, ()))
                continue
            op = v.owner
            if isinstance(op, _VIEWS):
                work.append(op.operands[0])
            elif isinstance(op, _ALLOCATIONS):
                info.shadow_allocations.add(op)
            else:
                raise ZymaseError(
                    f"active data is written into memory from '{op.name}', which cannot have a shadow",
                    construct=op.name,
                    function=self.fname,
                    location=location_of(op),
                    hint="write active data only to memref.alloc/alloca buffers or enzyme_dup arguments",
                )

    def stored_to_shadow(self, blocks, info):
        """Float values stored into shadowed memrefs: outputs of the function. Also
        where a derivative would be lost: a load from memory that received active
        data without a shadow."""
        out = []
        for b in blocks:
            for op in b.ops:
                if isinstance(op, memref.StoreOp) and op.memref in info.shadowed and op.value in info.varied:
                    out.append(op.value)
        if self.unshadowed_writes:
            for b in blocks:
                for op in b.ops:
                    if isinstance(op, (memref.LoadOp, memref_ext.CopyOp)) and is_float_type(
                        op.operands[0].type.get_element_type()
                    ):
                        hit = next((r for r in self._roots(op.operands[0]) if r in self.unshadowed_writes), None)
                        if hit is not None:
                            raise self._lost_derivative(op, hit)
        return out

    # ---- helpers ------------------------------------------------------------------
    def shadowable(self, p: SSAValue, seen=None) -> bool:
        seen = set() if seen is None else seen
        if p in seen:
            return True
        seen.add(p)
        if isinstance(p, BlockArgument):
            if p.block.parent is not None and p.block is p.block.parent.blocks[0]:
                return p in self.dup_args
            return all(self.shadowable(v, seen) for v in self._incoming.get(p, ()))
        op = p.owner
        if isinstance(op, _VIEWS):
            return self.shadowable(op.operands[0], seen)
        return isinstance(op, _ALLOCATIONS)

    def _roots(self, p: SSAValue, seen=None) -> set:
        """The arguments and allocations a memref views."""
        seen = set() if seen is None else seen
        if p in seen:
            return set()
        seen.add(p)
        if isinstance(p, BlockArgument):
            if p.block.parent is not None and p.block is p.block.parent.blocks[0]:
                return {p}
            out: set = set()
            for v in self._incoming.get(p, ()):
                out |= self._roots(v, seen)
            return out
        op = p.owner
        if isinstance(op, _VIEWS):
            return self._roots(op.operands[0], seen)
        # a select, or an op without a rule (reinterpret_cast, expand_shape, a call)
        # returning memory that may be its memref operands': a write through it may
        # reach any of them
        out = {op}
        for o in op.operands:
            if is_memref(o):
                out |= self._roots(o, seen)
        return out

    def _lost_derivative(self, load: Operation, root) -> ZymaseError:
        writer = self.unshadowed_writes[root]
        what = "this memory"
        hint = "write active data into it only through memref.subview/memref.cast views"
        if isinstance(root, BlockArgument) and root in self.entry_args:
            what = f"argument {self.entry_args.index(root) + 1}"
            hint = "mark the memref enzyme_dup and pass a shadow array after it"
        return ZymaseError(
            f"{what} of '{self.fname}' receives active data (by '{writer.name}') but has no shadow, "
            "so the derivative of what is read back here would be lost",
            construct=load.name,
            function=self.fname,
            location=location_of(load),
            hint=hint,
        )


# ---- what a function writes (for re-reading memory in the reverse sweep) -------------

_READ_ONLY = OpClasses("memref.LoadOp", "memref.DimOp", "memref.SubviewOp", "memref_ext.CastOp", "memref.AllocOp",
                       "memref.AllocaOp", "memref.GetGlobalOp")
"""memref ops that write no memory they are given (allocations write only new memory)."""


def memref_roots(v: SSAValue, entry) -> set | None:
    """The memory memref ``v`` views: arguments of block ``entry`` (the function's),
    allocation ops and global names, through views; None when unknown (a region's
    block argument, a call's result)."""
    while not isinstance(v, BlockArgument) and isinstance(v.owner, _VIEWS):
        v = v.owner.operands[0]
    if isinstance(v, BlockArgument):
        return {v} if v.block is entry else None
    op = v.owner
    if isinstance(op, _ALLOCATIONS):
        return {op}
    if isinstance(op, memref.GetGlobalOp):
        return {op.name_.root_reference.data}
    return None


def memref_writes(region) -> list[tuple[Operation, set | None]]:
    """Each op of ``region`` (nested regions included) that may write or free memrefs,
    with the roots (see :func:`memref_roots`) it may write; None when unknown."""
    entry = region.blocks[0]
    out = []
    for op in region.walk():
        if isinstance(op, _READ_ONLY) or op.dialect_name() == "scf":
            continue  # scf ops pass memrefs along; what their regions do is walked
        roots: set | None = set()
        if isinstance(op, func.CallOp):
            roots.add(UNSEEN_WRITES)  # the callee may write globals, which may be our arguments
        if isinstance(op, memref.StoreOp):
            targets = [op.memref]
        elif isinstance(op, memref_ext.CopyOp):
            targets = [op.destination]
        else:  # a call, a dealloc, any other op given a memref: assume it writes it
            targets = [o for o in op.operands if is_memref(o)]
        for t in targets:
            found = memref_roots(t, entry)
            roots = None if found is None or roots is None else roots | found
        if roots != set():
            out.append((op, roots))
    return out


def written_memref_roots(region) -> set | None:
    """The roots of every memref that an op of ``region`` may write or free; None when
    one is unknown."""
    out: set = set()
    for _, roots in memref_writes(region):
        if roots is None:
            return None
        out |= roots
    return out
