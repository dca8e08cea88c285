"""Enzyme's activity annotations in LLVM IR: which functions and globals are inactive,
which functions behave like a libm function, read from every spelling Enzyme accepts
and recorded as attributes the AD engine reads (``autodiff/annotated_calls.py``).

Spellings read (Enzyme's C interface):

* ``__attribute__((enzyme_inactive))``, ``__attribute__((enzyme_inactive_noblock))``
  and ``__attribute__((enzyme_function_like("log")))``: ``zymase cc`` turns them into
  ``annotate(...)`` (``include/zymase/enzyme_attributes.h``), so they arrive in
  ``@llvm.global.annotations``; Enzyme's clang plugin writes ``enzyme_inactivefn``,
  ``enzyme_inactivenoblockfn`` and ``enzyme_function_like=log``, which are read too;
* registration globals, any suffix: ``void *__enzyme_inactivefn[] = {f, g}``,
  ``void *__enzyme_function_like[2] = {f, "log"}``, ``void *__enzyme_inactive_global = &g``,
  ``__enzyme_allocation_like[4]``;
* function attributes of hand-written IR (``zymase opt``): ``"enzyme_inactive"``,
  ``"enzyme_inactive_noblock"``, ``"enzyme_math"="log"``.

Each becomes the function attribute ``"enzyme_inactive"`` or ``"enzyme_math"="<name>"``
(Enzyme's own names), and the registration globals are removed.

Semantics (as Enzyme's): a call to an **inactive** function has a zero derivative: its
result is a constant, no derivative code is generated for it, it is never inlined into a
differentiated body. What it writes to memory is written by the primal program only;
zymase refuses a call that may write memory holding derivatives (the shadow would keep a
derivative the new value does not have) rather than leave it stale. ``_noblock``
differs in Enzyme only in letting LLVM inline the function before AD (the mark is then
lost); zymase keeps it out of line at every level, so it behaves like
``enzyme_inactive`` and the answer does not depend on the optimization level.
A **function_like** call is differentiated with the derivative rule of the named libm
function, evaluated at the call's own arguments and result; its body computes the
primal value only. Both kinds of function are marked ``noinline`` before the pre-AD
pipeline (:func:`protect_annotated_functions`), which would otherwise inline them and
lose the mark.

An **inactive global** (``__attribute__((enzyme_inactive))`` on a variable,
``void *__enzyme_inactive_global = (void *)&g``) holds constants as far as derivatives
go: it has no shadow, what is loaded from it is a constant, active data stored into it
drops its derivative (``analysis/memory.MemoryModel``), as in Enzyme. So that the
pre-AD pipeline does not forward a stored active value to a later load of it, its
loads and stores are made volatile before that pipeline and ordinary again after
(:func:`protect_annotated_functions`, :func:`apply_annotations`); a global whose
address is used otherwise (an array indexed, a pointer taken) is refused. The record
is the attribute :data:`INACTIVE_GLOBAL` on the ``llvm.mlir.global``.

A **custom allocator** (``__enzyme_allocation_like[4] = {alloc, (void *)size_index,
(void *)"free-args", (void *)dealloc}``) gets the function attribute
``"enzyme_allocator"="<size_index>"`` and its calls the attribute
``analysis/memory.ALLOCATION_SIZE_ARG``: they allocate like malloc of that argument
(``memory_kind``), and the allocator is not inlined. The shadow is zeroed memory from
``calloc`` of the size argument, freed with ``free`` at the allocation's mirror point in
reverse mode and, in forward mode, when the program calls the registered deallocator
(``"enzyme_deallocator"``; its calls carry ``DEALLOCATED_ARG``, the position of the ``-1``
of free-args). Enzyme instead calls the allocator and deallocator again for the shadow;
calloc/free give the same zeroed memory without running the program's allocator twice.

Not implemented here, and refused by name (``llvm/markers.py``, ``llvm/toolchain.py``):
Enzyme's other attributes (``enzyme_nofree``, ``enzyme_shouldrecompute`` ...).
"""

from __future__ import annotations

import re

from zymase.analysis.op_classes import is_a
from zymase.errors import ZymaseError
from zymase.ir import (ArrayAttr, IntegerAttr, IntegerType, ModuleOp, Operation, StringAttr, UnitAttr, i64, llvm,
                       location_of)
from zymase.ir.walk import walk_ops
# the names Enzyme's marks use, and the marks put on clang's text before the pre-AD pipeline
from zymase.llvm.pre_ad_marks import (ALLOCATOR, DEALLOCATOR, FUNCTION_LIKE, INACTIVE, INACTIVE_GLOBAL,
                                      _INACTIVE_ATTRIBUTES, _LIKE_PREFIX, _SYMBOL_RE, _name,
                                      is_implemented_annotation, is_registration)

