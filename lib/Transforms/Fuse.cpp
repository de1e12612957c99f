// Groups elementwise producer -> consumer chains into exec.fusion kernels.
//
// Groups are grown backwards from a root (the last op of the chain), taking a
// producer only when every use of it is already inside the group. So no value
// is computed twice, and the group is convex (no path leaves it and comes
// back), which is what makes replacing it by one op legal.
#include "exec/ExecOps.h"
#include "tcc/Transforms/Fuse.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace tcc {
#define GEN_PASS_DEF_FUSE
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

bool tcc::launchesKernel(Operation *op) {
  return !op->hasTrait<OpTrait::IsTerminator>() &&
         !llvm::isa<ConstantOp, GetParamOp, ReshapeOp>(op);
}

unsigned tcc::countKernelLaunches(Block &block) {
  return llvm::count_if(block, [](Operation &op) { return launchesKernel(&op); });
}

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// One fusion group: its ops (root last once sorted) in a set for lookup.
using Group = llvm::SetVector<Operation *>;

/// Grows the group rooted at `root`: repeatedly absorbs an operand's
/// producer of the root's shape whose uses are all in the group, until
/// nothing changes (a producer used twice may qualify only once both of its
/// users are in).
void growGroup(Operation *root, Group &group,
               const llvm::DenseSet<Operation *> &taken) {
  Block *block = root->getBlock();
  ArrayRef<int64_t> shape = shapeOf(root->getResult(0));
  group.insert(root);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < group.size(); ++i) {
      for (Value operand : group[i]->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != block || group.contains(def) ||
            taken.contains(def) || !exec::isFusibleOp(def) ||
            shapeOf(def->getResult(0)) != shape)
          continue;
        if (!llvm::all_of(def->getUsers(),
                          [&](Operation *u) { return group.contains(u); }))
          continue;
        group.insert(def);
        changed = true;
      }
    }
  }
}

/// Replaces the ops of `group` (root = `root`) by one exec.fusion.
void outlineGroup(Operation *root, Group &group, StringRef name) {
  SmallVector<Operation *> ops(group.begin(), group.end());
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });

  // Operands from outside become kernel parameters (each value once); splat
  // constants are cloned in, since a kernel embeds them as immediates.
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> constants;
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && group.contains(def))
        continue;
      if (def && exec::isSplatConstant(def))
        constants.insert(def);
      else
        inputs.insert(operand);
    }

  OpBuilder builder(root);
  SmallVector<Type> inputTypes;
  SmallVector<Location> inputLocs;
  for (Value v : inputs) {
    inputTypes.push_back(v.getType());
    inputLocs.push_back(v.getLoc());
  }
  auto fusion = exec::FusionOp::create(
      builder, root->getLoc(), root->getResult(0).getType(),
      builder.getStringAttr(name), inputs.getArrayRef());
  Block *body =
      builder.createBlock(&fusion.getBody(), {}, inputTypes, inputLocs);
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  for (Operation *c : constants)
    builder.clone(*c, mapping);
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  exec::YieldOp::create(builder, root->getLoc(),
                        mapping.lookup(root->getResult(0)));

  root->getResult(0).replaceAllUsesWith(fusion.getResult());
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
}

struct FusePass : tcc::impl::FuseBase<FusePass> {
  using FuseBase::FuseBase;

  void runOnOperation() override {
    // Names stay unique in the module when the pass runs again.
    unsigned counter = 0;
    getOperation().walk([&](exec::FusionOp) { ++counter; });
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      unsigned before = 0, after = 0;
      for (Block &block : func.getBody()) {
        before += countKernels(block);
        fuseBlock(block, counter);
        after += countKernels(block);
      }
      kernelsBefore += before;
      kernelsAfter += after;
      if (report)
        emitRemark(func.getLoc())
            << "tcc-fuse: @" << func.getSymName() << ": " << before
            << " kernels before fusion, " << after << " after";
    });
  }

  static unsigned countKernels(Block &block) { return countKernelLaunches(block); }

  void fuseBlock(Block &block, unsigned &counter) {
    // Groups are chosen first and outlined after, so the walk sees the
    // original ops and use lists.
    llvm::DenseSet<Operation *> taken;
    SmallVector<std::pair<Operation *, Group>> groups;
    for (Operation &op : llvm::reverse(block)) {
      if (taken.contains(&op) || !exec::isFusibleOp(&op))
        continue;
      Group group;
      growGroup(&op, group, taken);
      taken.insert(group.begin(), group.end());
      groups.emplace_back(&op, std::move(group));
    }
    // Outlined in program order, so kernel names follow the step's order.
    for (auto &[root, group] : llvm::reverse(groups))
      outlineGroup(root, group, ("fused_" + llvm::Twine(counter++)).str());
  }
};

} // namespace
