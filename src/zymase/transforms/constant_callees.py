"""Differentiated functions specialized on the functions passed to them as constants.

``__enzyme_autodiff((void*)apply, enzyme_const, f, x)`` where ``apply(double (*g)(double),
double x)`` calls ``g(x)``: the call through ``g`` is indirect, and the AD engine refuses
indirect calls on active data. At this call site ``g`` is always ``@f``, so the request
is pointed at a private copy of ``apply`` in which the calls through that parameter call
``@f`` directly (the parameter stays, and keeps its other uses). This is how the C++
header ``<enzyme/enzyme>`` calls a plain function from the wrapper that also returns
its primal value. Runs on the ``enzyme.autodiff`` / ``enzyme.fwddiff`` requests that
``llvm/markers`` made, before the enzyme pass.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FlatSymbolRefAttr, StringAttr

from zymase.ir import Operation, llvm
from zymase.ir import enzyme as ez
from zymase.ir.enzyme import Activity
from zymase.ir.walk import walk_ops
from zymase.transforms.known_callees import make_direct
from zymase.analysis.op_classes import is_a


def _function_named_by(value, functions: dict[str, Operation]) -> str | None:
    """The function (defined, or declared like libm's ``sin``) ``value`` is the address of."""
    owner = value.owner
    if isinstance(owner, llvm.AddressOfOp):
        name = owner.global_name.root_reference.data
        if name in functions:
            return name
    return None


def _constant_functions(request: Operation, functions: dict[str, Operation]) -> dict[int, str]:
    """Parameter index -> function, for the constant arguments of ``request`` that are
    function addresses."""
    out: dict[int, str] = {}
    inputs = list(request.inputs)
    k = 0
    for j, act in enumerate(request.arg_activities):
        if k >= len(inputs):
            break
        if act == Activity.CONST:
            name = _function_named_by(inputs[k], functions)
            if name is not None:
                out[j] = name
        k += 1 + (request.lanes if act in (Activity.DUP, Activity.DUPNONEED) else 0)  # a shadow per lane
    return out


def _spilled_copies(arg, entry) -> list:
    """The loads of ``arg`` from the stack slot it is spilled to, unoptimized code's way
    of keeping a parameter: an alloca stored to once, with ``arg``, in the entry block,
    and otherwise only loaded from."""
    copies = []
    for use in arg.uses:
        store = use.operation
        if not (isinstance(store, llvm.StoreOp) and use.index == 0 and store.parent_block() is entry):
            continue
        slot = store.ptr
        if not isinstance(slot.owner, llvm.AllocaOp):
            continue
        others = [u.operation for u in slot.uses if u.operation is not store]
        if all(isinstance(o, llvm.LoadOp) for o in others):
            copies.extend(o.results[0] for o in others)
    return copies


def _calls_through(fop: Operation, params: dict[int, str]) -> list[tuple[Operation, str]]:
    """The indirect calls in ``fop`` whose callee is one of ``params`` (or its spilled
    copy), with the function each then calls."""
    entry = fop.body.blocks[0]
    by_arg = {}
    for j, name in params.items():
        if j < len(entry.args):
            by_arg[entry.args[j]] = name
            by_arg.update((copy, name) for copy in _spilled_copies(entry.args[j], entry))
    found = []
    for op in walk_ops(fop):
        if is_a(op, llvm.CallOp) and op.callee is None and op.operands and op.operands[0] in by_arg:
            found.append((op, by_arg[op.operands[0]]))
    return found


def _matches(call: Operation, target: Operation) -> bool:
    ftype = target.function_type
    if ftype.is_variadic:
        return False
    args = [o.type for o in call.operands[1:]]
    result = call.results[0].type if call.results else llvm.LLVMVoidType()
    return list(ftype.inputs.data) == args and ftype.output == result


def specialize_constant_callees(module: Operation) -> int:
    """Point each request whose constant function arguments its function calls at a
    specialized copy; returns how many copies were made."""
    functions = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
    copies: dict[tuple[str, tuple[tuple[int, str], ...]], str] = {}
    for request in [op for op in walk_ops(module) if is_a(op, (ez.AutoDiffOp, ez.FwdDiffOp))]:
        fname = request.fn.root_reference.data
        fop = functions.get(fname)
        if fop is None or not fop.body.blocks:
            continue
        params = _constant_functions(request, functions)
        calls = [(call, target) for call, target in _calls_through(fop, params) if _matches(call, functions[target])]
        if not calls:
            continue
        used = {j: name for j, name in params.items() if name in {t for _, t in calls}}
        key = (fname, tuple(sorted(used.items())))
        if key not in copies:
            copy = fop.clone()
            name = f"{fname}.calls.{'.'.join(n for _, n in sorted(used.items()))}"
            while name in functions:
                name += ".1"
            copy.sym_name = StringAttr(name)
            copy.linkage = llvm.LinkageAttr("internal")
            module.body.block.insert_op_after(copy, fop)
            functions[name] = copy
            for call, target in _calls_through(copy, used):
                if _matches(call, functions[target]):
                    make_direct(call, target)
            copies[key] = name
        request.properties["fn"] = FlatSymbolRefAttr(copies[key])
    return len(copies)
