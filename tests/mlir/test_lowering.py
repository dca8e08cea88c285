"""Structure of ``lower-to-llvm`` output: it verifies, and FileCheck on the printed IR."""

from __future__ import annotations

import re

import pytest

from zymase.errors import ZymaseError
from zymase.ir import llvm, parse_mlir, print_mlir
from zymase.transforms.lower_to_llvm import LowerToLLVM, lower_to_llvm


def lower(text: str) -> str:
    """Parse, verify, lower, verify again, and print."""
    module = parse_mlir(text)
    module.verify()
    lower_to_llvm(module)
    module.verify()
    out = print_mlir(module)
    for dialect in ("func.", "arith.", "math.", "cf.", "enzyme."):
        assert f" {dialect}" not in out and f"= {dialect}" not in out, out
    return out


def test_pass_name_and_class_api():
    module = parse_mlir("func.func @f(%x: f64) -> f64 { func.return %x : f64 }")
    assert LowerToLLVM.name == "lower-to-llvm"
    LowerToLLVM().apply(None, module)
    fn = next(iter(module.body.block.ops))
    assert isinstance(fn, llvm.FuncOp)
    assert fn.linkage.linkage.data == "external"


def test_float_arith_keeps_fastmath(filecheck):
    out = lower(
        """
        func.func @f(%a: f64, %b: f64) -> f64 {
          %0 = arith.addf %a, %b fastmath<fast> : f64
          %1 = arith.subf %0, %b : f64
          %2 = arith.mulf %1, %a fastmath<nnan,ninf> : f64
          %3 = arith.divf %2, %b : f64
          %4 = arith.remf %3, %a : f64
          %5 = arith.negf %4 fastmath<nsz> : f64
          func.return %5 : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.func @f(%a: f64, %b: f64) -> f64 {
        CHECK: llvm.fadd %a, %b {fastmathFlags = #llvm.fastmath<fast>} : f64
        CHECK: llvm.fsub
        CHECK: llvm.fmul {{.*}} {fastmathFlags = #llvm.fastmath<nnan,ninf>} : f64
        CHECK: llvm.fdiv
        CHECK: llvm.frem
        CHECK: llvm.fneg {{.*}} {fastmathFlags = #llvm.fastmath<nsz>} : f64
        CHECK: llvm.return {{.*}} : f64
        """,
    )


def test_integer_arith_and_index_to_i64(filecheck):
    out = lower(
        """
        func.func @f(%a: index, %b: index, %c: i32) -> i64 {
          %0 = arith.addi %a, %b overflow<nsw> : index
          %1 = arith.muli %0, %b : index
          %2 = arith.divsi %1, %a : index
          %3 = arith.remui %2, %b : index
          %4 = arith.shrsi %3, %a : index
          %5 = arith.xori %4, %b : index
          %6 = arith.index_cast %5 : index to i64
          %7 = arith.extsi %c : i32 to i64
          %8 = arith.floordivsi %6, %7 : i64
          func.return %8 : i64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.func @f(%a: i64, %b: i64, %c: i32) -> i64 {
        CHECK: llvm.add %a, %b overflow<nsw> : i64
        CHECK: llvm.mul
        CHECK: llvm.sdiv
        CHECK: llvm.urem
        CHECK: llvm.ashr
        CHECK: %[[X:.*]] = llvm.xor
        CHECK-NOT: llvm.trunc
        CHECK: llvm.sext %c : i32 to i64
        CHECK: llvm.sdiv %[[X]]
        CHECK: llvm.srem
        CHECK: llvm.sub
        """,
    )


