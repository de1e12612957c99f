#include "exec/ExecOps.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace tcc::exec;
using tcc::InPlaceOpInterface;
using tcc::LibraryCallOpInterface;

#define GET_OP_CLASSES
#include "exec/ExecOps.cpp.inc"

namespace tcc::exec {

bool isFusibleOp(Operation *op) {
  return op->hasTrait<tcc::OpClass::Elementwise>();
}

bool isStructuredOp(Operation *op) {
  return op->hasTrait<tcc::OpClass::Structured>() && !isLibraryOp(op);
}

bool isLayoutOp(Operation *op) { return op->hasTrait<tcc::OpClass::Layout>(); }

bool isLibraryOp(Operation *op) {
  auto call = llvm::dyn_cast<LibraryCallOpInterface>(op);
  return call && call.isLibraryCall();
}

bool isSplatConstant(Operation *op) {
  auto constant = llvm::dyn_cast<ConstantOp>(op);
  if (!constant)
    return false;
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(constant.getValue()))
    return dense.isSplat();
  return false;
}

} // namespace tcc::exec

Operation *FusionOp::getStructuredOp() {
  // In a layout chain every member feeds the last one, so the last in block
  // order is the one nearest the result.
  Operation *last = nullptr;
  for (Operation &op : getBody().front())
    if (isStructuredOp(&op))
      last = &op;
  return last;
}

static ArrayRef<int64_t> shapeOf(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getShape();
}

/// Whether `op` belongs to a body's layout chain (or is its one structured
/// op): a layout or reduction op, or a reshape.
static bool isChainOp(Operation *op) {
  return isStructuredOp(op) || llvm::isa<tcc::ReshapeOp>(op);
}

/// An isolated body (exec.fusion, exec.call) takes the op's operands as its
/// arguments, one for one and of the same types.
static LogicalResult verifyBodyArguments(Operation *op, Block &body) {
  if (body.getNumArguments() != op->getNumOperands())
    return op->emitOpError("has ")
           << op->getNumOperands() << " operands but its body has "
           << body.getNumArguments() << " arguments";
  for (auto [i, input, arg] :
       llvm::enumerate(op->getOperands(), body.getArguments()))
    if (input.getType() != arg.getType())
      return op->emitOpError("operand #")
             << i << " has type " << input.getType() << " but body argument #"
             << i << " has type " << arg.getType();
  return success();
}

/// Checks the ops of one kernel part (a whole body, or the ops one result
/// of a kernel of siblings is computed from, which may share ops with
/// another's: CSE merges equal ops) against the body's grammar, counting
/// the uses inside the part: one structured op or one layout chain, a
/// prologue, and an epilogue of the shape of `yielded`. Fills `epilogue`
/// with the values computed from the part's structured op.
static LogicalResult verifyPart(Operation *fusion, ArrayRef<Operation *> ops,
                                Value yielded,
                                llvm::DenseSet<Value> &epilogue) {
  ArrayRef<int64_t> resultShape = shapeOf(yielded);
  llvm::SmallPtrSet<Operation *, 16> part(ops.begin(), ops.end());
  auto usersIn = [&](Value v) {
    SmallVector<Operation *> users;
    for (Operation *user : v.getUsers())
      if (part.contains(user))
        users.push_back(user);
    return users;
  };
  // The structured ops and reshapes: one op of any kind, or a chain of
  // layout ops with reshapes between them.
  SmallVector<Operation *> chain;
  Operation *first = nullptr;
  for (Operation *op : ops) {
    if (isStructuredOp(op)) {
      if (first && !(isLayoutOp(first) && isLayoutOp(op)))
        return op->emitOpError("is a second layout or reduction op in one "
                               "'exec.fusion' (a kernel holds one, or a chain "
                               "of transpose, slice and concat ops; the first "
                               "is '")
               << first->getName() << "')";
      if (!first)
        first = op;
      chain.push_back(op);
    } else if (llvm::isa<tcc::ReshapeOp>(op)) {
      chain.push_back(op);
    } else if (!isFusibleOp(op) && !isSplatConstant(op)) {
      return op->emitOpError("cannot be fused into 'exec.fusion'");
    }
  }
  // Every member but the last has one use, by the next member, so the
  // chain is a tree whose ops are each evaluated at one element per output
  // element; its last op (the top) is what the epilogue reads.
  Operation *top = nullptr;
  for (Operation *op : chain) {
    if (llvm::isa<tcc::ReshapeOp>(op) && !(first && isLayoutOp(first)))
      return op->emitOpError("in an 'exec.fusion' must be part of a chain of "
                             "layout ops (transpose, slice, concat)");
    SmallVector<Operation *> users = usersIn(op->getResult(0));
    if (users.size() == 1 && isChainOp(users.front()))
      continue;
    if (llvm::any_of(users, isChainOp))
      return op->emitOpError("is read by the next op of its layout chain and "
                             "by other ops; inside a chain each value has "
                             "exactly one use");
    if (top)
      return op->emitOpError("ends a second layout chain in one "
                             "'exec.fusion' (the first ends at '")
             << top->getName() << "')";
    top = op;
  }

  // Values computed from the top's result: the epilogue.
  if (top) {
    if (shapeOf(top->getResult(0)) != resultShape)
      return top->emitOpError("has result type ")
             << top->getResult(0).getType()
             << ", but the layout or reduction op of an 'exec.fusion' (of a "
                "chain: its last op) must have the kernel's result shape ("
             << yielded.getType() << ")";
    epilogue.insert(top->getResult(0));
  }
  for (Operation *op : ops) {
    if (isChainOp(op) ||
        llvm::none_of(op->getOperands(),
                      [&](Value v) { return epilogue.contains(v); }))
      continue;
    if (shapeOf(op->getResult(0)) != resultShape)
      return op->emitOpError("reads the result of '")
             << top->getName() << "' but has type "
             << op->getResult(0).getType()
             << "; an epilogue op must have the kernel's result shape ("
             << yielded.getType() << ")";
    epilogue.insert(op->getResult(0));
  }
  return success();
}

