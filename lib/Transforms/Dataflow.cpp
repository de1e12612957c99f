#include "Dataflow.h"

#include "mlir/IR/Block.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/SmallVector.h"

using namespace mlir;

namespace tcc {

bool dependsOn(Operation *op, Value v) {
  Operation *def = v.getDefiningOp();
  SmallVector<Operation *> work = {op};
  llvm::SmallPtrSet<Operation *, 32> seen = {op};
  while (!work.empty()) {
    Operation *cur = work.pop_back_val();
    for (Value operand : cur->getOperands()) {
      if (operand == v)
        return true;
      Operation *prev = operand.getDefiningOp();
      // Ops before v's definition cannot read it.
      if (!prev || prev->getBlock() != op->getBlock() ||
          (def && def->getBlock() == prev->getBlock() &&
           prev->isBeforeInBlock(def)))
        continue;
      if (seen.insert(prev).second)
        work.push_back(prev);
    }
  }
  return false;
}

} // namespace tcc
