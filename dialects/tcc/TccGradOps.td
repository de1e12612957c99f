#ifndef TCC_GRAD_OPS_TD
#define TCC_GRAD_OPS_TD

// Backward ops: the gradient rules of high-level ops, kept whole so later
// passes lower each to one fused kernel instead of rediscovering a pattern.
// They are produced by autodiff and are not themselves differentiated.

def Tcc_SoftmaxGradOp : Tcc_Op<"softmax_grad", [Pure, SameOperandsAndResultType, Tcc_LibraryCall]> {
  let callFamily = "softmax";
  let summary = "input gradient of softmax from its result and result gradient";
  let description = [{
    `dx = y * (dy - sum(dy * y, axis))` where `y = softmax(x)`.
  }];
  let arguments = (ins Tcc_FloatTensor:$result, Tcc_FloatTensor:$result_grad, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$input_grad);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
}

def Tcc_LogSoftmaxGradOp : Tcc_Op<"log_softmax_grad", [Pure, SameOperandsAndResultType,
                                                      Tcc_LibraryCall]> {
  let callFamily = "softmax";
  let summary = "input gradient of log_softmax from its result and result gradient";
  let description = [{
    `dx = dy - exp(y) * sum(dy, axis)` where `y = log_softmax(x)`.
  }];
  let arguments = (ins Tcc_FloatTensor:$result, Tcc_FloatTensor:$result_grad, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$input_grad);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
}

