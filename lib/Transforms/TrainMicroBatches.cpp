// The training step's micro-batches one after another: under --accum N the
// step differentiates the N forward passes in one backward pass, which
// leaves them in the order forward 1..N, backward N..1, so every
// micro-batch's activations are live at once. Reordered (the same ops, so
// the same values), micro-batch k's forward and backward pass run before
// micro-batch k+1's, and only the summed gradients carry over.
#include "TrainInternal.h"

#include "tcc/TccOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;

namespace tcc::train {

namespace {

/// Whether `op` keeps its place: a terminator, an op with side effects
/// (an optimizer update, a collective) or regions, or not a tcc op.
bool fixedInPlace(Operation *op) {
  return !llvm::isa<TccDialect>(op->getDialect()) ||
         llvm::isa<InPlaceOpInterface>(op) || op->getNumRegions() != 0 ||
         !isMemoryEffectFree(op);
}

} // namespace

int64_t runMicroBatchesInOrder(func::FuncOp step, ValueRange batch) {
  Block &body = step.getBody().front();
  // An op's micro-batch: the last one whose slice of the batch it depends
  // on (0: none, e.g. the label count, the learning rate).
  llvm::DenseMap<Operation *, int64_t> group;
  for (Operation &op : body) {
    int64_t g = 0;
    if (auto slice = llvm::dyn_cast<SliceOp>(op);
        slice && llvm::is_contained(batch, slice.getInput()))
      g = slice.getStarts()[0] + 1;
    for (Value v : op.getOperands())
      if (Operation *def = v.getDefiningOp())
        g = std::max(g, group.lookup(def));
    group[&op] = g;
  }
  // Between ops that keep their place, a stable sort by micro-batch: an
  // op's micro-batch is never below its operands' and ties keep the old
  // order, so it is a topological order. Then an op that joins two
  // micro-batches (a gradient sum, the loss sum) moves up to right after
  // its last operand, so the sum replaces its terms as soon as it can.
  int64_t moved = 0;
  auto reorder = [&](ArrayRef<Operation *> segment, Operation *end) {
    SmallVector<Operation *> sorted(segment);
    llvm::stable_sort(sorted, [&](Operation *x, Operation *y) {
      return group.lookup(x) < group.lookup(y);
    });
    for (auto [was, now] : llvm::zip(segment, sorted))
      moved += was != now;
    for (Operation *op : sorted)
      op->moveBefore(end);
    llvm::DenseMap<Operation *, unsigned> inSegment;
    for (auto [i, op] : llvm::enumerate(sorted))
      inSegment[op] = i;
    for (Operation *op : sorted) {
      llvm::SmallSetVector<int64_t, 2> groups;
      Operation *last = nullptr;
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !inSegment.count(def))
          continue;
        if (int64_t g = group.lookup(def))
          groups.insert(g);
        if (!last || last->isBeforeInBlock(def))
          last = def;
      }
      if (groups.size() > 1 && last->getNextNode() != op) {
        op->moveAfter(last);
        ++moved;
      }
    }
  };
  SmallVector<Operation *> segment;
  for (Operation &op : llvm::make_early_inc_range(body)) {
    if (fixedInPlace(&op)) {
      reorder(segment, &op);
      segment.clear();
    } else {
      segment.push_back(&op);
    }
  }
  return moved;
}

} // namespace tcc::train
