"""Unit tests of the LLVM boundary: zymase.llvm.reader, zymase.llvm.writer and the
extension ops of zymase.ir.llvm_ext.

Each construct is read from hand-written LLVM IR, checked in its xDSL form, written
back, verified by LLVM, and (where it says something about semantics) executed
with llvmlite's JIT on both sides of the round trip.
"""

from __future__ import annotations

import ctypes
import importlib.util
import math
import struct
from pathlib import Path

import llvmlite.binding as llvm
import pytest

from zymase.errors import ZymaseError
from zymase.ir import (
    Block,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Region,
    StringAttr,
    f32,
    f64,
    i1,
    i32,
    i64,
    llvm as L,
    llvm_ext,
    location_of,
    parse_mlir,
    print_mlir,
)
from zymase.llvm.reader import read_llvm_ir
from zymase.llvm.writer import write_llvm_ir

# ------------------------------------------------------------------ helpers


def roundtrip(text: str, filename: str = "test.ll") -> tuple[ModuleOp, str]:
    """Read, verify the xDSL module, write, and check that LLVM accepts the output."""
    module = read_llvm_ir(text, filename)
    module.verify()
    out = write_llvm_ir(module)
    parsed = llvm.parse_assembly(out, llvm.create_context())
    parsed.verify()
    return module, out


def ops_named(module: ModuleOp, name: str) -> list:
    return [op for op in module.walk() if op.name == name]


def func(module: ModuleOp, name: str):
    for op in module.body.block.ops:
        if op.name == "llvm.func" and op.properties["sym_name"].data == name:
            return op
    raise KeyError(name)


_engines = []  # keep JIT engines alive for the whole test session


def jit(text: str, name: str, restype, *argtypes):
    """A ctypes callable for ``name`` in the LLVM IR ``text`` (MCJIT)."""
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    module = llvm.parse_assembly(text)
    module.verify()
    machine = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, machine)
    engine.finalize_object()
    _engines.append(engine)
    return ctypes.CFUNCTYPE(restype, *argtypes)(engine.get_function_address(name))


def same_behaviour(text: str, name: str, restype, argtypes, inputs):
    """The function computes the same results before and after the round trip."""
    _, out = roundtrip(text)
    before = jit(text, name, restype, *argtypes)
    after = jit(out, name, restype, *argtypes)
    for args in inputs:
        a, b = before(*args), after(*args)
        assert a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b)), (args, a, b)
    return out


# ------------------------------------------------------------- control flow

SWITCH = """
define i32 @sw(i32 %k, i32 %x) {
entry:
  switch i32 %k, label %other [
    i32 1, label %one
    i32 2, label %two
    i32 -5, label %two
    i32 9, label %join
  ]
one:
  %a = add nsw i32 %x, 10
  br label %join
two:
  %b = mul i32 %x, 3
  br label %join
other:
  br label %join
join:
  %r = phi i32 [ %a, %one ], [ %b, %two ], [ 42, %other ], [ 7, %entry ]
  ret i32 %r
}
"""


def test_switch_structure_and_behaviour():
    module, _ = roundtrip(SWITCH)
    (switch,) = ops_named(module, "llvm.switch")
    assert isinstance(switch, llvm_ext.SwitchOp)
    assert switch.case_value_list() == [1, 2, -5, 9]
    assert [len(ops) for ops in switch.case_operand_lists()] == [0, 0, 0, 1]
    (join_value,) = switch.case_operand_lists()[3]
    assert join_value.owner.properties["value"].value.data == 7
    same_behaviour(SWITCH, "sw", ctypes.c_int32, [ctypes.c_int32] * 2,
                   [(k, 5) for k in (-5, 0, 1, 2, 3, 9, 100)])


PHI_CONSTANTS = """
define double @pick(i1 %c, double %x) {
entry:
  br i1 %c, label %a, label %b
a:
  br label %m
b:
  br label %m
m:
  %p = phi double [ 0.1, %a ], [ %x, %b ]
  %q = phi i64 [ -1, %a ], [ 9223372036854775807, %b ]
  %f = sitofp i64 %q to double
  %r = fadd double %p, %f
  ret double %r
}
"""


def test_phi_constants_are_materialized_in_the_predecessor():
    module, _ = roundtrip(PHI_CONSTANTS)
    blocks = list(func(module, "pick").body.blocks)
    merge = blocks[3]
    assert [a.type for a in merge.args] == [f64, i64]
    branch_a = blocks[1].last_op
    constants = [op for op in blocks[1].ops if op.name == "llvm.mlir.constant"]
    assert all(c.parent_block() is blocks[1] for c in constants)
    assert constants and constants[-1].next_op is branch_a  # right before the terminator
    assert branch_a.operands[0].owner.properties["value"].value.data == 0.1
    same_behaviour(PHI_CONSTANTS, "pick", ctypes.c_double, [ctypes.c_bool, ctypes.c_double],
                   [(True, 2.5), (False, 2.5)])


SAME_TARGET_TWICE = """
define i32 @twice(i1 %c, i32 %x) {
entry:
  %y = add i32 %x, 1
  br i1 %c, label %m, label %m
m:
  %p = phi i32 [ %y, %entry ], [ %y, %entry ]
  ret i32 %p
}
"""


def test_cond_br_to_the_same_block_twice():
    module, out = roundtrip(SAME_TARGET_TWICE)
    (br,) = ops_named(module, "llvm.cond_br")
    assert br.successors[0] is br.successors[1]
    assert len(br.then_arguments) == 1 and len(br.else_arguments) == 1
    same_behaviour(SAME_TARGET_TWICE, "twice", ctypes.c_int32, [ctypes.c_bool, ctypes.c_int32],
                   [(True, 4), (False, 4)])


