#ifndef TCC_OPS_TD
#define TCC_OPS_TD

include "TccDialect.td"
include "TccInterfaces.td"
include "TccTraits.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Tcc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tcc_Dialect, mnemonic, traits> {
  // A library call's family in profiles (`tcc run --profile`: "GEMM",
  // "attention", ...); every op with LibraryCallOpInterface names one.
  string callFamily = "";
}

// Ops with a gradient rule (their buildVjp lives in TccVjp*.cpp).
defvar Tcc_Vjp = DeclareOpInterfaceMethods<Tcc_DifferentiableOpInterface>;
// A library call (LibraryCallOpInterface); its two accessors are generated
// by tcc-tblgen -gen-library-call-defs.
defvar Tcc_LibraryCall = DeclareOpInterfaceMethods<Tcc_LibraryCallOpInterface>;
// A library call that counts its own FLOPs (a contraction).
defvar Tcc_ContractionCall =
    DeclareOpInterfaceMethods<Tcc_LibraryCallOpInterface, ["getFlops"]>;

def Tcc_Tensor : StaticShapeTensorOf<[AnyType]>;
def Tcc_FloatTensor : StaticShapeTensorOf<[AnyFloat]>;
def Tcc_IntTensor : StaticShapeTensorOf<[AnySignlessInteger]>;
def Tcc_BoolTensor : StaticShapeTensorOf<[I1]>;

// Every op prints as `tcc.op %a, %b {attrs} : (operand types) -> result types`:
// one uniform, unambiguous form that round-trips through tcc-opt.
defvar Tcc_GenericFormat = "operands attr-dict `:` functional-type(operands, results)";

//===----------------------------------------------------------------------===//
// Parameters and constants
//===----------------------------------------------------------------------===//

