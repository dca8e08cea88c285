"""Indirect calls in a body about to be differentiated become a choice among the
functions they can reach, each called directly.

A call through a function pointer (a virtual call at -O0, ``std::shared_ptr``'s disposal
through the control block's vtable, a callback stored in a struct) names no callee, so
no derivative can be built for it. But such a pointer can only hold the address of a
function whose address the program takes somewhere: in a vtable or another global's
initializer, or with ``llvm.mlir.addressof`` in code. So in the *prepared copy* of a
body (``autodiff.common.prepare``; the primal function keeps its indirect call), the call
becomes

    if (fp == &A) r = A(args); else if (fp == &B) r = B(args); ... else report and abort

over the address-taken functions whose signature matches the call. The branches are
direct calls, which the engine differentiates like any other (inlined, split, or by a
rule for a library function), and the pointer itself is a constant the reverse sweep
reads back. A pointer to a function the module never takes the address of (one from a
library, ``dlsym``) cannot be differentiated: the derivative reports it and aborts, at
run time, instead of returning a wrong result. When no function matches at all the call
is left as it is and refused at compile time (``autodiff.common``).
"""

from __future__ import annotations

import re

from zymase.analysis.op_classes import is_a
from zymase.ir import (Block, IntegerAttr, IntegerType, Operation, Region, StringAttr, SymbolRefAttr, UnitAttr, llvm,
                       location_of)

_PTR = llvm.LLVMPointerType()
_I32 = IntegerType(32)
_I64 = IntegerType(64)
#: marks the addresses a dispatch compares against (they are not the program's own:
#: derivatives generated earlier hold them, and must not widen later dispatches)
DISPATCH_ATTR = "zymase.dispatch"
_SYMBOL = re.compile(r'@("(?:[^"\\]|\\.)*"|[-\w.$]+)')


def _global_inits(module: Operation):
    for op in module.body.block.ops:
        if isinstance(op, llvm.GlobalOp):
            init = op.attributes.get("zymase.llvm_init")
            if isinstance(init, StringAttr):
                yield op.sym_name.data, init.data


def _is_vtable(name: str) -> bool:
    return name.startswith("_ZTV")  # Itanium C++ ABI: vtables of every class


def _vtable_arrays(init: str) -> list[list[str]]:
    """The ``[N x ptr] [...]`` arrays of a vtable group's initializer, as element lists."""
    from zymase.transforms.known_callees import _split_top_level

    arrays = []
    for m in re.finditer(r"\[\d+ x ptr\] \[", init):
        start = m.end() - 1
        depth = 0
        for end in range(start, len(init)):
            depth += init[end] in "[({<"
            depth -= init[end] in "])}>"
            if depth == 0:
                arrays.append(_split_top_level(init[start:end + 1]) or [])
                break
    return arrays


def _vtable_slots(module: Operation) -> dict[int, set[str]]:
    """Byte offset from a vtable's address point -> the names in that slot of any
    vtable. The address point follows the RTTI pointer (the offset-to-top and the
    ``_ZTI`` typeinfo come first); without RTTI, it is the third element."""
    slots: dict[int, set[str]] = {}
    for name, init in _global_inits(module):
        if not _is_vtable(name):
            continue
        for items in _vtable_arrays(init):
            points = [i + 1 for i, item in enumerate(items) if re.match(r"ptr @_ZTI", item)] or [2]
            for point in points:
                for k, item in enumerate(items[point:]):
                    m = re.match(r'ptr @("(?:[^"\\]|\\.)*"|[-\w.$]+)$', item)
                    if m:
                        slots.setdefault(8 * k, set()).add(m.group(1).strip('"'))
    return slots


def _taken_outside_vtables(module: Operation) -> set[str]:
    """Names whose address is taken in code (``llvm.mlir.addressof``) or in the
    initializer of a global other than a vtable (a table of callbacks)."""
    names = {op.global_name.root_reference.data for op in module.walk()
             if isinstance(op, llvm.AddressOfOp) and DISPATCH_ATTR not in op.attributes
             and any(not _names_for_enzyme(u.operation) for u in op.results[0].uses)}
    for name, init in _global_inits(module):
        if not _is_vtable(name):
            names.update(m.strip('"') for m in _SYMBOL.findall(init))
    return names


