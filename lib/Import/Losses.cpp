// Losses a graph may already compute: SoftmaxCrossEntropyLoss and
// NegativeLogLikelihoodLoss. Both put the classes in dim 1 ([N, C, d...]).
// The mean and sum reductions of SoftmaxCrossEntropyLoss become one
// tcc.cross_entropy (the op training fuses with its gradient); the other
// forms pick the label's log-probability with a one-hot select, built from
// differentiable tcc ops. With class weights (input 2, [C]) every form is
// the latter, each element's loss scaled by its label's weight, and the mean
// divides by the sum of the counted labels' weights (ONNX's and PyTorch's
// definition).
#include "ConstFold.h"
#include "Importer.h"

#include <limits>

using namespace mlir;

namespace tcc::onnx_import {

namespace {
enum class Reduction { None, Sum, Mean };
} // namespace

/// Common checks; sets the reduction and the ignore index (absent: none).
static LogicalResult loadLossNode(NodeImporter &n, Reduction &reduction,
                                  std::optional<int64_t> &ignoreIndex) {
  if (failed(n.expectInputs(2, 3)) ||
      failed(n.expectAttrs({"reduction", "ignore_index"})))
    return failure();
  std::string r = "mean";
  if (const onnx::AttributeProto *a = n.attr("reduction"))
    r = a->s();
  if (r == "none")
    reduction = Reduction::None;
  else if (r == "sum")
    reduction = Reduction::Sum;
  else if (r == "mean")
    reduction = Reduction::Mean;
  else
    return n.fail("reduction '" + r + "' must be none, sum or mean");
  if (n.attr("ignore_index"))
    ignoreIndex = n.intAttr("ignore_index", 0);

  RankedTensorType scores = n.inputType(0), labels = n.inputType(1);
  if (!llvm::isa<FloatType>(scores.getElementType()))
    return n.unsupported("integer or bool scores are not supported");
  if (!labels.getElementType().isSignlessInteger() ||
      labels.getElementType().isInteger(1))
    return n.fail("labels must be integers");
  if (scores.getRank() < 2)
    return n.fail("scores must be [N, C, ...], got rank " +
                  std::to_string(scores.getRank()));
  llvm::SmallVector<int64_t> want{scores.getDimSize(0)};
  llvm::append_range(want, scores.getShape().drop_front(2));
  if (labels.getShape() != llvm::ArrayRef<int64_t>(want))
    return n.fail("labels must have the scores' shape without dim 1");
  if (n.hasInput(2)) {
    RankedTensorType weights = n.inputType(2);
    if (weights.getRank() != 1 || weights.getDimSize(0) != scores.getDimSize(1))
      return n.fail("class weights must be [C] = [" +
                    std::to_string(scores.getDimSize(1)) + "]");
    if (weights.getElementType() != scores.getElementType())
      return n.fail("class weights must have the scores' element type");
  }
  return success();
}

/// The per-element loss -logp[n, label, d...] as [N, d...], times the
/// label's class weight when `weights` ([C]) is given, zero where the label
/// is ignore_index; and, when asked, the number of counted labels (with
/// weights: the sum of their weights).
static FailureOr<Value> pickLabels(NodeImporter &n, Value logp, Value labels,
                                   std::optional<int64_t> ignoreIndex,
                                   Value weights, Value *count) {
  // In i64, where every ignore_index fits.
  auto intType = IntegerType::get(n.context(), 64);
  labels = n.cast(labels, intType);
  auto logpType = llvm::cast<RankedTensorType>(logp.getType());
  auto labelType = llvm::cast<RankedTensorType>(labels.getType());
  int64_t rank = logpType.getRank(), classes = logpType.getDimSize(1);
  Type elem = logpType.getElementType();

  // labels [N, 1, d...] == iota [1, C, 1...] is the one-hot mask.
  llvm::SmallVector<int64_t> unsqueezed(labelType.getShape());
  unsqueezed.insert(unsqueezed.begin() + 1, 1);
  auto column = n.reshape(labels, unsqueezed);
  if (failed(column))
    return failure();
  llvm::SmallVector<int64_t> iotaShape(rank, 1);
  iotaShape[1] = classes;
  Value classIds = n.constant(
      DenseElementsAttr::get(RankedTensorType::get(iotaShape, intType),
                             llvm::ArrayRef<int64_t>(llvm::to_vector(
                                 llvm::seq<int64_t>(0, classes)))));
  auto oneHot = n.create<CmpOp>(CmpPredicate::eq, *column, classIds);
  if (failed(oneHot))
    return failure();
  Value zero = n.scalar(elem, 0.0);
  auto picked = n.create<WhereOp>(*oneHot, logp, zero);
  if (failed(picked))
    return failure();
  auto perElement =
      n.create<ReduceSumOp>(*picked, llvm::ArrayRef<int64_t>{1}, false);
  if (failed(perElement))
    return failure();
  auto loss = n.create<NegOp>(*perElement);
  if (failed(loss))
    return failure();
  Value result = *loss;
  llvm::SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, labelType.getRank()));

  // The label's weight, picked by the same one-hot mask: [N, d...]. A label
  // outside [0, C) (only ignore_index may be) picks no class, weight 0.
  Value weight;
  if (weights) {
    auto row = n.reshape(weights, iotaShape);
    if (failed(row))
      return failure();
    auto w = n.create<WhereOp>(*oneHot, *row, zero);
    if (failed(w))
      return failure();
    auto perLabel = n.create<ReduceSumOp>(*w, llvm::ArrayRef<int64_t>{1}, false);
    if (failed(perLabel))
      return failure();
    weight = *perLabel;
    auto scaled = n.create<MulOp>(result, weight);
    if (failed(scaled))
      return failure();
    result = *scaled;
  }

  if (!ignoreIndex) {
    if (count && weight) {
      auto c = n.create<ReduceSumOp>(weight, all, false);
      if (failed(c))
        return failure();
      *count = *c;
    } else if (count) {
      *count = n.scalar(elem, double(labelType.getNumElements()));
    }
    return result;
  }
  Value ii =
      n.constant(DenseElementsAttr::get(RankedTensorType::get({}, intType),
                                        llvm::ArrayRef<int64_t>(*ignoreIndex)));
  auto keep = n.create<CmpOp>(CmpPredicate::ne, labels, ii);
  if (failed(keep))
    return failure();
  auto masked = n.create<WhereOp>(*keep, result, zero);
  if (failed(masked))
    return failure();
  if (count) {
    Value kept = n.cast(*keep, elem);
    if (weight) {
      auto w = n.create<WhereOp>(*keep, weight, zero);
      if (failed(w))
        return failure();
      kept = *w;
    }
    auto c = n.create<ReduceSumOp>(kept, all, false);
    if (failed(c))
      return failure();
    *count = *c;
  }
  return masked->getResult();
}