# --------------------------------------------------------------- on the llvm-dialect module


def apply_annotations(module: ModuleOp) -> None:
    """Record every annotation and registration of the module as the function
    attributes ``enzyme_inactive`` / ``enzyme_math``, and remove the registration
    globals (they are read, never linked)."""
    functions = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
    globals_ = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.GlobalOp)}
    for fop in functions.values():
        for name, value in _passthrough_items(fop):
            if name == "enzyme_inactive_noblock":
                _mark(fop, INACTIVE, "", f"attribute '{name}'")
            elif name == FUNCTION_LIKE:
                _check_like(fop, value, "attribute 'enzyme_math'")
    annotations = globals_.get("llvm.global.annotations")
    if annotations is not None:
        for target, text, where in _annotation_entries(annotations, globals_):
            fop = functions.get(target)
            if fop is None and target in globals_ and not text.startswith(_LIKE_PREFIX):
                globals_[target].attributes[INACTIVE_GLOBAL] = UnitAttr()
                continue
            if fop is None:
                raise _global_refused(target, text, where)
            if text.startswith(_LIKE_PREFIX):
                _mark(fop, FUNCTION_LIKE, text[len(_LIKE_PREFIX):], "__attribute__((enzyme_function_like))", where)
            else:
                _mark(fop, INACTIVE, "", "__attribute__((enzyme_inactive))", where)
    used = {op.global_name.root_reference.data for op in walk_ops(module) if is_a(op, llvm.AddressOfOp)}
    for name, gop in globals_.items():
        if not is_registration(name):
            continue
        if name in used:
            raise ZymaseError(f"the registration global '{name}' is read by the program; zymase reads "
                              "it at compile time and removes it", construct=name,
                              hint="use the global only to register functions")
        if name.startswith("__enzyme_allocation_like"):
            _register_allocator(module, gop, globals_, functions, name)
            module.body.block.erase_op(gop)
            continue
        if name.startswith("__enzyme_inactive_global"):
            for target in _registered_globals(gop, globals_, name):
                globals_[target].attributes[INACTIVE_GLOBAL] = UnitAttr()
            module.body.block.erase_op(gop)
            continue
        for fname, like in _registered(gop, globals_, functions, name):
            if like is None:
                _mark(functions[fname], INACTIVE, "", name)
            else:
                _mark(functions[fname], FUNCTION_LIKE, like, name)
        module.body.block.erase_op(gop)
    _restore_accesses(module)


def _restore_accesses(module: ModuleOp) -> None:
    """Loads and stores of inactive globals without the volatile of :func:`_volatile_accesses`."""
    inactive = {op.sym_name.data for op in module.body.block.ops
                if isinstance(op, llvm.GlobalOp) and INACTIVE_GLOBAL in op.attributes}
    if not inactive:
        return
    for op in walk_ops(module):
        ptr = op.operands[-1] if op.name in ("llvm.load", "llvm.store") and op.operands else None
        if (ptr is not None and isinstance(ptr.owner, llvm.AddressOfOp)
                and ptr.owner.global_name.root_reference.data in inactive):
            op.properties.pop("volatile_", None)


def _passthrough_items(fop: Operation) -> list[tuple[str, str]]:
    passthrough = fop.properties.get("passthrough")
    items = []
    for item in passthrough.data if passthrough is not None else ():
        if is_a(item, StringAttr):
            items.append((item.data, ""))
        elif isinstance(item, ArrayAttr) and len(item.data) == 2 and all(isinstance(x, StringAttr) for x in item.data):
            items.append((item.data[0].data, item.data[1].data))
    return items


def function_mark(fop: Operation | None) -> tuple[str, str] | None:
    """``("inactive", "")``, ``("like", "<libm name>")`` or None for a function op."""
    if fop is None:
        return None
    for name, value in _passthrough_items(fop):
        if name in _INACTIVE_ATTRIBUTES:
            return ("inactive", "")
        if name == FUNCTION_LIKE:
            return ("like", value)
        if name == ALLOCATOR:
            return ("allocator", value)
        if name == DEALLOCATOR:
            return ("deallocator", value)
    return None


