// tcc-rematerialize's reordering of @train_step: the same ops in an order
// that frees memory sooner (updates up to their gradients, ops down to
// their first reader). Only the order changes, so the values do not.
#include "RematerializeSchedule.h"
#include "StepOrder.h"

#include "tcc/TccOps.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

#include <limits>

using namespace mlir;

namespace tcc::remat {

namespace {

int64_t elements(Type type) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  return t ? t.getNumElements() : 0;
}

/// Whether `op` computes a scalar from scalar arguments and constants only
/// (the learning rate, AdamW's step count), so it may move anywhere earlier
/// at no cost.
bool scalarOnly(Operation *op, llvm::DenseMap<Operation *, bool> &memo) {
  if (auto it = memo.find(op); it != memo.end())
    return it->second;
  auto scalar = [](Value v) { return elements(v.getType()) <= 1; };
  bool only = op->getNumRegions() == 0 && isMemoryEffectFree(op) &&
              llvm::all_of(op->getResults(), scalar);
  for (Value v : op->getOperands()) {
    if (!only)
      break;
    if (Operation *def = v.getDefiningOp())
      only = scalarOnly(def, memo);
    else
      only = scalar(v);
  }
  return memo[op] = only;
}

} // namespace

/// Moves each in-place update (an optimizer step) of `step` up to right
/// after the last op it must follow: the producers of its operands (the
/// gradient) and the other readers of the storage it overwrites (the
/// parameter's last use in the backward), with the argument-only ops it
/// reads (the learning rate and step count). Its gradient then dies at once
/// instead of living to the end of the backward pass. The same ops compute the
/// same values: only the order changes. Returns the number of updates moved.
int64_t updateEarly(func::FuncOp step) {
  Block &body = step.getBody().front();
  SmallVector<Operation *> updates;
  for (Operation &op : body)
    if (llvm::isa<InPlaceOpInterface>(op))
      updates.push_back(&op);
  llvm::DenseMap<Operation *, bool> memo;
  int64_t moved = 0;
  for (Operation *update : updates) {
    Operation *anchor = nullptr;
    auto follow = [&](Operation *op) {
      op = body.findAncestorOpInBlock(*op);
      if (op && op != update && (!anchor || anchor->isBeforeInBlock(op)))
        anchor = op;
    };
    llvm::SetVector<Operation *> chain;
    SmallVector<Value> work(update->getOperands());
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (llvm::isa<BlockArgument>(v)) {
        for (Operation *user : v.getUsers())
          follow(user);
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (!scalarOnly(def, memo)) {
        follow(def);
      } else if (chain.insert(def)) {
        for (Value operand : def->getOperands())
          if (!llvm::isa<BlockArgument>(operand))
            work.push_back(operand);
      }
    }
    if (!anchor || !anchor->isBeforeInBlock(update) ||
        anchor->getNextNode() == update)
      continue;
    SmallVector<Operation *> late;
    for (Operation *op : chain)
      if (anchor->isBeforeInBlock(op))
        late.push_back(op);
    llvm::sort(
        late, [](Operation *x, Operation *y) { return x->isBeforeInBlock(y); });
    // anchor, the late scalar ops in their order, the update.
    update->moveAfter(anchor);
    for (Operation *op : llvm::reverse(late))
      op->moveAfter(anchor);
    ++moved;
  }
  return moved;
}

namespace {

/// The ops that read `v`'s storage: its users and, through views, theirs.
void storageReaders(Value v, SmallVectorImpl<Operation *> &readers) {
  for (Operation *user : v.getUsers()) {
    readers.push_back(user);
    if (user->hasTrait<OpClass::View>())
      for (Value r : user->getResults())
        storageReaders(r, readers);
  }
}

/// The block arguments whose storage `v` is or views.
void argumentsOf(Value v, llvm::SmallSetVector<Value, 4> &args) {
  if (llvm::isa<BlockArgument>(v)) {
    args.insert(v);
    return;
  }
  Operation *def = v.getDefiningOp();
  if (def->hasTrait<OpClass::View>())
    for (Value operand : def->getOperands())
      argumentsOf(operand, args);
}

} // namespace

