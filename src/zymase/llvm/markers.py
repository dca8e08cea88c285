"""Enzyme's C interface: ``__enzyme_autodiff`` / ``__enzyme_fwddiff`` call sites become
``enzyme.autodiff`` / ``enzyme.fwddiff`` ops, with the C calling convention of the
call site (argument promotion, struct returns, sret) adapted around them.

Semantics follow Enzyme:

* markers ``enzyme_const``, ``enzyme_out``, ``enzyme_dup``, ``enzyme_dupnoneed`` are
  globals whose value (or address) precedes the argument they describe;
* reverse mode without marker: a float argument is active (its derivative is
  returned), a pointer is duplicated (followed by its shadow), an integer constant;
  the float result is seeded with 1.0; several derivatives come back as a struct in
  argument order;
* forward mode without marker: a float argument is followed by its tangent; the
  result is the directional derivative;
* return markers anywhere in the list: ``enzyme_primal_return`` (the primal result
  comes first, then the derivatives: ``{primal, {d...}}`` in reverse mode,
  ``{primal, tangent}`` in forward mode), ``enzyme_noret``, ``enzyme_const_return``,
  ``enzyme_active_return``, ``enzyme_dup_return`` (forward mode);
* split reverse mode: ``__enzyme_augmentfwd(f, args...)`` runs the forward sweep and
  returns the tape (``{tape, primal}`` when ``f`` returns a value);
  ``__enzyme_reverse(f, args..., [d_ret,] tape)`` runs the reverse sweep from it and
  frees it; ``enzyme_allocated, size, enzyme_tape, buffer`` keeps the tape in the
  caller's buffer; ``__enzyme_augmentsize(f, ...)`` is the tape's size
  (:mod:`zymase.transforms.split_mode`);
* split forward mode: ``__enzyme_fwdsplit(f, args with tangents..., tape)`` returns the
  tangent computed from the tape of ``__enzyme_augmentfwd`` (whose calls then write that
  kind of tape, :mod:`zymase.autodiff.forward_split`);
* vector forward mode: ``enzyme_width, N`` (a constant) makes every float argument take
  N tangents, every ``enzyme_dup`` pointer N shadows, and ``enzyme_dupv, stride, x, dxs``
  / ``enzyme_dupnoneedv`` one buffer of N shadows ``stride`` bytes apart; the result is
  its N tangents (``{primal, t1..tN}`` with ``enzyme_primal_return``); vector reverse
  mode (``__enzyme_autodiff`` with ``enzyme_width``) seeds an active result with 1 in
  every lane and returns N derivatives per active argument, lane by lane; split mode
  takes it too (``__enzyme_augmentfwd`` N shadows per dup pointer, one tape;
  ``__enzyme_reverse`` N adjoints of an active result before the tape, as N scalars or
  Enzyme's one ``[N x double]``, a struct in C; ``__enzyme_fwdsplit`` N tangents as
  ``__enzyme_fwddiff`` takes them);
* ``__enzyme_virtualreverse(p)``, the shadow of a function or vtable pointer, is ``p``
  (:func:`zymase.transforms.indirect_calls.lower_virtual_reverse`).
* batched evaluation: ``__enzyme_batch(f, enzyme_width, N, ...)`` with ``enzyme_vector`` /
  ``enzyme_scalar`` / ``enzyme_buffer`` (:mod:`zymase.llvm.batch_call`).

Everything else of Enzyme's C interface is refused, never skipped: other
``__enzyme_*`` functions and globals (``__enzyme_todense`` ...), marker globals zymase does not implement
(``enzyme_interleave`` ...), ``enzyme_*`` function attributes and annotations in the IR other
than the activity marks ``llvm/annotations.py`` reads (and removes or records before
this module runs), and a derivative that would contain itself (a differentiated
function reaching its own marker call; other nested calls are lowered in rounds,
:func:`marker_rounds`).

The call site record, its error and the C calling convention around the call (argument
promotions undone, results delivered as the call declares them) are in
:mod:`zymase.llvm.marker_calls`.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import BFloat16Type

from zymase.analysis.op_classes import is_a
from zymase.errors import ZymaseError, warn
from zymase.ir import (
    ArrayAttr,
    Attribute,
    Float128Type,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    SSAValue,
    StringAttr,
    VectorType,
    is_float_type,
    llvm,
    location_of,
)
from zymase.ir import enzyme as ez
from zymase.ir.enzyme import Activity
from zymase.ir.walk import walk_ops
# the names the marks put on clang's text before the pre-AD pipeline use (protect_marker_calls there)
from zymase.llvm.pre_ad_marks import (LOGGING_HOOKS, MARKER_FUNCTIONS, is_implemented_annotation,
                                      is_implemented_attribute, plain_function_name)
from zymase.llvm.marker_calls import _Builder, _Site, _err, _scalar_fields, _sret_type, c_spelling, c_type_name

MARKERS = {
    "enzyme_const": "const",
    "enzyme_out": "out",
    "enzyme_dup": "dup",
    "enzyme_dupnoneed": "dupnoneed",
    # vector mode: followed by a byte stride, the pointer and one buffer holding the
    # width shadows `stride` bytes apart
    "enzyme_dupv": "dupv",
    "enzyme_dupnoneedv": "dupnoneedv",
}


#: Markers that change what a call returns rather than describe an argument.
RETURN_MARKERS = ("enzyme_primal_return", "enzyme_noret", "enzyme_const_return", "enzyme_active_return",
                  "enzyme_dup_return")

#: Markers followed by one value that is an option of the call, not an argument
#: (``enzyme_width, N``: vector mode, N derivatives per argument and result).
VALUE_MARKERS = ("enzyme_allocated", "enzyme_tape", "enzyme_width")

#: zymase's own option marker (not Enzyme's): after ``enzyme_width, N + 1`` on
#: ``__enzyme_fwddiff``, Laplacian mode (autodiff/laplacian.py): lanes 1..N are
#: tangents, lane N + 1 the summed second-order term of their directions. Only the
#: value and lane N + 1 of the outputs (results, memory the arguments reach) are
#: defined: the tangent lanes nothing inside needs are not computed there
#: (autodiff/lane_liveness.py).
LAPLACIAN_MARKER = "zymase_laplacian"

#: Markers that only promise something zymase does not rely on: accepted, no effect.
HINT_MARKERS = ("enzyme_not_overwritten",)

#: ``enzyme_nofree``: __enzyme_fwdsplit keeps the tape (it may read it again); accepted
#: by __enzyme_augmentfwd, where it has no effect (as in Enzyme); refused elsewhere.
NOFREE_MARKER = "enzyme_nofree"

#: Markers of Enzyme's that zymase does not implement, with what they do (for the error).
UNIMPLEMENTED_MARKERS = {
    "enzyme_interleave": "interleaved shadows",
    "enzyme_byref": "arguments passed by reference",
    "enzyme_runtime_activity": "runtime activity checks",
    "enzyme_interface": "dynamic derivative interfaces",
    "enzyme_trace": "probabilistic tracing",
    "enzyme_duptrace": "probabilistic tracing",
    "enzyme_likelihood": "probabilistic tracing",
    "enzyme_duplikelihood": "probabilistic tracing",
    "enzyme_observations": "probabilistic tracing",
    "enzyme_active_rand_var": "probabilistic tracing",
}

#: The argument markers of ``__enzyme_batch`` (llvm/batch_call.py), refused elsewhere.
BATCH_MARKERS = ("enzyme_vector", "enzyme_scalar", "enzyme_buffer")

#: Every marker global zymase understands (arguments, returns, options, hints).
KNOWN_MARKERS = (*MARKERS, *RETURN_MARKERS, *VALUE_MARKERS, *HINT_MARKERS, *BATCH_MARKERS, NOFREE_MARKER)

#: The modes whose float arguments are followed by tangents (forward and split forward).
FORWARD_MODES = ("fwd", "fwdsplit")

#: Registration globals zymase reads (autodiff/custom.py): Enzyme matches the prefix.
REGISTRATION_GLOBALS = ("__enzyme_register_gradient", "__enzyme_register_derivative",
                        "__enzyme_register_splitderivative")

#: The size in bytes of a split-mode tape (what ``__enzyme_augmentsize`` returns):
#: the tape's data pointer, its size and its capacity (zymase.transforms.split_mode).
SPLIT_TAPE_BYTES = 24

#: What Enzyme does with the names it knows and zymase does not implement (yet), for
#: the error message; any other ``__enzyme_*`` name is refused as unknown.
_UNIMPLEMENTED_SYMBOLS = {
    "__enzyme_todense": "converts to a dense representation",
    "__enzyme_truncate": "is floating-point truncation",
    "__enzyme_expand": "is floating-point expansion",
}
_MARKER_WORDS = "enzyme_"


def _callee_name(op: Operation) -> str | None:
    if is_a(op, llvm.CallOp) and op.callee is not None:
        return op.callee.root_reference.data
    return None


def _addressof_name(v: SSAValue) -> str | None:
    owner = v.owner
    if is_a(owner, llvm.AddressOfOp):
        return owner.global_name.root_reference.data
    return None


def _global_named_by(v: SSAValue) -> str | None:
    """The global whose address or value ``v`` is (``@enzyme_dup`` or ``load @enzyme_dup``)."""
    name = _addressof_name(v)
    if name is None and is_a(v.owner, llvm.LoadOp):
        name = _addressof_name(v.owner.ptr)
    return name


def _marker_of(v: SSAValue) -> str | None:
    """The marker a call argument stands for: the value of ``@enzyme_dup`` or its address."""
    name = _global_named_by(v)
    return MARKERS.get(name) if name is not None else None


def find_sites(module: ModuleOp) -> list[_Site]:
    sites = []
    for fop in module.body.block.ops:
        if not isinstance(fop, llvm.FuncOp):
            continue
        for op in walk_ops(fop):
            name = _callee_name(op)
            if name is None:
                continue
            mode = _marker_mode(name)
            if mode is not None:
                sites.append(_Site(op, mode, name, fop.sym_name.data))
    return sites


def _marker_mode(name: str) -> str | None:
    return next((mode for marker, mode in MARKER_FUNCTIONS.items() if marker in name), None)


def lower_markers(module: ModuleOp) -> int:
    """Rewrite every marker call site at once; returns how many were rewritten. A
    differentiated function that reaches a marker call (nested differentiation) is
    refused here: it needs :func:`marker_rounds` and the enzyme pass between rounds."""
    rounds = marker_rounds(module)
    if len(rounds) > 1:
        functions = _functions(module)
        _refuse_nested([site for r in rounds for site in r], functions)
    for sites in rounds:
        lower_sites(module, sites)
    finish_markers(module)
    return sum(map(len, rounds))


def _functions(module: ModuleOp) -> dict[str, Operation]:
    return {op.sym_name.data: op for op in module.body.block.ops if is_a(op, llvm.FuncOp)}


def marker_rounds(module: ModuleOp) -> list[list[_Site]]:
    """The marker call sites in the order nested differentiation needs them: a site
    whose differentiated function reaches (calls, or takes the address of) a function
    holding another site comes after that site, whose derivative must exist, as
    ordinary code, before it is differentiated again (``__enzyme_fwddiff(df, ...)`` where
    ``df`` calls ``__enzyme_autodiff(f, ...)``: forward over reverse). Round k holds the
    sites with k-1 nested levels below them. A site that reaches itself is refused.
    Also reads what the sites rely on (registrations) and refuses what zymase does not
    implement."""
    from zymase.transforms.indirect_calls import lower_virtual_reverse

    lower_virtual_reverse(module)
    refuse_unimplemented(module)
    from zymase.autodiff.custom import read_registrations

    read_registrations(module)
    functions = _functions(module)
    sites = find_sites(module)
    from zymase.transforms.split_mode import mark_fwdsplit_tapes

    mark_fwdsplit_tapes(sites, lambda site: functions.get(_differentiated_name(site, functions)))
    sites_in: dict[str, list[_Site]] = {}
    for site in sites:
        sites_in.setdefault(site.caller, []).append(site)
    references: dict[str, set[str]] = {}

    def reached(site: _Site) -> list[_Site]:
        """The sites in functions that ``site``'s differentiated function reaches."""
        target = _differentiated_name(site, functions)
        if target is None:
            return []
        seen, todo, found = {target}, [target], []
        while todo:
            name = todo.pop()
            found += sites_in.get(name, [])
            if name not in references:
                references[name] = _referenced_functions(functions.get(name), functions)
            for callee in references[name] - seen:
                seen.add(callee)
                todo.append(callee)
        return found

    inner = {id(site): reached(site) for site in sites}
    depth: dict[int, int] = {}

    def depth_of(site: _Site, path: tuple[int, ...]) -> int:
        key = id(site)
        if key in path:
            raise _err(site, f"{site.marker_fn} in '{site.caller}' differentiates a function that reaches "
                       "this same call again: a derivative that would contain itself",
                       "differentiate a function that does not call back into its own derivative")
        if key not in depth:
            depth[key] = 1 + max((depth_of(t, (*path, key)) for t in inner[key]), default=0)
        return depth[key]

    rounds: dict[int, list[_Site]] = {}
    for site in sites:
        rounds.setdefault(depth_of(site, ()), []).append(site)
    return [rounds[k] for k in sorted(rounds)]