def test_writer_splits_edges_with_different_operands():
    """cond_br %c, ^b(%x), ^b(%y): the second edge needs a trampoline block."""
    text = """
    builtin.module {
      llvm.func @sel(%c: i1, %x: i32, %y: i32) -> i32 {
        llvm.cond_br %c, ^bb1(%x : i32), ^bb1(%y : i32)
      ^bb1(%v: i32):
        llvm.return %v : i32
      }
      llvm.func @sw(%k: i32, %x: f64, %y: f64) -> f64 {
        llvm.switch %k : i32, ^bb1(%x : f64) [1: ^bb1(%y : f64), 2: ^bb1(%x : f64), 3: ^bb1(%y : f64)]
      ^bb1(%v: f64):
        llvm.return %v : f64
      }
    }
    """
    module = parse_mlir(text)
    module.verify()
    out = write_llvm_ir(module)
    llvm.parse_assembly(out).verify()
    sel = jit(out, "sel", ctypes.c_int32, ctypes.c_bool, ctypes.c_int32, ctypes.c_int32)
    assert sel(True, 1, 2) == 1 and sel(False, 1, 2) == 2
    sw = jit(out, "sw", ctypes.c_double, ctypes.c_int32, ctypes.c_double, ctypes.c_double)
    assert [sw(k, 1.5, 2.5) for k in (0, 1, 2, 3)] == [1.5, 2.5, 1.5, 2.5]


# --------------------------------------------------------------- constants

CONSTANT_EXPRESSIONS = """
@table = global [4 x i64] [i64 10, i64 20, i64 30, i64 40], align 16
@ptr_to_third = global ptr getelementptr inbounds (i8, ptr @table, i64 16), align 8

define i64 @third() {
  %p = load ptr, ptr @ptr_to_third, align 8
  %v = load i64, ptr %p, align 8
  %w = load i64, ptr getelementptr inbounds ([4 x i64], ptr @table, i64 0, i64 3), align 8
  %d = sub i64 ptrtoint (ptr getelementptr (i8, ptr @table, i64 8) to i64), ptrtoint (ptr @table to i64)
  %s = add i64 %v, %w
  %r = add i64 %s, %d
  ret i64 %r
}
"""


def test_constant_expressions_become_instructions():
    module, _ = roundtrip(CONSTANT_EXPRESSIONS)
    body = func(module, "third")
    names = [op.name for op in body.walk()]
    assert "llvm.ptrtoint" in names and "llvm.getelementptr" in names
    assert "llvm.mlir.addressof" in names
    init = [op for op in module.body.block.ops if op.name == "llvm.mlir.global"][1]
    assert init.attributes["zymase.llvm_init"].data == "getelementptr inbounds (i8, ptr @table, i64 16)"
    assert same_behaviour(CONSTANT_EXPRESSIONS, "third", ctypes.c_int64, [], [()])


GLOBALS = r"""
%struct.pair = type { double, i32 }

@.str = private unnamed_addr constant [11 x i8] c"hi \22you\22\0A\00\FF", align 1
@enzyme_dup = external global i32
@enzyme_const = dso_local global i32 0, align 4
@counter = internal global i64 -5, align 8
@tl = thread_local global float 0x3FB99999A0000000, align 4
@pair = global %struct.pair { double 1.500000e+00, i32 3 }, align 8
@zeros = common global [8 x double] zeroinitializer, align 16
@"quoted name" = global i8 1
@names = global [2 x ptr] [ptr @.str, ptr @"quoted name"]

define ptr @get() {
  ret ptr @.str
}
"""


def test_globals_and_strings():
    module, out = roundtrip(GLOBALS)
    globals_ = {op.properties["sym_name"].data: op for op in module.body.block.ops
                if op.name == "llvm.mlir.global"}
    assert globals_[".str"].properties["value"] == StringAttr('hi "you"\n\x00\xff')
    assert globals_[".str"].properties["constant"] is not None
    assert globals_[".str"].properties["unnamed_addr"].value.data == 2
    assert "value" not in globals_["enzyme_dup"].properties
    assert "zymase.llvm_init" not in globals_["enzyme_dup"].attributes
    assert globals_["enzyme_const"].properties["value"] == IntegerAttr(0, i32)
    assert globals_["counter"].properties["linkage"].linkage.data == "internal"
    assert globals_["tl"].properties["thread_local_"] is not None
    assert globals_["tl"].properties["value"].value.data == struct.unpack("f", struct.pack("f", 0.1))[0]
    assert globals_["pair"].properties["global_type"] == L.LLVMStructType(
        StringAttr("struct.pair"), L.ArrayAttr([f64, i32]))
    assert "quoted name" in globals_
    assert "%struct.pair = type { double, i32 }" in out
    assert '@"quoted name" = global i8 1' in out
    reread = str(llvm.parse_assembly(out))
    assert r'c"hi \22you\22\0A\00\FF"' in reread
    assert "@enzyme_dup = external global i32" in reread


def test_exact_float_constants():
    text = """
    @g = global float 0x3FB99999A0000000
    define double @f(double %x) {
      %a = fadd double %x, 1.000000e-01
      %b = fmul double %a, 1.000000e-300
      %c = fadd double %b, 0x7FF0000000000000
      %d = fsub double %c, -0.000000e+00
      ret double %d
    }
    define float @g1(float %x) {
      %a = fadd float %x, 0x3FB99999A0000000
      ret float %a
    }
    define half @h(half %x) {
      %a = fadd half %x, 0xH3555
      ret half %a
    }
    define double @nan() {
      ret double 0x7FF8000000000123
    }
    """
    module, out = roundtrip(text)
    values = {c.properties["value"].value.data for c in ops_named(module, "llvm.mlir.constant")
              if isinstance(c.properties["value"], FloatAttr)}
    assert 0.1 in values and 1e-300 in values and math.inf in values
    assert struct.unpack("f", struct.pack("f", 0.1))[0] in values
    assert "0x3FB999999999999A" in out  # double 0.1, bit-exact
    assert "0x01A56E1FC2F8F359" in out  # 1e-300
    assert "0x3FB99999A0000000" in out  # float 0.1 as double-hex
    assert "0x7FF8000000000123" in out  # NaN payload kept
    reread = str(llvm.parse_assembly(out))
    assert "1.000000e-01" in reread and "1.000000e-300" in reread
    assert "0xH3555" in reread


