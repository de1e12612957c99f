// Groups producer -> consumer chains into exec.fusion kernels: elementwise
// ops around one layout or reduction op (exec::isStructuredOp) or one chain
// of layout ops with the reshapes between them (exec::isLayoutOp).
//
// Groups are grown backwards from a root (the last op of the chain), taking a
// producer only when every use of it is already inside the group, or, for a
// store, every use outside comes after the kernel. So no value is computed
// twice, and the group is convex (no path leaves it and comes back), which
// is what makes replacing it by one op legal. A layout chain's
// ops each have one use (the next op), so it is a tree under its last op.
// tcc.split is first rewritten into one tcc.slice per result (a kernel has
// one result). A reduction's kernel may also store prologue values that
// other ops read (exec.fusion's stores): a bias gradient's sum and the
// gradient the GEMMs read are one kernel.
#include "exec/ExecOps.h"
#include "exec/MemoryPlan.h"
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
  return !op->hasTrait<mlir::OpTrait::IsTerminator>() &&
         !op->hasTrait<tcc::OpClass::View>() &&
         !llvm::isa<ConstantOp, GetParamOp>(op);
}

unsigned tcc::countKernelLaunches(Block &block) {
  return llvm::count_if(block, [](Operation &op) { return launchesKernel(&op); });
}

namespace {

ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// Where an op of a group is computed: in the kernel's result iteration
/// space (the structured op, its epilogue, every op of an elementwise group)
/// or in the space of what the structured op (or a layout op of its chain)
/// reads (its prologue).
enum class Space { Output, Prologue };

/// One fusion group: its ops (root first, then in the order absorbed), the
/// space of each, its structured op, if any, and the layout ops and
/// reshapes below that op in its layout chain.
struct Group {
  llvm::SetVector<Operation *> ops;
  llvm::DenseMap<Operation *, Space> space;
  /// The structured op nearest the kernel's result (of a chain: its top).
  Operation *structured = nullptr;
  /// The layout ops and reshapes feeding `structured` in its chain.
  llvm::DenseSet<Operation *> chain;
  /// Whether an elementwise root may take a structured producer as its
  /// group's structured op (off when that would delay it, see fuseBlock).
  bool epilogueMayTakeStructured = true;
  /// Prologue ops of a reduction that other ops read too: the kernel also
  /// stores their values (exec.fusion's results 1..), in this order.
  llvm::SetVector<Operation *> stores;
  /// Whether the group may take stores: not where the memory plan lets an
  /// elementwise kernel's result take a dying operand's storage
  /// (exec.reuse_operands, under a tight --memory-budget), which a
  /// reduction's kernel never gets (readsElementwise), so a store there
  /// would cost the plan that operand's bytes.
  bool storesAllowed = true;

  bool contains(Operation *op) const { return ops.contains(op); }
  bool inChain(Operation *op) const {
    return op == structured || chain.contains(op);
  }
  /// Whether the group's chain may grow below `user`: the group's
  /// structured op is a layout op and `user` is in its chain.
  bool chainGrowsBelow(Operation *user) const {
    return structured && exec::isLayoutOp(structured) && inChain(user);
  }
  /// The space in which `user` (in the group) reads its operands.
  Space readSpace(Operation *user) const {
    return inChain(user) ? Space::Prologue : space.lookup(user);
  }
};

bool isHalfTensor(Type t) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(t);
  return tensor && (tensor.getElementType().isBF16() ||
                    tensor.getElementType().isF16());
}

/// Whether computing the elementwise `def` at its reader `user` instead
/// would hold more bytes across a library call (a GEMM, an attention) that
/// runs between them: the operands that no op after `def` reads would live
/// across it in place of `def`'s result. Under --accum a gradient sum waits
/// for the next micro-batch's backward pass; fused into the next sum, both
/// of its terms would stay live across it instead of the sum.
bool holdsMoreAcrossCalls(Operation *def, Operation *user) {
  bool call = false;
  for (Operation *op = def->getNextNode(); op && op != user;
       op = op->getNextNode())
    if (exec::isLibraryOp(op)) {
      call = true;
      break;
    }
  if (!call)
    return false;
  auto bytes = [](Value v) {
    auto t = llvm::cast<RankedTensorType>(v.getType());
    return t.getNumElements() *
           int64_t(llvm::divideCeil(t.getElementTypeBitWidth(), 8));
  };
  int64_t freed = 0;
  llvm::SmallPtrSet<Value, 4> seen;
  for (Value v : def->getOperands()) {
    Operation *producer = v.getDefiningOp();
    if (!producer || producer->getBlock() != def->getBlock() ||
        llvm::isa<ConstantOp, GetParamOp>(producer) || !seen.insert(v).second)
      continue;
    if (llvm::none_of(v.getUsers(), [&](Operation *reader) {
          return reader != def && def->isBeforeInBlock(reader);
        }))
      freed += bytes(v);
  }
  return freed > bytes(def->getResult(0));
}

