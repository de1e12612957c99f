// The lowering pipeline's passes: from the training step (or @forward) to
// kernels, library calls and the memory plan (Passes.td includes this file).
#ifndef TCC_TRANSFORMS_LOWERPASSES_TD
#define TCC_TRANSFORMS_LOWERPASSES_TD

include "mlir/Pass/PassBase.td"

def ExpandBatchNorm : Pass<"tcc-expand-batch-norm", "mlir::func::FuncOp"> {
  let summary = "Expand each tcc.batch_norm in the mode its `training` attribute gives";
  let description = [{
    Replaces every `tcc.batch_norm` by tcc ops (reductions and elementwise
    ops, `expandBatchNorm` of `TccBatchNorm.h`) as the op says: with
    `training = true` the batch statistics and ONNX's updated running
    statistics, else the running statistics. The lowering pipeline
    (`tcc-lower-pipeline`) runs it after `tcc-drop-unreachable`, so an
    inference module's `@forward` (a `BatchNormalization` node of an
    eval-mode export) lowers; `tcc-build-train-step` has already expanded
    the batch norms of `@train_step` and `@eval_step` in PyTorch's modes,
    so on a training module it finds none.

    Before:
    ```mlir
    %y, %nm, %nv = tcc.batch_norm %x, %s, %b, %m, %v {epsilon = 1.0e-05 : f64, momentum = 0.9 : f64}
        : tensor<2x3x4xf32>, tensor<3xf32>
    ```
    After (without `training`: `(x - m) * (rsqrt(v + eps) * s) + b`, the
    per-channel values reshaped to `[C, 1]` to broadcast over dims 2...):
    ```mlir
    %0 = tcc.reshape %m : (tensor<3xf32>) -> tensor<3x1xf32>
    %1 = tcc.sub %x, %0 : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
    %2 = tcc.reshape %v : (tensor<3xf32>) -> tensor<3x1xf32>
    %3 = tcc.constant dense<9.99999974E-6> : tensor<f32>
    %4 = tcc.add %2, %3 : (tensor<3x1xf32>, tensor<f32>) -> tensor<3x1xf32>
    %5 = tcc.reshape %s : (tensor<3xf32>) -> tensor<3x1xf32>
    %6 = tcc.rsqrt %4 : (tensor<3x1xf32>) -> tensor<3x1xf32>
    %7 = tcc.mul %6, %5 : (tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x1xf32>
    %8 = tcc.mul %1, %7 : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
    %9 = tcc.reshape %b : (tensor<3xf32>) -> tensor<3x1xf32>
    %y = tcc.add %8, %9 : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
    ```
  }];
  let dependentDialects = ["::tcc::TccDialect"];
}

def DropUnreachable : Pass<"tcc-drop-unreachable", "mlir::ModuleOp"> {
  let summary = "Erase the functions that the root functions do not reach";
  let description = [{
    Keeps the functions named by `roots` and every function they reach
    through symbol references (calls), transitively, and erases every other
    `func.func`. Other symbols (`tcc.param`) stay. The lowering pipeline
    (`tcc-lower-pipeline`) runs it first, so that only what an artifact runs
    is lowered: in a training module `@forward`, whose body `@train_step` and
    `@eval_step` hold copies of, goes, and needs no kernels.

    `symbol-dce` does not do this: it erases only private symbols, and the
    step functions and `@forward` are public. A root the module lacks is
    skipped (a hand-built module may have no `@eval_step`); a module with
    none of the roots is an error, as everything would be erased.

    Before (`roots=train_step,eval_step`):
    ```mlir
    tcc.param @w = dense<...> : tensor<3x2xf32>
    func.func @forward(%x: tensor<4x3xf32>) -> tensor<4x2xf32> { ... }
    func.func @train_step(...) -> ... { ... }
    func.func @eval_step(...) -> ... { ... }
    ```
    After:
    ```mlir
    tcc.param @w = dense<...> : tensor<3x2xf32>
    func.func @train_step(...) -> ... { ... }
    func.func @eval_step(...) -> ... { ... }
    ```
  }];
  let options = [
    ListOption<"roots", "roots", "std::string",
               "the functions to keep, with what they reach (e.g. train_step,eval_step)">,
  ];
}