def _names_for_enzyme(op: Operation) -> bool:
    """A use of a function's address that only names it to Enzyme's interface (the
    function ``__enzyme_autodiff`` differentiates), not a call target."""
    callee = op.callee.root_reference.data if isinstance(op, llvm.CallOp) and op.callee is not None else ""
    return op.dialect_name() == "enzyme" or "__enzyme_" in callee


def _vtable_slot(call: Operation) -> int | None:
    """For a virtual call, ``load (gep (load object), c)`` called: the slot offset ``c``."""
    from zymase.analysis.type_deductions import gep_offset

    fptr = call.operands[0]
    if not isinstance(fptr.owner, llvm.LoadOp):
        return None
    slot = fptr.owner.ptr
    offset = 0
    if isinstance(slot.owner, llvm.GEPOp):
        off = gep_offset(slot.owner)
        if off is None or off[1] != 0:
            return None
        offset, slot = off[0], slot.owner.operands[0]
    return offset if isinstance(slot.owner, llvm.LoadOp) else None


def possible_callees(module: Operation, call: Operation, cache: dict) -> list[Operation]:
    """The functions (defined or declared) an indirect call can reach: those whose
    address the program takes outside vtables and, for what may be a virtual call, those
    in the same slot of some vtable. zymase's own functions and Enzyme's markers are left
    out."""
    if "functions" not in cache:
        cache["functions"] = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
        cache["slots"] = _vtable_slots(module)
        cache["taken"] = _taken_outside_vtables(module)
    # a load through a loaded pointer may be a vtable slot or a struct's function
    # pointer field (nothing tells them apart without types): both kinds of target
    slot = _vtable_slot(call)
    names = cache["taken"] | (cache["slots"].get(slot, set()) if slot is not None else set())
    functions = cache["functions"]
    return [functions[n] for n in sorted(names)
            if n in functions and not n.startswith(("__enzyme", "__zymase")) and "__enzyme_" not in n
            and n != "__cxa_pure_virtual" and _signature_matches(functions[n], call)]


def _signature_matches(fop: Operation, call: Operation) -> bool:
    ftype = fop.function_type
    if ftype.is_variadic or call.properties.get("var_callee_type") is not None:
        return False
    inputs = list(ftype.inputs.data)
    args = list(call.operands[1:])
    if len(inputs) != len(args) or any(t != a.type for t, a in zip(inputs, args)):
        return False
    output = ftype.output
    if isinstance(output, llvm.LLVMVoidType):
        return not call.results
    return len(call.results) == 1 and call.results[0].type == output


def dispatch_indirect_calls(region: Region, module: Operation, function_name: str) -> int:
    """Turn every indirect call in ``region`` that some address-taken function matches
    into a compare-and-call chain (module docstring); returns how many."""
    calls = [op for block in region.blocks for op in block.ops
             if is_a(op, llvm.CallOp) and op.callee is None and op.operands]
    if not calls:
        return 0
    cache: dict = {}
    count = 0
    for call in calls:
        targets = possible_callees(module, call, cache)
        if targets:
            _dispatch(call, targets, module, function_name)
            count += 1
    return count


def _dispatch(call: Operation, targets: list[Operation], module: Operation, function_name: str) -> None:
    from zymase.transforms.inline import continuation_after

    block = call.parent_block()
    region = block.parent
    cont = continuation_after(call)
    for old, new in zip(call.results, cont.args):
        old.replace_all_uses_with(new)
    fptr, args = call.operands[0], list(call.operands[1:])
    new_blocks: list[Block] = []
    test_block = block
    for target in targets:
        name = target.sym_name.data
        address = llvm.AddressOfOp(SymbolRefAttr(name), _PTR)
        address.attributes[DISPATCH_ATTR] = UnitAttr()
        same = llvm.ICmpOp(fptr, address.results[0], IntegerAttr(0, _I64))  # eq
        hit, miss = Block(), Block()
        branch = llvm.CondBrOp(same.results[0], hit, [], miss, [])
        for o in (address, same, branch):
            o.location = call.location
        if test_block is block:
            block.insert_op_before(address, call)
            block.insert_op_before(same, call)
            block.insert_op_before(branch, call)
        else:
            test_block.add_ops([address, same, branch])
        direct = llvm.CallOp(name, *args, return_type=call.results[0].type if call.results else None)
        for key in ("fastmathFlags", "CConv"):
            if key in call.properties:
                direct.properties[key] = call.properties[key]
        direct.attributes.update(call.attributes)
        direct.location = call.location
        jump = llvm.BrOp(cont, *direct.results)
        jump.location = call.location
        hit.add_ops([direct, jump])
        new_blocks += [hit, miss]
        test_block = miss
    test_block.add_ops(_report_and_abort(module, call, function_name))
    block.erase_op(call)
    region.insert_block_after([*new_blocks, cont], block)