def test_vector_and_aggregate_constants():
    text = """
    define <4 x i32> @v(<4 x i32> %x) {
      %a = add <4 x i32> %x, <i32 1, i32 2, i32 3, i32 4>
      %b = mul <4 x i32> %a, splat (i32 3)
      %c = add <4 x i32> %b, <i32 poison, i32 1, i32 undef, i32 0>
      %d = shufflevector <4 x i32> %c, <4 x i32> zeroinitializer, <4 x i32> <i32 3, i32 poison, i32 1, i32 0>
      ret <4 x i32> %d
    }
    define { double, [2 x i8] } @agg() {
      ret { double, [2 x i8] } { double 2.5, [2 x i8] c"ok" }
    }
    """
    module, out = roundtrip(text)
    assert ops_named(module, "llvm.insertvalue")
    assert ops_named(module, "llvm.shufflevector")[0].properties["mask"].get_values() == (3, -1, 1, 0)


# ---------------------------------------------------------------- flags


FLAGS = """
define double @f(double %x, double %y) {
  %a = fadd fast double %x, %y
  %b = fmul nnan ninf double %a, %y
  %c = fcmp reassoc olt double %a, %b
  %d = select nsz i1 %c, double %a, double %b
  %e = fneg arcp double %d
  %s = call afn double @llvm.sin.f64(double %e)
  ret double %s
}
define i32 @g(i32 %x, i32 %y) {
  %a = add nuw nsw i32 %x, %y
  %b = sdiv exact i32 %a, 4
  %c = or disjoint i32 %b, 1
  %d = shl nsw i32 %c, 2
  %e = zext nneg i32 %d to i64
  %f = trunc nuw i64 %e to i32
  %g = lshr exact i32 %f, 1
  %h = uitofp nneg i32 %g to double
  %i = fptosi double %h to i32
  ret i32 %i
}
declare double @llvm.sin.f64(double)
"""


def test_fast_math_and_integer_flags():
    module, out = roundtrip(FLAGS)
    by_name = {op.name: op for op in module.walk()}
    fmf = lambda op: {str(f) for f in op.properties["fastmathFlags"].data}  # noqa: E731
    assert len(fmf(by_name["llvm.fadd"])) == 7  # fast = every flag
    assert fmf(by_name["llvm.fmul"]) == {"nnan", "ninf"}
    assert fmf(by_name["llvm.fcmp"]) == {"reassoc"}
    assert fmf(by_name["llvm.select"]) == {"nsz"}
    assert fmf(by_name["llvm.fneg"]) == {"arcp"}
    assert fmf(by_name["llvm.call_intrinsic"]) == {"afn"}
    assert by_name["llvm.add"].properties["overflowFlags"].value.data == 3
    assert by_name["llvm.sdiv"].properties["isExact"] is not None
    assert by_name["llvm.or"].properties["isDisjoint"] is not None
    assert by_name["llvm.zext"].properties["nonNeg"] is not None
    assert by_name["llvm.uitofp"].properties["nonNeg"] is not None
    for text in ("fadd fast double", "fmul nnan ninf double", "fcmp reassoc olt", "select nsz i1",
                 "fneg arcp double", "call afn double @llvm.sin.f64", "add nuw nsw i32",
                 "sdiv exact i32", "or disjoint i32", "shl nsw i32", "zext nneg i32",
                 "trunc nuw i64", "lshr exact i32", "uitofp nneg i32", "fptosi double"):
        assert text in out, text


# ---------------------------------------------------------------- calls


CALLS = r"""
@.fmt = private constant [7 x i8] c"%d %f\0A\00"

declare i32 @printf(ptr noundef, ...)
declare double @llvm.fmuladd.f64(double, double, double)
declare double @llvm.powi.f64.i32(double, i32)
declare void @llvm.memcpy.p0.p0.i64(ptr noalias, ptr noalias, i64, i1 immarg)
declare void @llvm.lifetime.start.p0(ptr)
declare void @llvm.lifetime.end.p0(ptr)
declare double @sin(double)

define internal fastcc double @twice(double %x) {
  %r = fmul double %x, 2.000000e+00
  ret double %r
}

define double @calls(double %x, ptr %fp, ptr %dst, ptr %src) {
  %buf = alloca [4 x double], align 16
  call void @llvm.lifetime.start.p0(ptr %buf)
  %m = call double @llvm.fmuladd.f64(double %x, double 2.000000e+00, double 1.000000e+00)
  %p = call double @llvm.powi.f64.i32(double %m, i32 3)
  call void @llvm.memcpy.p0.p0.i64(ptr align 8 %dst, ptr align 8 %src, i64 16, i1 false)
  %s = tail call double @sin(double noundef %p)
  %i = call double %fp(double %s)
  %t = call fastcc double @twice(double %i)
  %n = call i32 (ptr, ...) @printf(ptr noundef @.fmt, i32 7, double %t)
  call void @llvm.lifetime.end.p0(ptr %buf)
  ret double %t
}
"""


def test_calls_variadic_indirect_intrinsics():
    module, out = roundtrip(CALLS)
    calls = ops_named(module, "llvm.call")
    printf = next(c for c in calls if c.properties.get("callee") and
                  c.properties["callee"].root_reference.data == "printf")
    assert printf.properties["var_callee_type"] == L.LLVMFunctionType([L.LLVMPointerType()], i32, True)
    indirect = next(c for c in calls if c.properties.get("callee") is None)
    assert indirect.operands[0] is func(module, "calls").body.blocks[0].args[1]
    fast = next(c for c in calls if c.properties.get("callee") and
                c.properties["callee"].root_reference.data == "twice")
    assert fast.properties["CConv"].cconv_name == "fastcc"
    assert func(module, "twice").properties["CConv"].cconv_name == "fastcc"
    intrinsics = {op.properties["intrin"].data for op in ops_named(module, "llvm.call_intrinsic")}
    assert intrinsics == {"llvm.fmuladd.f64", "llvm.powi.f64.i32", "llvm.memcpy.p0.p0.i64",
                          "llvm.lifetime.start.p0", "llvm.lifetime.end.p0"}
    names = {op.properties["sym_name"].data for op in module.body.block.ops if op.name == "llvm.func"}
    assert not any(n.startswith("llvm.") for n in names)  # intrinsic declarations are not kept
    assert "call i32 (ptr, ...) @printf(" in out
    assert "i64 16, i1 false)" in out  # the immarg stays a literal
    assert "declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)" in out
    assert "call fastcc double @twice" in out