/// Applies the reduction to the per-element loss.
static FailureOr<Value> reduce(NodeImporter &n, Value perElement, Value count,
                               Reduction reduction) {
  if (reduction == Reduction::None)
    return perElement;
  auto type = llvm::cast<RankedTensorType>(perElement.getType());
  llvm::SmallVector<int64_t> all =
      llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()));
  auto sum = n.create<ReduceSumOp>(perElement, all, false);
  if (failed(sum))
    return failure();
  if (reduction == Reduction::Sum)
    return sum->getResult();
  auto mean = n.create<DivOp>(*sum, count);
  return failed(mean) ? FailureOr<Value>(failure())
                      : FailureOr<Value>(mean->getResult());
}

static LogicalResult convertSoftmaxCrossEntropy(NodeImporter &n) {
  Reduction reduction;
  std::optional<int64_t> ignoreIndex;
  if (failed(loadLossNode(n, reduction, ignoreIndex)))
    return failure();
  Value scores = n.input(0), labels = n.input(1);
  int64_t rank = n.inputType(0).getRank();
  Value weights = n.hasInput(2) ? n.input(2) : Value();

  Value logp;
  if (reduction == Reduction::None || n.outputUsed(1) || weights) {
    auto op = n.create<LogSoftmaxOp>(scores, int64_t(1));
    if (failed(op))
      return failure();
    logp = *op;
    if (failed(n.setOutput(1, logp)))
      return failure();
  }
  if (reduction == Reduction::None) {
    auto loss = pickLabels(n, logp, labels, ignoreIndex, weights, nullptr);
    return failed(loss) ? failure() : n.setOutput(0, *loss);
  }
  if (weights) {
    // tcc.cross_entropy has no class weights: the picked form, reduced.
    Value count;
    auto perElement =
        pickLabels(n, logp, labels, ignoreIndex, weights,
                   reduction == Reduction::Mean ? &count : nullptr);
    if (failed(perElement))
      return failure();
    auto loss = reduce(n, *perElement, count, reduction);
    return failed(loss) ? failure() : n.setOutput(0, *loss);
  }

  // tcc.cross_entropy wants the classes last.
  Value logits = scores;
  if (rank > 2) {
    llvm::SmallVector<int64_t> perm{0};
    for (int64_t d = 2; d < rank; ++d)
      perm.push_back(d);
    perm.push_back(1);
    auto t = n.create<TransposeOp>(scores, perm);
    if (failed(t))
      return failure();
    logits = *t;
  }
  // Without ignore_index no label is ignored; no class id is INT64_MIN.
  int64_t ii = ignoreIndex.value_or(std::numeric_limits<int64_t>::min());
  auto ce = n.create<CrossEntropyOp>(logits, labels, ii);
  if (failed(ce))
    return failure();
  if (reduction == Reduction::Sum)
    return n.setOutput(0, ce->getLossSum());
  auto mean = n.create<DivOp>(ce->getLossSum(), ce->getCount());
  return failed(mean) ? failure() : n.setOutput(0, *mean);
}

static LogicalResult convertNegativeLogLikelihood(NodeImporter &n) {
  Reduction reduction;
  std::optional<int64_t> ignoreIndex;
  if (failed(loadLossNode(n, reduction, ignoreIndex)))
    return failure();
  Value count;
  auto perElement =
      pickLabels(n, n.input(0), n.input(1), ignoreIndex,
                 n.hasInput(2) ? n.input(2) : Value(),
                 reduction == Reduction::Mean ? &count : nullptr);
  if (failed(perElement))
    return failure();
  auto loss = reduce(n, *perElement, count, reduction);
  return failed(loss) ? failure() : n.setOutput(0, *loss);
}

void registerLossConverters(ConverterTable &table) {
  table["SoftmaxCrossEntropyLoss"] = convertSoftmaxCrossEntropy;
  table["NegativeLogLikelihoodLoss"] = convertNegativeLogLikelihood;
}

} // namespace tcc::onnx_import
