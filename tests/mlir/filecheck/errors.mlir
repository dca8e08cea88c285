// RUN: not zymase-opt %s -p enzyme 2>&1 | filecheck %s

func.func @g(%x: f64) -> f64 {
  %y = math.sin %x : f64
  func.return %y : f64
}
func.func @d(%x: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %r = enzyme.autodiff @g(%x, %x, %one) {activity = [#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64, f64) -> f64
  func.return %r : f64
}

// CHECK: zymase: error: {{.*}}do not match the derivative signature{{.*}}enzyme.autodiff @g{{.*}}in function 'd'{{.*}}hint:
// CHECK-NOT: Traceback
