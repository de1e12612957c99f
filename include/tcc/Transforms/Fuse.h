// What counts as a kernel launch, shared by tcc-fuse's report and the
// compile report so both count the same way.
#ifndef TCC_TRANSFORMS_FUSE_H
#define TCC_TRANSFORMS_FUSE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"

namespace tcc {

/// Ops that are one kernel launch (or library call) each. Constants,
/// parameter reads and reshapes are views or data, not launches.
bool launchesKernel(mlir::Operation *op);

/// The launches of one block.
unsigned countKernelLaunches(mlir::Block &block);

} // namespace tcc

#endif // TCC_TRANSFORMS_FUSE_H
