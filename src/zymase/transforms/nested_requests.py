"""Nested differentiation of MLIR modules: the enzyme requests in rounds, inner ones
first, and the derivatives generated in one round made differentiable for the next.

A request (``enzyme.autodiff`` / ``enzyme.fwddiff``) whose function reaches (calls,
differentiates, takes the address of) a function that holds another request waits for
that one: ``request_rounds`` orders them, and a request that reaches itself is refused.
Between rounds, ``differentiable_derivatives`` rewrites what the engine cannot
differentiate in the derivatives just generated: on the structured path the caches and
accumulators become values, iter_args and buffers (``remove-unnecessary-enzyme-ops``);
the accumulators left (``!enzyme.Gradient<T>`` cells of the CFG generator) become
rank-0 memrefs, whose loads and stores forward and reverse mode differentiate like any
memory; calls that pass memrefs to a new derivative are inlined (the memref model does
not look into callees). What stays is refused by the next round with the construct
named: the LIFO tapes (``enzyme.push``/``enzyme.pop``) of loops reversed on the CFG path.
(The C path orders its marker sites itself, ``llvm/markers.marker_rounds``, and lowers
each round to plain llvm code.)
"""

from __future__ import annotations

from zymase.errors import ZymaseError
from zymase.ir import (IndexType, IntegerType, MemRefType, ModuleOp, Operation, SymbolRefAttr, cf, func, is_float_type,
                       location_of, memref)
from zymase.ir import enzyme as ez
from zymase.ir.walk import walk_ops
from zymase.analysis.op_classes import is_a

REQUESTS = (ez.AutoDiffOp, ez.FwdDiffOp, ez.SplitDiffOp)


def enclosing_function(op: Operation) -> Operation | None:
    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        parent = parent.parent_op()
    return parent


def _functions(module: ModuleOp) -> dict[str, Operation]:
    return {op.sym_name.data: op for op in module.body.block.ops if getattr(op, "sym_name", None) is not None}


def _referenced(fop: Operation) -> set[str]:
    """The symbols the body of ``fop`` names (callees, differentiated functions, addresses)."""
    names: set[str] = set()
    for op in walk_ops(fop):
        for attr in (*op.properties.values(), *op.attributes.values()):
            if isinstance(attr, SymbolRefAttr):
                names.add(attr.root_reference.data)
    return names


def request_rounds(module: ModuleOp) -> list[list[Operation]]:
    """The module's requests grouped into rounds: a request comes after every request
    held by a function that its differentiated function reaches."""
    pending = [op for op in walk_ops(module) if is_a(op, REQUESTS)]
    if not pending:
        return []
    if len(pending) == 1 and getattr(enclosing_function(pending[0]), "sym_name", None) != pending[0].fn.root_reference:
        # the usual case on the C path (one site per round): no walk over every function; a
        # request reaching itself through calls is then refused by the generator
        return [pending]
    functions = _functions(module)
    edges = {name: _referenced(fop) for name, fop in functions.items()}
    reach: dict[str, set[str]] = {}

    def reached(name: str) -> set[str]:
        if name not in reach:
            seen, work = {name}, [name]
            while work:
                for callee in edges.get(work.pop(), ()):
                    if callee not in seen:
                        seen.add(callee)
                        work.append(callee)
            reach[name] = seen
        return reach[name]

    holder = {op: (f.sym_name.data if (f := enclosing_function(op)) is not None else None) for op in pending}
    rounds: list[list[Operation]] = []
    while pending:
        holders = {holder[op] for op in pending}
        ready = [op for op in pending if not reached(op.fn.root_reference.data) & holders]
        if not ready:
            op = pending[0]
            raise ZymaseError(
                f"'{op.fn.root_reference.data}' reaches the request that differentiates it: a derivative "
                "that would have to exist before it is generated",
                construct=f"{op.name} @{op.fn.root_reference.data}",
                function=holder[op],
                location=location_of(op),
                hint="differentiate a function that does not call (or differentiate) the function "
                "holding the request",
            )
        rounds.append(ready)
        pending = [op for op in pending if op not in ready]
    return rounds