/// Whether `def`, an operand's producer of the group's op `user`, may join
/// the group: an elementwise op of `user`'s iteration space (its result
/// shape; any shape for the operands of the structured op or a chain op,
/// whose own shape is where they are read), the group's one structured op
/// read by the output-space elementwise op `user` at the kernel's result
/// shape, or a layout op extending the group's layout chain below `user`
/// (see growGroup for reshapes). An elementwise op stays out when it would
/// hold more bytes across a library call (holdsMoreAcrossCalls).
bool canAbsorb(const Group &group, Operation *user, Operation *def) {
  Space space = group.readSpace(user);
  // Inside a kernel 16-bit values stay in f32 registers (widenHalfInterior),
  // so whether a 16-bit value is stored decides its bits, and that may not
  // depend on what tcc-rematerialize changes. A value the backward pass
  // read without a budget was stored: its forward op and its recomputed
  // clone (both marked tcc.remat_stored) stay their kernels' results. And
  // the order of the step (which the pass changes) is not weighed for them
  // (holdsMoreAcrossCalls).
  bool half = llvm::any_of(def->getResultTypes(), isHalfTensor);
  if (half && def->hasAttr(kRematStoredAttr))
    return false;
  if (exec::isFusibleOp(def))
    return (group.inChain(user) ||
            shapeOf(def->getResult(0)) == shapeOf(user->getResult(0))) &&
           (half || !holdsMoreAcrossCalls(def, user));
  if (exec::isStructuredOp(def)) {
    if (group.chainGrowsBelow(user))
      return exec::isLayoutOp(def) && def->hasOneUse();
    return group.epilogueMayTakeStructured && !group.structured &&
           space == Space::Output &&
           shapeOf(def->getResult(0)) == shapeOf(user->getResult(0));
  }
  return false;
}

/// The ops that join the group's layout chain below its chain op `user`
/// when `def`, an operand's producer of `user`, is a reshape: the reshapes
/// down to the first other producer and, when that is a layout op, it too.
/// Each must have one use and be in the block and not grouped yet, and the
/// producer below them must be a layout op or an elementwise op (which then
/// joins as the prologue it is). Empty otherwise: a reshape of a kernel
/// input stays outside, a view.
SmallVector<Operation *> reshapesIntoChain(const Group &group, Operation *user,
                                           Operation *def,
                                           const llvm::DenseSet<Operation *> &taken) {
  SmallVector<Operation *> ops;
  if (!group.chainGrowsBelow(user))
    return {};
  Block *block = user->getBlock();
  auto free = [&](Operation *op) {
    return op && op->getBlock() == block && !group.contains(op) &&
           !taken.contains(op) && op->hasOneUse();
  };
  while (free(def) && llvm::isa<ReshapeOp>(def)) {
    ops.push_back(def);
    def = def->getOperand(0).getDefiningOp();
  }
  if (ops.empty() || !free(def) ||
      !(exec::isLayoutOp(def) || exec::isFusibleOp(def)))
    return {};
  if (exec::isLayoutOp(def))
    ops.push_back(def);
  return ops;
}

