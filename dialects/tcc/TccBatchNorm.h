// tcc.batch_norm (TccBatchNorm.td) and its expansion into tcc ops.
#ifndef TCC_DIALECT_TCC_TCCBATCHNORM_H
#define TCC_DIALECT_TCC_TCCBATCHNORM_H

#include "tcc/TccOps.h"

#define GET_OP_CLASSES
#include "tcc/TccBatchNorm.h.inc"

#include <optional>
#include <string>

namespace tcc {

/// How tcc.batch_norm is expanded.
enum class BatchNormMode {
  /// As its `training` attribute says, with ONNX's running statistics.
  AsOp,
  /// PyTorch's model.train(): batch statistics; the running variance is
  /// updated with the unbiased batch variance (n / (n - 1)).
  Train,
  /// PyTorch's model.eval(): the running statistics.
  Eval,
};

/// The op's three results as tcc ops (reductions and elementwise ops) built
/// at b's insertion point; the op itself is left alone.
struct BatchNormValues {
  mlir::Value result, newMean, newVar;
};
BatchNormValues expandBatchNorm(mlir::OpBuilder &b, BatchNormOp op,
                                BatchNormMode mode);

/// PyTorch's name of the step counter of the batch norm whose running mean
/// is the parameter `runningMean` (`bn1.running_mean` ->
/// `bn1.num_batches_tracked`); none when the name is not PyTorch's.
std::optional<std::string> batchCounterName(llvm::StringRef runningMean);

} // namespace tcc

#endif // TCC_DIALECT_TCC_TCCBATCHNORM_H
