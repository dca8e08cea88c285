// RUN: zymase-opt %s -p enzyme | filecheck %s

// Issue 28 item 5: affine code is lowered to scf/arith/memref before AD
// (transforms/lower_affine.py), then differentiated by the scf region rules.
// affine.parallel runs as a sequential scf.for (the MLIR path has no parallel
// runtime); its tangent stores go to the shadow at the same index. The reverse of
// an affine.for with a step and a subscript `%i + 1` recomputes the subscript in
// the reverse loop from the reverse counter; the constant 1 it adds is
// rematerialized at the head of the reverse loop body, before its first use (it
// used to be placed after it).
func.func @square(%x : memref<?xf64>, %y : memref<?xf64>, %n : index) {
  affine.parallel (%i) = (0) to (symbol(%n)) {
    %v = affine.load %x[%i] : memref<?xf64>
    %s = arith.mulf %v, %v : f64
    affine.store %s, %y[%i] : memref<?xf64>
  }
  return
}
func.func @dsquare(%x : memref<?xf64>, %dx : memref<?xf64>, %y : memref<?xf64>, %dy : memref<?xf64>, %n : index) {
  enzyme.fwddiff @square(%x, %dx, %y, %dy, %n) {activity = [#enzyme<activity enzyme_dup>, #enzyme<activity enzyme_dup>, #enzyme<activity enzyme_const>], ret_activity = []} : (memref<?xf64>, memref<?xf64>, memref<?xf64>, memref<?xf64>, index) -> ()
  return
}
func.func @sum(%x : memref<?xf64>, %n : index) -> f64 {
  %z = arith.constant 0.0 : f64
  %r = affine.for %i = 0 to %n step 2 iter_args(%acc = %z) -> (f64) {
    %v = affine.load %x[%i + 1] : memref<?xf64>
    %c = math.cos %v : f64
    %a = arith.addf %acc, %c : f64
    affine.yield %a : f64
  }
  return %r : f64
}
func.func @dsum(%x : memref<?xf64>, %dx : memref<?xf64>, %n : index) {
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @sum(%x, %dx, %n, %one) {activity = [#enzyme<activity enzyme_dup>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (memref<?xf64>, memref<?xf64>, index, f64) -> ()
  return
}

// CHECK-LABEL: func.func private @fwddiffesquare(
// CHECK-SAME:      %[[X:.*]]: memref<?xf64>, %[[DX:.*]]: memref<?xf64>, %[[Y:.*]]: memref<?xf64>, %[[DY:.*]]: memref<?xf64>, %[[N:.*]]: index)
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[X]][%[[I]]] : memref<?xf64>
// CHECK-NEXT:      %[[DV:.*]] = memref.load %[[DX]][%[[I]]] : memref<?xf64>
// CHECK-NEXT:      %[[S:.*]] = arith.mulf %[[V]], %[[V]] : f64
// CHECK-NEXT:      %[[L:.*]] = arith.mulf %[[DV]], %[[V]] : f64
// CHECK-NEXT:      %[[R:.*]] = arith.mulf %[[V]], %[[DV]] : f64
// CHECK-NEXT:      %[[DS:.*]] = arith.addf %[[L]], %[[R]] : f64
// CHECK-NEXT:      memref.store %[[S]], %[[Y]][%[[I]]] : memref<?xf64>
// CHECK-NEXT:      memref.store %[[DS]], %[[DY]][%[[I]]] : memref<?xf64>
// CHECK-NEXT:    }

// CHECK-LABEL: func.func private @diffesum(
// CHECK-SAME:      %[[X:.*]]: memref<?xf64>, %[[DX:.*]]: memref<?xf64>, %[[N:.*]]: index, %[[SEED:.*]]: f64)
// CHECK:         %[[TWO:.*]] = arith.constant 2 : index
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[N]] step %[[TWO]] iter_args(%{{.*}} = %{{.*}}) -> (f64) {
// CHECK:           math.cos
// CHECK:         scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[DACC:.*]] = %[[SEED]]) -> (f64) {
// CHECK:           %[[SCALED:.*]] = arith.muli %{{.*}}, %[[TWO]] : index
// CHECK-NEXT:      %[[IV:.*]] = arith.addi %{{.*}}, %[[SCALED]] : index
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1 : index
// CHECK-NEXT:      %[[J:.*]] = arith.addi %[[IV]], %[[ONE]] : index
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[X]][%[[J]]] : memref<?xf64>
// CHECK-NEXT:      %[[SIN:.*]] = math.sin %[[V]] : f64
// CHECK-NEXT:      %[[P:.*]] = arith.mulf %[[DACC]], %[[SIN]] : f64
// CHECK-NEXT:      %[[NEG:.*]] = arith.negf %[[P]] : f64
// CHECK-NEXT:      %[[OLD:.*]] = memref.load %[[DX]][%[[J]]] : memref<?xf64>
// CHECK-NEXT:      %[[NEW:.*]] = arith.addf %[[OLD]], %[[NEG]] : f64
// CHECK-NEXT:      memref.store %[[NEW]], %[[DX]][%[[J]]] : memref<?xf64>
// CHECK-NEXT:      scf.yield %[[DACC]] : f64