/// Whether `def`, a prologue producer of the group's reduction that ops
/// outside the group read too, may join as a store (a value the kernel
/// writes where it computes it): an elementwise op of the reduction
/// input's shape (so the reduction's one pass computes each element of it
/// once), every reader inside reading it in the prologue, every reader
/// outside after the reduction (where the kernel runs), no launch outside
/// the group between it and the reduction (the kernel computes it there, so
/// its operands would live across that launch: a new peak the memory plan
/// did not have), and a reduction that runs over every row (no packed
/// token rows on it: a kernel over the valid rows only would leave the
/// store's other rows unwritten). A value over packed token rows may be a
/// store: the reduction's kernel then computes it at every row, which the
/// plan allows any backend to do (rt::Step::tokenRows: the rows past the
/// valid ones hold finite values, zero for a gradient).
bool canStore(const Group &group, Operation *def) {
  Operation *reduction = group.structured;
  if (!group.storesAllowed || !reduction ||
      !llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(
          reduction) ||
      !exec::isFusibleOp(def) || def->getNumResults() != 1 ||
      shapeOf(def->getResult(0)) != shapeOf(reduction->getOperand(0)) ||
      reduction->hasAttr(kTokenRowsAttr))
    return false;
  for (Operation *u : def->getUsers()) {
    if (group.contains(u) ? group.readSpace(u) != Space::Prologue
                          : !reduction->isBeforeInBlock(u))
      return false;
  }
  for (Operation *op = def->getNextNode(); op != reduction;
       op = op->getNextNode())
    if (!group.contains(op) && launchesKernel(op))
      return false;
  return true;
}

/// Grows the group rooted at `root`: repeatedly absorbs an operand's
/// producer (see canAbsorb) whose uses are all in the group and all read it
/// in the same space (so it is computed once, in one place), until nothing
/// changes (a producer used twice may qualify only once both of its users
/// are in); a reduction's prologue producer read outside too joins as a
/// store (canStore). A reshape under a chain op joins with the layout or
/// elementwise op below it (a reshape between a kernel input and its reader
/// stays a view).
void growGroup(Operation *root, Group &group,
               const llvm::DenseSet<Operation *> &taken) {
  Block *block = root->getBlock();
  group.ops.insert(root);
  group.space[root] = Space::Output;
  if (exec::isStructuredOp(root))
    group.structured = root;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < group.ops.size(); ++i) {
      Operation *user = group.ops[i];
      for (Value operand : user->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || def->getBlock() != block || group.contains(def) ||
            taken.contains(def))
          continue;
        if (llvm::isa<ReshapeOp>(def)) {
          for (Operation *op : reshapesIntoChain(group, user, def, taken)) {
            group.ops.insert(op);
            group.space[op] = Space::Prologue;
            group.chain.insert(op);
            changed = true;
          }
          continue;
        }
        if (!canAbsorb(group, user, def))
          continue;
        Space space = group.readSpace(user);
        if (!llvm::all_of(def->getUsers(), [&](Operation *u) {
              return group.contains(u) && group.readSpace(u) == space;
            })) {
          if (space != Space::Prologue || !canStore(group, def))
            continue;
          group.stores.insert(def);
        }
        group.ops.insert(def);
        group.space[def] = space;
        if (exec::isStructuredOp(def)) {
          if (group.structured)
            group.chain.insert(def);
          else
            group.structured = def;
        }
        changed = true;
      }
    }
  }
  // A producer taken as a store before its other readers joined is an
  // ordinary prologue op.
  group.stores.remove_if([&](Operation *def) {
    return llvm::all_of(def->getUsers(),
                        [&](Operation *u) { return group.contains(u); });
  });
}

/// Whether an epilogue op of `group` reads a value defined after the
/// group's structured op. The kernel runs where its structured op was (so
/// that op's input, often much larger than its result, dies as early as
/// before fusion); an epilogue waiting for a later value would move the
/// whole kernel down instead, keeping that input alive in between (for a
/// tied embedding: the [batch, vocab, dim] lm-head gradient across the
/// whole backward pass).
bool epilogueWaits(const Group &group) {
  for (Operation *op : group.ops) {
    if (op == group.structured || group.space.lookup(op) != Space::Output)
      continue;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && !group.contains(def) &&
          def->getBlock() == group.structured->getBlock() &&
          group.structured->isBeforeInBlock(def))
        return true;
    }
  }
  return false;
}

/// The value whose buffer `v` shares (through reshapes and views), when
/// the memory plan places that buffer in the arena: the result of an op in
/// `block` other than a constant, a parameter or an in-place update (whose
/// result takes its argument's storage). Null otherwise.
Value arenaRoot(Value v, Block &block) {
  while (Operation *def = v.getDefiningOp()) {
    if (!llvm::isa<ReshapeOp, exec::ViewOp>(def))
      break;
    v = def->getOperand(0);
  }
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != &block ||
      llvm::isa<ConstantOp, GetParamOp, InPlaceOpInterface>(def))
    return Value();
  return v;
}

