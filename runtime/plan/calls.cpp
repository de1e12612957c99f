//===- calls.cpp - the dtype and shape rules of each library call ---------===//
//
// The runtime's statement of dialects/tcc/Tcc*Ops.td's verifiers, per op
// (library_ops.inc names one check per library op; a missing one does not
// link). Operand counts, absent non-optional operands and attribute types
// were checked before (plan_read.cpp), from the same table.
//
//===----------------------------------------------------------------------===//
#include "plan/calls.h"

#include <algorithm>

namespace tcc::rt {

using data::DType;

namespace {

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 ||
         t == DType::F16;
}
bool isInt(DType t) { return t == DType::I32 || t == DType::I64; }

} // namespace

std::string describe(const Value &v) {
  return std::string(data::dtypeName(v.dtype)) + " " + shapeString(v.shape);
}

void CallCheck::bad(const std::string &msg) {
  badFn(msg);
  throw Error(TCC_ERROR_FORMAT, msg); // not reached: badFn throws
}

const Value *CallCheck::in(size_t i) const {
  return step.inputs[i] < 0 ? nullptr : &fn.values[step.inputs[i]];
}
const Value *CallCheck::out(size_t i) const {
  return step.outputs[i] < 0 ? nullptr : &fn.values[step.outputs[i]];
}
const std::string &CallCheck::inName(size_t i) const {
  return schema.operands[i].name;
}
const std::string &CallCheck::outName(size_t i) const {
  return schema.results[i].name;
}

int64_t CallCheck::axis(size_t rank) {
  int64_t axis = step.attrs.axis, r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r)
    bad("axis " + std::to_string(axis) + " is out of range for rank " +
        std::to_string(rank));
  step.attrs.axis = axis < 0 ? axis + r : axis;
  return step.attrs.axis;
}

const Value &CallCheck::need(const Value *v, const std::string &name) {
  if (!v)
    bad(name + " is absent");
  return *v;
}
void CallCheck::wantFloat(const Value &v, const std::string &name) {
  if (!isFloat(v.dtype))
    bad(name + " is " + describe(v) + ", not a float tensor");
}
void CallCheck::wantInt(const Value &v, const std::string &name) {
  if (!isInt(v.dtype))
    bad(name + " is " + describe(v) + ", not an i32 or i64 tensor");
}
void CallCheck::wantScalar(const Value &v, const std::string &name,
                           DType dtype) {
  if (v.dtype != dtype || v.elements != 1)
    bad(name + " is " + describe(v) + ", not a " + data::dtypeName(dtype) +
        " scalar");
}
void CallCheck::wantRank(const Value &v, const std::string &name, size_t rank) {
  if (v.shape.size() != rank)
    bad(name + " is " + describe(v) + ", not of rank " + std::to_string(rank));
}
void CallCheck::wantLike(const Value &v, const std::string &name, DType dtype,
                         const std::vector<int64_t> &shape) {
  if (v.dtype != dtype || v.shape != shape)
    bad(name + " is " + describe(v) + ", expected " + data::dtypeName(dtype) +
        " " + shapeString(shape));
}
void CallCheck::wantLike(const Value &v, const std::string &name,
                         const Value &model, const std::string &modelName) {
  if (v.dtype != model.dtype || v.shape != model.shape)
    bad(name + " is " + describe(v) + " but " + modelName + " is " +
        describe(model));
}

