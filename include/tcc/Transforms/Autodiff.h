// Reverse-mode automatic differentiation over DifferentiableOpInterface.
#ifndef TCC_TRANSFORMS_AUTODIFF_H
#define TCC_TRANSFORMS_AUTODIFF_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace tcc {

/// Emits at `builder`'s insertion point the backward pass of the straight-line
/// ops in `loss`'s block that lie between `wrt` and `loss`, seeded with
/// d(loss)/d(loss) = `seed` (a value of loss's type, usually 1). Returns one
/// gradient per `wrt` value, of its type (zeros where the loss does not
/// depend on it). Values with several uses get their gradients summed.
/// Fails, with a diagnostic on the op, when an op on the path from a `wrt`
/// value to `loss` has no gradient rule. With `wrtInUseOrder` a `wrt`
/// value's contributions are summed after the backward pass in the order of
/// its uses (the first use's first: ((g1 + g2) + g3) ...), not as they
/// arrive (the last use's first), so a step whose micro-batches run one
/// after another (--accum) keeps one running sum per parameter.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildGradients(mlir::OpBuilder &builder, mlir::Value loss, mlir::Value seed,
               mlir::ValueRange wrt, bool wrtInUseOrder = false);

} // namespace tcc

#endif // TCC_TRANSFORMS_AUTODIFF_H