def lower_sites(module: ModuleOp, sites: list[_Site]) -> None:
    """Rewrite ``sites`` (one round of :func:`marker_rounds`) into enzyme ops."""
    functions = _functions(module)
    for site in sites:
        _lower_site(site, functions)


def finish_markers(module: ModuleOp) -> None:
    """After the last round: the marker globals and declarations nothing uses go."""
    _drop_dead_marker_globals(module)


# ------------------------------------------------- what zymase does not implement


def refuse_unimplemented(module: ModuleOp) -> None:
    """Raise on the first piece of Enzyme's interface that zymase does not implement:
    ignoring it would differentiate something else than the user asked for."""
    for op in module.body.block.ops:
        if not isinstance(op, (llvm.FuncOp, llvm.GlobalOp)):
            continue
        name = op.sym_name.data
        if any(prefix in name for prefix in REGISTRATION_GLOBALS):
            continue
        hook = plain_function_name(name)
        if isinstance(op, llvm.FuncOp) and op.body.blocks and hook in LOGGING_HOOKS:
            raise ZymaseError(
                f"'{hook}' {LOGGING_HOOKS[hook]}; zymase does not call Enzyme's logging hooks",
                construct=hook, function=hook, location=location_of(op),
                hint="remove the hook (or rename it): zymase would leave it uncalled")
        if "__enzyme_" in name and _marker_mode(name) is None:
            known = next((what for prefix, what in _UNIMPLEMENTED_SYMBOLS.items() if prefix in name), None)
            message = (f"'{name}' {known}, which zymase does not implement yet" if known
                       else f"'{name}' is not an Enzyme function zymase knows")
            raise _unimplemented_error(module, name, message)
        if (isinstance(op, llvm.GlobalOp) and name.startswith(_MARKER_WORDS) and name not in KNOWN_MARKERS
                and isinstance(op.global_type, IntegerType)):
            feature = UNIMPLEMENTED_MARKERS.get(name)
            raise _unimplemented_error(
                module, name, f"marker '{name}' is not implemented by zymase: it asks for {feature}" if feature else
                f"marker '{name}' is not implemented by zymase (it knows " + ", ".join(KNOWN_MARKERS) + ")")
        if (isinstance(op, llvm.GlobalOp) and isinstance(text := op.properties.get("value"), StringAttr)
                and text.data.startswith(_MARKER_WORDS) and isinstance(sec := op.properties.get("section"), StringAttr)
                and sec.data == "llvm.metadata" and not is_implemented_annotation(text.data.rstrip(chr(0)))):
            raise _unimplemented_error(  # __attribute__((annotate("enzyme_inactive")))
                module, name, f"annotation '{text.data.rstrip(chr(0))}' is not implemented by zymase")
        if isinstance(op, llvm.FuncOp):
            for attr in _enzyme_function_attributes(op):
                raise ZymaseError(
                    f"function attribute '{attr}' of '{name}' is not implemented by zymase",
                    construct=attr, function=name, location=location_of(op),
                    hint="remove the attribute; zymase would otherwise differentiate the function "
                    "as if it were not there",
                )


