#ifndef TCC_TRANSFORMS_PASSES_TD
#define TCC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RaiseAttention : Pass<"tcc-raise-attention", "mlir::func::FuncOp"> {
  let summary = "Raise the attention sub-graph exported by PyTorch to tcc.attention";
  let description = [{
    PyTorch exports scaled dot-product attention as separate ops:
    `matmul(q, k^T) -> mul/div by a scale -> (add a key-padding bias |
    where(causal mask, scores, -inf)) -> softmax(-1) -> matmul(p, v)`.
    This pass recognises that chain (including the transposed-key and
    pre-scaled-query variants) and replaces it with one `tcc.attention`
    carrying `scale`, `causal` and an optional `[batch, kv_seq]` key mask,
    so later passes can lower it to one fused kernel.

    Before:
    ```mlir
    %s = tcc.matmul %q, %k {transpose_rhs = true} : ...
    %t = tcc.mul %s, %cst_scale : ...
    %m = tcc.where %causal, %t, %cst_neg_inf : ...
    %p = tcc.softmax %m {axis = 3} : ...
    %o = tcc.matmul %p, %v : ...
    ```
    After:
    ```mlir
    %o = tcc.attention %q, %k, %v {causal = true, scale = 0.125} : ...
    ```
    Chains that differ in any detail (a mask that is not causal or not
    per-key, a softmax over another axis, intermediate values with other
    users) are left alone.
  }];
  let dependentDialects = ["::tcc::TccDialect"];
}

#endif // TCC_TRANSFORMS_PASSES_TD