def test_debug_intrinsics_and_assume_are_dropped():
    text = """
    define void @f(ptr %p) {
      call void @llvm.assume(i1 true) [ "align"(ptr %p, i64 8) ]
      ret void
    }
    declare void @llvm.assume(i1)
    """
    module, _ = roundtrip(text)
    assert not ops_named(module, "llvm.call_intrinsic")


def test_noalias_scope_declarations_are_kept():
    text = """
    define void @f(ptr %p) {
      call void @llvm.experimental.noalias.scope.decl(metadata !0)
      ret void
    }
    declare void @llvm.experimental.noalias.scope.decl(metadata)
    !0 = !{!1}
    !1 = distinct !{!1, !2, !"scope"}
    !2 = distinct !{!2, !"domain"}
    """
    module, out = roundtrip(text)
    (decl,) = ops_named(module, "llvm.call_intrinsic")
    assert decl.attributes["zymase.scope_decl"].data == "f.2|1"
    assert "call void @llvm.experimental.noalias.scope.decl(metadata !" in out


# ----------------------------------------------------------------- memory


MEMORY = """
%struct.s = type { i32, [3 x double] }

define double @mem(ptr %p, i64 %i) {
  %a = alloca %struct.s, align 16
  %n = alloca double, i64 %i, align 8
  %f = getelementptr inbounds nuw %struct.s, ptr %a, i64 0, i32 1, i64 %i
  store volatile double 2.500000e+00, ptr %f, align 8
  %g = getelementptr i8, ptr %p, i64 -8
  %v = load double, ptr %g, align 4
  %w = load volatile double, ptr %f, align 8
  %x = load atomic i64, ptr %p seq_cst, align 8
  store atomic i64 %x, ptr %p release, align 8
  %big = getelementptr double, ptr %p, i64 4294967296
  %r = fadd double %v, %w
  ret double %r
}
"""


def test_alloca_load_store_gep():
    module, out = roundtrip(MEMORY)
    allocas = ops_named(module, "llvm.alloca")
    assert allocas[0].properties["elem_type"].struct_name.data == "struct.s"
    assert allocas[0].properties["alignment"].value.data == 16
    assert allocas[1].operands[0] is func(module, "mem").body.blocks[0].args[1]
    geps = ops_named(module, "llvm.getelementptr")
    assert tuple(geps[0].properties["rawConstantIndices"].get_values()) == (0, 1, L.GEP_USE_SSA_VAL)
    assert geps[0].properties["inbounds"] is not None
    assert geps[0].properties["noWrapFlags"].value.data == 7
    assert tuple(geps[1].properties["rawConstantIndices"].get_values()) == (-8,)
    assert tuple(geps[2].properties["rawConstantIndices"].get_values()) == (L.GEP_USE_SSA_VAL,)
    stores = ops_named(module, "llvm.store")
    assert stores[0].properties["volatile_"] is not None
    assert stores[1].properties["ordering"].value.data == 5  # release
    loads = ops_named(module, "llvm.load")
    assert loads[0].properties["alignment"].value.data == 4
    assert loads[1].properties["volatile_"] is not None
    assert loads[2].properties["ordering"].value.data == 7  # seq_cst
    for text in ("getelementptr inbounds nuw %struct.s, ptr", "i32 1, i64", "store volatile double",
                 "load atomic i64, ptr %a0 seq_cst, align 8", "store atomic i64",
                 "alloca double, i64 %a1, align 8", "i64 4294967296"):
        assert text in out, text


def test_tbaa_names_on_loads_and_stores():
    text = """
    define void @f(ptr %p, ptr %q) {
      %v = load double, ptr %p, align 8, !tbaa !0
      store i32 1, ptr %q, align 4, !tbaa !4
      %x = load ptr, ptr %q, align 8, !tbaa !6
      ret void
    }
    !0 = !{!1, !1, i64 0}
    !1 = !{!"double", !2, i64 0}
    !2 = !{!"omnipotent char", !3, i64 0}
    !3 = !{!"Simple C/C++ TBAA"}
    !4 = !{!8, !5, i64 4}
    !5 = !{!"int", !2, i64 0}
    !6 = !{!7, !7, i64 0}
    !7 = !{!"any pointer", !2, i64 0}
    !8 = !{!"S", !5, i64 0, !5, i64 4}
    """
    module, _ = roundtrip(text)
    tags = [op.attributes["zymase.tbaa"].data for op in module.walk() if "zymase.tbaa" in op.attributes]
    assert tags == ["double", "int", "any pointer"]


def test_dbg_locations():
    text = """
    define double @f(double %x) !dbg !4 {
      %a = fmul double %x, %x, !dbg !8
      %b = fadd double %a, 1.0, !dbg !9
      ret double %b, !dbg !10
    }
    !llvm.dbg.cu = !{!0}
    !llvm.module.flags = !{!3}
    !0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
    !1 = !DIFile(filename: "file.c", directory: "/tmp")
    !3 = !{i32 2, !"Debug Info Version", i32 3}
    !4 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 3, type: !5, unit: !0, spFlags: DISPFlagDefinition)
    !5 = !DISubroutineType(types: !{})
    !6 = distinct !DILexicalBlock(scope: !4, file: !7, line: 5, column: 3)
    !7 = !DIFile(filename: "inc.h", directory: "/tmp")
    !8 = !DILocation(line: 4, column: 12, scope: !4)
    !9 = !DILocation(line: 5, column: 7, scope: !6)
    !10 = !DILocation(line: 0, scope: !4)
    """
    module, _ = roundtrip(text)
    assert location_of(ops_named(module, "llvm.fmul")[0]) == "file.c:4:12"
    assert location_of(ops_named(module, "llvm.fadd")[0]) == "inc.h:5:7"
    assert location_of(ops_named(module, "llvm.return")[0]) is None  # line 0: no location


