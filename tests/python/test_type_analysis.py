"""Tests of zymase.analysis.types: what pointers point to, from small C functions
compiled with clang at -O0 (+ SROA) and -O2 (the pre-AD pipeline)."""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from zymase.analysis.types import TypeTree, analyze_types, size_align, struct_offsets
from zymase.errors import ZymaseError
from zymase.ir import IntegerType, f32, f64, i8, i32, llvm, llvm_ext
from zymase.llvm.reader import read_llvm_ir
from zymase.llvm.toolchain import preopt

CLANG = shutil.which("clang-19") or "/usr/bin/clang-19"
pytestmark = pytest.mark.skipif(not Path(CLANG).exists(), reason="clang-19 not installed")

LEVELS = [0, 2]


@functools.cache
def _module(source: str, level: int):
    """Compile C ``source`` (as ``t.c``, with debug info), run the pre-AD pipeline, read it."""
    flags = ["-O0", "-Xclang", "-disable-O0-optnone"] if level == 0 else ["-O2", "-Xclang", "-disable-llvm-passes"]
    with tempfile.TemporaryDirectory(prefix="zymase-types-") as tmp:
        (Path(tmp) / "t.c").write_text(source)
        proc = subprocess.run(
            [CLANG, *flags, "-g", "-S", "-emit-llvm", "-o", "-", "t.c"],
            cwd=tmp, capture_output=True, text=True, check=True,
        )
    return read_llvm_ir(preopt(proc.stdout, level), "t.c")


def _func(source: str, level: int, name: str):
    module = _module(source, level)
    for op in module.body.block.ops:
        if isinstance(op, llvm.FuncOp) and op.sym_name.data == name:
            return op, module
    raise AssertionError(f"no function {name}")


def _analyze(source: str, level: int, name: str):
    func, module = _func(source, level, name)
    return func, analyze_types(func, module)


def _args(func):
    return list(func.body.blocks.first.args)


def _ops(func, pred):
    return [op for op in func.walk() if pred(op)]


def _is_copy(op) -> bool:
    if isinstance(op, llvm.CallIntrinsicOp):
        return "memcpy" in op.intrin.data or "memmove" in op.intrin.data
    return isinstance(op, llvm.CallOp) and op.callee is not None and op.callee.root_reference.data == "memcpy"


