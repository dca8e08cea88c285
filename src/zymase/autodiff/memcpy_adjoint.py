"""The reverse of a copy (``memcpy``/``memmove``) of floating-point data: small internal
functions, in llvm-dialect MLIR text like the cache runtime, that move the adjoints of
the copied floats back from the destination's shadow to the source's (as a whole, or per
element of an array of structs that also hold pointers, whose shadows the forward sweep
copies) and are added to a module once; and the run-time check that a copy of run-time
length moves whole floats. Kept apart from :mod:`zymase.autodiff.memory`,
which decides when a copy needs them.
"""

from __future__ import annotations

from zymase.autodiff.module_symbols import find_symbol

_MEMCPY_ADJOINT = """
builtin.module {{
  llvm.func internal @{name}(%dsrc: !llvm.ptr, %ddst: !llvm.ptr, %nbytes: i64) {{
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %size = llvm.mlir.constant({size} : i64) : i64
    %n = llvm.udiv %nbytes, %size : i64
    %down = llvm.icmp "ult" %ddst, %dsrc : !llvm.ptr
    llvm.cond_br %down, ^dhead(%n : i64), ^uhead(%zero : i64)
  ^uhead(%i: i64):
    %more = llvm.icmp "ult" %i, %n : i64
    llvm.cond_br %more, ^ubody, ^done
  ^ubody:
    llvm.call @{name}.one(%dsrc, %ddst, %i) : (!llvm.ptr, !llvm.ptr, i64) -> ()
    %next = llvm.add %i, %one : i64
    llvm.br ^uhead(%next : i64)
  ^dhead(%j: i64):
    %left = llvm.icmp "ugt" %j, %zero : i64
    llvm.cond_br %left, ^dbody, ^done
  ^dbody:
    %k = llvm.sub %j, %one : i64
    llvm.call @{name}.one(%dsrc, %ddst, %k) : (!llvm.ptr, !llvm.ptr, i64) -> ()
    llvm.br ^dhead(%k : i64)
  ^done:
    llvm.return
  }}
  llvm.func internal @{name}.strided(%dsrc: !llvm.ptr, %ddst: !llvm.ptr, %nbytes: i64, %period: i64,
                                     %lo: i64, %hi: i64) {{
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %len = llvm.sub %hi, %lo : i64
    %fits = llvm.icmp "uge" %nbytes, %hi : i64
    %rest = llvm.sub %nbytes, %hi : i64
    %whole = llvm.udiv %rest, %period : i64
    %more = llvm.add %whole, %one : i64
    %n = llvm.select %fits, %more, %zero : i1, i64
    %down = llvm.icmp "ult" %ddst, %dsrc : !llvm.ptr
    llvm.cond_br %down, ^dhead(%n : i64), ^uhead(%zero : i64)
  ^uhead(%i: i64):
    %umore = llvm.icmp "ult" %i, %n : i64
    llvm.cond_br %umore, ^ubody, ^done
  ^ubody:
    llvm.call @{name}.element(%dsrc, %ddst, %i, %period, %lo, %len) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> ()
    %next = llvm.add %i, %one : i64
    llvm.br ^uhead(%next : i64)
  ^dhead(%j: i64):
    %left = llvm.icmp "ugt" %j, %zero : i64
    llvm.cond_br %left, ^dbody, ^done
  ^dbody:
    %k = llvm.sub %j, %one : i64
    llvm.call @{name}.element(%dsrc, %ddst, %k, %period, %lo, %len) : (!llvm.ptr, !llvm.ptr, i64, i64, i64, i64) -> ()
    llvm.br ^dhead(%k : i64)
  ^done:
    llvm.return
  }}
  llvm.func internal @{name}.element(%dsrc: !llvm.ptr, %ddst: !llvm.ptr, %i: i64, %period: i64, %lo: i64,
                                     %len: i64) {{
    %base = llvm.mul %i, %period : i64
    %off = llvm.add %base, %lo : i64
    %s = llvm.getelementptr %dsrc[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %d = llvm.getelementptr %ddst[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.call @{name}(%s, %d, %len) : (!llvm.ptr, !llvm.ptr, i64) -> ()
    llvm.return
  }}
  llvm.func internal @{name}.pointers(%sdst: !llvm.ptr, %ssrc: !llvm.ptr, %nbytes: i64, %period: i64,
                                      %at: i64) {{
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %eight = llvm.mlir.constant(8 : i64) : i64
    %end = llvm.add %at, %eight : i64
    %fits = llvm.icmp "uge" %nbytes, %end : i64
    %rest = llvm.sub %nbytes, %end : i64
    %whole = llvm.udiv %rest, %period : i64
    %more = llvm.add %whole, %one : i64
    %n = llvm.select %fits, %more, %zero : i1, i64
    %down = llvm.icmp "ult" %sdst, %ssrc : !llvm.ptr
    llvm.cond_br %down, ^uhead(%zero : i64), ^dhead(%n : i64)
  ^uhead(%i: i64):
    %umore = llvm.icmp "ult" %i, %n : i64
    llvm.cond_br %umore, ^ubody, ^done
  ^ubody:
    llvm.call @{name}.pointer(%sdst, %ssrc, %i, %period, %at) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
    %next = llvm.add %i, %one : i64
    llvm.br ^uhead(%next : i64)
  ^dhead(%j: i64):
    %left = llvm.icmp "ugt" %j, %zero : i64
    llvm.cond_br %left, ^dbody, ^done
  ^dbody:
    %k = llvm.sub %j, %one : i64
    llvm.call @{name}.pointer(%sdst, %ssrc, %k, %period, %at) : (!llvm.ptr, !llvm.ptr, i64, i64, i64) -> ()
    llvm.br ^dhead(%k : i64)
  ^done:
    llvm.return
  }}
  llvm.func internal @{name}.pointer(%sdst: !llvm.ptr, %ssrc: !llvm.ptr, %i: i64, %period: i64, %at: i64) {{
    %base = llvm.mul %i, %period : i64
    %off = llvm.add %base, %at : i64
    %s = llvm.getelementptr %ssrc[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %d = llvm.getelementptr %sdst[%off] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %p = llvm.load %s : !llvm.ptr -> !llvm.ptr
    llvm.store %p, %d : !llvm.ptr, !llvm.ptr
    llvm.return
  }}
  llvm.func internal @{name}.one(%dsrc: !llvm.ptr, %ddst: !llvm.ptr, %i: i64) {{
    %ps = llvm.getelementptr %dsrc[%i] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
    %pd = llvm.getelementptr %ddst[%i] : (!llvm.ptr, i64) -> !llvm.ptr, {t}
    %d = llvm.load %pd : !llvm.ptr -> {t}
    %z = llvm.mlir.constant(0.0 : {t}) : {t}
    llvm.store %z, %pd : {t}, !llvm.ptr
    %s = llvm.load %ps : !llvm.ptr -> {t}
    %sum = llvm.fadd %s, %d : {t}
    llvm.store %sum, %ps : {t}, !llvm.ptr
    llvm.return
  }}
}}
"""


