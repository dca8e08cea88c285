"""The check that memory a checkpointed loop only reads is not written before its reverse
sweep (called by ``checkpoint._Outliner.run`` for each loop it outlines).

The reverse sweep recomputes the loop's iterations from snapshots of the objects it stores
to; what it only reads is read again as it is when the reverse sweep runs, so code that may
run after the loop and write it would change the recomputed iterations: a silent wrong
adjoint. Such a loop is refused, naming its line, until read memory is snapshotted too
(docs/architecture.md section 5, "Checkpointing under a tape limit").
"""

from __future__ import annotations

from zymase.autodiff.checkpoint import RECORD_ATTR, is_checkpointed_loop

#: what a call may write that it is not given: any object code elsewhere may reach
_UNSEEN = object()


def check_reads_unchanged_after(outliner, roots, exit_block) -> None:
    """The reverse sweep recomputes iterations from snapshots of the objects the loop
    stores to; memory it only reads is read again as it is when the reverse sweep
    runs. Code reachable from the loop's exit (what follows it, and an enclosing loop's
    next pass) that may write such memory would change what the recomputed iterations
    read: a silent wrong adjoint (fuzz c-ckpt seed 940001: ``x[2] = a`` after a loop
    reading ``x``). Refused until such memory is snapshotted too: an object the loop
    reads (or passes to a call) and does not store to must not be written after it,
    nor may anything be written after it through a pointer whose object the analysis
    cannot determine; two pointer arguments may be one array unless one is ``restrict``.
    A loop that reads through a pointer whose object the analysis cannot determine
    (``q = v->data``) may read any object whose address escaped: after it, only the
    objects it stores to (snapshotted), allocations whose address never escapes and
    allocations made after the loop (when nothing after it leads back into it) may be
    written, and no call may write memory it is not given."""
    from zymase.analysis.memory import args_marked, memory_kind
    from zymase.ir import BlockArgument, llvm

    written = set(roots)

    def pointer_operands(op):
        return [v for v in op.operands if isinstance(v.type, llvm.LLVMPointerType)]

    read, reads_unknown = set(), False
    for b in outliner.ordered:
        for op in b.ops:
            kind = memory_kind(op)
            if kind == "load":
                ptrs = [op.ptr]
            elif kind == "memcpy":
                ptrs = [op.operands[1]]
            elif isinstance(op, (llvm.CallOp, llvm.CallIntrinsicOp)) and kind not in ("memset",):
                ptrs = pointer_operands(op)
            else:
                continue
            for p in ptrs:
                found = outliner._roots(p)
                reads_unknown |= found is None
                read.update(r for r in found or () if r not in written)
    if not read and not reads_unknown:
        return
    entry, noalias = outliner.region.blocks[0], args_marked(outliner.fop, "llvm.noalias")

    def may_alias(a, b) -> bool:
        # the same object (a global by its name), or two pointer arguments neither of
        # which is noalias (restrict): the caller may pass one array twice
        if a is b or (isinstance(a, str) and a == b):
            return True
        return (all(isinstance(v, BlockArgument) and v.block is entry for v in (a, b))
                and a.index not in noalias and b.index not in noalias)

    after, work, reenters = set(), [exit_block], False
    while work:
        b = work.pop()
        if b in outliner.body:
            reenters = True
        if b in after or b in outliner.body:
            continue
        after.add(b)
        work.extend(e.dst for e in outliner.cfg.succs[b])
    # (only what may run before the reverse sweep counts: not a path that cannot return,
    # such as the error exit of an indirect call, write and abort)
    after &= _may_return(outliner)
    # whether an object may be written by code that does not see this function's
    # values: through a pointer of undetermined object, by a callee not given it
    reachable = _reachable_unseen(outliner, written, after, reenters)
    unseen_read = reads_unknown or any(reachable(r) for r in read)
    hint = ("copy what the loop reads into an array the loop itself writes (or that nothing after the loop "
            "changes), or raise the tape limit")
    for b in outliner.region.blocks:
        if b not in after:
            continue
        for op in b.ops:
            kind = memory_kind(op)
            # the objects each write may write into (None: unknown, _UNSEEN: any that
            # code elsewhere may reach)
            if kind == "store":
                writes = [outliner._roots(op.ptr)]
            elif kind in ("memcpy", "memset"):
                writes = [outliner._roots(op.operands[0])]
            elif isinstance(op, llvm.CallOp) and kind in (None, "call_rule", "realloc"):  # (BLAS writes)
                writes = [outliner._roots(p) for p in pointer_operands(op)]
                if unseen_read:
                    writes.append(_written_not_given(outliner, op))
            else:
                continue
            for found in writes:
                if found is _UNSEEN:
                    known = any(reachable(r) for r in read)
                    unknown = reads_unknown
                else:
                    known = bool(read) if found is None else any(may_alias(w, r) for w in found for r in read)
                    unknown = reads_unknown and (found is None or any(reachable(w) for w in found))
                if not known and not unknown:
                    continue
                what = ("memory it reads (and does not write)" if known else
                        "memory it may read through a pointer whose object the analysis cannot determine")
                outliner._refuse(f"{what} is written after it, so the reverse sweep would recompute its "
                             "iterations from the changed values", op, hint)


