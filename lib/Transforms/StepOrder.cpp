// Reordering a step function's ops between the ops that keep their place.
#include "StepOrder.h"

#include "tcc/TccOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace tcc {

bool keepsPlace(Operation *op) {
  return !llvm::isa<TccDialect>(op->getDialect()) ||
         llvm::isa<InPlaceOpInterface>(op) || op->getNumRegions() != 0 ||
         !isMemoryEffectFree(op);
}

int64_t
sortBetweenFixedOps(Block &block,
                    const llvm::DenseMap<Operation *, int64_t> &key,
                    llvm::function_ref<void(ArrayRef<Operation *>)> done) {
  int64_t moved = 0;
  auto sort = [&](ArrayRef<Operation *> run, Block::iterator end) {
    SmallVector<Operation *> sorted(run);
    llvm::stable_sort(sorted, [&](Operation *x, Operation *y) {
      return key.lookup(x) < key.lookup(y);
    });
    for (auto [was, now] : llvm::zip(run, sorted))
      moved += was != now;
    for (Operation *op : sorted)
      op->moveBefore(&block, end);
    if (done)
      done(sorted);
  };
  SmallVector<Operation *> run;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (keepsPlace(&op)) {
      sort(run, Block::iterator(&op));
      run.clear();
    } else {
      run.push_back(&op);
    }
  }
  // A block still being built has no terminator yet.
  sort(run, block.end());
  return moved;
}

} // namespace tcc