ARITH_FCMP = [
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
]
ARITH_ICMP = ["eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]


def test_every_compare_predicate_is_mapped_by_name(filecheck):
    body = [f"%f{i} = arith.cmpf {p}, %a, %b : f64" for i, p in enumerate(ARITH_FCMP)]
    body += [f"%i{i} = arith.cmpi {p}, %x, %y : index" for i, p in enumerate(ARITH_ICMP)]
    out = lower(
        "func.func @f(%a: f64, %b: f64, %x: index, %y: index) {\n"
        + "\n".join(body)
        + "\nfunc.return\n}"
    )
    llvm_names = {"false": "_false", "true": "_true"}
    checks = [f'CHECK: llvm.fcmp "{llvm_names.get(p, p)}" %a, %b : f64' for p in ARITH_FCMP]
    checks += [f'CHECK: llvm.icmp "{p}" %x, %y : i64' for p in ARITH_ICMP]
    filecheck(out, "\n".join(checks))


def test_casts(filecheck):
    out = lower(
        """
        func.func @f(%x: f64, %i: i32, %n: index) -> f32 {
          %0 = arith.truncf %x : f64 to f32
          %1 = arith.extf %0 : f32 to f64
          %2 = arith.fptosi %1 : f64 to i64
          %3 = arith.fptoui %1 : f64 to i16
          %4 = arith.sitofp %i : i32 to f64
          %5 = arith.uitofp %3 : i16 to f32
          %6 = arith.extui %3 : i16 to i64
          %7 = arith.trunci %6 : i64 to i8
          %8 = arith.index_castui %i : i32 to index
          %9 = arith.index_cast %n : index to i16
          %10 = arith.bitcast %x : f64 to i64
          %11 = arith.bitcast %10 : i64 to f64
          func.return %5 : f32
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.fptrunc %x : f64 to f32
        CHECK: llvm.fpext {{.*}} : f32 to f64
        CHECK: llvm.fptosi {{.*}} : f64 to i64
        CHECK: llvm.fptoui {{.*}} : f64 to i16
        CHECK: llvm.sitofp %i : i32 to f64
        CHECK: llvm.uitofp {{.*}} : i16 to f32
        CHECK: llvm.zext {{.*}} : i16 to i64
        CHECK: llvm.trunc {{.*}} : i64 to i8
        CHECK: llvm.zext %i : i32 to i64
        CHECK: llvm.trunc %n : i64 to i16
        CHECK: llvm.bitcast %x : f64 to i64
        CHECK: llvm.bitcast {{.*}} : i64 to f64
        """,
    )


def test_math_intrinsics_and_libm(filecheck):
    out = lower(
        """
        func.func @f(%x: f64, %y: f32, %n: i32) -> f64 {
          %0 = math.sin %x fastmath<afn> : f64
          %1 = math.sqrt %y : f32
          %2 = math.fpowi %x, %n : f64, i32
          %3 = math.erf %x : f64
          %4 = math.erf %2 : f64
          %5 = math.cbrt %y : f32
          %6 = math.rsqrt %x : f64
          %7 = arith.minimumf %x, %6 : f64
          %8 = math.fma %x, %x, %x : f64
          %9 = math.tan %x : f64
          func.return %7 : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.call_intrinsic "llvm.sin.f64"(%x) {fastmathFlags = #llvm.fastmath<afn>} : (f64) -> f64
        CHECK: llvm.call_intrinsic "llvm.sqrt.f32"(%y) {{.*}}: (f32) -> f32
        CHECK: %[[NF:.*]] = llvm.sitofp %n : i32 to f64
        CHECK: llvm.call_intrinsic "llvm.pow.f64"(%x, %[[NF]]) {{.*}}: (f64, f64) -> f64
        CHECK: llvm.call @erf(%x) : (f64) -> f64
        CHECK: llvm.call @erf(
        CHECK: llvm.call @cbrtf(%y) : (f32) -> f32
        CHECK: %[[S:.*]] = llvm.call_intrinsic "llvm.sqrt.f64"(%x)
        CHECK: %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f64) : f64
        CHECK: llvm.fdiv %[[ONE]], %[[S]]
        CHECK: llvm.call_intrinsic "llvm.minimum.f64"
        CHECK: llvm.call_intrinsic "llvm.fma.f64"
        CHECK: llvm.call_intrinsic "llvm.tan.f64"
        CHECK: llvm.func @erf(f64) -> f64
        CHECK-NOT: llvm.func @erf
        CHECK: llvm.func @cbrtf(f32) -> f32
        """,
    )


def test_multi_result_function_and_call(filecheck):
    out = lower(
        """
        func.func @pair(%x: f64, %n: index) -> (f64, index) {
          func.return %x, %n : f64, index
        }
        func.func @use(%x: f64) -> f64 {
          %c = arith.constant 3 : index
          %r:2 = func.call @pair(%x, %c) : (f64, index) -> (f64, index)
          func.return %r#0 : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.func @pair(%x: f64, %n: i64) -> !llvm.struct<(f64, i64)>
        CHECK: %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(f64, i64)>
        CHECK: %[[A:.*]] = llvm.insertvalue %x, %[[U]][0]
        CHECK: %[[B:.*]] = llvm.insertvalue %n, %[[A]][1]
        CHECK: llvm.return %[[B]] : !llvm.struct<(f64, i64)>
        CHECK: llvm.func @use
        CHECK: %[[C:.*]] = llvm.call @pair(%{{.*}}, %{{.*}}) : (f64, i64) -> !llvm.struct<(f64, i64)>
        CHECK: %[[R:.*]] = llvm.extractvalue %[[C]][0]
        CHECK: llvm.extractvalue %[[C]][1]
        CHECK: llvm.return %[[R]] : f64
        """,
    )


def test_linkage_of_private_and_declared_functions(filecheck):
    out = lower(
        """
        func.func private @ext(f64) -> f64
        func.func private @helper(%x: f64) -> f64 {
          %y = func.call @ext(%x) : (f64) -> f64
          func.return %y : f64
        }
        func.func @main(%x: f64) -> f64 {
          %y = func.call @helper(%x) : (f64) -> f64
          func.return %y : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.func @ext(f64) -> f64
        CHECK: llvm.func internal @helper(%x: f64) -> f64
        CHECK: llvm.func @main(
        """,
    )


def test_control_flow_keeps_block_arguments(filecheck):
    out = lower(
        """
        func.func @f(%n: index, %s: i32) -> f64 {
          %c0 = arith.constant 0 : index
          %one = arith.constant 1.0 : f64
          cf.br ^head(%c0, %one : index, f64)
        ^head(%i: index, %acc: f64):
          %done = arith.cmpi sge, %i, %n : index
          cf.cond_br %done, ^exit(%acc : f64), ^body
        ^body:
          %c1 = arith.constant 1 : index
          %next = arith.addi %i, %c1 : index
          %acc2 = arith.addf %acc, %acc : f64
          cf.switch %s : i32, [
            default: ^head(%next, %acc2 : index, f64),
            4: ^exit(%acc2 : f64),
            7: ^exit(%one : f64)
          ]
        ^exit(%r: f64):
          func.return %r : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.br ^[[HEAD:.*]](%{{.*}}, %{{.*}} : i64, f64)
        CHECK: ^[[HEAD]](%i: i64, %acc: f64):
        CHECK: llvm.cond_br %{{.*}}, ^[[EXIT:.*]](%acc : f64), ^
        CHECK: llvm.switch %s : i32, ^[[HEAD]](%{{.*}}, %{{.*}} : i64, f64) [4: ^[[EXIT]](%{{.*}} : f64), 7: ^[[EXIT]](%{{.*}} : f64)]
        CHECK: ^[[EXIT]](%r: f64):
        """,
    )


def test_switch_on_index_retypes_case_values(filecheck):
    out = lower(
        """
        func.func @f(%k: index) -> i32 {
          cf.switch %k : index, [default: ^a, 2: ^b]
        ^a:
          %x = arith.constant 0 : i32
          func.return %x : i32
        ^b:
          %y = arith.constant 1 : i32
          func.return %y : i32
        }
        """
    )
    filecheck(out, "CHECK: llvm.switch %k : i64, ^{{.*}} [2: ^")


def test_gradient_accumulator_is_an_entry_alloca(filecheck):
    out = lower(
        """
        func.func @f(%x: f64, %c: i1) -> f64 {
          cf.cond_br %c, ^a, ^b
        ^a:
          %g = enzyme.init : !enzyme.Gradient<f64>
          enzyme.set %g, %x : !enzyme.Gradient<f64>, f64
          %v = enzyme.get %g : !enzyme.Gradient<f64> -> f64
          func.return %v : f64
        ^b:
          func.return %x : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.func @f(
        CHECK-NEXT: llvm.mlir.constant(1) : i64
        CHECK-NEXT: %[[G:.*]] = llvm.alloca %{{.*}} x f64
        CHECK-NEXT: llvm.cond_br
        CHECK: %[[Z:.*]] = llvm.mlir.constant(0.000000e+00 : f64) : f64
        CHECK-NEXT: llvm.store %[[Z]], %[[G]] : f64, !llvm.ptr
        CHECK-NEXT: llvm.store %x, %[[G]] : f64, !llvm.ptr
        CHECK-NEXT: %[[V:.*]] = llvm.load %[[G]] : !llvm.ptr -> f64
        CHECK-NEXT: llvm.return %[[V]] : f64
        """,
    )


def test_cache_is_a_stack_freed_before_every_return(filecheck):
    out = lower(
        """
        func.func @f(%x: f64, %n: index, %c: i1) -> f64 {
          %cache = enzyme.init : !enzyme.Cache<f64>
          %idx = enzyme.init : !enzyme.Cache<index>
          enzyme.push %cache, %x : !enzyme.Cache<f64>, f64
          enzyme.push %idx, %n : !enzyme.Cache<index>, index
          %y = enzyme.pop %cache : !enzyme.Cache<f64> -> f64
          cf.cond_br %c, ^a, ^b
        ^a:
          func.return %y : f64
        ^b:
          func.return %x : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.func @f(
        CHECK: %[[C:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(!llvm.ptr, i64, i64, !llvm.array<128 x i8>)>
        CHECK-NEXT: %[[NULL0:.*]] = llvm.mlir.zero : !llvm.ptr
        CHECK-NEXT: llvm.store %[[NULL0]], %[[C]] : !llvm.ptr, !llvm.ptr
        CHECK-NEXT: %[[CAP:.*]] = llvm.getelementptr %[[C]][0, 2]
        CHECK-NEXT: %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
        CHECK-NEXT: llvm.store %[[ZERO]], %[[CAP]] : i64, !llvm.ptr
        CHECK-NOT: llvm.mlir.zero : !llvm.struct<(!llvm.ptr, i64, i64, !llvm.array<128 x i8>)>
        CHECK: %[[I:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(!llvm.ptr, i64, i64, !llvm.array<128 x i8>)>
        CHECK: %[[EIGHT:.*]] = llvm.mlir.constant(8) : i64
        CHECK-NEXT: %[[SLOT:.*]] = llvm.call @__zymase_cache_push(%[[C]], %[[EIGHT]]) : (!llvm.ptr, i64) -> !llvm.ptr
        CHECK-NEXT: llvm.store %x, %[[SLOT]] : f64, !llvm.ptr
        CHECK: llvm.call @__zymase_cache_push(%[[I]],
        CHECK-NEXT: llvm.store %n, %{{.*}} : i64, !llvm.ptr
        CHECK: %[[P:.*]] = llvm.call @__zymase_cache_pop(%[[C]], %{{.*}})
        CHECK-NEXT: llvm.load %[[P]] : !llvm.ptr -> f64
        CHECK: %[[D:.*]] = llvm.load %[[C]] : !llvm.ptr -> !llvm.ptr
        CHECK-NEXT: %[[IN:.*]] = llvm.getelementptr %[[C]][0, 3]
        CHECK-NEXT: %[[H:.*]] = llvm.icmp "ne" %[[D]], %[[IN]]
        CHECK-NEXT: %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
        CHECK-NEXT: %[[F:.*]] = llvm.select %[[H]], %[[D]], %[[NULL]]
        CHECK-NEXT: llvm.call @free(%[[F]])
        CHECK-NEXT: llvm.load %[[I]] : !llvm.ptr -> !llvm.ptr
        CHECK: llvm.call @free(
        CHECK-NEXT: llvm.return
        CHECK: llvm.call @free(
        CHECK: llvm.call @free(
        CHECK-NEXT: llvm.return
        CHECK: llvm.func @realloc(!llvm.ptr, i64) -> !llvm.ptr
        CHECK: llvm.func @free(!llvm.ptr)
        CHECK: llvm.func internal @__zymase_cache_push(
        CHECK: llvm.call @realloc(
        CHECK: llvm.func internal @__zymase_cache_pop(
        """,
    )


def test_runtime_helpers_are_added_once_per_module():
    text = "\n".join(
        f"""
        func.func @f{i}(%x: f64) -> f64 {{
          %c = enzyme.init : !enzyme.Cache<f64>
          enzyme.push %c, %x : !enzyme.Cache<f64>, f64
          %y = enzyme.pop %c : !enzyme.Cache<f64> -> f64
          func.return %y : f64
        }}"""
        for i in range(3)
    )
    out = lower(text)
    assert out.count("llvm.func internal @__zymase_cache_push") == 1
    assert out.count("llvm.func internal @__zymase_cache_pop") == 1
    assert out.count("llvm.func @free") == 1
    assert out.count("llvm.func @realloc") == 1


_RUNTIME_DEFINED = re.compile(r"llvm\.func internal @(__zymase_(?:cache|tape)_\w+)\(")

_INDEXED = """
        func.func @g{i}(%x: f64, %n: i64) -> f64 {{
          %t = enzyme.init : !enzyme.IndexedCache<f64>
          enzyme.cache_reserve %t, %n : !enzyme.IndexedCache<f64>, i64
          %k = llvm.mlir.constant(0) : i64
          enzyme.cache_store %t[%k], %x : !enzyme.IndexedCache<f64>, i64, f64
          %y = enzyme.cache_load %t[%k] : !enzyme.IndexedCache<f64>, i64 -> f64
          func.return %y : f64
        }}"""


def test_only_the_runtime_functions_called_are_added():
    # issue 29 (first grad call): the whole tape runtime (nine functions) was parsed and
    # added to every module that tapes; xDSL's parse of it was 0.04-0.05 s of CPU a first
    # call, and a derivative calls a few of its functions (LLVM removed the rest)
    pushed = lower(
        """
        func.func @f(%x: f64) -> f64 {
          %c = enzyme.init : !enzyme.Cache<f64>
          enzyme.push %c, %x : !enzyme.Cache<f64>, f64
          %y = enzyme.pop %c : !enzyme.Cache<f64> -> f64
          func.return %y : f64
        }"""
    )
    # (and the cold out-of-memory report its growth calls)
    assert sorted(_RUNTIME_DEFINED.findall(pushed)) == ["__zymase_cache_pop", "__zymase_cache_push",
                                                        "__zymase_tape_out_of_memory"]
    # an indexed tape: the reserve, what it calls (growth, the spare buffer's take) and
    # the give-back on return
    indexed = lower(_INDEXED.format(i=0))
    assert sorted(_RUNTIME_DEFINED.findall(indexed)) == [
        "__zymase_cache_regrow", "__zymase_cache_reserve", "__zymase_tape_give", "__zymase_tape_out_of_memory",
        "__zymase_tape_take"]


def test_a_later_lowering_adds_the_runtime_functions_missing_once():
    # a module lowered again (the next marker round) with code calling functions it has
    # and functions it has not: each defined once
    module = parse_mlir("builtin.module {" + _INDEXED.format(i=0) + "}")
    lower_to_llvm(module)
    later = parse_mlir(print_mlir(module)[:-2] + _INDEXED.format(i=1) + """
        func.func @f(%x: f64) -> f64 {
          %c = enzyme.init : !enzyme.Cache<f64>
          enzyme.push %c, %x : !enzyme.Cache<f64>, f64
          %y = enzyme.pop %c : !enzyme.Cache<f64> -> f64
          func.return %y : f64
        }
        }""")
    lower_to_llvm(later)
    later.verify()
    defined = _RUNTIME_DEFINED.findall(print_mlir(later))
    assert sorted(defined) == sorted(set(defined)) == [
        "__zymase_cache_pop", "__zymase_cache_push", "__zymase_cache_regrow", "__zymase_cache_reserve",
        "__zymase_tape_give", "__zymase_tape_out_of_memory", "__zymase_tape_take"]


def test_assert_branches_to_a_trap(filecheck):
    out = lower(
        """
        func.func @f(%x: f64) -> f64 {
          %z = arith.constant 0.0 : f64
          %ok = arith.cmpf oge, %x, %z : f64
          cf.assert %ok, "x must be non-negative"
          %r = math.sqrt %x : f64
          func.return %r : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: llvm.cond_br %ok, ^[[OK:.*]], ^[[FAIL:.*]]
        CHECK: ^[[OK]]:
        CHECK: llvm.call_intrinsic "llvm.sqrt.f64"
        CHECK: ^[[FAIL]]:
        CHECK-NEXT: llvm.call_intrinsic "llvm.trap"()
        CHECK-NEXT: llvm.unreachable
        """,
    )


# ---------------------------------------------------------------------------- errors


def test_unsupported_op_names_op_function_and_hint():
    module = parse_mlir(
        """
        func.func @g(%x: i32, %y: i32) -> i32 {
          %r = math.ipowi %x, %y : i32
          func.return %r : i32
        }
        """
    )
    with pytest.raises(ZymaseError) as info:
        lower_to_llvm(module)
    err = info.value
    assert err.construct == "math.ipowi"
    assert err.function == "g"
    assert err.hint
    assert "math.ipowi" in err.format() and "'g'" in err.format()


def test_scf_is_converted_by_the_lowering():
    module = parse_mlir(
        """
        func.func @h(%c: i1, %x: f64) -> f64 {
          %r = scf.if %c -> (f64) { scf.yield %x : f64 } else { scf.yield %x : f64 }
          func.return %r : f64
        }
        """
    )
    lower_to_llvm(module)
    assert {op.dialect_name() for op in module.walk()} == {"builtin", "llvm"}


def test_unsupported_memref_op_gets_a_hint():
    module = parse_mlir(
        """
        func.func @h(%a: memref<4xf64>) -> index {
          %r = "memref.rank"(%a) : (memref<4xf64>) -> index
          func.return %r : index
        }
        """
    )
    with pytest.raises(ZymaseError) as info:
        lower_to_llvm(module)
    assert info.value.construct == "memref.rank" and info.value.function == "h"
    assert "memref.load" in info.value.hint


def test_autodiff_left_in_the_module_is_an_error():
    module = parse_mlir(
        """
        func.func @sq(%x: f64) -> f64 {
          %y = arith.mulf %x, %x : f64
          func.return %y : f64
        }
        func.func @d(%x: f64) -> f64 {
          %one = arith.constant 1.0 : f64
          %r = enzyme.autodiff @sq(%x, %one) {activity = [#enzyme<activity enzyme_active>],
                 ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64) -> f64
          func.return %r : f64
        }
        """
    )
    with pytest.raises(ZymaseError) as info:
        lower_to_llvm(module)
    assert info.value.construct == "enzyme.autodiff"
    assert info.value.function == "d"
    assert "enzyme pass" in info.value.hint


def test_libm_name_clash_with_a_different_signature():
    module = parse_mlir(
        """
        func.func @erf(%x: i32) -> i32 { func.return %x : i32 }
        func.func @f(%x: f64) -> f64 {
          %r = math.erf %x : f64
          func.return %r : f64
        }
        """
    )
    with pytest.raises(ZymaseError) as info:
        lower_to_llvm(module)
    assert "@erf" in info.value.message


def test_f16_libm_call_is_rejected_with_a_hint():
    module = parse_mlir(
        """
        func.func @f(%x: f16) -> f16 {
          %r = math.erf %x : f16
          func.return %r : f16
        }
        """
    )
    with pytest.raises(ZymaseError) as info:
        lower_to_llvm(module)
    assert "arith.extf" in info.value.hint


def test_llvm_func_bodies_mixing_dialects_are_lowered(filecheck):
    out = lower(
        """
        llvm.func @mixed(%x: f64) -> f64 {
          %y = arith.mulf %x, %x : f64
          %z = llvm.fadd %y, %x : f64
          llvm.return %z : f64
        }
        """
    )
    filecheck(
        out,
        """
        CHECK: %[[Y:.*]] = llvm.fmul %x, %x : f64
        CHECK-NEXT: llvm.fadd %[[Y]], %x : f64
        """,
    )
