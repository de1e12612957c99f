//===- ops.cpp - the library calls of a plan ------------------------------===//

#include "exec/ops.h"

#include <cstdint>

namespace tcc::rt {

using data::DType;
using nlohmann::json;

namespace {

struct OpInfo {
  Op op;
  const char *name;
  std::vector<std::string> inputs, outputs;
};

const std::vector<OpInfo> &opTable() {
  static const std::vector<OpInfo> table = {
      {Op::Matmul, "matmul", {"lhs", "rhs"}, {"result"}},
      {Op::Gemm, "gemm", {"a", "b", "c?"}, {"result"}},
      {Op::LayerNorm, "layer_norm", {"input", "scale?", "bias?"}, {"result"}},
      {Op::LayerNormGrad,
       "layer_norm_grad",
       {"input", "scale?", "result_grad"},
       {"input_grad", "scale_grad?", "bias_grad?"}},
      {Op::Softmax, "softmax", {"input"}, {"result"}},
      {Op::SoftmaxGrad, "softmax_grad", {"result", "result_grad"}, {"input_grad"}},
      {Op::LogSoftmax, "log_softmax", {"input"}, {"result"}},
      {Op::LogSoftmaxGrad,
       "log_softmax_grad",
       {"result", "result_grad"},
       {"input_grad"}},
      {Op::Attention,
       "attention",
       {"query", "key", "value", "key_mask?"},
       {"result"}},
      {Op::AttentionGrad,
       "attention_grad",
       {"query", "key", "value", "result_grad", "key_mask?"},
       {"query_grad", "key_grad", "value_grad"}},
      {Op::CrossEntropy,
       "cross_entropy",
       {"logits", "labels"},
       {"loss_sum", "count"}},
      {Op::CrossEntropyGrad,
       "cross_entropy_grad",
       {"logits", "labels", "loss_sum_grad"},
       {"logits_grad"}},
      {Op::Embedding, "embedding", {"table", "ids"}, {"result"}},
      {Op::GatherGrad, "gather_grad", {"indices", "result_grad"}, {"data_grad"}},
      {Op::Dropout, "dropout", {"input", "offset?"}, {"result", "mask?"}},
      {Op::SgdUpdate,
       "sgd_update",
       {"param", "grad", "lr", "momentum_buffer?", "skip?", "working?"},
       {"new_param", "new_momentum_buffer?", "new_working?"}},
      {Op::AdamwUpdate,
       "adamw_update",
       {"param", "grad", "exp_avg", "exp_avg_sq", "lr", "step", "skip?",
        "working?"},
       {"new_param", "new_exp_avg", "new_exp_avg_sq", "new_working?"}},
  };
  return table;
}

const OpInfo &info(Op op) { return opTable()[static_cast<size_t>(op)]; }

bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::BF16 ||
         t == DType::F16;
}
bool isInt(DType t) { return t == DType::I32 || t == DType::I64; }

std::string describe(const Value &v) {
  return std::string(data::dtypeName(v.dtype)) + " " + shapeString(v.shape);
}

/// Checks one call; `bad` never returns.
class CallChecker {
public:
  CallChecker(Step &step, const json &attrs, const Function &fn,
              const std::function<void(const std::string &)> &bad)
      : step(step), attrs(attrs), fn(fn), badFn(bad), op(info(step.op)) {}

  void run();

private:
  Step &step;
  const json &attrs;
  const Function &fn;
  const std::function<void(const std::string &)> &badFn;
  const OpInfo &op;

  [[noreturn]] void bad(const std::string &msg) {
    badFn(msg);
    throw Error(TCC_ERROR_FORMAT, msg); // not reached: badFn throws
  }

