// RUN: zymase-opt %s -p enzyme | filecheck %s --check-prefix=GEN
// RUN: zymase-opt %s -p enzyme,remove-unnecessary-enzyme-ops,canonicalize,cse | filecheck %s --check-prefix=CLEAN

// Reverse mode at the structured level. acc <- sin(acc * x), n times: the reverse
// is an scf.for over the same trip count carrying the adjoint of acc as its
// iter_arg; the iterates are pushed in the forward loop, popped in the reverse one,
// and remove-unnecessary-enzyme-ops turns that cache into a memref sized by the
// trip count, stored at the forward iteration and loaded at n - 1 - k.
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
// GEN-NEXT:      enzyme.push %{{.*}}, %[[M]] : !enzyme.Cache<f64>, f64
// GEN:         %[[SPAN:.*]] = arith.subi %[[N]], %{{.*}} : index
// GEN-NEXT:    %[[Q:.*]] = arith.ceildivsi %[[SPAN]], %{{.*}} : index
// GEN:         %[[TRIPS:.*]] = arith.maxsi %[[Q]], %{{.*}} : index
// GEN:         scf.for %{{.*}} = %{{.*}} to %[[TRIPS]] step %{{.*}} iter_args(%[[DACC:.*]] = %[[SEED]]) -> (f64) {
// GEN:           enzyme.pop %{{.*}} : !enzyme.Cache<f64> -> f64
// GEN:           math.cos
// GEN:           %[[D:.*]] = arith.mulf %[[DACC]], %{{.*}} : f64
// GEN:           %[[DNEXT:.*]] = arith.mulf %[[D]], %[[X]] : f64
// GEN:           scf.yield %[[DNEXT]] : f64

// CLEAN-LABEL: func.func private @diffeloop(
// CLEAN-SAME:      %[[X:.*]]: f64, %[[N:.*]]: index, %[[SEED:.*]]: f64)
// CLEAN-NOT:     enzyme.push
// CLEAN:         %[[TRIPS:.*]] = arith.maxsi %[[N]], %{{.*}} : index
// CLEAN:         %[[BUF:.*]] = memref.alloc(%[[TRIPS]]) : memref<?xf64>
// CLEAN:         scf.for %[[IV:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f64) {
// CLEAN:           memref.store %{{.*}}, %[[BUF]][%[[IV]]] : memref<?xf64>
// CLEAN:         scf.for %[[K:.*]] = %{{.*}} to %[[TRIPS]] step %{{.*}} iter_args(%[[DACC:.*]] = %[[SEED]]) -> (f64) {
// CLEAN:           %[[LAST:.*]] = arith.subi %[[TRIPS]], %{{.*}} : index
// CLEAN-NEXT:      %[[J:.*]] = arith.subi %[[LAST]], %[[K]] : index
// CLEAN:           memref.load %[[BUF]][%[[J]]] : memref<?xf64>
// CLEAN:           math.cos
// CLEAN:           scf.yield
// CLEAN:         memref.dealloc %[[BUF]] : memref<?xf64>
// CLEAN-NOT:     enzyme.pop
// CLEAN:         func.return

// scf.if in a loop: the reverse is an scf.if on the same condition; the value
// computed in the taken branch comes back as a result of the forward scf.if and
// through the loop's buffer.
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

// CLEAN-LABEL: func.func private @diffebranch(
// CLEAN-NOT:     enzyme.push
// CLEAN:         memref.alloc(%{{.*}}) : memref<?xi1>
// CLEAN:         %{{.*}}, %[[T:.*]] = scf.if %{{.*}} -> (f64, f64) {
// CLEAN:         memref.store %[[T]], %{{.*}}[%{{.*}}] : memref<?xf64>
// CLEAN-NOT:     enzyme.pop
// CLEAN:         func.return

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
// CLEAN:         scf.for %{{.*}} = %{{.*}} to %[[COUNT]] step %{{.*}} iter_args(%{{.*}} = %{{.*}}) -> (f64) {
// CLEAN:           enzyme.pop %[[CACHE]] : !enzyme.Cache<f64> -> f64
// CLEAN:           scf.yield
