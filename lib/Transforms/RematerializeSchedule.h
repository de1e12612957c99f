// tcc-rematerialize's reordering of @train_step (RematerializeSchedule.cpp).
#ifndef TCC_LIB_TRANSFORMS_REMATERIALIZESCHEDULE_H
#define TCC_LIB_TRANSFORMS_REMATERIALIZESCHEDULE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <algorithm>

namespace tcc::remat {

/// Moves each in-place update (an optimizer step) of `step` up to right
/// after the producers of its operands and the other readers of the
/// storage it overwrites, with the scalar ops it reads. Returns the number
/// of updates moved.
int64_t updateEarly(mlir::func::FuncOp step);

/// Moves each op of `step` down to right before its first reader when no
/// operand's storage lives longer for it, never past an update that
/// overwrites an argument it reads. Returns the number of ops moved.
int64_t sinkLate(mlir::func::FuncOp step);

/// Interleaves the backward passes of @train_step's micro-batches: the
/// step builder runs micro-batch k's forward and backward pass before
/// k+1's (only the gradient sums carry over); this order runs every
/// forward pass first and then the ops that are not the forward's, between
/// the ops with side effects, by the forward depth they differentiate, so
/// the micro-batches' gradients for one layer are made and summed
/// together, and no micro-batch's gradient set waits for the next one.
/// Returns the number of ops that changed place.
int64_t interleaveBackward(mlir::func::FuncOp step);

/// The bytes of a tensor of ints or floats (an i1 takes one), else 0.
inline int64_t bytesOf(mlir::Type type) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(type);
  if (!t || !t.getElementType().isIntOrFloat())
    return 0;
  int64_t width = std::max<int64_t>(8, t.getElementTypeBitWidth());
  return t.getNumElements() * (width / 8);
}

/// What blockWeightGradients did.
struct BlockedGradients {
  int64_t gradients = 0; ///< weight gradients made in row blocks
  int64_t blocks = 0;    ///< the blocks they were cut into, together
};

/// Cuts each weight gradient of `step` larger than `arenaTarget / divisor`
/// bytes that a 2-D GEMM makes for its optimizer update alone (directly or
/// through a cast to the parameter's type) into blocks
/// of whole rows of at most that size (RematerializeBlocks.cpp): per
/// block, a GEMM over a slice of the rows' operand and an update of those
/// elements of the parameter (element_offset), reading the previous
/// block's update. Each element is the same dot product as before.
BlockedGradients blockWeightGradients(mlir::func::FuncOp step,
                                      int64_t arenaTarget, int64_t divisor);

/// The storage `v` is or views (through View ops).
mlir::Value storageOf(mlir::Value v);

} // namespace tcc::remat

#endif // TCC_LIB_TRANSFORMS_REMATERIALIZESCHEDULE_H
