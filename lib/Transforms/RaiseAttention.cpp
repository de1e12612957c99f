// Raises the op-by-op attention chain PyTorch exports into tcc.attention.
//
// The chain is matched backwards from the final matmul, so a failed match
// never touches the IR: every check runs before the first op is created.
#include "tcc/TccShapes.h"
#include "tcc/Transforms/Passes.h"

#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallVectorExtras.h"

#include <cmath>
#include <cstring>

namespace tcc {
#define GEN_PASS_DEF_RAISEATTENTION
#include "tcc/Transforms/Passes.h.inc"
} // namespace tcc

using namespace mlir;
using namespace tcc;

namespace {

// Masks are checked element by element; a bound keeps that affordable (a
// 4096 x 4096 causal mask is 16M elements).
constexpr int64_t kMaxMaskElements = int64_t(1) << 24;
// Masked scores are -inf or a large negative number: -10000 in HF models,
// which bf16 rounds to -9984, or the dtype's lowest value.
constexpr double kMaskedFloor = -9.0e3;

/// A constant tensor with its elements widened to double (i1 as 0 / 1), so
/// that masks spelled in float, integer or bool can be checked alike.
struct ConstTensor {
  SmallVector<int64_t> shape;
  SmallVector<double> values;
};

/// Reads `values` at `offset + sum(idx[d] * steps[d])` for every index of
/// `shape`: both broadcasting and slicing are such affine gathers.
SmallVector<double> gather(ArrayRef<double> values, int64_t offset,
                           ArrayRef<int64_t> steps, ArrayRef<int64_t> shape) {
  SmallVector<double> out;
  int64_t n = numElements(shape);
  out.reserve(n);
  SmallVector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t src = offset;
    for (size_t d = 0; d < shape.size(); ++d)
      src += idx[d] * steps[d];
    out.push_back(values[src]);
    for (int64_t d = shape.size() - 1; d >= 0; --d) {
      if (++idx[d] < shape[d])
        break;
      idx[d] = 0;
    }
  }
  return out;
}

