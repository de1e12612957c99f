// Dataflow questions the epilogue folds (tcc-fuse-gemm-epilogue,
// tcc-fuse-layer-norm-grad) ask about a step function's top-level ops.
#ifndef TCC_LIB_TRANSFORMS_DATAFLOW_H
#define TCC_LIB_TRANSFORMS_DATAFLOW_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

namespace tcc {

/// Whether `op` reads `v`, directly or through the ops between them (in
/// `op`'s block). Then `v` comes before `op` in every order of the block,
/// whatever rematerialisation and the micro-batch interleaving do to it, so
/// a fold that asks this folds every copy of a pattern alike.
bool dependsOn(mlir::Operation *op, mlir::Value v);

} // namespace tcc

#endif // TCC_LIB_TRANSFORMS_DATAFLOW_H