/// Replaces each split or unit-stride slice in `block` whose pieces are
/// contiguous runs of its input's elements (every dim before the sliced
/// one of extent 1, every dim after it whole), each starting at an aligned
/// byte, by an exec.view per piece, when the input lives in the arena: the
/// pieces are then the input's own bytes, with no kernel (a merged
/// projection's weight and bias gradients split into the parameters').
void viewContiguousPieces(Block &block) {
  // The element offset of each piece along `axis`, or nothing when the
  // pieces are not contiguous or not aligned.
  auto pieces = [&](RankedTensorType in, int64_t axis,
                    ArrayRef<int64_t> starts) -> SmallVector<int64_t> {
    ArrayRef<int64_t> shape = in.getShape();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= shape[d];
    for (int64_t d = axis + 1; d < int64_t(shape.size()); ++d)
      inner *= shape[d];
    if (outer != 1)
      return {};
    SmallVector<int64_t> offsets;
    for (int64_t start : starts) {
      int64_t offset = start * inner;
      if (exec::ViewOp::byteOffset(in.getElementType(), offset) %
              kArenaAlignment !=
          0)
        return {};
      offsets.push_back(offset);
    }
    return offsets;
  };
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto split = llvm::dyn_cast<SplitOp>(&op);
    auto slice = llvm::dyn_cast<SliceOp>(&op);
    if ((!split && !slice) || !arenaRoot(op.getOperand(0), block))
      continue;
    auto in = llvm::cast<RankedTensorType>(op.getOperand(0).getType());
    if (!in.hasStaticShape())
      continue;
    SmallVector<int64_t> offsets;
    if (split) {
      SmallVector<int64_t> starts;
      int64_t start = 0;
      for (int64_t size : split.getSizes()) {
        starts.push_back(start);
        start += size;
      }
      offsets = pieces(in, split.getAxis(), starts);
    } else {
      // The first dim not taken whole is the sliced one; the rest whole.
      ArrayRef<int64_t> shape = in.getShape(), begin = slice.getStarts(),
                        end = slice.getLimits();
      if (llvm::any_of(slice.getStrides(), [](int64_t s) { return s != 1; }))
        continue;
      int64_t axis = 0, rank = int64_t(shape.size());
      while (axis < rank && begin[axis] == 0 && end[axis] == shape[axis])
        ++axis;
      if (axis == rank)
        continue;
      bool whole = true;
      for (int64_t d = axis + 1; d < rank; ++d)
        whole &= begin[d] == 0 && end[d] == shape[d];
      if (whole)
        offsets = pieces(in, axis, {begin[axis]});
    }
    if (offsets.empty())
      continue;
    OpBuilder builder(&op);
    for (auto [result, offset] : llvm::zip_equal(op.getResults(), offsets))
      result.replaceAllUsesWith(exec::ViewOp::create(
          builder, op.getLoc(), result.getType(), op.getOperand(0),
          builder.getI64IntegerAttr(offset)));
    op.erase();
  }
}

/// Replaces every tcc.split in `block` by one tcc.slice per result, so each
/// piece is a single-result kernel.
void splitToSlices(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto split = llvm::dyn_cast<SplitOp>(&op);
    if (!split)
      continue;
    OpBuilder builder(split);
    ArrayRef<int64_t> shape = shapeOf(split.getInput());
    int64_t axis = split.getAxis(), offset = 0;
    for (auto [result, size] :
         llvm::zip_equal(split.getResults(), split.getSizes())) {
      SmallVector<int64_t> starts(shape.size(), 0), limits(shape),
          strides(shape.size(), 1);
      starts[axis] = offset;
      limits[axis] = offset + size;
      offset += size;
      Value slice = SliceOp::create(builder, split.getLoc(), split.getInput(),
                                    builder.getDenseI64ArrayAttr(starts),
                                    builder.getDenseI64ArrayAttr(limits),
                                    builder.getDenseI64ArrayAttr(strides));
      result.replaceAllUsesWith(slice);
    }
    split.erase();
  }
}

