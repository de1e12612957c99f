// Folds the head transposes around attention into its layout: tcc.attention
// and tcc.attention_grad read q, k and v as token rows where the
// projection wrote them (with a column offset into a fused q/k/v
// projection's output) and write their results as token rows, so the
// transposes (and the split of a fused projection) are not copied by any
// kernel, and the three gradients of a fused q/k/v projection's output
// are written into one tensor of its layout (no concat). The pass
// reference (include/tcc/Transforms/LowerPasses.td) has the rules. The values
// are the same, bit for bit: only where they are stored changes.
#include "tcc/Transforms/Passes.h"

#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace tcc {
#define GEN_PASS_DEF_FOLDATTENTIONLAYOUT
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

bool isHeadSwap(TransposeOp t) {
  return t.getPerm() == ArrayRef<int64_t>{0, 2, 1, 3};
}

/// A heads-first operand [B, H, T, D] as token rows: the [B, T, W] tensor
/// whose columns [column, column + H * D) hold it.
struct RowsView {
  Value rows;
  int64_t column = 0;
};

/// `x` = transpose(y, [0, 2, 1, 3]) with y [B, T, H, D] a reshape of some
/// z: z itself when it is [B, T, H * D]; the input of a split or a
/// unit-stride slice of z's last dim, with the column it starts at; else
/// a (view) reshape of y to [B, T, H * D], made at `b`'s insertion point.
std::optional<RowsView> rowsOf(Value x, OpBuilder &b) {
  auto t = x.getDefiningOp<TransposeOp>();
  if (!t || !isHeadSwap(t))
    return std::nullopt;
  Value y = t.getInput();
  ArrayRef<int64_t> s = tensorTypeOf(y).getShape();
  auto rowsType = RankedTensorType::get({s[0], s[1], s[2] * s[3]},
                                        tensorTypeOf(y).getElementType());
  Value z;
  if (auto r = y.getDefiningOp<ReshapeOp>())
    if (r.getInput().getType() == rowsType)
      z = r.getInput();
  if (!z)
    return RowsView{ReshapeOp::create(b, t.getLoc(), rowsType, y), 0};
  // A part of a wider row: the split of a fused projection, or a slice.
  if (auto split = z.getDefiningOp<SplitOp>()) {
    auto in = tensorTypeOf(split.getInput());
    if (split.getAxis() == 2 && in.getRank() == 3) {
      unsigned i = llvm::cast<OpResult>(z).getResultNumber();
      int64_t column = 0;
      for (unsigned j = 0; j < i; ++j)
        column += split.getSizes()[j];
      return RowsView{split.getInput(), column};
    }
  }
  if (auto slice = z.getDefiningOp<SliceOp>()) {
    auto in = tensorTypeOf(slice.getInput());
    ArrayRef<int64_t> starts = slice.getStarts(), strides = slice.getStrides();
    if (in.getRank() == 3 && in.getDimSize(0) == s[0] && in.getDimSize(1) == s[1] &&
        starts[0] == 0 && starts[1] == 0 && llvm::all_of(strides, [](int64_t v) { return v == 1; }))
      return RowsView{slice.getInput(), starts[2]};
  }
  return RowsView{z, 0};
}

/// Whether every use of `v` is a head swap (so token rows replace it).
bool onlyHeadSwaps(Value v) {
  return llvm::all_of(v.getUsers(), [](Operation *user) {
    auto t = llvm::dyn_cast<TransposeOp>(user);
    return t && isHeadSwap(t);
  });
}

/// Whether `x` is a head swap of a [B, T, H, D] value (rowsOf matches).
bool isSwapped(Value x) {
  auto t = x.getDefiningOp<TransposeOp>();
  return t && isHeadSwap(t) && tensorTypeOf(t.getInput()).getRank() == 4;
}

