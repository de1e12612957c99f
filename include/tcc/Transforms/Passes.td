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

def Autodiff : Pass<"tcc-autodiff", "mlir::ModuleOp"> {
  let summary = "Reverse-mode autodiff of functions marked tcc.differentiate";
  let description = [{
    For every `func.func` carrying the unit attribute `tcc.differentiate`
    whose first result is a float scalar, adds `<name>_grad`: the same
    arguments, the original results, then the gradient of the first result
    with respect to every float argument, in argument order. Integer and
    boolean arguments (token ids, masks) get no gradient.

    The backward pass is built by walking the ops backwards and calling
    each op's `DifferentiableOpInterface::buildVjp`; a value used several
    times (a residual, a tied embedding) gets the sum of its gradients.
    An op on the path to the loss without a gradient rule is an error.
    The training-step builder uses the same machinery
    (`tcc::buildGradients`).

    Before:
    ```mlir
    func.func @f(%x: tensor<3xf32>) -> tensor<f32> attributes {tcc.differentiate} {
      %0 = tcc.mul %x, %x : ...
      %1 = tcc.reduce_sum %0 {axes = array<i64: 0>} : ...
      return %1 : tensor<f32>
    }
    ```
    After (besides @f):
    ```mlir
    func.func @f_grad(%x: tensor<3xf32>) -> (tensor<f32>, tensor<3xf32>) {
      ... forward ...
      %g = tcc.broadcast %seed ...   // d sum
      %a = tcc.mul %g, %x ...        // d mul, lhs
      %b = tcc.mul %g, %x ...        // d mul, rhs
      %dx = tcc.add %a, %b ...       // two uses of %x
      return %1, %dx : tensor<f32>, tensor<3xf32>
    }
    ```
  }];
  let dependentDialects = ["::tcc::TccDialect"];
}

def BuildTrainStep : Pass<"tcc-build-train-step", "mlir::ModuleOp"> {
  let summary = "Build @train_step and @eval_step from @forward, a loss and an optimizer";
  let description = [{
    Turns a forward model (`tcc.param`s and `@forward`) into a complete
    training step: the loss, its gradients (`tcc::buildGradients`), optional
    gradient clipping, the learning-rate schedule and the optimizer update,
    all as tcc IR. Parameters and optimizer state become explicit arguments
    and results, so later passes can shard or re-type them. `@forward` is
    kept. `tcc compile` runs the same builder; docs/training.md has the
    full contract.

    `@forward`'s body is cloned once per micro-batch with every
    `tcc.get_param` replaced by the parameter's argument. The loss is
    `cross_entropy(LOGITS,LABELS)` (new i64 input, `tcc.cross_entropy`,
    mean over non-ignored labels = sum of loss sums / sum of counts over all
    micro-batches), `mse(OUTPUT,TARGET)` (new input shaped like the output)
    or the name of a scalar output. A float `tcc.param` is trained unless it
    is `frozen`, matches `freeze`, or the loss does not depend on it.

    Signatures (attributes bind values by name, not position):
    ```mlir
    func.func @train_step(%p: tensor<..> {tcc.param = "w"}, ...,
        %m: tensor<..> {tcc.opt_state = "w.exp_avg"}, ...,
        %step: tensor<i64> {tcc.step}, %x: tensor<..> {tcc.name = "x"}, ...)
        -> (tensor<f32> {tcc.name = "loss"}, tensor<..> {tcc.param = "w"}, ...,
            tensor<..> {tcc.opt_state = "w.exp_avg"}, ...)
    func.func @eval_step(%p: ... {tcc.param = "w"}, ..., %x: ... {tcc.name = "x"}, ...)
        -> (tensor<f32> {tcc.name = "loss"})
    ```

    Before (`loss=mse(y,target) optimizer=sgd:lr=0.1`):
    ```mlir
    tcc.param @w = dense<...> : tensor<3x2xf32>
    func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}) -> (tensor<4x2xf32> {tcc.name = "y"}) {
      %w = tcc.get_param @w : tensor<3x2xf32>
      %y = tcc.matmul %x, %w : ...
      return %y : tensor<4x2xf32>
    }
    ```
    After (besides @forward and @eval_step):
    ```mlir
    func.func @train_step(%w: tensor<3x2xf32> {tcc.param = "w"}, %step: tensor<i64> {tcc.step},
        %x: tensor<4x3xf32> {tcc.name = "x"}, %t: tensor<4x2xf32> {tcc.name = "target"})
        -> (tensor<f32> {tcc.name = "loss"}, tensor<3x2xf32> {tcc.param = "w"}) {
      %y = tcc.matmul %x, %w : ...
      %d = tcc.sub %y, %t : ...                 // mse
      ... %loss = tcc.reduce_mean ...
      ... backward ... %gw = tcc.matmul %x, %dy {transpose_lhs = true} ...
      %lr = tcc.constant dense<1.000000e-01> : tensor<f64>
      %w1 = tcc.sgd_update %w, %gw, %lr : ...
      return %loss, %w1 : tensor<f32>, tensor<3x2xf32>
    }
    ```
    With `accum=N` every batch argument gets a leading N dim; the step
    slices out each micro-batch (`tcc.slice` + `tcc.reshape`), sums the
    micro-batch losses into the mean loss of the whole batch and
    differentiates that once, so one update sees the gradient of the N
    times larger batch. `grad-clip` scales the gradients as
    `torch.nn.utils.clip_grad_norm_`; `lr-schedule` computes the learning
    rate from `%step` in f64 ops (`tcc.cmp`, `tcc.where`, `tcc.cos`).
  }];
  let options = [
    Option<"loss", "loss", "std::string", /*default=*/"\"\"",
           "cross_entropy(LOGITS,LABELS[,ignore_index=N]), mse(OUTPUT,TARGET) or a scalar output's name">,
    Option<"optimizer", "optimizer", "std::string", /*default=*/"\"adamw\"",
           "sgd:lr=..,momentum=..,weight_decay=..,nesterov=0|1 or adamw:lr=..,beta1=..,beta2=..,eps=..,weight_decay=..">,
    Option<"gradClip", "grad-clip", "double", /*default=*/"0.0",
           "clip the global gradient L2 norm to this value (0: no clipping)">,
    Option<"lrSchedule", "lr-schedule", "std::string", /*default=*/"\"constant\"",
           "constant, cosine:warmup=W,total=N,min=M or linear:warmup=W,total=N">,
    Option<"accum", "accum", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step (gradient accumulation)">,
    Option<"freeze", "freeze", "std::string", /*default=*/"\"\"",
           "regex of parameters that are not trained">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"\"",
           "regex of parameters trained without weight decay">,
  ];
  let dependentDialects = ["::tcc::TccDialect", "::mlir::func::FuncDialect"];
}

#endif // TCC_TRANSFORMS_PASSES_TD
