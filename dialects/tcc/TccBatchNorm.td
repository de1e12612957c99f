// tcc.batch_norm: kept whole from import to tcc-build-train-step, which
// picks its mode per step function. Its own .td (not included by
// TccOps.td) so that only the files that name it include its header.
#ifndef TCC_BATCH_NORM_TD
#define TCC_BATCH_NORM_TD

include "TccDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Tcc_BatchNormOp : Op<Tcc_Dialect, "batch_norm", [Pure,
    AllTypesMatch<["input", "result"]>,
    AllTypesMatch<["scale", "bias", "mean", "var", "new_mean", "new_var"]>]> {
  let summary = "batch normalisation over dim 1 (ONNX BatchNormalization)";
  let description = [{
    `input` is `[N, C, ...]`; `scale`, `bias`, `mean` and `var` are `[C]`.
    `y = (input - m) / sqrt(v + epsilon) * scale + bias` per channel. With
    `training`, `m` and `v` are the batch's mean and biased variance over
    every dim but 1, and `new_mean = mean * momentum + m * (1 - momentum)`,
    `new_var = var * momentum + v * (1 - momentum)` (ONNX's running
    statistics; `momentum` is ONNX's, PyTorch's is `1 - momentum`).
    Without it, `m = mean`, `v = var`, and `new_mean`, `new_var` are `mean`
    and `var`.

    The op exists so that the training-step builder can choose the mode as
    PyTorch's `model.train()` / `model.eval()` do, whatever mode the
    exporter wrote: `@train_step` normalises with the batch's statistics and
    updates the running ones with PyTorch's unbiased variance, `@eval_step`
    uses the running ones. Elsewhere (`@forward` lowered for inference) it
    is expanded as its `training` attribute says.
  }];
  let arguments = (ins StaticShapeTensorOf<[AnyFloat]>:$input,
                       StaticShapeTensorOf<[AnyFloat]>:$scale,
                       StaticShapeTensorOf<[AnyFloat]>:$bias,
                       StaticShapeTensorOf<[AnyFloat]>:$mean,
                       StaticShapeTensorOf<[AnyFloat]>:$var,
                       F64Attr:$epsilon, F64Attr:$momentum,
                       UnitAttr:$training);
  let results = (outs StaticShapeTensorOf<[AnyFloat]>:$result,
                      StaticShapeTensorOf<[AnyFloat]>:$new_mean,
                      StaticShapeTensorOf<[AnyFloat]>:$new_var);
  let assemblyFormat = [{
    $input `,` $scale `,` $bias `,` $mean `,` $var attr-dict `:`
    type($input) `,` type($mean)
  }];
  let hasVerifier = 1;
}

#endif // TCC_BATCH_NORM_TD