bool broadcastShapes(const std::vector<int64_t> &a,
                     const std::vector<int64_t> &b, std::vector<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return false;
    out[i] = da == 1 ? db : da;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The ops
//===----------------------------------------------------------------------===//

void checkMatmul(CallCheck &c) {
  const Attrs &a = c.step.attrs;
  const Value &l = *c.in(0), &r = *c.in(1), &o = *c.out(0);
  c.wantFloat(l, "lhs");
  c.wantFloat(r, "rhs");
  if (l.shape.size() < 2 || r.shape.size() < 2)
    c.bad("operands " + describe(l) + " and " + describe(r) +
          " must have rank >= 2");
  if (l.dtype != r.dtype)
    c.bad("lhs is " + describe(l) + " but rhs is " + describe(r));
  size_t lr = l.shape.size(), rr = r.shape.size();
  int64_t m = l.shape[a.transposeLhs ? lr - 1 : lr - 2];
  int64_t k = l.shape[a.transposeLhs ? lr - 2 : lr - 1];
  int64_t k2 = r.shape[a.transposeRhs ? rr - 1 : rr - 2];
  int64_t n = r.shape[a.transposeRhs ? rr - 2 : rr - 1];
  if (k != k2)
    c.bad("lhs " + describe(l) + " and rhs " + describe(r) +
          " contract dims of " + std::to_string(k) + " and " +
          std::to_string(k2));
  std::vector<int64_t> batch;
  if (!broadcastShapes({l.shape.begin(), l.shape.end() - 2},
                       {r.shape.begin(), r.shape.end() - 2}, batch))
    c.bad("batch dims of " + describe(l) + " and " + describe(r) +
          " do not broadcast");
  batch.push_back(m);
  batch.push_back(n);
  c.wantLike(o, "result", l.dtype, batch);
}

void checkGemm(CallCheck &c) {
  const Attrs &at = c.step.attrs;
  const Value &a = *c.in(0), &b = *c.in(1), &o = *c.out(0);
  const Value *cv = c.in(2);
  c.wantFloat(a, "a");
  c.wantRank(a, "a", 2);
  c.wantRank(b, "b", 2);
  if (a.dtype != b.dtype)
    c.bad("a is " + describe(a) + " but b is " + describe(b));
  int64_t m = a.shape[at.transposeA ? 1 : 0],
          k = a.shape[at.transposeA ? 0 : 1];
  int64_t k2 = b.shape[at.transposeB ? 1 : 0],
          n = b.shape[at.transposeB ? 0 : 1];
  if (k != k2)
    c.bad("a " + describe(a) + " and b " + describe(b) + " contract dims of " +
          std::to_string(k) + " and " + std::to_string(k2));
  std::vector<int64_t> mn = {m, n}, bc;
  if (cv && (cv->dtype != a.dtype || cv->shape.size() > 2 ||
             !broadcastShapes(cv->shape, mn, bc) || bc != mn))
    c.bad("c is " + describe(*cv) + ", which does not broadcast to " +
          data::dtypeName(a.dtype) + " " + shapeString(mn));
  if (const Value *bias = c.in(3))
    c.wantLike(*bias, "bias", a.dtype, {n});
  c.wantLike(o, "result", a.dtype, mn);
  // The sums of op(a)'s rows (a Linear's bias gradient), in the epilogue's
  // place: never beside a bias.
  const Value *g = c.out(1);
  if (g && c.in(3))
    c.bad("has both a bias and a bias_grad (one epilogue)");
  if (bool(g) != at.withBiasGrad)
    c.bad(at.withBiasGrad ? "with_bias_grad has no bias_grad result"
                          : "has a bias_grad result without with_bias_grad");
  if (g)
    c.wantLike(*g, "bias_grad", a.dtype, {m});
}

/// layer_norm and layer_norm_grad: scale and bias are the trailing dims.
static void checkLayerNormCall(CallCheck &c, bool grad) {
  const Value &x = *c.in(0);
  c.wantFloat(x, "input");
  int64_t axis = c.axis(x.shape.size());
  std::vector<int64_t> trailing(x.shape.begin() + axis, x.shape.end());
  if (const Value *s = c.in(1))
    c.wantLike(*s, "scale", x.dtype, trailing);
  if (!grad) {
    if (const Value *b = c.in(2))
      c.wantLike(*b, "bias", x.dtype, trailing);
    c.wantLike(*c.out(0), "result", x, "input");
    return;
  }
  c.wantLike(*c.in(2), "result_grad", x, "input");
  if (const Value *r = c.in(3))
    c.wantLike(*r, "residual_grad", x, "input");
  c.wantLike(*c.out(0), "input_grad", x, "input");
  // The parameters' gradients (sums over all rows) are f32 for 16-bit input.
  DType paramGrad =
      x.dtype == DType::BF16 || x.dtype == DType::F16 ? DType::F32 : x.dtype;
  if (const Value *g = c.out(1))
    c.wantLike(*g, "scale_grad", paramGrad, trailing);
  if (const Value *g = c.out(2))
    c.wantLike(*g, "bias_grad", paramGrad, trailing);
  if (const Value *g = c.out(3))
    c.wantLike(*g, "input_grad_sum", paramGrad, trailing);
}
void checkLayerNorm(CallCheck &c) { checkLayerNormCall(c, false); }
void checkLayerNormGrad(CallCheck &c) { checkLayerNormCall(c, true); }

//===----------------------------------------------------------------------===//
// Convolution and pooling over NCHW
//===----------------------------------------------------------------------===//

namespace {

bool isConv(Op op) { return op == Op::Conv || op == Op::ConvGrad; }
bool isGrad(Op op) {
  return op == Op::ConvGrad || op == Op::MaxPoolGrad || op == Op::AvgPoolGrad;
}

/// The window sizes a call's attributes and operand shapes give (the
/// output size computed, not read).
kernels::WindowShape windowOf(const Function &fn, const Step &step) {
  const Attrs &a = step.attrs;
  const Value &x = fn.values[step.inputs[0]];
  kernels::WindowShape s;
  s.n = x.shape[0];
  s.c = x.shape[1];
  s.h = x.shape[2];
  s.w = x.shape[3];
  if (isConv(step.op)) {
    const Value &w = fn.values[step.inputs[1]];
    s.oc = w.shape[0];
    s.kh = w.shape[2];
    s.kw = w.shape[3];
    s.group = a.group;
  } else {
    s.oc = s.c;
    s.kh = a.kernelH;
    s.kw = a.kernelW;
    s.countIncludePad = a.countIncludePad;
  }
  s.sh = a.strideH;
  s.sw = a.strideW;
  s.padTop = a.padTop;
  s.padLeft = a.padLeft;
  s.padBottom = a.padBottom;
  s.padRight = a.padRight;
  s.dh = a.dilationH;
  s.dw = a.dilationW;
  auto outDim = [](int64_t in, int64_t pads, int64_t k, int64_t st,
                   int64_t d) -> int64_t {
    int64_t span = in + pads - d * (k - 1) - 1;
    return span < 0 ? 0 : span / st + 1;
  };
  if (s.sh > 0 && s.sw > 0) {
    s.oh = outDim(s.h, s.padTop + s.padBottom, s.kh, s.sh, s.dh);
    s.ow = outDim(s.w, s.padLeft + s.padRight, s.kw, s.sw, s.dw);
  }
  return s;
}

/// conv, max_pool, avg_pool and their gradients: NCHW floats, a valid
/// window, and every shape what the window makes of the input.
void checkWindowCall(CallCheck &c) {
  Op op = c.step.op;
  const Value &x = *c.in(0);
  c.wantFloat(x, "input");
  c.wantRank(x, "input", 4);
  const Attrs &a = c.step.attrs;
  if (isConv(op)) {
    const Value &w = *c.in(1);
    c.wantRank(w, "weight", 4);
    if (w.dtype != x.dtype)
      c.bad("weight is " + describe(w) + " but input is " + describe(x));
    if (a.group < 1 || x.shape[1] % a.group || w.shape[0] % a.group ||
        w.shape[1] * a.group != x.shape[1])
      c.bad("group " + std::to_string(a.group) + " does not fit input " +
            describe(x) + " and weight " + describe(w));
  } else if (a.kernelH < 1 || a.kernelW < 1) {
    c.bad("kernel sizes must be positive");
  }
  if (a.strideH < 1 || a.strideW < 1 || a.dilationH < 1 || a.dilationW < 1)
    c.bad("strides and dilations must be positive");
  if (a.padTop < 0 || a.padLeft < 0 || a.padBottom < 0 || a.padRight < 0)
    c.bad("pads must be non-negative");
  kernels::WindowShape s = windowOf(c.fn, c.step);
  if (s.oh < 1 || s.ow < 1)
    c.bad("the window does not fit the padded input " + describe(x));
  std::vector<int64_t> result{s.n, s.oc, s.oh, s.ow};
  if (!isGrad(op)) {
    if (op == Op::Conv)
      if (const Value *b = c.in(2))
        c.wantLike(*b, "bias", x.dtype, {s.oc});
    c.wantLike(*c.out(0), "result", x.dtype, result);
    return;
  }
  size_t gi = isConv(op) ? 2 : 1;
  c.wantLike(*c.in(gi), "result_grad", x.dtype, result);
  if (const Value *g = c.out(0))
    c.wantLike(*g, "input_grad", x, "input");
  if (op == Op::ConvGrad) {
    if (const Value *g = c.out(1))
      c.wantLike(*g, "weight_grad", *c.in(1), "weight");
    if (const Value *g = c.out(2))
      c.wantLike(*g, "bias_grad", x.dtype, {s.oc});
  }
}

} // namespace

kernels::WindowShape windowShape(const Function &fn, const Step &step) {
  return windowOf(fn, step);
}

void checkConv(CallCheck &c) { checkWindowCall(c); }
void checkConvGrad(CallCheck &c) { checkWindowCall(c); }
void checkMaxPool(CallCheck &c) { checkWindowCall(c); }
void checkMaxPoolGrad(CallCheck &c) { checkWindowCall(c); }
void checkAvgPool(CallCheck &c) { checkWindowCall(c); }
void checkAvgPoolGrad(CallCheck &c) { checkWindowCall(c); }

/// softmax, log_softmax and their gradients: same-shaped floats, an axis.
static void checkSoftmaxCall(CallCheck &c) {
  const Value &x = *c.in(0);
  c.wantFloat(x, c.inName(0));
  if (x.shape.empty())
    c.bad(c.inName(0) + " is a scalar");
  c.axis(x.shape.size());
  if (c.step.inputs.size() == 2)
    c.wantLike(*c.in(1), c.inName(1), x, c.inName(0));
  c.wantLike(*c.out(0), c.outName(0), x, c.inName(0));
}
void checkSoftmax(CallCheck &c) { checkSoftmaxCall(c); }
void checkSoftmaxGrad(CallCheck &c) { checkSoftmaxCall(c); }
void checkLogSoftmax(CallCheck &c) { checkSoftmaxCall(c); }
void checkLogSoftmaxGrad(CallCheck &c) { checkSoftmaxCall(c); }

/// Where an attention call's operands and gradients are (no shapes).
static AttentionCall attentionOperands(Op op) {
  AttentionCall c;
  if (op == Op::AttentionQkvGrad) {
    c.key = c.value = 0;
    c.resultGrad = 1;
    c.keyMask = 2;
    c.gradOutput[1] = c.gradOutput[2] = 0;
  } else if (op == Op::AttentionGrad) {
    c.keyMask = 4;
  }
  return c;
}

AttentionCall attentionCall(const Function &fn, const Step &step) {
  const Attrs &a = step.attrs;
  AttentionCall c = attentionOperands(step.op);
  const Value &q = fn.values[step.inputs[c.query]],
              &k = fn.values[step.inputs[c.key]],
              &v = fn.values[step.inputs[c.value]];
  if (a.heads == 0) {
    c.batch = q.shape[0], c.heads = q.shape[1], c.tq = q.shape[2];
    c.d = q.shape[3], c.tk = k.shape[2], c.dv = v.shape[3];
    c.layout = kernels::AttentionLayout::headsFirst(c.heads, c.tq, c.tk, c.d,
                                                    c.dv);
    return c;
  }
  // Token rows: [B, T, W], the heads from a column; results and the result
  // gradient [B, T, heads * head_dim].
  c.tokenRows = true;
  c.batch = q.shape[0], c.heads = a.heads, c.tq = q.shape[1];
  c.tk = k.shape[1], c.d = c.dv = a.headDim;
  using S = kernels::AttentionStrides;
  const int64_t packed = c.heads * c.d;
  c.layout.q = S::tokenRows(c.tq, q.shape[2], c.d);
  c.layout.k = S::tokenRows(c.tk, k.shape[2], c.d);
  c.layout.v = S::tokenRows(c.tk, v.shape[2], c.d);
  c.layout.o = c.layout.dq = S::tokenRows(c.tq, packed, c.d);
  c.layout.dk = c.layout.dv = S::tokenRows(c.tk, packed, c.d);
  c.offset[0] = a.queryColumn, c.offset[1] = a.keyColumn;
  c.offset[2] = a.valueColumn;
  if (step.op == Op::AttentionQkvGrad) {
    // The gradients where their operands are: one tensor of q's layout.
    c.layout.dq = c.layout.q, c.layout.dk = c.layout.k,
    c.layout.dv = c.layout.v;
    for (int i = 0; i < 3; ++i)
      c.gradOffset[i] = c.offset[i];
  }
  return c;
}

/// attention and attention_grad over [batch, heads, seq, head_dim], or
/// token rows [batch, seq, width] (attribute heads > 0); attention_qkv_grad
/// in token rows of one tensor whose rows the three columns tile.
static void checkAttentionCall(CallCheck &c) {
  const AttentionCall where = attentionOperands(c.step.op);
  const bool grad = c.step.op != Op::Attention;
  const bool qkvGrad = c.step.op == Op::AttentionQkvGrad;
  const Value &q = *c.in(where.query), &k = *c.in(where.key),
              &v = *c.in(where.value);
  const Value *mask = c.in(where.keyMask);
  const Attrs &at = c.step.attrs;
  if (qkvGrad) {
    // One tensor: its three column ranges must cover every column of the
    // gradient the call writes.
    const int64_t span = at.heads * at.headDim;
    std::vector<int64_t> columns = {at.queryColumn, at.keyColumn,
                                    at.valueColumn};
    std::sort(columns.begin(), columns.end());
    if (at.heads <= 0 || at.headDim <= 0 || q.shape.size() != 3 ||
        q.shape[2] != 3 * span ||
        columns != std::vector<int64_t>{0, span, 2 * span})
      c.bad("qkv " + describe(q) + " is not token rows tiled by " +
            std::to_string(at.heads) + " heads of " +
            std::to_string(at.headDim) + " at query, key and value columns " +
            std::to_string(at.queryColumn) + ", " +
            std::to_string(at.keyColumn) + ", " +
            std::to_string(at.valueColumn));
  }
  const size_t rank = at.heads > 0 ? 3 : 4;
  c.wantFloat(q, "query");
  for (auto [t, name] : {std::pair{&q, "query"}, {&k, "key"}, {&v, "value"}}) {
    c.wantRank(*t, name, rank);
    if (t->dtype != q.dtype)
      c.bad(std::string(name) + " is " + describe(*t) + " but query is " +
            describe(q));
  }
  if (at.heads < 0)
    c.bad("heads is " + std::to_string(at.heads));
  if (at.heads > 0) {
    if (at.headDim <= 0)
      c.bad("head_dim is " + std::to_string(at.headDim) + " in token rows");
    if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] ||
        v.shape[1] != k.shape[1])
      c.bad("query " + describe(q) + ", key " + describe(k) + " and value " +
            describe(v) + " do not agree on [batch, seq, width]");
    const int64_t columns[3] = {at.queryColumn, at.keyColumn, at.valueColumn};
    const char *names[3] = {"query", "key", "value"};
    const Value *ts[3] = {&q, &k, &v};
    for (int i = 0; i < 3; ++i)
      if (columns[i] < 0 || columns[i] + at.heads * at.headDim > ts[i]->shape[2])
        c.bad(std::string(names[i]) + " " + describe(*ts[i]) + " has no " +
              std::to_string(at.heads) + " heads of " +
              std::to_string(at.headDim) + " from column " +
              std::to_string(columns[i]));
  }
  const AttentionCall a = attentionCall(c.fn, c.step);
  const int64_t b = a.batch, h = a.heads, tq = a.tq, tk = a.tk, d = a.d,
                dv = a.dv;
  if (!a.tokenRows &&
      (k.shape != std::vector<int64_t>{b, h, tk, d} || v.shape[0] != b ||
       v.shape[1] != h || v.shape[2] != tk))
    c.bad("query " + describe(q) + ", key " + describe(k) + " and value " +
          describe(v) + " do not agree on [batch, heads, seq, head_dim]");
  // i32 [b + 1]: the cu_seqlens of packed tokens (tcc.pack_index); i32
  // [b * tq + 1]: packed documents (tcc.segment_index).
  bool packed = mask && mask->dtype == DType::I32;
  if (packed && ((mask->shape != std::vector<int64_t>{b + 1} &&
                  mask->shape != std::vector<int64_t>{b * tq + 1}) ||
                 tq != tk))
    c.bad("key_mask is " + describe(*mask) + ", expected the cu_seqlens i32 " +
          shapeString({b + 1}) + " (or " + shapeString({b * tq + 1}) +
          ") of packed queries and keys of one length");
  if (mask && !packed &&
      (mask->shape != std::vector<int64_t>{b, tk} ||
       (mask->dtype != DType::Bool && mask->dtype != q.dtype)))
    c.bad("key_mask is " + describe(*mask) + ", expected bool or " +
          data::dtypeName(q.dtype) + " " + shapeString({b, tk}) +
          " (or i32 " + shapeString({b + 1}) + " cu_seqlens)");
  auto shape = [&](int64_t seq, int64_t dim) {
    return a.tokenRows ? std::vector<int64_t>{b, seq, h * dim}
                       : std::vector<int64_t>{b, h, seq, dim};
  };
  if (!grad) {
    c.wantLike(*c.out(0), "result", q.dtype, shape(tq, dv));
    return;
  }
  c.wantLike(*c.in(where.resultGrad), "result_grad", q.dtype, shape(tq, dv));
  if (qkvGrad) {
    c.wantLike(*c.out(0), "qkv_grad", q, "qkv");
    return;
  }
  c.wantLike(*c.out(0), "query_grad", q.dtype, shape(tq, d));
  c.wantLike(*c.out(1), "key_grad", q.dtype, shape(tk, d));
  c.wantLike(*c.out(2), "value_grad", q.dtype, shape(tk, dv));
}
void checkAttention(CallCheck &c) { checkAttentionCall(c); }
void checkAttentionGrad(CallCheck &c) { checkAttentionCall(c); }
void checkAttentionQkvGrad(CallCheck &c) { checkAttentionCall(c); }

