// tcc-rematerialize's last resort: weight gradients made in row blocks,
// each applied to its rows of the parameter (an optimizer update with
// element_offset) before the next block is made, so a large weight's whole
// gradient never exists at once.
#include "RematerializeSchedule.h"

#include "tcc/TccOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace tcc::remat {

namespace {

/// The GEMM that makes an update's whole gradient, with the operand whose
/// rows (columns when transposed) are the gradient's rows: a 2-D
/// tcc.matmul or tcc.gemm without a bias, read by the update alone, or by
/// a cast to the parameter's type read by the update alone (mixed
/// precision: a 16-bit GEMM, an f32 parameter).
struct GradGemm {
  Operation *op = nullptr;
  Operation *cast = nullptr; ///< a tcc.cast between the two, or null
  Value grad;                ///< what the update reads
  unsigned rowsOperand = 0;  ///< lhs / a
  bool transposed = false;   ///< rows of the gradient = columns of it
};

std::optional<GradGemm> gradGemm(Operation *update, Value grad, Value param) {
  if (grad.getType() != param.getType() || !grad.hasOneUse())
    return std::nullopt;
  Operation *def = grad.getDefiningOp();
  CastOp cast = llvm::dyn_cast_or_null<CastOp>(def);
  if (cast) {
    if (!cast.getInput().hasOneUse())
      return std::nullopt;
    def = cast.getInput().getDefiningOp();
  }
  if (!def || def->getBlock() != update->getBlock())
    return std::nullopt;
  auto rank2 = [](Value v) {
    return llvm::cast<RankedTensorType>(v.getType()).getRank() == 2;
  };
  GradGemm g;
  g.op = def;
  g.cast = cast;
  g.grad = grad;
  if (auto mm = llvm::dyn_cast<MatmulOp>(def)) {
    if (!rank2(mm.getLhs()) || !rank2(mm.getRhs()))
      return std::nullopt;
    g.transposed = mm.getTransposeLhs();
  } else if (auto gemm = llvm::dyn_cast<GemmOp>(def)) {
    if (gemm.getC() || gemm.getBias() || !rank2(gemm.getA()) || !rank2(gemm.getB()))
      return std::nullopt;
    g.transposed = gemm.getTransposeA();
  } else {
    return std::nullopt;
  }
  // Slicing x in x^T x would slice both operands.
  if (def->getOperand(0) == def->getOperand(1) ||
      llvm::cast<RankedTensorType>(grad.getType()).getDimSize(0) < 2)
    return std::nullopt;
  return g;
}

/// An update's parameter and gradient operands, when it is one tcc makes.
std::optional<std::pair<Value, Value>> paramAndGrad(Operation *op) {
  if (auto sgd = llvm::dyn_cast<SgdUpdateOp>(op))
    if (sgd.getElementOffset() == 0)
      return std::make_pair(sgd.getParam(), sgd.getGrad());
  if (auto adamw = llvm::dyn_cast<AdamwUpdateOp>(op))
    if (adamw.getElementOffset() == 0)
      return std::make_pair(adamw.getParam(), adamw.getGrad());
  return std::nullopt;
}

/// Replaces `update` (whose gradient `g` makes) by `blocks` pairs of a
/// GEMM over a slice of the gradient's rows and an update of those rows,
/// each pair reading the previous update's results.
void split(Operation *update, const GradGemm &g, int64_t blocks) {
  auto gradType = llvm::cast<RankedTensorType>(g.op->getResult(0).getType());
  int64_t rows = gradType.getDimSize(0), cols = gradType.getDimSize(1);
  int64_t per = (rows + blocks - 1) / blocks;
  Value source = g.op->getOperand(g.rowsOperand);
  auto sourceType = llvm::cast<RankedTensorType>(source.getType());
  unsigned dim = g.transposed ? 1 : 0;
  auto inPlace = llvm::cast<InPlaceOpInterface>(update);
  OpBuilder b(update);
  SmallVector<Value> current(update->getResults());
  for (int64_t r0 = 0; r0 < rows; r0 += per) {
    int64_t r1 = std::min(rows, r0 + per);
    SmallVector<int64_t> starts(2, 0), limits(sourceType.getShape()),
        strides(2, 1);
    starts[dim] = r0;
    limits[dim] = r1;
    SmallVector<int64_t> sliceShape(sourceType.getShape());
    sliceShape[dim] = r1 - r0;
    Value slice = SliceOp::create(
        b, g.op->getLoc(),
        RankedTensorType::get(sliceShape, sourceType.getElementType()), source,
        b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(limits),
        b.getDenseI64ArrayAttr(strides));
    IRMapping gemmMap;
    gemmMap.map(source, slice);
    Operation *gemm = b.clone(*g.op, gemmMap);
    gemm->getResult(0).setType(
        RankedTensorType::get({r1 - r0, cols}, gradType.getElementType()));
    Value block = gemm->getResult(0);
    if (g.cast) {
      IRMapping castMap;
      castMap.map(g.op->getResult(0), block);
      Operation *cast = b.clone(*g.cast, castMap);
      cast->getResult(0).setType(RankedTensorType::get(
          {r1 - r0, cols},
          llvm::cast<RankedTensorType>(g.grad.getType()).getElementType()));
      block = cast->getResult(0);
    }
    IRMapping updateMap;
    updateMap.map(g.grad, block);
    if (r0 > 0)
      for (unsigned r = 0; r < update->getNumResults(); ++r)
        if (Value operand = inPlace.getInPlaceOperand(r))
          updateMap.map(operand, current[r]);
    Operation *piece = b.clone(*update, updateMap);
    piece->setAttr("element_offset", b.getI64IntegerAttr(r0 * cols));
    current.assign(piece->result_begin(), piece->result_end());
  }
  for (auto [old, now] : llvm::zip(update->getResults(), current))
    old.replaceAllUsesWith(now);
  update->erase();
  if (g.cast)
    g.cast->erase();
  g.op->erase();
}

} // namespace

BlockedGradients blockWeightGradients(func::FuncOp step, int64_t arenaTarget,
                                      int64_t divisor) {
  BlockedGradients out;
  if (arenaTarget <= 0 || divisor <= 0)
    return out;
  int64_t largest = std::max<int64_t>(1, arenaTarget / divisor);
  SmallVector<std::pair<Operation *, GradGemm>> work;
  for (Operation &op : step.getBody().front())
    if (auto pg = paramAndGrad(&op))
      if (auto g = gradGemm(&op, pg->second, pg->first))
        if (bytesOf(pg->second.getType()) > largest)
          work.push_back({&op, *g});
  for (auto &[update, g] : work) {
    // The bytes the update reads (after the cast, when there is one).
    int64_t bytes = bytesOf(g.grad.getType());
    int64_t rows = llvm::cast<RankedTensorType>(g.op->getResult(0).getType())
                       .getDimSize(0);
    int64_t blocks = std::min(rows, (bytes + largest - 1) / largest);
    // Equal blocks of whole rows: the count ceil(rows / per) makes.
    int64_t per = (rows + blocks - 1) / blocks;
    blocks = (rows + per - 1) / per;
    split(update, g, blocks);
    ++out.gradients;
    out.blocks += blocks;
  }
  return out;
}

} // namespace tcc::remat