  // Operands and results by position; null when absent.
  const Value *in(size_t i) const {
    return step.inputs[i] < 0 ? nullptr : &fn.values[step.inputs[i]];
  }
  const Value *out(size_t i) const {
    return step.outputs[i] < 0 ? nullptr : &fn.values[step.outputs[i]];
  }
  std::string inName(size_t i) const {
    std::string n = op.inputs[i];
    return n.back() == '?' ? n.substr(0, n.size() - 1) : n;
  }
  std::string outName(size_t i) const {
    std::string n = op.outputs[i];
    return n.back() == '?' ? n.substr(0, n.size() - 1) : n;
  }

  // Attributes.
  const json *attr(const char *name) const {
    auto it = attrs.find(name);
    return it == attrs.end() ? nullptr : &*it;
  }
  bool boolAttr(const char *name, bool def) {
    const json *a = attr(name);
    if (!a)
      return def;
    if (!a->is_boolean())
      bad(std::string("attribute '") + name + "' is not a bool");
    return a->get<bool>();
  }
  int64_t intAttr(const char *name, const int64_t *def) {
    const json *a = attr(name);
    if (!a) {
      if (!def)
        bad(std::string("missing attribute '") + name + "'");
      return *def;
    }
    if (!a->is_number_integer() ||
        (a->is_number_unsigned() && a->get<uint64_t>() > uint64_t(INT64_MAX)))
      bad(std::string("attribute '") + name + "' is not an integer");
    return a->get<int64_t>();
  }
  double floatAttr(const char *name, const double *def) {
    const json *a = attr(name);
    if (!a) {
      if (!def)
        bad(std::string("missing attribute '") + name + "'");
      return *def;
    }
    if (!a->is_number())
      bad(std::string("attribute '") + name + "' is not a number");
    return a->get<double>();
  }
  int64_t axisAttr(size_t rank) {
    int64_t axis = intAttr("axis", nullptr);
    int64_t r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r)
      bad("axis " + std::to_string(axis) + " is out of range for rank " +
          std::to_string(rank));
    return axis < 0 ? axis + r : axis;
  }

  // Operand rules.
  const Value &need(const Value *v, const std::string &name) {
    if (!v)
      bad(name + " is absent");
    return *v;
  }
  void wantFloat(const Value &v, const std::string &name) {
    if (!isFloat(v.dtype))
      bad(name + " is " + describe(v) + ", not a float tensor");
  }
  void wantInt(const Value &v, const std::string &name) {
    if (!isInt(v.dtype))
      bad(name + " is " + describe(v) + ", not an i32 or i64 tensor");
  }
  void wantScalar(const Value &v, const std::string &name, DType dtype) {
    if (v.dtype != dtype || v.elements != 1)
      bad(name + " is " + describe(v) + ", not a " + data::dtypeName(dtype) +
          " scalar");
  }
  void wantRank(const Value &v, const std::string &name, size_t rank) {
    if (v.shape.size() != rank)
      bad(name + " is " + describe(v) + ", not of rank " +
          std::to_string(rank));
  }
  void wantLike(const Value &v, const std::string &name, DType dtype,
                const std::vector<int64_t> &shape) {
    if (v.dtype != dtype || v.shape != shape)
      bad(name + " is " + describe(v) + ", expected " + data::dtypeName(dtype) +
          " " + shapeString(shape));
  }
  void wantLike(const Value &v, const std::string &name, const Value &model,
                const std::string &modelName) {
    if (v.dtype != model.dtype || v.shape != model.shape)
      bad(name + " is " + describe(v) + " but " + modelName + " is " +
          describe(model));
  }

  void arity();
  void matmul();
  void gemm();
  void layerNorm(bool grad);
  void softmax();
  void attention(bool grad);
  void crossEntropy(bool grad);
  void embedding();
  void gatherGrad();
  void dropout();
  void sgd();
  void adamw();
  void working(size_t in, size_t out);
};