/// cross_entropy and its gradient: [..., classes] logits, integer labels.
static void checkCrossEntropyCall(CallCheck &c, bool grad) {
  const Value &logits = *c.in(0), &labels = *c.in(1);
  c.wantFloat(logits, "logits");
  c.wantInt(labels, "labels");
  if (logits.shape.empty())
    c.bad("logits is a scalar");
  std::vector<int64_t> rows(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != rows)
    c.bad("labels is " + describe(labels) + " but logits is " +
          describe(logits) + " (labels must be " + shapeString(rows) + ")");
  // From bf16/f16 logits the loss (and its gradient seed) is f32, as the
  // dialect infers; a seed of the logits' type is taken too.
  bool half = logits.dtype == DType::BF16 || logits.dtype == DType::F16;
  DType loss = half ? DType::F32 : logits.dtype;
  if (!grad) {
    c.wantScalar(*c.out(0), "loss_sum", loss);
    c.wantScalar(*c.out(1), "count", loss);
    return;
  }
  c.wantScalar(*c.in(2), "loss_sum_grad",
               half && c.in(2)->dtype == logits.dtype ? logits.dtype : loss);
  c.wantLike(*c.out(0), "logits_grad", logits, "logits");
}
void checkCrossEntropy(CallCheck &c) { checkCrossEntropyCall(c, false); }
void checkCrossEntropyGrad(CallCheck &c) { checkCrossEntropyCall(c, true); }