def _may_return(outliner) -> set:
    """The blocks of the function from which a return is reachable (not those whose
    every path ends in ``unreachable``, after ``abort`` or ``exit``)."""
    from zymase.ir import llvm

    work = [b for b in outliner.region.blocks if not outliner.cfg.succs[b]
            and not isinstance(outliner.cfg.terminator(b), llvm.UnreachableOp)]
    found: set = set()
    while work:
        b = work.pop()
        if b not in found:
            found.add(b)
            work.extend(e.src for e in outliner.cfg.preds[b])
    return found


def _reachable_unseen(outliner, written, after, reenters):
    """Whether an object (a root of ``pointer_roots``) may be reached by code that does
    not see this function's SSA values (a pointer of undetermined object, a callee
    writing memory it is not given), for the check above: not an object the loop stores
    to (snapshotted, so it does not matter), a constant global, an allocation whose
    address never escapes (a pointer loaded from memory, returned by a call or made
    from an integer cannot point into it), or one made after the loop when nothing
    after it leads back into it (``after``, ``reenters``)."""
    from zymase.analysis.memory import address_escapes, memory_kind
    from zymase.ir import BlockArgument, llvm

    def may_read(root) -> bool:
        if root in written or (not isinstance(root, (str, BlockArgument)) and RECORD_ATTR in root.attributes):
            return False
        if isinstance(root, str):
            glob = outliner.ctx.driver.lookup_function(root)
            return not (isinstance(glob, llvm.GlobalOp) and glob.constant is not None)
        if isinstance(root, BlockArgument) or memory_kind(root) not in ("alloca", "malloc", "calloc"):
            return True  # (an argument's memory, or an allocation the analysis does not follow)
        if not reenters and root.parent_block() in after:
            return False
        return address_escapes(root, outliner.flavor.successor_operands)

    return may_read


def _written_not_given(outliner, op):
    """What call ``op`` may write other than what its pointer operands point into:
    ``_UNSEEN`` (globals, objects whose address escaped) for a defined function that
    writes memory (after inlining, a recursive one; not an outlined loop, which writes
    its records and the objects it is given) and a declaration whose attributes allow
    it (``Context.call_writes_unseen``), the global ``signgam`` for ``lgamma``, else
    nothing (a math function with a rule, ``printf``)."""
    from zymase.analysis.memory import callee_name

    callee = outliner.ctx.defined_function(op)
    if is_checkpointed_loop(callee):
        return set()
    if callee is not None:
        return _UNSEEN if outliner.ctx.writes_memory(callee) else set()
    if (callee_name(op) or "").startswith("lgamma") and outliner.ctx.rule_for(op) is not None:
        return {"signgam"}  # (lgamma sets signgam: writes it and errno only)
    return _UNSEEN if outliner.ctx.call_writes_unseen(op) else set()
