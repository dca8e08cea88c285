"""Pointers the memory model cannot give shadows, where they may reach active data: refused.

Two kinds, both silent wrong derivatives before session 30: pointers made from integers
(:func:`refuse_integer_addresses_of_active_memory`) and pointers returned by calls of
functions that stay calls (recursive ones: :func:`refuse_returned_pointers_to_active_memory`).

The memory model gives a pointer its shadow by following it back through GEPs, casts,
selects and phis to an argument or an allocation. An address computed as an integer,
``(double *)((uintptr_t)x + 8 * k)``, has no such path: loads through it would read
active data as if it were constant (``sum x[n-1-i] * x[i]`` written that way got half its
gradient, silently) and stores through it would leave the shadow untouched. A pointer
made from an integer is refused when that integer may carry the address of memory with a
shadow: a ``ptrtoint`` of a shadowed pointer, or an integer loaded from memory or returned
by a call (where any address may have been kept), through integer arithmetic, casts,
selects and phis. Integers bounded to other sources pass: constants (Numba's addresses of
its own runtime objects), addresses of memory without shadows, conversions of floats, and
integer arguments (their activity is the caller's declaration). For that last case the
other side is checked: the address of shadowed memory, as an integer, may be compared,
subtracted, tested for alignment or made the byte count of a memset/memcpy/memmove (a
std::vector's tail filled: session 35), but not passed to a call, stored or returned (the
code that turns it back into a pointer would not know it is active); kept in a stack slot
that is only loaded back as an integer (and may carry lifetime markers), the loads are
followed instead (a reverse sweep caches the addresses of Numba's overlap test of a slice
assignment, as in `np.diff`, in such slots, and forward mode over it, a Hessian, met them:
session 32). A slot read back as a pointer is refused (session 33).
"""

from __future__ import annotations

from zymase.analysis.memory import derived_uses, holds_pointer, is_marker, memory_kind
from zymase.analysis.op_classes import is_a
from zymase.errors import ZymaseError
from zymase.ir import BlockArgument, IntegerType, SSAValue, llvm, location_of
from zymase.transforms.inline import INLINE_LIMIT


def refuse_integer_addresses_of_active_memory(blocks, info, incoming, successor_operands, fname: str) -> None:
    """Raise for the first ``inttoptr`` in ``blocks`` whose pointer may be used to
    reach active data (:func:`_may_move_derivatives`) and whose integer may be the address of shadowed memory (``info.shadowed``,
    after the activity analysis). ``incoming(arg)`` lists a block argument's values."""
    if not info.shadowed:
        return
    entry = blocks[0] if blocks else None
    verdicts: dict = {}

    def may_hold_active_address(v: SSAValue) -> bool:
        work, seen = [v], set()
        while work:
            x = work.pop()
            if x in seen:
                continue
            seen.add(x)
            if x in verdicts:
                if verdicts[x]:
                    return True
                continue
            if isinstance(x, BlockArgument):
                if x.block is not entry:
                    work.extend(incoming(x))
                continue
            op = x.owner
            if isinstance(op, llvm.PtrToIntOp):
                if op.operands[0] in info.shadowed:
                    return True
                continue
            if isinstance(op, (llvm.LoadOp, llvm.CallOp, llvm.CallIntrinsicOp, llvm.InlineAsmOp)):
                return True
            # arithmetic, casts, selects: where their integer operands come from (a
            # float converted to an integer, a constant, a compare of floats: none)
            work.extend(o for o in op.operands if isinstance(o.type, IntegerType))
        return False

    for b in blocks:
        for op in b.ops:
            if is_a(op, llvm.PtrToIntOp) and op.operands[0] in info.shadowed:
                _refuse_escaping_address(op, incoming, successor_operands, fname)
            if not is_a(op, llvm.IntToPtrOp):
                continue
            used = next((user for _, user in derived_uses(op.results[0], successor_operands)
                         if _may_move_derivatives(user)), None)
            if used is None:
                continue
            answer = verdicts[op.operands[0]] = may_hold_active_address(op.operands[0])
            if answer:
                raise ZymaseError(
                    "a pointer is made from an integer that may hold the address of memory being differentiated; "
                    "zymase follows derivatives through pointers, not through integers, and would lose them",
                    construct="llvm.inttoptr (a cast of an integer to a pointer)",
                    function=fname,
                    location=location_of(used) or location_of(op),
                    hint="index the array or offset the pointer itself (p + k, &p[k]) instead of computing its "
                    "address as an integer (uintptr_t)",
                )