/// pack_index: a [B, T] key mask -> i32 rows [B*T] and cu_seqlens [B+1].
void checkPackIndex(CallCheck &c) {
  const Value &mask = *c.in(0);
  c.wantRank(mask, "key_mask", 2);
  if (mask.dtype != DType::Bool && !isFloat(mask.dtype))
    c.bad("key_mask is " + describe(mask) + ", expected bool or float");
  c.wantLike(*c.out(0), "rows", DType::I32, {mask.elements});
  c.wantLike(*c.out(1), "cu_seqlens", DType::I32, {mask.shape[0] + 1});
}

/// segment_index: integer position_ids [B, T] -> i32 cu_seqlens [B*T+1].
void checkSegmentIndex(CallCheck &c) {
  const Value &pos = *c.in(0);
  c.wantRank(pos, "position_ids", 2);
  c.wantInt(pos, "position_ids");
  c.wantLike(*c.out(0), "cu_seqlens", DType::I32, {pos.elements + 1});
}

/// pack and unpack: a value whose leading dims hold the rows of `rows`.
static void checkPackCall(CallCheck &c) {
  const Value &in = *c.in(0), &rows = *c.in(1);
  if (rows.dtype != DType::I32 || rows.shape.size() != 1)
    c.bad("rows is " + describe(rows) + ", expected i32 [rows]");
  int64_t product = 1;
  size_t lead = 0;
  while (product < rows.elements && lead < in.shape.size())
    product *= in.shape[lead++];
  if (product != rows.elements)
    c.bad("no leading dims of input " + describe(in) + " hold " +
          std::to_string(rows.elements) + " rows");
  c.wantLike(*c.out(0), "result", in, "input");
}
void checkPack(CallCheck &c) {
  checkPackCall(c);
  const Attrs &a = c.step.attrs;
  if (a.checkFill && !isInt(c.in(0)->dtype) &&
      !(isFloat(c.in(0)->dtype) && a.fill == 0))
    c.bad("check_fill checks integer labels or a float fill of 0, not " +
          describe(*c.in(0)) + " against " + std::to_string(a.fill));
}
void checkUnpack(CallCheck &c) {
  checkPackCall(c);
  const Attrs &a = c.step.attrs;
  const Value &in = *c.in(0), &rows = *c.in(1);
  if (a.readEnd > a.readBegin &&
      (a.readBegin < 0 || a.seq <= 0 || a.readEnd > a.seq ||
       rows.elements % a.seq != 0 || in.shape.size() < 2 ||
       in.shape[1] != a.seq))
    c.bad("read positions [" + std::to_string(a.readBegin) + ", " +
          std::to_string(a.readEnd) + ") do not lie in sequences of " +
          std::to_string(a.seq) + " of input " + describe(in));
}