static bool isReduction(Operation &op) {
  return isa<tcc::ReduceSumOp, tcc::ReduceMeanOp, tcc::ReduceMaxOp,
             tcc::ReduceMinOp>(op);
}

LogicalResult FusionOp::verify() {
  Block &body = getBody().front();
  if (failed(verifyBodyArguments(*this, body)))
    return failure();
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in 'exec.yield'");
  if (yield.getValues().size() != getNumResults())
    return emitOpError("yields ")
           << yield.getValues().size() << " values but has "
           << getNumResults() << " results";
  for (auto [i, value, result] :
       llvm::enumerate(yield.getValues(), getResults()))
    if (value.getType() != result.getType())
      return emitOpError("yields ")
             << value.getType() << " as value #" << i << " but its result #"
             << i << " is " << result.getType();

  SmallVector<Operation *> all;
  for (Operation &op : body.without_terminator())
    all.push_back(&op);
  bool reduces = llvm::any_of(all, [](Operation *op) { return isReduction(*op); });
  llvm::DenseSet<Value> epilogue;
  // A reduction's prologue may be a layout chain of its input's shape (the
  // attention gradient's q/k/v concat under the qkv bias gradient): that
  // part is checked as a kernel body of its own, the rest without it.
  Operation *reduction = nullptr;
  for (Operation *op : all)
    if (isReduction(*op))
      reduction = op;
  SmallVector<Operation *> prologueChain;
  if (reduction) {
    llvm::SmallPtrSet<Operation *, 16> slice;
    SmallVector<Operation *> work;
    if (Operation *def = reduction->getOperand(0).getDefiningOp())
      work.push_back(def);
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      if (!slice.insert(op).second)
        continue;
      for (Value v : op->getOperands())
        if (Operation *def = v.getDefiningOp())
          work.push_back(def);
    }
    if (llvm::any_of(slice, [](Operation *op) { return isLayoutOp(op); }))
      for (Operation *op : all)
        if (slice.contains(op))
          prologueChain.push_back(op);
  }
  if (!prologueChain.empty()) {
    llvm::DenseSet<Value> chainEpilogue;
    if (failed(verifyPart(*this, prologueChain, reduction->getOperand(0),
                          chainEpilogue)))
      return failure();
    SmallVector<Operation *> rest;
    for (Operation *op : all)
      if (!llvm::is_contained(prologueChain, op))
        rest.push_back(op);
    if (failed(verifyPart(*this, rest, getResult(), epilogue)))
      return failure();
  } else if (getNumResults() == 1 || reduces) {
    if (failed(verifyPart(*this, all, getResult(), epilogue)))
      return failure();
  } else {
    // Siblings: each result computed from the ops it reads (parts that
    // cover the body), each part a kernel body of the result shape.
    llvm::DenseSet<Operation *> covered;
    SmallVector<SmallVector<Operation *>> parts(getNumResults());
    for (auto [k, value] : llvm::enumerate(yield.getValues())) {
      if (shapeOf(value) != shapeOf(getResult()))
        return emitOpError("result #")
               << k << " has type " << value.getType()
               << "; the results of a kernel without a reduction have its "
                  "first result's shape";
      SmallVector<Operation *> work;
      if (Operation *def = value.getDefiningOp())
        work.push_back(def);
      if (!value.getDefiningOp() || isSplatConstant(value.getDefiningOp()))
        return emitOpError("result #")
               << k << " is not computed by the kernel";
      llvm::SmallPtrSet<Operation *, 16> seen;
      while (!work.empty()) {
        Operation *op = work.pop_back_val();
        if (!seen.insert(op).second)
          continue;
        covered.insert(op);
        for (Value v : op->getOperands())
          if (Operation *def = v.getDefiningOp())
            work.push_back(def);
      }
      for (Operation *op : all)
        if (seen.contains(op))
          parts[k].push_back(op);
    }
    for (Operation *op : all)
      if (!covered.contains(op) && !isSplatConstant(op))
        return op->emitOpError("computes no result of its 'exec.fusion'");
    for (auto [k, value] : llvm::enumerate(yield.getValues())) {
      llvm::DenseSet<Value> partEpilogue;
      if (failed(verifyPart(*this, parts[k], value, partEpilogue)))
        return failure();
    }
    return success();
  }
  if (getNumResults() == 1)
    return success();
  // Stores: elementwise prologue values of a reduction, of its input's
  // shape, or the top of its prologue's layout chain.
  ArrayRef<int64_t> inputShape = shapeOf(reduction->getOperand(0));
  for (auto [i, value] : llvm::enumerate(yield.getValues().drop_front())) {
    Operation *def = value.getDefiningOp();
    bool chainTop = def && llvm::is_contained(prologueChain, def) &&
                    isLayoutOp(def);
    if (!def || !(isFusibleOp(def) || chainTop) || epilogue.contains(value) ||
        shapeOf(value) != inputShape)
      return emitOpError("result #")
             << i + 1
             << " must be an elementwise prologue value of the reduction, of "
                "its input's shape";
  }
  return success();
}

