// RUN: zymase-opt %s -p enzyme | filecheck %s --check-prefix=GEN
// RUN: zymase-opt %s -p enzyme,remove-unnecessary-enzyme-ops,canonicalize,cse | filecheck %s --check-prefix=CLEAN
// RUN: zymase-opt %s -p enzyme,remove-unnecessary-enzyme-ops | filecheck %s --check-prefix=NOCELL

// Reverse mode at the structured level. acc <- sin(acc * x), n times: the reverse
// is an scf.for over the same trip count carrying the adjoint of acc as its
// iter_arg; the iterates are pushed in the forward loop, popped in the reverse one
// (acc * x is computed again from the popped iterate, not pushed: the min-cut of
// tape.recompute_cut tapes one value where two were needed), and
// remove-unnecessary-enzyme-ops turns that cache into a memref sized by the
// trip count, stored at the forward iteration and loaded at n - 1 - k. The
// adjoint of %x, used inside the loop, is generated as an !enzyme.Gradient cell
// (get/add/set in the reverse loop); the cleanup carries it as a second iter_arg
// of the reverse loop instead (the NOCELL run: no cell is left in any reverse
// function of this file, only scf.while's push/pop caches).
func.func @loop(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %one) -> (f64) {
    %m = arith.mulf %acc, %x : f64
    %s = math.sin %m : f64
    scf.yield %s : f64
  }
  func.return %r : f64
}
func.func @dloop(%x: f64, %n: index) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @loop(%x, %n, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, index, f64) -> f64
  func.return %r : f64
}

// GEN-LABEL: func.func private @diffeloop(
// GEN-SAME:      %[[X:.*]]: f64, %[[N:.*]]: index, %[[SEED:.*]]: f64)
// GEN:         scf.for %[[IV:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f64) {
// GEN-NEXT:      enzyme.push %{{.*}}, %[[ACC]] : !enzyme.Cache<f64>, f64
// GEN-NEXT:      %[[M:.*]] = arith.mulf %[[ACC]], %[[X]] : f64
// GEN-NEXT:      math.sin %[[M]] : f64
// GEN:         %[[SPAN:.*]] = arith.subi %[[N]], %{{.*}} : index
// GEN-NEXT:    %[[Q:.*]] = arith.ceildivsi %[[SPAN]], %{{.*}} : index
// GEN:         %[[TRIPS:.*]] = arith.maxsi %[[Q]], %{{.*}} : index
// GEN:         scf.for %{{.*}} = %{{.*}} to %[[TRIPS]] step %{{.*}} iter_args(%[[DACC:.*]] = %[[SEED]]) -> (f64) {
// GEN:           %[[POPPED:.*]] = enzyme.pop %{{.*}} : !enzyme.Cache<f64> -> f64
// GEN-NEXT:      %[[M2:.*]] = arith.mulf %[[POPPED]], %[[X]] : f64
// GEN-NEXT:      math.cos %[[M2]] : f64
// GEN:           %[[D:.*]] = arith.mulf %[[DACC]], %{{.*}} : f64
// GEN:           %[[DNEXT:.*]] = arith.mulf %[[D]], %[[X]] : f64
// GEN:           enzyme.get %[[DX:.*]] : !enzyme.Gradient<f64> -> f64
// GEN:           enzyme.set %[[DX]], %{{.*}} : !enzyme.Gradient<f64>, f64
// GEN:           scf.yield %[[DNEXT]] : f64
// GEN:         enzyme.get %[[DX]] : !enzyme.Gradient<f64> -> f64

