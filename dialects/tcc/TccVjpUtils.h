// Helpers shared by the gradient rules (TccVjp*.cpp): building constants and
// undoing numpy broadcasting, so each rule reads like its formula.
#ifndef TCC_DIALECT_TCC_TCCVJPUTILS_H
#define TCC_DIALECT_TCC_TCCVJPUTILS_H

#include "tcc/TccOps.h"

namespace tcc {

/// True for a ranked tensor of floats: the values that carry gradients.
bool isFloatTensor(mlir::Value v);

/// A constant of tensor type `type` with every element `value`.
mlir::Value splatLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                      double value);

/// A rank-0 constant of `type`'s element type: the cheap operand of a
/// broadcasting binary op.
mlir::Value scalarLike(mlir::OpBuilder &b, mlir::Location loc, mlir::Type type,
                       double value);

inline mlir::Value zerosLike(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::Type type) {
  return splatLike(b, loc, type, 0.0);
}

/// The gradient of a value numpy-broadcast from `target` to `grad`'s shape:
/// `grad` summed over the leading dims `target` lacks and over the dims where
/// `target` has size 1, reshaped to `target`. Returns `grad` itself when
/// nothing was broadcast.
mlir::Value sumToShape(mlir::OpBuilder &b, mlir::Location loc, mlir::Value grad,
                       mlir::RankedTensorType target);

/// `mask` (i1) as 0/1 of `type`'s element type, with the mask's shape.
mlir::Value maskToFloat(mlir::OpBuilder &b, mlir::Location loc,
                        mlir::Value mask, mlir::Type type);

/// A tcc.cmp of two broadcast-compatible values.
mlir::Value compare(mlir::OpBuilder &b, mlir::Location loc, CmpPredicate pred,
                    mlir::Value lhs, mlir::Value rhs);

/// Reshapes the result of a reduction over `axes` without keepdims back to
/// its keepdims form (size-1 reduced dims), so it broadcasts against the
/// reduction's input. A no-op with keepdims.
mlir::Value restoreReducedDims(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Value reduced,
                               mlir::RankedTensorType input,
                               llvm::ArrayRef<int64_t> axes);

} // namespace tcc

#endif // TCC_DIALECT_TCC_TCCVJPUTILS_H
