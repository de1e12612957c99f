// What counts as a kernel launch, shared by tcc-fuse's report and the
// compile report so both count the same way.
#ifndef TCC_TRANSFORMS_FUSE_H
#define TCC_TRANSFORMS_FUSE_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/StringRef.h"

namespace tcc {

/// On a forward op whose value tcc-rematerialize recomputes and on its
/// clone, when the backward pass read that value (so the plan without a
/// budget stored it): under 16 bits tcc-fuse never absorbs such an op into
/// a reader, so both stay their kernels' results and round the same.
inline constexpr llvm::StringLiteral kRematStoredAttr = "tcc.remat_stored";

/// Ops that are one kernel launch (or library call) each. Constants,
/// parameter reads and reshapes are views or data, not launches.
bool launchesKernel(mlir::Operation *op);

/// The launches of one block.
unsigned countKernelLaunches(mlir::Block &block);

} // namespace tcc

#endif // TCC_TRANSFORMS_FUSE_H
