// Folds adds into the GEMM that produces their other operand (the pass
// reference, include/tcc/Transforms/Passes.td, has the rules):
// add(matmul(x, W), b) with b broadcast over the rows becomes one tcc.gemm
// with bias b on the 2-D view of x (x [..., M, K] reshaped to [rows, K],
// the result reshaped back), and a residual the GEMM depends on,
// x + proj(f(x)), becomes its C with beta = 1. The library GEMM adds both
// as it writes its output, so neither costs a kernel launch or a pass over
// the product. The sum is rounded once (the interpreter adds them to the
// double-precision dot product; a BLAS to its accumulator) instead of after
// each add, so results change by rounding, not bit for bit.
#include "Dataflow.h"

#include "tcc/Transforms/Passes.h"

#include "tcc/TccOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace tcc {
#define GEN_PASS_DEF_FUSEGEMMEPILOGUE
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

/// Whether `bias` is added to every row of a `product`-shaped result: every
/// dim but its last is 1 (or absent) and the last is the product's column
/// count or 1. The same values then broadcast to the GEMM's [rows, N].
bool isRowBias(Value bias, RankedTensorType product) {
  RankedTensorType type = tensorTypeOf(bias);
  if (type.getElementType() != product.getElementType() ||
      type.getRank() > product.getRank())
    return false;
  ArrayRef<int64_t> shape = type.getShape();
  if (shape.empty())
    return true;
  if (llvm::any_of(shape.drop_back(), [](int64_t d) { return d != 1; }))
    return false;
  return shape.back() == 1 || shape.back() == product.getShape().back();
}

/// The GEMM computing `product`: a matmul that is one GEMM on a 2-D view,
/// or a tcc.gemm (possibly through the reshape back to the product's
/// shape), read by nothing but the add.
struct Gemm {
  Value a, b, c, bias;
  APFloat alpha = APFloat(1.0), beta = APFloat(1.0);
  bool transposeA = false, transposeB = false;
  Operation *producer = nullptr; ///< the matmul or gemm
  Operation *view = nullptr;     ///< the reshape of a gemm's result, if any
};

std::optional<Gemm> asGemm(Value product) {
  if (!product.hasOneUse())
    return std::nullopt;
  Operation *def = product.getDefiningOp();
  Operation *view = nullptr;
  if (auto reshape = llvm::dyn_cast_or_null<ReshapeOp>(def)) {
    if (!reshape.getInput().hasOneUse() ||
        !reshape.getInput().getDefiningOp<GemmOp>())
      return std::nullopt;
    view = def;
    def = reshape.getInput().getDefiningOp();
  }
  if (auto gemm = llvm::dyn_cast_or_null<GemmOp>(def)) {
    Gemm g{gemm.getA(),     gemm.getB(),          gemm.getC(),
           gemm.getBias(),  gemm.getAlpha(),      gemm.getBeta(),
           gemm.getTransposeA(), gemm.getTransposeB(), def, view};
    return g;
  }
  auto matmul = llvm::dyn_cast_or_null<MatmulOp>(def);
  if (!matmul)
    return std::nullopt;
  // [..., M, K] @ [K, N]: the leading dims are more rows. A batched or
  // broadcast rhs, or a transposed batched lhs, is not one GEMM.
  int64_t lhsRank = tensorTypeOf(matmul.getLhs()).getRank();
  if (tensorTypeOf(matmul.getRhs()).getRank() != 2 ||
      (lhsRank > 2 && matmul.getTransposeLhs()))
    return std::nullopt;
  Gemm g;
  g.a = matmul.getLhs();
  g.b = matmul.getRhs();
  g.transposeA = matmul.getTransposeLhs();
  g.transposeB = matmul.getTransposeRhs();
  g.producer = def;
  return g;
}

/// Whether `v` is a running sum of GEMM products: the (reshaped) result of
/// a tcc.gemm that already adds a full [M, N] C, which this pass made from
/// an earlier add of the same chain (a projection's input gradient plus
/// the residual gradient, say). That the chain's adds fold in its order
/// follows from the dataflow alone: each add reads the one before it.
bool isAccumulatedGemm(Value v) {
  Operation *def = v.getDefiningOp();
  if (auto reshape = llvm::dyn_cast_or_null<ReshapeOp>(def))
    def = reshape.getInput().getDefiningOp();
  auto gemm = llvm::dyn_cast_or_null<GemmOp>(def);
  return gemm && gemm.getC() &&
         gemm.getC().getType() == gemm.getResult().getType();
}

/// Whether `v` is defined before `op` (or is a block argument).
bool definedBefore(Value v, Operation *op) {
  Operation *def = v.getDefiningOp();
  return !def || (def->getBlock() == op->getBlock() && def->isBeforeInBlock(op));
}

enum class Folded { None, Bias, Residual };