RankedTensorType asF32(Type t) {
  auto tensor = llvm::cast<RankedTensorType>(t);
  return RankedTensorType::get(tensor.getShape(),
                               Float32Type::get(t.getContext()));
}

/// Inside a kernel, bf16/f16 intermediates stay in fp32 registers: the
/// body's 16-bit inputs are widened where they enter, every op computes and
/// keeps f32, and only the result is rounded, once, where it leaves. This
/// changes the numbers on purpose (less rounding than op-by-op 16-bit
/// storage, which is what the unfused graph says); explicit casts to 16 bits
/// (a parameter's working copy, a model's own Cast) still round. Returns
/// the value to yield.
Value widenHalfInterior(Block *body, Value result, Type resultType) {
  // Ops that only move elements (and casts, which round by definition)
  // lose nothing to 16-bit storage.
  bool roundsInside = false;
  for (Operation &op : *body)
    if (!llvm::isa<CastOp, ReshapeOp, ConstantOp>(op) &&
        !exec::isLayoutOp(&op) &&
        llvm::any_of(op.getResultTypes(), isHalfTensor))
      roundsInside = true;
  if (!roundsInside)
    return result;
  OpBuilder b(body->getParentOp()->getContext());
  auto widen = [&](Value v) {
    auto cast = CastOp::create(b, v.getLoc(), asF32(v.getType()), v);
    v.replaceAllUsesExcept(cast.getResult(), cast);
    return cast.getResult();
  };
  b.setInsertionPointToStart(body);
  for (BlockArgument arg : body->getArguments())
    if (isHalfTensor(arg.getType()) && !arg.use_empty())
      widen(arg);
  for (Operation &op : llvm::make_early_inc_range(*body)) {
    if (!llvm::any_of(op.getResultTypes(), isHalfTensor))
      continue;
    b.setInsertionPointAfter(&op);
    if (llvm::isa<CastOp>(op)) {
      widen(op.getResult(0));
    } else if (auto constant = llvm::dyn_cast<ConstantOp>(op)) {
      // A 16-bit splat widens exactly.
      auto dense = llvm::cast<DenseFPElementsAttr>(constant.getValue());
      llvm::APFloat v = *dense.value_begin<llvm::APFloat>();
      bool lost;
      v.convert(llvm::APFloat::IEEEsingle(),
                llvm::APFloat::rmNearestTiesToEven, &lost);
      auto wide = ConstantOp::create(
          b, op.getLoc(),
          DenseElementsAttr::get(asF32(constant.getType()), v));
      if (result == constant.getResult())
        result = wide;
      constant.getResult().replaceAllUsesWith(wide.getResult());
      op.erase();
    } else {
      for (Value r : op.getResults())
        if (isHalfTensor(r.getType()))
          r.setType(asF32(r.getType()));
    }
  }
  if (result.getType() == resultType)
    return result;
  // A widened explicit cast leaves through the cast itself.
  if (auto up = result.getDefiningOp<CastOp>())
    if (up.getInput().getType() == resultType)
      return up.getInput();
  b.setInsertionPointToEnd(body);
  return CastOp::create(b, result.getLoc(), resultType, result);
}

/// A new exec.fusion named `name` of results `types` on `inputs`, at the
/// builder's insertion point, and its body block (one argument per input),
/// where the builder then inserts.
std::pair<exec::FusionOp, Block *> createFusion(OpBuilder &builder,
                                                Location loc, TypeRange types,
                                                StringAttr name,
                                                ArrayRef<Value> inputs) {
  auto fusion = exec::FusionOp::create(builder, loc, types, name, inputs);
  SmallVector<Type> inputTypes;
  SmallVector<Location> inputLocs;
  for (Value v : inputs) {
    inputTypes.push_back(v.getType());
    inputLocs.push_back(v.getLoc());
  }
  Block *body =
      builder.createBlock(&fusion.getBody(), {}, inputTypes, inputLocs);
  return {fusion, body};
}

/// The body value a store yields for `value` (of type `type` outside the
/// kernel) after widenHalfInterior. A 16-bit value it widened to f32 is
/// rounded to 16 bits where it is computed, and the kernel reads the
/// rounded value, as the reduction read the stored value before fusion: the
/// store yields the rounding cast.
Value storedValue(Value value, Type type) {
  if (value.getType() == type)
    return value;
  OpBuilder b(value.getContext());
  b.setInsertionPointAfterValue(value);
  auto rounded = CastOp::create(b, value.getLoc(), type, value);
  auto wide = CastOp::create(b, value.getLoc(), value.getType(), rounded);
  value.replaceAllUsesExcept(wide.getResult(), rounded);
  return rounded.getResult();
}

