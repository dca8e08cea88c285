"""Alias scopes for the loads and stores of differentiated code.

LLVM sees less than we do in the functions AD generates: the objects a function
allocates itself are distinct from each other and from everything it receives, but
LLVM only knows that for ``malloc``/``alloca`` results it can see. Numba's arrays come
from ``NRT_MemInfo_alloc_aligned`` through ``NRT_MemInfo_data_fast``, opaque calls; so
do the shadow arrays reverse mode allocates next to them, and the tape's buffers come
out of a runtime helper. Without knowing them apart LLVM keeps every accumulation into
a shadow (``dx[j] += ...`` in a loop) in memory, and reloads values across every tape
store.

This pass gives each load and store whose pointer has known roots
(:func:`zymase.analysis.memory.pointer_roots`) LLVM's scoped-noalias metadata: one
scope per object the function allocates on the heap, one per ``noalias`` argument, one shared by
all other arguments and globals (which may alias each other), one shared by the shadow
arguments (which may alias each other as their primals do, but never a primal: Enzyme's
contract, checked by the Python API; in vector mode one per lane, since lanes never
share memory), and one per tape buffer
(the lowering marks tape accesses with ``zymase.tape_buffer``). An access is in the
scopes of its roots and declared not to alias the others. Accesses with unknown roots
get nothing, and so stay "may alias anything", as do calls.

Runs on llvm-dialect functions after AD and lowering; the writer prints the attributes
``zymase.alias_scope`` / ``zymase.noalias`` as ``!alias.scope`` / ``!noalias``.
"""

from __future__ import annotations

from zymase.analysis.memory import args_marked, memory_kind, pointer_roots
from zymase.autodiff.names import SHADOW_ARGS, SHADOW_LANES
from zymase.ir import ArrayAttr, BlockArgument, ModuleOp, StringAttr, llvm
from zymase.transforms.lower_tape import TAPE_BUFFER
from zymase.analysis.op_classes import is_a

ALIAS_SCOPE = "zymase.alias_scope"
NOALIAS = "zymase.noalias"


def annotate_alias_scopes(module: ModuleOp) -> None:
    for op in module.body.block.ops:
        if isinstance(op, llvm.FuncOp) and op.body.blocks:
            _annotate(op)


def _annotate(fn: llvm.FuncOp) -> None:
    from zymase.analysis.cfg import CFG
    from zymase.autodiff.flavor import LLVMFlavor

    region = fn.body
    entry = region.blocks[0]
    cfg = CFG.edges_only(region)  # (only the predecessors are asked for)
    flavor = LLVMFlavor()

    def incoming(arg: BlockArgument):
        return [flavor.successor_operands(e.src.last_op)[e.slot][arg.index] for e in cfg.preds[arg.block]]

    name = fn.sym_name.data
    noalias_args = args_marked(fn, "llvm.noalias")
    shadow_args = _shadow_args(fn)
    accesses: list[tuple] = []
    scope_of: dict = {}  # root -> scope name

    def scope(root) -> str:
        if root not in scope_of:
            if isinstance(root, BlockArgument) and root.index in shadow_args and root.index not in noalias_args:
                lane = shadow_args[root.index]
                key = "outside.shadows" + (f".lane{lane}" if lane else "")
            elif isinstance(root, BlockArgument) and root.index not in noalias_args or isinstance(root, str):
                key = "outside"
            elif isinstance(root, BlockArgument):
                key = f"arg{root.index}"
            elif isinstance(root, tuple):  # a lane's part of a lane block (autodiff/lane_blocks.py)
                key = f"object{len(scope_of)}.lane{root[1]}"
            else:
                key = f"object{len(scope_of)}"
            scope_of[root] = f"{name}.{key}"
        return scope_of[root]

    for block in region.blocks:
        for op in block.ops:
            # (loads and stores by memory_kind, which knows an op's class after its first:
            # two isinstance checks against xDSL's op classes, ABCs, for every op of
            # every function cost more than the accesses' own work)
            if memory_kind(op) not in ("load", "store"):
                continue
            ptr = op.ptr
            tape = op.attributes.get(TAPE_BUFFER)
            if is_a(tape, StringAttr):
                accesses.append((op, {f"{name}.tape.{tape.data}"}))
                continue
            roots = pointer_roots(ptr, entry, incoming, parts=True)
            # stack slots are left to LLVM, which tells them apart by itself (and
            # promotes most of them, the adjoint accumulators, to registers)
            if roots and not any(is_a(r, llvm.AllocaOp) for r in roots):
                accesses.append((op, {scope(r) for r in roots}))
    every = sorted({s for _, scopes in accesses for s in scopes})
    if len(every) < 2:
        return
    # attributes are immutable: one pair of lists per set of scopes, shared by its accesses
    # (a new list per access built accesses x scopes attributes, each verified by xDSL)
    named = {s: StringAttr(s) for s in every}
    lists: dict[frozenset[str], tuple[ArrayAttr, ArrayAttr]] = {}
    for op, scopes in accesses:
        key = frozenset(scopes)
        pair = lists.get(key)
        if pair is None:
            pair = lists[key] = (ArrayAttr([named[s] for s in sorted(scopes)]),
                                 ArrayAttr([named[s] for s in every if s not in scopes]))
        op.attributes[ALIAS_SCOPE], op.attributes[NOALIAS] = pair


def _shadow_args(fn: llvm.FuncOp) -> dict[int, int]:
    """The shadow arguments' positions, each with its lane (0 outside vector mode)."""
    attr = fn.attributes.get(SHADOW_ARGS)
    if attr is None:
        return {}
    lanes = fn.attributes.get(SHADOW_LANES)
    positions = [a.value.data for a in attr.data]
    lane_of = [k.value.data for k in lanes.data] if lanes is not None else [0] * len(positions)
    return dict(zip(positions, lane_of))