def test_function_and_parameter_attributes():
    text = """
    %struct.big = type { [8 x double] }
    define dso_local void @f(ptr sret(%struct.big) %out, ptr noalias noundef readonly captures(none) align 8 dereferenceable(16) %p, ptr byval(%struct.big) align 8 %b, i32 zeroext %z) #0 {
      ret void
    }
    define noundef signext i8 @g() {
      ret i8 1
    }
    attributes #0 = { noinline nounwind memory(argmem: read) uwtable "target-cpu"="x86-64" "no-builtins" }
    """
    module, out = roundtrip(text)
    f = func(module, "f")
    arg0 = f.properties["arg_attrs"].data[1].data
    assert set(arg0) == {"llvm.noalias", "llvm.noundef", "llvm.readonly", "llvm.nocapture",
                         "llvm.align", "llvm.dereferenceable"}
    assert arg0["llvm.dereferenceable"].value.data == 16
    big = L.LLVMStructType(StringAttr("struct.big"), L.ArrayAttr([L.LLVMArrayType(8, f64)]))
    assert f.properties["arg_attrs"].data[2].data["llvm.byval"] == big
    assert f.properties["arg_attrs"].data[0].data["llvm.sret"] == big
    assert "llvm.zeroext" in f.properties["arg_attrs"].data[3].data
    assert set(func(module, "g").properties["res_attrs"].data[0].data) == {"llvm.noundef", "llvm.signext"}
    passthrough = f.properties["passthrough"].data
    assert StringAttr("noinline") in passthrough and StringAttr("memory(argmem: read)") in passthrough
    assert L.ArrayAttr([StringAttr("target-cpu"), StringAttr("x86-64")]) in passthrough
    assert L.ArrayAttr([StringAttr("no-builtins"), StringAttr("")]) in passthrough
    reread = str(llvm.parse_assembly(out, llvm.create_context()))
    for text in ("byval(%struct.big)", "sret(%struct.big)", "memory(argmem: read)",
                 '"target-cpu"="x86-64"', '"no-builtins"', "noundef signext i8 @g",
                 "dereferenceable(16)", "zeroext"):
        assert text in reread, text


def test_module_target_attributes():
    text = """
    target datalayout = "e-m:e-i64:64-f80:128-n8:16:32:64-S128"
    target triple = "x86_64-pc-linux-gnu"
    define void @f() {
      ret void
    }
    """
    module, out = roundtrip(text)
    assert module.attributes["llvm.target_triple"] == StringAttr("x86_64-pc-linux-gnu")
    assert module.attributes["llvm.data_layout"].data.startswith("e-m:e")
    assert 'target triple = "x86_64-pc-linux-gnu"' in out


def test_extension_ops_read_from_llvm_ir():
    text = """
    define i32 @ext(double %x, <4 x float> %v, ptr %p, i32 %i, ptr %ap) {
      %a = fptosi double %x to i32
      %b = fptoui double %x to i64
      %c = uitofp i32 %i to float
      %d = extractelement <4 x float> %v, i32 %i
      %e = freeze i32 %a
      %f = atomicrmw add ptr %p, i32 %e seq_cst, align 4
      %g = cmpxchg weak ptr %p, i32 %f, i32 0 acq_rel monotonic, align 4
      %h = extractvalue { i32, i1 } %g, 0
      fence acquire
      %q = addrspacecast ptr %p to ptr addrspace(1)
      %va = va_arg ptr %ap, i32
      %s = add i32 %h, %va
      %t = add i32 %s, poison
      ret i32 %s
    }
    """
    module, out = roundtrip(text)
    names = {op.name for op in module.walk()}
    assert {"llvm.fptosi", "llvm.fptoui", "llvm.uitofp", "llvm.extractelement", "llvm.freeze",
            "llvm.atomicrmw", "llvm.cmpxchg", "llvm.fence", "llvm.addrspacecast", "llvm.va_arg",
            "llvm.mlir.poison"} <= names
    for text in ("atomicrmw add ptr", "cmpxchg weak ptr", "fence acquire", "va_arg ptr",
                 "addrspacecast ptr"):
        assert text in out, text


def test_pointer_compare_and_vector_select_verify():
    text = """
    define <2 x double> @f(ptr %p, ptr %q, <2 x double> %a, <2 x double> %b) {
      %c = icmp eq ptr %p, null
      %m = fcmp olt <2 x double> %a, %b
      %s = select <2 x i1> %m, <2 x double> %a, <2 x double> %b
      %t = select i1 %c, <2 x double> %s, <2 x double> zeroinitializer
      ret <2 x double> %t
    }
    """
    module, out = roundtrip(text)  # module.verify() accepts the widened forms
    assert "icmp eq ptr %a0, null" in out


# ----------------------------------------------------------------- errors


def test_malformed_ir_is_a_zymase_error():
    with pytest.raises(ZymaseError) as info:
        read_llvm_ir("define i32 @f( {\n  ret i32 0\n}\n", "broken.ll")
    assert "malformed LLVM IR" in info.value.message
    assert info.value.location == "broken.ll"
    with pytest.raises(ZymaseError):
        read_llvm_ir("define i32 @f() {\n  ret i64 0\n}\n")  # type error: verification
    with pytest.raises(ZymaseError):
        read_llvm_ir("define i32 @f(i32 %x) {\n  %y = add i32 %x, %z\n  ret i32 %y\n}\n")


