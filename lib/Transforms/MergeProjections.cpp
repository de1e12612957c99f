// Merges the separate q, k and v projections of one attention into one
// GEMM on their concatenated weights (the pass reference,
// include/tcc/Transforms/Passes.td, has the rules), so a model written with
// three nn.Linear layers trains like one with a fused q/k/v projection:
// one forward GEMM, one input-gradient GEMM, one weight-gradient GEMM and
// one bias-gradient sum instead of three of each.
#include "tcc/Transforms/Passes.h"

#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"

namespace tcc {
#define GEN_PASS_DEF_MERGEPROJECTIONS
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

/// One projection x @ W^T (+ b) feeding an attention operand.
struct Projection {
  MatmulOp matmul;
  AddOp add;   ///< the bias add, or null
  Value bias;  ///< null without a bias add
  Value result; ///< the add's result, or the matmul's
  int64_t width() { return tensorTypeOf(matmul.getRhs()).getDimSize(0); }
};

/// The projection an attention operand is read from:
/// transpose(reshape(add(b, matmul(x, W, transpose_rhs))), [0, 2, 1, 3])
/// with x [B, T, K], W [N, K], b [N] (either add operand order, or no add).
/// The matmul is read by the add alone.
std::optional<Projection> projectionOf(Value operand) {
  auto transpose = operand.getDefiningOp<TransposeOp>();
  if (!transpose || transpose.getPerm() != ArrayRef<int64_t>{0, 2, 1, 3})
    return std::nullopt;
  auto reshape = transpose.getInput().getDefiningOp<ReshapeOp>();
  if (!reshape)
    return std::nullopt;
  Projection p;
  p.result = reshape.getInput();
  Value product = p.result;
  if (auto add = p.result.getDefiningOp<AddOp>()) {
    for (unsigned i = 0; i < 2; ++i) {
      Value bias = add->getOperand(i), other = add->getOperand(1 - i);
      if (other.getDefiningOp<MatmulOp>() &&
          tensorTypeOf(bias).getRank() == 1 &&
          other.getType() == add.getType()) {
        p.add = add;
        p.bias = bias;
        product = other;
        break;
      }
    }
    if (!p.add)
      return std::nullopt;
  }
  p.matmul = product.getDefiningOp<MatmulOp>();
  if (!p.matmul || !p.matmul.getTransposeRhs() || p.matmul.getTransposeLhs() ||
      (p.add && !product.hasOneUse()))
    return std::nullopt;
  auto x = tensorTypeOf(p.matmul.getLhs()), w = tensorTypeOf(p.matmul.getRhs());
  if (x.getRank() != 3 || w.getRank() != 2 ||
      (p.bias && tensorTypeOf(p.bias).getDimSize(0) != w.getDimSize(0)))
    return std::nullopt;
  return p;
}

/// Makes `v` available before `at`: true when it is defined there already,
/// or is a cast or get_param (a parameter or its working copy) whose operand
/// is, which then moves up to `at`.
bool hoistBefore(Value v, Operation *at) {
  Operation *def = v.getDefiningOp();
  if (!def || def->getBlock() != at->getBlock() || def->isBeforeInBlock(at))
    return true;
  if (def == at)
    return false;
  if (!llvm::isa<CastOp, GetParamOp>(def) ||
      !llvm::all_of(def->getOperands(),
                    [&](Value in) { return hoistBefore(in, at); }))
    return false;
  def->moveBefore(at);
  return true;
}

/// Replaces `group` (projections of one input, all with or all without a
/// bias) by one matmul on the weights concatenated along their rows, the
/// biases likewise, and a split of the result along its last dim, at the
/// first projection's matmul. Returns false (and changes nothing visible)
/// when an operand cannot be made available there.
bool merge(MutableArrayRef<Projection> group) {
  Operation *at = group.front().matmul;
  for (Projection &p : group)
    if (p.matmul->isBeforeInBlock(at))
      at = p.matmul;
  for (Projection &p : group)
    if (!hoistBefore(p.matmul.getLhs(), at) ||
        !hoistBefore(p.matmul.getRhs(), at) ||
        (p.bias && !hoistBefore(p.bias, at)))
      return false;
  OpBuilder b(at);
  Projection &first = group.front();
  Location loc = first.matmul.getLoc();
  SmallVector<Value> weights, biases;
  SmallVector<int64_t> widths;
  for (Projection &p : group) {
    weights.push_back(p.matmul.getRhs());
    if (p.bias)
      biases.push_back(p.bias);
    widths.push_back(p.width());
  }
  Value weight = ConcatOp::create(b, loc, weights, b.getI64IntegerAttr(0));
  Value merged = MatmulOp::create(b, loc, first.matmul.getLhs(), weight,
                                  /*transpose_lhs=*/false,
                                  /*transpose_rhs=*/true);
  if (first.add) {
    Value bias = ConcatOp::create(b, first.add.getLoc(), biases,
                                  b.getI64IntegerAttr(0));
    merged = AddOp::create(b, first.add.getLoc(), bias, merged);
  }
  auto split = SplitOp::create(b, loc, merged, b.getI64IntegerAttr(2),
                               b.getDenseI64ArrayAttr(widths));
  for (auto [p, part] : llvm::zip_equal(group, split.getResults())) {
    p.result.replaceAllUsesWith(part);
    if (p.add)
      p.add.erase();
    p.matmul.erase();
  }
  return true;
}

struct MergeProjectionsPass
    : tcc::impl::MergeProjectionsBase<MergeProjectionsPass> {
  using MergeProjectionsBase::MergeProjectionsBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<AttentionOp> attentions;
    func.walk([&](AttentionOp op) {
      if (op.getHeads() == 0)
        attentions.push_back(op);
    });
    unsigned count = 0;
    for (AttentionOp attention : attentions) {
      // Distinct projections of q, k and v (one may feed several), grouped
      // by input, element type and whether they add a bias.
      llvm::MapVector<std::tuple<Value, Type, unsigned>, SmallVector<Projection>>
          groups;
      llvm::SmallPtrSet<Operation *, 3> seen;
      for (Value operand :
           {attention.getQuery(), attention.getKey(), attention.getValue()}) {
        std::optional<Projection> p = projectionOf(operand);
        if (!p || !seen.insert(p->matmul).second)
          continue;
        groups[{p->matmul.getLhs(),
                tensorTypeOf(p->matmul.getRhs()).getElementType(),
                unsigned(bool(p->add))}]
            .push_back(*p);
      }
      for (auto &[key, group] : groups)
        if (group.size() > 1 && merge(group))
          count += group.size();
    }
    merged += count;
    if (report)
      emitRemark(func.getLoc()) << "tcc-merge-projections: @"
                                << func.getSymName() << ": " << count
                                << " projections merged";
  }
};

} // namespace
