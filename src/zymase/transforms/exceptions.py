"""C++ exceptions around differentiated code.

zymase differentiates the paths on which nothing throws; an exception thrown while a
derivative runs ends the program with a clear message instead of unwinding into the
caller with a half-computed derivative. Three rewrites do that:

* :func:`lower_invokes` (in the bodies the engine differentiates, ``autodiff.common.prepare``
  and the inliner): ``invoke`` becomes a ``call`` and a branch to the normal destination; the
  landing pads, reachable only by unwinding, are dropped with every block no longer
  reachable. A derivative has no landing pads, so whatever is thrown in it unwinds out of it.
* :func:`call_marker_invokes` (before ``llvm.markers.lower_markers``): an ``__enzyme_*`` call
  that C++ wrote as an ``invoke`` (inside ``try`` or in a scope with destructors) becomes a
  call, so the marker lowering sees the ordinary form.
* :func:`guard_derivatives` (after the enzyme pass, in modules that use exceptions): each
  call from the user's code to a derivative goes through a guard, an ``invoke`` of the
  derivative whose landing pad catches everything, writes "zymase: error: an exception was
  thrown through differentiated code '<function>'" to stderr and aborts.
"""

from __future__ import annotations

from zymase.analysis.op_classes import is_a
from zymase.ir import (
    Block,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    Region,
    StringAttr,
    SymbolRefAttr,
    llvm,
)
from zymase.ir.llvm_eh import PERSONALITY_ATTR, InvokeOp, LandingPadOp

_I32 = IntegerType(32)
_I64 = IntegerType(64)
_PTR = llvm.LLVMPointerType()

GUARD_PREFIX = "__zymase_guard."


def _call_like(invoke: InvokeOp) -> Operation:
    """The ``llvm.call`` an invoke makes when its callee returns."""
    result_types = [r.type for r in invoke.results]
    call = llvm.CallOp.create(
        operands=list(invoke.callee_operands),
        result_types=result_types,
        properties={
            **{k: v for k, v in invoke.properties.items() if k in ("callee", "var_callee_type", "CConv")},
            "fastmathFlags": llvm.FastMathAttr(None),
            "TailCallKind": llvm.TailCallKindAttr(llvm.TailCallKind.NONE),
            "op_bundle_sizes": _no_bundles(),
            "operandSegmentSizes": _segments(len(invoke.callee_operands)),
        },
        attributes={k: v for k, v in invoke.attributes.items() if k in ("arg_attrs", "res_attrs")},
    )
    call.location = invoke.location
    return call


def _no_bundles() -> DenseArrayBase:
    return DenseArrayBase.from_list(_I32, [])


def _segments(n: int) -> DenseArrayBase:
    return DenseArrayBase.from_list(_I32, [n, 0])


def invoke_to_call(invoke: InvokeOp) -> None:
    """Replace ``invoke`` by a call and a branch to its normal destination."""
    block = invoke.parent_block()
    call = _call_like(invoke)
    block.insert_op_before(call, invoke)
    for old, new in zip(invoke.results, call.results):
        old.replace_all_uses_with(new)
    br = llvm.BrOp(invoke.normal_dest, *invoke.normal_dest_operands)
    br.location = invoke.location
    block.insert_op_before(br, invoke)
    block.erase_op(invoke)


def lower_invokes(region: Region) -> bool:
    """Every invoke in ``region`` to a call; then drop the blocks no longer reachable (the
    landing pads). Returns whether anything changed."""
    invokes = [b.last_op for b in region.blocks if isinstance(b.last_op, InvokeOp)]
    for invoke in invokes:
        invoke_to_call(invoke)
    if invokes:
        remove_unreachable_blocks(region)
    return bool(invokes)


def remove_unreachable_blocks(region: Region) -> None:
    entry = region.blocks[0]
    seen = {entry}
    stack = [entry]
    while stack:
        term = stack.pop().last_op
        for succ in term.successors if term is not None else ():
            if succ not in seen:
                seen.add(succ)
                stack.append(succ)
    dead = [b for b in region.blocks if b not in seen]
    for block in dead:  # first cut every use: dead blocks may use each other's values
        for op in block.ops:
            op.drop_all_references()
    for block in dead:
        region.erase_block(block, safe_erase=False)


