// RUN: tcc-opt --split-input-file --tcc-expand-batch-norm %s | FileCheck %s
// RUN: tcc-opt --split-input-file --tcc-lower-pipeline='kind=inference' %s | FileCheck %s --check-prefix=LOWER

// Without `training` (an eval-mode export): the running statistics,
// reshaped to [C, 1] to broadcast over dims 2...:
// (x - mean) * (rsqrt(var + eps) * scale) + bias.
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x3x4xf32>, %[[S:[^:]*]]: tensor<3xf32>, %[[B:[^:]*]]: tensor<3xf32>, %[[M:[^:]*]]: tensor<3xf32>, %[[V:[^:]*]]: tensor<3xf32>)
// CHECK-NOT: tcc.batch_norm
// CHECK: %[[MC:.*]] = tcc.reshape %[[M]] : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: %[[C:.*]] = tcc.sub %[[X]], %[[MC]]
// CHECK-NEXT: %[[VC:.*]] = tcc.reshape %[[V]] : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: %[[EPS:.*]] = tcc.constant dense<9.99999974E-6> : tensor<f32>
// CHECK-NEXT: %[[SH:.*]] = tcc.add %[[VC]], %[[EPS]]
// CHECK-NEXT: %[[SC:.*]] = tcc.reshape %[[S]] : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: %[[R:.*]] = tcc.rsqrt %[[SH]]
// CHECK-NEXT: %[[F:.*]] = tcc.mul %[[R]], %[[SC]]
// CHECK-NEXT: %[[Y:.*]] = tcc.mul %[[C]], %[[F]]
// CHECK-NEXT: %[[BC:.*]] = tcc.reshape %[[B]] : (tensor<3xf32>) -> tensor<3x1xf32>
// CHECK-NEXT: %[[OUT:.*]] = tcc.add %[[Y]], %[[BC]]
// CHECK-NEXT: return %[[OUT]]
// The inference lowering runs the pass after tcc-drop-unreachable: the
// batch norm becomes generated kernels (it was refused by tcc-lower-calls
// before).
// LOWER-LABEL: func.func @forward
// LOWER-NOT: tcc.batch_norm
// LOWER: exec.fusion
func.func @forward(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>,
                   %m: tensor<3xf32>, %v: tensor<3xf32>) -> tensor<2x3x4xf32> {
  %y, %nm, %nv = tcc.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64} : tensor<2x3x4xf32>, tensor<3xf32>
  return %y : tensor<2x3x4xf32>
}

// -----

// With `training`: the batch's mean and biased variance over dims 0 and 2,
// and ONNX's running statistics mean * momentum + batch * (1 - momentum).
// CHECK-LABEL: func.func @forward
// CHECK: %[[MEAN:.*]] = tcc.reduce_mean %[[X:[^ ]*]] {axes = array<i64: 0, 2>, keepdims = true} : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// CHECK-NEXT: %[[C:.*]] = tcc.sub %[[X]], %[[MEAN]]
// CHECK-NEXT: %[[SQ:.*]] = tcc.mul %[[C]], %[[C]]
// CHECK-NEXT: tcc.reduce_mean %[[SQ]] {axes = array<i64: 0, 2>, keepdims = true}
// CHECK: tcc.constant dense<0.899999976> : tensor<f32>
// CHECK: tcc.constant dense<1.000000e-01> : tensor<f32>
// CHECK-NOT: tcc.batch_norm
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>
func.func @forward(%x: tensor<2x3x4xf32>, %s: tensor<3xf32>, %b: tensor<3xf32>,
                   %m: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) {
  %y, %nm, %nv = tcc.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64, training} : tensor<2x3x4xf32>, tensor<3xf32>
  return %y, %nm, %nv : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>
}
