// RUN: tcc-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{initial value must be a statically shaped tensor}}
tcc.param @p = dense<1.0> : vector<2xf32>

// -----

func.func @missing_param() -> tensor<2xf32> {
  // expected-error @+1 {{'nope' does not name a tcc.param}}
  %0 = tcc.get_param @nope : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

tcc.param @p = dense<1.0> : tensor<2xf32>
func.func @param_type() -> tensor<3xf32> {
  // expected-error @+1 {{result type 'tensor<3xf32>' differs from the parameter's 'tensor<2xf32>'}}
  %0 = tcc.get_param @p : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @no_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand shapes [2x3] and [4] do not broadcast}}
  %0 = tcc.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @mixed_types(%a: tensor<2xf32>, %b: tensor<2xf64>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand element types 'f32' and 'f64' differ}}
  %0 = tcc.mul %a, %b : (tensor<2xf32>, tensor<2xf64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @wrong_result(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inferred type(s) 'tensor<2x3xf32>' are incompatible with return type(s) of operation 'tensor<3xf32>'}}
  %0 = tcc.sub %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @where_types(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{branch element types 'f32' and 'i64' differ}}
  %0 = tcc.where %c, %a, %b : (tensor<2xi1>, tensor<2xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @cast_shape(%a: tensor<2xf32>) -> tensor<3xi64> {
  // expected-error @+1 {{result shape [3] differs from the input's [2]}}
  %0 = tcc.cast %a : (tensor<2xf32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// -----

func.func @broadcast_shape(%a: tensor<3xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{input shape [3] does not broadcast to [2x4]}}
  %0 = tcc.broadcast %a : (tensor<3xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @broadcast_type(%a: tensor<3xf32>) -> tensor<2x3xf64> {
  // expected-error @+1 {{result element type differs from the input's}}
  %0 = tcc.broadcast %a : (tensor<3xf32>) -> tensor<2x3xf64>
  return %0 : tensor<2x3xf64>
}

// -----

func.func @reshape_count(%a: tensor<2x3xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot reshape 6 elements into [4]}}
  %0 = tcc.reshape %a : (tensor<2x3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @reshape_type(%a: tensor<2x3xf32>) -> tensor<6xi64> {
  // expected-error @+1 {{result element type differs from the input's}}
  %0 = tcc.reshape %a : (tensor<2x3xf32>) -> tensor<6xi64>
  return %0 : tensor<6xi64>
}

// -----

func.func @perm_size(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{perm has 3 entries for rank 2}}
  %0 = tcc.transpose %a {perm = array<i64: 1, 0, 2>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @perm_dup(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{perm is not a permutation of [0, 2)}}
  %0 = tcc.transpose %a {perm = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

func.func @slice_rank(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{starts, limits and strides need one entry per dim (1)}}
  %0 = tcc.slice %a {starts = array<i64: 0, 0>, limits = array<i64: 2>, strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @slice_bounds(%a: tensor<4xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{slice bounds (0, 5, 1) are invalid for dim 0 of size 4}}
  %0 = tcc.slice %a {starts = array<i64: 0>, limits = array<i64: 5>, strides = array<i64: 1>} : (tensor<4xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @concat_none() -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{needs at least one input}}
  %0 = tcc.concat {axis = 0 : i64} : () -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @concat_axis(%a: tensor<2xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 1 is out of range for rank 1}}
  %0 = tcc.concat %a, %a {axis = 1 : i64} : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_rank(%a: tensor<2xf32>, %b: tensor<2x1xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inputs differ in rank or element type}}
  %0 = tcc.concat %a, %b {axis = 0 : i64} : (tensor<2xf32>, tensor<2x1xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @concat_dims(%a: tensor<2x3xf32>, %b: tensor<2x4xf32>) -> tensor<4x3xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{inputs differ in dim 1 off the concat axis}}
  %0 = tcc.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x4xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

func.func @split_axis(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 1}}
  %0 = tcc.split %a {axis = 2 : i64, sizes = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @split_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{split sizes must be non-negative}}
  %0:2 = tcc.split %a {axis = 0 : i64, sizes = array<i64: 5, -1>} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @split_sum(%a: tensor<4xf32>) -> tensor<1xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{split sizes add up to 3, not the dim size 4}}
  %0:2 = tcc.split %a {axis = 0 : i64, sizes = array<i64: 1, 2>} : (tensor<4xf32>) -> (tensor<1xf32>, tensor<2xf32>)
  return %0#0 : tensor<1xf32>
}

// -----

func.func @gather_axis(%a: tensor<4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis -1 is out of range for rank 1}}
  %0 = tcc.gather %a, %i {axis = -1 : i64} : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @embedding_rank(%t: tensor<4xf32>, %i: tensor<2xi64>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{table must be [vocab, dim], got rank 1}}
  %0 = tcc.embedding %t, %i : (tensor<4xf32>, tensor<2xi64>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @reduce_axes(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axes must be distinct dims in [0, 2)}}
  %0 = tcc.reduce_sum %a {axes = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @softmax_axis(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{axis 2 is out of range for rank 2}}
  %0 = tcc.softmax %a {axis = 2 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @log_softmax_int(%a: tensor<2x3xi64>) -> tensor<2x3xi64> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tcc.log_softmax %a {axis = 1 : i64} : (tensor<2x3xi64>) -> tensor<2x3xi64>
  return %0 : tensor<2x3xi64>
}

// -----

func.func @layer_norm_scale(%a: tensor<2x3xf32>, %s: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{scale and bias must be [3] of 'f32', got 'tensor<2xf32>'}}
  %0 = tcc.layer_norm %a scale %s {axis = 1 : i64, epsilon = 1.0e-5 : f64} : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @layer_norm_eps(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{epsilon must be non-negative}}
  %0 = tcc.layer_norm %a {axis = 1 : i64, epsilon = -1.0 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

func.func @dropout_ratio(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{ratio must be in [0, 1), got 1}}
  %0:2 = tcc.dropout %a {ratio = 1.0 : f64, seed = 0 : i64} : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @dropout_offset(%a: tensor<4xf32>, %k: tensor<2xi64>) -> tensor<4xf32> {
  // expected-error @+1 {{offset must be an i64 scalar}}
  %0:2 = tcc.dropout %a offset %k {ratio = 0.5 : f64, seed = 0 : i64} : (tensor<4xf32>, tensor<2xi64>) -> (tensor<4xf32>, tensor<4xi1>)
  return %0#0 : tensor<4xf32>
}

// -----

func.func @matmul_rank(%a: tensor<3xf32>, %b: tensor<3x2xf32>) -> tensor<2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operands must have rank >= 2}}
  %0 = tcc.matmul %a, %b : (tensor<3xf32>, tensor<3x2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @matmul_types(%a: tensor<2x3xf32>, %b: tensor<3x2xf64>) -> tensor<2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand element types differ}}
  %0 = tcc.matmul %a, %b : (tensor<2x3xf32>, tensor<3x2xf64>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @matmul_k(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{contraction dims differ: 3 vs 2}}
  %0 = tcc.matmul %a, %b {transpose_rhs = true} : (tensor<2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x2xf32>) -> tensor<2x2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{batch dims do not broadcast}}
  %0 = tcc.matmul %a, %b : (tensor<2x2x3xf32>, tensor<3x3x2xf32>) -> tensor<2x2x2xf32>
  return %0 : tensor<2x2x2xf32>
}