UNSUPPORTED = """
define i32 @f(ptr %target) {
entry:
  indirectbr ptr %target, [label %a, label %b], !dbg !8
a:
  ret i32 1
b:
  ret i32 2
}
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!3}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, emissionKind: FullDebug)
!1 = !DIFile(filename: "jump.c", directory: "/tmp")
!3 = !{i32 2, !"Debug Info Version", i32 3}
!4 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 3, type: !5, unit: !0, spFlags: DISPFlagDefinition)
!5 = !DISubroutineType(types: !{})
!8 = !DILocation(line: 7, column: 5, scope: !4)
"""


def test_unsupported_instruction_names_instruction_function_and_line():
    with pytest.raises(ZymaseError) as info:
        read_llvm_ir(UNSUPPORTED, "jump.ll")
    err = info.value
    assert "indirectbr" in err.message
    assert err.function == "f"
    assert err.location == "jump.c:7:5"
    assert err.construct.startswith("indirectbr ptr %target")
    assert err.hint
    assert err.format().startswith("zymase: error: jump.c:7:5: ")


def test_windows_exception_handling_is_rejected():
    # Itanium EH (invoke, landingpad, resume) is read: tests/python/test_llvm_exceptions.py
    text = """
    declare i32 @__CxxFrameHandler3(...)
    declare void @may_throw()
    define void @f() personality ptr @__CxxFrameHandler3 {
    entry:
      invoke void @may_throw() to label %ok unwind label %dispatch
    ok:
      ret void
    dispatch:
      %cs = catchswitch within none [label %handler] unwind to caller
    handler:
      %cp = catchpad within %cs [ptr null, i32 64, ptr null]
      catchret from %cp to label %ok
    }
    """
    with pytest.raises(ZymaseError) as info:
        read_llvm_ir(text, "eh.ll")
    assert "catchswitch" in info.value.message and info.value.function == "f"
    assert "eh.ll" in info.value.location


def test_writer_rejects_non_llvm_ops_readably():
    module = parse_mlir("""
    builtin.module {
      llvm.func @f(%x: f64) -> f64 {
        %y = "arith.addf"(%x, %x) : (f64, f64) -> f64
        llvm.return %y : f64
      }
    }
    """)
    with pytest.raises(ZymaseError) as info:
        write_llvm_ir(module)
    assert "arith.addf" in info.value.format() and info.value.function == "f"


# ---------------------------------------------------------- writer input from
# other producers: MLIR-style functions built in Python and in MLIR text


def test_writer_accepts_programmatic_functions():
    """The AD engine builds ops in Python: struct-returning calls, constants anywhere."""
    struct_ty = L.LLVMStructType.from_type_list([f64, f64])
    callee_block = Block(arg_types=[f64])
    x = callee_block.args[0]
    undef = L.UndefOp(struct_ty)
    two = L.ConstantOp(FloatAttr(2.0, f64), f64)
    dx = L.FMulOp(x, two)
    ins0 = L.InsertValueOp(L.DenseArrayBase.from_list(i64, [0]), undef.res, x)
    ins1 = L.InsertValueOp(L.DenseArrayBase.from_list(i64, [1]), ins0.res, dx.res)
    callee_block.add_ops([undef, two, dx, ins0, ins1, L.ReturnOp(ins1.res)])
    callee = L.FuncOp("pair", L.LLVMFunctionType([f64], struct_ty), linkage=L.LinkageAttr("external"),
                      body=Region(callee_block))
    caller_block = Block(arg_types=[f64])
    call = L.CallOp("pair", caller_block.args[0], return_type=struct_ty)
    ext = L.ExtractValueOp(L.DenseArrayBase.from_list(i64, [1]), call.returned, f64)
    caller_block.add_ops([call, ext, L.ReturnOp(ext.res)])
    caller = L.FuncOp("use", L.LLVMFunctionType([f64], f64), linkage=L.LinkageAttr("external"),
                      body=Region(caller_block))
    module = ModuleOp([callee, caller])
    module.verify()
    out = write_llvm_ir(module)
    use = jit(out, "use", ctypes.c_double, ctypes.c_double)
    assert use(1.25) == 2.5


def test_writer_handles_xdsl_intrinsic_ops_and_dense_globals():
    module = parse_mlir("""
    builtin.module {
      llvm.mlir.global internal constant @tbl(dense<[1.5, 2.5, 4.0]> : tensor<3xf64>) {addr_space = 0 : i32} : !llvm.array<3 x f64>
      llvm.func @f(%x: f64, %i: i64) -> f64 {
        %p = llvm.mlir.addressof @tbl : !llvm.ptr
        %q = llvm.getelementptr %p[0, %i] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<3 x f64>
        %t = llvm.load %q : !llvm.ptr -> f64
        %a = llvm.intr.fabs(%x) : (f64) -> f64
        %s = llvm.intr.sqrt(%a) : (f64) -> f64
        %r = llvm.fadd %s, %t : f64
        llvm.return %r : f64
      }
    }
    """)
    out = write_llvm_ir(module)
    f = jit(out, "f", ctypes.c_double, ctypes.c_double, ctypes.c_int64)
    assert f(-16.0, 2) == 8.0


# -------------------------------------------------------- extension ops text


EXT_OPS_MLIR = """
builtin.module {
  llvm.func @f(%k: i32, %x: f64, %p: !llvm.ptr, %v: vector<4xf64>, %ap: !llvm.ptr) -> f64 {
    %c = llvm.icmp "eq" %p, %p : !llvm.ptr
    %m = llvm.fcmp "olt" %v, %v {fastmathFlags = #llvm.fastmath<fast>} : vector<4xf64>
    %s = llvm.select %m, %v, %v : vector<4xi1>, vector<4xf64>
    %l = llvm.load volatile %p {alignment = 8 : i64} : !llvm.ptr -> f64
    llvm.store %l, %p atomic release {alignment = 8 : i64} : f64, !llvm.ptr
    %fr = llvm.freeze %x : f64
    %po = llvm.mlir.poison : f64
    %i = llvm.fptosi %x : f64 to i32
    %u = llvm.fptoui %x : f64 to i64
    %d = llvm.uitofp nneg %k : i32 to f64
    %q = llvm.addrspacecast %p : !llvm.ptr to !llvm.ptr<1>
    %e = llvm.extractelement %v[%k : i32] : vector<4xf64>
    %r = llvm.atomicrmw volatile fadd %p, %x seq_cst {alignment = 8 : i64} : !llvm.ptr, f64
    %cx = llvm.cmpxchg weak %p, %k, %k acq_rel monotonic {alignment = 4 : i64} : !llvm.ptr, i32
    llvm.fence seq_cst
    llvm.fence acquire {syncscope = "singlethread"}
    %va = llvm.va_arg %ap : (!llvm.ptr) -> i32
    llvm.switch %k : i32, ^bb1 [1: ^bb2(%x : f64), 2: ^bb2(%fr : f64), -3: ^bb1]
  ^bb1:
    llvm.switch %k : i32, ^bb2(%d : f64) []
  ^bb2(%y: f64):
    llvm.return %y : f64
  }
  llvm.mlir.global external @g() {addr_space = 0 : i32} : !llvm.packed_struct<(i8, i32)>
}
"""


