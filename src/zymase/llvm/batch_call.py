"""Enzyme's ``__enzyme_batch(f, enzyme_width, N, args...)`` call sites: their arguments
read the way Enzyme reads them, and the call replaced by one call of ``f``'s batched
copy (:mod:`zymase.transforms.batch`).

Each parameter of ``f`` is *vector* (N values follow, one per lane; the default at a
width above 1) or *scalar* (one value, shared by the lanes; the default at width 1).
``enzyme_vector`` / ``enzyme_scalar`` set the kind of the next parameter only;
``enzyme_buffer, stride, p`` is a vector pointer parameter whose lane k is ``p + k *
stride`` bytes. ``enzyme_width, N`` (an integer constant) may stand anywhere before the
arguments it counts. The call returns the N results, lane by lane (a struct or array of
N values in C; the value itself at width 1), or nothing when ``f`` returns void.
"""

from __future__ import annotations

from zymase.ir import ArrayAttr, IntegerType, Operation, SSAValue, llvm
from zymase.llvm.marker_calls import _Builder, _err, _holds, _Site, _sret_type, c_spelling, c_type_name
from zymase.llvm.markers import (BATCH_MARKERS, KNOWN_MARKERS, UNIMPLEMENTED_MARKERS, _global_named_by,
                                 _refuse_dropped_lanes)


def lower_batch_site(site: _Site, fop: Operation, args: list[SSAValue], sret: SSAValue | None) -> None:
    """Replace the ``__enzyme_batch`` call ``site`` (``args``: what follows the function)."""
    from zymase.autodiff.flavor import Emitter, flavor_of
    from zymase.transforms.batch import batched_function

    call = site.call
    fname = fop.sym_name.data
    width, rest = _width(site, args)
    b = _Builder(call)
    inputs = list(fop.function_type.inputs.data)
    operands: list[SSAValue] = []
    vector: list[bool] = []
    result_slots = _result_slots(site, fop, sret, width, b)
    if result_slots is not None:
        # f returns a struct through a hidden pointer: lane k's goes to element k of the
        # call's own result buffer
        operands += result_slots
        vector.append(True)
    pos = 0
    first = 0 if result_slots is None else 1
    for i, ptype in enumerate(inputs[first:], start=first):
        kind = "vector" if width > 1 else "scalar"
        stride = None
        marker = _global_named_by(rest[pos]) if pos < len(rest) else None
        if marker in BATCH_MARKERS:
            kind = marker.removeprefix("enzyme_")
            pos += 1
            if kind == "buffer":
                if pos >= len(rest) or not isinstance(rest[pos].type, IntegerType):
                    raise _err(site, f"enzyme_buffer on argument {i + 1} of '{fname}' must be followed by the byte "
                               "stride between the lanes' pointers", "write enzyme_buffer, stride, p")
                stride = rest[pos]
                pos += 1
        elif marker in KNOWN_MARKERS or marker in UNIMPLEMENTED_MARKERS:
            raise _err(site, f"marker '{marker}' has no meaning in {site.marker_fn}, which takes enzyme_width, "
                       "enzyme_vector, enzyme_scalar and enzyme_buffer",
                       "mark each argument enzyme_vector (one value per lane) or enzyme_scalar (shared)")
        count = 1 if kind in ("scalar", "buffer") else width
        if pos + count > len(rest):
            got = len(rest) - pos
            lanes = f" ({width} values, one per lane: got {max(got, 0)})" if count > 1 else ""
            raise _err(site, f"too few arguments for '{fname}': argument {i + 1} is missing{lanes}",
                       "give a vector argument once per lane and a scalar one (enzyme_scalar) once")
        if stride is not None:
            if not isinstance(ptype, llvm.LLVMPointerType):
                raise _err(site, f"enzyme_buffer on argument {i + 1} of '{fname}', which is "
                           f"{c_type_name(ptype)}, not a pointer", "enzyme_buffer passes the lanes of a pointer")
            first = b.coerce(rest[pos], ptype, site, i, pos + 2, fname)
            operands += [b.lane_shadow(first, stride, k) for k in range(width)]
        else:
            operands += [b.coerce(rest[pos + k], ptype, site, i, pos + k + 2, fname) for k in range(count)]
        vector.append(kind != "scalar")
        pos += count
    if pos < len(rest):
        raise _err(site, f"too many arguments for '{fname}': it takes {len(inputs) - first}"
                   + (f", and {width} values for each vector argument" if width > 1 else ""),
                   "mark the shared arguments enzyme_scalar; the others take one value per lane")
    flavor = flavor_of(fop)
    name = batched_function(fop.parent_op(), fop, vector, width)
    outputs = flavor.signature(fop)[1]
    E = Emitter(flavor, fop.parent_op()).before(call)
    results = E.call(name, operands, [t for t in outputs for _ in range(width)])
    if width > 1:
        _refuse_dropped_lanes(site, call, sret, results)
    if result_slots is None:
        b.deliver(results, sret, site)
    call.parent_block().erase_op(call)


def _result_slots(site: _Site, fop: Operation, sret: SSAValue | None, width: int, b: _Builder) -> list[SSAValue] | None:
    """For an ``f`` whose first parameter is a hidden result pointer (``sret``), where
    each lane writes its result: element k of the call's own ``[width x T]`` result."""
    attrs = fop.properties.get("arg_attrs")
    result = attrs.data[0].data.get("llvm.sret") if isinstance(attrs, ArrayAttr) and attrs.data else None
    if result is None:
        return None
    lanes = llvm.LLVMArrayType(width, result)
    declared = _sret_type(site.call) if sret is not None else None
    if declared is None or not _holds(declared, lanes):
        returned = site.call.returned
        spelled = (c_spelling(declared) if declared is not None
                   else c_spelling(returned.type) if returned is not None else "void")
        raise _err(site, f"'{fop.sym_name.data}' returns {c_spelling(result)} through a hidden pointer, so "
                   f"{site.marker_fn} returns {width} of them, but the call is declared to return {spelled}",
                   f"declare the marker function to return a struct of {width} results, e.g. "
                   f"typedef struct {{ T lane[{width}]; }} batch_result;")
    return [b.v(llvm.GEPOp(sret, [0, k], lanes)) for k in range(width)]


def _width(site: _Site, args: list[SSAValue]) -> tuple[int, list[SSAValue]]:
    """``enzyme_width``'s N (1 without it) and the arguments without it."""
    for i, a in enumerate(args):
        if _global_named_by(a) == "enzyme_width":
            if i + 1 >= len(args):
                raise _err(site, "marker enzyme_width is not followed by its value", "write enzyme_width, N")
            owner = args[i + 1].owner
            value = owner.value.value.data if isinstance(owner, llvm.ConstantOp) and isinstance(
                args[i + 1].type, IntegerType) else None
            if value is None:
                raise _err(site, "enzyme_width must be followed by an integer constant, the number of lanes; "
                           "here it is a value known only at run time",
                           "write the width as a literal or a constant expression (e.g. enzyme_width, 4)")
            if value < 1:
                raise _err(site, f"enzyme_width {value}: the number of lanes must be at least 1",
                           "pass the number of inputs, e.g. enzyme_width, 4")
            return value, args[:i] + args[i + 2:]
    return 1, args
