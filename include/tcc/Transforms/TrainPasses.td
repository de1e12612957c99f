// The passes that make the training step: the import's attention raising, the
// forward model's stages, the step's builder and the passes on the step
// before lowering (Passes.td includes this file).
#ifndef TCC_TRANSFORMS_TRAINPASSES_TD
#define TCC_TRANSFORMS_TRAINPASSES_TD

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
      becomes a float key mask; or one with the query dim whose value is
      the same for every query (transformers' sdpa mask, `where(and(mask[B,
      1, 1, T], ones[1, 1, T, 1]), 0, min)`: its elementwise ops are rebuilt
      on the first query row); a causal mask and a bias may be combined,
      also in one bias: transformers' `where(and(pad, causal), 0, min)`
      with `causal` a constant causal keep-mask becomes `causal` and the
      key bias `where(pad, 0, min)`.
      sdpa's NaN guard around such a bias is dropped when the bias is finite
      (finite constants, a where between them, integers cast to float), as
      no row of scores is then all -inf.

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
    kept. `tcc compile` runs the same pass (in `tcc-train-pipeline`);
    docs/training.md has the full contract.

    The step computes in the types `@forward` has: for mixed precision run
    `tcc-lower-precision` on `@forward` first (`tcc-train-pipeline` with
    `precision=bf16|fp16` does both). The 16-bit casts of parameters it
    finds become persistent working copies (`tcc.working` arguments that
    the optimizer update rewrites); an `mse` target is f32 when the output
    is 16-bit, as the loss is computed in f32.

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
    Option<"gradNorm", "grad-norm", "bool", /*default=*/"false",
           "return the global gradient L2 norm (metric grad_norm) also without grad-clip or dynamic loss scaling">,
    Option<"lrSchedule", "lr-schedule", "std::string", /*default=*/"\"constant\"",
           "constant, cosine:warmup=W,total=N,min=M or linear:warmup=W,total=N">,
    Option<"accum", "accum", "int64_t", /*default=*/"1",
           "micro-batches per optimizer step (gradient accumulation)">,
    Option<"freeze", "freeze", "std::string", /*default=*/"\"\"",
           "regex of parameters that are not trained">,
    Option<"noDecay", "no-decay", "std::string", /*default=*/"\"\"",
           "regex of parameters trained without weight decay">,
    Option<"lossScale", "loss-scale", "std::string", /*default=*/"\"\"",
           "none (the default), dynamic or a static scale">,
    Option<"lossScaleInit", "loss-scale-init", "double", /*default=*/"65536.0",
           "the dynamic loss scale's initial value">,
    Option<"lossScaleGrowthInterval", "loss-scale-growth-interval", "int64_t",
           /*default=*/"2000", "clean steps before the dynamic scale doubles">,
    Option<"dataParallel", "data-parallel", "bool", /*default=*/"false",
           "all-reduce (mean) the gradients, loss and label count over the data-parallel ranks">,
    Option<"bucketSize", "bucket-size", "double", /*default=*/"25.0",
           "MiB of gradients per all-reduce bucket (with data-parallel)">,
  ];
  let dependentDialects = ["::tcc::TccDialect", "::mlir::func::FuncDialect",
                           "::tcc::exec::ExecDialect"];
}

def LowerPrecision : Pass<"tcc-lower-precision", "mlir::func::FuncOp"> {
  let summary = "Cast a function to bf16/f16 compute, keeping fp32 where the policy says";
  let description = [{
    Mixed precision as a rewrite of the graph. Every float operand of an op
    whose policy class is `low` is cast to the low type (bf16 or f16) and
    its float results become low; ops of class `fp32` take and return f32.
    The policy is one table (lib/Transforms/PrecisionPolicy.cpp, printed by
    `tcc compile --report`): GEMMs, attention, layer norm, softmax and
    elementwise ops are low (each computes in fp32 registers and rounds its
    result once; layer-norm and softmax statistics stay fp32 inside their
    kernels); `reduce_sum` and `reduce_mean` (losses, statistics) are fp32;
    `cross_entropy` reads low logits and returns an fp32 loss. The `policy`
    option overrides classes per op kind (`layer_norm=fp32,softmax=fp32`).

    Parameters (`tcc.get_param`) stay fp32 — the master weights — and are
    cast at each use, so a parameter used twice gets two casts whose
    gradients (casts back to fp32) are summed in fp32. Float constants are
    rounded to the low type in place. Function results take the types of
    the values they return.

    `tcc-train-pipeline` (and so `tcc compile --precision`) runs this on
    the forward model before `tcc-build-train-step` differentiates it, so
    the backward pass inherits the types and each cast its gradient rule:
    gradients of parameters, their sum over micro-batches, clipping and the
    optimizer are fp32. Run it on @forward only: on a built @train_step it
    would also cast the gradients.

    Before:
    ```mlir
    %w = tcc.get_param @fc.weight : tensor<4x8xf32>
    %y = tcc.matmul %x, %w : (tensor<2x4xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
    %s = tcc.reduce_sum %y {axes = array<i64: 0, 1>} : ...
    ```
    After (`precision=bf16`):
    ```mlir
    %w = tcc.get_param @fc.weight : tensor<4x8xf32>
    %x16 = tcc.cast %x : (tensor<2x4xf32>) -> tensor<2x4xbf16>
    %w16 = tcc.cast %w : (tensor<4x8xf32>) -> tensor<4x8xbf16>
    %y = tcc.matmul %x16, %w16 : (...) -> tensor<2x8xbf16>
    %y32 = tcc.cast %y : (tensor<2x8xbf16>) -> tensor<2x8xf32>
    %s = tcc.reduce_sum %y32 {axes = array<i64: 0, 1>} : ...
    ```
  }];
  let options = [
    Option<"precision", "precision", "std::string", /*default=*/"\"bf16\"",
           "fp32 (no change), bf16 or fp16">,
    Option<"policyText", "policy", "std::string", /*default=*/"\"\"",
           "per op kind overrides: OP=low|fp32[,OP=...]">,
  ];
  let dependentDialects = ["::tcc::TccDialect"];
}

def MergeProjections : Pass<"tcc-merge-projections", "mlir::func::FuncOp"> {
  let summary = "One GEMM for an attention's separate q, k and v projections";
  let description = [{
    Runs on the forward model after `tcc-lower-precision`, before
    `tcc-build-train-step`. A model written with separate `nn.Linear`
    layers for q, k and v (BERT, most encoders) computes three GEMMs of one
    input where a fused projection (GPT-2's `c_attn`) computes one, and its
    backward pass three input-gradient GEMMs, three weight-gradient GEMMs
    and three bias-gradient sums where the fused one has one of each.

    For each heads-first `tcc.attention`, the projections its query, key
    and value are read from, `transpose(reshape(add(b, matmul(x, W))),
    [0, 2, 1, 3])` with `x` `[B, T, K]`, `W` `[N, K]` (`transpose_rhs`) and
    `b` `[N]` (or no bias add; the matmul read by the add alone), are
    grouped by input `x`, weight element type and whether they add a bias.
    A group of two or more (q, k and v of self-attention; k and v of
    cross-attention) becomes one matmul of `x` and the weights concatenated
    along their rows (`tcc.concat`, axis 0), plus the biases concatenated,
    and a `tcc.split` of its result along the last dim into the
    projections' results, at the first projection's matmul (a weight or
    bias that is a parameter's cast, its working copy, moves up to it).
    Autodiff then gives the fused projection's backward: the split's
    gradient is the concat of the three result gradients, which one GEMM
    per gradient reads, and the concats' gradients split the weight and
    bias gradients back into the parameters' own. `tcc-fold-attention-layout`
    reads q, k and v as columns of the merged result.

    Numerics: every output element is the same dot product as before; the
    input gradient sums three products in one GEMM instead of adding three
    GEMMs, so it changes by rounding.

    Before:
    ```mlir
    %pq = tcc.matmul %x, %wq {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
    %q = tcc.add %bq, %pq : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    ... likewise %k, %v, each reshaped and transposed into the attention
    ```
    After:
    ```mlir
    %w = tcc.concat %wq, %wk, %wv {axis = 0 : i64} : (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<96x32xf32>
    %p = tcc.matmul %x, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<96x32xf32>) -> tensor<2x8x96xf32>
    %b = tcc.concat %bq, %bk, %bv {axis = 0 : i64} : (tensor<32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<96xf32>
    %y = tcc.add %b, %p : (tensor<96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x96xf32>
    %qkv:3 = tcc.split %y {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (...)
    ```
    `report` emits a remark per function: `tcc-merge-projections: @f: N
    projections merged`.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit each function's number of merged projections as a remark">,
  ];
  let statistics = [
    Statistic<"merged", "merged", "projections merged into a shared GEMM">,
  ];
}

def PackDocuments : Pass<"tcc-pack-documents", "mlir::ModuleOp"> {
  let summary = "Packed documents: block-diagonal attention and per-document positions from position_ids";
  let description = [{
    `tcc compile --pack-documents` (the first stage of the forward
    pipeline). Rows of a batch hold several documents, as modern language
    model training packs them (Hugging Face's DataCollatorWithFlattening,
    `tcc run --pack-documents EOT_ID`); `@forward` gets the batch input
    `position_ids` `[B, T]` (i64; an existing argument of that name is
    used), numbering each token within its document. `tcc.segment_index`
    turns it into the documents' offsets (`cu_seqlens`, a new document
    where the position is 0 and at every row start), every self-attention
    (no key mask, queries as long as keys) takes them as its key mask and
    attends within its document only, and a position embedding read with
    the constant positions `0 .. T-1` reads `position_ids` instead. So a
    row of documents trains as each document would on its own.

    Refused with an error naming the op: no attention, an attention that
    already has a key mask, or attention ops of different [B, T]. A
    constant `0 .. T-1` that reaches anything but an embedding's indices is
    warned about (those positions are not restarted per document).
  }];
  let dependentDialects = ["::tcc::TccDialect"];
}

def FuseLayerNormGrad : Pass<"tcc-fuse-layer-norm-grad", "mlir::func::FuncOp"> {
  let summary = "Fold the residual gradient's add and the Linear bias gradient's sum into tcc.layer_norm_grad";
  let description = [{
    Runs right after `tcc-build-train-step` (the last of the training
    stages, so `--emit=mlir`, `tcc eval` and `tcc train --reference` see
    its result, and `tcc-rematerialize` orders the folded step). In a
    pre-LN transformer's backward the residual stream's gradient is summed
    after every layer norm's gradient, `dx = ln_grad(...) + g`, and the
    Linear that read the stream's value (the output projection before it)
    takes `sum(dx)` over the tokens as its bias gradient. Both become part
    of the layer norm's gradient call, whose kernel already passes over
    every row (dx) and sums over the rows (the scale and bias gradients):

    - `add(ln_grad#0, g)` with `ln_grad`'s input gradient read by the add
      alone, `g` of the same type, and `ln_grad` depending on `g` (it
      always does in a residual stream: the layer norm's result gradient is
      computed from the stream's gradient) becomes `ln_grad` with
      `residual_grad = g`. The dependence makes the fold a fact of the
      dataflow, not of the op order, so every copy of the pattern
      (rematerialised, one per micro-batch) folds alike; a sum of two
      independent gradients is left alone, and so is an add after a
      gradient whose sum was already folded (that sum is of the gradient
      without `g`). The sum is rounded once.
    - `reduce_sum(ln_grad#0)` over all of its rows (every dim before
      `axis`, no keepdims; or over the leading dims of a reshape that keeps
      the normalised dims) becomes `ln_grad`'s `input_grad_sum`. For 16-bit
      input that result is f32 (as the parameters' gradients), so the fold
      takes a 16-bit sum read only by its cast to f32 (a master bias's
      gradient) together with the cast; a 16-bit sum read as such stays.

    So the two generated kernels a layer's backward spent on these (the
    residual sum storing what the bias gradient sums, and the bias
    gradient's column reduction) are no launches at all.

    Before:
    ```mlir
    %dx, %ds, %db, %unused = tcc.layer_norm_grad %x scale %s grad %dy {axis = 2 : i64, epsilon = 1.0E-5 : f64} : ...
    %g2 = tcc.add %g, %dx : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %bias_grad = tcc.reduce_sum %g2 {axes = array<i64: 0, 1>} : (tensor<2x8x32xf32>) -> tensor<32xf32>
    ```
    After:
    ```mlir
    %g2, %ds, %db, %bias_grad = tcc.layer_norm_grad %x scale %s grad %dy residual %g {axis = 2 : i64, epsilon = 1.0E-5 : f64} : ...
    ```
    `report` emits a remark per function: `tcc-fuse-layer-norm-grad: @f: R
    residual adds and S sums folded into layer_norm_grad`.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit each function's number of folded adds and sums as a remark">,
  ];
  let statistics = [
    Statistic<"residuals", "residuals", "residual gradient adds folded">,
    Statistic<"sums", "sums", "row sums of input gradients folded">,
  ];
  let dependentDialects = ["::tcc::TccDialect"];
}

def Rematerialize : Pass<"tcc-rematerialize", "mlir::ModuleOp"> {
  let summary = "Recompute forward values in the backward pass to fit a memory budget";
  let description = [{
    Runs on a training module (after `tcc-build-train-step`, before
    lowering). The forward part of `@train_step` is every op its loss (the
    first result) depends on; a forward value that a later op (the
    backward pass) reads is *saved*: it stays live from the forward to its
    backward use. For each saved value the pass decides whether to keep it
    or recompute it right before its first backward use, so that the step's
    planned arena fits `budget - fixed-bytes` at the least recompute cost.

    - Candidates: each saved value with the forward ops it needs that
      nothing else keeps (operands the backward does not read), so a
      clone has the shape of the original (a GEMM whose bias add is
      recomputed is recomputed with it and fuses the same way).
    - Cost model (docs/architecture.md): per op a roofline time in FLOP
      units, `max(flops, 8 x bytes moved)`; FLOPs from
      `tcc::opFlops` (a library call's `getFlops`: contractions count
      2*M*N*K; elementwise ops one per element, reductions one per input
      element, layout ops and views none; the compile report counts the
      same). Candidates are taken cheapest per saved
      byte first: elementwise chains, casts, layer norm, GELU, dropout
      before GEMMs and attention.
    - The budget is checked against the real plan: for a set of decisions
      the module is copied, rewritten and lowered with
      `tcc-lower-pipeline` (fusion and memory planning included), and the
      largest `exec.arena_bytes` over its functions is the arena.
    - First, at no cost, each optimizer update moves up to right after the
      last use of the parameter it overwrites and its gradient, so
      gradients die as the backward pass makes them (not with global-norm
      clipping or dynamic loss scaling, whose updates wait for every
      gradient), and each op moves down to right before the first op that
      reads it when no operand lives longer for it (never past an update
      that overwrites an argument it reads): an activation's gradient
      (`dy W^T`) is then not live beside the weight gradient (`x^T dy`).
    - Several micro-batches (`--accum N`): the step builder runs each
      micro-batch's forward and backward pass before the next one's, so
      the running gradient sums (the parameters' size) live across every
      later micro-batch. The search below also runs on a second order:
      every forward pass first, then the other ops (between ops with side
      effects) stably sorted by the forward depth they differentiate (the
      longest path from the forward value they read to the loss). The
      micro-batches are clones, so their ops for one layer meet and a
      weight's gradients are summed as they are made; no gradient set
      waits, but every micro-batch's activations do. The order that fits
      at less recompute cost wins (neither fitting: the one reaching
      less); the step attribute counts the ops the second order moved
      (`interleaved_ops`, 0 when the first won).
    - Then the candidates are taken in the ranking's order, each kept when
      the measured plan does not grow with it, until the plan fits; then
      the most expensive choices are dropped again while it still fits.
    - When the per-value choices cannot fit, Chen's sqrt(N) segments are
      the fallback: the forward's cuts (values that are alone live across
      their position, the residual stream between blocks) are the
      candidate checkpoints; every recomputable saved value but one in `s`
      cuts is recomputed, for s = 1, 2, ... until the plan fits.
    - When neither fits, large weight gradients are made in row blocks:
      a weight gradient that a 2-D GEMM (`tcc.matmul`, `tcc.gemm` without
      a bias) makes for its optimizer update alone (or through a cast to
      the parameter's type, under mixed precision), larger than the arena
      budget / d, becomes per block of whole rows a `tcc.slice` of the
      GEMM's row operand, the GEMM over it and the update of those
      elements (`element_offset`), each block's update before the next
      block's GEMM; the search above runs again on that step, for d = 1,
      2, 4, ... 64 until it fits. Each element is the same dot product
      (same operands, same order over the contracted dimension), so the
      CPU step stays bitwise the same; the step attribute counts the
      gradients and blocks (`blocked_gradients`, `gradient_blocks`, present
      only when some were).
      Not with global-norm clipping, loss scaling, data-parallel buckets
      or `--accum` sums (the update does not read the GEMM directly).
      When nothing fits, the pass fails with one error naming the
      smallest total it reached and what dominates it.
    - Recomputed ops are clones of the forward ops with the same operands
      (dropout with the same seed and offset draws the same mask), marked
      `tcc.remat`, which also keeps CSE from merging them back: the step's
      results are bitwise those of the unbudgeted step.
    - `@train_step` gets `tcc.remat`, a dictionary for reports: the budget,
      the arena before and after, the updates moved early, the ops moved
      late and interleaved, the segments' `s` (0 without the fallback), the
      weight gradients made in blocks and their blocks, the step's and the
      recompute's FLOPs and the recomputed values.

    With `budget = 0` (the default) the pass does nothing.

    Before (budget below the arena that keeps `%g`):
    ```mlir
    %g = tcc.gelu %h ...            // forward, read by the backward
    %y = tcc.matmul %g, %w ...
    ...
    %dw = tcc.matmul %g, %dy {transpose_lhs = true} ...
    ```
    After:
    ```mlir
    %g = tcc.gelu %h ...
    %y = tcc.matmul %g, %w ...
    ...
    %g2 = tcc.gelu %h {tcc.remat} ...
    %dw = tcc.matmul %g2, %dy {transpose_lhs = true} ...
    ```
  }];
  let options = [
    Option<"budget", "budget", "int64_t", /*default=*/"0",
           "bytes the session may take (0: no budget, nothing changes)">,
    Option<"fixedBytes", "fixed-bytes", "int64_t", /*default=*/"0",
           "bytes of the session outside the arena (parameters, working "
           "copies, optimizer state, inputs, constants); the arena gets "
           "budget minus these">,
    Option<"order", "order", "std::string", /*default=*/"\"best\"",
           "tcc-plan-memory's placement order in the plans it measures">,
  ];
  let dependentDialects = ["::tcc::exec::ExecDialect"];
}

#endif // TCC_TRANSFORMS_TRAINPASSES_TD