def differentiable_derivatives(module: ModuleOp, generated: set[str]) -> None:
    """Between two rounds: the structured path's caches and accumulators made values
    and buffers, the remaining accumulators of func.func bodies made rank-0 memrefs,
    and the calls that pass memrefs to the derivatives just ``generated`` inlined (the
    engine differentiates memory through a call only when it sees the callee's body)."""
    from zymase.transforms.enzyme_cleanup import remove_unnecessary_enzyme_ops
    from zymase.transforms.lower_structured import prepare_for_differentiation

    remove_unnecessary_enzyme_ops(module)
    functions = _functions(module)
    for fop in list(module.body.block.ops):
        if isinstance(fop, func.FuncOp) and not fop.is_declaration:
            _accumulators_to_memrefs(fop)
    for fop in list(module.body.block.ops):
        if isinstance(fop, func.FuncOp) and not fop.is_declaration:
            for call in [op for op in walk_ops(fop) if isinstance(op, func.CallOp)]:
                callee = functions.get(call.callee.root_reference.data)
                if (callee is not None and callee.sym_name.data in generated
                        and any(isinstance(o.type, MemRefType) for o in call.operands)):
                    _inline(call, callee, fop)
    # an inlined CFG derivative in a function with scf ops: the module takes the CFG path
    prepare_for_differentiation(module, structured=True)


def _inline(call: func.CallOp, callee: func.FuncOp, caller: func.FuncOp) -> None:
    """Replace ``call`` by a copy of ``callee``'s body. A body of several blocks needs
    the call at the top level of ``caller`` (an scf region holds one block)."""
    body = callee.body.clone()
    blocks = list(body.blocks)
    for arg, value in zip(blocks[0].args, call.operands):
        arg.replace_all_uses_with(value)
    here = call.parent_block()
    if len(blocks) == 1:
        ret = blocks[0].last_op
        for op in list(blocks[0].ops)[:-1]:
            op.detach()
            here.insert_op_before(op, call)
        for r, v in zip(call.results, ret.operands):
            r.replace_all_uses_with(v)
        here.erase_op(call)
    elif call.parent_op() is caller:
        cont = here.split_before(call)
        for r in call.results:
            r.replace_all_uses_with(cont.insert_arg(r.type, len(cont.args)))
        cont.erase_op(call)
        for b in blocks:
            ret = b.last_op
            if isinstance(ret, func.ReturnOp):
                b.insert_op_before(cf.BranchOp(cont, *ret.operands), ret)
                b.erase_op(ret)
        for arg in reversed(list(blocks[0].args)):
            blocks[0].erase_arg(arg)
        moved = [body.detach_block(b) for b in blocks]
        caller.body.insert_block_after(moved, here)
        here.add_op(cf.BranchOp(moved[0]))
    else:
        raise ZymaseError(
            f"the derivative '{callee.sym_name.data}' has several blocks and is called inside a "
            "structured op (scf): it cannot be inlined there to be differentiated again",
            construct=f"func.call @{callee.sym_name.data}",
            function=caller.sym_name.data,
            location=location_of(call),
            hint="call the derivative outside scf regions, or write the loops of the inner "
            "function with scf (its derivative is then one block)",
        )
    # the copied body's fixed-size cells belong in the caller's entry (not in a loop)
    entry = caller.body.blocks[0]
    for op in [o for o in walk_ops(caller) if isinstance(o, memref.AllocaOp) and not o.operands]:
        if op.parent_block() is not entry:
            op.detach()
            entry.insert_op_before(op, entry.first_op)


def _accumulators_to_memrefs(fop: func.FuncOp) -> None:
    """``enzyme.init : !enzyme.Gradient<T>`` becomes a ``memref<T>`` alloca in the entry
    block, the init a store of zero where it was (it resets the cell, in a loop too),
    ``enzyme.get``/``enzyme.set`` loads and stores."""
    from zymase.autodiff.flavor import StdFlavor

    entry = fop.body.blocks[0]
    for init in [op for op in walk_ops(fop) if isinstance(op, ez.InitOp)]:
        if not isinstance(init.result.type, ez.GradientType):
            continue
        elem = init.result.type.elem
        if isinstance(elem, (IntegerType, IndexType)):
            zero = StdFlavor().iconst(0, elem)
        elif is_float_type(elem):
            zero = StdFlavor().const(0.0, elem)
        else:
            continue  # an accumulator of another type: left for the next round to refuse
        cell = memref.AllocaOp.get(elem, shape=[])
        entry.insert_op_before(cell, entry.first_op)
        block = init.parent_block()
        block.insert_op_before(zero, init)
        block.insert_op_before(memref.StoreOp.get(zero.results[0], cell.memref, []), init)
        for use in list(init.result.uses):
            user = use.operation
            if isinstance(user, ez.GetOp):
                load = memref.LoadOp.get(cell.memref, [])
                user.parent_block().insert_op_before(load, user)
                user.result.replace_all_uses_with(load.results[0])
            elif isinstance(user, ez.SetOp):
                user.parent_block().insert_op_before(memref.StoreOp.get(user.value, cell.memref, []), user)
            else:
                continue  # not an accumulator op: left for the next round to refuse
            user.parent_block().erase_op(user)
        if not init.result.uses:
            block.erase_op(init)
