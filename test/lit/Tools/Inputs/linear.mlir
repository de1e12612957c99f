// A linear classifier: logits = x w (no bias, so every gradient is a
// library call or an elementwise kernel).
tcc.param @w = dense<[[0.5, -0.25, 1.0], [0.0, 0.75, -1.5]]> : tensor<2x3xf32>
func.func @forward(%x: tensor<4x2xf32> {tcc.name = "x"}) -> (tensor<4x3xf32> {tcc.name = "logits"}) {
  %w = tcc.get_param @w : tensor<2x3xf32>
  %y = tcc.matmul %x, %w : (tensor<4x2xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
  return %y : tensor<4x3xf32>
}