def _report_and_abort(module: Operation, call: Operation, function_name: str) -> list[Operation]:
    from zymase.llvm.demangle import demangle

    where = location_of(call)
    text = (f"zymase: error: {where + ': ' if where else ''}an indirect call in differentiated code "
            f"'{demangle(function_name)}' reached a function whose address the program does not take "
            "where zymase can see it (a library function, or one found at run time), so it has no "
            "derivative; hint: call the function directly, or take its address in this file\n")
    data = text.encode()
    symbols = {op.sym_name.data for op in module.body.block.ops if isinstance(op, (llvm.FuncOp, llvm.GlobalOp))}
    k = 0
    while f"__zymase_indirect_message.{k}" in symbols:
        k += 1
    name = f"__zymase_indirect_message.{k}"
    module.body.block.add_op(llvm.GlobalOp(llvm.LLVMArrayType(len(data), IntegerType(8)), name, "private",
                                           constant=True, value=StringAttr(text)))
    for fname, ftype in (("write", llvm.LLVMFunctionType([_I32, _PTR, _I64], _I64)),
                         ("abort", llvm.LLVMFunctionType([], llvm.LLVMVoidType()))):
        if fname not in symbols:
            module.body.block.add_op(llvm.FuncOp(fname, ftype, linkage=llvm.LinkageAttr("external")))
    address = llvm.AddressOfOp(SymbolRefAttr(name), _PTR)
    fd = llvm.ConstantOp(IntegerAttr(2, _I32), _I32)
    length = llvm.ConstantOp(IntegerAttr(len(data), _I64), _I64)
    write = llvm.CallOp("write", fd, address, length, return_type=_I64)
    abort = llvm.CallOp("abort")
    ops = [address, fd, length, write, abort, llvm.UnreachableOp()]
    for o in ops:
        o.location = call.location
    return ops


def lower_virtual_reverse(module: Operation) -> None:
    """``__enzyme_virtualreverse(p)`` is ``p``. Enzyme users call it to make the shadow of
    a function pointer or vtable pointer (``d_obj``'s vptr, a callback field of a shadow
    struct) and store the result in shadow memory, where only Enzyme reads it. zymase's
    derivatives choose the callee from the primal pointer (above) and never call through
    a shadow, so any valid pointer serves as the shadow; the one given is kept."""
    from zymase.errors import ZymaseError
    from zymase.llvm.demangle import demangle

    declarations = [op for op in module.body.block.ops
                    if isinstance(op, llvm.FuncOp) and "__enzyme_virtualreverse" in op.sym_name.data]
    for decl in declarations:
        name = decl.sym_name.data
        for op in list(module.walk()):
            refers = isinstance(op, llvm.AddressOfOp) and op.global_name.root_reference.data == name
            if not (refers or (isinstance(op, llvm.CallOp) and op.callee is not None
                               and op.callee.root_reference.data == name)):
                continue
            args = list(op.operands)
            if refers or len(args) != 1 or not isinstance(args[0].type, llvm.LLVMPointerType) or (
                    op.results and op.results[0].type != args[0].type):
                raise ZymaseError(
                    f"'{demangle(name)}' takes one function or vtable pointer and returns its shadow; "
                    "this use is not a call of that form",
                    construct=demangle(name), location=location_of(op),
                    hint="declare it as void *__enzyme_virtualreverse(void *) and call it directly")
            for r in op.results:
                r.replace_all_uses_with(args[0])
            op.parent_block().erase_op(op)
        module.body.block.erase_op(decl)