/// Rewrites `add` when one operand is a GEMM product of the add's type read
/// by the add alone, and the other a row bias (the GEMM has no bias or C
/// yet) or a full addend of the product's type (the GEMM has no C yet).
Folded foldAdd(AddOp add) {
  for (unsigned i = 0; i < 2; ++i) {
    Value product = add->getOperand(i), other = add->getOperand(1 - i);
    auto type = tensorTypeOf(product);
    if (product.getType() != add.getType())
      continue;
    std::optional<Gemm> gemm = asGemm(product);
    if (!gemm)
      continue;
    // A bias of the product's last dim goes into the GEMM's bias; a scalar
    // one (or [..., 1]) broadcasts as its C.
    bool row = isRowBias(other, type) && !gemm->c && !gemm->bias;
    bool vector =
        row && tensorTypeOf(other).getRank() > 0 &&
        tensorTypeOf(other).getShape().back() == type.getShape().back();
    // A residual folds only when the GEMM depends on it (x + proj(f(x))):
    // then it is there before the GEMM in any order, so every copy of the
    // pattern (rematerialised, or one per micro-batch in another order)
    // folds alike and rounds alike. Otherwise the choice would follow the
    // op order: which of two products' sum takes the other as C, or
    // whether the GEMM moves down to the add, holding its operands longer
    // (the tied embedding's gradient sum would keep the logits' gradient
    // alive across the backward's end).
    Operation *producer = gemm->producer;
    bool before = definedBefore(other, producer);
    // Or when the addend is itself a GEMM's sum with a C (the next product
    // of a chain of input-gradient contributions): the other side cannot
    // take a C any more, so which GEMM takes which does not depend on the
    // op order either.
    bool residual = !row && other.getType() == type && !gemm->c &&
                    (dependsOn(producer, other) || isAccumulatedGemm(other));
    if (!row && !residual)
      continue;
    // In the product's place when the addend is already there (a bias
    // usually is: a parameter), so the GEMM's inputs die as early as before.
    OpBuilder b(before ? producer : add.getOperation());
    Location loc = add.getLoc();
    Type elem = type.getElementType();
    auto view2d = [&](Value v, int64_t last) -> Value {
      auto vType = tensorTypeOf(v);
      int64_t rows = 1;
      for (int64_t d : vType.getShape().drop_back())
        rows *= d;
      if (vType.getRank() == 2)
        return v;
      return ReshapeOp::create(b, loc,
                               RankedTensorType::get({rows, last}, elem), v)
          .getResult();
    };
    Value a = gemm->a;
    if (tensorTypeOf(a).getRank() > 2)
      a = view2d(a, tensorTypeOf(a).getShape().back());
    Value c = gemm->c, bias = gemm->bias;
    APFloat beta = gemm->beta;
    int64_t n = type.getShape().back();
    if (vector) {
      bias = other;
      if (tensorTypeOf(other).getRank() != 1)
        bias = ReshapeOp::create(b, loc, RankedTensorType::get({n}, elem), other);
    } else {
      c = residual ? view2d(other, n) : other;
      beta = APFloat(1.0);
    }
    auto fused = GemmOp::create(b, loc, a, gemm->b, c, bias, gemm->alpha, beta,
                                gemm->transposeA, gemm->transposeB);
    // Over packed token rows as the product was (tcc-pack-tokens).
    if (Attribute rows = producer->getAttr(kTokenRowsAttr))
      fused->setAttr(kTokenRowsAttr, rows);
    Value result = fused;
    if (result.getType() != type)
      result = ReshapeOp::create(b, loc, type, result);
    add.getResult().replaceAllUsesWith(result);
    add.erase();
    if (gemm->view)
      gemm->view->erase();
    producer->erase();
    return residual ? Folded::Residual : Folded::Bias;
  }
  return Folded::None;
}

struct FuseGemmEpiloguePass
    : tcc::impl::FuseGemmEpilogueBase<FuseGemmEpiloguePass> {
  using FuseGemmEpilogueBase::FuseGemmEpilogueBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    unsigned counts[3] = {0, 0, 0};
    // Top-level ops only: an add inside a kernel body stays there. In
    // order, so a bias add folds before the residual add that reads it.
    for (Block &block : func.getBody())
      for (Operation &op : llvm::make_early_inc_range(block))
        if (auto add = llvm::dyn_cast<AddOp>(op))
          ++counts[unsigned(foldAdd(add))];
    biases += counts[unsigned(Folded::Bias)];
    residuals += counts[unsigned(Folded::Residual)];
    if (report)
      emitRemark(func.getLoc())
          << "tcc-fuse-gemm-epilogue: @" << func.getSymName() << ": "
          << counts[unsigned(Folded::Bias)] << " bias adds and "
          << counts[unsigned(Folded::Residual)]
          << " residual adds folded into GEMMs";
  }
};

} // namespace
