// bf16 and f16 storage in the interpreter: each op computes in float and
// rounds its result to the storage type once (round to nearest even).
tcc.param @w = dense<[1.0, 2.0, 0.3, -1.0]> : tensor<4xbf16>
func.func @forward(%x: tensor<4xf32> {tcc.name = "x"}, %h: tensor<4xf16> {tcc.name = "h"})
    -> (tensor<4xf32> {tcc.name = "y"}, tensor<4xf32> {tcc.name = "z"}, tensor<4xf32> {tcc.name = "w"}) {
  %b = tcc.cast %x : (tensor<4xf32>) -> tensor<4xbf16>
  %e = tcc.exp %b : (tensor<4xbf16>) -> tensor<4xbf16>
  %y = tcc.cast %e : (tensor<4xbf16>) -> tensor<4xf32>
  %hh = tcc.mul %h, %h : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>
  %z = tcc.cast %hh : (tensor<4xf16>) -> tensor<4xf32>
  %p = tcc.get_param @w : tensor<4xbf16>
  %q = tcc.mul %p, %b : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %w = tcc.cast %q : (tensor<4xbf16>) -> tensor<4xf32>
  return %y, %z, %w : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