def _enzyme_function_attributes(fop: Operation) -> list[str]:
    """The ``"enzyme_*"`` string attributes (``enzyme_inactive``, ``enzyme_math`` ...) of a function."""
    passthrough = fop.properties.get("passthrough")
    names = []
    for item in passthrough.data if passthrough is not None else ():
        key = item.data[0] if is_a(item, ArrayAttr) else item
        if isinstance(key, StringAttr) and key.data.startswith(_MARKER_WORDS) and not is_implemented_attribute(key.data):
            names.append(key.data)
    return names


def _unimplemented_error(module: ModuleOp, name: str, message: str) -> ZymaseError:
    """The error for symbol ``name``, located at its first use when there is one."""
    where, function = None, None
    for fop in module.body.block.ops:
        if isinstance(fop, llvm.FuncOp):
            for op in walk_ops(fop):
                # a marker global is located at the call that reads it as an argument
                if _callee_name(op) == name or (
                        isinstance(op, llvm.CallOp) and name in map(_global_named_by, op.args)):
                    where, function = location_of(op), fop.sym_name.data
                    break
        if function is not None:
            break
    return ZymaseError(
        message, construct=name, function=function, location=where,
        hint="zymase implements " + ", ".join(MARKER_FUNCTIONS) + " with the markers "
        + ", ".join(KNOWN_MARKERS) + "; remove it (zymase would otherwise compute something "
        "else than what it asks for)",
    )