def PackTokens : Pass<"tcc-pack-tokens", "mlir::func::FuncOp"> {
  let summary = "Pad-skipping: run token-wise ops and attention over the valid tokens of a padded batch";
  let description = [{
    Runs first in the lowering pipeline (after `tcc-drop-unreachable`);
    `tcc compile --pad-skip=off` marks the module `tcc.pad_skip = "off"`,
    which the pass leaves alone (the default is `auto`). When the function's attention ops take
    one key-padding mask `[B, T]` (i1, or a float bias such as BERT's
    `(1 - mask) * -10000`), the valid tokens are packed: `tcc.pack_index`
    finds them at run time, `tcc.pack` moves a `[B, T, ...]` value's rows
    into packed order at the region's entries, and the region runs on the
    same buffers in that order: its library calls (GEMMs, layer norm,
    softmax, cross-entropy and their gradients) are marked `tcc.token_rows
    = B*T` so the runtime runs them over the valid rows only, and attention
    takes the packed sequences' offsets (`cu_seqlens`) as its key mask, so
    it never reads a padded position. Shapes do not change, so no padding
    pattern needs a recompile.

    The region is what packing cannot change: token-wise ops (elementwise
    ops on `[B, T, ...]` or `[B*T, ...]` values with per-row broadcasts,
    reshapes that keep the rows, matmuls against weights, layer norm,
    softmax over a row), attention through its `[B, T, H, D] <-> [B, H, T, D]`
    transposes, and the sums over tokens that only gradients reach (weight
    and bias gradients, layer norm's). A value leaves the region
    (`tcc.unpack`) only where its unpacked value is zero at every padded
    position: a gradient that flows from a loss that ignores padding (the
    loss's labels are packed with a run-time check that padded labels are
    `ignore_index`). A forward value that leaves it (a model output, a
    pooled sum) keeps the ops that make it out of the region, so an
    inference `@forward` returning per-token outputs is not packed.

    Numerics: the valid tokens see the same arithmetic in another row
    order; sums over tokens add in another order (rounding-level
    differences, not bitwise). `report` emits a remark per function:
    `tcc-pack-tokens: @f: packed N ops (G GEMMs, A attention) over key
    mask ...; P packs, U unpacks`, or why nothing was packed.

    Before:
    ```mlir
    %h = tcc.layer_norm %x scale %s bias %b {axis = 2 : i64, ...} : (tensor<2x8x32xf32>, ...) -> tensor<2x8x32xf32>
    %a = tcc.attention %q, %k, %v, %bias {scale = 0.25 : f64} : (..., tensor<2x8xf32>) -> tensor<2x2x8x16xf32>
    ```
    After:
    ```mlir
    %rows, %cu = tcc.pack_index %bias : (tensor<2x8xf32>) -> (tensor<16xi32>, tensor<3xi32>)
    %px = tcc.pack %x, %rows : (tensor<2x8x32xf32>, tensor<16xi32>) -> tensor<2x8x32xf32>
    %h = tcc.layer_norm %px scale %s bias %b {axis = 2 : i64, ..., tcc.token_rows = 16 : i64} : ...
    %a = tcc.attention %q, %k, %v, %cu {scale = 0.25 : f64} : (..., tensor<3xi32>) -> tensor<2x2x8x16xf32>
    ```
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per function: what was packed, or why not">,
  ];
  let statistics = [
    Statistic<"packedOps", "packed-ops", "ops run over packed tokens">,
  ];
}

def FoldAttentionLayout : Pass<"tcc-fold-attention-layout", "mlir::func::FuncOp"> {
  let summary = "Attention reads q, k, v and writes its result as token rows: no head transposes";
  let description = [{
    Runs in the lowering pipeline after `tcc-pack-tokens`. A model's
    attention reads its heads from a projection's output `[B, T, H * D]`
    through `reshape` to `[B, T, H, D]` and `transpose` to `[B, H, T, D]`
    (a fused q/k/v projection splits its `[B, T, 3 * H * D]` output
    first), and its result goes back the same way; the backward has the
    same transposes around `tcc.attention_grad`. Each transpose is a copy
    kernel. The attention kernels read every tensor through strides
    (`runtime/kernels/attention_layout.h`), so the layout folds into the
    op: `heads`, `head_dim` and a first column per operand make it read
    token rows (dialect reference, `tcc.attention`).

    A `tcc.attention` folds when query, key and value are each
    `transpose(y, [0, 2, 1, 3])` of a `[B, T, H, D]` value `y`, the head
    dims of values and keys agree, and every user of its result is such a
    transpose. Each operand becomes the rows `y` was reshaped from: the
    input of a split along the last dim (or of a unit-stride slice of it)
    with the column its part starts at, else `y` as `[B, T, H * D]` (a
    view). Each result transpose becomes a view of the `[B, T, H * D]`
    result. `tcc.attention_grad` folds likewise when its result gradient
    is also such a transpose and its three gradients are read only by
    transposes. Otherwise the op is left heads first. Transposes, reshapes,
    splits and slices left without users are erased.

    Then a fused q/k/v projection's backward: a `tcc.concat` along the
    features of a token-rows `tcc.attention_grad`'s three gradients (read
    by nothing else, in the order of their columns), whose query, key and
    value are one tensor whose rows the three column ranges tile, is that
    tensor's gradient: one `tcc.attention_qkv_grad` writes it, each
    gradient at its operand's columns, and the concat (a kernel) is gone.

    Numerics: unchanged, bit for bit (the kernels compute the same values;
    only their addresses change).

    Before:
    ```mlir
    %s:3 = tcc.split %qkv {axis = 2 : i64, sizes = array<i64: 32, 32, 32>} : (tensor<2x8x96xf32>) -> (...)
    %q4 = tcc.reshape %s#0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
    %q = tcc.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
    ... likewise %k, %v
    %a = tcc.attention %q, %k, %v {causal = true, scale = 0.25 : f64} : (...) -> tensor<2x2x8x16xf32>
    %o = tcc.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x8x16xf32>) -> tensor<2x8x2x16xf32>
    %y = tcc.reshape %o : (tensor<2x8x2x16xf32>) -> tensor<2x8x32xf32>
    ```
    After:
    ```mlir
    %y = tcc.attention %qkv, %qkv, %qkv {causal = true, head_dim = 16 : i64, heads = 2 : i64, key_column = 32 : i64, scale = 0.25 : f64, value_column = 64 : i64} : (tensor<2x8x96xf32>, tensor<2x8x96xf32>, tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
    ```
  }];
}

def FuseGemmEpilogue : Pass<"tcc-fuse-gemm-epilogue", "mlir::func::FuncOp"> {
  let summary = "Fold bias and residual adds into the GEMM producing their operand";
  let description = [{
    Runs before `tcc-fuse` in the lowering pipeline. Takes
    `add(matmul(x, W), b)`, where the product has no other use, `W` is a
    matrix (`[K, N]`, or `[N, K]` with `transpose_rhs`) and `x` is
    `[..., M, K]` (transposed only when it is a matrix). When `b` is added
    to every row (all dims but the last 1 or absent, the last `N` or 1),
    the add becomes one library call: `tcc.gemm` on the 2-D view of `x`
    (reshaped to `[rows, K]`; reshapes are views) with `bias = b` (viewed
    as `[N]`; a bias of one element broadcasts as `c` with `beta = 1`),
    reshaped back to the product's shape. A `tcc.gemm` without bias or C
    (the ONNX importer's form) takes the bias the same way.

    Then an add of a GEMM product read by nothing else (through the reshape
    back, so after its bias) and a value of the product's own type that the
    GEMM depends on (a residual: the attention and MLP output projections'
    `x + proj(f(x))`) becomes that GEMM's `c`, viewed as `[rows, N]`, with
    `beta = 1`, when the GEMM has no C yet. Likewise when that value is
    itself such a GEMM's sum (a `tcc.gemm` with a full C, made by an earlier
    fold): a chain of input-gradient contributions, the residual gradient
    plus the q, k and v projections' products of separate projections,
    becomes GEMMs each taking the running sum as C. Other sums are left
    alone (the sum of two plain weight-gradient products, say): which GEMM
    would take the other as C, or whether it would move down to the add,
    depends on the op order, which rematerialisation and the micro-batch
    interleaving change; the rounding must not (`Train/remat-hf.test`
    checks training with a budget bitwise against training without). In a
    chain only the product can take a C (the sum has one), and each add
    reads the one before it, so the folds follow from the dataflow.

    The GEMM adds its bias and C while writing its output (cuBLASLt's bias
    epilogue and its C operand; the CPU runtime's BLAS with `beta = 1`),
    so neither add is a kernel launch or an extra pass over the product:
    in a transformer layer, the four projections' bias adds and the two
    residual adds.

    The numerics change by rounding, not in kind: the sum is rounded once
    instead of after the product and again after each add (the interpreter
    adds bias and C to the dot product it accumulates in double). So unlike
    `tcc-fuse` this pass is not bit-exact; the training tests' tolerances
    hold.

    Last, a Linear's bias gradient joins its weight gradient:
    `reduce_sum(dY)` over every dim but the last, where a GEMM without bias
    also reads `dY` (viewed as `[K, M]`) as `op(a) = dY^T` (the weight
    gradient `dY^T @ X`, a `tcc.matmul` with `transpose_lhs` or a
    `tcc.gemm` with `transpose_a`), becomes that GEMM's `bias_grad` result
    (`with_bias_grad`): cuBLASLt's BGRAD epilogue sums `dY` while the GEMM
    reads it, so the sum is no kernel and no pass over `dY` of its own.
    Not when the sum is read through a cast (a bf16 gradient's bias
    gradient widened to f32): `bias_grad` has the operands' type, and the
    cast, fused with the sum's kernel now, would be a kernel alone.
    The GEMM stays where it was when nothing reads the sum before it (the
    weight gradient lives as long as before); else it moves up to the sum,
    when its operands are there (reshapes of values already there are made
    again there: views). The
    sum is the same (the interpreter adds the rows in order in double for
    both), so this fold is bit-exact in the interpreter. The rule is
    structural (the GEMM reads the summed value), so every copy of a
    pattern folds alike.

    Before:
    ```mlir
    %p = tcc.matmul %h, %w {transpose_rhs = true} : (tensor<2x8x32xf32>, tensor<32x32xf32>) -> tensor<2x8x32xf32>
    %y = tcc.add %b, %p : (tensor<32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    %r = tcc.add %x, %y : (tensor<2x8x32xf32>, tensor<2x8x32xf32>) -> tensor<2x8x32xf32>
    ```
    After:
    ```mlir
    %0 = tcc.reshape %h : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
    %1 = tcc.reshape %x : (tensor<2x8x32xf32>) -> tensor<16x32xf32>
    %2 = tcc.gemm %0, %w, %1 bias %b {transpose_b = true} : (tensor<16x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>, tensor<32xf32>) -> tensor<16x32xf32>
    %r = tcc.reshape %2 : (tensor<16x32xf32>) -> tensor<2x8x32xf32>
    ```
    `report` emits a remark per function: `tcc-fuse-gemm-epilogue: @f: N
    bias adds and R residual adds folded into GEMMs, G bias gradients into
    weight-gradient GEMMs`.
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit each function's number of folded adds as a remark">,
  ];
  let statistics = [
    Statistic<"biases", "biases", "bias adds folded into GEMMs">,
    Statistic<"residuals", "residuals", "residual adds folded into GEMMs">,
    Statistic<"biasGradients", "bias-gradients",
              "bias gradient sums folded into weight-gradient GEMMs">,
  ];
  let dependentDialects = ["::tcc::TccDialect"];
}

def Fuse : Pass<"tcc-fuse", "mlir::ModuleOp"> {
  let summary = "Outline every generated kernel as an exec.fusion: elementwise chains, layout chains, reductions";
  let description = [{
    Lowers to the `exec` dialect (in the artifact's pipeline right after
    `tcc-fuse-gemm-epilogue`). Afterwards every op of
    a function body is an `exec.fusion` (a generated kernel), a library op
    (`exec::isLibraryOp`: GEMMs, attention, normalisations, losses,
    embedding, dropout, optimizer updates), or a non-launching
    `tcc.reshape` / `tcc.constant` / `tcc.get_param`.

    Kernel ops are the elementwise tcc ops (`add sub mul div pow max min and
    or cmp where neg abs exp log sqrt rsqrt tanh erf sigmoid relu not cos sin
    gelu gelu_grad cast`, `broadcast`) and the structured ops (`transpose
    slice slice_grad concat gather`, `gather_grad` off axis 0,
    `reduce_sum/mean/max/min`). A split or unit-stride slice whose pieces
    are contiguous runs of its input's elements (every dim before the
    sliced one of extent 1, every dim after it whole), each starting at a
    byte the arena alignment divides, of a value the memory plan puts in
    the arena (an op's result, not an argument, constant, parameter or
    in-place update) is first rewritten into one `exec.view` per piece: no
    kernel, the piece's bytes in place (a merged projection's weight and
    bias gradients split into the parameters'). Every other `tcc.split`
    is rewritten into one `tcc.slice` per result, since a kernel has one
    result (of its launch space; see stores below).

    Ops are visited from the end of the block; a kernel op not yet in a
    group roots a new one, which then absorbs an operand's producer when all
    the producer's uses are inside the group (and read it in the same
    iteration space) and it is either
    - elementwise with its consumer's result shape (the same iteration
      space; the element type may differ),
    - elementwise and read by the group's structured op or a layout op of
      its chain (the *prologue*, evaluated where that op reads it:
      `reduce_sum(mul(g, g))` is one pass over `g`),
    - the group's first structured op, read by an elementwise op of the
      root's shape (the *epilogue*: `sqrt(reduce_sum(...))` is one kernel),
      or
    - a layout op (`transpose slice concat`) with one use, read by the
      group's layout op or a layout op below it: the group's *layout chain*.
      Reshapes between a chain op and the layout or elementwise op below
      join with that op (a reshape of a kernel input stays a view). So the
      q/k/v head split `slice -> reshape -> transpose` and its gradient
      `transpose -> reshape -> concat` are one kernel each, and so is a
      bias add reshaped to heads and transposed.
    So a group holds one structured op or one layout chain (see
    `exec.fusion`), no value is computed twice and no cycle can form. A
    kernel with a structured op takes that op's place in the block (of a
    chain: its last op's), so its input (often much larger than its result)
    dies as early as before; an epilogue that reads a value computed after
    the structured op is therefore left out of its kernel. Likewise an
    elementwise producer with a library call between it and its reader
    stays out when computing it at the reader would keep more bytes live
    across that call (its operands that die at it, against its result):
    under `--accum` the running gradient sums, fused into one chain, would
    keep every micro-batch's gradients to the end.

    A reduction's prologue producer that ops outside the group read too
    joins as a *store* (an `exec.fusion` result after the first, which the
    kernel writes where it computes it) when it is elementwise of the
    reduction input's shape, every outside reader comes after the
    reduction, no other launch lies between the two, and the reduction
    runs over every row (no packed token rows on it: a kernel over the
    valid rows only would leave the store's other rows unwritten): a bias
    gradient's sum and the gradient the GEMMs read are one kernel. A store
    over packed token rows is then computed at every row, as any backend
    may run a step over packed rows (the rows past the valid ones hold
    finite values, zero for a gradient). Not in a function with `exec.reuse_operands`
    (a tight `--memory-budget`), whose elementwise kernels may write over
    a dying operand, which a reduction's kernel may not.

    Then *siblings* merge: a layout-chain kernel (transposes, slices,
    concats, reshapes: it only moves elements), launched right after
    another of the same result shape that reads a common input and whose
    results it does not read, joins it as one kernel computing both results
    at each output index (the q/k/v head split's three chains; only views
    and constants may lie between them, and the first's inputs that die
    there must be the second's too, so the plan does not grow). And a
    layout-chain kernel of one result joins the reduction kernel launched
    right after it when that reduction reads its result directly: the chain
    becomes the reduction's prologue and its result a store when other ops
    (all after the reduction) read it too (a chain over packed token rows
    as well: the reduction runs over every row). A group of one op
    is still wrapped, so every generated kernel is an `exec.fusion`. Splat
    `tcc.constant`s are cloned into the kernels that use them. Kernels are
    named `fused_0`, `fused_1`, ... in program order over the module.

    Under bf16/f16 (after `tcc-lower-precision`) a kernel computes in f32
    registers: its 16-bit inputs are cast to f32 where they enter, every op
    of the body computes and keeps f32, and the result is rounded to 16 bits
    once, where it leaves. That is fewer roundings than the unfused graph's
    op-by-op 16-bit storage, on purpose (the fused graph is the one that
    runs); explicit casts to 16 bits in the body still round, and kernels
    that only move elements stay 16-bit. Since which 16-bit values are
    stored then decides the bits, no choice about them may depend on what
    `tcc-rematerialize` changes: the rule above about library calls (which
    depends on the order) weighs only wider values, and an op marked
    `tcc.remat_stored` (a recomputed value's forward op and its clone, a
    value stored without a budget) is never absorbed into a reader.

    Statistics (`-mlir-pass-statistics`): `kernels-before`, the launching ops
    (all but constants, `get_param`s and reshapes), and `kernels-after`,
    the `exec.fusion`s plus the launching ops left. LLVM release builds
    compile statistics out, so `report` also emits both counts per function
    as a remark: `tcc-fuse: @train_step: N kernels before fusion, M after`.

    Before:
    ```mlir
    %h = tcc.matmul %x, %w : ...
    %0 = tcc.add %h, %b : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
    %1 = tcc.gelu %0 {approximate = #tcc<gelu_approx tanh>} : ...
    %y = tcc.matmul %1, %w2 : ...
    %s = tcc.mul %1, %1 : ...
    %n = tcc.reduce_sum %s {axes = array<i64: 0, 1>} : (tensor<4x768xf32>) -> tensor<f32>
    ```
    After (`%1` has two users, so it stays a kernel of its own):
    ```mlir
    %h = tcc.matmul %x, %w : ...
    %1 = exec.fusion "fused_0" (%h, %b) : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32> {
    ^bb0(%a: tensor<4x768xf32>, %c: tensor<768xf32>):
      %0 = tcc.add %a, %c : (tensor<4x768xf32>, tensor<768xf32>) -> tensor<4x768xf32>
      %g = tcc.gelu %0 {approximate = #tcc<gelu_approx tanh>} : ...
      exec.yield %g : tensor<4x768xf32>
    }
    %y = tcc.matmul %1, %w2 : ...
    %n = exec.fusion "fused_1" (%1) : (tensor<4x768xf32>) -> tensor<f32> {
    ^bb0(%a: tensor<4x768xf32>):
      %s = tcc.mul %a, %a : ...
      %r = tcc.reduce_sum %s {axes = array<i64: 0, 1>} : (tensor<4x768xf32>) -> tensor<f32>
      exec.yield %r : tensor<f32>
    }
    ```
  }];
  let options = [
    Option<"report", "report", "bool", /*default=*/"false",
           "emit each function's kernel counts before and after fusion as a remark">,
  ];
  let statistics = [
    Statistic<"kernelsBefore", "kernels-before",
              "kernel launches before fusion">,
    Statistic<"kernelsAfter", "kernels-after",
              "kernel launches after fusion">,
  ];
  let dependentDialects = ["::tcc::TccDialect", "::tcc::exec::ExecDialect"];
}

def LowerCalls : Pass<"tcc-lower-calls", "mlir::func::FuncOp"> {
  let summary = "Wrap every library op into exec.call; nothing else may launch";
  let description = [{
    The last step of lowering a step function to what the runtime executes:
    a dialect conversion whose target declares what is legal at the top of
    a function, namely the `exec` dialect (`exec.fusion` kernels,
    `exec.call` library calls, collectives), views (`tcc.reshape`),
    `tcc.constant`, `tcc.get_param` and `func.return`. Every op with
    `LibraryCallOpInterface` in a form that is a library call is rewritten
    into an `exec.call` running it; any other op is an error naming it
    ("has no kernel or library call in the runtime"), so a step that
    `tcc-fuse` left incomplete never reaches the plan. Ops inside
    `exec.fusion` and `exec.call` bodies are what those run, and legal.

    Before:
    ```mlir
    %y = tcc.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    ```
    After:
    ```mlir
    %y = exec.call (%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>):
      %0 = tcc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
      exec.yield %0 : tensor<4x16xf32>
    }
    ```
  }];
  let dependentDialects = ["::tcc::exec::ExecDialect"];
}

def PlanMemory : Pass<"tcc-plan-memory", "mlir::func::FuncOp"> {
  let summary = "Plan one static arena per step function: buffer offsets by liveness";
  let description = [{
    For every single-block `func.func` (train_step, eval_step, forward),
    gives each op result that needs storage an offset in one arena, so the
    runtime allocates the step's memory once and the peak is known at
    compile time.

    - Buffers: every tensor result, sized `numElements x element bytes`
      (`i1` takes a byte) rounded up to 64 bytes. `tcc.reshape` is an alias
      of its input (same bytes, same offset, chains followed).
      `tcc.constant` and `tcc.get_param` live outside the arena
      (`exec.region = "constant"` / `"param"`), as do function arguments.
    - Liveness: from the defining op to the last use, uses through reshape
      aliases and inside nested regions included; returned values live to
      the end.
    - In place: a result of an op with `InPlaceOpInterface` (the optimizer
      updates' new parameter and state, directly or as an `exec.call`) is
      written into the storage of the argument it replaces when that
      argument dies at the op and has the same size
      (`exec.region = "inplace", exec.inplace_of = ARG`), or of that
      argument through a chain of such results (block updates of one
      parameter, each reading the previous one's result).
    - In a function marked `exec.reuse_operands` (tcc-rematerialize marks
      @train_step when the budget needs more than the unbudgeted plan; not
      otherwise, so unbudgeted plans stay as they were): an elementwise
      kernel's result (an `exec.fusion`
      of elementwise ops, broadcasts and splat constants) takes the arena
      bytes of an operand of its shape and element width that dies at it
      and that it reads only at the output's own index
      (`exec.reuses = N`, checked by the verifier): element i is read
      before it is written, by the same loop iteration or thread.
    - Offsets: greedy best-fit (each buffer takes the smallest gap between
      buffers it is live with), tried in definition order and in decreasing
      size; the lower peak is kept (`order` forces one). The plan is checked
      by the exec dialect's verifier of `exec.arena_bytes` when the pass ends.

    Single-result ops get `exec.offset`; multi-result ops `exec.offsets`
    (-1 for results outside the arena) and, when not all are in the arena,
    an array `exec.region` and `exec.inplace_of`. Statistics (summed over
    functions): arena buffers, their naive total (no reuse) and the planned
    bytes; LLVM builds without `LLVM_ENABLE_STATS` (Debian's) print none, so
    `report` gives the same numbers per function as a remark.

    Before:
    ```mlir
    func.func @f(%x: tensor<16xf32>) -> tensor<16xf32> {
      %a = tcc.exp %x : (tensor<16xf32>) -> tensor<16xf32>
      %b = tcc.neg %a : (tensor<16xf32>) -> tensor<16xf32>
      %c = tcc.exp %b : (tensor<16xf32>) -> tensor<16xf32>
      return %c : tensor<16xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<16xf32>) -> tensor<16xf32>
        attributes {exec.arena_bytes = 128 : i64} {
      %a = tcc.exp %x {exec.offset = 0 : i64} : ...
      %b = tcc.neg %a {exec.offset = 64 : i64} : ...
      %c = tcc.exp %b {exec.offset = 0 : i64} : ...   // reuses %a's bytes
      return %c : tensor<16xf32>
    }
    ```
  }];
  let options = [
    Option<"order", "order", "std::string", /*default=*/"\"best\"",
           "placement order: best (lower peak of the two), size or definition">,
    Option<"report", "report", "bool", /*default=*/"false",
           "emit a remark per function: buffers, naive and planned bytes">,
  ];
  let statistics = [
    Statistic<"numBuffers", "buffers", "Arena buffers planned">,
    Statistic<"numInplace", "inplace", "Results written into a dying argument">,
    Statistic<"naiveBytes", "naive-bytes", "Sum of all arena buffer sizes (no reuse)">,
    Statistic<"plannedBytes", "planned-bytes", "Sum of the planned exec.arena_bytes">,
  ];
}

#endif // TCC_TRANSFORMS_LOWERPASSES_TD