void CallChecker::arity() {
  // Trailing optional inputs and results may be left out (a plan written
  // before an op gained an optional operand stays valid).
  size_t requiredIn = op.inputs.size();
  while (requiredIn > 0 && op.inputs[requiredIn - 1].back() == '?')
    --requiredIn;
  if (step.inputs.size() < requiredIn || step.inputs.size() > op.inputs.size())
    bad(std::to_string(step.inputs.size()) + " inputs, expected " +
        std::to_string(op.inputs.size()) + " (absent optional ones as -1)");
  step.inputs.resize(op.inputs.size(), -1);
  size_t required = op.outputs.size();
  while (required > 0 && op.outputs[required - 1].back() == '?')
    --required;
  if (step.outputs.size() < required || step.outputs.size() > op.outputs.size())
    bad(std::to_string(step.outputs.size()) + " outputs, expected " +
        std::to_string(op.outputs.size()));
  step.outputs.resize(op.outputs.size(), -1);
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (step.inputs[i] < 0 && op.inputs[i].back() != '?')
      bad("input " + std::to_string(i) + " (" + inName(i) +
          ") is not optional but is -1");
  for (size_t i = 0; i < op.outputs.size(); ++i)
    if (step.outputs[i] < 0 && op.outputs[i].back() != '?')
      bad("output " + std::to_string(i) + " (" + outName(i) +
          ") is not optional but is -1");
}

