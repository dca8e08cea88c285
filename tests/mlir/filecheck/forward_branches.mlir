// RUN: zymase-opt %s -p enzyme | filecheck %s

func.func @relu3(%x: f64) -> f64 {
  %z = arith.constant 0.0 : f64
  %c = arith.cmpf ogt, %x, %z : f64
  cf.cond_br %c, ^pos, ^done(%z : f64)
^pos:
  %x2 = arith.mulf %x, %x : f64
  %x3 = arith.mulf %x2, %x : f64
  cf.br ^done(%x3 : f64)
^done(%r: f64):
  func.return %r : f64
}
func.func @t(%x: f64, %dx: f64) -> f64 {
  %d = enzyme.fwddiff @relu3(%x, %dx) {activity = [#enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_dupnoneed>]} : (f64, f64) -> f64
  func.return %d : f64
}

// Block arguments get tangent block arguments; both edges pass a tangent.
// CHECK-LABEL: func.func private @fwddifferelu3(%[[X:.*]]: f64, %[[DX:.*]]: f64) -> f64
// CHECK:         cf.cond_br %{{.*}}, ^[[POS:.*]], ^[[DONE:.*]](%{{.*}}, %{{.*}} : f64, f64)
// CHECK:       ^[[POS]]:
// CHECK:         cf.br ^[[DONE]](%{{.*}}, %{{.*}} : f64, f64)
// CHECK:       ^[[DONE]](%{{.*}}: f64, %[[T:.*]]: f64):
// CHECK-NEXT:    func.return %[[T]] : f64
