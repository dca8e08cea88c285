"""Batched evaluation (Enzyme's ``__enzyme_batch``, Enzyme-MLIR's ``enzyme.batch``): a
copy of a function that runs N executions of it side by side, one per *lane*, in one
pass.

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
to shared memory it may write; region ops (a func's scf.for/if/while are lowered to
branches on a copy first, :func:`_branches_only`), memref stores, and exceptions
(invoke). What stays the caller's promise (Enzyme's batch contract): a lane never reads
what another lane writes, so a pointer computed per lane into shared memory (``out +
k`` with a vector ``k``) is taken to be that lane's own.

The result of the batched copy is the N results, lane by lane (``{r0, ..., rN-1}``;
one value at width 1).

``enzyme.batch @f(%t...) {batch_shape = array<i64: N>}`` (:func:`lower_batch_op`): f
takes scalars, each operand and result is a ``tensor<N x T>`` of its lanes. The op
becomes a call of the batched copy; a tensor built by ``tensor.from_elements`` or
``tensor.splat`` gives its elements as the lanes (one value repeated: a scalar
argument, shared by the lanes), others are read with ``tensor.extract``; a result read
by ``tensor.extract`` at a constant index is that lane's value, others are rebuilt with
``tensor.from_elements``. (zymase lowers no tensor to LLVM: a tensor left over is
refused by ``lower_to_llvm``.)
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.analysis.cfg import CFG
from zymase.analysis.memory import ALLOCATION_KINDS, READ_ONLY_EXTERNALS, memory_kind, pointer_roots
from zymase.autodiff.common import describe
from zymase.autodiff.flavor import Emitter, flavor_of
from zymase.errors import ZymaseError
from zymase.ir import (
    Block,
    IndexType,
    IntegerType,
    ModuleOp,
    Operation,
    convert_scf_to_cf,
    SSAValue,
    StringAttr,
    TensorType,
    arith,
    is_float_type,
    llvm,
    location_of,
    tensor,
)

#: the attribute that records what a generated function batches ("f/N/vector flags"),
#: so each (function, width, kinds) is generated once per module
BATCH_OF = "zymase.batch_of"


def batched_function(module: ModuleOp, fop: Operation, vector: Sequence[bool], width: int,
                     request: str = "__enzyme_batch") -> str:
    """The name of ``fop``'s batched copy at ``width`` lanes, with ``vector[i]`` telling
    whether argument i is given per lane; generated on first use. ``request`` names
    what asked for it in messages."""
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
    _Batcher(module, fop, list(vector), width, request).generate(gop)
    return name


class _Batcher:
    def __init__(self, module: ModuleOp, fop: Operation, vector: list[bool], width: int, request: str):
        self.module = module
        self.request = request
        self.fop = fop
        self.fname = fop.sym_name.data
        self.flavor = flavor_of(fop)
        self.vector = vector
        self.width = width
        self.region = _branches_only(fop)
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
        return ZymaseError(f"{self.request} of '{self.fname}' (width {self.width}): {what}",
                           construct=describe(op), function=self.fname, location=location_of(op), hint=hint)

    def _op(self, op: Operation) -> None:
        E = self.E
        if op.regions:
            # scf.for/if/while were lowered to branches (_branches_only); a region op
            # left (scf.parallel, execute_region) would be copied with its body unmapped
            raise self._refuse(op, f"'{op.name}' (a region op) is not batched",
                               "write the loop as scf.for/scf.while, or as branches (cf)")
        if op.dialect_name() == "memref" and self.width > 1 and "store" in op.name:
            raise self._refuse(op, "memref stores are not batched (the lanes would need memory of their own)",
                               "batch a function of scalars")
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
        if op.dialect_name() == "memref" and self.width > 1:
            raise self._refuse(op, "memref memory with values that differ between lanes is not batched",
                               "batch a function of scalars")
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
        name = batched_function(self.module, target, vector, self.width, self.request)
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


def _branches_only(fop: Operation):
    """The body to batch: ``fop``'s own, or for a func with scf ops a copy with them
    lowered to branches (a loop whose bound the lanes share stays one loop; the copy
    in a module of its own, the function untouched)."""
    if fop.name != "func.func" or not any(op.regions for block in fop.body.blocks for op in block.ops):
        return fop.body
    work = fop.clone()
    convert_scf_to_cf(ModuleOp([work]))
    return work.body


# ---------------------------------------------------------------------- enzyme.batch


def lower_batch_op(op: Operation, module: ModuleOp, caller: str | None) -> None:
    """Replace ``enzyme.batch`` by a call of the batched copy (module docstring)."""
    fname = op.fn.root_reference.data
    request = "enzyme.batch"

    def refuse(message: str, hint: str) -> ZymaseError:
        return ZymaseError(message, construct=f"{request} @{fname}", function=caller, location=location_of(op),
                           hint=hint)

    shape = list(op.batch_shape.get_values())
    if len(shape) != 1 or shape[0] < 1:
        raise refuse(f"batch_shape {shape}: zymase batches over one dimension of at least one lane",
                     "give batch_shape = array<i64: N>, or nest the batches")
    width = shape[0]
    fop = next((f for f in module.body.block.ops if getattr(f, "sym_name", None) is not None
                and f.sym_name.data == fname and hasattr(f, "body")), None)
    if fop is None or not fop.body.blocks:
        raise refuse(f"no function named '{fname}' with a body to batch", "check the symbol name")
    flavor = flavor_of(fop)
    inputs, outputs = flavor.signature(fop)
    if len(op.inputs) != len(inputs) or len(op.outputs) != len(outputs):
        raise refuse(f"@{fname} takes {len(inputs)} arguments and returns {len(outputs)} results; enzyme.batch "
                     f"gives {len(op.inputs)} and expects {len(op.outputs)}", "batch every argument and result")
    for what, values, types in (("operand", op.inputs, inputs), ("result", op.outputs, outputs)):
        for i, (v, t) in enumerate(zip(values, types)):
            if not (is_float_type(t) or isinstance(t, (IntegerType, IndexType))):
                raise refuse(f"{'parameter' if what == 'operand' else 'result'} {i + 1} of @{fname} is {t}: "
                             "zymase batches functions of scalars", "batch a function of floats and integers")
            want = TensorType(t, [width])
            if v.type != want:
                raise refuse(f"{what} {i + 1} of {request} @{fname} is {v.type}, but batch_shape [{width}] and "
                             f"{'parameter' if what == 'operand' else 'result'} {i + 1} ({t}) of @{fname} make it "
                             f"{want}", "each operand and result is a tensor of the lanes, the batch dimension first")
    E = Emitter(flavor, module).before(op)
    lanes = [tensor_lanes(v, width, E) for v in op.inputs]
    vector = [any(x is not lane[0] for x in lane) for lane in lanes]
    name = batched_function(module, fop, vector, width, request)
    args = [x for lane, v in zip(lanes, vector) for x in (lane if v else lane[:1])]
    results = iter(E.call(name, args, [t for t in outputs for _ in range(width)]))
    for r in op.outputs:
        deliver_lanes(r, [next(results) for _ in range(width)], E)
    inputs = list(op.inputs)
    op.parent_block().erase_op(op)
    erase_unused_tensors(inputs)


def erase_unused_tensors(values: Sequence[SSAValue]) -> None:
    """The tensors built only to hand their lanes over (``tensor.from_elements`` /
    ``tensor.splat`` nothing else uses) go: zymase does not lower tensors."""
    for v in values:
        owner = v.owner
        if isinstance(owner, (tensor.FromElementsOp, tensor.SplatOp)) and not owner.results[0].uses:
            owner.parent_block().erase_op(owner)


def tensor_lanes(v: SSAValue, width: int, E: Emitter) -> list[SSAValue]:
    """The ``width`` elements of a 1-D tensor: its builder's operands, or extracted."""
    owner = v.owner
    if isinstance(owner, tensor.FromElementsOp):
        return list(owner.elements)
    if isinstance(owner, tensor.SplatOp) and not owner.dynamicSizes:
        return [owner.input] * width
    out = []
    for k in range(width):
        index = E.v(arith.ConstantOp.from_int_and_width(k, IndexType()))
        out.append(E.v(tensor.ExtractOp(v, [index], v.type.element_type)))
    return out


def _constant_index(v: SSAValue) -> int | None:
    owner = v.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(v.type, IndexType):
        return owner.value.value.data
    return None


def deliver_lanes(result: SSAValue, lanes: list[SSAValue], E: Emitter) -> None:
    """Uses of a batched result: a constant-index extract is its lane, others get the tensor."""
    for use in list(result.uses):
        user = use.operation
        if isinstance(user, tensor.ExtractOp) and len(user.indices) == 1:
            k = _constant_index(user.indices[0])
            if k is not None and 0 <= k < len(lanes):
                user.results[0].replace_all_uses_with(lanes[k])
                user.parent_block().erase_op(user)
    if result.uses:
        result.replace_all_uses_with(E.v(tensor.FromElementsOp(*lanes, result_type=result.type)))
