// RUN: tcc-opt --tcc-autodiff %s -split-input-file -verify-diagnostics | FileCheck %s

// A value used twice gets the sum of both contributions: d(x*x) = g*x + g*x.
// CHECK-LABEL: func.func @mul_two_uses_grad
// CHECK-SAME: (%[[X:.*]]: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>)
// CHECK: %[[SEED:.*]] = tcc.constant dense<1.000000e+00> : tensor<f32>
// CHECK: %[[R:.*]] = tcc.reshape %[[SEED]] : (tensor<f32>) -> tensor<1xf32>
// CHECK: %[[G:.*]] = tcc.broadcast %[[R]] : (tensor<1xf32>) -> tensor<3xf32>
// CHECK: %[[A:.*]] = tcc.mul %[[G]], %[[X]]
// CHECK: %[[B:.*]] = tcc.mul %[[G]], %[[X]]
// CHECK: %[[DX:.*]] = tcc.add %[[A]], %[[B]]
// CHECK: return %{{.*}}, %[[DX]] : tensor<f32>, tensor<3xf32>
func.func @mul_two_uses(%x: tensor<3xf32>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.mul %x, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// The broadcast operand's gradient is summed over the dim it was broadcast on.
// CHECK-LABEL: func.func @broadcast_add_grad
// CHECK: %[[G:.*]] = tcc.broadcast %{{.*}} : (tensor<1x1xf32>) -> tensor<2x3xf32>
// CHECK: %[[DB:.*]] = tcc.reduce_sum %[[G]] {axes = array<i64: 0>} : (tensor<2x3xf32>) -> tensor<3xf32>
// CHECK: return %{{.*}}, %[[G]], %[[DB]] : tensor<f32>, tensor<2x3xf32>, tensor<3xf32>
func.func @broadcast_add(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// softmax's rule reads its result, not its input.
// CHECK-LABEL: func.func @softmax_grad
// CHECK-SAME: (%{{.*}}: tensor<2x3xf32>, %[[W:.*]]: tensor<2x3xf32>)
// CHECK: %[[Y:.*]] = tcc.softmax
// CHECK: tcc.constant dense<1.000000e+00>
// CHECK: %[[DY:.*]] = tcc.mul %{{.*}}, %[[W]]
// CHECK: %[[DX:.*]] = tcc.softmax_grad %[[Y]], %[[DY]] {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK: return %{{.*}}, %[[DX]], %{{.*}} :
func.func @softmax(%x: tensor<2x3xf32>, %w: tensor<2x3xf32>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.softmax %x {axis = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = tcc.mul %0, %w : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = tcc.reduce_sum %1 {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// One layer_norm_grad gives the input, scale and bias gradients.
// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[S:.*]]: tensor<4xf32>, %{{.*}}: tensor<4xf32>)
// CHECK: %[[DX:.*]], %[[DS:.*]], %[[DB:.*]] = tcc.layer_norm_grad %[[X]] scale %[[S]] grad %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: return %{{.*}}, %[[DX]], %[[DS]], %[[DB]] :
func.func @layer_norm(%x: tensor<2x4xf32>, %s: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.layer_norm %x scale %s bias %b {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %1 = tcc.mul %0, %0 : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  %2 = tcc.reduce_sum %1 {axes = array<i64: 0, 1>} : (tensor<2x4xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// attention_grad takes the forward operands (the mask too) and the result
// gradient; the bool mask argument gets no gradient.
// CHECK-LABEL: func.func @attention_grad
// CHECK-SAME: (%[[Q:.*]]: tensor<1x2x3x4xf32>, %[[K:.*]]: tensor<1x2x5x4xf32>, %[[V:.*]]: tensor<1x2x5x4xf32>, %[[M:.*]]: tensor<1x5xi1>) -> (tensor<f32>, tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
// CHECK: %[[DQ:.*]], %[[DK:.*]], %[[DV:.*]] = tcc.attention_grad %[[Q]], %[[K]], %[[V]], %{{.*}}, %[[M]] {causal = true, scale = 5.000000e-01 : f64}
// CHECK: return %{{.*}}, %[[DQ]], %[[DK]], %[[DV]] :
func.func @attention(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x4xf32>, %m: tensor<1x5xi1>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.attention %q, %k, %v, %m {scale = 0.5 : f64, causal = true} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x5xi1>) -> tensor<1x2x3x4xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x2x3x4xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Token ids are an integer argument: no gradient for them, and the table's
// is a scatter-add (gather_grad) of the mean's 1/6.
// CHECK-LABEL: func.func @ids_grad
// CHECK-SAME: (%[[T:.*]]: tensor<5x3xf32>, %[[IDS:.*]]: tensor<2xi64>) -> (tensor<f32>, tensor<5x3xf32>)
// CHECK: tcc.constant dense<0.166666672> : tensor<f32>
// CHECK: %[[G:.*]] = tcc.broadcast %{{.*}} : (tensor<1x1xf32>) -> tensor<2x3xf32>
// CHECK: %[[DT:.*]] = tcc.gather_grad %[[IDS]], %[[G]] {axis = 0 : i64} : (tensor<2xi64>, tensor<2x3xf32>) -> tensor<5x3xf32>
// CHECK: return %{{.*}}, %[[DT]] : tensor<f32>, tensor<5x3xf32>
func.func @ids(%table: tensor<5x3xf32>, %ids: tensor<2xi64>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.embedding %table, %ids : (tensor<5x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
  %1 = tcc.reduce_mean %0 {axes = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// Backward ops are not differentiated again: one on the loss path is an
// error on that op (here in the @no_rule_grad clone, at the same location).
func.func @no_rule(%x: tensor<3xf32>, %y: tensor<3xf32>) -> tensor<f32> attributes {tcc.differentiate} {
  // expected-error @+1 {{'tcc.softmax_grad' op has no gradient rule, but the loss depends on it through a differentiated value}}
  %0 = tcc.softmax_grad %y, %x {axis = 0 : i64} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

func.func @no_rule_scatter(%g: tensor<2x3xf32>, %ids: tensor<2xi64>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.exp %g : (tensor<2x3xf32>) -> tensor<2x3xf32>
  // expected-error @+1 {{'tcc.gather_grad' op has no gradient rule, but the loss depends on it through a differentiated value}}
  %1 = tcc.gather_grad %ids, %0 {axis = 0 : i64} : (tensor<2xi64>, tensor<2x3xf32>) -> tensor<5x3xf32>
  %2 = tcc.reduce_sum %1 {axes = array<i64: 0, 1>} : (tensor<5x3xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}

// -----

// Attention in token rows is a lowered form (tcc-fold-attention-layout):
// its gradients would be narrower than the rows it reads. One error on it.
func.func @token_rows(%x: tensor<1x4x48xf32>) -> tensor<f32> attributes {tcc.differentiate} {
  // expected-error @+1 {{'tcc.attention' op is in token rows (heads = 2), a lowered form autodiff does not take; differentiate the heads-first form}}
  %0 = tcc.attention %x, %x, %x {scale = 1.0 : f64, heads = 2 : i64, head_dim = 8 : i64, key_column = 16 : i64, value_column = 32 : i64} : (tensor<1x4x48xf32>, tensor<1x4x48xf32>, tensor<1x4x48xf32>) -> tensor<1x4x16xf32>
  %1 = tcc.reduce_sum %0 {axes = array<i64: 0, 1, 2>} : (tensor<1x4x16xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}

// -----

// The loss must be a float scalar.
// expected-error @+1 {{'func.func' op tcc-autodiff needs a scalar float first result}}
func.func @vector_loss(%x: tensor<3xf32>) -> tensor<3xf32> attributes {tcc.differentiate} {
  %0 = tcc.exp %x : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// conv's gradient is one conv_grad with its window; a pool's one
// max_pool_grad (avg_pool_grad) on the pool's input.
// CHECK-LABEL: func.func @conv_pool
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x5x5xf32>, %[[W:.*]]: tensor<3x2x3x3xf32>, %{{.*}}: tensor<3xf32>)
// CHECK: %[[C:.*]] = tcc.conv %[[X]], %[[W]]
// CHECK: %[[DP:.*]] = tcc.max_pool_grad %[[C]], %{{.*}} {kernel_h = 2 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<1x3x5x5xf32>, tensor<1x3x2x2xf32>) -> tensor<1x3x5x5xf32>
// CHECK: %[[DX:.*]], %[[DW:.*]], %[[DB:.*]] = tcc.conv_grad %[[X]], %[[W]], %[[DP]] {pad_bottom = 1 : i64, pad_left = 1 : i64, pad_right = 1 : i64, pad_top = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<1x3x5x5xf32>) -> (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>)
// CHECK: return %{{.*}}, %[[DX]], %[[DW]], %[[DB]] :
func.func @conv_pool(%x: tensor<1x2x5x5xf32>, %w: tensor<3x2x3x3xf32>, %b: tensor<3xf32>) -> tensor<f32> attributes {tcc.differentiate} {
  %0 = tcc.conv %x, %w, %b {pad_top = 1 : i64, pad_left = 1 : i64, pad_bottom = 1 : i64, pad_right = 1 : i64} : (tensor<1x2x5x5xf32>, tensor<3x2x3x3xf32>, tensor<3xf32>) -> tensor<1x3x5x5xf32>
  %1 = tcc.max_pool %0 {kernel_h = 2 : i64, kernel_w = 2 : i64, stride_h = 2 : i64, stride_w = 2 : i64} : (tensor<1x3x5x5xf32>) -> tensor<1x3x2x2xf32>
  %2 = tcc.reduce_sum %1 {axes = array<i64: 0, 1, 2, 3>} : (tensor<1x3x2x2xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