def call_marker_invokes(module: ModuleOp) -> None:
    """``invoke @__enzyme_autodiff(...)`` (and every other ``__enzyme_*``) to a call: the
    derivative it becomes never lets an exception out (see :func:`guard_derivatives`)."""
    for fop in module.body.block.ops:
        if not isinstance(fop, llvm.FuncOp) or not fop.body.blocks:
            continue
        changed = False
        for block in list(fop.body.blocks):
            term = block.last_op
            if isinstance(term, InvokeOp) and term.callee is not None \
                    and "__enzyme_" in term.callee.root_reference.data:
                invoke_to_call(term)
                changed = True
        if changed:
            remove_unreachable_blocks(fop.body)


def uses_exceptions(module: ModuleOp) -> str | None:
    """The personality function of the module's C++ code, if any function has one."""
    for fop in module.body.block.ops:
        personality = fop.attributes.get(PERSONALITY_ATTR) if isinstance(fop, llvm.FuncOp) else None
        if is_a(personality, SymbolRefAttr):
            return personality.root_reference.data
    return None


def guard_derivatives(module: ModuleOp, user_functions: set[str], personality: str) -> None:
    """Route every call from ``user_functions`` (the module's functions before the enzyme
    pass) to a derivative through a guard that turns an exception into a clear error."""
    symbols = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
    guards: dict[str, str] = {}
    for name in user_functions:
        fop = symbols.get(name)
        if fop is None or not fop.body.blocks:
            continue
        for op in fop.body.walk():
            if not isinstance(op, llvm.CallOp) or op.callee is None:
                continue
            callee = op.callee.root_reference.data
            if callee in user_functions or callee not in symbols or not symbols[callee].body.blocks:
                continue
            guard = guards.get(callee)
            if guard is None:
                guard = guards[callee] = _make_guard(module, symbols, symbols[callee], personality)
            op.properties["callee"] = SymbolRefAttr(guard)


def _make_guard(module: ModuleOp, symbols: dict, derivative: Operation, personality: str) -> str:
    name = GUARD_PREFIX + derivative.sym_name.data
    fn_type = derivative.function_type
    results = [] if isinstance(fn_type.output, llvm.LLVMVoidType) else [fn_type.output]
    message = _message_global(module, derivative.sym_name.data)
    entry, done, pad = Block(arg_types=fn_type.inputs.data), Block(), Block()
    invoke = InvokeOp(derivative.sym_name.data, list(entry.args), results[0] if results else None,
                      done, [], pad, [])
    entry.add_op(invoke)
    done.add_op(llvm.ReturnOp(invoke.results[0] if results else None))
    landing = LandingPadOp(llvm.LLVMStructType.from_type_list([_PTR, _I32]),
                           [llvm.ZeroOp.create(result_types=[_PTR]).results[0]], cleanup=False)
    null = landing.operands[0].owner
    pad.add_ops([null, landing])
    address = llvm.AddressOfOp(SymbolRefAttr(message[0]), _PTR)
    fd = llvm.ConstantOp(IntegerAttr(2, _I32), _I32)
    length = llvm.ConstantOp(IntegerAttr(message[1], _I64), _I64)
    write = llvm.CallOp("write", fd, address, length, return_type=_I64)
    abort = llvm.CallOp("abort")
    pad.add_ops([address, fd, length, write, abort, llvm.UnreachableOp()])
    guard = llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("internal"), body=Region([entry, done, pad]))
    guard.attributes[PERSONALITY_ATTR] = SymbolRefAttr(personality)
    module.body.block.add_op(guard)
    _declare(module, symbols, "write", llvm.LLVMFunctionType([_I32, _PTR, _I64], _I64))
    _declare(module, symbols, "abort", llvm.LLVMFunctionType([], llvm.LLVMVoidType()))
    return name


def _declare(module: ModuleOp, symbols: dict, name: str, fn_type) -> None:
    if name not in symbols:
        symbols[name] = llvm.FuncOp(name, fn_type, linkage=llvm.LinkageAttr("external"))
        module.body.block.add_op(symbols[name])


def _message_global(module: ModuleOp, derivative: str) -> tuple[str, int]:
    from zymase.llvm.demangle import demangle

    from zymase.autodiff.names import primal_of

    primal = primal_of(derivative)
    text = (f"zymase: error: an exception was thrown through differentiated code "
            f"'{demangle(primal)}'; hint: differentiated code must not throw "
            f"(zymase differentiates the paths on which nothing is thrown)\n")
    data = text.encode()
    name = f"__zymase_eh_message.{derivative}"
    module.body.block.add_op(llvm.GlobalOp(llvm.LLVMArrayType(len(data), IntegerType(8)),
                                           name, "private", constant=True, value=StringAttr(text)))
    return name, len(data)
