"""Indirect calls through function pointers held in globals that never change become
direct calls, before differentiation.

``struct allocator { void *(*alloc)(size_t); void (*release)(void *); } A = {malloc,
free};`` then ``A.alloc(n)``: the call's callee is loaded from ``@A``. When ``@A``
cannot change (an LLVM ``constant``, or an internal global whose address is only ever
loaded from), the loaded value is the initializer's, and the call is a direct call to
``malloc``: memory it returns then gets a shadow like any malloc'd memory. A global that
is itself one function pointer (``static void *(*alloc)(size_t) = malloc;``, Enzyme's
metamalloc test) is read the same way. LLVM's own
optimizer does this for constant and ``static`` globals at -O1 and up; this does it at
-O0 too. A global that other code may change is left alone: what such a call returns is
refused by activity analysis (:mod:`zymase.analysis.memory`), naming the global.
"""

from __future__ import annotations

import re

from zymase.analysis.memory import is_marker
from zymase.analysis.layout import size_align, struct_offsets
from zymase.ir import Operation, llvm
from zymase.ir.walk import walk_ops
from zymase.analysis.op_classes import is_a

_FUNCTION_FIELD = re.compile(r"^ptr\s+@([-\w.$]+)$")


def _split_top_level(text: str) -> list[str] | None:
    """The comma-separated elements of an aggregate constant ``{ ... }`` / ``[ ... ]``."""
    text = text.strip()
    if len(text) < 2 or text[0] not in "{[" or text[-1] not in "}]":
        return None
    items, depth, start = [], 0, 1
    for i, ch in enumerate(text[1:-1], start=1):
        if ch in "{[(<":
            depth += 1
        elif ch in "}])>":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:-1].strip())
    return items


def function_fields(glob: Operation) -> dict[int, str]:
    """Byte offset -> function name, for the fields of ``glob``'s initializer that are
    function addresses (a struct or array of pointers, one level deep)."""
    init = glob.attributes.get("zymase.llvm_init")
    t = glob.global_type
    if init is None:
        return {}
    if isinstance(t, llvm.LLVMPointerType):
        # a single function pointer: `static void *(*alloc)(size_t) = malloc;` (Enzyme's metamalloc)
        m = _FUNCTION_FIELD.match(init.data.strip()) or _FUNCTION_FIELD.match("ptr " + init.data.strip())
        return {0: m.group(1).strip('"')} if m else {}
    items = _split_top_level(init.data)
    if items is None:
        return {}
    if isinstance(t, llvm.LLVMStructType):
        offsets = struct_offsets(t)
    elif isinstance(t, llvm.LLVMArrayType):
        offsets = [i * size_align(t.type)[0] for i in range(t.size.data)]
    else:
        return {}
    out = {}
    for offset, item in zip(offsets, items):
        m = _FUNCTION_FIELD.match(item)
        if m:
            out[offset] = m.group(1).strip('"')
    return out


def _load_offset(ptr) -> tuple[str, int] | None:
    """(global name, byte offset) when ``ptr`` is ``@G`` or a constant GEP of it."""
    owner = ptr.owner
    if isinstance(owner, llvm.AddressOfOp):
        return owner.global_name.root_reference.data, 0
    if isinstance(owner, llvm.GEPOp) and isinstance(owner.operands[0].owner, llvm.AddressOfOp):
        from zymase.analysis.type_deductions import gep_offset

        off = gep_offset(owner)
        if off is None or off[1] != 0:
            return None
        return owner.operands[0].owner.global_name.root_reference.data, off[0]
    return None


def _only_read(module: Operation, name: str) -> bool:
    """Whether every use of ``@name`` in the module loads from it (directly or through
    constant GEPs): nothing in this module writes it or lets its address escape."""
    for op in walk_ops(module):
        if not (isinstance(op, llvm.AddressOfOp) and op.global_name.root_reference.data == name):
            continue
        work = [op.results[0]]
        while work:
            v = work.pop()
            for use in v.uses:
                user = use.operation
                if isinstance(user, llvm.LoadOp) or is_marker(user):
                    continue
                if isinstance(user, llvm.GEPOp) and use.index == 0:
                    work.append(user.results[0])
                    continue
                return False
    return True


def never_written(module: Operation, glob: Operation) -> bool:
    """An LLVM ``constant``, or an internal/private global only ever loaded from."""
    if glob.properties.get("constant") is not None:
        return True
    linkage = glob.linkage.linkage.data if glob.linkage is not None else "external"
    return linkage in ("internal", "private") and _only_read(module, glob.sym_name.data)


def callee_source(call: Operation) -> tuple[str, int] | None:
    """For an indirect call whose function pointer is loaded from a global at a
    constant offset: (global name, byte offset)."""
    if not isinstance(call, llvm.CallOp) or call.callee is not None or not call.operands:
        return None
    fptr = call.operands[0]
    if not isinstance(fptr.owner, llvm.LoadOp):
        return None
    return _load_offset(fptr.owner.ptr)


def resolve_known_callees(module: Operation) -> int:
    """Turn each indirect call through a function pointer read from an unchanging
    global into a direct call; returns how many."""
    globals_ = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.GlobalOp)}
    count = 0
    for call in [op for op in walk_ops(module) if is_a(op, llvm.CallOp) and op.callee is None]:
        where = callee_source(call)
        if where is None or where[0] not in globals_:
            continue
        glob = globals_[where[0]]
        target = function_fields(glob).get(where[1])
        if target is None or not never_written(module, glob):
            continue
        make_direct(call, target)
        count += 1
    return count


def make_direct(call: Operation, target: str) -> None:
    """Replace the indirect ``call`` by a direct call of ``@target`` with the same
    arguments, flags and attributes."""
    direct = llvm.CallOp(target, *call.operands[1:],
                         return_type=call.results[0].type if call.results else None)
    for key in ("fastmathFlags", "CConv", "TailCallKind"):
        if key in call.properties:
            direct.properties[key] = call.properties[key]
    direct.attributes.update(call.attributes)
    direct.location = call.location
    block = call.parent_block()
    block.insert_op_before(direct, call)
    for old, new in zip(call.results, direct.results):
        old.replace_all_uses_with(new)
    block.erase_op(call)
