// RUN: zymase-opt %s -p enzyme | filecheck %s --check-prefix=GEN
// RUN: zymase-opt %s -p enzyme,remove-unnecessary-enzyme-ops,canonicalize,cse | filecheck %s --check-prefix=CLEAN

// Vector mode (width = 3) through memref and scf (issue 25 item 2). A buffer written in
// one scf.for and read back in another. The derivatives compute the primal once: one
// primal load, sin and store per iteration; forward mode loads each lane's shadow and
// shares the partial (sin x + x cos x) among the lanes, the second loop carrying the
// primal sum and three tangents as iter_args; reverse mode keeps one tape (one
// !enzyme.Cache of sin x, pushed once per iteration), one reverse loop per primal loop
// carrying the three seeds, and adds each lane's adjoint into that lane's shadow.
func.func @buffer(%a: memref<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %a, %c0 : memref<?xf64>
  %tmp = memref.alloc(%n) : memref<?xf64>
  scf.for %i = %c0 to %n step %c1 {
    %x = memref.load %a[%i] : memref<?xf64>
    %s = math.sin %x : f64
    %p = arith.mulf %s, %x : f64
    memref.store %p, %tmp[%i] : memref<?xf64>
  }
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %z) -> (f64) {
    %t = memref.load %tmp[%i] : memref<?xf64>
    %tt = arith.mulf %t, %t : f64
    %u = arith.addf %acc, %tt : f64
    scf.yield %u : f64
  }
  memref.dealloc %tmp : memref<?xf64>
  func.return %r : f64
}
func.func @rev(%A: memref<?xf64>, %dA0: memref<?xf64>, %dA1: memref<?xf64>, %dA2: memref<?xf64>, %s0: f64, %s1: f64, %s2: f64) {
  enzyme.autodiff @buffer(%A, %dA0, %dA1, %dA2, %s0, %s1, %s2) {activity = [#enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_activenoneed>], width = 3 : i64} : (memref<?xf64>, memref<?xf64>, memref<?xf64>, memref<?xf64>, f64, f64, f64) -> ()
  func.return
}
func.func @fwd(%A: memref<?xf64>, %dA0: memref<?xf64>, %dA1: memref<?xf64>, %dA2: memref<?xf64>) -> (f64, f64, f64) {
  %t:3 = enzyme.fwddiff @buffer(%A, %dA0, %dA1, %dA2) {activity = [#enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_dupnoneed>], width = 3 : i64} : (memref<?xf64>, memref<?xf64>, memref<?xf64>, memref<?xf64>) -> (f64, f64, f64)
  func.return %t#0, %t#1, %t#2 : f64, f64, f64
}

// GEN-LABEL: func.func private @diffe3buffer(
// GEN-SAME:      %[[A:.*]]: memref<?xf64>, %[[DA0:.*]]: memref<?xf64>, %[[DA1:.*]]: memref<?xf64>, %[[DA2:.*]]: memref<?xf64>, %[[S0:.*]]: f64, %[[S1:.*]]: f64, %[[S2:.*]]: f64)
// GEN:         %[[TAPE:.*]] = enzyme.init : !enzyme.Cache<f64>
// GEN-NOT:     enzyme.init
// GEN:         %[[TMP:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// GEN-NEXT:    %[[DT0:.*]] = memref.alloc(%{{.*}}) {zymase.zero_init} : memref<?xf64>
// GEN-NEXT:    %[[DT1:.*]] = memref.alloc(%{{.*}}) {zymase.zero_init} : memref<?xf64>
// GEN-NEXT:    %[[DT2:.*]] = memref.alloc(%{{.*}}) {zymase.zero_init} : memref<?xf64>
// GEN-NEXT:    scf.for
// GEN-NEXT:      %[[X:.*]] = memref.load %[[A]]
// GEN-NEXT:      %[[SIN:.*]] = math.sin %[[X]] : f64
// GEN-NEXT:      enzyme.push %[[TAPE]], %[[SIN]] : !enzyme.Cache<f64>, f64
// GEN-NEXT:      arith.mulf %[[SIN]], %[[X]] : f64
// GEN-NEXT:      memref.store %{{.*}}, %[[TMP]]
// GEN-NEXT:    }
// GEN-NOT:     math.sin
// GEN-NOT:     enzyme.push
// GEN:         scf.for %{{.*}} iter_args(%[[D0:.*]] = %[[S0]], %[[D1:.*]] = %[[S1]], %[[D2:.*]] = %[[S2]]) -> (f64, f64, f64) {
// GEN:           memref.load %[[DT0]]
// GEN:           memref.store %{{.*}}, %[[DT0]]
// GEN:           memref.load %[[DT1]]
// GEN:           memref.store %{{.*}}, %[[DT1]]
// GEN:           memref.load %[[DT2]]
// GEN:           memref.store %{{.*}}, %[[DT2]]
// GEN:         scf.for
// GEN:           enzyme.pop %[[TAPE]]
// GEN-NOT:       enzyme.pop
// GEN:           memref.load %[[DA0]]
// GEN:           memref.store %{{.*}}, %[[DA0]]
// GEN:           memref.load %[[DA1]]
// GEN:           memref.store %{{.*}}, %[[DA1]]
// GEN:           memref.load %[[DA2]]
// GEN:           memref.store %{{.*}}, %[[DA2]]
// GEN-NOT:     scf.for
// GEN:         func.return

// GEN-LABEL: func.func private @fwddiffe3buffer(
// GEN-SAME:      %[[A:.*]]: memref<?xf64>, %[[DA0:.*]]: memref<?xf64>, %[[DA1:.*]]: memref<?xf64>, %[[DA2:.*]]: memref<?xf64>) -> (f64, f64, f64)
// GEN:         %[[TMP:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// GEN-NEXT:    %[[DT0:.*]] = memref.alloc(%{{.*}}) {zymase.zero_init} : memref<?xf64>
// GEN-NEXT:    %[[DT1:.*]] = memref.alloc(%{{.*}}) {zymase.zero_init} : memref<?xf64>
// GEN-NEXT:    %[[DT2:.*]] = memref.alloc(%{{.*}}) {zymase.zero_init} : memref<?xf64>
// GEN-NEXT:    scf.for
// GEN-NEXT:      %[[X:.*]] = memref.load %[[A]]
// GEN-NEXT:      %[[T0:.*]] = memref.load %[[DA0]]
// GEN-NEXT:      %[[T1:.*]] = memref.load %[[DA1]]
// GEN-NEXT:      %[[T2:.*]] = memref.load %[[DA2]]
// GEN-NEXT:      math.sin %[[X]] : f64
// GEN-NOT:       math.sin
// GEN:           math.cos %[[X]] : f64
// GEN-NOT:       math.cos
// GEN:           %[[P:.*]] = arith.addf
// GEN-NEXT:      %[[P0:.*]] = arith.mulf %[[P]], %[[T0]] : f64
// GEN-NEXT:      %[[P1:.*]] = arith.mulf %[[P]], %[[T1]] : f64
// GEN-NEXT:      %[[P2:.*]] = arith.mulf %[[P]], %[[T2]] : f64
// GEN-NEXT:      memref.store %{{.*}}, %[[TMP]]
// GEN-NEXT:      memref.store %[[P0]], %[[DT0]]
// GEN-NEXT:      memref.store %[[P1]], %[[DT1]]
// GEN-NEXT:      memref.store %[[P2]], %[[DT2]]
// GEN-NEXT:    }
// GEN:         %{{.*}}, %[[R0:.*]], %[[R1:.*]], %[[R2:.*]] = scf.for %{{.*}} iter_args(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) -> (f64, f64, f64, f64) {
// GEN-NOT:       math.
// GEN:           scf.yield %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : f64, f64, f64, f64
// GEN:         func.return %[[R0]], %[[R1]], %[[R2]] : f64, f64, f64

// After the cleanup the tape is one buffer, and CSE leaves one cos per reverse
// iteration (the generator emits each lane's partial, as the LLVM path does; LLVM's
// CSE merges them there).
// CLEAN-LABEL: func.func private @diffe3buffer(
// CLEAN:         %[[TAPE:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// CLEAN:         scf.for
// CLEAN:           math.sin
// CLEAN-NOT:       math.sin
// CLEAN:           memref.store %{{.*}}, %[[TAPE]]
// CLEAN:         scf.for
// CLEAN:         scf.for
// CLEAN:           memref.load %[[TAPE]]
// CLEAN:           math.cos
// CLEAN-NOT:       math.cos
// CLEAN:         memref.dealloc %[[TAPE]]
// CLEAN-NOT:     scf.for
// CLEAN:         func.return