def _refuse_nested(sites: list[_Site], functions: dict[str, Operation]) -> None:
    """A differentiated function that reaches a marker call asks for a higher-order
    derivative, which zymase does not compute: the inner call would be taken as constant."""
    sites_in: dict[str, _Site] = {}
    for site in sites:
        sites_in.setdefault(site.caller, site)
    references: dict[str, set[str]] = {}
    for site in sites:
        target = _differentiated_name(site, functions)
        if target is None:
            continue
        seen, todo = {target}, [target]
        while todo:
            name = todo.pop()
            inner = sites_in.get(name)
            if inner is not None:
                where = location_of(inner.call)
                raise _err(
                    site,
                    f"'{target}' is differentiated by {site.marker_fn} and itself reaches a call of "
                    f"{inner.marker_fn} in '{name}'" + (f" at {where}" if where else "")
                    + ": nested differentiation (higher-order derivatives) is not supported yet",
                    "differentiate a function without __enzyme_* calls; compute higher derivatives "
                    "by hand or with finite differences of the first derivative",
                )
            if name not in references:
                references[name] = _referenced_functions(functions.get(name), functions)
            for callee in references[name] - seen:
                seen.add(callee)
                todo.append(callee)


def _referenced_functions(fop: Operation | None, functions: dict[str, Operation]) -> set[str]:
    """The functions ``fop`` calls or takes the address of."""
    names: set[str] = set()
    if fop is None:
        return names
    for op in walk_ops(fop):
        name = _callee_name(op)
        if name is None and is_a(op, llvm.AddressOfOp):
            name = _addressof_name(op.results[0])
        if name in functions:
            names.add(name)
    return names


def _differentiated_name(site: _Site, functions: dict[str, Operation]) -> str | None:
    """The function a marker call differentiates (after a hidden sret pointer, if any)."""
    for arg in list(site.call.args)[:2]:
        name = _addressof_name(arg)
        if name in functions:
            return name
    return None


@dataclass
class _Options:
    """What the option and return markers of one call ask for."""

    ret: str | None = None  # "const", "active" or "dup" (enzyme_*_return)
    primal_return: bool = False
    noret: bool = False
    allocated: SSAValue | None = None  # enzyme_allocated's size
    tape: SSAValue | None = None  # enzyme_tape's buffer
    width: int = 1  # enzyme_width's N
    laplacian: bool = False  # zymase_laplacian
    nofree: bool = False  # enzyme_nofree: __enzyme_fwdsplit leaves the tape to the caller


def _take_options(site: _Site, args: list[SSAValue]) -> tuple[list[SSAValue], _Options]:
    """The call's arguments without the option and return markers (and the values
    that belong to them), and what those asked for."""
    opts = _Options()
    kept: list[SSAValue] = []
    i = 0
    while i < len(args):
        name = _global_named_by(args[i])
        if name in UNIMPLEMENTED_MARKERS:
            raise _err(site, f"marker '{name}' is not implemented by zymase: it asks for {UNIMPLEMENTED_MARKERS[name]}",
                       "remove it; zymase implements " + ", ".join(KNOWN_MARKERS))
        if name in BATCH_MARKERS:
            raise _err(site, f"marker '{name}' belongs to __enzyme_batch, not {site.marker_fn}",
                       "call __enzyme_batch to evaluate a function on several inputs at once")
        if name in RETURN_MARKERS:
            if name == "enzyme_primal_return":
                opts.primal_return = True
            elif name == "enzyme_noret":
                opts.noret = True
            else:
                opts.ret = name.removeprefix("enzyme_").removesuffix("_return")
            i += 1
        elif name in HINT_MARKERS:
            i += 1
        elif name == LAPLACIAN_MARKER:
            if site.mode != "fwd":
                raise _err(site, f"marker {name} (Laplacian mode) is for __enzyme_fwddiff, not {site.marker_fn}",
                           "call __enzyme_fwddiff with enzyme_width, N + 1, zymase_laplacian")
            opts.laplacian = True
            i += 1
        elif name == NOFREE_MARKER:
            if site.mode not in ("augment", "fwdsplit"):
                raise _err(site, f"marker '{name}' is not implemented by zymase for {site.marker_fn}: it asks for "
                           "keeping the memory of the forward pass after the reverse pass",
                           "remove it; zymase implements enzyme_nofree for __enzyme_fwdsplit (a tape read more "
                           "than once) and accepts it in __enzyme_augmentfwd")
            opts.nofree = True
            i += 1
        elif name in VALUE_MARKERS:
            if i + 1 >= len(args):
                raise _err(site, f"marker {name} is not followed by its value",
                           "enzyme_allocated takes the tape's size, enzyme_tape the tape's buffer")
            if name == "enzyme_width":
                opts.width = _vector_width(site, args[i + 1])
                i += 2
                continue
            if site.mode not in ("augment", "reverse", "fwdsplit"):
                raise _err(site, f"marker {name} is for split mode (__enzyme_augmentfwd / __enzyme_reverse / "
                           f"__enzyme_fwdsplit), not {site.marker_fn}", "remove it")
            if name == "enzyme_allocated":
                opts.allocated = args[i + 1]
            else:
                opts.tape = args[i + 1]
            i += 2
        else:
            kept.append(args[i])
            i += 1
    if opts.laplacian and opts.width < 2:
        raise _err(site, f"marker {LAPLACIAN_MARKER} needs enzyme_width, N + 1 (N directions and the Laplacian "
                   f"lane), got width {opts.width}", "pass enzyme_width, N + 1 before zymase_laplacian")
    if opts.noret:
        opts.primal_return = False
    if (opts.allocated is None) != (opts.tape is None):
        raise _err(site, "enzyme_allocated and enzyme_tape go together: the size of the caller's tape "
                   "buffer and the buffer", "pass enzyme_allocated, size, enzyme_tape, buffer")
    return kept, opts


