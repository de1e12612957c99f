// Opset 23's fused ops: Attention and RMSNormalization. Both are spelled out
// in tcc ops here (scores = q k^T * scale, the mask, softmax, @ v; x *
// rsqrt(mean(x^2) + eps) * scale), so that one place, tcc-raise-attention,
// decides when a chain becomes tcc.attention, whoever wrote the chain, and
// autodiff differentiates the pieces it already knows.
#include "ConstFold.h"
#include "Importer.h"

#include <cmath>
#include <limits>

using namespace mlir;

namespace tcc::onnx_import {
namespace {

/// [B, S, H*D] (3-D inputs with q_num_heads / kv_num_heads) to [B, H, S, D].
FailureOr<Value> toHeads(NodeImporter &n, Value x, int64_t heads) {
  auto type = llvm::cast<RankedTensorType>(x.getType());
  if (type.getRank() == 4)
    return x;
  if (heads <= 0 || type.getDimSize(2) % heads != 0)
    return n.fail("3-D inputs need q_num_heads and kv_num_heads that divide "
                  "the hidden size");
  int64_t b = type.getDimSize(0), s = type.getDimSize(1),
          d = type.getDimSize(2) / heads;
  auto r = n.reshape(x, {b, s, heads, d});
  if (failed(r))
    return failure();
  auto t = n.create<TransposeOp>(*r, llvm::ArrayRef<int64_t>{0, 2, 1, 3});
  return failed(t) ? FailureOr<Value>(failure()) : FailureOr<Value>(*t);
}

/// Grouped-query attention: each of `kvHeads` heads serves `group` query
/// heads ([B, Hkv, S, D] -> [B, Hkv*group, S, D], head h reads h / group).
FailureOr<Value> repeatHeads(NodeImporter &n, Value x, int64_t group) {
  if (group == 1)
    return x;
  auto type = llvm::cast<RankedTensorType>(x.getType());
  int64_t b = type.getDimSize(0), h = type.getDimSize(1),
          s = type.getDimSize(2), d = type.getDimSize(3);
  auto r = n.reshape(x, {b, h, 1, s, d});
  if (failed(r))
    return failure();
  auto wide = n.broadcast(*r, {b, h, group, s, d});
  if (failed(wide))
    return failure();
  return n.reshape(*wide, {b, h * group, s, d});
}

LogicalResult convertAttention(NodeImporter &n) {
  if (failed(n.expectInputs(3, 7)) ||
      failed(n.expectAttrs({"is_causal", "kv_num_heads", "q_num_heads",
                            "qk_matmul_output_mode", "scale", "softcap",
                            "softmax_precision", "left_window_size",
                            "right_window_size"})))
    return failure();
  if (n.hasInput(4) || n.hasInput(5) || n.hasInput(6))
    return n.unsupported("past key/value caches and nonpad_kv_seqlen are not "
                         "supported (training has no cache)");
  for (int i = 1; i < n.numOutputs(); ++i)
    if (n.outputUsed(i))
      return n.unsupported("output " + std::to_string(i) +
                           " (present key/value, qk_matmul_output) is not "
                           "supported");
  if (n.floatAttr("softcap", 0.0) != 0.0)
    return n.unsupported("softcap is not supported");
  if (n.intAttr("left_window_size", -1) != -1 ||
      n.intAttr("right_window_size", -1) != -1)
    return n.unsupported("sliding windows are not supported");
  for (int i = 0; i < 3; ++i) {
    if (!llvm::isa<FloatType>(n.inputElementType(i)))
      return n.fail("q, k and v must be float tensors");
    int64_t rank = llvm::cast<RankedTensorType>(n.input(i).getType()).getRank();
    if (rank != 3 && rank != 4)
      return n.fail("q, k and v must be 3-D [B, S, H*D] or 4-D [B, H, S, D] "
                    "(input " + std::to_string(i) + " is " +
                    std::to_string(rank) + "-D)");
  }
  auto q = toHeads(n, n.input(0), n.intAttr("q_num_heads", 0));
  auto k = toHeads(n, n.input(1), n.intAttr("kv_num_heads", 0));
  auto v = toHeads(n, n.input(2), n.intAttr("kv_num_heads", 0));
  if (failed(q) || failed(k) || failed(v))
    return failure();
  auto qt = llvm::cast<RankedTensorType>(q->getType());
  auto kt = llvm::cast<RankedTensorType>(k->getType());
  int64_t hq = qt.getDimSize(1), hkv = kt.getDimSize(1);
  if (hkv <= 0 || hq % hkv != 0)
    return n.fail(std::to_string(hq) + " query heads are not a multiple of " +
                  std::to_string(hkv) + " key/value heads");
  k = repeatHeads(n, *k, hq / hkv);
  v = repeatHeads(n, *v, hq / hkv);
  if (failed(k) || failed(v))
    return failure();
  Type elem = qt.getElementType();
  int64_t tq = qt.getDimSize(2), dim = qt.getDimSize(3);
  int64_t tk = llvm::cast<RankedTensorType>(k->getType()).getDimSize(2);
  double scale = n.floatAttr("scale", 1.0 / std::sqrt(double(dim)));

  auto scores = n.create<MatmulOp>(*q, *k, false, true);
  if (failed(scores))
    return failure();
  auto scaled = n.create<MulOp>(*scores, n.scalar(elem, scale));
  if (failed(scaled))
    return failure();
  Value cur = *scaled;
  double ninf = -std::numeric_limits<double>::infinity();
  if (n.hasInput(3)) {
    Value mask = n.input(3);
    auto maskElem = n.inputElementType(3);
    if (maskElem.isInteger(1)) {
      auto w = n.create<WhereOp>(mask, cur, n.scalar(elem, ninf));
      if (failed(w))
        return failure();
      cur = *w;
    } else if (llvm::isa<FloatType>(maskElem)) {
      auto a = n.create<AddOp>(cur, n.cast(mask, elem));
      if (failed(a))
        return failure();
      cur = *a;
    } else {
      return n.fail("attn_mask must be bool or float");
    }
  }
  if (n.intAttr("is_causal", 0)) {
    // Top-left aligned: query i sees keys 0..i.
    Lit causal;
    causal.type = RankedTensorType::get({tq, tk}, elem);
    for (int64_t i = 0; i < tq; ++i)
      for (int64_t j = 0; j < tk; ++j)
        causal.floats.push_back(j <= i ? 0.0 : ninf);
    auto a = n.create<AddOp>(cur, n.constant(fromLit(causal)));
    if (failed(a))
      return failure();
    cur = *a;
  }
  auto softmax = n.create<SoftmaxOp>(cur, int64_t(3));
  if (failed(softmax))
    return failure();
  Value probs = *softmax;
  if (n.hasInput(3)) {
    // A fully masked row is 0, not NaN (the op's definition); PyTorch's
    // decomposition writes the same guard, which tcc-raise-attention knows.
    auto nan = n.create<CmpOp>(CmpPredicate::ne, probs, probs);
    if (failed(nan))
      return failure();
    auto guarded = n.create<WhereOp>(*nan, n.scalar(elem, 0.0), probs);
    if (failed(guarded))
      return failure();
    probs = *guarded;
  }
  auto out = n.create<MatmulOp>(probs, *v, false, false);
  if (failed(out))
    return failure();
  Value y = *out;
  if (n.inputType(0).getRank() == 3) {
    auto t = n.create<TransposeOp>(y, llvm::ArrayRef<int64_t>{0, 2, 1, 3});
    if (failed(t))
      return failure();
    int64_t dv = llvm::cast<RankedTensorType>(v->getType()).getDimSize(3);
    auto r = n.reshape(*t, {qt.getDimSize(0), tq, hq * dv});
    if (failed(r))
      return failure();
    y = *r;
  }
  return n.setOutput(0, y);
}

/// RMSNormalization: x * rsqrt(mean(x^2 over dims [axis, rank)) + eps) *
/// scale (LLaMA's RMSNorm).
LogicalResult convertRMSNorm(NodeImporter &n) {
  if (failed(n.expectInputs(2, 2)) ||
      failed(n.expectAttrs({"axis", "epsilon", "stash_type"})))
    return failure();
  if (!llvm::isa<FloatType>(n.inputElementType(0)))
    return n.fail("input must be a float tensor");
  int64_t rank = n.inputType(0).getRank();
  auto axis = n.normalizeAxis(n.intAttr("axis", -1), rank, "axis");
  if (failed(axis))
    return failure();
  Value x = n.input(0);
  Type elem = n.inputElementType(0);
  llvm::SmallVector<int64_t> axes;
  for (int64_t d = *axis; d < rank; ++d)
    axes.push_back(d);
  auto square = n.create<MulOp>(x, x);
  if (failed(square))
    return failure();
  auto mean = n.create<ReduceMeanOp>(*square, axes, true);
  if (failed(mean))
    return failure();
  auto shifted =
      n.create<AddOp>(*mean, n.scalar(elem, n.floatAttr("epsilon", 1e-5)));
  if (failed(shifted))
    return failure();
  auto inv = n.create<RsqrtOp>(*shifted);
  if (failed(inv))
    return failure();
  auto normed = n.create<MulOp>(x, *inv);
  if (failed(normed))
    return failure();
  auto y = n.create<MulOp>(*normed, n.cast(n.input(1), elem));
  return failed(y) ? failure() : n.setOutput(0, *y);
}

} // namespace

void registerAttentionConverters(ConverterTable &table) {
  table["Attention"] = convertAttention;
  table["RMSNormalization"] = convertRMSNorm;
}

} // namespace tcc::onnx_import
