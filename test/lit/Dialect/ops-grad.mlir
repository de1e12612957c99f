// The backward, loss and optimizer ops print in a form that parses back to
// the same IR.
// RUN: tcc-opt %s | tcc-opt | FileCheck %s

// CHECK-LABEL: func.func @grad_ops
func.func @grad_ops(%x: tensor<2x3xf32>, %g: tensor<2x3xf32>, %s: tensor<3xf32>,
                    %ids: tensor<4xi64>, %e: tensor<4x3xf32>) {
  // CHECK: tcc.softmax_grad %{{.*}}, %{{.*}} {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %0 = tcc.softmax_grad %x, %g {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: tcc.log_softmax_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %1 = tcc.log_softmax_grad %x, %g {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: tcc.gelu_grad %{{.*}}, %{{.*}} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %2 = tcc.gelu_grad %x, %g : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: tcc.gelu_grad %{{.*}}, %{{.*}} {approximate = #tcc<gelu_approx tanh>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %3 = tcc.gelu_grad %x, %g {approximate = #tcc<gelu_approx tanh>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  // CHECK: tcc.layer_norm_grad %{{.*}} scale %{{.*}} grad %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  %4:3 = tcc.layer_norm_grad %x scale %s grad %g {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  // CHECK: tcc.layer_norm_grad %{{.*}} grad %{{.*}} {axis = 0 : i64, epsilon = 0.000000e+00 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  %5:3 = tcc.layer_norm_grad %x grad %g {axis = 0 : i64, epsilon = 0.0 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>)
  // With a residual gradient and the input gradient's sum (tcc-fuse-layer-norm-grad).
  // CHECK: tcc.layer_norm_grad %{{.*}} scale %{{.*}} grad %{{.*}} residual %{{.*}} {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  %r:4 = tcc.layer_norm_grad %x scale %s grad %g residual %x {axis = 1 : i64, epsilon = 1.0e-05 : f64} : (tensor<2x3xf32>, tensor<3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  // CHECK: tcc.gather_grad %{{.*}}, %{{.*}} {axis = 0 : i64} : (tensor<4xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
  %6 = tcc.gather_grad %ids, %e {axis = 0 : i64} : (tensor<4xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
  // CHECK: tcc.slice_grad %{{.*}} {limits = array<i64: -1, 3>, starts = array<i64: 3, 0>, strides = array<i64: -2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  %7 = tcc.slice_grad %g {starts = array<i64: 3, 0>, limits = array<i64: -1, 3>, strides = array<i64: -2, 1>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return
}

// CHECK-LABEL: func.func @attention_grad
func.func @attention_grad(%q: tensor<1x2x3x4xf32>, %k: tensor<1x2x5x4xf32>, %v: tensor<1x2x5x8xf32>,
                          %g: tensor<1x2x3x8xf32>, %m: tensor<1x5xi1>, %bias: tensor<1x5xf32>) {
  // CHECK: tcc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>, tensor<1x2x3x8xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>)
  %0:3 = tcc.attention_grad %q, %k, %v, %g {scale = 0.5 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>, tensor<1x2x3x8xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>)
  // CHECK: tcc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {causal = true, scale = 5.000000e-01 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>, tensor<1x2x3x8xf32>, tensor<1x5xi1>)
  %1:3 = tcc.attention_grad %q, %k, %v, %g, %m {scale = 0.5 : f64, causal = true} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>, tensor<1x2x3x8xf32>, tensor<1x5xi1>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>)
  // CHECK: tcc.attention_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 5.000000e-01 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>, tensor<1x2x3x8xf32>, tensor<1x5xf32>)
  %2:3 = tcc.attention_grad %q, %k, %v, %g, %bias {scale = 0.5 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>, tensor<1x2x3x8xf32>, tensor<1x5xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x8xf32>)
  return
}

// The gradient of one [1, 3, 24] q/k/v tensor (columns 0, 8, 16, two heads
// of 4), each gradient at its operand's columns: the tensor's own type.
// CHECK-LABEL: func.func @attention_qkv_grad
// CHECK: tcc.attention_qkv_grad %{{.*}}, %{{.*}} {causal = true, head_dim = 4 : i64, heads = 2 : i64, key_column = 8 : i64, scale = 5.000000e-01 : f64, value_column = 16 : i64} : (tensor<1x3x24xf32>, tensor<1x3x8xf32>) -> tensor<1x3x24xf32>
func.func @attention_qkv_grad(%x: tensor<1x3x24xf32>, %g: tensor<1x3x8xf32>) -> tensor<1x3x24xf32> {
  %0 = tcc.attention_qkv_grad %x, %g {scale = 0.5 : f64, causal = true, heads = 2 : i64, head_dim = 4 : i64, key_column = 8 : i64, value_column = 16 : i64} : (tensor<1x3x24xf32>, tensor<1x3x8xf32>) -> tensor<1x3x24xf32>
  return %0 : tensor<1x3x24xf32>
}

