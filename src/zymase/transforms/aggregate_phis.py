"""Pointers taken out of a phi of aggregates become phis of those pointers, before AD.

Numba's ``_copy_to_fortran_order`` (called by ``np.linalg.svd``, ``qr``, ``inv``, ... on
an array whose layout it only knows at run time, a slice such as ``A[:, :3]``) chooses
between two array structs at run time; after SROA that choice is a phi of the whole
struct, and the data pointer the LAPACK helper writes is an ``extractvalue`` of it. The
memory analysis follows pointers through phis, selects and address arithmetic, not
through aggregates, so it could not give that memory a shadow. Here, in the body about
to be differentiated (a copy: the primal function is untouched), every field extracted
from a phi of structs that hold pointers becomes a phi of the field itself: extracted in
each predecessor, and read straight from the ``insertvalue`` that put it into the struct
when there is one (``extractvalue(phi({p, ...}, {q, ...}), 4)`` becomes ``phi(p, q)``).
The struct phis left without uses go, and the insertvalue chains that only fed them (a
shadowed pointer put into a struct is refused by ``refusals.reject_unsupported``). The
primal computes the same values. A struct phi with other uses (stored, passed to a call)
stays, and so does that refusal.
"""

from __future__ import annotations

from zymase.analysis.memory import holds_pointer
from zymase.ir import Block, BlockArgument, DenseArrayBase, Operation, Region, SSAValue, i64, llvm
from zymase.analysis.op_classes import is_a


def _is_pointer(v: SSAValue) -> bool:
    return isinstance(v.type, llvm.LLVMPointerType)


def _phi_of_aggregate(op) -> bool:
    """An extractvalue from a block argument (a phi) of a non-entry block whose struct
    holds a pointer."""
    if not is_a(op, llvm.ExtractValueOp):
        return False
    c = op.container
    return (isinstance(c, BlockArgument) and c.block.parent is not None and c.block is not c.block.parent.blocks[0]
            and holds_pointer(c.type))


def _field(value: SSAValue, position: tuple[int, ...], result_type, term) -> SSAValue:
    """Field ``position`` of the aggregate ``value`` as seen at ``term``, read from the
    insertvalue chain that built it: the value inserted there; an element of a value
    inserted around it; else an extractvalue inserted before ``term``, with the inserts
    made inside the field applied again (so that the chain, which may carry a pointer,
    is not used any more)."""
    v = value
    inner: list[tuple[tuple[int, ...], SSAValue]] = []  # inserts inside the field, latest first
    while isinstance(v.owner, llvm.InsertValueOp):
        at = tuple(v.owner.position.get_values())
        if at == position:
            base = v.owner.value
            break
        if at[:len(position)] == position:  # an element inside the field
            inner.append((at[len(position):], v.owner.value))
        elif position[:len(at)] == at:  # the field inside the inserted value
            base = _field(v.owner.value, position[len(at):], result_type, term)
            break
        v = v.owner.container
    else:
        ev = llvm.ExtractValueOp(DenseArrayBase.from_list(i64, list(position)), v, result_type)
        term.parent_block().insert_op_before(ev, term)
        base = ev.results[0]
    for at, element in reversed(inner):
        iv = llvm.InsertValueOp(DenseArrayBase.from_list(i64, list(at)), base, element)
        term.parent_block().insert_op_before(iv, term)
        base = iv.results[0]
    return base


def scatter_pointer_extracts(region: Region, flavor) -> None:
    """Rewrite every field extracted from a phi of structs holding pointers in ``region``
    as a phi of the fields (see the module docstring); new extracts from phis are handled
    in turn, then the phis and struct chains left unused are removed."""
    work = [op for block in region.blocks for op in block.ops if _phi_of_aggregate(op)]
    made: dict[tuple[BlockArgument, tuple[int, ...]], BlockArgument] = {}
    while work:
        ev = work.pop()
        if ev.parent_block() is None:
            continue
        arg: BlockArgument = ev.container
        position = tuple(ev.position.get_values())
        key = (arg, position)
        if key not in made:
            made[key] = _add_field_phi(region, arg, position, ev.results[0].type, flavor, work)
        ev.results[0].replace_all_uses_with(made[key])
        ev.parent_block().erase_op(ev)
    if made:
        _drop_unused_phis(region, flavor, {arg for arg, _ in made})


def _drop_unused_phis(region: Region, flavor, phis: set) -> None:
    """The struct phis in ``phis`` nothing uses any more, with their incoming values, and
    then the insertvalue/extractvalue ops nothing uses, repeatedly."""
    while True:
        dead = [a for a in phis if a.block is not None and not a.uses]
        if not dead:
            break
        for arg in sorted(dead, key=lambda a: -a.index):  # later indices first
            block = arg.block
            _edit_edges_into(region, block, flavor, lambda passed, term, i=arg.index: passed.pop(i))
            phis.discard(arg)
            block.erase_arg(arg)
        changed = True
        while changed:
            changed = False
            for block in region.blocks:
                for op in list(block.ops):
                    if isinstance(op, (llvm.InsertValueOp, llvm.ExtractValueOp)) and not op.results[0].uses:
                        block.erase_op(op)
                        changed = True


def _add_field_phi(region: Region, arg: BlockArgument, position, result_type, flavor, work) -> BlockArgument:
    block: Block = arg.block
    new_arg = block.insert_arg(result_type, len(block.args))

    def pass_field(passed: list, term: Operation) -> None:
        field = _field(passed[arg.index], position, result_type, term)
        passed.append(field)
        if _phi_of_aggregate(field.owner):
            work.append(field.owner)

    _edit_edges_into(region, block, flavor, pass_field)
    return new_arg


def _edit_edges_into(region: Region, block: Block, flavor, edit) -> None:
    """``edit(operands, terminator)`` on the operands each edge into ``block`` passes
    (a list changed in place), each terminator rebuilt with the edited lists."""
    for src in region.blocks:
        term = src.last_op
        if term is None or not any(s is block for s in term.successors):
            continue
        operands = flavor.successor_operands(term)
        for slot, succ in enumerate(term.successors):
            if succ is block:
                edit(operands[slot], term)
        new = flavor.rebuild_terminator(term, operands)
        new.successors = list(term.successors)
        src.insert_op_before(new, term)
        src.erase_op(term)
