// Reordering a step function's ops (the same ops, so the same values):
// which ops keep their place, and a stable sort of the ops between them.
// Used by the step builder (TrainMicroBatches.cpp) and tcc-rematerialize
// (RematerializeSchedule.cpp).
#ifndef TCC_LIB_TRANSFORMS_STEPORDER_H
#define TCC_LIB_TRANSFORMS_STEPORDER_H

#include "mlir/IR/Block.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace tcc {

/// Whether `op` keeps its place when a step is reordered: a terminator, an
/// op with side effects (an optimizer update, a collective) or regions, or
/// an op outside the tcc dialect.
bool keepsPlace(mlir::Operation *op);

/// Stably sorts the ops of `block` between the ops that keep their place
/// by `key`, and calls `done` with each run in its new order. `key` must
/// be at least its operands' key for every op (ties keep the old order), so
/// the result is a topological order. Returns the number of ops whose
/// place changed.
int64_t sortBetweenFixedOps(
    mlir::Block &block, const llvm::DenseMap<mlir::Operation *, int64_t> &key,
    llvm::function_ref<void(llvm::ArrayRef<mlir::Operation *>)> done = {});

} // namespace tcc

#endif // TCC_LIB_TRANSFORMS_STEPORDER_H