/// Replaces the ops of `group` (root = `root`) by one exec.fusion, placed
/// where its structured op was (see epilogueWaits), else at the root.
void outlineGroup(Operation *root, Group &group, StringRef name) {
  SmallVector<Operation *> ops(group.ops.begin(), group.ops.end());
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

  OpBuilder builder(group.structured ? group.structured : root);
  SmallVector<Type> resultTypes{root->getResult(0).getType()};
  for (Operation *def : group.stores)
    resultTypes.push_back(def->getResult(0).getType());
  auto [fusion, body] =
      createFusion(builder, root->getLoc(), resultTypes,
                   builder.getStringAttr(name), inputs.getArrayRef());
  IRMapping mapping;
  mapping.map(inputs.getArrayRef(), body->getArguments());
  for (Operation *c : constants)
    builder.clone(*c, mapping);
  for (Operation *op : ops)
    builder.clone(*op, mapping);
  Value result = widenHalfInterior(body, mapping.lookup(root->getResult(0)),
                                   root->getResult(0).getType());
  SmallVector<Value> yielded{result};
  for (Operation *def : group.stores)
    yielded.push_back(storedValue(mapping.lookup(def->getResult(0)),
                                  def->getResult(0).getType()));
  builder.setInsertionPointToEnd(body);
  exec::YieldOp::create(builder, root->getLoc(), yielded);

  root->getResult(0).replaceAllUsesWith(fusion.getResult());
  for (auto [def, stored] : llvm::zip(group.stores, fusion.getStores()))
    def->getResult(0).replaceAllUsesWith(stored);
  for (Operation *op : llvm::reverse(ops))
    op->erase();
  for (Operation *c : constants)
    if (c->use_empty())
      c->erase();
}

/// Whether `fusion` may be one of a kernel's siblings: a layout chain that
/// only moves elements (transpose, slice, concat and reshapes: no loop per
/// output element, no elementwise op reading an input at the output index,
/// so no vector path that a kernel of several results would lose), no
/// packed token rows unless `tokenRows` (a chain joining a reduction over
/// every row, which then moves every row), every result of its first
/// result's shape.
bool siblingKernel(exec::FusionOp fusion, bool tokenRows = false) {
  for (Operation &op : fusion.getBody().front().without_terminator())
    if (!(exec::isLayoutOp(&op) || llvm::isa<ReshapeOp>(op)) ||
        (!tokenRows && op.hasAttr(kTokenRowsAttr)))
      return false;
  return llvm::all_of(fusion.getResultTypes(), [&](Type t) {
    return t == fusion.getResult().getType() ||
           shapeOf(fusion.getResult()) ==
               llvm::cast<RankedTensorType>(t).getShape();
  });
}