def _mark(fop: Operation, attr: str, value: str, spelling: str, where: str | None = None) -> None:
    """Set ``attr`` on ``fop``; an inactive function cannot also be function-like."""
    if attr == FUNCTION_LIKE:
        _check_like(fop, value, spelling, where)
    current = function_mark(fop)
    wanted = ("inactive", "") if attr == INACTIVE else ("like", value)
    if current is not None and current != wanted:
        kinds = {"inactive": "inactive", "like": "function_like"}
        raise ZymaseError(
            f"'{fop.sym_name.data}' is marked both {kinds[current[0]]}"
            + (f"(\"{current[1]}\")" if current[1] else "") + f" and {kinds[wanted[0]]}"
            + (f"(\"{wanted[1]}\")" if wanted[1] else ""),
            construct=spelling, function=fop.sym_name.data, location=location_of(fop) or where,
            hint="give the function one of the two marks")
    if current == wanted:
        return
    old = fop.properties.get("passthrough")
    items = list(old.data) if old is not None else []
    items.append(ArrayAttr([StringAttr(attr), StringAttr(value)]))
    fop.properties["passthrough"] = ArrayAttr(items)


def _check_like(fop: Operation, like: str, spelling: str, where: str | None = None) -> None:
    """function_like needs a libm function zymase has a scalar rule for, and a function of
    the same shape (the rule reads the call's operands and result)."""
    from zymase.autodiff.annotated_calls import like_rule_problem

    problem = like_rule_problem(fop, like)
    if problem is not None:
        raise ZymaseError(
            f"enzyme_function_like(\"{like}\") on '{fop.sym_name.data}': {problem}",
            construct=spelling, function=fop.sym_name.data, location=location_of(fop) or where,
            hint="name a libm function of the same parameters (log, exp, sin, pow ...), "
            "or remove the mark to differentiate the function's body")


def _annotation_entries(annotations: Operation, globals_: dict[str, Operation]) -> list[tuple[str, str, str | None]]:
    """(annotated symbol, annotation text, ``file:line``) of the entries zymase
    implements; an ``enzyme_*`` annotation it does not implement is left for markers'
    refusal."""
    init = annotations.attributes.get("zymase.llvm_init")
    if not isinstance(init, StringAttr):
        return []
    entries = []
    for entry in re.finditer(r"\{([^{}]*@[^{}]*)\}", init.data):
        symbols = [_name(s) for s in _SYMBOL_RE.findall(entry[1])]
        if len(symbols) < 2:
            continue
        text = _string_of(globals_.get(symbols[1]))
        if text is not None and is_implemented_annotation(text):
            # { ptr @target, ptr @text, ptr @file, i32 line, ptr args }
            line = re.search(r"\bi32 (\d+)", entry[1])
            file = _string_of(globals_.get(symbols[2])) if len(symbols) > 2 else None
            entries.append((symbols[0], text, f"{file}:{line[1]}" if file and line else None))
    return entries


def _string_of(gop: Operation | None) -> str | None:
    value = gop.properties.get("value") if gop is not None else None
    return value.data.rstrip("\0") if isinstance(value, StringAttr) else None


def _registered(gop: Operation, globals_: dict[str, Operation], functions: dict[str, Operation],
                name: str) -> list[tuple[str, str | None]]:
    """The (function, libm name or None) pairs a registration global lists."""
    init = gop.attributes.get("zymase.llvm_init")
    symbols = [_name(s) for s in _SYMBOL_RE.findall(init.data)] if isinstance(init, StringAttr) else []
    if not symbols or any(s not in functions and s not in globals_ for s in symbols):
        raise ZymaseError(f"cannot read the registration global '{name}'", construct=name,
                          hint=f"initialize it with functions, e.g. void *{name}[] = {{(void *)f}}")
    if name.startswith("__enzyme_inactivefn"):
        if any(s not in functions for s in symbols):
            raise ZymaseError(f"'{name}' lists something that is not a function", construct=name,
                              hint="list the functions to keep inactive, e.g. {(void *)f, (void *)g}")
        return [(s, None) for s in symbols]
    if len(symbols) != 2 or symbols[0] not in functions or _string_of(globals_.get(symbols[1])) is None:
        raise ZymaseError(f"'{name}' must hold a function and the name of a libm function",
                          construct=name, hint=f"write void *{name}[2] = {{(void *)f, \"log\"}}")
    return [(symbols[0], _string_of(globals_[symbols[1]]))]