def _may_move_derivatives(user) -> bool:
    """Whether a use of a pointer may read or write active data through it: anything
    but a compare, a cast back to an integer, a marker and a load of a plain integer
    (Numba's typed List reads its length through ``numba_list_size_address``'s integer)."""
    if isinstance(user, (llvm.PtrToIntOp, llvm.ICmpOp)) or is_marker(user):
        return False
    if isinstance(user, llvm.LoadOp):
        return not isinstance(user.results[0].type, IntegerType)
    return True


def _refuse_escaping_address(cast, incoming, successor_operands, fname: str) -> None:
    """The integer ``cast`` makes of a shadowed pointer, followed through integer
    arithmetic, casts, selects and phis, must not leave the function's SSA values: a
    call, a store or a return handing it on is refused (a compare, a difference of
    addresses or an alignment test is fine; a pointer made from it here is the caller's
    check)."""
    work, seen = [cast.results[0]], set()
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        for use in v.uses:
            user = use.operation
            if isinstance(user, (llvm.ICmpOp, llvm.IntToPtrOp)) or is_marker(user):
                continue
            if user.successors:
                if isinstance(user, (llvm.BrOp, llvm.CondBrOp)) or user.name == "llvm.switch":
                    for block, values in zip(user.successors, successor_operands(user)):
                        work.extend(block.args[k] for k, x in enumerate(values) if x is v)
                    continue
            elif isinstance(user, llvm.SubOp) and _is_distance(user, incoming):
                continue  # end - begin: a size (std::vector hands it to operator delete)
            elif _memory_intrinsic_length(user, v):
                continue  # a byte count of memset/memcpy/memmove (std::vector's fill, insert)
            elif _integer_arithmetic_intrinsic(user):
                # smin(address / 8 & 1, n): Eigen's first_aligned counts the scalars before
                # the first aligned packet; an integer like the others, followed on
                work.extend(r for r in user.results if isinstance(r.type, IntegerType))
                continue
            elif isinstance(user, llvm.StoreOp) and (loads := _reloaded_from_stack(user, v)) is not None:
                # kept in a stack slot that is only read back (a reverse sweep's cache of
                # an overlap test's address, differentiated again): follow the reads
                work.extend(loads)
                continue
            elif not isinstance(user, (llvm.CallOp, llvm.CallIntrinsicOp, llvm.InlineAsmOp, llvm.StoreOp,
                                       llvm.ReturnOp)):
                work.extend(r for r in user.results if isinstance(r.type, IntegerType))
                continue
            raise ZymaseError(
                "the address of memory being differentiated is handed on as an integer; zymase follows "
                "derivatives through pointers, not through integers, and the code that makes it a pointer "
                "again would lose them",
                construct=f"llvm.ptrtoint used by {user.name}" + (
                    " (into a local read back as a pointer: a union, a cast of its address)"
                    if _read_back_as_pointer(user) else ""),
                function=fname,
                location=location_of(user) or location_of(cast),
                hint="pass the pointer itself (double *), not its address as an integer (uintptr_t)",
            )


#: intrinsics that are integer arithmetic (an address passed to one stays in SSA values)
_INTEGER_INTRINSICS = ("llvm.smin.", "llvm.smax.", "llvm.umin.", "llvm.umax.", "llvm.abs.", "llvm.ctlz.",
                       "llvm.cttz.", "llvm.ctpop.")


def _memory_intrinsic_length(op, v: SSAValue) -> bool:
    """Whether ``v`` is used by ``op`` only as the byte count of ``llvm.memset``,
    ``llvm.memcpy`` or ``llvm.memmove``: a size computed from addresses (the end of a
    std::vector's storage minus a position in it), which no code can make a pointer of."""
    if not (isinstance(op, llvm.CallIntrinsicOp)
            and op.intrin.data.startswith(("llvm.memset.", "llvm.memcpy.", "llvm.memmove."))):
        return False
    return all(k == 2 for k, x in enumerate(op.operands) if x is v)


def _integer_arithmetic_intrinsic(op) -> bool:
    return isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(_INTEGER_INTRINSICS)