// Token rows: q, k, v from one [1, 3, 24] tensor at columns 0, 8, 16 (two
// heads of 4); the result gradient and the gradients are [1, 3, 8].
// CHECK-LABEL: func.func @attention_rows
func.func @attention_rows(%x: tensor<1x3x24xf32>, %g: tensor<1x3x8xf32>) -> tensor<1x3x8xf32> {
  // CHECK: tcc.attention %{{.*}}, %{{.*}}, %{{.*}} {causal = true, head_dim = 4 : i64, heads = 2 : i64, key_column = 8 : i64, scale = 5.000000e-01 : f64, value_column = 16 : i64} : (tensor<1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x24xf32>) -> tensor<1x3x8xf32>
  %0 = tcc.attention %x, %x, %x {scale = 0.5 : f64, causal = true, heads = 2 : i64, head_dim = 4 : i64, key_column = 8 : i64, value_column = 16 : i64} : (tensor<1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x24xf32>) -> tensor<1x3x8xf32>
  // CHECK: tcc.attention_grad {{.*}} -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>)
  %1:3 = tcc.attention_grad %x, %x, %x, %g {scale = 0.5 : f64, causal = true, heads = 2 : i64, head_dim = 4 : i64, key_column = 8 : i64, value_column = 16 : i64} : (tensor<1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x24xf32>, tensor<1x3x8xf32>) -> (tensor<1x3x8xf32>, tensor<1x3x8xf32>, tensor<1x3x8xf32>)
  return %0 : tensor<1x3x8xf32>
}

// CHECK-LABEL: func.func @loss_and_optimizers
func.func @loss_and_optimizers(%logits: tensor<2x3x5xf32>, %labels: tensor<2x3xi64>,
                               %p: tensor<4xf32>, %g: tensor<4xf32>, %buf: tensor<4xf32>,
                               %lr: tensor<f64>, %step: tensor<i64>) {
  // CHECK: tcc.cross_entropy %{{.*}}, %{{.*}} : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> (tensor<f32>, tensor<f32>)
  %0:2 = tcc.cross_entropy %logits, %labels : (tensor<2x3x5xf32>, tensor<2x3xi64>) -> (tensor<f32>, tensor<f32>)
  // CHECK: tcc.cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} {ignore_index = 0 : i64} : (tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<f32>) -> tensor<2x3x5xf32>
  %1 = tcc.cross_entropy_grad %logits, %labels, %0#0 {ignore_index = 0 : i64} : (tensor<2x3x5xf32>, tensor<2x3xi64>, tensor<f32>) -> tensor<2x3x5xf32>
  // CHECK: tcc.sgd_update %{{.*}}, %{{.*}}, %{{.*}} {weight_decay = 5.000000e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  %2 = tcc.sgd_update %p, %g, %lr {weight_decay = 0.5 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  // CHECK: tcc.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {momentum = 9.000000e-01 : f64, nesterov = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  %3:2 = tcc.sgd_update %p, %g, %lr, %buf {momentum = 0.9 : f64, nesterov = true} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  // CHECK: tcc.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {beta2 = 0.94999999999999996 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %4:3 = tcc.adamw_update %p, %g, %buf, %buf, %lr, %step {beta2 = 0.95 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// Mixed precision: the updates also rewrite the parameter's bf16/f16
// working copy; with loss scaling's skip flag before it.
// CHECK-LABEL: func.func @working_copies
func.func @working_copies(%p: tensor<4xf32>, %g: tensor<4xf32>, %buf: tensor<4xf32>,
                          %w: tensor<4xbf16>, %h: tensor<4xf16>, %lr: tensor<f64>,
                          %step: tensor<i64>, %skip: tensor<i1>) {
  // CHECK: tcc.sgd_update %{{.*}}, %{{.*}}, %{{.*}} working %{{.*}} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xbf16>)
  %0:2 = tcc.sgd_update %p, %g, %lr working %w : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xbf16>)
  // CHECK: tcc.sgd_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} skip %{{.*}} working %{{.*}} {momentum = 9.000000e-01 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>, tensor<i1>, tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>)
  %1:3 = tcc.sgd_update %p, %g, %lr, %buf skip %skip working %h {momentum = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>, tensor<i1>, tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>)
  // CHECK: tcc.adamw_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} skip %{{.*}} working %{{.*}} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>, tensor<i1>, tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>)
  %2:4 = tcc.adamw_update %p, %g, %buf, %buf, %lr, %step skip %skip working %w : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>, tensor<i1>, tensor<4xbf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>)
  return
}