// CLEAN-LABEL: func.func private @diffeloop(
// CLEAN-SAME:      %[[X:.*]]: f64, %[[N:.*]]: index, %[[SEED:.*]]: f64)
// CLEAN-NOT:     enzyme.
// CLEAN:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CLEAN:         %[[TRIPS:.*]] = arith.maxsi %[[N]], %{{.*}} : index
// CLEAN:         %[[BUF:.*]] = memref.alloc(%[[TRIPS]]) : memref<?xf64>
// CLEAN:         scf.for %[[IV:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f64) {
// CLEAN:           memref.store %{{.*}}, %[[BUF]][%[[IV]]] : memref<?xf64>
// CLEAN:         %{{.*}}, %[[DXOUT:.*]] = scf.for %[[K:.*]] = %{{.*}} to %[[TRIPS]] step %{{.*}} iter_args(%[[DACC:.*]] = %[[SEED]], %[[DX:.*]] = %[[ZERO]]) -> (f64, f64) {
// CLEAN:           %[[LAST:.*]] = arith.subi %[[TRIPS]], %{{.*}} : index
// CLEAN-NEXT:      %[[J:.*]] = arith.subi %[[LAST]], %[[K]] : index
// CLEAN:           memref.load %[[BUF]][%[[J]]] : memref<?xf64>
// CLEAN:           math.cos
// CLEAN-NOT:       enzyme.
// CLEAN:           %[[DXNEXT:.*]] = arith.addf %[[DX]], %{{.*}} : f64
// CLEAN-NEXT:      scf.yield %{{.*}}, %[[DXNEXT]] : f64, f64
// CLEAN:         memref.dealloc %[[BUF]] : memref<?xf64>
// CLEAN-NOT:     enzyme.
// CLEAN:         func.return %[[DXOUT]] : f64

// NOCELL-LABEL: func.func private @diffeloop(
// NOCELL-NOT:     enzyme.
// NOCELL:         func.return

// scf.if in a loop: the reverse is an scf.if on the same condition. The product
// computed in the taken branch is computed again there from the iterate, which the
// loop's buffer keeps (it used to come back as a second result of the forward
// scf.if, through a buffer of its own).
func.func @branch(%x: f64, %n: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f64) {
    %pos = arith.cmpf ogt, %a, %z : f64
    %b = scf.if %pos -> (f64) {
      %t = arith.mulf %a, %x : f64
      %u = math.cos %t : f64
      scf.yield %u : f64
    } else {
      %t = arith.mulf %a, %a : f64
      scf.yield %t : f64
    }
    scf.yield %b : f64
  }
  func.return %r : f64
}
func.func @dbranch(%x: f64, %n: index) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @branch(%x, %n, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, index, f64) -> f64
  func.return %r : f64
}

// GEN-LABEL: func.func private @diffebranch(
// GEN:         %[[POS:.*]] = arith.cmpf ogt
// GEN-NEXT:    enzyme.push %{{.*}}, %[[POS]] : !enzyme.Cache<i1>, i1
// GEN:         scf.if %[[POS]] -> (f64) {
// GEN:         scf.for
// GEN:           %[[C:.*]] = enzyme.pop %{{.*}} : !enzyme.Cache<i1> -> i1
// GEN:           scf.if %[[C]] {
// GEN:             math.sin
// GEN:           } else {
// GEN:           }

// The adjoint of %a (defined in the loop body, used in the branches) is a cell
// reset after each reverse iteration takes it: the cleanup does not carry it
// around the reverse loop (it is zero at every iteration's start) but returns it
// from the reverse scf.if, next to the adjoint of %x, which is carried.
// CLEAN-LABEL: func.func private @diffebranch(
// CLEAN-SAME:      %[[X:.*]]: f64, %[[N:.*]]: index, %[[SEED:.*]]: f64)
// CLEAN-NOT:     enzyme.
// CLEAN:         %[[BUF:.*]] = memref.alloc(%{{.*}}) : memref<?xf64>
// CLEAN:         memref.alloc(%{{.*}}) : memref<?xi1>
// CLEAN:         scf.for %{{.*}} iter_args(%[[A:.*]] = %[[X]]) -> (f64) {
// CLEAN-NEXT:      memref.store %[[A]], %[[BUF]][%{{.*}}] : memref<?xf64>
// CLEAN:           scf.if %{{.*}} -> (f64) {
// CLEAN:         %[[DA:.*]], %[[DX:.*]] = scf.for %{{.*}} iter_args(%[[DACC:.*]] = %[[SEED]], %[[DXA:.*]] = %{{.*}}) -> (f64, f64) {
// CLEAN:           %[[C:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<?xi1>
// CLEAN:           %[[AR:.*]] = memref.load %[[BUF]][%{{.*}}] : memref<?xf64>
// CLEAN:           %[[DXB:.*]], %[[DAB:.*]] = scf.if %[[C]] -> (f64, f64) {
// CLEAN-NEXT:        %[[T:.*]] = arith.mulf %[[AR]], %[[X]] : f64
// CLEAN-NEXT:        math.sin %[[T]] : f64
// CLEAN:             %[[DXT:.*]] = arith.addf %[[DXA]], %{{.*}} : f64
// CLEAN-NEXT:        scf.yield %[[DXT]], %{{.*}} : f64, f64
// CLEAN-NEXT:      } else {
// CLEAN:             scf.yield %[[DXA]], %{{.*}} : f64, f64
// CLEAN-NEXT:      }
// CLEAN-NEXT:      scf.yield %[[DAB]], %[[DXB]] : f64, f64
// CLEAN-NOT:     enzyme.
// CLEAN:         %[[SUM:.*]] = arith.addf %[[DX]], %[[DA]] fastmath<reassoc,nsz> : f64
// CLEAN-NEXT:    func.return %[[SUM]] : f64

