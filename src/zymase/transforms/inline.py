"""Inlining of ``llvm.call`` to defined functions, inside one function body.

Used before differentiation for calls that pass or return pointers: the callee's
memory effects then become part of the differentiated body, so shadow memory and the
tape see them in program order. Recursive callees are not inlined: the engine splits
them into an augmented forward pass and a reverse pass (``Driver.split``), as Enzyme does
for every callee.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from zymase.ir import Block, BlockArgument, Operation, Region, fast_ops, in_system_header, llvm
from zymase.llvm.noalias_scopes import freshen_scopes

_copies = itertools.count()


def _calls(fop: Operation, lookup: Callable[[Operation], Operation | None]):
    for op in fop.walk():
        callee = lookup(op)
        if callee is not None:
            yield callee


def is_recursive(fop: Operation, lookup: Callable[[Operation], Operation | None]) -> bool:
    """Whether ``fop`` can reach itself through calls to defined functions."""
    seen: set[Operation] = set()
    work = list(_calls(fop, lookup))
    while work:
        f = work.pop()
        if f is fop:
            return True
        if f in seen:
            continue
        seen.add(f)
        work.extend(_calls(f, lookup))
    return False


def continuation_after(call: Operation) -> Block:
    """A new block (not yet in the region) holding the ops after ``call``, with one
    argument per result of the call for the paths that replace it to branch to."""
    cont = Block(arg_types=[r.type for r in call.results])
    after = []
    op = call.next_op
    while op is not None:
        after.append(op)
        op = op.next_op
    for op in after:
        op.detach()
        cont.add_op(op)
    return cont


def inline_call(call: Operation, callee: Operation) -> list[Block]:
    """Replace ``call`` (in some region) by a copy of ``callee``'s body; returns the
    copied blocks (they follow the call's block, before the continuation)."""
    block = call.parent_block()
    region = block.parent
    cont = continuation_after(call)
    region.insert_block_after(cont, block)
    # The callee's blocks, between the call's block and the continuation.
    body = callee.body.clone()
    # its invokes become calls, as in the body it is inlined into (common.prepare)
    from zymase.transforms.exceptions import lower_invokes

    lower_invokes(body)
    # a byval parameter the callee writes to is the callee's own copy, not the caller's
    from zymase.autodiff.flavor import LLVM
    from zymase.transforms.byval_copies import copy_byval_params

    copy_byval_params(callee, body.blocks[0], LLVM.successor_operands)
    new_blocks = [body.detach_block(b) for b in list(body.blocks)]
    if not in_system_header(call.location):
        # a message about the callee's code names the user's line that called it, not a
        # line of the standard library's headers (as the reader does for clang's inlining)
        for b in new_blocks:
            for op in b.walk():
                if in_system_header(op.location):
                    op.location = call.location
    # each inlined copy keeps its own restrict promises (as LLVM's inliner clones scopes)
    freshen_scopes((op for b in new_blocks for op in b.ops), f"inl{next(_copies)}", declared_only=False)
    hoist_allocas(new_blocks[0], region.blocks[0])
    region.insert_block_after(new_blocks, block)
    for b in new_blocks:
        term = b.last_op
        if isinstance(term, llvm.ReturnOp):
            vals = [term.arg] if term.arg is not None else []
            br = fast_ops.br(cont, vals)
            br.location = term.location
            b.insert_op_before(br, term)
            b.erase_op(term)
    for old, new in zip(call.results, cont.args):
        old.replace_all_uses_with(new)
    # The callee's entry has no predecessor but this branch: its arguments are the call's
    # operands, used directly (a block argument inside a loop would look like a value
    # that changes from iteration to iteration, and reverse mode would tape it).
    entry = new_blocks[0]
    for arg, value in zip(list(entry.args), call.operands):
        arg.replace_all_uses_with(value)
    for arg in reversed(list(entry.args)):
        entry.erase_arg(arg)
    br = fast_ops.br(entry)
    br.location = call.location
    block.insert_op_before(br, call)
    block.erase_op(call)
    return new_blocks


def hoist_allocas(block: Block, entry: Block) -> None:
    """Move the fixed-size allocas of ``block`` (which runs at most once per call: a
    callee's entry, being inlined) to the start of the function's ``entry`` block. LLVM
    treats an alloca anywhere else as dynamic: inside a loop, each iteration would take
    new stack space and never give it back (and overflow the stack on long loops)."""
    first = entry.first_op
    for op in list(block.ops):
        if not isinstance(op, llvm.AllocaOp):
            continue
        size = op.operands[0]
        if isinstance(size, BlockArgument) or not isinstance(size.owner, llvm.ConstantOp):
            continue
        if size.owner.parent_block() is block:
            const = size.owner.clone()
            entry.insert_op_before(const, first)
            op.operands = [const.results[0]]
        op.detach()
        entry.insert_op_before(op, first)


def is_variadic(fop: Operation) -> bool:
    """A ``...`` function reads its extra arguments through ``va_start`` from the
    caller's frame: its body cannot stand in for the call (LLVM does not inline
    these either)."""
    return bool(getattr(getattr(fop, "function_type", None), "is_variadic", False))


#: at most this many calls inlined into one function per round: bounds a call graph whose
#: paths multiply (each inlined body's calls are inlined in turn). C++ at -O0 needs a few
#: hundred (std::vector::insert: about 350); a call left over is differentiated as a
#: call of its own, like a recursive one
INLINE_LIMIT = 2000


def inline_calls(region: Region, lookup: Callable[[Operation], Operation | None],
                 want: Callable[[Operation, Operation], bool], limit: int = INLINE_LIMIT) -> int:
    """Inline, repeatedly, every call in ``region`` to a defined, non-recursive
    function for which ``want(call, callee)`` holds; returns how many.

    One pass in program order: the ops of an inlined body are scanned right after the
    call they replace (so calls it contains are inlined too), then the rest of the
    caller, so each op is looked at once (rescanning from the top after every inlining
    made this quadratic in the size of the function)."""
    count = 0
    recursive: dict[Operation, bool] = {}
    pending = [op for block in region.blocks for op in block.ops]
    position = 0
    while position < len(pending) and count < limit:
        op = pending[position]
        position += 1
        callee = lookup(op)
        if callee is None or is_variadic(callee) or not want(op, callee):
            continue
        if callee not in recursive:
            recursive[callee] = is_recursive(callee, lookup)
        if recursive[callee]:
            continue
        inlined = inline_call(op, callee)
        count += 1
        pending[position:position] = [o for block in inlined for o in block.ops]
    return count