SmallVector<int64_t> rowMajorStrides(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

ConstTensor broadcastTo(const ConstTensor &t, ArrayRef<int64_t> shape) {
  size_t off = shape.size() - t.shape.size();
  SmallVector<int64_t> strides = rowMajorStrides(t.shape);
  SmallVector<int64_t> steps(shape.size(), 0);
  for (size_t d = 0; d < t.shape.size(); ++d)
    steps[d + off] = t.shape[d] == 1 ? 0 : strides[d];
  return {SmallVector<int64_t>(shape), gather(t.values, 0, steps, shape)};
}

double applyCmp(CmpPredicate pred, double a, double b) {
  switch (pred) {
  case CmpPredicate::eq:
    return a == b;
  case CmpPredicate::ne:
    return a != b;
  case CmpPredicate::lt:
    return a < b;
  case CmpPredicate::le:
    return a <= b;
  case CmpPredicate::gt:
    return a > b;
  case CmpPredicate::ge:
    return a >= b;
  }
  llvm_unreachable("unknown predicate");
}

/// The elements of a dense resource (a mask the importer kept as a large
/// constant) widened to double; false for element types masks never have.
bool resourceValues(DenseResourceElementsAttr attr,
                    SmallVectorImpl<double> &out) {
  AsmResourceBlob *blob = attr.getRawHandle().getBlob();
  Type elem = attr.getType().getElementType();
  int64_t n = attr.getType().getNumElements();
  unsigned bits = elem.getIntOrFloatBitWidth();
  size_t size = elem.isInteger(1) ? 1 : bits / 8;
  if (!blob || blob->getData().size() != size_t(n) * size)
    return false;
  const char *p = blob->getData().data();
  auto read = [&](auto zero, int64_t i) {
    decltype(zero) v;
    std::memcpy(&v, p + i * sizeof(v), sizeof(v));
    return double(v);
  };
  for (int64_t i = 0; i < n; ++i) {
    if (elem.isF32())
      out.push_back(read(float(), i));
    else if (elem.isF64())
      out.push_back(read(double(), i));
    else if (elem.isInteger(1))
      out.push_back(p[i] != 0);
    else if (elem.isInteger(32))
      out.push_back(read(int32_t(), i));
    else if (elem.isInteger(64))
      out.push_back(read(int64_t(), i));
    else
      return false;
  }
  return true;
}

/// Evaluates the constant sub-graph behind `v`. Covers what importers and
/// exporters wrap around a mask buffer (`mask[:T, :T] == 0`, casts, `not`,
/// reshapes), since those ops have no constant folders of their own.
std::optional<ConstTensor> evalConst(Value v, int depth = 0) {
  auto type = llvm::dyn_cast<RankedTensorType>(v.getType());
  if (!type || depth > 8 || numElements(type.getShape()) > kMaxMaskElements)
    return std::nullopt;
  ConstTensor out{SmallVector<int64_t>(type.getShape()), {}};

  DenseElementsAttr dense;
  if (matchPattern(v, m_Constant(&dense))) {
    Type elem = dense.getElementType();
    if (llvm::isa<FloatType>(elem)) {
      for (const APFloat &f : dense.getValues<APFloat>())
        out.values.push_back(f.convertToDouble());
    } else if (elem.isInteger(1)) {
      for (bool b : dense.getValues<bool>())
        out.values.push_back(b);
    } else if (llvm::isa<IntegerType>(elem)) {
      for (const APInt &i : dense.getValues<APInt>())
        out.values.push_back(i.getSExtValue());
    } else {
      return std::nullopt;
    }
    return out;
  }
  DenseResourceElementsAttr resource;
  if (matchPattern(v, m_Constant(&resource)))
    return resourceValues(resource, out.values) ? std::optional(out)
                                                : std::nullopt;

  Operation *op = v.getDefiningOp();
  if (!op ||
      !llvm::isa<CastOp, NotOp, CmpOp, ReshapeOp, BroadcastOp, SliceOp>(op))
    return std::nullopt;
  SmallVector<ConstTensor, 2> in;
  for (Value operand : op->getOperands()) {
    std::optional<ConstTensor> c = evalConst(operand, depth + 1);
    if (!c)
      return std::nullopt;
    in.push_back(std::move(*c));
  }
  if (auto cmp = llvm::dyn_cast<CmpOp>(op)) {
    ConstTensor a = broadcastTo(in[0], out.shape);
    ConstTensor b = broadcastTo(in[1], out.shape);
    for (size_t i = 0; i < a.values.size(); ++i)
      out.values.push_back(
          applyCmp(cmp.getPredicate(), a.values[i], b.values[i]));
    return out;
  }
  if (llvm::isa<BroadcastOp>(op))
    return broadcastTo(in[0], out.shape);
  if (auto slice = llvm::dyn_cast<SliceOp>(op)) {
    SmallVector<int64_t> strides = rowMajorStrides(in[0].shape);
    SmallVector<int64_t> steps;
    int64_t offset = 0;
    for (size_t d = 0; d < strides.size(); ++d) {
      offset += slice.getStarts()[d] * strides[d];
      steps.push_back(slice.getStrides()[d] * strides[d]);
    }
    out.values = gather(in[0].values, offset, steps, out.shape);
    return out;
  }
  // Elementwise on one operand; a reshape keeps the row-major values.
  Type elem = type.getElementType();
  for (double x : in[0].values) {
    if (llvm::isa<NotOp>(op))
      x = x == 0;
    else if (llvm::isa<CastOp>(op) && elem.isInteger(1))
      x = x != 0;
    else if (llvm::isa<CastOp>(op) && llvm::isa<IntegerType>(elem))
      x = std::trunc(x);
    out.values.push_back(x);
  }
  return out;
}

/// True when `mask`, read against [.., tq, tk] scores, hides exactly the keys
/// after each query (top-left aligned, as tcc.attention's `causal`).
/// `hides` classifies one element; nullopt means neither clearly kept nor
/// clearly hidden.
bool isCausal(const ConstTensor &mask, int64_t tq, int64_t tk,
              function_ref<std::optional<bool>(double)> hides) {
  ArrayRef<int64_t> shape = mask.shape;
  if (shape.size() < 2 || shape.take_back(2) != ArrayRef<int64_t>{tq, tk})
    return false;
  for (size_t idx = 0; idx < mask.values.size(); ++idx) {
    int64_t i = (idx / tk) % tq, j = idx % tk;
    std::optional<bool> h = hides(mask.values[idx]);
    if (!h || *h != (j > i))
      return false;
  }
  return true;
}

/// The value of a splat constant, looking through the same wrappers as masks.
std::optional<double> splatValue(Value v) {
  auto c = evalConst(v);
  if (!c || c->values.empty() ||
      llvm::any_of(c->values, [&](double x) { return x != c->values[0]; }))
    return std::nullopt;
  return c->values[0];
}

/// `v` is `other * c` or `other / c` for a splat `c` that broadcasts to `v`'s
/// type; returns `other` and the factor.
std::optional<std::pair<Value, double>> matchScaling(Value v) {
  Operation *op = v.getDefiningOp();
  if (!op || !llvm::isa<MulOp, DivOp>(op))
    return std::nullopt;
  for (int i = 0; i < 2; ++i) {
    // Division only scales by its divisor.
    if (llvm::isa<DivOp>(op) && i == 0)
      continue;
    Value other = op->getOperand(1 - i);
    std::optional<double> c = splatValue(op->getOperand(i));
    if (!c || other.getType() != v.getType() || *c == 0 || !std::isfinite(*c))
      continue;
    return std::make_pair(other, llvm::isa<DivOp>(op) ? 1.0 / *c : *c);
  }
  return std::nullopt;
}

/// An attention operand as `transpose(src, perm)`, with `perm` the identity
/// when `src` is used directly.
struct Operand {
  Value src;
  SmallVector<int64_t, 4> perm{0, 1, 2, 3};

  SmallVector<int64_t> shape() const {
    auto in = llvm::cast<RankedTensorType>(src.getType()).getShape();
    return llvm::map_to_vector(perm, [&](int64_t p) { return in[p]; });
  }
  bool isIdentity() const { return llvm::equal(perm, llvm::seq<int64_t>(4)); }
};

/// Resolves a matmul operand to the [B, H, T, D] tensor attention wants,
/// swapping the last two dims when `swapLast2`. An existing transpose is
/// folded into the permutation so that e.g. k^T = transpose(k', [0,2,3,1])
/// becomes transpose(k', [0,2,1,3]) instead of a transpose of a transpose.
/// Splat scalings on the way multiply into `scale` when it is given (the
/// HF / SDPA spelling that pre-scales q and k by sqrt(scale)).
/// `v` = reshape(transpose(reshape(x : [B, H, A, C] to [B*H, A, C]),
/// [0, 2, 1]) to [B, H, C, A]): x with its last two dims swapped, as
/// torch.export spells k.transpose(-2, -1) of a 4-D k (a batched 3-D
/// transpose). Returns x.
std::optional<Value> unfoldBatchedTranspose(Value v) {
  auto outer = v.getDefiningOp<ReshapeOp>();
  auto t = outer ? outer.getInput().getDefiningOp<TransposeOp>() : nullptr;
  auto inner = t ? t.getInput().getDefiningOp<ReshapeOp>() : nullptr;
  if (!inner || t.getPerm() != ArrayRef<int64_t>{0, 2, 1})
    return std::nullopt;
  Value x = inner.getInput();
  auto xs = llvm::cast<RankedTensorType>(x.getType()).getShape();
  auto ms = llvm::cast<RankedTensorType>(inner.getType()).getShape();
  auto vs = llvm::cast<RankedTensorType>(v.getType()).getShape();
  if (xs.size() != 4 || ms.size() != 3 || vs.size() != 4 ||
      ms != ArrayRef<int64_t>{xs[0] * xs[1], xs[2], xs[3]} ||
      vs != ArrayRef<int64_t>{xs[0], xs[1], xs[3], xs[2]})
    return std::nullopt;
  return x;
}

std::optional<Operand> resolveOperand(Value v, bool swapLast2, double *scale) {
  auto peel = [&](Value &x) {
    if (!scale)
      return;
    while (auto s = matchScaling(x)) {
      x = s->first;
      *scale *= s->second;
    }
  };
  peel(v);
  if (swapLast2)
    if (std::optional<Value> x = unfoldBatchedTranspose(v)) {
      Operand op{*x};
      peel(op.src);
      return op;
    }
  Operand op{v};
  if (swapLast2) {
    std::swap(op.perm[2], op.perm[3]);
    if (auto t = v.getDefiningOp<TransposeOp>()) {
      ArrayRef<int64_t> inner = t.getPerm();
      if (inner.size() != 4)
        return std::nullopt;
      op.perm =
          llvm::map_to_vector<4>(op.perm, [&](int64_t p) { return inner[p]; });
      op.src = t.getInput();
      peel(op.src);
    }
  }
  if (llvm::cast<RankedTensorType>(op.src.getType()).getRank() != 4)
    return std::nullopt;
  return op;
}

Value materialize(PatternRewriter &rewriter, Location loc, const Operand &op) {
  if (op.isIdentity())
    return op.src;
  return TransposeOp::create(rewriter, loc, op.src,
                             rewriter.getDenseI64ArrayAttr(op.perm));
}

/// A key-padding bias: broadcastable to the scores with 1s in the head and
/// query dims, one value per (batch, key).
bool isKeyPaddingBias(RankedTensorType type, RankedTensorType scores) {
  if (type.getRank() > 4 || type.getElementType() != scores.getElementType())
    return false;
  SmallVector<int64_t, 4> dims(4 - type.getRank(), 1);
  llvm::append_range(dims, type.getShape());
  return (dims[0] == 1 || dims[0] == scores.getDimSize(0)) && dims[1] == 1 &&
         dims[2] == 1 && dims[3] == scores.getDimSize(3);
}

/// The dim of `v` that lines up with the scores' query dim (the scores are
/// [B, H, Tq, Tk]; broadcasting aligns dims from the right), or -1.
int64_t queryDim(Value v) {
  return llvm::cast<RankedTensorType>(v.getType()).getRank() - 2;
}

/// Whether `v` holds the same values for every query: a chain of
/// elementwise ops whose leaves have one query row, or are constants equal
/// along the query dim. Hugging Face's BERT builds its padding bias so:
/// where(and(mask[B, 1, 1, Tk], ones[1, 1, Tq, 1]), 0, min), [B, 1, Tq, Tk].
bool sameForEveryQuery(Value v, int depth = 0) {
  int64_t qd = queryDim(v);
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (qd < 0 || type.getDimSize(qd) == 1)
    return true;
  if (depth > 8)
    return false;
  if (std::optional<ConstTensor> c = evalConst(v)) {
    SmallVector<int64_t> strides = rowMajorStrides(c->shape);
    for (size_t i = 0; i < c->values.size(); ++i)
      if ((int64_t(i) / strides[qd]) % c->shape[qd] != 0 &&
          c->values[i] != c->values[i - (int64_t(i) / strides[qd] %
                                         c->shape[qd]) * strides[qd]])
        return false;
    return true;
  }
  Operation *def = v.getDefiningOp();
  if (!def || !def->hasTrait<OpClass::Elementwise>() ||
      def->getNumResults() != 1)
    return false;
  return llvm::all_of(def->getOperands(), [&](Value operand) {
    return sameForEveryQuery(operand, depth + 1);
  });
}

/// `v`'s type with the query dim cut to 1 (its own when it has none).
RankedTensorType queryRowType(Value v) {
  auto type = llvm::cast<RankedTensorType>(v.getType());
  int64_t qd = queryDim(v);
  if (qd < 0)
    return type;
  SmallVector<int64_t> shape(type.getShape());
  shape[qd] = 1;
  return RankedTensorType::get(shape, type.getElementType());
}

/// `v` (sameForEveryQuery) with its query dim cut to 1: the first row of
/// each leaf, the elementwise ops rebuilt on them.
Value firstQueryRow(PatternRewriter &rewriter, Location loc, Value v) {
  int64_t qd = queryDim(v);
  auto type = llvm::cast<RankedTensorType>(v.getType());
  if (qd < 0 || type.getDimSize(qd) == 1)
    return v;
  SmallVector<int64_t> shape(type.getShape());
  shape[qd] = 1;
  auto rowType = RankedTensorType::get(shape, type.getElementType());
  Operation *def = v.getDefiningOp();
  if (!def || !def->hasTrait<OpClass::Elementwise>() || evalConst(v)) {
    SmallVector<int64_t> starts(shape.size(), 0), strides(shape.size(), 1);
    return SliceOp::create(rewriter, loc, rowType, v, starts, shape, strides);
  }
  OperationState state(loc, def->getName());
  for (Value operand : def->getOperands())
    state.addOperands(firstQueryRow(rewriter, loc, operand));
  state.addAttributes(def->getAttrs());
  state.addTypes(rowType);
  return rewriter.create(state)->getResult(0);
}

/// Whether a bias is finite wherever it is defined (so no row of scores is
/// all -inf and sdpa's NaN guard never fires): finite constants, a where
/// between finite values, integers cast to float, and views of those.
bool isFiniteBias(Value v, int depth = 0) {
  if (depth > 8)
    return false;
  if (std::optional<ConstTensor> c = evalConst(v))
    return llvm::all_of(c->values, [](double x) { return std::isfinite(x); });
  Operation *def = v.getDefiningOp();
  if (auto where = llvm::dyn_cast_if_present<WhereOp>(def))
    return isFiniteBias(where.getOnTrue(), depth + 1) &&
           isFiniteBias(where.getOnFalse(), depth + 1);
  if (auto cast = llvm::dyn_cast_if_present<CastOp>(def))
    return llvm::isa<IntegerType>(
        llvm::cast<RankedTensorType>(cast.getInput().getType())
            .getElementType());
  if (llvm::isa_and_present<ReshapeOp, BroadcastOp, SliceOp, TransposeOp>(def))
    return isFiniteBias(def->getOperand(0), depth + 1);
  return false;
}

std::optional<bool> hidesAdditive(double x) {
  if (x == 0)
    return false;
  if (x <= kMaskedFloor)
    return true;
  return std::nullopt;
}

bool isMaskedFill(Value v) {
  std::optional<double> c = splatValue(v);
  return c && *c <= kMaskedFloor;
}

/// transformers' combined mask: `where(and(pad, causal), 0, fill)` (or the
/// and's operands swapped) with `causal` a constant causal keep-mask and
/// `pad` the same for every query: the causal part is tcc.attention's
/// `causal`, the rest a key-padding bias where(pad, 0, fill).
struct CausalAndPadding {
  WhereOp where;
  Value pad;
};
std::optional<CausalAndPadding> splitCausal(Value bias, int64_t tq,
                                            int64_t tk) {
  auto where = bias.getDefiningOp<WhereOp>();
  if (!where || !isMaskedFill(where.getOnFalse()))
    return std::nullopt;
  std::optional<double> kept = splatValue(where.getOnTrue());
  auto both = where.getCondition().getDefiningOp<AndOp>();
  if (!kept || *kept != 0.0 || !both)
    return std::nullopt;
  auto keeps = [](double x) -> std::optional<bool> { return x == 0; };
  for (int i = 0; i < 2; ++i) {
    Value causal = both->getOperand(i), pad = both->getOperand(1 - i);
    std::optional<ConstTensor> c = evalConst(causal);
    if (c && isCausal(*c, tq, tk, keeps) && sameForEveryQuery(pad))
      return CausalAndPadding{where, pad};
  }
  return std::nullopt;
}

/// `v` = where(p != p, 0, p) with the where's only user the caller; returns
/// the where (null otherwise).
WhereOp isNaNGuard(Value v) {
  auto where = v.getDefiningOp<WhereOp>();
  if (!where || !where->hasOneUse())
    return nullptr;
  auto cmp = where.getCondition().getDefiningOp<CmpOp>();
  std::optional<double> fill = splatValue(where.getOnTrue());
  Value p = where.getOnFalse();
  if (!cmp || !cmp->hasOneUse() || cmp.getPredicate() != CmpPredicate::ne ||
      cmp.getLhs() != p || cmp.getRhs() != p || !fill || *fill != 0.0 ||
      where.getType() != p.getType())
    return nullptr;
  return where;
}

struct RaiseAttentionPattern : OpRewritePattern<MatmulOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MatmulOp out,
                                PatternRewriter &rewriter) const override {
    // PyTorch's scaled_dot_product_attention decomposition guards the
    // probabilities of fully masked rows: where(p != p, 0, p).
    Value probs = out.getLhs();
    WhereOp nanGuard = isNaNGuard(probs);
    if (nanGuard)
      probs = nanGuard.getOnFalse();
    auto softmax = probs.getDefiningOp<SoftmaxOp>();
    if (!softmax)
      return rewriter.notifyMatchFailure(out, "lhs is not a softmax");
    if (out.getTransposeLhs())
      return rewriter.notifyMatchFailure(out, "probabilities are transposed");
    if (!llvm::all_of(softmax->getUsers(), [&](Operation *user) {
          return nanGuard ? user == nanGuard.getOperation() ||
                                user == nanGuard.getCondition().getDefiningOp()
                          : user == out.getOperation();
        }))
      return rewriter.notifyMatchFailure(out, "probabilities have other users");
    auto scoresType = llvm::cast<RankedTensorType>(softmax.getType());
    if (scoresType.getRank() != 4)
      return rewriter.notifyMatchFailure(out, "scores are not rank 4");
    if (softmax.getAxis() != 3)
      return rewriter.notifyMatchFailure(out, "softmax is not over the keys");
    int64_t tq = scoresType.getDimSize(2), tk = scoresType.getDimSize(3);

    // Masks sit between the scaling and the softmax, at most one of each kind.
    Value cur = softmax.getInput();
    bool causal = false;
    Value bias;
    std::optional<CausalAndPadding> causalAndPadding;
    if (!cur.hasOneUse())
      return rewriter.notifyMatchFailure(out, "softmax input has other users");
    for (int step = 0; step < 2; ++step) {
      Operation *op = cur.getDefiningOp();
      if (auto where = llvm::dyn_cast_if_present<WhereOp>(op)) {
        // where(keep, scores, -inf) or where(hide, -inf, scores).
        bool keepForm = isMaskedFill(where.getOnFalse());
        if (!keepForm && !isMaskedFill(where.getOnTrue()))
          return rewriter.notifyMatchFailure(
              out, "where does not fill with -inf or a large negative value");
        Value next = keepForm ? where.getOnTrue() : where.getOnFalse();
        std::optional<ConstTensor> cond = evalConst(where.getCondition());
        auto hides = [&](double x) -> std::optional<bool> {
          return keepForm == (x == 0);
        };
        if (causal || next.getType() != scoresType || !cond ||
            !isCausal(*cond, tq, tk, hides))
          return rewriter.notifyMatchFailure(
              out, "where condition is not a constant causal mask");
        causal = true;
        cur = next;
      } else if (auto add = llvm::dyn_cast_if_present<AddOp>(op)) {
        bool matched = false;
        for (int i = 1; i >= 0 && !matched; --i) {
          Value mask = add->getOperand(i), next = add->getOperand(1 - i);
          if (next.getType() != scoresType)
            continue;
          std::optional<CausalAndPadding> split;
          if (!bias && isKeyPaddingBias(queryRowType(mask), scoresType) &&
              sameForEveryQuery(mask)) {
            bias = mask;
          } else if (!bias && !causal &&
                     (split = splitCausal(mask, tq, tk)) &&
                     isKeyPaddingBias(queryRowType(split->pad).clone(
                                          scoresType.getElementType()),
                                      scoresType)) {
            bias = mask;
            causalAndPadding = split;
            causal = true;
          } else if (!causal) {
            std::optional<ConstTensor> c = evalConst(mask);
            if (!c || !isCausal(*c, tq, tk, hidesAdditive))
              continue;
            causal = true;
          } else {
            continue;
          }
          matched = true;
          cur = next;
        }
        if (!matched)
          return rewriter.notifyMatchFailure(
              out, "add is neither a key-padding bias nor a causal mask");
      } else {
        break;
      }
      if (!cur.hasOneUse())
        return rewriter.notifyMatchFailure(out,
                                           "masked scores have other users");
    }

    double scale = 1.0;
    while (Operation *op = cur.getDefiningOp()) {
      if (!llvm::isa<MulOp, DivOp>(op))
        break;
      auto s = matchScaling(cur);
      if (!s)
        return rewriter.notifyMatchFailure(
            out, "scores are not scaled by a splat constant");
      scale *= s->second;
      cur = s->first;
      if (!cur.hasOneUse())
        return rewriter.notifyMatchFailure(out, "scores have other users");
    }

    auto scores = cur.getDefiningOp<MatmulOp>();
    if (!scores)
      return rewriter.notifyMatchFailure(out, "scores are not a matmul");
    if (scores.getType() != scoresType)
      return rewriter.notifyMatchFailure(out, "scores are broadcast later on");
    std::optional<Operand> q =
        resolveOperand(scores.getLhs(), scores.getTransposeLhs(), &scale);
    std::optional<Operand> k =
        resolveOperand(scores.getRhs(), !scores.getTransposeRhs(), &scale);
    std::optional<Operand> v =
        resolveOperand(out.getRhs(), out.getTransposeRhs(), nullptr);
    if (!q || !k || !v)
      return rewriter.notifyMatchFailure(out, "q, k or v is not rank 4");

    // Batch dims must match exactly: tcc.attention does not broadcast. The
    // element types already agree, as matmul and the scalings demand it.
    SmallVector<int64_t> qs = q->shape(), ks = k->shape(), vs = v->shape();
    if (ArrayRef<int64_t>(qs).drop_back() !=
            scoresType.getShape().drop_back() ||
        ks[0] != qs[0] || ks[1] != qs[1] || ks[2] != tk || ks[3] != qs[3] ||
        ArrayRef<int64_t>(vs).take_front(3) !=
            ArrayRef<int64_t>(ks).take_front(3) ||
        out.getType().getShape() != ArrayRef<int64_t>{qs[0], qs[1], tq, vs[3]})
      return rewriter.notifyMatchFailure(
          out, "q, k and v shapes do not form [B, H, T, D] attention");

    // No row of a causal mask is fully masked, so the guard never fires;
    // with a key-padding bias it could (a row of -inf), and tcc.attention
    // does not promise zeros there.
    if (nanGuard && bias && !isFiniteBias(bias))
      return rewriter.notifyMatchFailure(
          out, "NaN guard around a key-padding bias that may be -inf");

    Location loc = out.getLoc();
    Type elem = scoresType.getElementType();
    Value keyMask;
    if (causalAndPadding) {
      // The key-padding half of transformers' combined mask.
      WhereOp w = causalAndPadding->where;
      Value pad = firstQueryRow(rewriter, loc, causalAndPadding->pad);
      bias = WhereOp::create(
          rewriter, loc,
          llvm::cast<RankedTensorType>(pad.getType()).clone(elem), pad,
          w.getOnTrue(), w.getOnFalse());
    }
    if (bias) {
      bias = firstQueryRow(rewriter, loc, bias);
      auto biasType = llvm::cast<RankedTensorType>(bias.getType());
      int64_t b = biasType.getRank() == 4 ? biasType.getDimSize(0) : 1;
      auto flatType = RankedTensorType::get({b, tk}, elem);
      keyMask = bias;
      if (biasType != flatType)
        keyMask = ReshapeOp::create(rewriter, loc, flatType, keyMask);
      if (b != qs[0])
        keyMask = BroadcastOp::create(
            rewriter, loc, RankedTensorType::get({qs[0], tk}, elem), keyMask);
    }
    Value query = materialize(rewriter, loc, *q);
    Value key = materialize(rewriter, loc, *k);
    Value value = materialize(rewriter, loc, *v);
    rewriter.replaceOpWithNewOp<AttentionOp>(
        out, out.getType(), query, key, value, keyMask,
        rewriter.getF64FloatAttr(scale), rewriter.getBoolAttr(causal));
    return success();
  }
};

struct RaiseAttentionPass : tcc::impl::RaiseAttentionBase<RaiseAttentionPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseAttentionPattern>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
