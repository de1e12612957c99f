// Liveness of a step function's buffers, and the check of a memory plan
// written as exec.* attributes against liveness recomputed from the IR, so
// hand-edited or stale plans (after a pass moved ops) are caught before the
// runtime overwrites a live tensor. The exec dialect runs the check as the
// verifier of exec.arena_bytes.
#include "exec/MemoryPlan.h"

#include "exec/ExecOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace tcc;

StringRef tcc::stringifyRegion(BufferRegion region) {
  switch (region) {
  case BufferRegion::Arena:
    return "arena";
  case BufferRegion::InPlace:
    return "inplace";
  case BufferRegion::Input:
    return "input";
  case BufferRegion::Constant:
    return "constant";
  case BufferRegion::Param:
    return "param";
  }
  llvm_unreachable("unknown region");
}

std::optional<int64_t> tcc::alignedBufferBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return std::nullopt;
  Type elem = tensor.getElementType();
  int64_t bits;
  if (elem.isIntOrFloat())
    bits = elem.getIntOrFloatBitWidth();
  else if (elem.isIndex())
    bits = 64;
  else
    return std::nullopt;
  int64_t bytes = tensor.getNumElements() * llvm::divideCeil(bits, 8);
  return llvm::alignTo(bytes, kArenaAlignment);
}

FailureOr<BufferLiveness> tcc::computeBufferLiveness(func::FuncOp func) {
  if (!func.getBody().hasOneBlock())
    return func.emitOpError("memory planning needs a single-block body");
  Block &block = func.getBody().front();
  BufferLiveness live;

  auto addBuffer = [&](Value v, Operation *def, unsigned resultNumber,
                       BufferRegion region, int64_t index) -> LogicalResult {
    // Non-tensor values (tokens, indices) own no memory in tensor land.
    if (!isa<RankedTensorType>(v.getType()))
      return success();
    std::optional<int64_t> bytes = alignedBufferBytes(v.getType());
    if (!bytes) {
      if (def)
        return def->emitOpError() << "result #" << resultNumber << " of type "
                                  << v.getType() << " cannot be sized";
      return func.emitOpError() << "argument #" << resultNumber << " of type "
                                << v.getType() << " cannot be sized";
    }
    live.bufferOf[v] = live.buffers.size();
    Buffer buffer;
    buffer.value = v;
    buffer.def = def;
    buffer.resultNumber = resultNumber;
    buffer.region = region;
    buffer.bytes = *bytes;
    buffer.start = buffer.end = index;
    live.buffers.push_back(buffer);
    return success();
  };

  for (BlockArgument arg : block.getArguments())
    if (failed(addBuffer(arg, nullptr, arg.getArgNumber(), BufferRegion::Input,
                         -1)))
      return failure();

  int64_t index = 0;
  for (Operation &op : block) {
    // A use anywhere inside op (e.g. in a fusion region) happens at op.
    op.walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        auto it = live.bufferOf.find(operand);
        if (it != live.bufferOf.end())
          live.buffers[it->second].end =
              std::max(live.buffers[it->second].end, index);
      }
    });
    if (op.hasTrait<tcc::OpClass::View>()) {
      // Same bytes under another shape (or a piece of them, exec.view): the
      // alias extends its root's life.
      auto it = live.bufferOf.find(op.getOperand(0));
      if (it != live.bufferOf.end()) {
        live.bufferOf[op.getResult(0)] = it->second;
        int64_t delta = live.viewOffset.lookup(op.getOperand(0));
        if (auto view = dyn_cast<exec::ViewOp>(op))
          delta += view.getByteOffset();
        if (delta)
          live.viewOffset[op.getResult(0)] = delta;
        ++index;
        continue;
      }
    }
    BufferRegion region = isa<ConstantOp>(op)   ? BufferRegion::Constant
                          : isa<GetParamOp>(op) ? BufferRegion::Param
                                                : BufferRegion::Arena;
    for (OpResult result : op.getResults())
      if (failed(
              addBuffer(result, &op, result.getResultNumber(), region, index)))
        return failure();
    ++index;
  }
  live.numOps = index;
  return live;
}


