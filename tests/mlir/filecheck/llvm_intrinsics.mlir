// RUN: zymase-opt %s -p enzyme | filecheck %s

// Issue 28 item 5, llvm.intr.* in the llvm dialect: intrinsic ops (MLIR 19's
// pretty form for the math ones, the generic form for memcpy) become the
// llvm.call_intrinsic calls the LLVM IR reader makes (transforms/
// llvm_intrinsic_calls.py), so the rules found by base name apply and the memcpy
// is mirrored on the shadows.
llvm.func @cp(%src: !llvm.ptr, %dst: !llvm.ptr, %n: i64) -> f64 {
  "llvm.intr.memcpy"(%dst, %src, %n) <{isVolatile = false}> : (!llvm.ptr, !llvm.ptr, i64) -> ()
  %a = llvm.load %dst : !llvm.ptr -> f64
  %s = llvm.intr.sqrt(%a) : (f64) -> f64
  %three = llvm.mlir.constant(3 : i32) : i32
  %p = llvm.intr.powi(%s, %three) : (f64, i32) -> f64
  llvm.return %p : f64
}
func.func @fwd_cp(%s: !llvm.ptr, %ds: !llvm.ptr, %d: !llvm.ptr, %dd: !llvm.ptr, %n: i64) -> f64 {
  %r = enzyme.fwddiff @cp(%s, %ds, %d, %dd, %n) {activity = [#enzyme<activity enzyme_dup>, #enzyme<activity enzyme_dup>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_dupnoneed>]} : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64) -> f64
  return %r : f64
}

// CHECK-LABEL: llvm.func @cp(
// CHECK:         %[[NV:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%{{.*}}, %{{.*}}, %{{.*}}, %[[NV]]) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
// CHECK:         llvm.call_intrinsic "llvm.sqrt.f64"
// CHECK:         llvm.call_intrinsic "llvm.powi.f64.i32"
// CHECK-LABEL: llvm.func internal @fwddiffecp(
// CHECK-SAME:      %[[S:.*]]: !llvm.ptr, %[[DS:.*]]: !llvm.ptr, %[[D:.*]]: !llvm.ptr, %[[DD:.*]]: !llvm.ptr, %[[N:.*]]: i64)
// CHECK:         llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%[[D]], %[[S]], %[[N]], %{{.*}})
// a run-time length: the tangent's copy is checked to move whole doubles first
// CHECK:         llvm.call @__zymase_whole_floats(%[[N]], %{{.*}}, %{{.*}}, %{{.*}})
// CHECK-NEXT:    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%[[DD]], %[[DS]], %[[N]], %{{.*}})
// CHECK-NEXT:    %[[A:.*]] = llvm.load %[[D]] : !llvm.ptr -> f64
// CHECK-NEXT:    %[[DA:.*]] = llvm.load %[[DD]] : !llvm.ptr -> f64
// CHECK-NEXT:    %[[SQ:.*]] = llvm.call_intrinsic "llvm.sqrt.f64"(%[[A]]) : (f64) -> f64
// CHECK:         llvm.fdiv %[[DA]], %{{.*}} : f64
// CHECK:         %[[THREE:.*]] = llvm.mlir.constant(3 : i32) : i32
// CHECK:         %[[NM1:.*]] = llvm.sub %[[THREE]], %{{.*}} : i32
// CHECK-NEXT:    llvm.call_intrinsic "llvm.powi.f64.i32"(%[[SQ]], %[[NM1]]) : (f64, i32) -> f64
