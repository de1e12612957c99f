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
    Value result = fused.getResult();
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

/// `v` where `at` may read it: itself when defined before `at`, or a new
/// reshape (a view) at `b` of a reshape's input defined before `at`; null
/// otherwise.
Value availableAt(Value v, Operation *at, OpBuilder &b) {
  if (definedBefore(v, at))
    return v;
  auto reshape = v.getDefiningOp<ReshapeOp>();
  if (!reshape || !definedBefore(reshape.getInput(), at))
    return Value();
  return ReshapeOp::create(b, reshape.getLoc(), reshape.getType(),
                           reshape.getInput());
}

/// The GEMM a weight gradient is: a matrix product `x^T @ y` reading `x`
/// (`[..., M]`) as a `[K, M]` matrix through op(a) = a^T, with no bias yet.
struct WeightGradGemm {
  Operation *op;
  Value a, b, c;
  APFloat alpha = APFloat(1.0), beta = APFloat(1.0);
  bool transposeB = false;
};

std::optional<WeightGradGemm> weightGradGemmOf(Operation *user) {
  if (auto matmul = llvm::dyn_cast<MatmulOp>(user)) {
    if (!matmul.getTransposeLhs() ||
        tensorTypeOf(matmul.getLhs()).getRank() != 2 ||
        tensorTypeOf(matmul.getRhs()).getRank() != 2)
      return std::nullopt;
    return WeightGradGemm{
        user,         matmul.getLhs(), matmul.getRhs(),         Value(),
        APFloat(1.0), APFloat(1.0),    matmul.getTransposeRhs()};
  }
  if (auto gemm = llvm::dyn_cast<GemmOp>(user)) {
    if (!gemm.getTransposeA() || gemm.getBias() || gemm.getWithBiasGrad())
      return std::nullopt;
    return WeightGradGemm{user,
                          gemm.getA(),
                          gemm.getB(),
                          gemm.getC(),
                          gemm.getAlpha(),
                          gemm.getBeta(),
                          gemm.getTransposeB()};
  }
  return std::nullopt;
}

/// Whether a reader of `op`'s results comes before `at` (same block).
bool readBefore(Operation *op, Operation *at) {
  return llvm::any_of(op->getUsers(), [&](Operation *u) {
    return u->getBlock() == at->getBlock() && u->isBeforeInBlock(at);
  });
}

/// Rewrites `sum` = reduce_sum(x) over every dim but the last when a GEMM
/// also reads x as op(a) = x^T (a Linear's weight gradient dY^T @ X beside
/// its bias gradient): the GEMM's bias_grad result replaces the sum. The
/// GEMM stays where it was when nothing reads the sum before it (its
/// result's lifetime unchanged); else it goes to the sum's place when its
/// operands are there (as views).
bool foldBiasGrad(ReduceSumOp sum) {
  Value x = sum.getInput();
  auto xType = tensorTypeOf(x);
  int64_t rank = xType.getRank();
  if (rank < 2 ||
      sum.getAxes() !=
          ArrayRef<int64_t>(llvm::to_vector(llvm::seq<int64_t>(0, rank - 1))) ||
      tensorTypeOf(sum.getResult()) !=
          RankedTensorType::get({xType.getShape().back()},
                                xType.getElementType()))
    return false;
  // A sum read through a cast (a 16-bit gradient's bias gradient widened
  // to f32) stays: the cast fuses with the sum's kernel, while the GEMM's
  // bias_grad has the operands' type, so the cast would be a kernel alone.
  if (llvm::any_of(sum->getUsers(),
                   [](Operation *u) { return llvm::isa<CastOp>(u); }))
    return false;
  // Readers of x as a [K, M] matrix: x itself (2-D) or a reshape of it.
  SmallVector<std::pair<Operation *, Value>> readers;
  for (OpOperand &use : x.getUses()) {
    if (auto r = llvm::dyn_cast<ReshapeOp>(use.getOwner())) {
      if (tensorTypeOf(r.getResult()).getRank() == 2)
        for (Operation *u : r->getUsers())
          readers.push_back({u, r.getResult()});
    } else if (rank == 2) {
      readers.push_back({use.getOwner(), x});
    }
  }
  for (auto [user, view] : readers) {
    std::optional<WeightGradGemm> g = weightGradGemmOf(user);
    if (!g || g->a != view || user->getBlock() != sum->getBlock())
      continue;
    OpBuilder b(user);
    const SmallVector<Value, 3> original = {g->a, g->b, g->c};
    SmallVector<Value, 3> operands = original;
    // Views of the sum read before the GEMM whose readers all come after
    // it (the slices that split a merged projection's bias gradient back
    // into the parameters') move down to the GEMM instead.
    SmallVector<Operation *> views;
    for (Operation *u : sum->getUsers())
      if (u->getBlock() == user->getBlock() && u->isBeforeInBlock(user) &&
          llvm::isa<SliceOp, ReshapeOp>(u) && !readBefore(u, user))
        views.push_back(u);
    bool onlyViewsBefore = llvm::all_of(sum->getUsers(), [&](Operation *u) {
      return llvm::is_contained(views, u) ||
             u->getBlock() != user->getBlock() || !u->isBeforeInBlock(user);
    });
    if (onlyViewsBefore)
      for (Operation *v : views)
        v->moveAfter(user);
    if (readBefore(sum, user)) {
      // The sum is read before the GEMM: the GEMM moves up to the sum when
      // its operands are there (the sum comes first: x is read by both).
      b.setInsertionPoint(sum);
      bool available = true;
      for (Value &v : operands)
        if (v && !(v = availableAt(v, sum, b)))
          available = false;
      if (!available) {
        for (auto [v, made] : llvm::zip(original, operands))
          if (made && made != v && made.use_empty())
            made.getDefiningOp()->erase();
        continue;
      }
    }
    auto fused = GemmOp::create(
        b, user->getLoc(), operands[0], operands[1], operands[2],
        /*bias=*/Value(), g->alpha, g->beta, /*transpose_a=*/true,
        g->transposeB, /*with_bias_grad=*/true);
    if (Attribute rows = user->getAttr(kTokenRowsAttr))
      fused->setAttr(kTokenRowsAttr, rows);
    user->getResult(0).replaceAllUsesWith(fused.getResult());
    sum.getResult().replaceAllUsesWith(fused.getBiasGrad());
    user->erase();
    sum->erase();
    if (view != x && view.use_empty())
      view.getDefiningOp()->erase();
    return true;
  }
  return false;
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
    // Then the bias gradients: after the adds, so a weight gradient that
    // took a C there keeps it.
    unsigned biasGrads = 0;
    for (Block &block : func.getBody())
      for (Operation &op : llvm::make_early_inc_range(block))
        if (auto sum = llvm::dyn_cast<ReduceSumOp>(op))
          biasGrads += foldBiasGrad(sum);
    biases += counts[unsigned(Folded::Bias)];
    residuals += counts[unsigned(Folded::Residual)];
    biasGradients += biasGrads;
    if (report)
      emitRemark(func.getLoc())
          << "tcc-fuse-gemm-epilogue: @" << func.getSymName() << ": "
          << counts[unsigned(Folded::Bias)] << " bias adds and "
          << counts[unsigned(Folded::Residual)]
          << " residual adds folded into GEMMs, " << biasGrads
          << " bias gradients into weight-gradient GEMMs";
  }
};

} // namespace