namespace {

/// What the attributes say about one result.
struct ResultPlan {
  std::optional<StringRef> region;
  std::optional<int64_t> offset;
  std::optional<int64_t> inplaceOf;
};

/// Reads scalar attributes of a single-result op, or the per-result entry
/// of the array forms (-1 / "arena" meaning "not this kind").
ResultPlan readPlan(Operation *op, unsigned resultNumber) {
  ResultPlan plan;
  if (auto offset = op->getAttrOfType<IntegerAttr>(kOffsetAttr))
    plan.offset = offset.getInt();
  if (auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr))
    if (resultNumber < offsets.size() && offsets[resultNumber] >= 0)
      plan.offset = offsets[resultNumber];
  if (auto region = op->getAttrOfType<StringAttr>(kRegionAttr))
    plan.region = region.getValue();
  if (auto regions = op->getAttrOfType<ArrayAttr>(kRegionAttr))
    if (resultNumber < regions.size())
      if (auto region = dyn_cast<StringAttr>(regions[resultNumber]))
        if (region.getValue() != "arena")
          plan.region = region.getValue();
  if (auto arg = op->getAttrOfType<IntegerAttr>(kInplaceOfAttr))
    plan.inplaceOf = arg.getInt();
  if (auto args = op->getAttrOfType<DenseI64ArrayAttr>(kInplaceOfAttr))
    if (resultNumber < args.size() && args[resultNumber] >= 0)
      plan.inplaceOf = args[resultNumber];
  return plan;
}

std::string describe(const Buffer &buffer) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "result #" << buffer.resultNumber << " of '" << buffer.def->getName()
     << "' at [" << buffer.offset << ", " << buffer.offset + buffer.bytes
     << ")";
  return text;
}

/// `holders` maps an argument to the buffer that holds its storage now:
/// the argument's, or the last in-place result of it (a chain of block
/// updates of one parameter, each reading the previous one's result).
LogicalResult
verifyInPlace(func::FuncOp func, const BufferLiveness &live,
              const Buffer &buffer, int64_t argNumber,
              llvm::DenseMap<int64_t, const Buffer *> &holders) {
  Operation *op = buffer.def;
  Block &block = func.getBody().front();
  if (argNumber < 0 || argNumber >= int64_t(block.getNumArguments()))
    return op->emitOpError()
           << "result #" << buffer.resultNumber << " is in place of argument #"
           << argNumber << ", which does not exist";
  const Buffer *&arg = holders[argNumber];
  if (!arg)
    arg = live.lookup(block.getArgument(argNumber));
  bool isOperand = arg && llvm::any_of(op->getOperands(), [&](Value v) {
                     return live.lookup(v) == arg;
                   });
  if (!isOperand)
    return op->emitOpError()
           << "result #" << buffer.resultNumber << " is in place of argument #"
           << argNumber << ", which it does not read";
  if (arg->end != buffer.start)
    return op->emitOpError()
           << "result #" << buffer.resultNumber << " is in place of argument #"
           << argNumber << ", which is still used after '" << op->getName()
           << "'";
  if (arg->bytes != buffer.bytes)
    return op->emitOpError()
           << "result #" << buffer.resultNumber << " (" << buffer.bytes
           << " bytes) is in place of "
           << "argument #" << argNumber << " (" << arg->bytes << " bytes)";
  arg = &buffer;
  return success();
}

} // namespace

bool tcc::readsElementwise(Operation *op, unsigned operand) {
  auto fusion = dyn_cast<exec::FusionOp>(op);
  if (!fusion || fusion->getNumResults() != 1 ||
      operand >= fusion->getNumOperands())
    return false;
  auto result = dyn_cast<RankedTensorType>(fusion->getResult(0).getType());
  auto input = dyn_cast<RankedTensorType>(fusion->getOperand(operand).getType());
  if (!result || !input || result.getShape() != input.getShape() ||
      !result.getElementType().isIntOrFloat() ||
      !input.getElementType().isIntOrFloat() ||
      result.getElementTypeBitWidth() != input.getElementTypeBitWidth())
    return false;
  Block &body = fusion.getBody().front();
  for (Operation &inner : body.without_terminator())
    if (!inner.hasTrait<OpClass::Elementwise>() &&
        !isa<tcc::ConstantOp, tcc::BroadcastOp>(inner))
      return false;
  for (Operation *user : body.getArgument(operand).getUsers()) {
    if (isa<exec::YieldOp>(user))
      continue;
    if (!user->hasTrait<OpClass::Elementwise>() ||
        llvm::any_of(user->getResultTypes(), [&](Type t) {
          auto r = dyn_cast<RankedTensorType>(t);
          return !r || r.getShape() != result.getShape();
        }))
      return false;
  }
  return true;
}

