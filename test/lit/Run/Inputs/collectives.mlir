// A forward model with collectives: at one rank every result is its operand.
tcc.param @w = dense<[[0.5, -1.0, 2.0], [1.5, 0.25, -0.5]]> : tensor<2x3xf32>
func.func @forward(%x: tensor<4x2xf32> {tcc.name = "x"}) -> (tensor<4x3xf32> {tcc.name = "y"}, tensor<3xf32> {tcc.name = "s"}) {
  %w = tcc.get_param @w : tensor<2x3xf32>
  %y = tcc.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  %e = tcc.exp %y : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %s = tcc.reduce_sum %e {axes = array<i64: 0>} : (tensor<4x3xf32>) -> tensor<3xf32>
  %r:2 = exec.all_reduce %e, %s {bucket = 0 : i64} : (tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
  %m = exec.all_reduce %r#1 {reduction = #exec<reduction mean>, stream = 0 : i64} : (tensor<3xf32>) -> tensor<3xf32>
  return %r#0, %m : tensor<4x3xf32>, tensor<3xf32>
}