def _reloaded_from_stack(store, v: SSAValue) -> list[SSAValue] | None:
    """The values loaded back from the stack slot ``store`` writes ``v`` into, when the
    slot is an ``alloca`` used only by loads of integers, stores into it and lifetime
    markers (so the integer stays in this function's SSA values); otherwise None. A load
    of a pointer from the slot (a union of ``uintptr_t`` and ``double *``,
    ``*(double **)&a``, an integer stored over a pointer variable; Eigen's ``Transpose``
    object at -O2) is the integer made a pointer again without an ``inttoptr``: the
    memory model finds no shadow for it, so what is read through it would be constant
    (session 33)."""
    if store.value is not v or store.ptr is v or not isinstance(store.ptr.owner, llvm.AllocaOp):
        return None
    loads = []
    for use in store.ptr.uses:
        user = use.operation
        if isinstance(user, llvm.LoadOp):
            if not isinstance(user.results[0].type, IntegerType):
                return None
            loads.append(user.results[0])
        elif not (is_marker(user) or isinstance(user, llvm.StoreOp) and user.ptr is store.ptr
                  and user.value is not store.ptr):
            return None
    return loads


def _read_back_as_pointer(store) -> bool:
    """Whether ``store`` writes into a stack slot that is also loaded as a pointer."""
    return (isinstance(store, llvm.StoreOp) and isinstance(store.ptr.owner, llvm.AllocaOp)
            and any(isinstance(u.operation, llvm.LoadOp) and holds_pointer(u.operation.results[0].type)
                    for u in store.ptr.uses))


def _is_distance(sub, incoming) -> bool:
    """Whether ``a - b`` subtracts one address from another: both sides are a
    ``ptrtoint``, through casts, phis and constant offsets (a distance in bytes, not an
    address). A block argument that also receives other values counts if one of them is
    an address (a vector's capacity is end - begin, or 0 when it never allocated)."""
    return all(_from_address(o, incoming) for o in sub.operands)


def _from_address(v: SSAValue, incoming) -> bool:
    work, seen = [v], set()
    while work:
        x = work.pop()
        if x in seen:
            continue
        seen.add(x)
        if isinstance(x, BlockArgument):
            work.extend(incoming(x))
            continue
        op = x.owner
        if isinstance(op, llvm.PtrToIntOp):
            return True
        if isinstance(op, (llvm.ZExtOp, llvm.SExtOp, llvm.TruncOp)):
            work.append(op.operands[0])
        elif isinstance(op, (llvm.AddOp, llvm.SubOp)) and isinstance(op.operands[1].owner, llvm.ConstantOp):
            work.append(op.operands[0])  # an address moved by a constant number of bytes
    return False


def refuse_returned_pointers_to_active_memory(blocks, info, successor_operands, is_differentiated_call,
                                              fname: str) -> None:
    """Raise for a call of a function differentiated on its own (a recursive one: the
    others are inlined before AD) that returns a pointer when active data flows into the
    call and the pointer is used to reach memory: a derivative call returns no shadow
    for a pointer result, so what is read through it (a tree the callee built from
    ``x``, a pointer into ``x``) would be taken as constant (zero derivative, silently).
    ``is_differentiated_call(op)`` says whether a call is of such a function."""
    for b in blocks:
        for op in b.ops:
            if not is_a(op, llvm.CallOp) or not any(holds_pointer(r.type) for r in op.results):
                continue
            if not any(o in info.varied or o in info.shadowed for o in op.operands):
                continue
            if not is_differentiated_call(op):
                continue
            used = next((user for r in op.results for _, user in derived_uses(r, successor_operands)
                         if _may_move_derivatives(user) and memory_kind(user) != "free"), None)
            if used is None:
                continue
            name = op.callee.root_reference.data
            raise ZymaseError(
                f"'{name}' is given active data and returns a pointer, which is used to reach memory; "
                f"'{name}' is differentiated as a call of its own (it is recursive, or '{fname}' makes "
                f"more than {INLINE_LIMIT} calls to inline), and a derivative "
                "call returns no shadow for a pointer result, so the derivatives through it would be lost",
                construct=f"llvm.call @{name} (a pointer result)",
                function=fname,
                location=location_of(op),
                hint=f"let '{name}' return its result through a pointer argument the caller passes (enzyme_dup "
                "memory), or write it without recursion so that it is inlined",
            )