//===----------------------------------------------------------------------===//
// exec.call
//===----------------------------------------------------------------------===//

LibraryCallOpInterface CallOp::getCallee() {
  return llvm::cast<LibraryCallOpInterface>(getBody().front().front());
}

LogicalResult CallOp::verify() {
  Block &body = getBody().front();
  if (failed(verifyBodyArguments(*this, body)))
    return failure();
  if (body.getOperations().size() != 2)
    return emitOpError("body holds ")
           << body.getOperations().size() - 1
           << " ops; a call runs exactly one library op";
  Operation &callee = body.front();
  auto call = llvm::dyn_cast<LibraryCallOpInterface>(callee);
  if (!call || !call.isLibraryCall())
    return emitOpError("runs '")
           << callee.getName()
           << "', which is not a library call (see LibraryCallOpInterface)";
  // The callee reads the arguments in order, each once: the call's operands
  // are the op's.
  if (!llvm::equal(callee.getOperands(), body.getArguments()))
    return emitOpError("body op must take the body arguments in order as "
                       "its operands");
  auto yield = llvm::dyn_cast<YieldOp>(body.getTerminator());
  if (!yield || !llvm::equal(yield.getValues(), callee.getResults()))
    return emitOpError("must yield the results of '")
           << callee.getName() << "' in order";
  if (getResultTypes() != callee.getResultTypes())
    return emitOpError("result types differ from those of '")
           << callee.getName() << "'";
  return success();
}

Value CallOp::getInPlaceOperand(unsigned result) {
  auto inPlace = llvm::dyn_cast<InPlaceOpInterface>(*getCallee());
  if (!inPlace)
    return {};
  auto arg =
      llvm::dyn_cast_or_null<BlockArgument>(inPlace.getInPlaceOperand(result));
  return arg ? getInputs()[arg.getArgNumber()] : Value();
}

//===----------------------------------------------------------------------===//
// Collectives
//===----------------------------------------------------------------------===//

