// RUN: tcc-opt --tcc-fuse %s | FileCheck %s
// RUN: tcc-opt --tcc-fuse %s | tcc-opt | FileCheck %s
// RUN: tcc-opt --tcc-fuse=report %s -mlir-pass-statistics -o /dev/null 2>&1 \
// RUN:   | FileCheck %s --check-prefix=STATS

// Bias add + GELU after a matmul: one kernel reading the matmul output and
// the bias; the matmul stays a library call.
// CHECK-LABEL: func.func @bias_gelu
// CHECK-SAME: (%[[X:[^:]*]]: {{.*}}, %[[W:[^:]*]]: {{.*}}, %[[B:[^:]*]]: tensor<768xf32>)
// CHECK: %[[H:.*]] = tcc.matmul %[[X]], %[[W]]
// CHECK: %[[F:.*]] = exec.fusion "fused_0"(%[[H]], %[[B]]) : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32> {
// CHECK-NEXT: ^bb0(%[[A0:.*]]: tensor<4x768xf32>, %[[A1:.*]]: tensor<768xf32>):
// CHECK-NEXT: %[[S:.*]] = tcc.add %[[A0]], %[[A1]]
// CHECK-NEXT: %[[G:.*]] = tcc.gelu %[[S]] {approximate = #tcc<gelu_approx tanh>}
// CHECK-NEXT: exec.yield %[[G]] : tensor<4x768xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return %[[F]]
func.func @bias_gelu(%x: tensor<4x768xf32>, %w: tensor<768x768xf32>, %b: tensor<768xf32>) -> tensor<4x768xf32> {
  %h = tcc.matmul %x, %w : (tensor<4x768xf32>, tensor<768x768xf32>) -> tensor<4x768xf32>
  %0 = tcc.add %h, %b : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
  %1 = tcc.gelu %0 {approximate = #tcc<gelu_approx tanh>} : (tensor<4x768xf32>) -> tensor<4x768xf32>
  return %1 : tensor<4x768xf32>
}

// The residual add is a kernel of its own; layer_norm (a row reduction)
// stays as is and reads the kernel's result.
// CHECK-LABEL: func.func @residual_layer_norm
// CHECK: %[[R:.*]] = exec.fusion "fused_1"
// CHECK: tcc.add
// CHECK: exec.yield
// CHECK: tcc.layer_norm %[[R]] scale
func.func @residual_layer_norm(%x: tensor<4x768xf32>, %y: tensor<4x768xf32>, %g: tensor<768xf32>, %b: tensor<768xf32>) -> tensor<4x768xf32> {
  %0 = tcc.add %x, %y : (tensor<4x768xf32>, tensor<4x768xf32>) -> tensor<4x768xf32>
  %1 = tcc.layer_norm %0 scale %g bias %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<4x768xf32>, tensor<768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
  return %1 : tensor<4x768xf32>
}

// %0 is also returned, so absorbing it would compute it twice: it becomes
// its own kernel, which the neg/tanh kernel reads.
// CHECK-LABEL: func.func @outside_use
// CHECK: %[[E:.*]] = exec.fusion "fused_2"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK: tcc.exp
// CHECK-NOT: tcc.neg
// CHECK: exec.yield
// CHECK: %[[T:.*]] = exec.fusion "fused_3"(%[[E]])
// CHECK: tcc.neg
// CHECK: tcc.tanh
// CHECK: return %[[E]], %[[T]]
func.func @outside_use(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = tcc.exp %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = tcc.neg %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tcc.tanh %1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %2 : tensor<4x8xf32>, tensor<4x8xf32>
}

// A [768] computation feeding a [4,768] add runs over another iteration
// space, so it is a separate kernel.
// CHECK-LABEL: func.func @shape_change
// CHECK: %[[SQ:.*]] = exec.fusion "fused_4"(%{{.*}}) : (tensor<768xf32>) -> tensor<768xf32>
// CHECK: tcc.mul
// CHECK: exec.fusion "fused_5"(%{{.*}}, %[[SQ]]) : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
// CHECK-NOT: tcc.mul
// CHECK: tcc.add
func.func @shape_change(%x: tensor<4x768xf32>, %b: tensor<768xf32>) -> tensor<4x768xf32> {
  %0 = tcc.mul %b, %b : (tensor<768xf32>, tensor<768xf32>) -> tensor<768xf32>
  %1 = tcc.add %x, %0 : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
  return %1 : tensor<4x768xf32>
}

// Splat constants are cloned into the kernel, not passed in; the broadcast
// (same result shape) and the compare/where/cast chain with an i1 value in
// the middle are one kernel. A constant only kernels use is removed.
// CHECK-LABEL: func.func @splat_constants
// CHECK-NOT: tcc.constant
// CHECK: exec.fusion "fused_6"(%{{[^,]*}}, %{{[^,]*}}) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xi32> {
// CHECK-DAG: tcc.constant dense<0.000000e+00> : tensor<f32>
// CHECK-DAG: tcc.constant dense<2.000000e+00> : tensor<f32>
// CHECK: tcc.broadcast
// CHECK: tcc.cmp
// CHECK: tcc.where
// CHECK: tcc.cast
// CHECK: exec.yield
func.func @splat_constants(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xi32> {
  %zero = tcc.constant dense<0.0> : tensor<f32>
  %two = tcc.constant dense<2.0> : tensor<f32>
  %0 = tcc.broadcast %b : (tensor<8xf32>) -> tensor<4x8xf32>
  %1 = tcc.cmp gt, %x, %zero : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xi1>
  %2 = tcc.mul %0, %two : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = tcc.where %1, %2, %x : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = tcc.cast %3 : (tensor<4x8xf32>) -> tensor<4x8xi32>
  return %4 : tensor<4x8xi32>
}

// A constant with other users stays (and is still cloned into the kernel);
// a non-splat constant is a kernel operand.
// CHECK-LABEL: func.func @shared_constants
// CHECK: %[[C:.*]] = tcc.constant dense<3.000000e+00>
// CHECK: %[[T:.*]] = tcc.constant dense<[1.000000e+00, 2.000000e+00]>
// CHECK: exec.fusion "fused_7"(%{{.*}}, %[[T]]) : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32> {
// CHECK: tcc.constant dense<3.000000e+00>
// CHECK: return {{.*}}, %[[C]]
func.func @shared_constants(%x: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<f32>) {
  %c = tcc.constant dense<3.0> : tensor<f32>
  %t = tcc.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %0 = tcc.mul %x, %c : (tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
  %1 = tcc.add %0, %t : (tensor<2x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %1, %c : tensor<2x2xf32>, tensor<f32>
}

// Unfused launches: matmul, add, gelu | add, layer_norm | exp, neg, tanh |
// mul, add | broadcast, cmp, mul, where, cast | mul, add = 18.
// Fused: matmul + 1 | 1 + layer_norm | 2 | 2 | 1 | 1 = 9.
// STATS-DAG: remark: tcc-fuse: @bias_gelu: 3 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @residual_layer_norm: 2 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @outside_use: 3 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @shape_change: 2 kernels before fusion, 2 after
// STATS-DAG: remark: tcc-fuse: @splat_constants: 5 kernels before fusion, 1 after
// STATS-DAG: remark: tcc-fuse: @shared_constants: 2 kernels before fusion, 1 after
// STATS: Pass statistics report