def test_extension_ops_print_and_reparse():
    module = parse_mlir(EXT_OPS_MLIR)
    module.verify()
    first = print_mlir(module)
    again = parse_mlir(first)
    again.verify()
    assert print_mlir(again) == first
    for text in ("llvm.switch %", "[1: ^", "llvm.freeze", "llvm.mlir.poison", "llvm.fptosi",
                 "llvm.uitofp nneg", "llvm.extractelement", "llvm.atomicrmw volatile fadd",
                 "llvm.cmpxchg weak", "llvm.fence seq_cst", "llvm.va_arg", "atomic release",
                 "llvm.load volatile", "fastmathFlags = #llvm.fastmath<fast>",
                 "!llvm.packed_struct<(i8, i32)>"):
        assert text in first, text
    ops = {op.name: op for op in again.walk()}
    assert isinstance(ops["llvm.icmp"], L.ICmpOp)  # the widened ops are still xDSL's classes
    assert isinstance(ops["llvm.load"], L.LoadOp)
    assert ops["llvm.store"].properties["ordering"].value.data == 5
    assert ops["llvm.cmpxchg"].results[0].type == L.LLVMStructType.from_type_list([i32, i1])
    out = write_llvm_ir(again)
    llvm.parse_assembly(out).verify()


def test_roundtrip_through_mlir_text_keeps_semantics():
    """reader -> MLIR text -> parse -> writer gives the same program."""
    module = read_llvm_ir(SWITCH + FLAGS)
    reparsed = parse_mlir(print_mlir(module))
    out = write_llvm_ir(reparsed)
    sw = jit(out, "sw", ctypes.c_int32, ctypes.c_int32, ctypes.c_int32)
    assert [sw(k, 5) for k in (-5, 1, 3, 9)] == [15, 15, 42, 7]
    assert "fadd fast double" in out and "fcmp reassoc olt" in out


# ------------------------------------------------------------ a many-function module