/// Operands and results pair up, of one element type; with a world_size
/// the result's leading dim is the operand's times it (`gathers`) or
/// divided by it, else the shapes are equal.
static LogicalResult verifyCollective(Operation *op, int64_t worldSize,
                                      bool gathers) {
  if (op->getNumOperands() == 0)
    return op->emitOpError("exchanges no tensors");
  if (op->getNumResults() != op->getNumOperands())
    return op->emitOpError("has ")
           << op->getNumOperands() << " operands but " << op->getNumResults()
           << " results; each operand has its result";
  if (worldSize < 1)
    return op->emitOpError("world_size ") << worldSize << " is not positive";
  for (auto [i, in, out] :
       llvm::enumerate(op->getOperandTypes(), op->getResultTypes())) {
    auto a = llvm::cast<RankedTensorType>(in);
    auto r = llvm::cast<RankedTensorType>(out);
    if (!a.hasStaticShape() || !r.hasStaticShape())
      return op->emitOpError("operand #") << i << " is not statically shaped";
    if (a.getElementType() != r.getElementType())
      return op->emitOpError("result #")
             << i << " has element type " << r.getElementType()
             << " but its operand " << a.getElementType();
    SmallVector<int64_t> expected(a.getShape());
    if (op->hasAttr("world_size")) {
      if (expected.empty())
        return op->emitOpError("operand #")
               << i << " is a scalar; it needs a leading dimension to split";
      if (gathers) {
        expected[0] *= worldSize;
      } else {
        if (expected[0] % worldSize != 0)
          return op->emitOpError("operand #")
                 << i << " has leading dimension " << expected[0]
                 << ", which world_size " << worldSize << " does not divide";
        expected[0] /= worldSize;
      }
    }
    if (r.getShape() != ArrayRef<int64_t>(expected))
      return op->emitOpError("result #")
             << i << " has type " << r << ", expected "
             << RankedTensorType::get(expected, a.getElementType());
  }
  return success();
}

/// I64Attr reads as uint64_t; bucket and stream are signed in the IR.
template <class Op> static bool negativeBucketOrStream(Op op) {
  return op.getBucketAttr().getInt() < 0 || op.getStreamAttr().getInt() < 0;
}

LogicalResult AllReduceOp::buildVjp(OpBuilder &builder, ValueRange resultGrads,
                                    SmallVectorImpl<Value> &operandGrads) {
  SmallVector<Value> flowing;
  for (Value g : resultGrads)
    if (g)
      flowing.push_back(g);
  auto reduce = AllReduceOp::create(
      builder, getLoc(), ValueRange(flowing).getTypes(), flowing,
      getReductionAttr(), getBucketAttr(), builder.getI64IntegerAttr(0),
      builder.getI64IntegerAttr(0), getScatteredOnlyAttr());
  unsigned next = 0;
  for (Value g : resultGrads)
    operandGrads.push_back(g ? reduce.getResult(next++) : Value());
  return success();
}

int64_t ViewOp::byteOffset(Type elementType, int64_t offset) {
  return offset *
         int64_t(llvm::divideCeil(elementType.getIntOrFloatBitWidth(), 8));
}

LogicalResult ViewOp::verify() {
  auto source = llvm::cast<RankedTensorType>(getSource().getType());
  auto result = llvm::cast<RankedTensorType>(getType());
  if (source.getElementType() != result.getElementType())
    return emitOpError() << "result element type " << result.getElementType()
                         << " is not the source's " << source.getElementType();
  int64_t offset = getOffset();
  if (!source.hasStaticShape() || !result.hasStaticShape() || offset < 0 ||
      offset + result.getNumElements() > source.getNumElements())
    return emitOpError() << "elements [" << offset << ", "
                         << offset + result.getNumElements()
                         << ") are not within the source's "
                         << source.getNumElements();
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (negativeBucketOrStream(*this))
    return emitOpError("bucket and stream are non-negative");
  int64_t gradients = getGradientsAttr().getInt();
  if (gradients < 0 || gradients > int64_t(getInputs().size()))
    return emitOpError("gradients ")
           << gradients << " is not a count of its " << getInputs().size()
           << " operands";
  if (gradients > 0 && getScatteredOnly())
    return emitOpError("reduces gradients and partial sums of them at once; "
                       "gradients and scattered_only exclude each other");
  if (getScatteredOnly() && getReduction() != Reduction::sum)
    return emitOpError("scattered_only sums partial sums; its reduction is "
                       "sum");
  return verifyCollective(*this, 1, false);
}

LogicalResult ReduceScatterOp::verify() {
  if (negativeBucketOrStream(*this))
    return emitOpError("bucket and stream are non-negative");
  return verifyCollective(*this, getWorldSizeAttr().getInt(), false);
}

LogicalResult AllGatherOp::verify() {
  if (negativeBucketOrStream(*this))
    return emitOpError("bucket and stream are non-negative");
  return verifyCollective(*this, getWorldSizeAttr().getInt(), true);
}