def _line(source: str, text: str) -> int:
    """1-based line of the first line of ``source`` containing ``text``."""
    for i, line in enumerate(source.splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(text)


# --------------------------------------------------------------------------- layout


def test_data_layout_x86_64():
    S = llvm.LLVMStructType.from_type_list([i32, f64, f32, llvm.LLVMPointerType()])
    assert struct_offsets(S) == [0, 8, 16, 24]
    assert size_align(S) == (32, 8)
    packed = llvm_ext.LLVMPackedStructType.from_type_list([i8, i32, f64])
    assert struct_offsets(packed) == [0, 1, 5]
    assert size_align(packed) == (13, 1)
    assert size_align(llvm.LLVMArrayType(3, f64)) == (24, 8)
    assert size_align(IntegerType(1)) == (1, 1)
    assert size_align(IntegerType(128)) == (16, 16)
    nested = llvm.LLVMStructType.from_type_list([i8, llvm.LLVMArrayType(2, S), i8])
    assert struct_offsets(nested) == [0, 8, 72]
    assert size_align(nested) == (80, 8)


# --------------------------------------------------------------------------- arrays

ARRAYS = """
double dsum(double *a, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i]; return s; }
float fscale(float *x, int n) { float s = 0; for (int i = 0; i < n; i++) { x[i] *= 2; s += x[i]; } return s; }
double walk(double *p, double *end) { double t = 0; while (p < end) { t += *p; p++; } return t; }
double stencil(double *a, double *b, int n) {
  for (int i = 1; i < n - 1; i++) b[i] = (a[i-1] + a[i] + a[i+1]) / 3;
  return b[1];
}
"""


@pytest.mark.parametrize("level", LEVELS)
def test_double_and_float_arrays(level):
    func, info = _analyze(ARRAYS, level, "dsum")
    a = info.of(_args(func)[0])
    assert a.period == 8
    assert [a.at(o) for o in (0, 7, 8, 800)] == ["f64"] * 4
    assert info.of(_args(func)[1]).is_empty()  # the int n is no pointer
    assert info.float_type_in_range(_args(func)[0], 80) == "f64"
    assert info.float_type_in_range(_args(func)[0], None) == "f64"

    func, info = _analyze(ARRAYS, level, "fscale")
    x = info.of(_args(func)[0])
    assert x.period == 4 and x.at(0) == x.at(4) == x.at(402) == "f32"
    assert info.float_type_in_range(_args(func)[0], 40) == "f32"


@pytest.mark.parametrize("level", LEVELS)
def test_pointer_increment_loop_and_stencil_are_periodic(level):
    func, info = _analyze(ARRAYS, level, "walk")
    p = info.of(_args(func)[0])
    assert p.period == 8 and p.at(64) == "f64"
    func, info = _analyze(ARRAYS, level, "stencil")
    for arg in _args(func)[:2]:
        tree = info.of(arg)
        assert tree.at(0) == tree.at(8) == tree.at(1000) == "f64"
        assert info.float_type_in_range(arg, 4096) == "f64"


# --------------------------------------------------------------------------- structs

STRUCTS = """
struct S { int id; double x; float y; double *p; };
double one(struct S *s) { return s->id > 0 ? s->x * s->y + *s->p : 0; }
double many(struct S *s, int n) {
  double t = 0;
  for (int i = 0; i < n; i++) if (s[i].id) t += s[i].x * s[i].y + s[i].p[1];
  return t;
}
struct P { double pos[3]; double vel[3]; float m; int id; };
void move(struct P *ps, int n, double dt) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 3; k++) ps[i].pos[k] += dt * ps[i].vel[k] * ps[i].m + ps[i].id;
}
struct H { int n; double d[]; };
double hdr(struct H *h) { double t = h->n; for (int i = 0; i < h->n; i++) t += h->d[i]; return t; }
"""


@pytest.mark.parametrize("level", LEVELS)
def test_struct_fields_at_their_offsets(level):
    func, info = _analyze(STRUCTS, level, "one")
    s = info.of(_args(func)[0])
    assert [s.at(o) for o in (0, 3, 8, 15, 16, 19, 24, 31)] == [
        "int", "int", "f64", "f64", "f32", "f32", "ptr", "ptr"]
    assert s.at(4) == s.at(20) == "unknown"  # padding
    assert s.pointee(24).at(0) == "f64"
    with pytest.raises(ZymaseError, match="both double .* and float"):
        info.float_type_in_range(_args(func)[0], 32)
    assert info.float_type_in_range(_args(func)[0], 4) is None  # only the int
    assert info.float_type_in_range(_args(func)[0], 16) == "f64"  # int, padding, double


@pytest.mark.parametrize("level", LEVELS)
def test_array_of_structs_is_periodic(level):
    func, info = _analyze(STRUCTS, level, "many")
    s = info.of(_args(func)[0])
    assert s.period == 32
    for base in (0, 32, 96):
        assert s.at(base) == "int"
        assert s.at(base + 8) == "f64"
        assert s.at(base + 16) == "f32"
        assert s.at(base + 24) == "ptr"
        assert s.pointee(base + 24).at(8) == "f64"
    assert "every 32 bytes" in str(s)


@pytest.mark.parametrize("level", LEVELS)
def test_dynamic_index_into_an_array_inside_a_struct(level):
    # at -O2 `ps[i].pos[k]` becomes `(double*)&ps[i] + k`: an unbounded period of 8
    # that must not override the struct's own layout (period 56)
    func, info = _analyze(STRUCTS, level, "move")
    ps = info.of(_args(func)[0])
    assert ps.period == 56
    assert [ps.at(o) for o in (0, 16, 24, 40, 48, 52)] == ["f64", "f64", "f64", "f64", "f32", "int"]
    assert [ps.at(56 + o) for o in (0, 40, 48, 52)] == ["f64", "f64", "f32", "int"]
    assert info.float_type_in_range(_args(func)[0], 48) == "f64"
    with pytest.raises(ZymaseError, match="both double .* and float"):
        info.float_type_in_range(_args(func)[0], 56)
    # &ps[i].pos[k] may be at any of pos[0..2]: the struct's period-56 layout cannot
    # be placed relative to it and is not passed on
    inner = _ops(func, lambda op: isinstance(op, llvm.GEPOp) and op.ssa_indices
                 and isinstance(op.elem_type, (llvm.LLVMArrayType, type(f64))))
    assert inner
    for gep in inner:
        tree = info.of(gep.result)
        assert tree.period == 8 and tree.at(48) == "f64", str(tree)


@pytest.mark.parametrize("level", LEVELS)
def test_flexible_array_member_after_a_header(level):
    func, info = _analyze(STRUCTS, level, "hdr")
    h = info.of(_args(func)[0])
    assert h.at(0) == "int"
    assert h.at(8) == h.at(16) == h.at(808) == "f64"


# --------------------------------------------------------------------------- pointers to pointers

PTRPTR = """
double trace(double **rows, int n) { double t = 0; for (int i = 0; i < n; i++) t += rows[i][i]; return t; }
void fill(float **out, float v) { **out = v; }
"""


@pytest.mark.parametrize("level", LEVELS)
def test_pointer_to_pointer(level):
    func, info = _analyze(PTRPTR, level, "trace")
    rows = info.of(_args(func)[0])
    assert rows.at(0) == rows.at(8) == "ptr"
    assert rows.pointee(0).at(0) == rows.pointee(16).at(24) == "f64"
    assert info.float_type_in_range(_args(func)[0], 64) is None  # pointers, no floats
    func, info = _analyze(PTRPTR, level, "fill")
    out = info.of(_args(func)[0])
    assert out.at(0) == "ptr" and out.pointee(0).at(0) == "f32"
    # the loaded pointer value itself knows it too
    (load,) = _ops(func, lambda op: isinstance(op, llvm.LoadOp) and isinstance(op.dereferenced_value.type, llvm.LLVMPointerType))
    assert info.of(load.dereferenced_value).at(0) == "f32"


# --------------------------------------------------------------------------- memcpy

MEMCPY = """
#include <stdlib.h>
#include <string.h>
void consume(void *);
double copy_sum(const double *a, int n) {
  double *buf = malloc(n * sizeof(double));
  memcpy(buf, a, n * sizeof(double));
  double s = 0;
  for (int i = 0; i < n; i++) s += a[i] * 2;
  consume(buf);  /* opaque: the buffer's type comes through the memcpy only */
  return s;
}
double *from_malloc(int n) {
  double *buf = malloc(n * sizeof(double));
  double *dst = malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) buf[i] = i;
  memcpy(dst, buf, n * sizeof(double));
  free(buf);
  return dst;
}
void opaque_copy(void *dst, const void *src, unsigned long n) {
  memcpy(dst, src, n);
}
void zero(double *a, int n) { memset(a, 0, n * sizeof(double)); }
"""


@pytest.mark.parametrize("level", LEVELS)
def test_memcpy_carries_the_type_to_a_malloced_buffer(level):
    func, info = _analyze(MEMCPY, level, "copy_sum")
    (copy,) = _ops(func, _is_copy)
    dst = copy.operands[0]
    assert isinstance(dst.owner, llvm.CallOp) and dst.owner.callee.root_reference.data == "malloc"
    assert info.of(dst).at(0) == info.of(dst).at(8) == "f64"
    assert info.float_type_in_range(dst, None) == "f64"
    assert info.float_type_in_range(dst, 800) == "f64"

    # the other direction: only the source buffer is typed (by its stores)
    func, info = _analyze(MEMCPY, level, "from_malloc")
    (copy,) = _ops(func, _is_copy)
    assert info.float_type_in_range(copy.operands[0], None) == "f64"


@pytest.mark.parametrize("level", LEVELS)
def test_memcpy_through_void_pointer_gives_a_readable_error(level):
    func, info = _analyze(MEMCPY, level, "opaque_copy")
    (copy,) = _ops(func, _is_copy)
    with pytest.raises(ZymaseError) as excinfo:
        info.float_type_in_range(copy.operands[0], None)
    err = excinfo.value
    line = _line(MEMCPY, "memcpy(dst, src, n)")
    assert err.location is not None and err.location.startswith(f"t.c:{line}:")
    assert "memcpy" in err.construct
    assert err.function == "opaque_copy"
    assert "1st argument of 'opaque_copy'" in err.message
    assert "none of its bytes is ever read or written with a known type" in err.message
    assert "double*" in err.hint and "loop over typed elements" in err.hint
    if level == 0:
        assert "-O1 or higher" in err.hint and "TBAA" in err.hint
    else:  # already optimized: TBAA is there, it just does not cover this memory
        assert "-O1" not in err.hint
    text = err.format()
    assert text.startswith(f"zymase: error: t.c:{line}:")
    assert "in function 'opaque_copy'" in text and "hint:" in text
    # explain() directly gives the same error
    again = info.explain(copy.operands[0], copy)
    assert again.message == err.message and again.location == err.location


@pytest.mark.parametrize("level", LEVELS)
def test_memset_says_nothing_about_floats(level):
    func, info = _analyze(MEMCPY, level, "zero")
    assert info.of(_args(func)[0]).is_empty()


def test_unknown_tail_is_reported_with_what_is_known():
    src = """
    #include <string.h>
    struct T { double a; double b; };
    void f(struct T *x, struct T *y) { x->a = 1.0; memcpy(y, x, sizeof *x); }
    """
    func, info = _analyze(src, 2, "f")
    (copy,) = _ops(func, _is_copy)
    with pytest.raises(ZymaseError) as excinfo:
        info.float_type_in_range(copy.operands[0], 16)
    msg = excinfo.value.message
    assert "bytes [8, 16) of the 16 bytes are never read or written" in msg
    assert "known: bytes [0, 8) double" in msg
    assert "double*" in excinfo.value.hint


RUNTIME_BYTE_OFFSETS = """
#include <string.h>
void after(char *buf, long off, const double *x, long n) {
  double *q = (double *)(buf + off);
  q[-1] = 2.0;
  memcpy(q, x, n);
}
double aligned(double *a, long off, long n) {
  double s = a[0];
  for (long i = 0; i < n; i++) s += a[i];
  double *q = (double *)((char *)a + off);
  return s + q[0] * q[1];
}
"""


@pytest.mark.parametrize("level", LEVELS)
def test_a_copy_of_unknown_length_past_the_known_bytes_is_refused(level):
    # only the double just before the destination is known: the copied bytes are not
    # "no floats" (that silently dropped the adjoints of std::vector::insert's tail)
    func, info = _analyze(RUNTIME_BYTE_OFFSETS, level, "after")
    (copy,) = _ops(func, _is_copy)
    assert info.of(copy.operands[0]).at(-8) == "f64"
    with pytest.raises(ZymaseError, match="none of the bytes from the pointer on"):
        info.float_type_in_range(copy.operands[0], None)


@pytest.mark.parametrize("level", LEVELS)
def test_a_runtime_byte_offset_between_aligned_pointers_keeps_the_period(level):
    # a and q are both read as doubles with align 8, so (char *)a + off is a whole
    # number of doubles away from a: q's bytes past its own reads are doubles too
    func, info = _analyze(RUNTIME_BYTE_OFFSETS, level, "aligned")
    (q,) = [op.result for op in _ops(func, lambda op: isinstance(op, llvm.GEPOp))
            if op.elem_type == i8 and op.ptr is _args(func)[0]]
    assert info.of(q).at(24) == "f64"
    assert info.float_type_in_range(q, None) == "f64"


# --------------------------------------------------------------------------- TBAA

TBAA_C = """
void opaque(void *);
void keep(double *p, double v) { *p = v; opaque(p); }
"""

# The store's own type says i64; only its TBAA tag says "double".
TBAA_IR = """
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
target triple = "x86_64-pc-linux-gnu"

declare void @opaque(ptr)

define void @keep(ptr %p, i64 %bits) {
  store i64 %bits, ptr %p, align 8, !tbaa !0
  call void @opaque(ptr %p)
  ret void
}

define void @untagged(ptr %p, i64 %bits) {
  store i64 %bits, ptr %p, align 8
  call void @opaque(ptr %p)
  ret void
}

!0 = !{!1, !1, i64 0}
!1 = !{!"double", !2, i64 0}
!2 = !{!"omnipotent char", !3, i64 0}
!3 = !{!"Simple C/C++ TBAA"}
"""


def test_tbaa_alone_types_the_memory():
    module = read_llvm_ir(TBAA_IR, "tbaa.ll")
    funcs = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
    keep = funcs["keep"]
    info = analyze_types(keep, module)
    p = _args(keep)[0]
    assert info.of(p).at(0) == "f64" and info.of(p).at(7) == "f64"
    assert info.float_type_in_range(p, 8) == "f64"
    untagged = funcs["untagged"]
    info = analyze_types(untagged, module)
    assert info.of(_args(untagged)[0]).at(0) == "int"


def test_tbaa_on_a_pointer_only_passed_to_an_opaque_function():
    func, info = _analyze(TBAA_C, 2, "keep")
    (store,) = _ops(func, lambda op: isinstance(op, llvm.StoreOp))
    assert store.attributes["zymase.tbaa"].data == "double"
    assert info.float_type_in_range(_args(func)[0], 8) == "f64"


# --------------------------------------------------------------------------- interprocedural

INTERPROC = """
__attribute__((noinline)) static double total(const double *v, int n) {
  double t = 0; for (int i = 0; i < n; i++) t += v[i]; return t;
}
double caller(void *buf, int n) { return total(buf, n); }
__attribute__((noinline)) static double *second(double *v) { return v + 1; }
double use_result(void *buf) { double *q = second(buf); return q[0]; }
double rec(double *a, int n) { return n <= 1 ? a[0] : rec(a, n / 2) + rec(a + n / 2, n - n / 2); }
struct N { double v; struct N *next; };
double list(struct N *l) { double t = 0; while (l) { t += l->v; l = l->next; } return t; }
"""


@pytest.mark.parametrize("level", LEVELS)
def test_callee_loads_inform_the_caller(level):
    func, info = _analyze(INTERPROC, level, "caller")
    assert any(op.callee.root_reference.data == "total" for op in _ops(func, lambda op: isinstance(op, llvm.CallOp)))
    buf = _args(func)[0]
    assert info.of(buf).at(0) == info.of(buf).at(16) == "f64"
    assert info.float_type_in_range(buf, None) == "f64"


@pytest.mark.parametrize("level", LEVELS)
def test_callee_result_and_argument_flow_back(level):
    func, info = _analyze(INTERPROC, level, "use_result")
    buf = _args(func)[0]
    assert info.of(buf).at(8) == "f64"  # q = buf + 8 is read as double


@pytest.mark.parametrize("level", LEVELS)
def test_recursion_terminates(level):
    func, info = _analyze(INTERPROC, level, "rec")
    assert info.of(_args(func)[0]).at(0) == "f64"
    func, info = _analyze(INTERPROC, level, "list")
    node = info.of(_args(func)[0])
    assert node.at(0) == "f64" and node.at(8) == "ptr"
    assert node.pointee(8).at(0) == "f64" and node.pointee(8).pointee(8).at(8) == "ptr"


# --------------------------------------------------------------------------- API details


@pytest.mark.parametrize("level", LEVELS)
def test_argument_types_from_a_caller_can_be_given(level):
    func, info = _analyze(ARRAYS, level, "dsum")
    doubles = info.of(_args(func)[0])
    func, module = _func(MEMCPY, level, "opaque_copy")
    (copy,) = _ops(func, _is_copy)
    info = analyze_types(func, module, arg_types=[None, doubles])
    assert info.float_type_in_range(copy.operands[0], None) == "f64"
    assert info.float_type_in_range(copy.operands[0], 24) == "f64"


def test_type_tree_printing_and_equality():
    func, info = _analyze(STRUCTS, 2, "many")
    tree = info.of(_args(func)[0])
    assert str(tree) == "{[0,4):int [8,16):f64 [16,20):f32 [24,32):ptr->{[8,16):f64}} every 32 bytes from 0"
    func, info = _analyze(STRUCTS, 2, "move")
    assert str(info.of(_args(func)[0])) == (
        "{[48,52):f32 [52,56):int} every 56 bytes from 0 + {[0,8):f64} every 8 bytes from 0")
    assert info.of(_args(func)[0]).periods() == [(56, 0), (8, 0)]
    func, info = _analyze(STRUCTS, 2, "many")
    assert tree == info.of(_args(func)[0]) and hash(tree) == hash(info.of(_args(func)[0]))
    assert TypeTree().is_empty() and TypeTree().at(0) == "unknown"
    assert tree.runs(0, 8) == [(0, 4, "int"), (4, 8, "unknown")]


def test_error_names_a_value_without_arguments_by_its_defining_instruction():
    src = """
    #include <stdlib.h>
    #include <string.h>
    void *dup(const void *p, unsigned long n) { void *q = malloc(n); memcpy(q, p, n); return q; }
    """
    func, info = _analyze(src, 2, "dup")
    (copy,) = _ops(func, _is_copy)
    err = info.explain(copy.operands[0], copy)
    assert "the result of 'call @malloc' at t.c:4:" in err.message
    assert err.location.startswith("t.c:4:")


# --------------------------------------------------------------------------- widening

# Pointers kept in memory and stepped by a constant: at -O0 a cursor field or a
# std::vector's end pointer is loaded, advanced and stored back in every iteration, so
# the loop-carried pointer is a memory cell, not a phi.
STEPPED_IN_MEMORY = """
struct cursor { double *at; };
double drain(struct cursor *c, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) { s += *c->at; c->at++; }
  return s;
}
struct vec { double *begin, *end; };
static void push(struct vec *v, double x) { *v->end = x; v->end++; }
double fill(struct vec *v, int n, double x) {
  for (int i = 0; i < n; i++) push(v, x * i);
  double s = 0;
  for (double *p = v->begin; p != v->end; p++) s += *p;
  return s;
}
"""


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("name", ["drain", "fill"])
def test_pointer_stepped_in_memory_widens_to_a_period(level, name):
    # issue 29 item 1 (C++ -O0 compile time, issue 24): without widening the fixpoint
    # grew the pointee tree of the stored pointer 8 bytes per round up to MAX_OFFSET
    # (about 250 joins of ever larger byte maps for these dozen instructions); with
    # the memory cell in the pointer's web, the web is periodic with the step at once
    func, info = _analyze(STEPPED_IN_MEMORY, level, name)
    cell = info.of(_args(func)[0])
    for field in (0, 8) if name == "fill" else (0,):
        assert cell.at(field) == "ptr"
        elements = cell.pointee(field)
        assert elements.period == 8, str(elements)
        assert [elements.at(o) for o in (0, 7, 8, 800)] == ["f64"] * 4
    assert info.rule_applications < 100, info.rule_applications


# A stencil's boundary read u[i > 0 ? i - 1 : i], as Numba's code reaches AD (kpp's
# cell loop): select(i == 0, u, &u[i] - 8) makes u both &u[i] - 8 * i and &u[i] - 8
BOUNDARY_SELECT = """
define void @step(ptr %u, ptr %v, i64 %n) {
entry:
  %last = add nsw i64 %n, -1
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %first = icmp eq i64 %i, 0
  %pi = getelementptr double, ptr %u, i64 %i
  %pm = getelementptr i8, ptr %pi, i64 -8
  %pl = select i1 %first, ptr %u, ptr %pm
  %l = load double, ptr %pl
  %inner = icmp slt i64 %i, %last
  %off = select i1 %inner, i64 8, i64 0
  %pr = getelementptr i8, ptr %pi, i64 %off
  %r = load double, ptr %pr
  %c = load double, ptr %pi
  %x = fadd double %l, %r
  %y = fadd double %x, %c
  %pv = getelementptr double, ptr %v, i64 %i
  store double %y, ptr %pv
  %next = add nuw nsw i64 %i, 1
  %go = icmp slt i64 %next, %n
  br i1 %go, label %loop, label %done
done:
  ret void
}
"""


def test_a_dynamic_index_in_a_cycle_of_constant_offsets_widens_at_once():
    # issue 29 (kpp's first grad): the periodic part of u moved down 8 bytes per round
    # around the cycle u -> &u[i] -> &u[i] - 8 -> select -> u, to MAX_OFFSET: 1,038 rule
    # runs here, 6,360 on kpp's 232 ops; starting it there gives the same trees at once
    from zymase.llvm.reader import read_llvm_ir

    module = read_llvm_ir(BOUNDARY_SELECT)
    func = next(op for op in module.body.block.ops if isinstance(op, llvm.FuncOp))
    info = analyze_types(func, module)
    u = info.of(_args(func)[0])
    assert u.period == 8 and u.start == -1024, str(u)
    assert [u.at(o) for o in (-8, 0, 8, 800)] == ["f64"] * 4
    assert info.rule_applications < 100, info.rule_applications


def test_argument_elements_attribute_types_unread_bytes():
    """A front end that knows a pointer parameter's whole buffer (Numba's contiguous array
    arguments) says so with ``"zymase-arg-elements"``: a copy of run-time length of which
    the function reads only element 0 (bytes [8, 16) unknown otherwise) is then doubles;
    the integer array beside it is integers, not floats."""
    text = """
define void @g(ptr %dst, ptr %src, ptr %idx, i64 %n) #0 {
  %v = load double, ptr %src
  call void @llvm.memcpy.p0.p0.i64(ptr %dst, ptr %src, i64 %n, i1 false)
  %w = getelementptr i8, ptr %dst, i64 16
  store double %v, ptr %w
  ret void
}
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)
"""
    attrs = 'attributes #0 = { "zymase-arg-elements"="1:f64:8,2:int:4" }'
    for with_attr, expect in ((False, None), (True, "f64")):
        module = read_llvm_ir(text + (attrs if with_attr else "attributes #0 = { nounwind }"))
        func = next(op for op in module.body.block.ops if isinstance(op, llvm.FuncOp))
        info = analyze_types(func, module)
        src, idx = _args(func)[1], _args(func)[2]
        if expect is None:
            with pytest.raises(ZymaseError, match=r"bytes \[8, 16\)"):
                info.float_type_in_range(src, None)
        else:
            assert info.float_type_in_range(src, None) == expect
            assert info.of(idx).at(4) == "int"