def _vector_width(site: _Site, v: SSAValue) -> int:
    """The N of ``enzyme_width, N``: a positive integer constant (it sets the number of
    arguments the call takes and the type it returns)."""
    owner = v.owner
    value = owner.value if isinstance(owner, llvm.ConstantOp) else None
    if not (isinstance(value, IntegerAttr) and isinstance(v.type, IntegerType)):
        raise _err(site, "enzyme_width must be followed by an integer constant, the vector width; "
                   "here it is a value known only at run time",
                   "write the width as a literal or a constant expression (e.g. enzyme_width, 4)")
    if value.value.data < 1:
        raise _err(site, f"enzyme_width {value.value.data}: the vector width must be at least 1",
                   "pass the number of tangents, e.g. enzyme_width, 4")
    return value.value.data


def _lower_site(site: _Site, functions: dict[str, Operation]) -> None:
    call = site.call
    args = list(call.args)
    sret = None
    # An sret return: the hidden result pointer comes before the function.
    if len(args) >= 2 and call.returned is None and _addressof_name(args[0]) not in functions and _addressof_name(args[1]) in functions:
        sret, args = args[0], args[1:]
    if not args:
        raise _err(site, "missing function argument", f"call it as {site.marker_fn}((void*)f, args...)")
    fname = _addressof_name(args[0])
    fop = functions.get(fname) if fname else None
    if fop is None:
        what = f"'@{fname}'" if fname else "a value that is not a function"
        hint = "pass the function itself, e.g. __enzyme_autodiff((void*)f, x)"
        if site.caller.startswith("_ZN6enzyme"):
            # the call is still inside the header's always_inline functions, where f is a parameter
            hint = ("the <enzyme/enzyme> header needs its functions inlined before differentiation; "
                    "build without --no-preopt")
        raise _err(
            site,
            f"the first argument of {site.marker_fn} must be a function defined in this file, got {what}",
            hint,
        )
    if not fop.body.blocks:
        raise _err(
            site,
            f"cannot differentiate '{fname}': only its declaration is in this file",
            "define the function in the same translation unit, or build the program's files together "
            "(zymase cc main.c f.c -o prog: they are then differentiated as one program)",
        )
    if site.mode == "batch":
        from zymase.llvm.batch_call import lower_batch_site

        lower_batch_site(site, fop, args[1:], sret)
        return
    if site.mode == "size":
        # the tape is the same small header whatever the activities (its data grows
        # on the heap), as Enzyme's is a fixed struct
        b = _Builder(call)
        want = call.returned.type if call.returned is not None else None
        if want is not None:
            if not isinstance(want, IntegerType):
                raise _err(site, f"{site.marker_fn} returns the tape's size, an integer, not {c_type_name(want)}",
                           "declare it as int __enzyme_augmentsize(void*, ...) or size_t")
            call.returned.replace_all_uses_with(b.v(llvm.ConstantOp(IntegerAttr(SPLIT_TAPE_BYTES, want), want)))
        call.parent_block().erase_op(call)
        return
    rest, opts = _take_options(site, args[1:])
    fn_inputs = list(fop.function_type.inputs.data)
    fn_out = fop.function_type.output
    has_result = not isinstance(fn_out, llvm.LLVMVoidType)
    reverse_like = site.mode in ("rev", "augment", "reverse")
    ret_kind = _return_kind(site, opts, fn_out, has_result, fname)
    if (
        site.mode in ("rev", "reverse")
        and isinstance(fn_out, llvm.LLVMPointerType)
        and call.returned is not None
        and call.returned.uses
        and not opts.primal_return
    ):
        raise _err(
            site,
            f"'{fname}' returns a pointer, and reverse mode returns only derivatives",
            "use the pointer's shadow (the enzyme_dup argument) instead, or __enzyme_fwddiff, "
            "which returns the shadow of a returned pointer",
        )

    if has_result and opts.ret != "const":
        _refuse_undifferentiable(site, fn_out, f"the result of '{fname}'")

    b = _Builder(call)
    operands: list[SSAValue] = []
    acts: list[Activity] = []
    width = opts.width
    pos = 0
    for i, ptype in enumerate(fn_inputs):
        marker = None
        stride = None
        if pos < len(rest):
            marker = _marker_of(rest[pos])
            if marker is not None:
                pos += 1
            if marker in ("dupv", "dupnoneedv"):
                if pos >= len(rest) or not isinstance(rest[pos].type, IntegerType):
                    raise _err(site, f"enzyme_{marker} on argument {i + 1} of '{fname}' must be followed by the "
                               "byte stride between its shadows", "write enzyme_dupv, stride, x, dxs")
                stride = rest[pos]
                pos += 1
        if pos >= len(rest):
            if marker is not None:
                raise _err(site, f"marker enzyme_{marker} is not followed by an argument",
                           f"'{fname}' takes {len(fn_inputs)} arguments; put the marker right before the value it describes")
            raise _err(site, f"too few arguments for '{fname}': it takes {len(fn_inputs)}, argument {i + 1} is missing",
                       "pass every argument of the function (and a shadow after each enzyme_dup pointer)")
        val = b.coerce(rest[pos], ptype, site, i, pos + 2, fname)
        pos += 1
        if stride is not None and not isinstance(ptype, llvm.LLVMPointerType):
            raise _err(site, f"enzyme_{marker} on argument {i + 1} of '{fname}', which is not a pointer",
                       "enzyme_dupv passes the shadows of a pointer; give a float argument its tangents one by one")
        act = _activity(site, marker.removesuffix("v") if stride is not None else marker, ptype, i, fname)
        operands.append(val)
        acts.append(act)
        if act.is_dup or (site.mode in FORWARD_MODES and act.is_active):
            what = "shadow" if act.is_dup else "tangent"
            if stride is not None:
                if pos >= len(rest) or not isinstance(rest[pos].type, llvm.LLVMPointerType):
                    raise _err(site, f"enzyme_{marker} on argument {i + 1} of '{fname}' needs the buffer of its "
                               f"{width} shadows after it", "write enzyme_dupv, stride, x, dxs")
                operands += [b.lane_shadow(rest[pos], stride, k) for k in range(width)]
                pos += 1
                continue
            for k in range(width):
                if pos >= len(rest):
                    lanes = f" (enzyme_width {width}: {width} {what}s, got {k})" if width > 1 else ""
                    raise _err(site, f"argument {i + 1} of '{fname}' needs a {what} after it{lanes}",
                               "pass the derivative argument right after the primal one" + (
                                   f", one per lane ({width})" if width > 1 else ""))
                if isinstance(ptype, llvm.LLVMPointerType) and not isinstance(rest[pos].type, llvm.LLVMPointerType):
                    # the shadow was forgotten: the next argument is the next parameter
                    lanes = f" ({width} of them: enzyme_width {width})" if width > 1 else ""
                    raise _err(site, f"argument {pos + 2} of {site.marker_fn}: enzyme_{marker or 'dup'} expects a "
                               f"shadow pointer{lanes} after parameter {i + 1} of '{fname}', got "
                               f"{c_type_name(rest[pos].type)}",
                               "pass the shadow (a pointer to memory of the same shape, zeroed for reverse mode) "
                               "right after the pointer, or mark the pointer enzyme_const; a struct passed by "
                               "value reaches the function as its fields (C's calling convention), so pass a "
                               "struct holding pointers by address (enzyme_dup, &s, &ds)")
                if reverse_like and act.is_dup and b._byval_type(rest[pos]) is not None:
                    # C passes a struct argument by value as a pointer to a copy: the
                    # adjoints would go into the copy, and the caller's struct stays zero
                    raise _err(site, f"argument {pos + 2} of {site.marker_fn}, the shadow of parameter {i + 1} of "
                               f"'{fname}', is a struct passed by value: the derivative would be written into "
                               "a copy and lost", "pass the shadow's address (enzyme_dup, s, &ds), or take "
                               "the struct by pointer")
                operands.append(b.coerce(rest[pos], ptype, site, i, pos + 2, fname))
                pos += 1
    extra = rest[pos:]
    seed = None
    if site.mode in ("reverse", "fwdsplit"):
        # after the arguments: the result's adjoint (an active float result, reverse
        # mode), then the tape (unless enzyme_tape gave it)
        if ret_kind == "active" and site.mode == "reverse":
            given = len(extra) - (opts.tape is None)  # the tape comes last
            if width > 1:
                # vector mode: one adjoint per lane, as scalars or as one struct of N
                # (Enzyme's [N x double], in memory from N = 3 on: marker_calls.lanes)
                seed, used = b.lanes(extra[:max(given, 0)], width, fn_out, site,
                                     f"{site.marker_fn} of '{fname}' needs the adjoint of its "
                                     f"{c_type_name(fn_out)} result after the arguments")
                extra = extra[used:]
            else:
                if given < 1:
                    raise _err(site, f"{site.marker_fn} of '{fname}' needs the adjoint of its {c_type_name(fn_out)} "
                               "result after the arguments", "pass d_ret (1.0 for a gradient) before the tape")
                seed = [b.coerce(extra[0], fn_out, site, len(fn_inputs), pos + 2, fname)]
                extra = extra[1:]
        if opts.tape is None:
            if not extra:
                raise _err(site, f"{site.marker_fn} of '{fname}' needs the tape __enzyme_augmentfwd returned "
                           "as its last argument", "pass the tape after the arguments (and d_ret)")
            opts.tape, extra = extra[0], extra[1:]
    if extra:
        raise _err(site, f"too many arguments for '{fname}': it takes {len(fn_inputs)}",
                   "check the markers: enzyme_dup arguments take a shadow, enzyme_const ones do not")

    if site.mode == "fwdsplit":
        from zymase.transforms.split_mode import fwdsplit_op

        op = fwdsplit_op(site, fname, operands, opts, acts, ret_kind, fn_out if has_result else None, b)
        op.location = call.location
        b.insert(op)
        if width > 1:  # N tangents of the result
            _refuse_dropped_lanes(site, call, sret, list(op.results))
        b.deliver(list(op.results), sret, site)
        call.parent_block().erase_op(call)
        return
    if site.mode != "augment" and not any(a.is_active or a.is_dup for a in acts):
        warn(f"'{fname}' has no active argument (no float, no enzyme_dup pointer): every derivative "
             f"{site.marker_fn} computes is zero", construct=f"call @{site.marker_fn}", function=site.caller,
             location=location_of(site.call), hint="mark the inputs to differentiate (float arguments "
             "are active by default, pointers need a shadow)")
    if reverse_like:
        ret_acts: list[Activity] = []
        if has_result:
            keep_primal = opts.primal_return and site.mode == "rev"
            if ret_kind == "active":
                ret_acts = [Activity.ACTIVE if keep_primal else Activity.ACTIVENONEED]
            else:
                ret_acts = [Activity.CONST if keep_primal else Activity.CONSTNONEED]
        if site.mode == "rev":
            if ret_kind == "active":
                # the result's seed, 1 in every lane (Enzyme's): lanes differ by their shadows
                operands += [b.fconst(1.0, fn_out)] * opts.width
            out_types = ([fn_out] if opts.primal_return and has_result else []) + [
                t for t, a in zip(fn_inputs, acts) if a.is_active for _ in range(opts.width)]
            op = ez.AutoDiffOp(fname, operands, out_types, acts, ret_acts, opts.width)
        else:
            from zymase.transforms.split_mode import split_op

            op = split_op(site, fname, operands, seed, opts, acts, ret_acts, fn_inputs, fn_out, b)
    else:
        fwd_acts = [Activity.DUP if a.is_active else a for a in acts]
        ret_acts, out_types = [], []
        if has_result:
            if ret_kind == "const":
                ret_acts = [Activity.CONST if opts.primal_return else Activity.CONSTNONEED]
                out_types = [fn_out] if opts.primal_return else []
            else:
                # a float result's tangent; a returned pointer's shadow
                ret_acts = [Activity.DUP if opts.primal_return else Activity.DUPNONEED]
                out_types = ([fn_out] if opts.primal_return else []) + [fn_out] * width
        op = ez.FwdDiffOp(fname, operands, out_types, fwd_acts, ret_acts, width, laplacian=opts.laplacian)
    op.location = call.location
    b.insert(op)
    results = list(op.results)
    if site.mode == "augment":
        # {tape, primal}: no tape when it is in the caller's buffer, no primal after enzyme_noret
        tape, primal = results[:1], results[1:]
        results = ([] if opts.tape is not None else tape) + ([] if opts.noret else primal)
    if opts.width > 1 and site.mode != "augment":  # the augmented pass returns the tape and the primal, once
        _refuse_dropped_lanes(site, call, sret, results)
    b.deliver(results, sret, site)
    call.parent_block().erase_op(call)


