"""The run-time alias check that lets an OpenMP region whose arrays may alias be recomputed
(loop versioning; a helper of ``autodiff/region_recompute.py`` and ``reverse.py``).

``region_recompute`` recomputes a region in the reverse sweep only when no object it reads
shares memory with one it writes. Without ``restrict``, two argument arrays may be one, and
the region kept the taped split pair. When the only such doubt is between captured arrays
whose every access is ``base + size*(iv + k) + c`` (``iv`` the induction variable of a
signed static worksharing loop, or no index at all), the bytes the region touches in each
array lie in ``[base + size*(lb + k_min) + c_min, base + size*(ub + k_max) + c_max +
width)``, ``lb..ub`` the loop's whole iteration space (the values the region stores into
the bounds ``__kmpc_for_static_init_*`` reads; every thread's chunk lies inside it). A
function ``<region>.disjoint.<pairs>`` computes those ranges from the region's own arguments (the
slice of the region that computes the bounds and the array pointers, cloned) and returns
whether every doubtful pair is apart. The caller's forward sweep calls it and forks either
the primal region (the recomputed path) or the augmented one (taped); its reverse sweep
calls it again (it reads only what nothing writes before the reverse sweep, so it answers
the same) and forks the combined derivative or the split reverse. The ranges are a
superset of what the region touches (a union over accesses, an empty loop's inverted
range included), so "apart" is never wrong; the shadows are taken to mirror the primal
layout, as everywhere in the engine.
"""

from __future__ import annotations

from types import SimpleNamespace

from zymase.analysis.memory import memory_kind
from zymase.ir import Block, BlockArgument, IntegerAttr, IntegerType, Operation, Region, SSAValue, i64, llvm

_SLICE_OPS = (llvm.AddOp, llvm.SubOp, llvm.MulOp, llvm.ShlOp, llvm.SExtOp, llvm.ZExtOp, llvm.TruncOp, llvm.ICmpOp,
              llvm.SelectOp, llvm.ConstantOp, llvm.GEPOp, llvm.AndOp, llvm.OrOp, llvm.XOrOp, llvm.LoadOp)
_MINMAX = ("llvm.smin.", "llvm.smax.", "llvm.umin.", "llvm.umax.")
_ULT, _ULE = 6, 7


class _Check:
    """What ``<region>.disjoint`` computes: per checked key the accesses
    ``(base, index or None, lb, ub, k, size, c, width)``, and the pairs of keys to test."""

    def __init__(self, accesses: dict, pairs: list):
        self.accesses = accesses
        self.pairs = pairs


def plan_check(gen, region: Operation, pairs: list, stable_keys: set) -> _Check | None:
    """The run-time check that keys ``pairs`` (read/written or written/written) do not
    overlap, or None when some access is not of the affine form, or a bound or a base
    pointer is not computed from memory in ``stable_keys`` (nothing writes it before the
    reverse sweep) and the region's arguments."""
    from zymase.analysis.cfg import CFG
    from zymase.autodiff.region_recompute import _key

    if not all(isinstance(t, (llvm.LLVMPointerType, IntegerType)) for t in region.function_type.inputs.data):
        return None  # a float argument could be active: the two reverse paths would return it differently
    view = SimpleNamespace(cfg=CFG.build(region.body), flavor=gen.flavor, p=SimpleNamespace(region=region.body))
    keys = {k for pair in pairs for k in pair}
    accesses: dict = {k: [] for k in keys}
    for op in region.body.walk():
        kind = memory_kind(op)
        if kind not in ("load", "store"):
            continue
        key = _key(op.ptr)
        if key not in keys:
            continue
        found = _affine_access(view, op)
        if found is None:
            return None
        accesses[key].append(found)
    for found in accesses.values():
        for base, index, lb, ub, *_ in found:
            if any(not _sliceable(v, stable_keys) for v in (base, lb, ub) if v is not None):
                return None
    return _Check(accesses, pairs)


def _affine_access(view, op: Operation):
    from zymase.autodiff.forwarding import _address
    from zymase.autodiff.parallel import _induction_plus, _size_of

    typ = op.results[0].type if isinstance(op, llvm.LoadOp) else op.value.type
    width = _size_of(typ)
    found = _address(op.ptr)
    if found is None or width is None:
        return None
    base, term, c = found
    if term is None:
        return base, None, None, None, 0, 0, c, width
    size, index = term
    iv, k = _induction_plus(view, index)
    if iv is None or size <= 0 or not _sign_preserving(index, iv):
        return None
    bounds = _iteration_space(view, iv)
    if bounds is None:
        return None
    return base, iv, bounds[0], bounds[1], k, size, c, width