// NOCELL-LABEL: func.func private @diffebranch(
// NOCELL-NOT:     enzyme.
// NOCELL:         func.return

// scf.while: the forward loop counts its iterations; the reverse undoes the last
// test, then runs an scf.for over the count. The trip count is unknown before the
// loop runs, so the values keep a growing cache (push/pop) after cleanup.
func.func @wloop(%x: f64, %y: f64) -> f64 {
  %ten = arith.constant 10.0 : f64
  %r = scf.while (%a = %y) : (f64) -> f64 {
    %more = arith.cmpf olt, %a, %ten : f64
    scf.condition(%more) %a : f64
  } do {
  ^bb0(%b: f64):
    %m = arith.mulf %b, %x : f64
    %e = math.exp %m : f64
    %n = arith.addf %b, %e : f64
    scf.yield %n : f64
  }
  func.return %r : f64
}
func.func @dwloop(%x: f64, %y: f64) -> (f64, f64) {
  %one = arith.constant 1.0 : f64
  %r:2 = enzyme.autodiff @wloop(%x, %y, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64, f64) -> (f64, f64)
  func.return %r#0, %r#1 : f64, f64
}

// CLEAN-LABEL: func.func private @diffewloop(
// CLEAN:         %[[CACHE:.*]] = enzyme.init : !enzyme.Cache<f64>
// CLEAN:         %{{.*}}, %[[COUNT:.*]] = scf.while (%{{.*}} = %{{.*}}, %[[K:.*]] = %{{.*}}) : (f64, index) -> (f64, index) {
// CLEAN:           scf.condition(%{{.*}}) %{{.*}}, %[[K]] : f64, index
// CLEAN:         } do {
// CLEAN:           enzyme.push %[[CACHE]], %{{.*}} : !enzyme.Cache<f64>, f64
// CLEAN:           arith.addi
// CLEAN:         scf.for %{{.*}} = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) -> (f64, f64) {
// CLEAN:           enzyme.pop %[[CACHE]] : !enzyme.Cache<f64> -> f64
// CLEAN:           scf.yield

// NOCELL-LABEL: func.func private @diffewloop(
// NOCELL-NOT:     enzyme.{{init.*Gradient|get|set}}
// NOCELL:         func.return

// A loop nest with both trip counts known before it: the caches become 2-d
// buffers, and the adjoint of %x, which both loop bodies add to, is carried by
// both reverse loops (the inner one starts from the outer one's iter_arg and
// hands its sum back as a result).
func.func @nest(%x: f64, %n: index, %m: index) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %one = arith.constant 1.0 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %one) -> (f64) {
    %q = arith.mulf %a, %x : f64
    %r2 = scf.for %j = %c0 to %m step %c1 iter_args(%b = %q) -> (f64) {
      %t = arith.mulf %b, %x : f64
      %s = math.sin %t : f64
      scf.yield %s : f64
    }
    scf.yield %r2 : f64
  }
  func.return %r : f64
}
func.func @dnest(%x: f64, %n: index, %m: index) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @nest(%x, %n, %m, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, index, index, f64) -> f64
  func.return %r : f64
}

// GEN-LABEL: func.func private @diffenest(
// GEN:         %[[DX:.*]] = enzyme.init : !enzyme.Gradient<f64>
// GEN:         scf.for
// GEN:           scf.for
// GEN:             enzyme.set %[[DX]], %{{.*}} : !enzyme.Gradient<f64>, f64
// GEN:           enzyme.set %[[DX]], %{{.*}} : !enzyme.Gradient<f64>, f64

