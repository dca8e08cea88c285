// RUN: zymase-opt %s -p enzyme | filecheck %s

// acc <- sin(acc * x) n times: the reverse sweep needs every iterate, so they go
// on a cache. The loop is counted: the forward sweep carries an iteration counter
// and tapes it once, on the exit edge; the reverse sweep counts it down to decide
// between the back edge and the loop entry (no per-iteration branch record).
func.func @iter(%x: f64, %n: i64) -> f64 {
  %one = arith.constant 1.0 : f64
  %c0 = arith.constant 0 : i64
  %c1 = arith.constant 1 : i64
  cf.br ^h(%one, %c0 : f64, i64)
^h(%acc: f64, %i: i64):
  %c = arith.cmpi slt, %i, %n : i64
  cf.cond_br %c, ^body, ^exit
^body:
  %acc2 = arith.mulf %acc, %x : f64
  %s = math.sin %acc2 : f64
  %i2 = arith.addi %i, %c1 : i64
  cf.br ^h(%s, %i2 : f64, i64)
^exit:
  func.return %acc : f64
}
func.func @d(%x: f64, %n: i64) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @iter(%x, %n, %one) {activity = [#enzyme<activity enzyme_active>, #enzyme<activity enzyme_const>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, i64, f64) -> f64
  func.return %r : f64
}

// CHECK-LABEL: func.func private @diffeiter(
// CHECK-DAG:     %[[SLOT:.*]] = enzyme.init : !enzyme.Gradient<i64>
// CHECK-DAG:     %[[COUNT:.*]] = enzyme.init : !enzyme.Cache<i64>
// CHECK:       ^{{.*}}(%{{.*}}: f64, %{{.*}}: i64, %[[K:.*]]: i64):
// CHECK-NOT:     enzyme.push
// CHECK:         cf.cond_br
// CHECK:         enzyme.push %[[COUNT]], %[[K]] : !enzyme.Cache<i64>, i64
// CHECK:         math.sin
// CHECK:         arith.addi %[[K]], %{{.*}} : i64
// CHECK:         enzyme.push %{{.*}}, %{{.*}} : !enzyme.Cache<f64>, f64
// CHECK:         %[[N:.*]] = enzyme.pop %[[COUNT]] : !enzyme.Cache<i64> -> i64
// CHECK-NEXT:    enzyme.set %[[SLOT]], %[[N]] : !enzyme.Gradient<i64>, i64
// CHECK:         enzyme.pop %{{.*}} : !enzyme.Cache<f64> -> f64
// CHECK:         math.cos
// CHECK:         %[[J:.*]] = enzyme.get %[[SLOT]] : !enzyme.Gradient<i64> -> i64
// CHECK:         arith.cmpi eq, %[[J]], %{{.*}} : i64
// CHECK:         arith.subi %[[J]], %{{.*}} : i64