/// The head swaps of `old` (heads first) read `rows` ([B, T, H * D])
/// instead: each becomes a reshape of it, and a reshape of that to the
/// rows' type is `rows` itself.
void replaceSwaps(Value old, Value rows) {
  for (Operation *user : llvm::make_early_inc_range(old.getUsers())) {
    auto t = llvm::cast<TransposeOp>(user);
    OpBuilder b(t);
    Value heads = ReshapeOp::create(b, t.getLoc(), t.getType(), rows);
    for (Operation *u : llvm::make_early_inc_range(t->getUsers()))
      if (auto r = llvm::dyn_cast<ReshapeOp>(u); r && r.getType() == rows.getType()) {
        r.getResult().replaceAllUsesWith(rows);
        r->erase();
      }
    t.getResult().replaceAllUsesWith(heads);
    t->erase();
    if (heads.use_empty())
      heads.getDefiningOp()->erase();
  }
}

/// The discardable attributes of `from` (tcc.token_rows) on `to`.
void copyDiscardable(Operation *from, Operation *to) {
  for (NamedAttribute a : from->getDiscardableAttrs())
    to->setAttr(a.getName(), a.getValue());
}

/// Erases `op` and then its operands' producers that became unused, when
/// they are pure layout ops (the transposes, reshapes and splits left).
void eraseDead(Operation *op) {
  SmallVector<Operation *> work{op};
  while (!work.empty()) {
    Operation *o = work.pop_back_val();
    if (!o->use_empty())
      continue;
    SmallVector<Operation *> producers;
    for (Value v : o->getOperands())
      if (Operation *p = v.getDefiningOp())
        if (llvm::isa<TransposeOp, ReshapeOp, SplitOp, SliceOp>(p))
          producers.push_back(p);
    o->erase();
    llvm::append_range(work, producers);
  }
}

/// Heads-first attention with swapped operands, d == dv, results read by
/// swaps only: foldable.
template <class Op> bool foldable(Op op, ValueRange resultsToCheck) {
  if (op.getHeads() != 0)
    return false;
  AttentionDims a = op.getDims();
  if (a.d != a.dv || !isSwapped(op.getQuery()) || !isSwapped(op.getKey()) ||
      !isSwapped(op.getValue()))
    return false;
  return llvm::all_of(resultsToCheck, onlyHeadSwaps);
}

/// The token-rows views of `op`'s query, key and value (head swaps:
/// foldable() holds), made at `b`; the swaps go to `swaps`, to be erased
/// once unused.
template <class Op>
SmallVector<RowsView> operandViews(Op op, OpBuilder &b, SmallVectorImpl<Operation *> &swaps) {
  SmallVector<RowsView> views;
  for (Value x : {op.getQuery(), op.getKey(), op.getValue()}) {
    views.push_back(*rowsOf(x, b));
    if (!llvm::is_contained(swaps, x.getDefiningOp())) // q, k, v may be one
      swaps.push_back(x.getDefiningOp());
  }
  return views;
}

bool foldForward(AttentionOp op) {
  if (!foldable(op, op->getResults()))
    return false;
  AttentionDims a = op.getDims();
  OpBuilder b(op);
  SmallVector<Operation *> old;
  SmallVector<RowsView> views = operandViews(op, b, old);
  auto rows = AttentionOp::create(b, op.getLoc(), views[0].rows, views[1].rows, views[2].rows,
                                  op.getKeyMask(), op.getScaleAttr(), op.getCausalAttr(),
                                  b.getI64IntegerAttr(a.heads), b.getI64IntegerAttr(a.d),
                                  b.getI64IntegerAttr(views[0].column),
                                  b.getI64IntegerAttr(views[1].column),
                                  b.getI64IntegerAttr(views[2].column));
  copyDiscardable(op, rows);
  replaceSwaps(op.getResult(), rows.getResult());
  op->erase();
  for (Operation *o : old)
    eraseDead(o);
  return true;
}

