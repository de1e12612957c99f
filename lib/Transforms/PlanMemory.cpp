// Static memory planning: one arena per step function, offsets chosen so
// that buffers live at the same time never share bytes.
//
// Liveness is computed on the straight-line body (op indices), then every
// arena buffer gets an offset by greedy best-fit. Optimizer updates write
// into their dying argument's storage instead of the arena, which keeps the
// new parameters and state out of the peak entirely.
#include "exec/MemoryPlan.h"
#include "tcc/Transforms/Passes.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/Support/MathExtras.h"

namespace tcc {
#define GEN_PASS_DEF_PLANMEMORY
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

/// Moves the results of in-place ops (InPlaceOpInterface: optimizer
/// updates) into the storage of the argument they replace when that
/// argument dies at the op, or of the argument an in-place result they
/// replace holds (a chain of block updates of one parameter).
unsigned assignInPlace(BufferLiveness &live) {
  llvm::DenseSet<unsigned> claimed;
  unsigned count = 0;
  for (Buffer &buffer : live.buffers) {
    if (buffer.region != BufferRegion::Arena)
      continue;
    auto inPlace = dyn_cast_or_null<InPlaceOpInterface>(buffer.def);
    Value operand =
        inPlace ? inPlace.getInPlaceOperand(buffer.resultNumber) : Value();
    if (!operand)
      continue;
    auto it = live.bufferOf.find(operand);
    if (it == live.bufferOf.end())
      continue;
    const Buffer &arg = live.buffers[it->second];
    if ((arg.region != BufferRegion::Input &&
         arg.region != BufferRegion::InPlace) ||
        arg.end != buffer.start || arg.bytes != buffer.bytes ||
        !claimed.insert(it->second).second)
      continue;
    buffer.region = BufferRegion::InPlace;
    buffer.inplaceOf = arg.region == BufferRegion::InPlace
                           ? arg.inplaceOf
                           : cast<BlockArgument>(arg.value).getArgNumber();
    ++count;
  }
  return count;
}

/// Under a memory budget: an elementwise fusion's result takes the arena
/// storage of an operand that dies at it (readsElementwise). Returns, per
/// buffer taking another's storage, that buffer (the first of a chain);
/// the chain's first buffer lives to its last member's end.
llvm::DenseMap<unsigned, unsigned> reuseOperands(BufferLiveness &live) {
  llvm::DenseMap<unsigned, unsigned> takes;
  llvm::DenseSet<unsigned> claimed;
  SmallVector<int64_t> ownEnd;
  for (const Buffer &buffer : live.buffers)
    ownEnd.push_back(buffer.end);
  for (auto [idx, buffer] : llvm::enumerate(live.buffers)) {
    if (buffer.region != BufferRegion::Arena || !buffer.def)
      continue;
    for (auto [i, operand] : llvm::enumerate(buffer.def->getOperands())) {
      auto it = live.bufferOf.find(operand);
      if (it == live.bufferOf.end())
        continue;
      unsigned o = it->second;
      const Buffer &in = live.buffers[o];
      // Read through this operand alone: another view of the same bytes
      // could be read at other elements.
      auto sameBytes = [&](Value other) {
        auto at = live.bufferOf.find(other);
        return at != live.bufferOf.end() && at->second == o;
      };
      if (o == idx || in.region != BufferRegion::Arena ||
          ownEnd[o] != buffer.start || in.bytes != buffer.bytes ||
          claimed.contains(o) || !readsElementwise(buffer.def, unsigned(i)) ||
          llvm::count_if(buffer.def->getOperands(), sameBytes) != 1)
        continue;
      claimed.insert(o);
      unsigned root = takes.count(o) ? takes.lookup(o) : o;
      takes[unsigned(idx)] = root;
      live.buffers[root].end = std::max(live.buffers[root].end, buffer.end);
      buffer.def->setAttr(
          kReusesAttr,
          Builder(buffer.def->getContext()).getI64IntegerAttr(int64_t(i)));
      break;
    }
  }
  return takes;
}

/// Places the arena buffers in `order`, each at the smallest gap between
/// already placed buffers it is live with that fits it (else on top).
/// Returns the peak.
int64_t placeBuffers(SmallVectorImpl<Buffer> &buffers,
                     ArrayRef<unsigned> order) {
  SmallVector<unsigned> placed;
  int64_t peak = 0;
  for (unsigned idx : order) {
    Buffer &buffer = buffers[idx];
    SmallVector<std::pair<int64_t, int64_t>> busy;
    for (unsigned other : placed) {
      const Buffer &o = buffers[other];
      if (o.start <= buffer.end && buffer.start <= o.end)
        busy.push_back({o.offset, o.offset + o.bytes});
    }
    llvm::sort(busy);
    int64_t cursor = 0, best = -1, bestGap = INT64_MAX;
    for (auto [lo, hi] : busy) {
      int64_t gap = lo - cursor;
      if (gap >= buffer.bytes && gap < bestGap) {
        best = cursor;
        bestGap = gap;
      }
      cursor = std::max(cursor, hi);
    }
    buffer.offset = best >= 0 ? best : cursor;
    peak = std::max(peak, buffer.offset + buffer.bytes);
    placed.push_back(idx);
  }
  return peak;
}

void clearPlan(Operation *op) {
  for (StringRef name :
       {kOffsetAttr, kOffsetsAttr, kRegionAttr, kInplaceOfAttr})
    op->removeAttr(name);
}

/// Writes one op's plan: scalars for one result, arrays for several.
void annotate(Operation *op, ArrayRef<const Buffer *> results) {
  Builder b(op->getContext());
  bool anyArena = false, allArena = true;
  for (const Buffer *buffer : results) {
    anyArena |= buffer->region == BufferRegion::Arena;
    allArena &= buffer->region == BufferRegion::Arena;
  }
  if (results.size() == 1) {
    const Buffer &buffer = *results.front();
    if (anyArena)
      op->setAttr(kOffsetAttr, b.getI64IntegerAttr(buffer.offset));
    else
      op->setAttr(kRegionAttr, b.getStringAttr(stringifyRegion(buffer.region)));
    if (buffer.region == BufferRegion::InPlace)
      op->setAttr(kInplaceOfAttr, b.getI64IntegerAttr(buffer.inplaceOf));
    return;
  }
  auto offsets = llvm::map_to_vector(results, [](const Buffer *buffer) {
    return buffer->region == BufferRegion::Arena ? buffer->offset : -1;
  });
  if (anyArena)
    op->setAttr(kOffsetsAttr, b.getDenseI64ArrayAttr(offsets));
  if (allArena)
    return;
  auto regions = llvm::map_to_vector(results, [&](const Buffer *buffer) {
    return Attribute(b.getStringAttr(stringifyRegion(buffer->region)));
  });
  op->setAttr(kRegionAttr, b.getArrayAttr(regions));
  auto inplace = llvm::map_to_vector(
      results, [](const Buffer *buffer) { return buffer->inplaceOf; });
  if (llvm::any_of(inplace, [](int64_t arg) { return arg >= 0; }))
    op->setAttr(kInplaceOfAttr, b.getDenseI64ArrayAttr(inplace));
}

struct PlanMemoryPass : tcc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal() || !func.getBody().hasOneBlock())
      return;
    if (order != "best" && order != "size" && order != "definition") {
      func.emitOpError() << "unknown tcc-plan-memory order '" << order << "'";
      return signalPassFailure();
    }
    FailureOr<BufferLiveness> live = computeBufferLiveness(func);
    if (failed(live))
      return signalPassFailure();
    unsigned inplace = assignInPlace(*live);
    numInplace += inplace;
    for (Operation &op : func.getBody().front())
      op.removeAttr(kReusesAttr);
    llvm::DenseMap<unsigned, unsigned> takes;
    if (func->hasAttr(kReuseOperandsAttr))
      takes = reuseOperands(*live);

    SmallVector<unsigned> arena;
    int64_t naive = 0;
    for (auto [idx, buffer] : llvm::enumerate(live->buffers))
      if (buffer.region == BufferRegion::Arena && !takes.count(idx)) {
        arena.push_back(idx);
        naive += buffer.bytes;
      }
    numBuffers += arena.size();
    naiveBytes += naive;

    // Definition order is what a free-list allocator sees at run time;
    // decreasing size packs big activations first. Keep the lower peak.
    SmallVector<unsigned> byDefinition = arena;
    SmallVector<unsigned> bySize = arena;
    llvm::stable_sort(bySize, [&](unsigned a, unsigned b) {
      return live->buffers[a].bytes > live->buffers[b].bytes;
    });
    SmallVector<Buffer> sizePlan = live->buffers;
    int64_t sizePeak = placeBuffers(sizePlan, bySize);
    int64_t defPeak = placeBuffers(live->buffers, byDefinition);
    int64_t peak = defPeak;
    if (order == "size" || (order == "best" && sizePeak < defPeak)) {
      live->buffers = std::move(sizePlan);
      peak = sizePeak;
    }
    for (auto [buffer, root] : takes)
      live->buffers[buffer].offset = live->buffers[root].offset;
    plannedBytes += peak;
    if (report) {
      // No placement can beat the most bytes live at one op.
      int64_t bound = 0;
      for (int64_t i = 0; i < live->numOps; ++i) {
        int64_t bytes = 0;
        for (unsigned idx : arena)
          if (live->buffers[idx].start <= i && i <= live->buffers[idx].end)
            bytes += live->buffers[idx].bytes;
        bound = std::max(bound, bytes);
      }
      func.emitRemark() << "memory plan of @" << func.getSymName() << ": "
                        << arena.size() << " arena buffers, naive " << naive
                        << " bytes, planned " << peak << " bytes (size order "
                        << sizePeak << ", definition order " << defPeak
                        << ", live bound " << bound << "), " << inplace
                        << " results in place";
    }

    Block &block = func.getBody().front();
    for (Operation &op : block) {
      clearPlan(&op);
      if (op.getNumResults() == 0)
        continue;
      SmallVector<const Buffer *> results;
      for (Value result : op.getResults())
        if (const Buffer *buffer = live->lookup(result))
          results.push_back(buffer);
      if (results.size() == op.getNumResults())
        annotate(&op, results);
      // A piece of its buffer (exec.view): the piece's offset.
      if (int64_t delta = live->viewOffset.lookup(op.getResult(0)))
        if (auto offset = op.getAttrOfType<IntegerAttr>(kOffsetAttr))
          op.setAttr(kOffsetAttr, Builder(&getContext())
                                      .getI64IntegerAttr(offset.getInt() + delta));
    }
    func->setAttr(kArenaBytesAttr,
                  Builder(func.getContext()).getI64IntegerAttr(peak));
    // The exec dialect verifies the plan (exec.arena_bytes) when the pass
    // ends: a planner bug is an error, not a silently corrupted step.
  }
};

} // namespace