# A copy of run-time length whose byte count is not a whole number of the floats it
# moves (``8 * k + 4`` bytes of doubles) moves part of a float: its bits, which carry no
# derivative zymase can follow (a compile-time length is refused by type analysis). The
# derivative checks the count where it runs and ends the program with one
# ``zymase: error: ...`` line (the site's own text, a private global) on stderr; the
# reporter is out of line and cold, so a copy only gains a remainder and a compare.
WHOLE_FLOATS_CHECK = "__zymase_whole_floats"
_WHOLE_FLOATS = """
builtin.module {
  llvm.func internal @__zymase_whole_floats(%nbytes: i64, %size: i64, %msg: !llvm.ptr, %len: i64) {
    %zero = llvm.mlir.constant(0 : i64) : i64
    %rest = llvm.urem %nbytes, %size : i64
    %part = llvm.icmp "ne" %rest, %zero : i64
    llvm.cond_br %part, ^report, ^whole
  ^report:
    llvm.call @__zymase_partial_copy(%msg, %len) : (!llvm.ptr, i64) -> ()
    llvm.unreachable
  ^whole:
    llvm.return
  }
  llvm.func internal @__zymase_partial_copy(%msg: !llvm.ptr, %len: i64) attributes {passthrough = ["noinline", "cold"]} {
    %fd = llvm.mlir.constant(2 : i32) : i32
    %w = llvm.call @write(%fd, %msg, %len) : (i32, !llvm.ptr, i64) -> i64
    llvm.call @abort() : () -> ()
    llvm.unreachable
  }
}
"""