def _sign_preserving(index: SSAValue, iv: BlockArgument) -> bool:
    """The chain from ``iv`` to ``index`` widens by sign extension only: a zero
    extension or a truncation would make the address differ from ``base + size*(iv + k)``
    where the index is negative or wide, and the range would not cover it."""
    v = index
    while v is not iv:
        op = v.owner if not isinstance(v, BlockArgument) else None
        if op is None or isinstance(op, (llvm.ZExtOp, llvm.TruncOp)):
            return False
        v = op.operands[0] if isinstance(op, llvm.SExtOp) else next(
            (o for o in op.operands if not isinstance(o.owner, llvm.ConstantOp)), None)
        if v is None:
            return False
    return True


def _iteration_space(view, iv: BlockArgument):
    """The whole iteration space ``(lb, ub)`` of the signed static worksharing loop ``iv``
    belongs to: the values stored into its bound slots just before the init call."""
    from zymase.autodiff.parallel import signed_static_init

    op = signed_static_init(view, iv)
    if op is None:
        return None
    lb, ub = (_stored_before(op, p) for p in (op.operands[4], op.operands[5]))
    return None if lb is None or ub is None else (lb, ub)


def _stored_before(call: Operation, slot: SSAValue) -> SSAValue | None:
    """The value of the last store into ``slot`` before ``call`` in its block."""
    value = None
    for op in call.parent_block().ops:
        if op is call:
            return value
        if isinstance(op, llvm.StoreOp) and op.ptr is slot:
            value = op.value
    return None


def _sliceable(v: SSAValue, stable_keys: set, depth: int = 0) -> bool:
    """``v`` is computed from the region's captured arguments by pure integer and
    address arithmetic and loads of memory in ``stable_keys``."""
    from zymase.autodiff.region_recompute import _key

    if isinstance(v, BlockArgument):
        return v.block is v.block.parent.blocks[0] and v.index >= 2
    op = v.owner
    if depth > 24:
        return False
    if isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_MINMAX):
        pass
    elif isinstance(op, (llvm.SDivOp, llvm.UDivOp)):
        # (clang's trip count at -O0 divides by the step): only by a constant that cannot trap
        from zymase.autodiff.parallel import _constant

        if _constant(op.operands[1]) in (None, 0, -1):
            return False
    elif not isinstance(op, _SLICE_OPS):
        return False
    if isinstance(op, llvm.LoadOp) and _key(op.ptr) not in stable_keys:
        return False
    return all(_sliceable(o, stable_keys, depth + 1) for o in op.operands)


def check_function(gen, region: Operation, check: _Check) -> str:
    """``<region>.disjoint.<pairs>(region's arguments) -> i1``, defined once per region and
    set of pairs (callers into which the region's function was inlined may doubt
    different pairs)."""
    from zymase.autodiff.flavor import Emitter
    from zymase.ir.llvm_ext import FreezeOp

    spelled = sorted(f"{r[0][0]}{r[1]}_{w[0][0]}{w[1]}" for r, w in check.pairs)
    name = f"{region.sym_name.data}.disjoint.{'.'.join(spelled)}"
    if gen.ctx.driver.lookup_function(name) is not None:
        return name
    inputs = list(region.function_type.inputs.data)
    entry = Block(arg_types=inputs)
    E = Emitter(gen.flavor, gen.ctx.module).at_end(entry)
    cloned: dict = {}

    def clone(v: SSAValue) -> SSAValue:
        if isinstance(v, BlockArgument):
            return entry.args[v.index]
        if v not in cloned:
            op = v.owner
            new = op.clone()
            new.operands = [clone(o) for o in op.operands]
            if "overflowFlags" in new.properties:  # evaluated outside the loop's guard: no poison
                del new.properties["overflowFlags"]
            E.insert(new)
            for old, res in zip(op.results, new.results):
                cloned[old] = res
        return cloned[v]

    def wide(v: SSAValue) -> SSAValue:
        if v.type == i64:
            return v
        return E.v(llvm.SExtOp(v, i64))

    def pick(a, b, smaller: bool):  # the unsigned smaller (or larger) of two addresses
        below = E.v(llvm.ICmpOp(a, b, IntegerAttr(_ULT, IntegerType(64))))
        return E.v(llvm.SelectOp(below, a, b) if smaller else llvm.SelectOp(below, b, a))

    ranges = {}
    for key, found in check.accesses.items():
        lo = hi = None
        for base, iv, lb, ub, k, size, c, width in found:
            addr = E.v(llvm.PtrToIntOp(clone(base), i64))
            if iv is None:
                first = E.v(llvm.AddOp(addr, E.iconst(c, i64)))
                last = E.v(llvm.AddOp(addr, E.iconst(c + width, i64)))
            else:
                first = E.v(llvm.AddOp(addr, E.v(llvm.MulOp(E.v(llvm.AddOp(wide(clone(lb)), E.iconst(k, i64))),
                                                           E.iconst(size, i64)))))
                first = E.v(llvm.AddOp(first, E.iconst(c, i64)))
                last = E.v(llvm.AddOp(addr, E.v(llvm.MulOp(E.v(llvm.AddOp(wide(clone(ub)), E.iconst(k, i64))),
                                                          E.iconst(size, i64)))))
                last = E.v(llvm.AddOp(last, E.iconst(c + width, i64)))
            lo = first if lo is None else pick(lo, first, True)
            hi = last if hi is None else pick(hi, last, False)
        ranges[key] = (lo, hi)
    ok = None
    for r, w in check.pairs:
        if not check.accesses[r] or not check.accesses[w]:
            continue  # no access: nothing to overlap
        (lo_r, hi_r), (lo_w, hi_w) = ranges[r], ranges[w]
        apart = E.v(llvm.OrOp(E.v(llvm.ICmpOp(hi_r, lo_w, IntegerAttr(_ULE, IntegerType(64)))),
                              E.v(llvm.ICmpOp(hi_w, lo_r, IntegerAttr(_ULE, IntegerType(64))))))
        ok = apart if ok is None else E.v(llvm.AndOp(ok, apart))
    if ok is None:
        ok = E.iconst(1, IntegerType(1))
    ok = E.v(FreezeOp(ok))
    E.insert(llvm.ReturnOp(ok))
    _define(gen, name, inputs, IntegerType(1), Region([entry]))
    return name


