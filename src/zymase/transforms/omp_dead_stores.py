"""Drop the primal stores that a recomputed OpenMP region's reverse fork makes for no one.

The reverse sweep of a caller may fork a region's combined derivative (role
``recomputed``, ``autodiff/region_recompute.py``), in which each thread runs its
iterations again, primal stores included, before reversing them. Into a captured array
the region only writes (it never reads it back), those stores are dead when:

1. the caller's forward sweep forked the primal region with the same captured variable:
   the array already holds exactly these values, and nothing writes it between the two
   forks (the condition for recomputing); or
2. the array is a parameter of the caller that the derivative's own caller does not read
   back (``enzyme_dupnoneed``: ``dead_on_return``, and ``noalias``, so that no other
   pointer reaches it), the captured variable holding it is used only by forks of this
   region, and the caller itself never loads from it.

For a stencil or a map whose output nobody reads, the recomputation then has nothing
left to do but what the adjoint needs (LLVM deletes the arithmetic that fed the stores;
the math calls that fed only them are removed here, since LLVM keeps calls that may set
``errno``): the primal's work is not done twice, nor its output written a second time.

Runs after the enzyme pass, on the direct calls ``transforms/openmp`` forks afterwards
(``restore_parallel_regions`` calls it first). A combined derivative called from
several places loses a store only where every call agrees.
"""

from __future__ import annotations

from zymase.analysis.cfg import CFG
from zymase.analysis.memory import args_marked, derived_uses, memory_kind, pointer_roots
from zymase.ir import BlockArgument, ModuleOp, Operation, is_side_effect_free, llvm

PRIMAL = "zymase.omp_primal"
"""On a derivative of an outlined region: the name of the region (``transforms/openmp.mark_derivative``)."""


def drop_recomputed_stores(module: ModuleOp) -> int:
    """Remove the dead primal stores of every recomputed region derivative (module
    docstring); returns how many."""
    from zymase.transforms.openmp import ROLE, is_outlined_region

    funcs = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
    derivatives = {name: f for name, f in funcs.items() if is_outlined_region(f) and f.body.blocks
                   and getattr(f.attributes.get(ROLE), "data", None) == "recomputed" and PRIMAL in f.attributes}
    if not derivatives:
        return 0
    sites: dict[str, list] = {name: [] for name in derivatives}
    for caller in funcs.values():
        for op in caller.walk():
            if isinstance(op, llvm.CallOp) and _callee(op) in sites:
                sites[_callee(op)].append((caller, op))
    removed = 0
    for name, fn in derivatives.items():
        settled = None
        for caller, call in sites[name]:
            here = _settled_arguments(caller, call, fn.attributes[PRIMAL].data)
            settled = here if settled is None else settled & here
        dropped = sum(_remove_stores_through(fn, fn.body.blocks[0].args[k]) for k in sorted(settled or ()))
        if dropped:
            _drop_unused_math(fn, funcs)
        removed += dropped
    return removed


def _callee(op: Operation) -> str | None:
    callee = getattr(op, "callee", None)
    return callee.root_reference.data if callee is not None else None


def _settled_arguments(caller: Operation, call: Operation, primal: str) -> set[int]:
    """Positions of ``call``'s arguments that are captured variables whose array the
    caller does not need written again (cases 1 and 2 of the module docstring)."""
    args = list(call.operands)
    forks = [op for op in caller.walk() if isinstance(op, llvm.CallOp) and _callee(op) == primal]
    cfg = None
    out = set()
    for k, v in enumerate(args):
        if not isinstance(v.type, llvm.LLVMPointerType) or isinstance(v, BlockArgument) or memory_kind(
                v.owner) != "alloca":
            continue
        before = [f for f in forks if any(a is v for a in f.operands)]
        if before:
            cfg = cfg or CFG.build(caller.body)
            if any(_runs_before(cfg, f, call) for f in before):
                out.add(k)
                continue
        if _unread_parameter(caller, v, primal, call):
            out.add(k)
    return out


def _runs_before(cfg: CFG, first: Operation, then: Operation) -> bool:
    a, b = first.parent_block(), then.parent_block()
    if a is b:
        ops = list(a.ops)
        return ops.index(first) < ops.index(then)
    return cfg.dominates(a, b)


