// Column reductions of 256 rows or more (the CUDA block path: a block per
// 32 outputs, its warps splitting the rows) and one of fewer rows (one
// thread per output): bias-gradient shapes of GPT-2 (8192 tokens x 768 and
// x 3072 through a bf16 rounding), a mean over two leading dims, a partial
// last tile (1000 columns). test/gpu/check_models.py compares the CUDA
// backend's outputs with the CPU backend's.
func.func @forward(%x: tensor<8192x768xf32> {tcc.name = "x"},
                   %h: tensor<8192x3072xf32> {tcc.name = "h"},
                   %y: tensor<16x64x1000xf32> {tcc.name = "y"},
                   %s: tensor<200x96xf32> {tcc.name = "s"})
    -> (tensor<768xf32> {tcc.name = "bias768"}, tensor<3072xf32> {tcc.name = "bias3072"},
        tensor<1000xf32> {tcc.name = "mean"}, tensor<96xf32> {tcc.name = "short"}) {
  %0 = tcc.reduce_sum %x {axes = array<i64: 0>} : (tensor<8192x768xf32>) -> tensor<768xf32>
  %b = tcc.cast %h : (tensor<8192x3072xf32>) -> tensor<8192x3072xbf16>
  %c = tcc.cast %b : (tensor<8192x3072xbf16>) -> tensor<8192x3072xf32>
  %1 = tcc.reduce_sum %c {axes = array<i64: 0>} : (tensor<8192x3072xf32>) -> tensor<3072xf32>
  %2 = tcc.reduce_mean %y {axes = array<i64: 0, 1>} : (tensor<16x64x1000xf32>) -> tensor<1000xf32>
  %3 = tcc.reduce_sum %s {axes = array<i64: 0>} : (tensor<200x96xf32>) -> tensor<96xf32>
  return %0, %1, %2, %3 : tensor<768xf32>, tensor<3072xf32>, tensor<1000xf32>, tensor<96xf32>
}