def _define(gen, name: str, inputs, output, body: Region) -> None:
    fop = llvm.FuncOp(name, llvm.LLVMFunctionType(inputs, output or llvm.LLVMVoidType()),
                      linkage=llvm.LinkageAttr("internal"), body=body)
    fop.properties["passthrough"] = _always_inline()
    gen.ctx.module.body.block.add_op(fop)
    gen.ctx.driver.symbols[name] = fop


def _always_inline():
    from zymase.ir import ArrayAttr, StringAttr

    return ArrayAttr([StringAttr("alwaysinline")])


def _dispatch(gen, name: str, inputs: list, fast: tuple | None, slow: tuple) -> str:
    """``name(i1 ok, inputs...)``: calls ``fast = (callee, argument indices)`` when ``ok``
    (nothing when ``fast`` is None), else ``slow``."""
    from zymase.autodiff.flavor import Emitter

    if gen.ctx.driver.lookup_function(name) is not None:
        return name
    entry = Block(arg_types=[IntegerType(1), *inputs])
    then, other = Block(), Block()
    for block, target in ((then, fast), (other, slow)):
        E = Emitter(gen.flavor, gen.ctx.module).at_end(block)
        if target is not None:
            callee, idx = target
            E.insert(llvm.CallOp(callee, *(entry.args[1 + i] for i in idx)))
        E.insert(llvm.ReturnOp(None))
    entry.add_op(llvm.CondBrOp(entry.args[0], then, [], other, []))
    _define(gen, name, [IntegerType(1), *inputs], None, Region([entry, then, other]))
    return name


def forward_call(gen, op: Operation, clone: Operation, check: str, aug: str, aug_args: list,
                 primal_needed: bool) -> None:
    """The caller's forward sweep: the primal region if the check holds (or nothing, when
    nothing after reads its results), else the augmented region; replaces ``clone``."""
    E = gen.E.before(clone)
    primal_args = list(clone.operands)
    ok = E.call(check, primal_args, [IntegerType(1)])[0]
    n = len(primal_args)
    inputs = [a.type for a in primal_args] + [a.type for a in aug_args]
    fast = (gen.flavor.callee(op), list(range(n))) if primal_needed else None
    name = _dispatch(gen, f"{aug}.versioned{'' if primal_needed else '.nofwd'}", inputs, fast,
                     (aug, list(range(n, n + len(aug_args)))))
    E.call(name, [ok, *primal_args, *aug_args], [])
    clone.parent_block().erase_op(clone)


def reverse_call(gen, op: Operation, check: str, combined: str, split_reverse: str, args: list) -> None:
    """The caller's reverse sweep: the region's combined derivative if the check holds,
    else its split reverse (both take ``args``)."""
    E = gen.E
    ok = E.call(check, [gen.primal(a) for a in gen.flavor.call_args(op)], [IntegerType(1)])[0]
    idx = list(range(len(args)))
    name = _dispatch(gen, f"{split_reverse}.versioned", [a.type for a in args], (combined, idx), (split_reverse, idx))
    E.call(name, [ok, *args], [])
