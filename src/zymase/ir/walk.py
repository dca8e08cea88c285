"""Walking the ops nested in an op as ``Operation.walk()`` does (pre-order, forward),
without one generator per op, region and block.

xDSL's walk nests a generator for every op, region and block it enters, so that each op
of a function's body comes out through six generator frames of a module's walk. The
passes that look at a whole module (marker sites, annotations, known and constant
callees, the nested requests, the dead marker globals) walk it about a dozen times per
``zymase cc`` build (issue 29). :func:`walk_ops` keeps one explicit stack instead.

It gives the ops xDSL's walk gives, in its order, and reads the IR when xDSL's does, so
that a caller that changes the IR while walking sees what it saw before: an op's
successor in its block (and a block's in its region) is read before the op (the block)
is handed out, so erasing the op goes on with its successor and ops inserted after it
are not visited; an op's regions are read once the caller has seen the op.
``tests/python/test_ir_walk.py`` compares the two, mutations included.
"""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.ir import Operation


def walk_ops(root: Operation) -> Iterator[Operation]:
    """``root.walk()``: ``root`` and every op nested in it, pre-order. ``root`` must be an
    op: a region or block has a ``walk()`` of its own, which does not give itself."""
    if not isinstance(root, Operation):
        raise TypeError(f"walk_ops takes an operation, not {type(root).__name__} (use its walk())")
    yield root
    regions = root.regions
    if not regions:
        return
    # the stack holds, for each level entered, [regions left, next block, next op]
    stack = [[iter(regions), None, None]]
    while stack:
        level = stack[-1]
        op = level[2]
        while op is not None:
            following = op._next_op
            yield op
            if op.regions:
                level[2] = following
                stack.append([iter(op.regions), None, None])
                break
            op = following
        else:
            # the block is done: its successor in the region, or the next region
            level[2] = None
            block = level[1]
            if block is None:
                region = next(level[0], None)
                if region is None:
                    stack.pop()
                    continue
                block = region._first_block
                if block is None:
                    continue
            level[1] = block._next_block
            level[2] = block._first_op
