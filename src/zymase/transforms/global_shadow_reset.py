"""Zero the shadows of globals where the program asks for a derivative.

A global that holds active data gets one shadow global for the whole program
(``autodiff/memory._shadow_global``). A derivative treats a global's value at the call as
a constant, so its shadow must be zero there: otherwise what a reverse call left in it
(the adjoint of that initial value) or a forward call (its tangent) is added into the
next call of a function that reads the global before writing it (state carried across
calls, ``acc += x[i]``), silently. The shadows are zeroed before each call of a
derivative the program asked for (a marker; in split mode at ``__enzyme_augmentfwd``, for
the reverse sweep that follows), not in a callee's derivative, which shares them with its
caller's sweep. The shadows of pointer fields are left alone (a pointer's shadow set by
one call may be meant for the next). A global of bytes (``unsigned char store[64]`` used
as storage for doubles) may hold either: its whole shadow is zeroed unless a derivative
stores a pointer, or copies memory, into it (then it is left alone, as before session 31,
when such globals were never zeroed and a stale adjoint doubled the next call's gradient).
When every pointer stored into it is at a constant offset (and no copy writes it), the
shadow is zeroed but for those pointers' 8 bytes (session 32: a double kept in such a
global from one call to the next carried the previous call's adjoint or tangent);
otherwise the floats the derivatives load or store at constant offsets are zeroed (a
double of state next to an arena of nodes), and floats only accessed at offsets known at
run time are left as they are (a gap).
"""

from __future__ import annotations

from zymase.analysis.layout import size_align, struct_offsets
from zymase.analysis.type_deductions import gep_offset
from zymase.ir import IntegerAttr, IntegerType, i1, i8, i64, is_float_type, llvm



def _data_runs(t, base: int = 0) -> list[tuple[int, int]] | None:
    """The byte ranges ``[lo, hi)`` of the float and integer fields of type ``t`` (not its
    pointers), merged where adjacent; None when ``t`` holds bytes (``i8``), which may
    hold anything."""
    if isinstance(t, llvm.LLVMStructType):
        runs: list[tuple[int, int]] = []
        for field, at in zip(t.types.data, struct_offsets(t)):
            inner = _data_runs(field, base + at)
            if inner is None:
                return None
            runs.extend(inner)
        return _merged(runs)
    if isinstance(t, llvm.LLVMArrayType):
        inner = _data_runs(t.type, 0)
        if inner is None:
            return None
        step = size_align(t.type)[0]
        if inner == [(0, step)]:  # plain elements: one run (no list of a million)
            return [(base, base + t.size.data * step)]
        return _merged([(base + k * step + lo, base + k * step + hi)
                        for k in range(t.size.data) for lo, hi in inner])
    if isinstance(t, llvm.LLVMPointerType):
        return []
    if isinstance(t, IntegerType) and t.width.data <= 8:
        return None
    if isinstance(t, IntegerType) or is_float_type(t):
        return [(base, base + size_align(t)[0])]
    return None


#: the bytes of a byte global whose types are looked up one by one (beyond: a gap)
_SCANNED_BYTES = 1 << 16


def _float_bytes(driver, names: list[str], g: llvm.GlobalOp) -> list[tuple[int, int]]:
    """The byte ranges of shadow global ``g`` that type analysis of the derivatives
    ``names`` says hold floats (their first ``_SCANNED_BYTES``)."""
    from zymase.analysis.type_tree import FLOAT_KINDS
    from zymase.analysis.types import analyze_types

    name, size = g.sym_name.data, min(size_align(g.global_type)[0], _SCANNED_BYTES)
    runs: list[tuple[int, int]] = []
    for fname in names:
        fop = driver.symbols.get(fname)
        if not isinstance(fop, llvm.FuncOp):
            continue
        addresses = [op.results[0] for op in fop.walk()
                     if isinstance(op, llvm.AddressOfOp) and op.global_name.root_reference.data == name]
        if not addresses:
            continue
        info = analyze_types(fop, driver.module, has_tbaa=driver.has_tbaa)
        for address in addresses:
            tree = info.of(address)
            start = None
            for o in range(size + 1):
                is_float = o < size and tree.at(o) in FLOAT_KINDS
                if is_float and start is None:
                    start = o
                elif not is_float and start is not None:
                    runs.append((start, o))
                    start = None
    return runs


def _around(size: int, pointer_slots: frozenset[int]) -> list[tuple[int, int]]:
    """The byte ranges of ``[0, size)`` outside the 8-byte pointers at ``pointer_slots``."""
    runs, at = [], 0
    for lo, hi in _merged([(o, o + 8) for o in pointer_slots]):
        if lo > at:
            runs.append((at, min(lo, size)))
        at = max(at, hi)
    if at < size:
        runs.append((at, size))
    return [(lo, hi) for lo, hi in runs if lo < hi]


