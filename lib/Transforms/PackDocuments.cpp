// tcc-pack-documents: rows of a batch hold several documents. @forward takes
// `position_ids` [B, T]; tcc.segment_index turns it into the documents'
// offsets, every self-attention attends within its document only, and the
// position embedding reads the per-document positions instead of the
// constant 0 .. T-1 (Passes.td has the contract).
#include "tcc/Transforms/Passes.h"

#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace tcc {
#define GEN_PASS_DEF_PACKDOCUMENTS
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

constexpr llvm::StringLiteral kPositions = "position_ids";

/// Whether `v` is a constant holding 0, 1, ..., T-1 in every row of its
/// last dim, T == `seq` (shape [T], [1, T] or [B, T]).
bool isPositionRange(Value v, int64_t seq) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return false;
  auto type = tensorTypeOf(v);
  if (!type.getElementType().isInteger(64) && !type.getElementType().isInteger(32))
    return false;
  if (type.getRank() < 1 || type.getRank() > 2 || type.getShape().back() != seq)
    return false;
  auto dense = llvm::dyn_cast<DenseIntElementsAttr>(c.getValue());
  if (!dense)
    return false;
  int64_t i = 0;
  for (const APInt &x : dense.getValues<APInt>())
    if (x.getSExtValue() != i++ % seq)
      return false;
  return true;
}

struct PackDocumentsPass : tcc::impl::PackDocumentsBase<PackDocumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>("forward");
    if (!func) {
      module.emitError("tcc-pack-documents: no @forward");
      return signalPassFailure();
    }
    SmallVector<AttentionOp> attention;
    func.walk([&](AttentionOp op) { attention.push_back(op); });
    if (attention.empty()) {
      func.emitError("--pack-documents: the model has no attention to keep "
                     "documents apart");
      return signalPassFailure();
    }
    int64_t batch = -1, seq = -1;
    for (AttentionOp op : attention) {
      auto q = tensorTypeOf(op.getQuery()), k = tensorTypeOf(op.getKey());
      if (op.getKeyMask()) {
        op.emitError("--pack-documents: this attention already takes a key "
                     "mask; packed documents replace padding (compile without "
                     "--pack-documents to keep it)");
        return signalPassFailure();
      }
      if (q.getDimSize(2) != k.getDimSize(2) ||
          (batch >= 0 && (q.getDimSize(0) != batch || q.getDimSize(2) != seq))) {
        op.emitError("--pack-documents: attention over ")
            << q.getDimSize(0) << " x " << q.getDimSize(2) << " queries and "
            << k.getDimSize(2)
            << " keys is not self-attention over the batch's [B, T] tokens";
        return signalPassFailure();
      }
      batch = q.getDimSize(0), seq = q.getDimSize(2);
    }

    // position_ids: an argument of that name, or a new one.
    OpBuilder b(func.getContext());
    auto posType = RankedTensorType::get({batch, seq}, b.getI64Type());
    Value positions;
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (auto name = func.getArgAttrOfType<StringAttr>(i, "tcc.name");
          name && name.getValue() == kPositions) {
        positions = func.getArgument(i);
        auto t = tensorTypeOf(positions);
        if (t.getShape() != posType.getShape() ||
            !llvm::isa<IntegerType>(t.getElementType())) {
          func.emitError("--pack-documents: input 'position_ids' is ")
              << t << ", expected " << posType;
          return signalPassFailure();
        }
      }
    if (!positions) {
      unsigned index = func.getNumArguments();
      if (failed(func.insertArgument(
              index, posType,
              b.getDictionaryAttr(b.getNamedAttr("tcc.name", b.getStringAttr(kPositions))),
              func.getLoc())))
        return signalPassFailure();
      positions = func.getArgument(index);
    }

    b.setInsertionPointToStart(&func.getBody().front());
    Value cu = SegmentIndexOp::create(b, func.getLoc(), positions);
    for (AttentionOp op : attention)
      op.getKeyMaskMutable().assign(cu);

    // The position embedding: a lookup of the constant 0 .. T-1 reads the
    // per-document positions; the [T, C] it gave broadcast over the batch
    // into an elementwise op, which takes the [B, T, C] as it is.
    SmallVector<EmbeddingOp> lookups;
    func.walk([&](EmbeddingOp op) {
      if (isPositionRange(op.getIds(), seq))
        lookups.push_back(op);
    });
    for (EmbeddingOp op : lookups) {
      for (Operation *user : op->getUsers())
        if (!llvm::isa<AddOp>(user) ||
            tensorTypeOf(user->getResult(0)).getRank() != 3 ||
            tensorTypeOf(user->getResult(0)).getDimSize(0) != batch) {
          user->emitError("--pack-documents: the position embedding ")
              << "reaches this op, which does not add it to the [B, T, C] "
                 "token embeddings; its positions cannot restart per document";
          return signalPassFailure();
        }
      b.setInsertionPoint(op);
      Value perDoc = EmbeddingOp::create(b, op.getLoc(), op.getTable(), positions);
      op.getResult().replaceAllUsesWith(perDoc);
      Operation *ids = op.getIds().getDefiningOp();
      op.erase();
      if (ids && ids->use_empty())
        ids->erase();
    }
    // Other uses of the positions 0 .. T-1 (a rotary table, ...) keep them.
    func.walk([&](ConstantOp c) {
      if (isPositionRange(c.getResult(), seq) && !c->use_empty())
        c.emitWarning("--pack-documents: the positions 0 .. ")
            << seq - 1 << " reach " << (*c->getUsers().begin())->getName()
            << ", not a position embedding: they do not restart per document";
    });
  }
};

} // namespace