/// Moves each op of `step` down to right before the first op that reads
/// one of its results, when that keeps every operand's storage alive no
/// longer than before (each operand is read again there or later, or is an
/// argument): its result then is not live across the ops it passes, and
/// nothing else is. It never passes an in-place update that overwrites an
/// argument it reads. The backward pass computes the gradient of an
/// activation (dy W^T) before the weight's gradient (x^T dy) that shares
/// its operand; sunk, the first is not live beside the second's per-batch
/// product. The same ops compute the same values: only the order changes.
/// Returns the number of ops moved.
int64_t sinkLate(func::FuncOp step) {
  Block &body = step.getBody().front();
  SmallVector<Operation *> ops;
  for (Operation &op : body)
    ops.push_back(&op);
  int64_t moved = 0;
  for (Operation *op : llvm::reverse(ops)) {
    if (op->hasTrait<OpTrait::IsTerminator>() ||
        op->hasTrait<OpClass::View>() || llvm::isa<InPlaceOpInterface>(op) ||
        op->getNumRegions() != 0 || op->getNumResults() == 0 ||
        !isMemoryEffectFree(op))
      continue;
    Operation *target = nullptr;
    auto bound = [&](Operation *user) {
      user = body.findAncestorOpInBlock(*user);
      if (user && (!target || user->isBeforeInBlock(target)))
        target = user;
    };
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        bound(user);
    llvm::SmallSetVector<Value, 4> args;
    for (Value v : op->getOperands())
      argumentsOf(v, args);
    for (Value arg : args)
      for (Operation *user : arg.getUsers())
        if (llvm::isa<InPlaceOpInterface>(user) && op->isBeforeInBlock(user))
          bound(user);
    if (!target || op->getNextNode() == target)
      continue;
    bool extends = llvm::any_of(op->getOperands(), [&](Value v) {
      Value root = storageOf(v);
      if (llvm::isa<BlockArgument>(root) || elements(root.getType()) <= 1 ||
          llvm::isa_and_present<ConstantOp, GetParamOp>(root.getDefiningOp()))
        return false;
      SmallVector<Operation *> readers;
      storageReaders(root, readers);
      return llvm::none_of(readers, [&](Operation *reader) {
        reader = body.findAncestorOpInBlock(*reader);
        return reader && reader != op && !reader->isBeforeInBlock(target);
      });
    });
    if (extends)
      continue;
    op->moveBefore(target);
    ++moved;
  }
  return moved;
}

/// Interleaves the micro-batches' backward passes: the forward passes
/// (the loss and what it depends on) come first, in their order, and every
/// other op gets a key, the forward depth it differentiates (the longest
/// path from the forward value it reads to the loss; the largest key of
/// the backward values it reads when that is larger, the smallest of its
/// readers' keys when it reads neither), and the ops between two ops with
/// side effects (updates, collectives) are stably sorted by key. A value's
/// key is never above its readers' and ties keep the old order, so the
/// order is a topological one. The micro-batches' forward passes are
/// clones, so their ops for one layer have the same depth: their
/// gradients for a weight are made one after the other and summed at
/// once, instead of one micro-batch's whole gradient set waiting for the
/// other's backward pass. The same ops compute the same values.
int64_t interleaveBackward(func::FuncOp step) {
  Block &body = step.getBody().front();
  Operation *ret = body.getTerminator();
  Operation *loss = ret->getNumOperands() ? ret->getOperand(0).getDefiningOp()
                                          : nullptr;
  if (!loss || loss->getBlock() != &body)
    return 0;
  // The forward: the loss and what it depends on, with each op's depth.
  llvm::DenseSet<Operation *> forward;
  SmallVector<Operation *> work{loss};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    if (!forward.insert(op).second)
      continue;
    for (Value v : op->getOperands())
      if (Operation *def = v.getDefiningOp(); def && def->getBlock() == &body)
        work.push_back(def);
  }
  llvm::DenseMap<Operation *, int64_t> depth;
  for (Operation &op : llvm::reverse(body)) {
    if (!forward.contains(&op))
      continue;
    int64_t d = 0;
    for (Value r : op.getResults())
      for (Operation *user : r.getUsers())
        if (auto it = depth.find(user); it != depth.end())
          d = std::max(d, it->second + 1);
    depth[&op] = d;
  }
  SmallVector<Operation *> region;
  for (Operation &op : body)
    if (&op != ret)
      region.push_back(&op);
  // The forward first (in its order), then the rest by depth.
  constexpr int64_t kUnset = -1, kForward = -2;
  llvm::DenseMap<Operation *, int64_t> key;
  for (Operation *op : region) {
    if (forward.contains(op)) {
      key[op] = kForward;
      continue;
    }
    int64_t fromForward = kUnset, fromBackward = kUnset;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      if (auto it = depth.find(def); it != depth.end()) {
        if (elements(v.getType()) > 1 && !llvm::isa<ConstantOp>(def))
          fromForward = fromForward == kUnset
                            ? it->second
                            : std::min(fromForward, it->second);
      } else if (auto k = key.find(def); k != key.end() && k->second >= 0) {
        fromBackward = std::max(fromBackward, k->second);
      }
    }
    int64_t k = std::max(fromForward, fromBackward);
    if (k != kUnset)
      key[op] = k;
  }
  for (Operation *op : llvm::reverse(region)) {
    if (key.count(op))
      continue;
    int64_t k = std::numeric_limits<int64_t>::max();
    for (Value r : op->getResults())
      for (Operation *user : r.getUsers())
        if (auto it = key.find(user); it != key.end())
          k = std::min(k, it->second);
    key[op] = k;
  }
  return sortBetweenFixedOps(body, key);
}

/// The storage `v` is or views.
Value storageOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (!def->hasTrait<OpClass::View>() || def->getNumOperands() == 0)
      break;
    v = def->getOperand(0);
  }
  return v;
}

} // namespace tcc::remat