void checkEmbedding(CallCheck &c) {
  const Value &table = *c.in(0), &ids = *c.in(1);
  c.wantFloat(table, "table");
  c.wantRank(table, "table", 2);
  c.wantInt(ids, "ids");
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(table.shape[1]);
  c.wantLike(*c.out(0), "result", table.dtype, shape);
}

void checkGatherGrad(CallCheck &c) {
  const Value &indices = *c.in(0), &g = *c.in(1), &o = *c.out(0);
  c.wantInt(indices, "indices");
  c.wantFloat(g, "result_grad");
  if (o.shape.empty())
    c.bad("data_grad is a scalar");
  int64_t axis = c.axis(o.shape.size());
  std::vector<int64_t> shape(o.shape.begin(), o.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), o.shape.begin() + axis + 1, o.shape.end());
  if (o.dtype != g.dtype)
    c.bad("data_grad is " + describe(o) + " but result_grad is " + describe(g));
  if (g.shape != shape)
    c.bad("result_grad is " + describe(g) + ", expected " + shapeString(shape) +
          " for indices " + describe(indices) + " into " + describe(o));
}

void checkDropout(CallCheck &c) {
  double ratio = c.step.attrs.ratio;
  if (!(ratio >= 0 && ratio < 1))
    c.bad("ratio " + std::to_string(ratio) + " is not in [0, 1)");
  const Value &x = *c.in(0);
  c.wantFloat(x, "input");
  if (const Value *offset = c.in(1))
    c.wantScalar(*offset, "offset", DType::I64);
  c.wantLike(*c.out(0), "result", x, "input");
  if (const Value *mask = c.out(1))
    c.wantLike(*mask, "mask", DType::Bool, x.shape);
}