def _unread_parameter(caller: Operation, slot, primal: str, call: Operation) -> bool:
    """Case 2: captured variable ``slot`` holds (one store) a ``dead_on_return``,
    ``noalias`` parameter of ``caller`` whose memory the caller never loads, and only
    forks of the region (primal or ``call``'s derivative) use the variable."""
    stored = None
    for use in slot.uses:
        user = use.operation
        if isinstance(user, llvm.StoreOp) and user.ptr is slot and user.value is not slot and stored is None:
            stored = user.value
        elif not (_is_lifetime(user) or (isinstance(user, llvm.CallOp) and _callee(user) in (primal, _callee(call)))):
            return False
    if stored is None:
        return False
    entry = caller.body.blocks[0]
    cfg = CFG.build(caller.body)

    def incoming(arg: BlockArgument) -> list:
        return [_successor_operands(e.src.last_op)[e.slot][arg.index] for e in cfg.preds[arg.block]]

    roots = pointer_roots(stored, entry, incoming)
    if roots is None or len(roots) != 1:
        return False
    (param,) = roots
    if not isinstance(param, BlockArgument) or param.block is not entry:
        return False
    if param.index not in args_marked(caller, "llvm.dead_on_return") & args_marked(caller, "llvm.noalias"):
        return False
    for ptr, op in derived_uses(param, _successor_operands):
        if isinstance(op, llvm.StoreOp) and op.ptr is ptr and op.value is not ptr:
            continue  # a store into it
        if isinstance(op, llvm.StoreOp) and op.value is ptr and op.ptr is slot:
            continue  # the captured variable's store
        if isinstance(op, llvm.ICmpOp) or _is_lifetime(op):
            continue
        return False  # a load, a call or another escape
    return True


def _remove_stores_through(fn: Operation, param: BlockArgument) -> int:
    """Remove the stores of ``fn`` into the array behind captured variable ``param``,
    when ``fn`` only loads the array's address from it and only stores through that
    address (it never reads the array)."""
    loads = []
    for ptr, user in derived_uses(param, _successor_operands):
        if not (isinstance(user, llvm.LoadOp) and user.ptr is ptr and isinstance(user.results[0].type,
                                                                                llvm.LLVMPointerType)):
            return 0
        loads.append(user)
    stores = []
    for load in loads:
        for ptr, op in derived_uses(load.results[0], _successor_operands):
            if isinstance(op, llvm.StoreOp) and op.ptr is ptr and op.value is not ptr and not op.properties.get(
                    "volatile_"):
                stores.append(op)
            elif not isinstance(op, llvm.ICmpOp):
                return 0
    for op in stores:
        op.parent_block().erase_op(op)
    return len(stores)


def _drop_unused_math(fn: Operation, funcs: dict) -> None:
    """Remove what only fed the removed stores, as far as it reaches calls of declared
    math functions (with a derivative rule, no pointer operands): LLVM would delete the
    arithmetic, but keeps those calls, since they may set ``errno``, which the
    recomputation need not set again (the engine recomputes such calls freely:
    ``region_recompute._pure_math``)."""
    from zymase.autodiff.registry import REGISTRY, load_all_rules
    from zymase.autodiff.tape import is_pure

    load_all_rules()

    def math_call(op: Operation) -> bool:
        name = _callee(op) if isinstance(op, llvm.CallOp) else None
        return (name is not None and not name.startswith("lgamma") and name in REGISTRY.by_function
                and not (name in funcs and funcs[name].body.blocks)
                and not any(isinstance(o.type, llvm.LLVMPointerType) for o in op.operands))

    work = list(fn.walk())
    while work:
        op = work.pop()
        if op.parent is None or not op.results or any(r.uses for r in op.results):
            continue
        if not (math_call(op) or is_side_effect_free(op) or is_pure(op)):
            continue
        operands = [o.owner for o in op.operands if isinstance(o.owner, Operation)]
        op.parent_block().erase_op(op)
        work.extend(operands)


def _is_lifetime(op: Operation) -> bool:
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith("llvm.lifetime")


def _successor_operands(term: Operation):
    from zymase.autodiff.flavor import LLVM

    return LLVM.successor_operands(term)