bool foldBackward(AttentionGradOp op) {
  if (!foldable(op, op->getResults()) || !isSwapped(op.getResultGrad()))
    return false;
  AttentionDims a = op.getDims();
  OpBuilder b(op);
  SmallVector<Operation *> old;
  SmallVector<RowsView> views = operandViews(op, b, old);
  // The result gradient must be contiguous rows [B, T, H * D]: what its
  // swap's input was reshaped from, or a reshape of that input.
  auto swap = op.getResultGrad().getDefiningOp<TransposeOp>();
  Value y = swap.getInput();
  ArrayRef<int64_t> s = tensorTypeOf(y).getShape();
  auto rowsType = RankedTensorType::get({s[0], s[1], s[2] * s[3]},
                                        tensorTypeOf(y).getElementType());
  Value g;
  if (auto r = y.getDefiningOp<ReshapeOp>(); r && r.getInput().getType() == rowsType)
    g = r.getInput();
  else
    g = ReshapeOp::create(b, op.getLoc(), rowsType, y);
  if (!llvm::is_contained(old, swap.getOperation()))
    old.push_back(swap);
  auto rows = AttentionGradOp::create(
      b, op.getLoc(), views[0].rows, views[1].rows, views[2].rows, g, op.getKeyMask(),
      op.getScaleAttr(), op.getCausalAttr(), b.getI64IntegerAttr(a.heads),
      b.getI64IntegerAttr(a.d), b.getI64IntegerAttr(views[0].column),
      b.getI64IntegerAttr(views[1].column), b.getI64IntegerAttr(views[2].column));
  copyDiscardable(op, rows);
  for (unsigned i = 0; i < 3; ++i)
    replaceSwaps(op->getResult(i), rows->getResult(i));
  op->erase();
  for (Operation *o : old)
    eraseDead(o);
  return true;
}

/// concat(dq, dk, dv) along the features of a token-rows attention_grad's
/// three gradients, read by nothing else, whose query, key and value are
/// one tensor (a fused q/k/v projection's output) at columns that tile its
/// rows, the concat's operands in column order: the gradient of that
/// tensor. One tcc.attention_qkv_grad writes it, no concat kernel.
bool foldQkvGradConcat(ConcatOp concat) {
  if (concat.getNumOperands() != 3 || concat.getAxis() != 2)
    return false;
  auto grad = concat.getOperand(0).getDefiningOp<AttentionGradOp>();
  if (!grad || grad.getHeads() == 0 || grad.getQuery() != grad.getKey() ||
      grad.getQuery() != grad.getValue())
    return false;
  AttentionDims a = grad.getDims();
  int64_t span = a.heads * a.d;
  if (a.d != a.dv || a.width[0] != 3 * span)
    return false;
  // Operand i is the gradient of the operand read at column i * span.
  for (unsigned i = 0; i < 3; ++i) {
    auto r = llvm::dyn_cast<OpResult>(concat.getOperand(i));
    if (!r || r.getOwner() != grad.getOperation() || !r.hasOneUse() ||
        a.column[r.getResultNumber()] != int64_t(i) * span)
      return false;
  }
  OpBuilder b(grad);
  auto packed = AttentionQkvGradOp::create(
      b, grad.getLoc(), grad.getQuery(), grad.getResultGrad(),
      grad.getKeyMask(), grad.getScaleAttr(), grad.getCausalAttr(),
      grad.getHeadsAttr(), grad.getHeadDimAttr(), grad.getQueryColumnAttr(),
      grad.getKeyColumnAttr(), grad.getValueColumnAttr());
  copyDiscardable(grad, packed);
  concat.getResult().replaceAllUsesWith(packed.getResult());
  concat->erase();
  grad->erase();
  return true;
}

struct FoldAttentionLayoutPass
    : public tcc::impl::FoldAttentionLayoutBase<FoldAttentionLayoutPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (llvm::isa<AttentionOp, AttentionGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto fwd = llvm::dyn_cast<AttentionOp>(op))
        foldForward(fwd);
      else
        foldBackward(llvm::cast<AttentionGradOp>(op));
    }
    SmallVector<ConcatOp> concats;
    getOperation().walk([&](ConcatOp c) { concats.push_back(c); });
    for (ConcatOp c : concats)
      foldQkvGradConcat(c);
  }
};

} // namespace