def Tcc_GeluGradOp : Tcc_Op<"gelu_grad", [Pure, SameOperandsAndResultType, Tcc_Elementwise]> {
  let summary = "input gradient of gelu: dy * gelu'(x)";
  let arguments = (ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$result_grad,
                       DefaultValuedAttr<Tcc_GeluApproxAttr, "GeluApprox::none">:$approximate);
  let results = (outs Tcc_FloatTensor:$input_grad);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_LayerNormGradOp : Tcc_Op<"layer_norm_grad", [Pure, AttrSizedOperandSegments,
                                                      Tcc_LibraryCall]> {
  let callFamily = "layer_norm";
  let summary = "gradients of layer_norm w.r.t. input, scale and bias";
  let description = [{
    Recomputes the row statistics of `input` over dims [axis, rank). Without
    a `scale` operand the scale is taken as 1. `scale_grad` and `bias_grad`
    are shaped like the normalised dims and are always produced (unused
    ones are dead code); they are sums over all rows, f32 for bf16/f16
    input (the parameters' gradients, not rounded to 16 bits).

    The optional `residual_grad` (the input's type) is added to
    `input_grad` before it is rounded: the gradient a residual connection
    brings past the layer norm (tcc-fuse-layer-norm-grad folds that add
    in). The optional result `input_grad_sum` is `input_grad`'s sum over
    all rows, shaped and typed like `bias_grad` (f32 for 16-bit input): the
    bias gradient of the Linear that reads `input_grad`, which
    tcc-fuse-layer-norm-grad folds in. For 16-bit input it sums
    `input_grad`'s f32 values before their rounding to 16 bits.
  }];
  let arguments = (ins Tcc_FloatTensor:$input, Optional<Tcc_FloatTensor>:$scale,
                       Tcc_FloatTensor:$result_grad,
                       Optional<Tcc_FloatTensor>:$residual_grad,
                       I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Tcc_FloatTensor:$input_grad, Tcc_FloatTensor:$scale_grad,
                      Tcc_FloatTensor:$bias_grad,
                      Optional<Tcc_FloatTensor>:$input_grad_sum);
  let assemblyFormat = "$input (`scale` $scale^)? `grad` $result_grad (`residual` $residual_grad^)? attr-dict `:` functional-type(operands, results)";
  // The result types follow from the operands (verify() checks them); the
  // builder derives them, with input_grad_sum when asked for.
  let builders = [
    OpBuilder<(ins "::mlir::Value":$input, "::mlir::Value":$scale,
                   "::mlir::Value":$result_grad, "::mlir::Value":$residual_grad,
                   "::mlir::IntegerAttr":$axis, "::mlir::FloatAttr":$epsilon,
                   CArg<"bool", "false">:$withInputGradSum)>
  ];
  let hasVerifier = 1;
}

def Tcc_AttentionGradOp : Tcc_Op<"attention_grad", [Pure, InferTypeOpAdaptor, Tcc_ContractionCall]> {
  let callFamily = "attention";
  let summary = "gradients of attention w.r.t. query, key and value";
  let description = [{
    Same operands and attributes as the `tcc.attention` it differentiates,
    plus the gradient of its result. The key mask gets no gradient. In
    token rows (`heads` > 0) the result gradient and the three gradients
    are `[batch, seq, heads * head_dim]` (`kv_seq` for key and value), the
    heads of each token at consecutive columns from column 0.
  }];
  let arguments = !con((ins Tcc_FloatTensor:$query, Tcc_FloatTensor:$key,
                       Tcc_FloatTensor:$value, Tcc_FloatTensor:$result_grad,
                       Optional<Tcc_Tensor>:$key_mask,
                       F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal),
                       Tcc_AttentionRowsAttrs);
  let results = (outs Tcc_FloatTensor:$query_grad, Tcc_FloatTensor:$key_grad,
                      Tcc_FloatTensor:$value_grad);
  /// The dims and layout (verified).
  let extraClassDeclaration = [{ ::tcc::AttentionDims getDims(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_AttentionQkvGradOp : Tcc_Op<"attention_qkv_grad", [Pure, InferTypeOpAdaptor, Tcc_ContractionCall]> {
  let callFamily = "attention";
  let summary = "attention's gradient w.r.t. the one tensor its query, key and value are read from";
  let description = [{
    `tcc.attention_grad` in token rows whose query, key and value are one
    tensor `qkv` (`[batch, seq, 3 * heads * head_dim]`, the output of a
    fused q/k/v projection) read at the columns `query_column`,
    `key_column` and `value_column`, which tile its rows. The result is the
    gradient of `qkv`: each of the three gradients at its operand's
    columns, so the fused projection's backward reads it as it is, with no
    concat of the three (tcc-fold-attention-layout makes this form).
  }];
  let arguments = !con((ins Tcc_FloatTensor:$qkv, Tcc_FloatTensor:$result_grad,
                       Optional<Tcc_Tensor>:$key_mask,
                       F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal),
                       Tcc_AttentionRowsAttrs);
  let results = (outs Tcc_FloatTensor:$qkv_grad);
  /// The dims and layout (verified); query, key and value are `qkv`.
  let extraClassDeclaration = [{
    ::tcc::AttentionDims getDims();
    ::mlir::Value getQuery() { return getQkv(); }
    ::mlir::Value getKey() { return getQkv(); }
    ::mlir::Value getValue() { return getQkv(); }
  }];
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_GatherGradOp : Tcc_Op<"gather_grad", [Pure, Tcc_Structured,
    DeclareOpInterfaceMethods<Tcc_LibraryCallOpInterface, ["isLibraryCall"]>]> {
  let callFamily = "embedding";
  let summary = "scatter-add of the result gradient of a gather (or embedding)";
  let description = [{
    The data gradient of `gather(data, indices, axis)`: zeros shaped like
    `data` (the result type) with every slice of `result_grad` added at its
    index; repeated indices accumulate. `tcc.embedding` is the axis-0 case.
  }];
  let arguments = (ins Tcc_IntTensor:$indices, Tcc_FloatTensor:$result_grad, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$data_grad);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
}

def Tcc_SliceGradOp : Tcc_Op<"slice_grad", [Pure, Tcc_Structured]> {
  let summary = "the input gradient of a slice: zeros with the result gradient placed back";
  let arguments = (ins Tcc_Tensor:$result_grad, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Tcc_Tensor:$input_grad);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
}

def Tcc_CrossEntropyGradOp : Tcc_Op<"cross_entropy_grad", [Pure, Tcc_LibraryCall]> {
  let callFamily = "cross_entropy";
  let summary = "logits gradient of cross_entropy's loss sum";
  let description = [{
    `(softmax(logits) - onehot(labels)) * loss_sum_grad` on rows whose label
    is not `ignore_index`, zero on ignored rows. Probabilities are never
    stored.
  }];
  let arguments = (ins Tcc_FloatTensor:$logits, Tcc_IntTensor:$labels,
                       Tcc_FloatTensor:$loss_sum_grad,
                       DefaultValuedAttr<I64Attr, "-100">:$ignore_index);
  let results = (outs Tcc_FloatTensor:$logits_grad);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
}

def Tcc_ConvGradOp : Tcc_Op<"conv_grad", [Pure, InferTypeOpAdaptor, Tcc_ContractionCall]> {
  let callFamily = "conv";
  let summary = "gradients of conv w.r.t. input, weight and bias";
  let description = [{
    Same operands (less the bias) and attributes as the `tcc.conv` it
    differentiates, plus the gradient of its result. `bias_grad` (`[M]`) is
    always produced (dead when the conv has no bias).
  }];
  let arguments = !con((ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$weight,
                            Tcc_FloatTensor:$result_grad),
                       Tcc_WindowAttrs, (ins DefaultValuedAttr<I64Attr, "1">:$group));
  let results = (outs Tcc_FloatTensor:$input_grad, Tcc_FloatTensor:$weight_grad,
                      Tcc_FloatTensor:$bias_grad);
  let extraClassDeclaration = [{ ::tcc::Window2d getWindow(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_MaxPoolGradOp : Tcc_Op<"max_pool_grad", [Pure, InferTypeOpAdaptor, Tcc_LibraryCall]> {
  let callFamily = "pool";
  let summary = "input gradient of max_pool";
  let description = [{
    Adds each result gradient to the input position of its window's first
    maximum (recomputed from `input`).
  }];
  let arguments = !con((ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$result_grad),
                       Tcc_PoolAttrs);
  let results = (outs Tcc_FloatTensor:$input_grad);
  let extraClassDeclaration = [{ ::tcc::Window2d getWindow(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_AvgPoolGradOp : Tcc_Op<"avg_pool_grad", [Pure, InferTypeOpAdaptor, Tcc_LibraryCall]> {
  let callFamily = "pool";
  let summary = "input gradient of avg_pool";
  let description = [{
    Spreads each result gradient, divided by its window's count, over the
    window's input positions. `input` gives the input shape only.
  }];
  let arguments = !con((ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$result_grad),
                       Tcc_PoolAttrs,
                       (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad));
  let results = (outs Tcc_FloatTensor:$input_grad);
  let extraClassDeclaration = [{ ::tcc::Window2d getWindow(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

#endif // TCC_GRAD_OPS_TD