/// Merges kernel `fusion` into `prev`, the kernel launched just before it,
/// when both are siblings (siblingKernel: layout chains) of one result
/// shape that read a common input and neither reads the other: one launch
/// computes both results at each output index (the q/k/v head split's
/// three chains are one kernel).
/// The merged kernel runs where the second did; only non-launching ops
/// (views, constants) may lie between them, none of them reads the first's
/// results, and every input of the first that dies there is read by the
/// second too (else it would live on beside the second's results).
/// Returns the merged kernel, or `fusion` when they stay apart.
exec::FusionOp mergeSibling(exec::FusionOp prev, exec::FusionOp fusion) {
  auto shares = [&] {
    for (Value v : fusion.getInputs())
      if (llvm::is_contained(prev.getInputs(), v))
        return true;
    return false;
  };
  auto readsPrev = [&] {
    for (Value r : prev.getResults())
      for (Operation *user : r.getUsers())
        if (user->isBeforeInBlock(fusion))
          return true;
    return llvm::any_of(fusion.getInputs(), [&](Value v) {
      return v.getDefiningOp() == prev.getOperation();
    });
  };
  // An input of the first that dies at it would live on beside the
  // second's results: the plan could grow.
  auto holdsMore = [&] {
    for (Value v : prev.getInputs()) {
      if (llvm::isa<BlockArgument>(v) ||
          llvm::is_contained(fusion.getInputs(), v))
        continue;
      if (llvm::none_of(v.getUsers(), [&](Operation *u) {
            return u != prev.getOperation() &&
                   prev->isBeforeInBlock(u);
          }))
        return true;
    }
    return false;
  };
  if (!prev || !siblingKernel(prev) || !siblingKernel(fusion) ||
      shapeOf(prev.getResult()) != shapeOf(fusion.getResult()) ||
      !shares() || readsPrev() || holdsMore())
    return fusion;
  // One body: the first's ops and then the second's, on the union of the
  // inputs; the first's results, then the second's.
  llvm::SetVector<Value> inputs;
  inputs.insert(prev.getInputs().begin(), prev.getInputs().end());
  inputs.insert(fusion.getInputs().begin(), fusion.getInputs().end());
  SmallVector<Type> types(prev.getResultTypes());
  llvm::append_range(types, fusion.getResultTypes());
  OpBuilder builder(fusion);
  auto [merged, body] = createFusion(builder, prev.getLoc(), types,
                                     prev.getNameAttr(), inputs.getArrayRef());
  SmallVector<Value> yielded;
  for (exec::FusionOp part : {prev, fusion}) {
    Block &from = part.getBody().front();
    IRMapping mapping;
    for (auto [arg, input] : llvm::zip(from.getArguments(), part.getInputs()))
      mapping.map(arg, body->getArgument(
                           unsigned(llvm::find(inputs, input) - inputs.begin())));
    for (Operation &inner : from.without_terminator())
      builder.clone(inner, mapping);
    for (Value v : from.getTerminator()->getOperands())
      yielded.push_back(mapping.lookup(v));
  }
  exec::YieldOp::create(builder, fusion.getLoc(), yielded);
  unsigned first = prev->getNumResults();
  for (auto [k, r] : llvm::enumerate(prev.getResults()))
    r.replaceAllUsesWith(merged.getResult(unsigned(k)));
  for (auto [k, r] : llvm::enumerate(fusion.getResults()))
    r.replaceAllUsesWith(merged.getResult(first + unsigned(k)));
  prev->erase();
  fusion->erase();
  return merged;
}

/// The reduction of `fusion`'s body, or null.
Operation *reductionOf(exec::FusionOp fusion) {
  for (Operation &op : fusion.getBody().front())
    if (llvm::isa<ReduceSumOp, ReduceMeanOp, ReduceMaxOp, ReduceMinOp>(op))
      return &op;
  return nullptr;
}