/// The numpy broadcast of two batch shapes; false when they do not match.
static bool broadcastShapes(const std::vector<int64_t> &a,
                            const std::vector<int64_t> &b,
                            std::vector<int64_t> &out) {
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

void CallChecker::matmul() {
  Attrs &a = step.attrs;
  a.transposeA = boolAttr("transpose_lhs", false);
  a.transposeB = boolAttr("transpose_rhs", false);
  const Value &l = *in(0), &r = *in(1), &o = *out(0);
  wantFloat(l, "lhs");
  wantFloat(r, "rhs");
  if (l.shape.size() < 2 || r.shape.size() < 2)
    bad("operands " + describe(l) + " and " + describe(r) +
        " must have rank >= 2");
  if (l.dtype != r.dtype)
    bad("lhs is " + describe(l) + " but rhs is " + describe(r));
  size_t lr = l.shape.size(), rr = r.shape.size();
  int64_t m = l.shape[a.transposeA ? lr - 1 : lr - 2];
  int64_t k = l.shape[a.transposeA ? lr - 2 : lr - 1];
  int64_t k2 = r.shape[a.transposeB ? rr - 1 : rr - 2];
  int64_t n = r.shape[a.transposeB ? rr - 2 : rr - 1];
  if (k != k2)
    bad("lhs " + describe(l) + " and rhs " + describe(r) +
        " contract dims of " + std::to_string(k) + " and " +
        std::to_string(k2));
  std::vector<int64_t> batch;
  if (!broadcastShapes({l.shape.begin(), l.shape.end() - 2},
                       {r.shape.begin(), r.shape.end() - 2}, batch))
    bad("batch dims of " + describe(l) + " and " + describe(r) +
        " do not broadcast");
  batch.push_back(m);
  batch.push_back(n);
  wantLike(o, "result", l.dtype, batch);
}

void CallChecker::gemm() {
  Attrs &at = step.attrs;
  double one = 1.0;
  at.alpha = floatAttr("alpha", &one);
  at.beta = floatAttr("beta", &one);
  at.transposeA = boolAttr("transpose_a", false);
  at.transposeB = boolAttr("transpose_b", false);
  const Value &a = *in(0), &b = *in(1), &o = *out(0);
  const Value *c = in(2);
  wantFloat(a, "a");
  wantRank(a, "a", 2);
  wantRank(b, "b", 2);
  if (a.dtype != b.dtype)
    bad("a is " + describe(a) + " but b is " + describe(b));
  int64_t m = a.shape[at.transposeA ? 1 : 0], k = a.shape[at.transposeA ? 0 : 1];
  int64_t k2 = b.shape[at.transposeB ? 1 : 0], n = b.shape[at.transposeB ? 0 : 1];
  if (k != k2)
    bad("a " + describe(a) + " and b " + describe(b) + " contract dims of " +
        std::to_string(k) + " and " + std::to_string(k2));
  std::vector<int64_t> mn = {m, n}, bc;
  if (c) {
    if (c->dtype != a.dtype || c->shape.size() > 2 ||
        !broadcastShapes(c->shape, mn, bc) || bc != mn)
      bad("c is " + describe(*c) + ", which does not broadcast to " +
          data::dtypeName(a.dtype) + " " + shapeString(mn));
  }
  wantLike(o, "result", a.dtype, mn);
}

void CallChecker::layerNorm(bool grad) {
  const Value &x = *in(0);
  wantFloat(x, "input");
  step.attrs.axis = axisAttr(x.shape.size());
  step.attrs.epsilon = floatAttr("epsilon", nullptr);
  std::vector<int64_t> trailing(x.shape.begin() + step.attrs.axis,
                                x.shape.end());
  if (const Value *s = in(1))
    wantLike(*s, "scale", x.dtype, trailing);
  if (!grad) {
    if (const Value *b = in(2))
      wantLike(*b, "bias", x.dtype, trailing);
    wantLike(*out(0), "result", x, "input");
    return;
  }
  wantLike(*in(2), "result_grad", x, "input");
  wantLike(*out(0), "input_grad", x, "input");
  if (const Value *g = out(1))
    wantLike(*g, "scale_grad", x.dtype, trailing);
  if (const Value *g = out(2))
    wantLike(*g, "bias_grad", x.dtype, trailing);
}

void CallChecker::softmax() {
  const Value &x = *in(0);
  wantFloat(x, inName(0));
  if (x.shape.empty())
    bad(inName(0) + " is a scalar");
  step.attrs.axis = axisAttr(x.shape.size());
  if (op.inputs.size() == 2)
    wantLike(*in(1), "result_grad", x, inName(0));
  wantLike(*out(0), outName(0), x, inName(0));
}

void CallChecker::attention(bool grad) {
  Attrs &at = step.attrs;
  at.scale = floatAttr("scale", nullptr);
  at.causal = boolAttr("causal", false);
  const Value &q = *in(0), &k = *in(1), &v = *in(2);
  const Value *mask = in(grad ? 4 : 3);
  wantFloat(q, "query");
  for (auto [t, name] : {std::pair{&q, "query"}, {&k, "key"}, {&v, "value"}}) {
    wantRank(*t, name, 4);
    if (t->dtype != q.dtype)
      bad(std::string(name) + " is " + describe(*t) + " but query is " +
          describe(q));
  }
  int64_t b = q.shape[0], h = q.shape[1], tq = q.shape[2], d = q.shape[3];
  int64_t tk = k.shape[2], dv = v.shape[3];
  if (k.shape != std::vector<int64_t>{b, h, tk, d} || v.shape[0] != b ||
      v.shape[1] != h || v.shape[2] != tk)
    bad("query " + describe(q) + ", key " + describe(k) + " and value " +
        describe(v) + " do not agree on [batch, heads, seq, head_dim]");
  if (mask) {
    if (mask->shape != std::vector<int64_t>{b, tk} ||
        (mask->dtype != DType::Bool && mask->dtype != q.dtype))
      bad("key_mask is " + describe(*mask) + ", expected bool or " +
          data::dtypeName(q.dtype) + " " + shapeString({b, tk}));
  }
  std::vector<int64_t> outShape = {b, h, tq, dv};
  if (!grad) {
    wantLike(*out(0), "result", q.dtype, outShape);
    return;
  }
  wantLike(*in(3), "result_grad", q.dtype, outShape);
  wantLike(*out(0), "query_grad", q, "query");
  wantLike(*out(1), "key_grad", k, "key");
  wantLike(*out(2), "value_grad", v, "value");
}

void CallChecker::crossEntropy(bool grad) {
  int64_t def = -100;
  step.attrs.ignoreIndex = intAttr("ignore_index", &def);
  const Value &logits = *in(0), &labels = *in(1);
  wantFloat(logits, "logits");
  wantInt(labels, "labels");
  if (logits.shape.empty())
    bad("logits is a scalar");
  std::vector<int64_t> rows(logits.shape.begin(), logits.shape.end() - 1);
  if (labels.shape != rows)
    bad("labels is " + describe(labels) + " but logits is " +
        describe(logits) + " (labels must be " + shapeString(rows) + ")");
  // From bf16/f16 logits the loss (and its gradient seed) is f32, as the
  // dialect infers; a seed of the logits' type is taken too.
  bool half = logits.dtype == DType::BF16 || logits.dtype == DType::F16;
  DType loss = half ? DType::F32 : logits.dtype;
  if (!grad) {
    wantScalar(*out(0), "loss_sum", loss);
    wantScalar(*out(1), "count", loss);
    return;
  }
  if (!(half && in(2)->dtype == logits.dtype))
    wantScalar(*in(2), "loss_sum_grad", loss);
  else
    wantScalar(*in(2), "loss_sum_grad", logits.dtype);
  wantLike(*out(0), "logits_grad", logits, "logits");
}

void CallChecker::embedding() {
  const Value &table = *in(0), &ids = *in(1);
  wantFloat(table, "table");
  wantRank(table, "table", 2);
  wantInt(ids, "ids");
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(table.shape[1]);
  wantLike(*out(0), "result", table.dtype, shape);
}

void CallChecker::gatherGrad() {
  const Value &indices = *in(0), &g = *in(1), &o = *out(0);
  wantInt(indices, "indices");
  wantFloat(g, "result_grad");
  if (o.shape.empty())
    bad("data_grad is a scalar");
  step.attrs.axis = axisAttr(o.shape.size());
  int64_t axis = step.attrs.axis;
  std::vector<int64_t> shape(o.shape.begin(), o.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), o.shape.begin() + axis + 1, o.shape.end());
  if (o.dtype != g.dtype)
    bad("data_grad is " + describe(o) + " but result_grad is " + describe(g));
  if (g.shape != shape)
    bad("result_grad is " + describe(g) + ", expected " + shapeString(shape) +
        " for indices " + describe(indices) + " into " + describe(o));
}

