// Row reductions (a reduction over the innermost dims, RowReduction.cpp):
// eval_step's per-token max over GPT-2's 50,304 logits (1024 tokens; a
// block of 1024 a row), a mean over 768 features (a warp a row), a full
// reduction of 8192 values (one block of 256) and rows of 16 (one thread
// per output).
// test/gpu/check_models.py compares the CUDA backend's outputs with the
// CPU backend's.
func.func @forward(%logits: tensor<1024x50304xf32> {tcc.name = "logits"},
                   %h: tensor<8192x768xf32> {tcc.name = "h"},
                   %v: tensor<8192xf32> {tcc.name = "v"},
                   %s: tensor<8192x16xf32> {tcc.name = "s"})
    -> (tensor<1024xf32> {tcc.name = "best"}, tensor<8192xf32> {tcc.name = "mean"},
        tensor<f32> {tcc.name = "total"}, tensor<8192xf32> {tcc.name = "short"}) {
  %0 = tcc.reduce_max %logits {axes = array<i64: 1>} : (tensor<1024x50304xf32>) -> tensor<1024xf32>
  %1 = tcc.reduce_mean %h {axes = array<i64: 1>} : (tensor<8192x768xf32>) -> tensor<8192xf32>
  %2 = tcc.reduce_sum %v {axes = array<i64: 0>} : (tensor<8192xf32>) -> tensor<f32>
  %3 = tcc.reduce_sum %s {axes = array<i64: 1>} : (tensor<8192x16xf32>) -> tensor<8192xf32>
  return %0, %1, %2, %3 : tensor<1024xf32>, tensor<8192xf32>, tensor<f32>, tensor<8192xf32>
}