def _merged(runs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(runs):
        if out and out[-1][1] >= lo:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def shadows_reached(driver, names: list[str]) -> list[tuple[llvm.GlobalOp, frozenset[int] | None,
                                                            list[tuple[int, int]]]]:
    """The shadow globals that the derivatives ``names`` or the functions they call take
    the address of, in the order they were made. Functions are found through the
    driver's symbols and the shadows through the ones it saw made
    (``Driver.shadow_globals``): no scan of the module per request (a program asking for
    many derivatives made that quadratic, ``tests/python/test_compile_growth.py``).
    Each with the byte offsets at which pointers are stored into it there (an empty
    set: none; None: memory is copied into it, or a pointer stored at an offset known
    only at run time), and the byte ranges they load or store floats at, at constant
    offsets."""
    made = driver.shadow_globals
    if not made:
        return []
    found: set[str] = set()
    slots: dict[str, set[int] | None] = {}
    floats: dict[str, list[tuple[int, int]]] = {}
    seen: set[str] = set()
    work = list(names)
    while work:
        fname = work.pop()
        fop = driver.symbols.get(fname)
        if fname in seen or not isinstance(fop, llvm.FuncOp):
            continue
        seen.add(fname)
        for op in fop.walk():
            if isinstance(op, llvm.AddressOfOp):
                sym = op.global_name.root_reference.data
                if sym in made:
                    found.add(sym)
                elif isinstance(driver.symbols.get(sym), llvm.FuncOp):
                    work.append(sym)
            elif isinstance(op, llvm.CallOp) and op.callee is not None:
                work.append(op.callee.root_reference.data)
            if isinstance(op, llvm.StoreOp) and isinstance(op.value.type, llvm.LLVMPointerType):
                name, offset = _global_under(op.ptr)
                if name is not None and slots.get(name, set()) is not None:
                    slots[name] = None if offset is None else slots.get(name, set()) | {offset}
            elif isinstance(op, llvm.CallIntrinsicOp) and op.intrin.data.startswith(("llvm.memcpy", "llvm.memmove")):
                name, _ = _global_under(op.operands[0])
                if name is not None:
                    slots[name] = None
            elif isinstance(op, (llvm.LoadOp, llvm.StoreOp)):
                t = op.results[0].type if isinstance(op, llvm.LoadOp) else op.value.type
                if is_float_type(t):
                    name, offset = _global_under(op.ptr)
                    if name is not None and offset is not None:
                        floats.setdefault(name, []).append((offset, offset + size_align(t)[0]))
    return [(g, None if n in slots and slots[n] is None else frozenset(slots.get(n, ())), floats.get(n, []))
            for n, g in made.items() if n in found]


def _global_under(ptr) -> tuple[str | None, int | None]:
    """The global ``ptr`` points into through GEPs, if it does, and the byte offset
    (None when not a constant)."""
    offset: int | None = 0
    while isinstance(ptr.owner, llvm.GEPOp):
        step = gep_offset(ptr.owner)
        offset = offset + step[0] if offset is not None and step is not None and step[1] == 0 else None
        ptr = ptr.owner.ptr
    owner = ptr.owner
    if isinstance(owner, llvm.AddressOfOp):
        return owner.global_name.root_reference.data, offset
    return None, None


def zero_shadows(driver, names: list[str], emit) -> None:
    """Zero the shadows of the globals the derivatives ``names`` reach (their float and
    integer fields, not their pointers), with ``emit`` (inserts an op where the program's
    call is, returns its result, if any)."""
    for g, pointer_slots, float_slots in shadows_reached(driver, names):
        runs = _data_runs(g.global_type)
        if runs is None and pointer_slots is not None:  # bytes, pointers stored at known places
            runs = _around(size_align(g.global_type)[0], pointer_slots)
        elif runs is None:
            # bytes, pointers stored at places known only at run time (an arena of nodes):
            # the floats the derivatives access at fixed places, and the bytes type analysis
            # of the derivatives says hold floats (the nodes' float fields); a forward call
            # left its tangents there, which the next reverse call's stores read back as
            # adjoints (session 32). Bytes of pointers, or of unknown type, are left.
            runs = _merged(float_slots + _float_bytes(driver, names, g))
        if not runs:
            continue
        base = emit(llvm.AddressOfOp(g.sym_name.data, llvm.LLVMPointerType()))
        zero = emit(llvm.ConstantOp(IntegerAttr(0, i8), i8))
        no = emit(llvm.ConstantOp(IntegerAttr(0, i1), i1))
        for lo, hi in runs:
            ptr = emit(llvm.GEPOp(base, [lo], i8)) if lo else base
            nbytes = emit(llvm.ConstantOp(IntegerAttr(hi - lo, i64), i64))
            emit(llvm.CallIntrinsicOp("llvm.memset.p0.i64", [ptr, zero, nbytes, no], []))