def require_whole_floats_check(module) -> str:
    """The run-time check that a copy's byte count is a whole number of floats
    (``__zymase_whole_floats(nbytes, size, message, length)``), added to the module once;
    the caller declares ``write`` and ``abort``."""
    return _add_once(module, WHOLE_FLOATS_CHECK, _WHOLE_FLOATS, "<zymase whole-floats check>")


def check_whole_floats(gen, op, ftype: str, nbytes) -> None:
    """Emit, with ``gen``'s emitter (a ``ShadowCode``), the run-time check that the copy
    ``op`` of ``nbytes`` bytes (an i64 value known only at run time) moves whole
    ``ftype`` values; its message names the copy, the function and the source line."""
    import hashlib

    from zymase.errors import ZymaseError
    from zymase.ir import IntegerAttr, IntegerType, StringAttr, i64, llvm, location_of
    from zymase.analysis.memory import callee_name

    E, module = gen.E, gen.ctx.module
    size = 8 if ftype == "f64" else 4
    cname = "double" if ftype == "f64" else "float"
    location = location_of(op)
    hint = f"copy whole values (a multiple of sizeof({cname}) bytes)"
    if location is None:
        hint += "; compile with -g to see the source line in this message"
    text = ZymaseError(
        f"a copy of a length known only at run time moves a number of bytes that is not a whole number of "
        f"the {size}-byte {cname} values it copies: part of a {cname} would be copied, whose bits carry no "
        "derivative zymase can follow",
        construct=f"call @{callee_name(op) or op.intrin.data}", function=gen.fname, location=location,
        hint=hint).format() + "\n"
    data = text.encode()
    label = f"__zymase_partial_copy_message.{hashlib.sha1(data).hexdigest()[:12]}"
    if find_symbol(module, label) is None:
        module.body.block.add_op(llvm.GlobalOp(llvm.LLVMArrayType(len(data), IntegerType(8)), label, "private",
                                               constant=True, value=StringAttr(text)))
    gen._declare("write", [IntegerType(32), llvm.LLVMPointerType(), i64], i64)
    gen._declare("abort", [], llvm.LLVMVoidType())
    check = require_whole_floats_check(module)
    message = E.v(llvm.AddressOfOp(label, llvm.LLVMPointerType()))
    E.insert(llvm.CallOp(check, nbytes, E.v(llvm.ConstantOp(IntegerAttr(size, i64), i64)), message,
                         E.v(llvm.ConstantOp(IntegerAttr(len(data), i64), i64))))


def _add_once(module, name: str, text: str, label: str) -> str:
    if find_symbol(module, name) is not None:
        return name
    from zymase.cache import parsed_mlir

    runtime = parsed_mlir(text, label)
    for op in list(runtime.body.block.ops):
        op.detach()
        module.body.block.add_op(op)
    return name


def require_memcpy_adjoint(module, ftype: str) -> str:
    """The reverse of a memcpy/memmove of ``ftype`` elements, a small internal
    function added to the module once (llvm-dialect MLIR text, like the cache
    runtime). Element by element: the destination's adjoint is read and zeroed,
    then added to the source's; walking towards the source's side first keeps an
    overlapping memmove correct (an element is moved on only after its own
    adjoint has been handed back)."""
    name = f"__zymase_memcpy_adjoint_{ftype}"
    return _add_once(module, name, _MEMCPY_ADJOINT.format(name=name, t=ftype, size=8 if ftype == "f64" else 4),
                     "<zymase memcpy adjoint>")