def _refuse_dropped_lanes(site: _Site, call: Operation, sret: SSAValue | None, results: list[SSAValue]) -> None:
    """Vector mode returns N tangents: a call declared to return fewer scalars (a plain
    double) would keep the first lane only, silently."""
    declared = _sret_type(call) if sret is not None else (call.returned.type if call.returned is not None else None)
    if declared is None or not results:
        return
    wanted = [f for r in results for f in _scalar_fields(r.type)]  # a lane may be a struct
    if _scalar_fields(declared)[:len(wanted)] != wanted:
        spelled = c_spelling(llvm.LLVMStructType.from_type_list(wanted)) if len(wanted) > 1 else c_spelling(wanted[0])
        raise _err(site, f"{site.marker_fn} returns {spelled}, but the call is declared to return "
                   f"{c_spelling(declared)}",
                   "declare the marker function to return one value per lane, e.g. "
                   "typedef struct { double d[4]; } vec4; for enzyme_width 4")


def _return_kind(site: _Site, opts: _Options, fn_out: Attribute, has_result: bool, fname: str) -> str | None:
    """How the function's result is treated: "active" (seeded in reverse mode, its
    tangent returned in forward mode), "dup" (a returned pointer's shadow), "const"."""
    if not has_result:
        if opts.primal_return:
            raise _err(site, f"enzyme_primal_return asks for the result of '{fname}', which returns void",
                       "remove enzyme_primal_return")
        return None
    if opts.primal_return and site.mode in ("augment", "reverse", "fwdsplit"):
        raise _err(site, "enzyme_primal_return is not available in split mode: __enzyme_augmentfwd returns "
                   "the primal result with the tape", "remove enzyme_primal_return")
    # a struct of floats (a complex number, a pair of doubles) has a tangent, field by field
    floating = is_float_type(fn_out) or (site.mode in FORWARD_MODES and _float_aggregate(fn_out))
    pointer = isinstance(fn_out, llvm.LLVMPointerType)
    kind = opts.ret
    aggregate = isinstance(fn_out, (llvm.LLVMStructType, llvm.LLVMArrayType))
    if kind is None and site.mode in ("rev", "reverse") and aggregate and any(map(is_float_type, _scalar_fields(fn_out))):
        # taken as constant, the derivatives would all be zero, silently; the seed of an
        # aggregate (one adjoint per field) has no spelling in Enzyme's C interface
        raise _err(site, f"reverse mode of '{fname}', which returns {c_spelling(fn_out)}: only a float result is "
                   "seeded", "differentiate a function that returns a double computed from the fields (e.g. "
                   "their weighted sum), or use __enzyme_fwddiff, which returns the struct's tangent; "
                   "enzyme_const_return if the result does not matter")
    if kind is None:
        if site.mode in FORWARD_MODES:
            return "dup" if pointer else ("active" if floating else "const")
        return "active" if floating else "const"
    if kind == "active" and not floating:
        raise _err(site, f"enzyme_active_return on '{fname}', whose result is {c_type_name(fn_out)}, not a float",
                   "enzyme_active_return marks a floating-point result; use enzyme_const_return")
    if kind == "dup":
        if site.mode not in FORWARD_MODES:
            raise _err(site, "enzyme_dup_return (a shadow of the result) is implemented in forward mode only",
                       "in reverse mode a float result is active (enzyme_active_return) or constant")
        if not (floating or pointer):
            raise _err(site, f"enzyme_dup_return on '{fname}', whose result is {c_type_name(fn_out)}",
                       "enzyme_dup_return needs a float or pointer result; use enzyme_const_return")
    if kind == "active" and site.mode in FORWARD_MODES:
        return "dup"
    return kind


