// A model whose step calls a function: the runtime has no kernel for
// func.call, so `tcc compile -o OUT.tcc` must refuse it (the integer ids
// need no gradient, so the training step itself builds).
tcc.param @w = dense<0.5> : tensor<3x2xf32>
func.func @shift(%a: tensor<4xi64>) -> tensor<4xi64> {
  return %a : tensor<4xi64>
}
func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}, %ids: tensor<4xi64> {tcc.name = "ids"}) -> (tensor<4x2xf32> {tcc.name = "y"}) {
  %w = tcc.get_param @w : tensor<3x2xf32>
  %y = tcc.matmul %x, %w : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32>
  %c = func.call @shift(%ids) : (tensor<4xi64>) -> tensor<4xi64>
  %f = tcc.cast %c : (tensor<4xi64>) -> tensor<4xf32>
  %r = tcc.reshape %f : (tensor<4xf32>) -> tensor<4x1xf32>
  %z = tcc.mul %y, %r : (tensor<4x2xf32>, tensor<4x1xf32>) -> tensor<4x2xf32>
  return %z : tensor<4x2xf32>
}