/// An optimizer update's optional working copy: operand `wi` (working) and
/// result `wo` (new_working), both present or both absent; bf16 or f16 of
/// the param's shape, the param f32. Where the plan names the persistent
/// slots, they are those of the updated parameter.
static void checkWorking(CallCheck &c, size_t wi, size_t wo) {
  const Value *w = c.in(wi), *nw = c.out(wo);
  if ((w != nullptr) != (nw != nullptr))
    c.bad(std::string(w ? "working is present but new_working is absent"
                        : "new_working is present but working is absent") +
          " (both or neither)");
  if (!w)
    return;
  const Value &p = *c.in(0);
  if (p.dtype != DType::F32)
    c.bad("param is " + describe(p) +
          ": only an f32 parameter has a working copy");
  if (w->dtype != DType::BF16 && w->dtype != DType::F16)
    c.bad("working is " + describe(*w) + ", not bf16 or f16");
  c.wantLike(*w, "working", w->dtype, p.shape);
  c.wantLike(*nw, "new_working", w->dtype, p.shape);
  for (const Value *v : {w, nw})
    if (v->storage == Storage::Working && p.storage == Storage::Param &&
        v->index != p.index)
      c.bad(std::string(v == w ? "working" : "new_working") +
            " is the working copy of param " + std::to_string(v->index) +
            ", but param is param " + std::to_string(p.index));
}

