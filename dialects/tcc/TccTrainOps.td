#ifndef TCC_TRAIN_OPS_TD
#define TCC_TRAIN_OPS_TD

// Losses and optimizer updates: the pieces of a training step that have
// their own fused kernels. Optimizer state is explicit SSA values so later
// passes can shard it (ZeRO) or keep it in fp32 under mixed precision.

def Tcc_CrossEntropyOp : Tcc_Op<"cross_entropy", [Pure, InferTypeOpAdaptor, Tcc_Vjp,
                                                  Tcc_LibraryCall]> {
  let callFamily = "cross_entropy";
  let summary = "summed softmax cross-entropy and the number of counted labels";
  let description = [{
    `logits` is `[..., classes]`, `labels` the leading dims, integer. Returns
    the sum over rows whose label is not `ignore_index` of
    `logsumexp(logits) - logits[label]`, and the number of such rows (as a
    float scalar). The mean loss is `loss_sum / count`; keeping the two apart
    lets gradient accumulation weight micro-batches by token count. From
    bf16/f16 logits both come out in f32 (the sum is computed in f32).
  }];
  let arguments = (ins Tcc_FloatTensor:$logits, Tcc_IntTensor:$labels,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Tcc_FloatTensor:$loss_sum, Tcc_FloatTensor:$count);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_SgdUpdateOp : Tcc_Op<"sgd_update", [Pure, AttrSizedOperandSegments,
    AttrSizedResultSegments, DeclareOpInterfaceMethods<Tcc_LibraryCallOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Tcc_InPlaceOpInterface>]> {
  let callFamily = "optimizer";
  let summary = "one torch.optim.SGD step on one parameter, or on a block of it";
  let description = [{
    `d = grad + weight_decay * param`; with momentum,
    `buf' = momentum * buf + d` (a zero buffer makes the first step
    `buf' = d`, as PyTorch's lazily created buffer does) and `d = buf'`, or
    `d + momentum * buf'` when `nesterov`; `param' = param - lr * d`.
    `lr` is an f64 scalar. The momentum buffer is present iff momentum != 0.
    With `skip` (an i1 scalar, dynamic loss scaling's overflow flag) true,
    the results are the operands unchanged.

    With `working` (the parameter's bf16/f16 working copy under mixed
    precision) the op also returns `new_working`, `param'` rounded to the
    working type (nearest even) in the same kernel, so the forward pass
    reads the parameter in 16 bits without casting it every step.

    A block update (`element_offset`, or a `grad` with fewer elements than
    `param`): `grad` is the gradient of the parameter's elements
    `[element_offset, element_offset + numel(grad))` in row-major order;
    only those elements of the parameter, the buffer and the working copy
    change, the rest pass through. tcc-rematerialize makes a large weight's
    gradient in row blocks this way, each applied before the next is made.
  }];
  let arguments = (ins Tcc_FloatTensor:$param, Tcc_FloatTensor:$grad,
                       StaticShapeTensorOf<[F64]>:$lr,
                       Optional<Tcc_FloatTensor>:$momentum_buffer,
                       Optional<StaticShapeTensorOf<[I1]>>:$skip,
                       Optional<Tcc_FloatTensor>:$working,
                       DefaultValuedAttr<F64Attr, "0.0">:$momentum,
                       DefaultValuedAttr<F64Attr, "0.0">:$weight_decay,
                       DefaultValuedAttr<BoolAttr, "false">:$nesterov,
                       DefaultValuedAttr<I64Attr, "0">:$element_offset);
  let results = (outs Tcc_FloatTensor:$new_param,
                      Optional<Tcc_FloatTensor>:$new_momentum_buffer,
                      Optional<Tcc_FloatTensor>:$new_working);
  let assemblyFormat = [{
    $param `,` $grad `,` $lr (`,` $momentum_buffer^)? (`skip` $skip^)?
    (`working` $working^)? attr-dict `:` `(` type(operands) `)` `->`
    custom<UpdateResults>(ref($momentum_buffer), ref($working),
                          type($new_param), type($new_momentum_buffer),
                          type($new_working))
  }];
  let hasVerifier = 1;
}

def Tcc_AdamwUpdateOp : Tcc_Op<"adamw_update", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Tcc_LibraryCallOpInterface, ["getFlops"]>,
    DeclareOpInterfaceMethods<Tcc_InPlaceOpInterface>]> {
  let callFamily = "optimizer";
  let summary = "one torch.optim.AdamW step on one parameter, or on a block of it";
  let description = [{
    With `t = step` (1 for the first update), in PyTorch's order:
    `param *= 1 - lr * weight_decay`; `m' = beta1 * m + (1 - beta1) * grad`;
    `v' = beta2 * v + (1 - beta2) * grad^2`;
    `param' = param - lr / (1 - beta1^t) * m' / (sqrt(v') / sqrt(1 - beta2^t) + eps)`.
    `lr` is an f64 scalar, `step` an i64 scalar; the bias corrections are
    computed in f64 as PyTorch does on the host. With `skip` (an i1 scalar,
    dynamic loss scaling's overflow flag) true, the results are the operands
    unchanged. With `working` (the parameter's bf16/f16 working copy) the op
    also returns `new_working`, `param'` rounded to its type (nearest even),
    written in the same kernel. A block update (`element_offset`, or a
    `grad` with fewer elements than `param`) updates the elements
    `[element_offset, element_offset + numel(grad))` of the parameter, its
    moments and working copy, as `sgd_update`'s does.
  }];
  let arguments = (ins Tcc_FloatTensor:$param, Tcc_FloatTensor:$grad,
                       Tcc_FloatTensor:$exp_avg, Tcc_FloatTensor:$exp_avg_sq,
                       StaticShapeTensorOf<[F64]>:$lr, StaticShapeTensorOf<[I64]>:$step,
                       Optional<StaticShapeTensorOf<[I1]>>:$skip,
                       Optional<Tcc_FloatTensor>:$working,
                       DefaultValuedAttr<F64Attr, "0.9">:$beta1,
                       DefaultValuedAttr<F64Attr, "0.999">:$beta2,
                       DefaultValuedAttr<F64Attr, "1e-8">:$eps,
                       DefaultValuedAttr<F64Attr, "0.01">:$weight_decay,
                       DefaultValuedAttr<I64Attr, "0">:$element_offset);
  let results = (outs Tcc_FloatTensor:$new_param, Tcc_FloatTensor:$new_exp_avg,
                      Tcc_FloatTensor:$new_exp_avg_sq,
                      Optional<Tcc_FloatTensor>:$new_working);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $lr `,` $step
    (`skip` $skip^)? (`working` $working^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TCC_TRAIN_OPS_TD