def loop_functions_module(functions: int) -> str:
    path = Path(__file__).resolve().parents[2] / "bench" / "reader_writer.py"
    spec = importlib.util.spec_from_file_location("bench_reader_writer", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench.loop_functions_module(functions)


def test_module_of_many_functions_round_trips():
    """Read and write a module of 40 loop functions (the generator of
    bench/reader_writer.py, which times the same module at 100 and 700 functions: timings
    are not asserted here) and run one of them."""
    module = read_llvm_ir(loop_functions_module(40))
    out = write_llvm_ir(module)
    assert out.count("define double @f") == 40
    f7 = jit(out, "f7", ctypes.c_double, ctypes.POINTER(ctypes.c_double), ctypes.c_int32, ctypes.c_double)
    xs = (ctypes.c_double * 3)(0.5, 2.0, -1.0)
    expected = math.sin(2.0) * 7.5 + 0.5 / 1.5 + -1.0 / 1.5
    assert f7(xs, 3, 1.0) == pytest.approx(expected, rel=1e-12)


def test_writer_unreachable_block_with_arguments():
    module = parse_mlir("""
    builtin.module {
      llvm.func @f(%x: i32) -> i32 {
        llvm.return %x : i32
      ^bb1(%dead: i32):
        llvm.return %dead : i32
      }
    }
    """)
    out = write_llvm_ir(module)
    llvm.parse_assembly(out, llvm.create_context()).verify()
    assert "ret i32 poison" in out


def test_named_struct_keeps_its_name_across_reads():
    """LLVM's global context would rename %struct.S to %struct.S.0 on a second parse."""
    text = "%struct.S = type { i32 }\n@g = global %struct.S zeroinitializer\n"
    for _ in range(3):
        module = read_llvm_ir(text)
        (glob,) = module.body.block.ops
        assert glob.properties["global_type"].struct_name.data == "struct.S"


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _float_from_module(module: ModuleOp) -> float:
    (const,) = [op for op in module.walk() if op.name == "llvm.mlir.constant"
                and isinstance(op.properties["value"], FloatAttr)]
    return const.properties["value"].value.data


def _bits(value: float) -> int:
    return struct.unpack("<Q", struct.pack("<d", value))[0]


@settings(max_examples=60, deadline=None)
@given(st.floats(allow_nan=False, width=64), st.floats(allow_nan=False, width=32))
def test_float_constants_survive_read_write_read_bit_exactly(d, f):
    for ty, value in (("double", d), ("float", f)):
        text = f"define {ty} @f({ty} %x) {{\n  %y = fadd {ty} %x, {_literal(value)}\n  ret {ty} %y\n}}\n"
        first = read_llvm_ir(text)
        assert _bits(_float_from_module(first)) == _bits(value)
        second = read_llvm_ir(write_llvm_ir(first))
        assert _bits(_float_from_module(second)) == _bits(value)


def _literal(value: float) -> str:
    return "0x%016X" % _bits(value)


def test_writer_folds_global_initializer_regions():
    """MLIR-style globals whose initializer is a region of constant ops."""
    module = parse_mlir("""
    builtin.module {
      llvm.mlir.global internal @x(3 : i32) {addr_space = 0 : i32} : i32
      llvm.mlir.global internal @pair() {addr_space = 0 : i32} : !llvm.struct<(f64, !llvm.ptr)> {
        %u = llvm.mlir.undef : !llvm.struct<(f64, !llvm.ptr)>
        %c = llvm.mlir.constant(2.5 : f64) : f64
        %a = llvm.mlir.addressof @x : !llvm.ptr
        %s0 = llvm.insertvalue %c, %u[0] : !llvm.struct<(f64, !llvm.ptr)>
        %s1 = llvm.insertvalue %a, %s0[1] : !llvm.struct<(f64, !llvm.ptr)>
        llvm.return %s1 : !llvm.struct<(f64, !llvm.ptr)>
      }
      llvm.func @get() -> f64 {
        %p = llvm.mlir.addressof @pair : !llvm.ptr
        %g = llvm.getelementptr %p[0, 1] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(f64, !llvm.ptr)>
        %q = llvm.load %g : !llvm.ptr -> !llvm.ptr
        %f = llvm.load %p : !llvm.ptr -> f64
        %i = llvm.load %q : !llvm.ptr -> i32
        %d = llvm.sitofp %i : i32 to f64
        %r = llvm.fadd %f, %d : f64
        llvm.return %r : f64
      }
    }
    """)
    out = write_llvm_ir(module)
    assert "{ double 0x4004000000000000, ptr @x }" in out
    assert jit(out, "get", ctypes.c_double)() == 5.5


def test_special_names_are_kept_exactly():
    text = r"""
    %"struct.std::pair<int, int>" = type { i32, i32 }
    @"\01_asm_name" = global i32 1
    @0 = private constant [2 x i8] c"a\00"
    @"with space" = global %"struct.std::pair<int, int>" zeroinitializer
    define i32 @"fn.with-dash$"(i32 %x) {
    "entry block":
      br label %"next one"
    "next one":
      %v = load i32, ptr @"\01_asm_name", align 4
      %p = load i8, ptr @0, align 1
      ret i32 %v
    }
    """
    module, out = roundtrip(text)
    names = {op.properties["sym_name"].data for op in module.body.block.ops}
    assert names == {"\x01_asm_name", "0", "with space", "fn.with-dash$"}
    assert module.body.block.ops.last.properties["function_type"].inputs.data == (i32,)
    reread = str(llvm.parse_assembly(out, llvm.create_context()))
    for text in (r'@"\01_asm_name" = global i32 1', '@"with space" = global %"struct.std::pair<int, int>"',
                 '%"struct.std::pair<int, int>" = type { i32, i32 }', '@"fn.with-dash$"'):
        assert text in reread, text


def test_extended_precision_constants_no_double_holds_are_written_back_exactly():
    # clang folds `x / 3.0L` into a multiplication by the x86_fp80 nearest to 1/3, and the
    # fp128 one has 113 bits: both come back as they were read, two constants that round to
    # the same double stay two constants, and an exact one is still a plain float
    text = """
define x86_fp80 @f(x86_fp80 %x, fp128 %y) {
  %a = fmul x86_fp80 %x, 0xK3FFDAAAAAAAAAAAAAAAB
  %b = fmul x86_fp80 %a, 0xK3FFDAAAAAAAAAAAAAAAA
  %c = fadd x86_fp80 %b, 0xK3FFF8000000000000000
  %d = fmul fp128 %y, 0xL5555555555555555BFFD555555555555
  ret x86_fp80 %c
}
"""
    out = write_llvm_ir(read_llvm_ir(text))
    for literal in ("0xK3FFDAAAAAAAAAAAAAAAB", "0xK3FFDAAAAAAAAAAAAAAAA", "0xK3FFF8000000000000000",
                    "0xL5555555555555555BFFD555555555555"):
        assert literal in out, literal
    llvm.parse_assembly(out).verify()


INLINE_ASM = r"""
define i64 @asm_calls(ptr %p, i64 %x) {
  call void asm sideeffect "", "~{memory},~{dirflag},~{fpsr},~{flags}"()
  call void asm sideeffect "", "=*m|r,*0,~{memory}"(ptr elementtype([3 x double]) %p, ptr elementtype([3 x double]) %p)
  %t = tail call { i32, i32 } asm sideeffect "rdtsc", "={ax},={dx},~{dirflag},~{fpsr},~{flags}"()
  %lo = extractvalue { i32, i32 } %t, 0
  %w = zext i32 %lo to i64
  %s = call i64 asm "lea ($1,$2), $0 # \22quoted\22", "=r,r,r"(i64 %x, i64 %x)
  %i = call i64 asm alignstack inteldialect "mov $0, $1", "=r,r"(i64 %s)
  %r = add i64 %i, 0
  %u = and i64 %w, 0
  %v = or i64 %r, %u
  ret i64 %v
}
"""


def test_inline_assembly_is_read_and_written_back():
    # session 33: calls of inline assembly are llvm.inline_asm ops (the reader refused
    # them, also in main next to the marker calls); the template, the constraints, the
    # flags and the elementtype an indirect constraint needs survive the round trip
    module, out = roundtrip(INLINE_ASM)
    ops = [op for op in func(module, "asm_calls").walk() if op.name == "llvm.inline_asm"]
    assert [op.asm_string.data for op in ops] == ["", "", "rdtsc", 'lea ($1,$2), $0 # "quoted"', "mov $0, $1"]
    assert "has_side_effects" in ops[2].properties and "has_side_effects" not in ops[3].properties
    assert "is_align_stack" in ops[4].properties and ops[4].properties["asm_dialect"].value.data == 1
    for line in ('asm sideeffect "", "=*m|r,*0,~{memory}"(ptr elementtype([3 x double])',
                 r'asm "lea ($1,$2), $0 # \22quoted\22", "=r,r,r"', 'asm alignstack inteldialect "mov $0, $1"'):
        assert line in out, line
    llvm.initialize_native_asmparser()  # MCJIT assembles the templates
    assert jit(out, "asm_calls", ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)(None, 21) == 42