void CallChecker::dropout() {
  Attrs &at = step.attrs;
  at.ratio = floatAttr("ratio", nullptr);
  at.seed = intAttr("seed", nullptr);
  if (!(at.ratio >= 0 && at.ratio < 1))
    bad("ratio " + std::to_string(at.ratio) + " is not in [0, 1)");
  const Value &x = *in(0);
  wantFloat(x, "input");
  if (const Value *offset = in(1))
    wantScalar(*offset, "offset", DType::I64);
  wantLike(*out(0), "result", x, "input");
  if (const Value *mask = out(1))
    wantLike(*mask, "mask", DType::Bool, x.shape);
}

void CallChecker::sgd() {
  Attrs &at = step.attrs;
  double zero = 0;
  at.momentum = floatAttr("momentum", &zero);
  at.weightDecay = floatAttr("weight_decay", &zero);
  at.nesterov = boolAttr("nesterov", false);
  const Value &p = *in(0);
  wantFloat(p, "param");
  wantLike(*in(1), "grad", p, "param");
  wantScalar(*in(2), "lr", DType::F64);
  const Value *buf = in(3);
  if (buf)
    wantLike(*buf, "momentum_buffer", p, "param");
  if ((buf != nullptr) != (at.momentum != 0))
    bad(std::string("momentum_buffer must be present exactly when momentum "
                    "!= 0 (momentum ") +
        std::to_string(at.momentum) + ")");
  wantLike(*out(0), "new_param", p, "param");
  if ((out(1) != nullptr) != (buf != nullptr))
    bad("new_momentum_buffer must be present exactly when momentum_buffer is");
  if (out(1))
    wantLike(*out(1), "new_momentum_buffer", p, "param");
  if (const Value *skip = in(4))
    wantScalar(*skip, "skip", DType::Bool);
  working(5, 2);
}

