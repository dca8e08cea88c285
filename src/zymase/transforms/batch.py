"""Batched evaluation (Enzyme's ``__enzyme_batch``): a copy of a function that runs N
executions of it side by side, one per *lane*, in one pass.

Each argument is *vector* (N values, one per lane) or *scalar* (one value all lanes
share). A value is *varying* when it may differ between lanes: it depends on a vector
argument, is loaded through a varying pointer, or lives in a local allocation a lane
writes its own data into. The copy computes every varying value N times, lane after
lane next to each other (arithmetic LLVM's SLP and loop vectorizers pack), and every
other value once: one loop, one branch, one call with shared arguments for all lanes,
not N calls of the function. A call of a defined function with varying arguments calls
its batched copy (generated the same way); a call of an external one with varying
arguments is made once per lane. Local allocations (alloca, malloc, ...) get one copy
per lane once a lane stores its own data into them.

Work that does not depend on the lane runs once, as in Enzyme (a call of an external
function with scalar arguments only). Refused, never approximated: a branch or switch
on a varying value (the lanes would take different paths); at a width above 1, a store
into memory the lanes share (a scalar pointer, a global: the lanes interleave, so one
lane would read another's data, and a store that runs once where N calls would run it
N times is another program) and an external call with varying arguments and a pointer
to shared memory it may write; structured control flow holding varying values, and
exceptions (invoke).

The result of the batched copy is the N results, lane by lane (``{r0, ..., rN-1}``;
one value at width 1).
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.analysis.cfg import CFG
from zymase.analysis.memory import ALLOCATION_KINDS, READ_ONLY_EXTERNALS, memory_kind, pointer_roots
from zymase.autodiff.common import describe
from zymase.autodiff.flavor import Emitter, flavor_of
from zymase.errors import ZymaseError
from zymase.ir import Block, ModuleOp, Operation, SSAValue, StringAttr, llvm, location_of

#: the attribute that records what a generated function batches ("f/N/vector flags"),
#: so each (function, width, kinds) is generated once per module
BATCH_OF = "zymase.batch_of"


def batched_function(module: ModuleOp, fop: Operation, vector: Sequence[bool], width: int) -> str:
    """The name of ``fop``'s batched copy at ``width`` lanes, with ``vector[i]`` telling
    whether argument i is given per lane; generated on first use."""
    fname = fop.sym_name.data
    key = f"{fname}/{width}/" + "".join("v" if v else "s" for v in vector)
    symbols = {op.sym_name.data: op for op in module.body.block.ops if hasattr(op, "sym_name")}
    for op in module.body.block.ops:
        if isinstance(attr := op.attributes.get(BATCH_OF), StringAttr) and attr.data == key:
            return op.sym_name.data
    flavor = flavor_of(fop)
    inputs, outputs = flavor.signature(fop)
    ins = [t for t, v in zip(inputs, vector) for _ in range(width if v else 1)]
    outs = [t for t in outputs for _ in range(width)]
    name, k = f"batch{width}{fname}", 0
    while name in symbols:
        k += 1
        name = f"batch{width}{fname}.{k}"
    gop = flavor.make_function(name, ins, outs, fop)
    gop.attributes[BATCH_OF] = StringAttr(key)
    module.body.block.add_op(gop)  # before its body: a recursive call finds it
    _Batcher(module, fop, list(vector), width).generate(gop)
    return name


class _Batcher:
    def __init__(self, module: ModuleOp, fop: Operation, vector: list[bool], width: int):
        self.module = module
        self.fop = fop
        self.fname = fop.sym_name.data
        self.flavor = flavor_of(fop)
        self.vector = vector
        self.width = width
        self.region = fop.body
        self.cfg = CFG.build(self.region)
        self.entry = self.region.blocks[0]
        self.incoming: dict[SSAValue, list[SSAValue]] = {}
        for b in self.region.blocks:
            term = b.last_op
            if term is None:
                continue
            for succ, operands in zip(term.successors, self.flavor.successor_operands(term)):
                for arg, v in zip(succ.args, operands):
                    self.incoming.setdefault(arg, []).append(v)
        self.functions = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)
                          or getattr(op, "name", "") == "func.func"}
        self.varying: set[SSAValue] = set()
        self._find_varying()

    # ------------------------------------------------------------------ analysis

    def _find_varying(self) -> None:
        """The values that may differ between lanes (a fixed point: loops carry them
        around, and a local allocation becomes varying when a lane writes into it)."""
        varying = self.varying
        varying.update(a for a, v in zip(self.entry.args, self.vector) if v)
        changed = True
        while changed:
            changed = False
            for b in self.cfg.rpo():
                for op in b.ops:
                    new: set[SSAValue] = set()
                    if any(o in varying for o in op.operands):
                        new.update(op.results)
                        for ptr in self._written_pointers(op):
                            if ptr not in varying:
                                new.update(self._local_roots(ptr) or ())
                    for succ, operands in zip(op.successors, self.flavor.successor_operands(op)
                                              if op.successors else ()):
                        new.update(arg for arg, v in zip(succ.args, operands) if v in varying)
                    if new - varying:
                        varying |= new
                        changed = True

    def _written_pointers(self, op: Operation) -> list[SSAValue]:
        """The pointers ``op`` may write through when a lane gives it its own values."""
        if isinstance(op, llvm.StoreOp):
            return [op.ptr] if op.value in self.varying else []
        if isinstance(op, llvm.CallOp):
            return [a for a in op.args if isinstance(a.type, llvm.LLVMPointerType)]
        return []

    def _local_roots(self, ptr: SSAValue) -> list[SSAValue] | None:
        """The results of the local allocations ``ptr`` points into; None when it may
        point into memory the lanes share (an argument, a global, unknown)."""
        roots = pointer_roots(ptr, self.entry, lambda arg: self.incoming.get(arg, []))
        if roots is None or not all(isinstance(r, Operation) and memory_kind(r) in ALLOCATION_KINDS for r in roots):
            return None
        return [r.results[0] for r in roots]

    # ------------------------------------------------------------------ emission

    def lane(self, v: SSAValue, k: int) -> SSAValue:
        if v in self.varying:
            return self.lanes[v][k]
        return self.shared.get(v, v)

    def _mapper(self, op: Operation, k: int) -> dict[SSAValue, SSAValue]:
        """Lane ``k``'s values of ``op``'s operands (clone adds the results to it)."""
        return {o: self.lane(o, k) for o in op.operands}

    def generate(self, gop: Operation) -> None:
        N = self.width
        self.lanes: dict[SSAValue, list[SSAValue]] = {}
        self.shared: dict[SSAValue, SSAValue] = {}
        bmap: dict[Block, Block] = {}
        self.bmap = bmap
        g_entry = gop.body.blocks[0]
        bmap[self.entry] = g_entry
        args = iter(g_entry.args)
        for a, v in zip(self.entry.args, self.vector):
            if v:
                self.lanes[a] = [next(args) for _ in range(N)]
            else:
                self.shared[a] = next(args)
        order = self.cfg.rpo()
        for b in order[1:]:
            types = [t for a in b.args for t in [a.type] * (N if a in self.varying else 1)]
            nb = Block(arg_types=types)
            new_args = iter(nb.args)
            for a in b.args:
                if a in self.varying:
                    self.lanes[a] = [next(new_args) for _ in range(N)]
                else:
                    self.shared[a] = next(new_args)
            bmap[b] = nb
            gop.body.add_block(nb)
        self.E = E = Emitter(self.flavor, self.module)
        for b in order:
            E.at_end(bmap[b])
            for op in b.ops:
                if op is b.last_op:
                    self._terminator(op)
                else:
                    self._op(op)

    def _refuse(self, op: Operation, what: str, hint: str) -> ZymaseError:
        return ZymaseError(f"__enzyme_batch of '{self.fname}' (width {self.width}): {what}",
                           construct=describe(op), function=self.fname, location=location_of(op), hint=hint)

    def _op(self, op: Operation) -> None:
        E = self.E
        if (isinstance(op, llvm.StoreOp) and self.width > 1 and op.ptr not in self.varying
                and self._local_roots(op.ptr) is None):
            # lanes interleave: one lane's store would be read by the others (a shared
            # scratch buffer), or run once where N calls would run it N times (a counter)
            raise self._refuse(op, "the lanes would store into memory they share (a scalar pointer "
                               "argument or a global)",
                               "give each lane its own memory: pass the pointer per lane (enzyme_vector)")
        if not any(o in self.varying for o in op.operands):
            new = E.insert(op.clone(self._mapper(op, 0), self.bmap))
            for r, nr in zip(op.results, new.results):
                if r in self.varying:  # a local allocation a lane writes into: one per lane
                    self.lanes[r] = [nr] + [E.insert(op.clone(self._mapper(op, 0), self.bmap)).results[0]
                                            for _ in range(self.width - 1)]
                else:
                    self.shared[r] = nr
            return
        if op.regions:
            raise self._refuse(op, "structured control flow holding values that differ between lanes",
                               "lower it to branches first (zymase-opt enzyme-cfg), or make the values scalar")
        callee = self.flavor.callee(op)
        target = self.functions.get(callee) if callee is not None else None
        if target is not None and target.body.blocks:
            self._batched_call(op, target)
            return
        if callee is not None and callee not in READ_ONLY_EXTERNALS:
            for a in self.flavor.call_args(op):
                if isinstance(a.type, llvm.LLVMPointerType) and a not in self.varying and self._local_roots(a) is None:
                    raise self._refuse(op, f"'{callee}' is called with values that differ between lanes and a "
                                       "pointer to memory the lanes share, which it may write",
                                       "pass the pointer per lane (enzyme_vector), or call it outside the "
                                       "batched function")
        outs: list[list[SSAValue]] = [[] for _ in op.results]
        for k in range(self.width):
            new = E.insert(op.clone(self._mapper(op, k), self.bmap))
            for i, nr in enumerate(new.results):
                outs[i].append(nr)
        for r, lanes in zip(op.results, outs):
            self.lanes[r] = lanes

    def _batched_call(self, op: Operation, target: Operation) -> None:
        """A call of a defined function with varying arguments: one call of its batched copy."""
        args = self.flavor.call_args(op)
        vector = [a in self.varying for a in args]
        name = batched_function(self.module, target, vector, self.width)
        call_args = [x for a in args for x in ([self.lane(a, k) for k in range(self.width)] if a in self.varying
                                               else [self.lane(a, 0)])]
        types = [r.type for r in op.results for _ in range(self.width)]
        outs = iter(self.E.call(name, call_args, types))
        for r in op.results:
            self.lanes[r] = [next(outs) for _ in range(self.width)]
            self.varying.add(r)

    def _terminator(self, op: Operation) -> None:
        flavor, E, N = self.flavor, self.E, self.width
        if flavor.is_return(op):
            outs = [self.lane(v, k) for v in flavor.return_values(op) for k in range(N)]
            flavor.ret(E, outs, None)
            return
        if not op.successors:
            E.insert(op.clone(self._mapper(op, 0), self.bmap))
            return
        if isinstance(op, llvm.CondBrOp) or op.name in ("llvm.switch", "cf.cond_br", "cf.switch"):
            condition = op.operands[0]
            if condition in self.varying:
                raise self._refuse(op, "a branch on a value that differs between lanes: the lanes could take "
                                   "different paths", "branch on scalar (enzyme_scalar) arguments only, or "
                                   "compute both sides and select (a ? b : c)")
        elif not isinstance(op, llvm.BrOp) and op.name != "cf.br":
            raise self._refuse(op, f"'{op.name}' (exceptions or other control flow) is not batched",
                               "batch a function without C++ exceptions")
        lists = []
        for succ, operands in zip(op.successors, flavor.successor_operands(op)):
            lst: list[SSAValue] = []
            for arg, v in zip(succ.args, operands):
                lst += [self.lane(v, k) for k in range(N)] if arg in self.varying else [self.lane(v, 0)]
            lists.append(lst)
        clone = op.clone(self._mapper(op, 0), self.bmap)
        new = flavor.rebuild_terminator(clone, lists)
        clone.erase()
        E.insert(new)