/// An update's gradient: the parameter's shape, or (a block update) the
/// gradient of its elements [element_offset, element_offset + n).
static void checkGradBlock(CallCheck &c) {
  const Value &p = *c.in(0), &g = *c.in(1);
  int64_t offset = c.step.attrs.elementOffset;
  if (offset == 0 && g.elements == p.elements) {
    c.wantLike(g, "grad", p, "param");
    return;
  }
  if (g.dtype != p.dtype)
    c.bad("grad is " + describe(g) + ", param " + describe(p) +
          ": a block's gradient has the parameter's dtype");
  if (offset < 0 || g.elements <= 0 || offset + g.elements > p.elements)
    c.bad("the block [" + std::to_string(offset) + ", " +
          std::to_string(offset + g.elements) +
          ") of grad's elements (element_offset " + std::to_string(offset) +
          ") is not inside param's " + std::to_string(p.elements));
}

void checkSgdUpdate(CallCheck &c) {
  const Attrs &at = c.step.attrs;
  const Value &p = *c.in(0);
  c.wantFloat(p, "param");
  checkGradBlock(c);
  c.wantScalar(*c.in(2), "lr", DType::F64);
  const Value *buf = c.in(3);
  if (buf)
    c.wantLike(*buf, "momentum_buffer", p, "param");
  if ((buf != nullptr) != (at.momentum != 0))
    c.bad(std::string("momentum_buffer must be present exactly when momentum "
                      "!= 0 (momentum ") +
          std::to_string(at.momentum) + ")");
  c.wantLike(*c.out(0), "new_param", p, "param");
  if ((c.out(1) != nullptr) != (buf != nullptr))
    c.bad("new_momentum_buffer must be present exactly when momentum_buffer "
          "is");
  if (c.out(1))
    c.wantLike(*c.out(1), "new_momentum_buffer", p, "param");
  if (const Value *skip = c.in(4))
    c.wantScalar(*skip, "skip", DType::Bool);
  checkWorking(c, 5, 2);
}