/// An optimizer update's optional working copy: operand `wi` (working) and
/// result `wo` (new_working), both present or both absent; bf16 or f16 of
/// the param's shape, the param f32. Where the plan names the persistent
/// slots, they are those of the updated parameter.
void CallChecker::working(size_t wi, size_t wo) {
  const Value *w = in(wi), *nw = out(wo);
  if ((w != nullptr) != (nw != nullptr))
    bad(std::string(w ? "working is present but new_working is absent"
                      : "new_working is present but working is absent") +
        " (both or neither)");
  if (!w)
    return;
  const Value &p = *in(0);
  if (p.dtype != DType::F32)
    bad("param is " + describe(p) +
        ": only an f32 parameter has a working copy");
  if (w->dtype != DType::BF16 && w->dtype != DType::F16)
    bad("working is " + describe(*w) + ", not bf16 or f16");
  wantLike(*w, "working", w->dtype, p.shape);
  wantLike(*nw, "new_working", w->dtype, p.shape);
  for (const Value *v : {w, nw})
    if (v->storage == Storage::Working && p.storage == Storage::Param &&
        v->index != p.index)
      bad(std::string(v == w ? "working" : "new_working") +
          " is the working copy of param " + std::to_string(v->index) +
          ", but param is param " + std::to_string(p.index));
}

void CallChecker::adamw() {
  Attrs &at = step.attrs;
  double b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
  at.beta1 = floatAttr("beta1", &b1);
  at.beta2 = floatAttr("beta2", &b2);
  at.eps = floatAttr("eps", &eps);
  at.weightDecay = floatAttr("weight_decay", &wd);
  const Value &p = *in(0);
  wantFloat(p, "param");
  wantLike(*in(1), "grad", p, "param");
  wantLike(*in(2), "exp_avg", p, "param");
  wantLike(*in(3), "exp_avg_sq", p, "param");
  wantScalar(*in(4), "lr", DType::F64);
  wantScalar(*in(5), "step", DType::I64);
  wantLike(*out(0), "new_param", p, "param");
  wantLike(*out(1), "new_exp_avg", p, "param");
  wantLike(*out(2), "new_exp_avg_sq", p, "param");
  if (const Value *skip = in(6))
    wantScalar(*skip, "skip", DType::Bool);
  working(7, 3);
}

void CallChecker::run() {
  if (!attrs.is_object())
    bad("'attrs' is not an object");
  arity();
  switch (step.op) {
  case Op::Matmul:
    return matmul();
  case Op::Gemm:
    return gemm();
  case Op::LayerNorm:
    return layerNorm(false);
  case Op::LayerNormGrad:
    return layerNorm(true);
  case Op::Softmax:
  case Op::SoftmaxGrad:
  case Op::LogSoftmax:
  case Op::LogSoftmaxGrad:
    return softmax();
  case Op::Attention:
    return attention(false);
  case Op::AttentionGrad:
    return attention(true);
  case Op::CrossEntropy:
    return crossEntropy(false);
  case Op::CrossEntropyGrad:
    return crossEntropy(true);
  case Op::Embedding:
    return embedding();
  case Op::GatherGrad:
    return gatherGrad();
  case Op::Dropout:
    return dropout();
  case Op::SgdUpdate:
    return sgd();
  case Op::AdamwUpdate:
    return adamw();
  }
}

} // namespace

const char *opName(Op op) { return info(op).name; }

bool parseOp(const std::string &name, Op &op) {
  for (const OpInfo &i : opTable())
    if (name == i.name) {
      op = i.op;
      return true;
    }
  return false;
}

std::string libraryOpNames() {
  std::string s;
  for (const OpInfo &i : opTable())
    s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}

const std::vector<std::string> &opInputs(Op op) { return info(op).inputs; }
const std::vector<std::string> &opOutputs(Op op) { return info(op).outputs; }

void checkCall(Step &step, const json &attrs, const Function &fn,
               const std::function<void(const std::string &)> &bad) {
  CallChecker(step, attrs, fn, bad).run();
}

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
