// Verifier and type-inference errors of the backward, loss and optimizer
// ops (TccGradOps.cpp), one case per message.
// RUN: tcc-opt %s -split-input-file -verify-diagnostics

func.func @softmax_grad_axis(%y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tcc.softmax_grad' op axis 2 is out of range for rank 2}}
  %0 = tcc.softmax_grad %y, %y {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @log_softmax_grad_axis(%y: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{'tcc.log_softmax_grad' op axis -1 is out of range for rank 2}}
  %0 = tcc.log_softmax_grad %y, %y {axis = -1 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @layer_norm_grad_axis(%x: tensor<2x3xf32>) {
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0:3 = tcc.layer_norm_grad %x grad %x {axis = 2 : i64, epsilon = 0.0 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @layer_norm_grad_result_grad(%x: tensor<2x3xf32>, %g: tensor<3x2xf32>) {
  // expected-error @+1 {{result_grad must have the input's type}}
  %0:3 = tcc.layer_norm_grad %x grad %g {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<2x3xf32>, tensor<3x2xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @layer_norm_grad_scale(%x: tensor<2x3xf32>, %s: tensor<2x3xf32>) {
  // expected-error @+1 {{scale must be 'tensor<3xf32>'}}
  %0:3 = tcc.layer_norm_grad %x scale %s grad %x {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

func.func @layer_norm_grad_residual(%x: tensor<2x3xf32>, %r: tensor<3xf32>) {
  // expected-error @+1 {{residual_grad must have the input's type}}
  %0:3 = tcc.layer_norm_grad %x grad %x residual %r {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// input_grad_sum is f32 for 16-bit input, as the parameters' gradients.
func.func @layer_norm_grad_sum_type(%x: tensor<2x3xbf16>) {
  // expected-error @+1 {{results must be ('tensor<2x3xbf16>', 'tensor<3xf32>', 'tensor<3xf32>', 'tensor<3xf32>')}}
  %0:4 = tcc.layer_norm_grad %x grad %x {axis = 1 : i64, epsilon = 0.0 : f64} : (tensor<2x3xbf16>, tensor<2x3xbf16>) -> (tensor<2x3xbf16>, tensor<3xf32>, tensor<3xf32>, tensor<3xbf16>)
  return
}

// -----

func.func @attention_grad_rank(%q: tensor<2x3x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{query, key and value must be [batch, heads, seq, dim]}}
  %0:3 = tcc.attention_grad %q, %q, %q, %q {scale = 1.0 : f64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>)
  return
}

// -----

func.func @attention_grad_result_grad(%q: tensor<1x2x3x4xf32>, %kv: tensor<1x2x5x4xf32>, %g: tensor<1x2x5x4xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{result_grad must be 'tensor<1x2x3x4xf32>'}}
  %0:3 = tcc.attention_grad %q, %kv, %kv, %g {scale = 1.0 : f64} : (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>) -> (tensor<1x2x3x4xf32>, tensor<1x2x5x4xf32>, tensor<1x2x5x4xf32>)
  return
}

// -----

func.func @attention_grad_rows_result_grad(%x: tensor<1x4x48xf32>, %g: tensor<1x4x48xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{result_grad must be 'tensor<1x4x16xf32>'}}
  %0:3 = tcc.attention_grad %x, %x, %x, %g {scale = 1.0 : f64, heads = 2 : i64, head_dim = 8 : i64, key_column = 16 : i64, value_column = 32 : i64} : (tensor<1x4x48xf32>, tensor<1x4x48xf32>, tensor<1x4x48xf32>, tensor<1x4x48xf32>) -> (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>)
  return
}

// -----

func.func @attention_qkv_grad_columns(%x: tensor<1x4x48xf32>, %g: tensor<1x4x16xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{query, key and value columns 0, 8, 32 do not tile the 48 columns of qkv in three ranges of 16}}
  %0 = tcc.attention_qkv_grad %x, %g {scale = 1.0 : f64, heads = 2 : i64, head_dim = 8 : i64, key_column = 8 : i64, value_column = 32 : i64} : (tensor<1x4x48xf32>, tensor<1x4x16xf32>) -> tensor<1x4x48xf32>
  return
}

// -----

func.func @attention_qkv_grad_heads_first(%x: tensor<1x2x4x8xf32>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{attention_qkv_grad reads token rows (heads > 0)}}
  %0 = tcc.attention_qkv_grad %x, %x {scale = 1.0 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return
}

// -----

func.func @gather_grad_axis(%i: tensor<4xi64>, %g: tensor<4x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'tcc.gather_grad' op axis 2 is out of range for rank 2}}
  %0 = tcc.gather_grad %i, %g {axis = 2 : i64} : (tensor<4xi64>, tensor<4x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @gather_grad_shape(%i: tensor<4xi64>, %g: tensor<3x3xf32>) -> tensor<5x3xf32> {
  // expected-error @+1 {{'tcc.gather_grad' op result_grad 'tensor<3x3xf32>' does not match a gather from 'tensor<5x3xf32>'}}
  %0 = tcc.gather_grad %i, %g {axis = 0 : i64} : (tensor<4xi64>, tensor<3x3xf32>) -> tensor<5x3xf32>
  return %0 : tensor<5x3xf32>
}

// -----

func.func @slice_grad_entries(%g: tensor<2xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'tcc.slice_grad' op starts, limits and strides need one entry per dim (2)}}
  %0 = tcc.slice_grad %g {starts = array<i64: 0>, limits = array<i64: 2>, strides = array<i64: 1>} : (tensor<2xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_grad_zero_stride(%g: tensor<2x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'tcc.slice_grad' op stride of dim 1 is 0}}
  %0 = tcc.slice_grad %g {starts = array<i64: 0, 0>, limits = array<i64: 2, 3>, strides = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @slice_grad_shape(%g: tensor<3x3xf32>) -> tensor<4x3xf32> {
  // expected-error @+1 {{'tcc.slice_grad' op result_grad 'tensor<3x3xf32>' is not the slice of 'tensor<4x3xf32>'}}
  %0 = tcc.slice_grad %g {starts = array<i64: 0, 0>, limits = array<i64: 4, 3>, strides = array<i64: 2, 1>} : (tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @cross_entropy_labels(%l: tensor<4x5xf32>, %t: tensor<5xi64>) {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{labels 'tensor<5xi64>' must have the leading dims of logits 'tensor<4x5xf32>'}}
  %0:2 = tcc.cross_entropy %l, %t : (tensor<4x5xf32>, tensor<5xi64>) -> (tensor<f32>, tensor<f32>)
  return
}

// -----

func.func @cross_entropy_grad_labels(%l: tensor<4x5xf32>, %t: tensor<4x1xi64>, %g: tensor<f32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tcc.cross_entropy_grad' op labels 'tensor<4x1xi64>' must have the leading dims of logits 'tensor<4x5xf32>'}}
  %0 = tcc.cross_entropy_grad %l, %t, %g : (tensor<4x5xf32>, tensor<4x1xi64>, tensor<f32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @cross_entropy_grad_seed(%l: tensor<4x5xf32>, %t: tensor<4xi64>, %g: tensor<1xf32>) -> tensor<4x5xf32> {
  // expected-error @+1 {{'tcc.cross_entropy_grad' op loss_sum_grad must be a scalar of the loss's element type (the logits', f32 for 16-bit logits)}}
  %0 = tcc.cross_entropy_grad %l, %t, %g : (tensor<4x5xf32>, tensor<4xi64>, tensor<1xf32>) -> tensor<4x5xf32>
  return %0 : tensor<4x5xf32>
}

// -----

func.func @cross_entropy_grad_result(%l: tensor<4x5xf32>, %t: tensor<4xi64>, %g: tensor<f32>) -> tensor<4x6xf32> {
  // expected-error @+1 {{'tcc.cross_entropy_grad' op result must have the logits' type}}
  %0 = tcc.cross_entropy_grad %l, %t, %g : (tensor<4x5xf32>, tensor<4xi64>, tensor<f32>) -> tensor<4x6xf32>
  return %0 : tensor<4x6xf32>
}

// -----

func.func @sgd_types(%p: tensor<4x2xf32>, %g: tensor<2x4xf32>, %lr: tensor<f64>) -> tensor<4x2xf32> {
  // expected-error @+1 {{'tcc.sgd_update' op grad must have the param's type, or be a block of whole rows of it (dim 0) starting at a row's first element (element_offset 0)}}
  %0 = tcc.sgd_update %p, %g, %lr : (tensor<4x2xf32>, tensor<2x4xf32>, tensor<f64>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

func.func @sgd_lr(%p: tensor<4xf32>, %lr: tensor<1xf64>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.sgd_update' op lr must be a scalar}}
  %0 = tcc.sgd_update %p, %p, %lr : (tensor<4xf32>, tensor<4xf32>, tensor<1xf64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_missing_buffer(%p: tensor<4xf32>, %lr: tensor<f64>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.sgd_update' op a momentum buffer operand and result are needed exactly when momentum != 0}}
  %0 = tcc.sgd_update %p, %p, %lr {momentum = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @sgd_buffer_type(%p: tensor<4xf32>, %lr: tensor<f64>, %b: tensor<4xf64>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.sgd_update' op momentum buffer type differs from the param's}}
  %0:2 = tcc.sgd_update %p, %p, %lr, %b {momentum = 0.9 : f64} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @adamw_types(%p: tensor<4xf32>, %m: tensor<2x2xf32>, %lr: tensor<f64>, %t: tensor<i64>) {
  // expected-error @+1 {{'tcc.adamw_update' op param, moments and results must share one type}}
  %0:3 = tcc.adamw_update %p, %p, %m, %p, %lr, %t : (tensor<4xf32>, tensor<4xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @adamw_block_outside(%p: tensor<4xf32>, %g: tensor<2xf32>, %lr: tensor<f64>, %t: tensor<i64>) {
  // A block update's gradient covers elements [3, 5) of a 4-element param.
  // expected-error @+1 {{'tcc.adamw_update' op the block [3, 5) of grad's elements is not inside the param's 4 elements}}
  %0:3 = tcc.adamw_update %p, %g, %p, %p, %lr, %t {element_offset = 3 : i64} : (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_block_dtype(%p: tensor<4xf32>, %g: tensor<2xf64>, %lr: tensor<f64>) {
  // expected-error @+1 {{'tcc.sgd_update' op grad's element type differs from the param's}}
  %0 = tcc.sgd_update %p, %g, %lr {element_offset = 2 : i64} : (tensor<4xf32>, tensor<2xf64>, tensor<f64>) -> tensor<4xf32>
  return
}

// -----

func.func @adamw_step(%p: tensor<4xf32>, %lr: tensor<f64>, %t: tensor<1xi64>) {
  // expected-error @+1 {{'tcc.adamw_update' op lr and step must be scalars}}
  %0:3 = tcc.adamw_update %p, %p, %p, %p, %lr, %t : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<1xi64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @working_without_result(%p: tensor<4xf32>, %lr: tensor<f64>, %w: tensor<4xbf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'tcc.sgd_update' op a working copy operand and result are needed together}}
  %0 = "tcc.sgd_update"(%p, %p, %lr, %w) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 1>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xbf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @working_shape(%p: tensor<4xf32>, %lr: tensor<f64>, %t: tensor<i64>, %w: tensor<2x2xbf16>) {
  // expected-error @+1 {{'tcc.adamw_update' op the working copy must be a bf16/f16 tensor of the f32 parameter's shape, as its result}}
  %0:4 = tcc.adamw_update %p, %p, %p, %p, %lr, %t working %w : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<i64>, tensor<2x2xbf16>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x2xbf16>)
  return
}

// -----

func.func @working_f32(%p: tensor<4xf32>, %lr: tensor<f64>) {
  // expected-error @+1 {{'tcc.sgd_update' op the working copy must be a bf16/f16 tensor of the f32 parameter's shape, as its result}}
  %0:2 = tcc.sgd_update %p, %p, %lr working %p : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

func.func @sgd_result_count(%p: tensor<4xf32>, %lr: tensor<f64>, %w: tensor<4xbf16>) {
  // expected-error @+1 {{expected 2 result types}}
  %0 = tcc.sgd_update %p, %p, %lr working %w : (tensor<4xf32>, tensor<4xf32>, tensor<f64>, tensor<4xbf16>) -> tensor<4xf32>
  return
}