// -----

func.func @gemm_rank(%a: tensor<1x2x3xf32>, %b: tensor<3x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{a and b must be matrices}}
  %0 = tcc.gemm %a, %b : (tensor<1x2x3xf32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @gemm_types(%a: tensor<2x3xf32>, %b: tensor<3x2xf64>) -> tensor<2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{operand element types differ}}
  %0 = tcc.gemm %a, %b : (tensor<2x3xf32>, tensor<3x2xf64>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @gemm_k(%a: tensor<2x3xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{contraction dims differ: 3 vs 2}}
  %0 = tcc.gemm %a, %b : (tensor<2x3xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @gemm_c(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %c: tensor<3xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{c does not broadcast to [2x2]}}
  %0 = tcc.gemm %a, %b, %c : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<3xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// The bias is [N]: one value per column, added to every row.
func.func @gemm_bias(%a: tensor<2x3xf32>, %b: tensor<3x2xf32>, %bias: tensor<1x2xf32>) -> tensor<2x2xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{bias must be [2] of the operands' type}}
  %0 = tcc.gemm %a, %b bias %bias : (tensor<2x3xf32>, tensor<3x2xf32>, tensor<1x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

func.func @attention_rank(%q: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{query, key and value must be [batch, heads, seq, dim]}}
  %0 = tcc.attention %q, %q, %q {scale = 1.0 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %0 : tensor<2x4x8xf32>
}

// -----

func.func @attention_types(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf64>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{query, key and value element types differ}}
  %0 = tcc.attention %q, %k, %q {scale = 1.0 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf64>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @attention_heads(%q: tensor<1x2x4x8xf32>, %k: tensor<1x3x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{batch, heads or key length disagree between query [1x2x4x8], key [1x3x4x8] and value [1x2x4x8]}}
  %0 = tcc.attention %q, %k, %q {scale = 1.0 : f64} : (tensor<1x2x4x8xf32>, tensor<1x3x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @attention_dim(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{query and key head dims differ}}
  %0 = tcc.attention %q, %k, %k {scale = 1.0 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %0 : tensor<1x2x4x4xf32>
}

// -----

func.func @attention_mask(%q: tensor<1x2x4x8xf32>, %m: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{key_mask must be [1x4] of i1 or 'f32'}}
  %0 = tcc.attention %q, %q, %q, %m {scale = 1.0 : f64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32>
  return %0 : tensor<1x2x4x8xf32>
}

// -----

func.func @attention_rows_rank(%q: tensor<1x2x4x8xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{query, key and value must be token rows [batch, seq, width] (heads = 2)}}
  %0 = tcc.attention %q, %q, %q {scale = 1.0 : f64, heads = 2 : i64, head_dim = 8 : i64} : (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @attention_rows_head_dim(%x: tensor<1x4x48xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{head_dim must be positive in token rows}}
  %0 = tcc.attention %x, %x, %x {scale = 1.0 : f64, heads = 2 : i64} : (tensor<1x4x48xf32>, tensor<1x4x48xf32>, tensor<1x4x48xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @attention_rows_columns(%x: tensor<1x4x48xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{value columns [40, 56) of its heads are outside its rows [1x4x48]}}
  %0 = tcc.attention %x, %x, %x {scale = 1.0 : f64, heads = 2 : i64, head_dim = 8 : i64, key_column = 16 : i64, value_column = 40 : i64} : (tensor<1x4x48xf32>, tensor<1x4x48xf32>, tensor<1x4x48xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @attention_rows_keys(%q: tensor<1x4x16xf32>, %k: tensor<1x5x16xf32>, %v: tensor<1x6x16xf32>) -> tensor<1x4x16xf32> {
  // expected-error @+2 {{failed to infer returned types}}
  // expected-error @+1 {{batch or key length disagree between query [1x4x16], key [1x5x16] and value [1x6x16]}}
  %0 = tcc.attention %q, %k, %v {scale = 1.0 : f64, heads = 2 : i64, head_dim = 8 : i64} : (tensor<1x4x16xf32>, tensor<1x5x16xf32>, tensor<1x6x16xf32>) -> tensor<1x4x16xf32>
  return %0 : tensor<1x4x16xf32>
}

// -----

func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of floating-point values}}
  %0 = tcc.exp %a : (tensor<?xf32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}


// -----

func.func @batch_norm_rank(%a: tensor<3xf32>, %s: tensor<3xf32>) -> tensor<3xf32> {
  // expected-error @+1 {{input of rank 1 has no channel dim}}
  %0:3 = tcc.batch_norm %a, %s, %s, %s, %s {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64} : tensor<3xf32>, tensor<3xf32>
  return %0#0 : tensor<3xf32>
}

// -----

func.func @batch_norm_channels(%a: tensor<2x3xf32>, %s: tensor<2xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{scale, bias, mean and var must be [3] of 'f32', got 'tensor<2xf32>'}}
  %0:3 = tcc.batch_norm %a, %s, %s, %s, %s {epsilon = 1.0e-5 : f64, momentum = 0.9 : f64, training} : tensor<2x3xf32>, tensor<2xf32>
  return %0#0 : tensor<2x3xf32>
}