def Tcc_ParamOp : Tcc_Op<"param", [Symbol, IsolatedFromAbove]> {
  let summary = "a named model parameter with its initial value";
  let description = [{
    Module-level declaration of a parameter (an ONNX float initializer). The
    symbol name is the initializer name, so checkpoints and users agree on it.
    `tcc.get_param` reads it inside a function.
    ```mlir
    tcc.param @"fc.weight" = dense<...> : tensor<4x3xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, ElementsAttr:$initial_value,
                       UnitAttr:$frozen);
  let assemblyFormat = "$sym_name (`frozen` $frozen^)? `=` $initial_value attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getInitialValue().getType());
    }
  }];
}

def Tcc_GetParamOp : Tcc_Op<"get_param",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "reads a module-level parameter";
  let arguments = (ins FlatSymbolRefAttr:$name);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "$name attr-dict `:` type($result)";
}

def Tcc_ConstantOp : Tcc_Op<"constant", [ConstantLike, Pure,
    AllTypesMatch<["value", "result"]>]> {
  let summary = "a constant tensor";
  let arguments = (ins ElementsAttr:$value);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = "attr-dict $value";
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

// Binary ops broadcast their operands numpy-style to the result shape.
class Tcc_BinaryOp<string mnemonic, Type operandType, list<Trait> traits = []>
    : Tcc_Op<mnemonic, !listconcat(traits, [Pure, InferTypeOpAdaptor, Tcc_Elementwise])> {
  let arguments = (ins operandType:$lhs, operandType:$rhs);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_AddOp : Tcc_BinaryOp<"add", Tcc_Tensor, [Commutative, Tcc_Vjp]> {
  let summary = "elementwise addition with broadcasting";
  let hasFolder = 1;
}
def Tcc_SubOp : Tcc_BinaryOp<"sub", Tcc_Tensor, [Tcc_Vjp]> {
  let summary = "elementwise subtraction with broadcasting";
}
def Tcc_MulOp : Tcc_BinaryOp<"mul", Tcc_Tensor, [Commutative, Tcc_Vjp]> {
  let summary = "elementwise multiplication with broadcasting";
  let hasFolder = 1;
}
def Tcc_DivOp : Tcc_BinaryOp<"div", Tcc_Tensor, [Tcc_Vjp]> {
  let summary = "elementwise division with broadcasting (integer: truncating)";
}
def Tcc_PowOp : Tcc_BinaryOp<"pow", Tcc_FloatTensor, [Tcc_Vjp]> {
  let summary = "elementwise power with broadcasting";
}
def Tcc_MaxOp : Tcc_BinaryOp<"max", Tcc_Tensor, [Commutative, Tcc_Vjp]> {
  let summary = "elementwise maximum with broadcasting";
}
def Tcc_MinOp : Tcc_BinaryOp<"min", Tcc_Tensor, [Commutative, Tcc_Vjp]> {
  let summary = "elementwise minimum with broadcasting";
}
def Tcc_AndOp : Tcc_BinaryOp<"and", Tcc_BoolTensor, [Commutative]> {
  let summary = "elementwise logical and";
}
def Tcc_OrOp : Tcc_BinaryOp<"or", Tcc_BoolTensor, [Commutative]> {
  let summary = "elementwise logical or";
}

def Tcc_CmpOp : Tcc_Op<"cmp", [Pure, InferTypeOpAdaptor, Tcc_Elementwise]> {
  let summary = "elementwise comparison with broadcasting, producing i1";
  let arguments = (ins Tcc_CmpPredicateAttr:$predicate, Tcc_Tensor:$lhs,
                       Tcc_Tensor:$rhs);
  let results = (outs Tcc_BoolTensor:$result);
  let assemblyFormat = "$predicate `,` $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Tcc_WhereOp : Tcc_Op<"where", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_Elementwise]> {
  let summary = "select elementwise: condition ? on_true : on_false, broadcasting";
  let arguments = (ins Tcc_BoolTensor:$condition, Tcc_Tensor:$on_true,
                       Tcc_Tensor:$on_false);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

class Tcc_UnaryOp<string mnemonic, Type type = Tcc_FloatTensor,
                  list<Trait> traits = []>
    : Tcc_Op<mnemonic, !listconcat(traits,
                       [Pure, SameOperandsAndResultType, InferTypeOpInterface,
                        Tcc_Elementwise])> {
  let arguments = (ins type:$input);
  let results = (outs type:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_NegOp : Tcc_UnaryOp<"neg", Tcc_Tensor, [Tcc_Vjp]> { let summary = "elementwise negation"; }
def Tcc_AbsOp : Tcc_UnaryOp<"abs", Tcc_Tensor, [Tcc_Vjp]> { let summary = "elementwise absolute value"; }
def Tcc_ExpOp : Tcc_UnaryOp<"exp", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise e^x"; }
def Tcc_LogOp : Tcc_UnaryOp<"log", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise natural logarithm"; }
def Tcc_SqrtOp : Tcc_UnaryOp<"sqrt", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise square root"; }
def Tcc_RsqrtOp : Tcc_UnaryOp<"rsqrt", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise 1/sqrt(x)"; }
def Tcc_TanhOp : Tcc_UnaryOp<"tanh", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise hyperbolic tangent"; }
def Tcc_ErfOp : Tcc_UnaryOp<"erf", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise error function"; }
def Tcc_SigmoidOp : Tcc_UnaryOp<"sigmoid", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise 1/(1+e^-x)"; }
def Tcc_ReluOp : Tcc_UnaryOp<"relu", Tcc_Tensor, [Tcc_Vjp]> { let summary = "elementwise max(x, 0)"; }
def Tcc_NotOp : Tcc_UnaryOp<"not", Tcc_BoolTensor> { let summary = "elementwise logical not"; }
def Tcc_CosOp : Tcc_UnaryOp<"cos", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise cosine"; }
def Tcc_SinOp : Tcc_UnaryOp<"sin", Tcc_FloatTensor, [Tcc_Vjp]> { let summary = "elementwise sine"; }

def Tcc_GeluOp : Tcc_Op<"gelu", [Pure, SameOperandsAndResultType, InferTypeOpInterface, Tcc_Vjp,
                                 Tcc_Elementwise]> {
  let summary = "GELU, exact (erf) or with PyTorch's tanh approximation";
  let arguments = (ins Tcc_FloatTensor:$input,
                       DefaultValuedAttr<Tcc_GeluApproxAttr, "GeluApprox::none">:$approximate);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_CastOp : Tcc_Op<"cast", [Pure, Tcc_Vjp, Tcc_Elementwise]> {
  let summary = "elementwise conversion to the result's element type";
  let description = [{
    Float to integer truncates toward zero; to i1 means `x != 0`.
  }];
  let arguments = (ins Tcc_Tensor:$input);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

def Tcc_BroadcastOp : Tcc_Op<"broadcast", [Pure, Tcc_Vjp, Tcc_Elementwise]> {
  let summary = "numpy-style broadcast to the result shape";
  let arguments = (ins Tcc_Tensor:$input);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tcc_ReshapeOp : Tcc_Op<"reshape", [Pure, Tcc_Vjp, Tcc_View]> {
  let summary = "row-major reshape to the result shape";
  let arguments = (ins Tcc_Tensor:$input);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Tcc_TransposeOp : Tcc_Op<"transpose", !listconcat([Pure, InferTypeOpAdaptor, Tcc_Vjp], Tcc_LayoutTraits)> {
  let summary = "permutes dimensions: result dim i is input dim perm[i]";
  let arguments = (ins Tcc_Tensor:$input, DenseI64ArrayAttr:$perm);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
  let hasFolder = 1;
}

def Tcc_SliceOp : Tcc_Op<"slice", !listconcat([Pure, InferTypeOpAdaptor, Tcc_Vjp], Tcc_LayoutTraits)> {
  let summary = "strided slice: per dim, indices start, start+stride, ... before limit";
  let description = [{
    One entry per dimension, already clamped: for a positive stride
    `0 <= start <= limit <= dim`; for a negative stride `-1 <= limit <= start < dim`.
    The result size is `max(0, ceil((limit - start) / stride))`.
  }];
  let arguments = (ins Tcc_Tensor:$input, DenseI64ArrayAttr:$starts,
                       DenseI64ArrayAttr:$limits, DenseI64ArrayAttr:$strides);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_ConcatOp : Tcc_Op<"concat", !listconcat([Pure, InferTypeOpAdaptor, Tcc_Vjp], Tcc_LayoutTraits)> {
  let summary = "concatenates tensors along an axis";
  let arguments = (ins Variadic<Tcc_Tensor>:$inputs, I64Attr:$axis);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_SplitOp : Tcc_Op<"split", [Pure, InferTypeOpAdaptor, Tcc_Vjp]> {
  let summary = "splits a tensor along an axis into pieces of the given sizes";
  let arguments = (ins Tcc_Tensor:$input, I64Attr:$axis, DenseI64ArrayAttr:$sizes);
  let results = (outs Variadic<Tcc_Tensor>:$results);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_GatherOp : Tcc_Op<"gather", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_Structured]> {
  let summary = "numpy take: out = data[..., indices, ...] along axis";
  let description = [{
    Result shape is `data[:axis] ++ indices ++ data[axis+1:]`. Negative indices
    count from the end, as in ONNX Gather.
  }];
  let arguments = (ins Tcc_Tensor:$data, Tcc_IntTensor:$indices, I64Attr:$axis);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_EmbeddingOp : Tcc_Op<"embedding", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_LibraryCall]> {
  let callFamily = "embedding";
  let summary = "row lookup in a [vocab, dim] table by integer ids";
  let description = [{
    Result shape is `ids ++ [dim]`. Its gradient is a scatter-add into the
    table, kept as one op so it lowers to one kernel.
  }];
  let arguments = (ins Tcc_FloatTensor:$table, Tcc_IntTensor:$ids);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

//===----------------------------------------------------------------------===//
// Reductions and normalisations
//===----------------------------------------------------------------------===//

class Tcc_ReduceOp<string mnemonic>
    : Tcc_Op<mnemonic, [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_Structured]> {
  let arguments = (ins Tcc_Tensor:$input, DenseI64ArrayAttr:$axes,
                       DefaultValuedAttr<BoolAttr, "false">:$keepdims);
  let results = (outs Tcc_Tensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}
def Tcc_ReduceSumOp : Tcc_ReduceOp<"reduce_sum"> { let summary = "sum over axes"; }
def Tcc_ReduceMeanOp : Tcc_ReduceOp<"reduce_mean"> { let summary = "mean over axes"; }
def Tcc_ReduceMaxOp : Tcc_ReduceOp<"reduce_max"> { let summary = "maximum over axes"; }
def Tcc_ReduceMinOp : Tcc_ReduceOp<"reduce_min"> { let summary = "minimum over axes"; }

def Tcc_SoftmaxOp : Tcc_Op<"softmax", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_LibraryCall]> {
  let callFamily = "softmax";
  let summary = "softmax along one axis";
  let arguments = (ins Tcc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_LogSoftmaxOp : Tcc_Op<"log_softmax", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_LibraryCall]> {
  let callFamily = "softmax";
  let summary = "log of softmax along one axis, computed stably";
  let arguments = (ins Tcc_FloatTensor:$input, I64Attr:$axis);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_LayerNormOp : Tcc_Op<"layer_norm", [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor, Tcc_Vjp,
                                            Tcc_LibraryCall]> {
  let callFamily = "layer_norm";
  let summary = "layer normalisation over dims [axis, rank)";
  let description = [{
    `y = (x - mean) / sqrt(var + epsilon) * scale + bias`, with the biased
    variance, over the trailing dims starting at `axis`. `scale` and `bias`
    are optional and shaped like those trailing dims.
  }];
  let arguments = (ins Tcc_FloatTensor:$input, Optional<Tcc_FloatTensor>:$scale,
                       Optional<Tcc_FloatTensor>:$bias, I64Attr:$axis, F64Attr:$epsilon);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = "$input (`scale` $scale^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Tcc_DropoutOp : Tcc_Op<"dropout", [AttrSizedOperandSegments, InferTypeOpAdaptor, Tcc_Vjp,
                                       Tcc_LibraryCall]> {
  let callFamily = "dropout";
  let summary = "training-mode dropout with a seeded counter-based mask";
  let description = [{
    Keeps element `i` when `hash(seed', i)` maps below `1 - ratio`, scaling
    kept elements by `1 / (1 - ratio)`; also returns the keep mask. The hash
    (runtime/kernels/dropout_hash.h) is a pure function of (seed', i), so
    every backend draws the same mask. `seed' = seed + offset * 0x9E3779B97F4A7C15`
    (mod 2^64): the optional i64 scalar `offset` is how a training step draws
    a fresh mask per step and micro-batch; without it `seed' = seed`.
    With `rows` (tcc-pack-tokens: the input is in packed token order, the
    `rows` of tcc.pack_index), element `e` of packed row `r` is hashed as
    element `rows[r] * w + e % w` of the unpacked input (`w` elements a
    row), so the mask is the one the unpacked dropout draws; rows past the
    count are zero.
  }];
  let arguments = (ins Tcc_FloatTensor:$input,
                       Optional<StaticShapeTensorOf<[I64]>>:$offset,
                       Optional<StaticShapeTensorOf<[I32]>>:$rows,
                       F64Attr:$ratio, I64Attr:$seed);
  let results = (outs Tcc_FloatTensor:$result, Tcc_BoolTensor:$mask);
  let assemblyFormat = [{
    $input (`offset` $offset^)? (`rows` $rows^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Convolution and pooling over NCHW (1-D forms are imported as H = 1)
//===----------------------------------------------------------------------===//

// The window of a 2-D convolution or pooling: strides, the zero padding
// before (top, left) and after (bottom, right) each spatial dim, and the
// dilation of the window. The output size per dim is
// `(in + pad_begin + pad_end - dilation * (window - 1) - 1) / stride + 1`.
defvar Tcc_WindowAttrs = (ins
    DefaultValuedAttr<I64Attr, "1">:$stride_h, DefaultValuedAttr<I64Attr, "1">:$stride_w,
    DefaultValuedAttr<I64Attr, "0">:$pad_top, DefaultValuedAttr<I64Attr, "0">:$pad_left,
    DefaultValuedAttr<I64Attr, "0">:$pad_bottom, DefaultValuedAttr<I64Attr, "0">:$pad_right,
    DefaultValuedAttr<I64Attr, "1">:$dilation_h, DefaultValuedAttr<I64Attr, "1">:$dilation_w);
defvar Tcc_PoolAttrs = !con((ins I64Attr:$kernel_h, I64Attr:$kernel_w), Tcc_WindowAttrs);

def Tcc_ConvOp : Tcc_Op<"conv", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_ContractionCall]> {
  let callFamily = "conv";
  let summary = "2-D grouped convolution (cross-correlation) of NCHW input";
  let description = [{
    `result[n, m, y, x] = bias[m] + sum over c, i, j of
    input[n, g * C/group + c, y * stride_h - pad_top + i * dilation_h,
    x * stride_w - pad_left + j * dilation_w] * weight[m, c, i, j]`, with
    `g = m / (M / group)` and zeros outside the input. `input` is
    `[N, C, H, W]`, `weight` `[M, C/group, KH, KW]`, `bias` `[M]`.
  }];
  let arguments = !con((ins Tcc_FloatTensor:$input, Tcc_FloatTensor:$weight,
                            Optional<Tcc_FloatTensor>:$bias),
                       Tcc_WindowAttrs, (ins DefaultValuedAttr<I64Attr, "1">:$group));
  let results = (outs Tcc_FloatTensor:$result);
  let extraClassDeclaration = [{ ::tcc::Window2d getWindow(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_MaxPoolOp : Tcc_Op<"max_pool", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_LibraryCall]> {
  let callFamily = "pool";
  let summary = "2-D max pooling of NCHW input";
  let description = [{
    The maximum over each `kernel_h x kernel_w` window (strided, dilated);
    padding never wins. Its gradient goes to the first maximum of each window
    in row-major order, as PyTorch's.
  }];
  let arguments = !con((ins Tcc_FloatTensor:$input), Tcc_PoolAttrs);
  let results = (outs Tcc_FloatTensor:$result);
  let extraClassDeclaration = [{ ::tcc::Window2d getWindow(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_AvgPoolOp : Tcc_Op<"avg_pool", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_LibraryCall]> {
  let callFamily = "pool";
  let summary = "2-D average pooling of NCHW input";
  let description = [{
    The mean over each `kernel_h x kernel_w` window: over all its positions
    padding included when `count_include_pad`, else over the positions inside
    the input.
  }];
  let arguments = !con((ins Tcc_FloatTensor:$input), Tcc_PoolAttrs,
                       (ins DefaultValuedAttr<BoolAttr, "false">:$count_include_pad));
  let results = (outs Tcc_FloatTensor:$result);
  let extraClassDeclaration = [{ ::tcc::Window2d getWindow(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

//===----------------------------------------------------------------------===//
// Contractions and attention
//===----------------------------------------------------------------------===//

def Tcc_MatmulOp : Tcc_Op<"matmul", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_ContractionCall]> {
  let callFamily = "GEMM";
  let summary = "batched matrix product with optional transposes, batch dims broadcast";
  let description = [{
    Operands have rank >= 2; the last two dims are the matrix, optionally
    transposed first, and the leading dims broadcast numpy-style.
  }];
  let arguments = (ins Tcc_FloatTensor:$lhs, Tcc_FloatTensor:$rhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_lhs,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_rhs);
  let results = (outs Tcc_FloatTensor:$result);
  let assemblyFormat = Tcc_GenericFormat;
}

def Tcc_GemmOp : Tcc_Op<"gemm", [Pure, AttrSizedOperandSegments, InferTypeOpAdaptor, Tcc_Vjp, Tcc_ContractionCall]> {
  let callFamily = "GEMM";
  let summary = "alpha * op(a) @ op(b) + bias + beta * c, c broadcast to [M, N]";
  let description = [{
    `op(a)` is `[M, K]` (`a` stored `[K, M]` when `transpose_a`), `op(b)`
    `[K, N]`. The optional `bias` is `[N]`, added to every row: a Linear's
    bias, which tcc-fuse-gemm-epilogue folds in. The optional `c` broadcasts
    to `[M, N]` (ONNX Gemm's C); tcc-fuse-gemm-epilogue folds a residual add
    in as a full `[M, N]` c with beta 1. The library GEMM adds both as it
    writes the result (cuBLASLt's bias epilogue and its C), so the sum is
    rounded once.

    With `with_bias_grad` (and no `bias`: the epilogue is taken) a second
    result `bias_grad` `[M]` holds the sums of op(a)'s rows over K: with
    `op(a) = dY^T` (`transpose_a`, `a` the `[rows, M]` output gradient of a
    Linear) the Linear's bias gradient beside its weight gradient
    `dY^T @ X`, which tcc-fuse-gemm-epilogue folds in. The library GEMM
    sums `a` while it reads it (cuBLASLt's BGRAD epilogue), so the bias
    gradient costs no kernel and no pass of its own over `dY`.
  }];
  let arguments = (ins Tcc_FloatTensor:$a, Tcc_FloatTensor:$b,
                       Optional<Tcc_FloatTensor>:$c,
                       Optional<Tcc_FloatTensor>:$bias,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       DefaultValuedAttr<F64Attr, "1.0">:$beta,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_a,
                       DefaultValuedAttr<BoolAttr, "false">:$transpose_b,
                       DefaultValuedAttr<BoolAttr, "false">:$with_bias_grad);
  let results = (outs Tcc_FloatTensor:$result, Optional<Tcc_FloatTensor>:$bias_grad);
  let assemblyFormat = "$a `,` $b (`,` $c^)? (`bias` $bias^)? attr-dict `:` functional-type(operands, results)";
}

// The token-rows layout of tcc.attention and tcc.attention_grad (heads 0:
// heads first, the other four unused).
defvar Tcc_AttentionRowsAttrs = (ins DefaultValuedAttr<I64Attr, "0">:$heads,
                                     DefaultValuedAttr<I64Attr, "0">:$head_dim,
                                     DefaultValuedAttr<I64Attr, "0">:$query_column,
                                     DefaultValuedAttr<I64Attr, "0">:$key_column,
                                     DefaultValuedAttr<I64Attr, "0">:$value_column);

def Tcc_AttentionOp : Tcc_Op<"attention", [Pure, InferTypeOpAdaptor, Tcc_Vjp, Tcc_ContractionCall]> {
  let callFamily = "attention";
  let summary = "scaled dot-product attention, optionally causal and key-padded";
  let description = [{
    `softmax(scale * q @ k^T + mask) @ v` over `[batch, heads, seq, head_dim]`
    tensors. `causal` hides keys after the query position (aligned at the
    start). The optional `key_mask` is `[batch, kv_seq]`: i1 (true = attend)
    or a float bias added to every query's scores for that key; or i32
    `[batch + 1]`, the `cu_seqlens` of packed tokens (tcc-pack-tokens): the
    flattened (batch, seq) positions are packed rows, row b's tokens are
    rows `[cu_seqlens[b], cu_seqlens[b+1])` and attend only to each other;
    rows past `cu_seqlens[batch]` are padding, written as zero. Or i32
    `[batch * seq + 1]`: the documents of tcc.segment_index (packed
    documents), the same way with one sequence per document. Never needs
    the seq x seq matrix to exist.

    With `heads` > 0 the tensors are token rows instead (a lowered form
    that tcc-fold-attention-layout makes; autodiff takes the heads-first
    one): query `[batch, seq, Wq]`, key and value `[batch, kv_seq, Wk]` and
    `[batch, kv_seq, Wv]`, each token's `heads` heads of `head_dim`
    features at consecutive columns of its row from `query_column`
    (`key_column`, `value_column`); the result is `[batch, seq, heads *
    head_dim]`. So attention reads q, k and v where the projection wrote
    them (one [batch, seq, 3 * heads * head_dim] tensor) and writes what
    the output projection reads, with no head transposes between.
  }];
  let arguments = !con((ins Tcc_FloatTensor:$query, Tcc_FloatTensor:$key,
                       Tcc_FloatTensor:$value, Optional<Tcc_Tensor>:$key_mask,
                       F64Attr:$scale, DefaultValuedAttr<BoolAttr, "false">:$causal),
                       Tcc_AttentionRowsAttrs);
  let results = (outs Tcc_FloatTensor:$result);
  /// The dims and layout (verified).
  let extraClassDeclaration = [{ ::tcc::AttentionDims getDims(); }];
  let assemblyFormat = Tcc_GenericFormat;
}

include "TccGradOps.td"
include "TccTrainOps.td"
include "TccPackOps.td"

#endif // TCC_OPS_TD