// CLEAN-LABEL: func.func private @diffenest(
// CLEAN-SAME:      %[[X:.*]]: f64, %[[N:.*]]: index, %[[M:.*]]: index, %[[SEED:.*]]: f64)
// CLEAN-NOT:     enzyme.
// CLEAN:         %[[ZERO:.*]] = arith.constant 0.000000e+00 : f64
// CLEAN:         memref.alloc(%{{.*}}, %{{.*}}) : memref<?x?xf64>
// CLEAN:         %{{.*}}, %[[DXOUT:.*]] = scf.for %{{.*}} iter_args(%[[DA:.*]] = %[[SEED]], %[[DX:.*]] = %[[ZERO]]) -> (f64, f64) {
// CLEAN:           %[[DB:.*]], %[[DXIN:.*]] = scf.for %{{.*}} iter_args(%[[DBA:.*]] = %[[DA]], %[[DXI:.*]] = %[[DX]]) -> (f64, f64) {
// CLEAN:             %[[DXI2:.*]] = arith.addf %[[DXI]], %{{.*}} : f64
// CLEAN-NEXT:        scf.yield %{{.*}}, %[[DXI2]] : f64, f64
// CLEAN:           %[[DXO2:.*]] = arith.addf %[[DXIN]], %{{.*}} : f64
// CLEAN-NEXT:      scf.yield %{{.*}}, %[[DXO2]] : f64, f64
// CLEAN-NOT:     enzyme.
// CLEAN:         func.return %[[DXOUT]] : f64

// NOCELL-LABEL: func.func private @diffenest(
// NOCELL-NOT:     enzyme.
// NOCELL:         func.return

// scf.if at the top: each reverse branch adds to the adjoints of %x and %y,
// which come out of the reverse scf.if as its results (the branch that does not
// touch one yields the value from before the scf.if).
func.func @choose(%x: f64, %y: f64) -> f64 {
  %c = arith.cmpf ogt, %x, %y : f64
  %r = scf.if %c -> (f64) {
    %p = arith.mulf %x, %y : f64
    scf.yield %p : f64
  } else {
    %e = math.exp %y : f64
    scf.yield %e : f64
  }
  %o = arith.mulf %r, %x : f64
  func.return %o : f64
}
func.func @dchoose(%x: f64, %y: f64) -> (f64, f64) {
  %one = arith.constant 1.0 : f64
  %r:2 = enzyme.autodiff @choose(%x, %y, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64, f64) -> (f64, f64)
  func.return %r#0, %r#1 : f64, f64
}

// GEN-LABEL: func.func private @diffechoose(
// GEN:         scf.if %{{.*}} {
// GEN:           enzyme.set
// GEN:         } else {
// GEN:           enzyme.set
// GEN:         }

// CLEAN-LABEL: func.func private @diffechoose(
// CLEAN-SAME:      %[[X:.*]]: f64, %[[Y:.*]]: f64, %[[SEED:.*]]: f64)
// CLEAN-NOT:     enzyme.
// CLEAN:         %[[C:.*]] = arith.cmpf ogt, %[[X]], %[[Y]] : f64
// CLEAN:         %[[R:.*]], %[[E:.*]] = scf.if %[[C]] -> (f64, f64) {
// CLEAN:         %[[DR:.*]] = arith.mulf %[[SEED]], %[[X]] : f64
// CLEAN:         %[[DX0:.*]] = arith.mulf %[[R]], %[[SEED]] : f64
// CLEAN:         %[[DX:.*]], %[[DY:.*]] = scf.if %[[C]] -> (f64, f64) {
// CLEAN:           %[[DXT:.*]] = arith.addf %[[DX0]], %{{.*}} : f64
// CLEAN:           scf.yield %[[DXT]], %{{.*}} : f64, f64
// CLEAN:         } else {
// CLEAN:           %[[DYE:.*]] = arith.mulf %[[DR]], %[[E]] : f64
// CLEAN-NEXT:      scf.yield %[[DX0]], %[[DYE]] : f64, f64
// CLEAN:         func.return %[[DX]], %[[DY]] : f64, f64

// NOCELL-LABEL: func.func private @diffechoose(
// NOCELL-NOT:     enzyme.
// NOCELL:         func.return