LogicalResult tcc::verifyMemoryPlan(func::FuncOp func) {
  FailureOr<BufferLiveness> computed = computeBufferLiveness(func);
  if (failed(computed))
    return failure();
  BufferLiveness &live = *computed;

  std::optional<int64_t> arenaBytes;
  if (auto attr = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
    arenaBytes = attr.getInt();

  SmallVector<const Buffer *> arena;
  llvm::DenseMap<int64_t, const Buffer *> holders;
  for (Buffer &buffer : live.buffers) {
    if (!buffer.def)
      continue;
    Operation *op = buffer.def;
    ResultPlan plan = readPlan(op, buffer.resultNumber);
    if (buffer.region != BufferRegion::Arena) {
      if (plan.region && *plan.region != stringifyRegion(buffer.region))
        return op->emitOpError()
               << "result #" << buffer.resultNumber << " lives in the '"
               << stringifyRegion(buffer.region) << "' region, not '"
               << *plan.region << "'";
      continue;
    }
    if (plan.region == "inplace") {
      if (!plan.inplaceOf)
        return op->emitOpError()
               << "result #" << buffer.resultNumber
               << " is in place but has no " << kInplaceOfAttr;
      if (failed(
              verifyInPlace(func, live, buffer, *plan.inplaceOf, holders)))
        return failure();
      continue;
    }
    if (plan.region)
      return op->emitOpError()
             << "result #" << buffer.resultNumber
             << " needs arena storage, not the '" << *plan.region << "' region";
    if (!plan.offset)
      return op->emitOpError()
             << "result #" << buffer.resultNumber
             << " needs an arena buffer but has no " << kOffsetAttr;
    buffer.offset = *plan.offset;
    if (buffer.offset < 0 || buffer.offset % kArenaAlignment != 0)
      return op->emitOpError()
             << "result #" << buffer.resultNumber << " has offset "
             << buffer.offset << ", not a multiple of " << kArenaAlignment;
    if (!arenaBytes)
      return func.emitOpError()
             << "has arena buffers but no " << kArenaBytesAttr;
    if (buffer.offset + buffer.bytes > *arenaBytes)
      return op->emitOpError() << describe(buffer) << " exceeds "
                               << kArenaBytesAttr << " = " << *arenaBytes;
    arena.push_back(&buffer);
  }

  // Sorted by start, a buffer can only collide with earlier-defined ones.
  for (auto [i, later] : llvm::enumerate(arena)) {
    for (const Buffer *earlier : ArrayRef(arena).take_front(i)) {
      bool liveTogether =
          earlier->start <= later->end && later->start <= earlier->end;
      bool overlap = earlier->offset < later->offset + later->bytes &&
                     later->offset < earlier->offset + earlier->bytes;
      // A fusion writing over the operand that dies at it (exec.reuses).
      auto reuses = later->def->getAttrOfType<IntegerAttr>(kReusesAttr);
      if (reuses && later->start == earlier->end &&
          later->offset == earlier->offset && later->bytes == earlier->bytes &&
          reuses.getInt() >= 0 &&
          reuses.getInt() < int64_t(later->def->getNumOperands()) &&
          live.lookup(later->def->getOperand(reuses.getInt())) == earlier &&
          readsElementwise(later->def, unsigned(reuses.getInt())))
        continue;
      if (liveTogether && overlap && later->bytes && earlier->bytes) {
        InFlightDiagnostic diag = later->def->emitOpError()
                                  << describe(*later) << " overlaps "
                                  << describe(*earlier)
                                  << ", which is still live";
        diag.attachNote(earlier->def->getLoc())
            << "overlapped buffer defined here";
        return diag;
      }
    }
  }

  // Reshapes share their root's bytes, views a piece of them; an offset
  // that says otherwise is a stale plan.
  for (Operation &op : func.getBody().front()) {
    auto offset = op.getAttrOfType<IntegerAttr>(kOffsetAttr);
    const Buffer *root = op.hasTrait<tcc::OpClass::View>()
                             ? live.lookup(op.getResult(0))
                             : nullptr;
    if (!offset || !root || !root->def || root->def == &op)
      continue;
    ResultPlan rootPlan = readPlan(root->def, root->resultNumber);
    int64_t delta = live.viewOffset.lookup(op.getResult(0));
    if (!rootPlan.offset || *rootPlan.offset + delta != offset.getInt())
      return op.emitOpError()
             << "aliases result #" << root->resultNumber << " of '"
             << root->def->getName() << "' but has a different "
             << kOffsetAttr << " (the alias starts at byte " << delta
             << " of it)";
  }
  return success();
}