/// Merges `chain`, a layout-chain kernel (siblingKernel, one result X),
/// into `fusion`, the reduction kernel launched right after it, when the
/// reduction reads X as its input, directly or through one cast (bf16
/// gradients summed in f32): the chain becomes the reduction's prologue
/// and X a store of its kernel when ops after it read X too (the attention
/// gradient's q/k/v concat under the qkv bias gradient). Only views and
/// constants may lie between the two and none of them reads X, and no
/// other op of the reduction's kernel reads X. A chain over packed token
/// rows joins too: the reduction runs over every row (it has no packed
/// rows itself), so it stores every row of X, as running the chain over
/// every row would (rt::Step::tokenRows).
/// Returns the merged kernel, or `fusion` when they stay apart.
exec::FusionOp mergeChainIntoReduction(exec::FusionOp chain,
                                       exec::FusionOp fusion) {
  Operation *reduction = reductionOf(fusion);
  if (!chain || !reduction || chain->getNumResults() != 1 ||
      !siblingKernel(chain, /*tokenRows=*/true) ||
      reduction->hasAttr(kTokenRowsAttr))
    return fusion;
  Value x = chain.getResult();
  // The reduction reads X directly, or through one cast (a 16-bit
  // gradient summed in f32).
  Value read = reduction->getOperand(0);
  if (auto cast = read.getDefiningOp<CastOp>(); cast && cast->hasOneUse())
    read = cast.getInput();
  auto arg = llvm::dyn_cast<BlockArgument>(read);
  if (!arg || fusion.getInputs()[arg.getArgNumber()] != x ||
      !arg.hasOneUse() ||
      llvm::count(fusion.getInputs(), x) != 1 ||
      llvm::any_of(x.getUsers(), [&](Operation *user) {
        return user != fusion.getOperation() &&
               !fusion->isBeforeInBlock(user);
      }))
    return fusion;
  bool stored = !x.hasOneUse();
  llvm::SetVector<Value> inputs;
  inputs.insert(chain.getInputs().begin(), chain.getInputs().end());
  for (Value v : fusion.getInputs())
    if (v != x)
      inputs.insert(v);
  SmallVector<Type> types(fusion.getResultTypes());
  if (stored)
    types.push_back(x.getType());
  OpBuilder builder(fusion);
  exec::FusionOp merged;
  Block *body;
  std::tie(merged, body) = createFusion(builder, fusion.getLoc(), types,
                                        fusion.getNameAttr(),
                                        inputs.getArrayRef());
  auto argOf = [&](Value v) {
    return body->getArgument(unsigned(llvm::find(inputs, v) - inputs.begin()));
  };
  IRMapping mapping;
  Block &from = chain.getBody().front();
  for (auto [a, v] : llvm::zip(from.getArguments(), chain.getInputs()))
    mapping.map(a, argOf(v));
  for (Operation &inner : from.without_terminator())
    builder.clone(inner, mapping);
  Value chainValue = mapping.lookup(from.getTerminator()->getOperand(0));
  Block &rest = fusion.getBody().front();
  for (auto [a, v] : llvm::zip(rest.getArguments(), fusion.getInputs()))
    mapping.map(a, v == x ? chainValue : argOf(v));
  for (Operation &inner : rest.without_terminator())
    builder.clone(inner, mapping);
  SmallVector<Value> yielded;
  for (Value v : rest.getTerminator()->getOperands())
    yielded.push_back(mapping.lookup(v));
  if (stored)
    yielded.push_back(chainValue);
  exec::YieldOp::create(builder, fusion.getLoc(), yielded);
  for (auto [k, r] : llvm::enumerate(fusion.getResults()))
    r.replaceAllUsesWith(merged.getResult(unsigned(k)));
  fusion->erase();
  if (stored)
    x.replaceAllUsesWith(merged.getResults().back());
  chain->erase();
  return merged;
}

/// Runs `merge(prev, fusion)` over the kernels of `block` in order, `prev`
/// being the kernel launched just before `fusion` (null when another
/// launch lies between them). `merge` returns the kernel that then counts
/// as launched last: the merged one, or `fusion`.
void mergeLaunchedPairs(
    Block &block,
    llvm::function_ref<exec::FusionOp(exec::FusionOp, exec::FusionOp)> merge) {
  exec::FusionOp prev;
  for (Operation &op : llvm::make_early_inc_range(block)) {
    if (auto fusion = llvm::dyn_cast<exec::FusionOp>(&op))
      prev = merge(prev, fusion);
    else if (launchesKernel(&op))
      prev = nullptr;
  }
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
    viewContiguousPieces(block);
    splitToSlices(block);
    llvm::DenseSet<Operation *> taken;
    SmallVector<std::pair<Operation *, Group>> groups;
    bool storesAllowed = !block.getParentOp()->hasAttr(kReuseOperandsAttr);
    for (Operation &op : llvm::reverse(block)) {
      if (taken.contains(&op) ||
          (!exec::isFusibleOp(&op) && !exec::isStructuredOp(&op)))
        continue;
      Group group;
      group.storesAllowed = storesAllowed;
      growGroup(&op, group, taken);
      if (group.structured && group.structured != &op &&
          epilogueWaits(group)) {
        // The structured op roots its own group later in the walk.
        group = Group();
        group.storesAllowed = storesAllowed;
        group.epilogueMayTakeStructured = false;
        growGroup(&op, group, taken);
      }
      taken.insert(group.ops.begin(), group.ops.end());
      groups.emplace_back(&op, std::move(group));
    }
    // Outlined in program order, so kernel names follow the step's order.
    for (auto &[root, group] : llvm::reverse(groups))
      outlineGroup(root, group, ("fused_" + llvm::Twine(counter++)).str());
    mergeLaunchedPairs(block, mergeSibling);
    mergeLaunchedPairs(block, mergeChainIntoReduction);
  }
};

} // namespace