def _float_aggregate(t: Attribute) -> bool:
    """A struct or array whose scalars are all floats (``_Complex double``, a struct of
    doubles returned in registers): differentiable as a whole."""
    return isinstance(t, (llvm.LLVMStructType, llvm.LLVMArrayType)) and all(
        is_float_type(f) for f in _scalar_fields(t))


def _activity(site: _Site, marker: str | None, ptype: Attribute, i: int, fname: str) -> Activity:
    is_ptr = isinstance(ptype, llvm.LLVMPointerType)
    if marker == "const":
        return Activity.CONST
    _refuse_undifferentiable(site, ptype, f"parameter {i + 1} of '{fname}'")
    if marker in ("dup", "dupnoneed"):
        if not (is_ptr or (site.mode in FORWARD_MODES and is_float_type(ptype))):
            raise _err(site, f"enzyme_{marker} on argument {i + 1} of '{fname}', which is not a pointer",
                       "use enzyme_dup for pointers; a float argument is active by default")
        return Activity.DUP if marker == "dup" else Activity.DUPNONEED
    if marker == "out":
        if not is_float_type(ptype):
            raise _err(site, f"enzyme_out on argument {i + 1} of '{fname}', which is not a float",
                       "enzyme_out marks an active floating-point argument")
        return Activity.ACTIVE
    if is_float_type(ptype):
        return Activity.ACTIVE
    if is_ptr:
        return Activity.DUP
    return Activity.CONST