void checkAdamwUpdate(CallCheck &c) {
  const Value &p = *c.in(0);
  c.wantFloat(p, "param");
  checkGradBlock(c);
  c.wantLike(*c.in(2), "exp_avg", p, "param");
  c.wantLike(*c.in(3), "exp_avg_sq", p, "param");
  c.wantScalar(*c.in(4), "lr", DType::F64);
  c.wantScalar(*c.in(5), "step", DType::I64);
  c.wantLike(*c.out(0), "new_param", p, "param");
  c.wantLike(*c.out(1), "new_exp_avg", p, "param");
  c.wantLike(*c.out(2), "new_exp_avg_sq", p, "param");
  if (const Value *skip = c.in(6))
    c.wantScalar(*skip, "skip", DType::Bool);
  checkWorking(c, 7, 3);
}

//===----------------------------------------------------------------------===//
// Matmul batch broadcasting, shared by the backends
//===----------------------------------------------------------------------===//

int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= shape[i];
  return p;
}

std::vector<int64_t> batchMap(const std::vector<int64_t> &operand,
                              const std::vector<int64_t> &out) {
  size_t rank = out.size(), orank = operand.size();
  int64_t count = product(out, 0, rank);
  std::vector<int64_t> map(count);
  std::vector<int64_t> coord(rank, 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t idx = 0;
    for (size_t d = 0; d < orank; ++d) {
      int64_t c = coord[rank - orank + d];
      idx = idx * operand[d] + (operand[d] == 1 ? 0 : c);
    }
    map[b] = idx;
    for (size_t d = rank; d-- > 0;) {
      if (++coord[d] < out[d])
        break;
      coord[d] = 0;
    }
  }
  return map;
}

int64_t uniformStride(const std::vector<int64_t> &map) {
  bool zero = true, identity = true;
  for (size_t b = 0; b < map.size(); ++b) {
    zero &= map[b] == 0;
    identity &= map[b] == int64_t(b);
  }
  return zero ? 0 : identity ? 1 : -1;
}

} // namespace tcc::rt
