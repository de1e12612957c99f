// The training step's micro-batches one after another: under --accum N the
// step differentiates the N forward passes in one backward pass, which
// leaves them in the order forward 1..N, backward N..1, so every
// micro-batch's activations are live at once. Reordered (the same ops, so
// the same values), micro-batch k's forward and backward pass run before
// micro-batch k+1's, and only the summed gradients carry over.
#include "StepOrder.h"
#include "TrainInternal.h"

#include "tcc/TccOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace tcc::train {

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
  // An op of no micro-batch read only by one micro-batch (that micro-batch's
  // copy of the merged q/k/v weights, tcc-merge-projections) runs with it
  // instead of before every micro-batch, so that it is not live across the
  // micro-batches before it. Readers first (the block in reverse), so a
  // chain of such ops moves as one, and an op's key stays at least its
  // operands'. What several micro-batches read (the label count) stays up
  // front, made once.
  for (Operation &op : llvm::reverse(body)) {
    if (group.lookup(&op) != 0 || keepsPlace(&op) || op.use_empty())
      continue;
    std::optional<int64_t> only;
    for (Operation *user : op.getUsers()) {
      int64_t g = group.lookup(user);
      if (g == 0 || keepsPlace(user) || (only && *only != g)) {
        only = std::nullopt;
        break;
      }
      only = g;
    }
    if (only)
      group[&op] = *only;
  }
  // Between ops that keep their place, a stable sort by micro-batch: an
  // op's micro-batch is never below its operands' and ties keep the old
  // order, so it is a topological order. Then an op that joins two
  // micro-batches (a gradient sum, the loss sum) moves up to right after
  // its last operand, so the sum replaces its terms as soon as it can.
  int64_t moved = 0;
  auto joinEarly = [&](ArrayRef<Operation *> run) {
    llvm::DenseSet<Operation *> inRun(run.begin(), run.end());
    for (Operation *op : run) {
      llvm::SmallSetVector<int64_t, 2> groups;
      Operation *last = nullptr;
      for (Value v : op->getOperands()) {
        Operation *def = v.getDefiningOp();
        if (!def || !inRun.contains(def))
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
  moved += sortBetweenFixedOps(body, group, joinEarly);
  return moved;
}

} // namespace tcc::train
