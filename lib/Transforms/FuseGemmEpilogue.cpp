// Folds a bias add into the GEMM that produces its other operand:
// add(matmul(x, W), b) with b broadcast over the rows becomes one tcc.gemm
// with C = b and beta = 1 on the 2-D view of x (x [..., M, K] reshaped to
// [rows, K], the result reshaped back). The library GEMM adds C as it writes
// its output, so the bias costs neither a kernel launch nor a pass over the
// product. The sum is rounded once (the interpreter adds C to the
// double-precision dot product; a BLAS adds it to its accumulator) instead
// of after the product and again after the add, so results change by
// rounding, not bit for bit.
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

RankedTensorType tensorType(Value v) {
  return llvm::cast<RankedTensorType>(v.getType());
}

/// Whether `bias` is added to every row of a `product`-shaped result: every
/// dim but its last is 1 (or absent) and the last is the product's column
/// count or 1. The same values then broadcast to the GEMM's [rows, N].
bool isRowBias(Value bias, RankedTensorType product) {
  RankedTensorType type = tensorType(bias);
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

/// The operands of the GEMM computing `product` (a matmul that is one GEMM
/// on a 2-D view, or a gemm without C) before its bias is added.
struct Gemm {
  Value a, b;
  APFloat alpha = APFloat(1.0);
  bool transposeA = false, transposeB = false;
};

std::optional<Gemm> asGemm(Value product) {
  Operation *def = product.getDefiningOp();
  if (auto gemm = llvm::dyn_cast_or_null<GemmOp>(def)) {
    if (gemm.getC())
      return std::nullopt;
    return Gemm{gemm.getA(), gemm.getB(), gemm.getAlpha(),
                gemm.getTransposeA(), gemm.getTransposeB()};
  }
  auto matmul = llvm::dyn_cast_or_null<MatmulOp>(def);
  if (!matmul)
    return std::nullopt;
  // [..., M, K] @ [K, N]: the leading dims are more rows. A batched or
  // broadcast rhs, or a transposed batched lhs, is not one GEMM.
  int64_t lhsRank = tensorType(matmul.getLhs()).getRank();
  if (tensorType(matmul.getRhs()).getRank() != 2 ||
      (lhsRank > 2 && matmul.getTransposeLhs()))
    return std::nullopt;
  return Gemm{matmul.getLhs(), matmul.getRhs(), APFloat(1.0),
              matmul.getTransposeLhs(), matmul.getTransposeRhs()};
}

/// Rewrites `add` when one operand is a single-use GEMM product of the
/// add's type and the other a row bias; returns whether it did.
bool foldBiasAdd(AddOp add) {
  for (unsigned i = 0; i < 2; ++i) {
    Value product = add->getOperand(i), bias = add->getOperand(1 - i);
    auto type = tensorType(product);
    if (!product.hasOneUse() || product.getType() != add.getType() ||
        !isRowBias(bias, type))
      continue;
    std::optional<Gemm> gemm = asGemm(product);
    if (!gemm)
      continue;
    Operation *producer = product.getDefiningOp();
    // In the product's place when the bias is already there (it usually
    // is: a parameter), so the GEMM's inputs die as early as before.
    Operation *def = bias.getDefiningOp();
    bool early = !def || (def->getBlock() == producer->getBlock() &&
                          def->isBeforeInBlock(producer));
    OpBuilder b(early ? producer : add.getOperation());
    Location loc = add.getLoc();
    Type elem = type.getElementType();
    Value a = gemm->a;
    auto aType = tensorType(a);
    if (aType.getRank() > 2) {
      int64_t k = aType.getShape().back(), rows = 1;
      for (int64_t d : aType.getShape().drop_back())
        rows *= d;
      a = ReshapeOp::create(b, loc, RankedTensorType::get({rows, k}, elem), a);
    }
    Value c = bias;
    if (tensorType(bias).getRank() > 1)
      c = ReshapeOp::create(
          b, loc,
          RankedTensorType::get({tensorType(bias).getShape().back()}, elem),
          bias);
    auto fused = GemmOp::create(b, loc, a, gemm->b, c, gemm->alpha,
                                APFloat(1.0), gemm->transposeA,
                                gemm->transposeB);
    // Over packed token rows as the product was (tcc-pack-tokens).
    if (Attribute rows = producer->getAttr(kTokenRowsAttr))
      fused->setAttr(kTokenRowsAttr, rows);
    Value result = fused;
    if (result.getType() != type)
      result = ReshapeOp::create(b, loc, type, result);
    add.getResult().replaceAllUsesWith(result);
    add.erase();
    producer->erase();
    return true;
  }
  return false;
}

struct FuseGemmEpiloguePass
    : tcc::impl::FuseGemmEpilogueBase<FuseGemmEpiloguePass> {
  using FuseGemmEpilogueBase::FuseGemmEpilogueBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    unsigned count = 0;
    // Top-level ops only: an add inside a kernel body stays there.
    for (Block &block : func.getBody())
      for (Operation &op : llvm::make_early_inc_range(block))
        if (auto add = llvm::dyn_cast<AddOp>(op))
          count += foldBiasAdd(add);
    folded += count;
    if (report)
      emitRemark(func.getLoc())
          << "tcc-fuse-gemm-epilogue: @" << func.getSymName() << ": " << count
          << " bias adds folded into GEMMs";
  }
};

} // namespace
