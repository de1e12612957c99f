#ifndef TCC_TRANSFORMS_PASSES_TD
#define TCC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RaiseAttention : Pass<"tcc-raise-attention", "mlir::func::FuncOp"> {
  let summary = "Raise the attention sub-graph exported by PyTorch to tcc.attention";
  let description = [{
    PyTorch exports scaled dot-product attention as separate ops:
    `matmul(q, k^T) -> mul/div by a scale -> mask -> softmax(-1) ->
    matmul(p, v)` over [batch, heads, seq, head_dim] tensors. This pass
    recognises that chain and replaces it with one `tcc.attention` carrying
    `scale`, `causal` and an optional `[batch, kv_seq]` key mask, so later
    passes can lower it to one fused kernel.

    Recognised spellings:
    - k^T as `transpose_rhs`, or as a `tcc.transpose` of any key layout
      (e.g. perm [0,2,3,1] of a [B,T,H,D] tensor); a transpose producing
      [B,H,T,D] is inserted for the key (and value) where needed;
    - the scale as a splat `mul` or `div` (scale 1 without one), also q and
      k each pre-scaled by a splat, as torch's SDPA decomposition does;
    - a causal mask as `where(keep, scores, fill)`, `where(hide, fill,
      scores)` (`hide` also as `not(keep)` or `cmp eq(buffer, 0)`, sliced,
      cast or reshaped) or `add(scores, c)`; the mask must be a constant,
      checked element by element to hide exactly the keys after each query,
      and fill / masked values must be -inf or <= -9000;
    - a key-padding bias as `add(scores, b)` with b broadcastable to the
      scores with 1s in the head and query dims (HF's extended mask), which
      becomes a float key mask; a causal mask and a bias may be combined.

    Before:
    ```mlir
    %s = tcc.matmul %q, %k {transpose_rhs = true} : ...
    %t = tcc.mul %s, %cst_scale : ...
    %m = tcc.where %causal, %t, %cst_neg_inf : ...
    %p = tcc.softmax %m {axis = 3 : i64} : ...
    %o = tcc.matmul %p, %v : ...
    ```
    After:
    ```mlir
    %o = tcc.attention %q, %k, %v {causal = true, scale = 1.250000e-01 : f64} : ...
    ```
    Chains that differ in any detail (a mask that is not exactly causal or
    not per key, a non-splat scale, a softmax over another axis, masking
    before scaling, intermediate values with other users, operands that
    need broadcasting) are left alone.
  }];
  let dependentDialects = ["::tcc::TccDialect"];
}

#endif // TCC_TRANSFORMS_PASSES_TD