def _register_allocator(module: ModuleOp, gop: Operation, globals_: dict[str, Operation],
                        functions: dict[str, Operation], name: str) -> None:
    """``__enzyme_allocation_like[4] = {fn, (void *)size_index, "free-args", free_fn}``:
    ``fn`` returns new memory of the size its argument ``size_index`` gives. Its calls
    allocate like malloc; the shadow is calloc'd of that size and freed with free, so
    the deallocator and its argument list, which Enzyme uses for the shadow, are not
    needed (the program's own calls of it are ordinary code)."""
    from zymase.analysis.memory import ALLOCATION_SIZE_ARG, DEALLOCATED_ARG
    from zymase.transforms.known_callees import _split_top_level

    init = gop.attributes.get("zymase.llvm_init")
    items = _split_top_level(init.data) if isinstance(init, StringAttr) else None
    usage = f"write void *{name}[4] = {{(void *)alloc, (void *)size_index, (void *)\"free-args\", (void *)dealloc}}"
    head = _SYMBOL_RE.search(items[0]) if items else None
    fop = functions.get(_name(head[0])) if head else None
    if fop is None or len(items) not in (2, 4):
        raise ZymaseError(f"cannot read the registration global '{name}'", construct=name, hint=usage)
    index = re.fullmatch(r"ptr (?:null|inttoptr \(i64 (\d+) to ptr\))", items[1].strip())
    inputs = list(fop.function_type.inputs.data)
    k = int(index[1] or 0) if index else -1
    if not (0 <= k < len(inputs)) or not isinstance(inputs[k], IntegerType) \
            or not isinstance(fop.function_type.output, llvm.LLVMPointerType):
        raise ZymaseError(f"'{name}' registers '{fop.sym_name.data}' as an allocator, but its entry 2 is not "
                          "the position of an integer parameter (the size) or it does not return a pointer",
                          construct=name, function=fop.sym_name.data, hint=usage)
    _mark(fop, ALLOCATOR, str(k), name)
    _tag_calls(module, fop.sym_name.data, ALLOCATION_SIZE_ARG, k)
    if len(items) == 4 and items[3].strip() != "ptr null":
        # the deallocator: called with the allocator's arguments and (-1) the pointer
        free_args = _SYMBOL_RE.search(items[2])
        text = _string_of(globals_.get(_name(free_args[0]))) if free_args else None
        free = _SYMBOL_RE.search(items[3])
        dealloc = functions.get(_name(free[0])) if free else None
        positions = [p.strip() for p in text.split(",")] if text is not None else []
        if dealloc is None or "-1" not in positions:
            raise ZymaseError(f"'{name}' must name its deallocator and the position of the freed pointer "
                              "among its arguments (-1) in entry 3", construct=name, hint=usage)
        _mark(dealloc, DEALLOCATOR, text, name)
        _tag_calls(module, dealloc.sym_name.data, DEALLOCATED_ARG, positions.index("-1"))


def _tag_calls(module: ModuleOp, callee: str, attr: str, position: int) -> None:
    for op in walk_ops(module):
        if isinstance(op, llvm.CallOp) and op.callee is not None and op.callee.root_reference.data == callee:
            op.attributes[attr] = IntegerAttr(position, i64)


def _registered_globals(gop: Operation, globals_: dict[str, Operation], name: str) -> list[str]:
    """The globals ``__enzyme_inactive_global = (void *)&g`` (or an array of them) lists."""
    init = gop.attributes.get("zymase.llvm_init")
    text = init.data if isinstance(init, StringAttr) else ""
    value = gop.properties.get("value")
    symbols = [_name(s) for s in _SYMBOL_RE.findall(text)]
    if not symbols and value is not None and hasattr(value, "root_reference"):
        symbols = [value.root_reference.data]
    if not symbols and gop.body.blocks:
        symbols = [op.global_name.root_reference.data for op in gop.body.walk() if isinstance(op, llvm.AddressOfOp)]
    if not symbols or any(s not in globals_ for s in symbols):
        raise ZymaseError(f"'{name}' must hold the addresses of global variables", construct=name,
                          hint=f"write void *{name} = (void *)&g, or an array of such addresses")
    return symbols


def _global_refused(target: str, text: str, where: str | None) -> ZymaseError:
    """Inactive globals are not implemented (their loads would have to be constants and
    their stores drop derivatives): refused, not ignored."""
    if text.startswith(_LIKE_PREFIX):
        return ZymaseError(f"'{target}' is marked enzyme_function_like, which applies to functions only",
                           construct="__attribute__((enzyme_function_like))", location=where,
                           hint="mark the function that computes the value instead")
    return ZymaseError(
        f"'{target}' is marked inactive ('{text}'), and inactive globals are not implemented by zymase",
        construct=f"__attribute__(({text.split('=')[0]}))", location=where,
        hint="remove the attribute (zymase would differentiate through the global as if it were not "
        "there), or mark inactive the functions that use it")