def _is_float_like(t: Attribute) -> bool:
    """A float of any width, or a vector of them."""
    if isinstance(t, VectorType):
        t = t.element_type
    return is_float_type(t) or isinstance(t, (Float128Type, BFloat16Type))


def _refuse_undifferentiable(site: _Site, t: Attribute, what: str) -> None:
    """Floats zymase has no derivative rules for (``__float128``) and vectors of floats
    would otherwise be taken as constant: a zero derivative, silently."""
    if isinstance(t, VectorType) and _is_float_like(t):
        raise _err(site, f"{what} is a {c_type_name(t)}, and zymase does not differentiate vector "
                   "arguments or results of marker calls",
                   "pass the vector through memory (a pointer with enzyme_dup), or mark it enzyme_const")
    if _is_float_like(t) and not is_float_type(t):
        raise _err(site, f"{what} is a {c_type_name(t)}, a floating-point type zymase does not differentiate",
                   "use float, double or long double" + ("" if what.startswith("the result") else
                                                         ", or mark the argument enzyme_const"))


def _drop_dead_marker_globals(module: ModuleOp) -> None:
    """Marker loads are dead once their call is gone; an ``extern int enzyme_dup``
    left referenced would not link, so dead references and declarations go.

    One walk collects the loads and addresses; erasing a dead one may leave the
    address it loaded from dead, which is then looked at again (a worklist, where a
    fixpoint over the whole module walked it three or four times)."""
    references: list[Operation] = []
    addresses: list[llvm.AddressOfOp] = []
    for op in walk_ops(module):
        if is_a(op, llvm.AddressOfOp):
            addresses.append(op)
            references.append(op)
        elif is_a(op, llvm.LoadOp):
            references.append(op)
    erased: set[Operation] = set()
    work = [op for op in references if _is_dead_marker_reference(op)]
    while work:
        op = work.pop()
        if op in erased or not _is_dead_marker_reference(op):
            continue
        defining = [v.owner for v in op.operands if is_a(v.owner, (llvm.LoadOp, llvm.AddressOfOp))]
        op.parent_block().erase_op(op)
        erased.add(op)
        work.extend(defining)
    used = {op.global_name.root_reference.data for op in addresses if op not in erased}
    for op in list(module.body.block.ops):
        if isinstance(op, llvm.GlobalOp) and op.sym_name.data in KNOWN_MARKERS and op.sym_name.data not in used:
            if op.value is None and not op.body.blocks and "zymase.llvm_init" not in op.attributes:
                module.body.block.erase_op(op)
    for op in list(module.body.block.ops):
        if isinstance(op, llvm.FuncOp) and not op.body.blocks:
            n = op.sym_name.data
            if _marker_mode(n) is not None:
                module.body.block.erase_op(op)


def _is_dead_marker_reference(op: Operation) -> bool:
    """An unused load of a marker global (``load @enzyme_dup``) or address of one."""
    if any(r.uses for r in op.results):
        return False
    if is_a(op, llvm.LoadOp):
        return _global_named_by(op.results[0]) in KNOWN_MARKERS
    return _addressof_name(op.results[0]) in KNOWN_MARKERS
