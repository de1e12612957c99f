//===- Recurrent.cpp - ONNX LSTM, GRU and RNN, unrolled over time ---------===//
//
// nn.LSTM, nn.GRU and nn.RNN export as ONNX LSTM / GRU / RNN nodes (one per
// layer, the weights reordered from PyTorch's parameters by Slice/Concat in the
// graph, so training updates the parameters themselves). tcc has static shapes,
// so a node unrolls over its sequence: the input projections of every step are
// one GEMM ([T*B, I] x W^T plus both biases), then each step multiplies the
// previous hidden state by R^T and applies the gate equations of the ONNX
// spec with tcc's elementwise ops. Autodiff differentiates the unrolled
// steps like any other ops (backpropagation through time).
//
// Supported: layout 0 and 1, directions forward / reverse / bidirectional,
// initial_h / initial_c, LSTM peepholes, GRU's linear_before_reset either
// way, the default activations. Refused as unsupported: other activations,
// `clip`, `input_forget`, a sequence_lens that is not the sequence length
// for every sample (variable lengths); one only known at run time is an
// error, as a shape computed at run time is.
//
//===----------------------------------------------------------------------===//

#include "ConstFold.h"
#include "Importer.h"

#include "tcc/TccOps.h"

using namespace mlir;

namespace tcc::onnx_import {
namespace {

/// Builds the unrolled steps, failing once for any op that fails.
class Rnn {
public:
  enum Kind { Simple, Lstm, Gru };
  Rnn(NodeImporter &n, Kind kind) : n(n), kind(kind), lstm(kind == Lstm) {}

  LogicalResult run();

private:
  NodeImporter &n;
  Kind kind;
  bool lstm;
  bool failedAny = false;
  int64_t T = 0, B = 0, I = 0, H = 0, D = 1;
  int64_t gates() const { return kind == Lstm ? 4 : kind == Gru ? 3 : 1; }

  Value check(FailureOr<Value> v) {
    if (failed(v)) {
      failedAny = true;
      return {};
    }
    return *v;
  }
  template <class Op, class... A> Value op(A &&...args) {
    if (failedAny)
      return {};
    auto r = n.create<Op>(std::forward<A>(args)...);
    if (failed(r)) {
      failedAny = true;
      return {};
    }
    return r->getResult();
  }
  /// v[..., k*H:(k+1)*H] along `axis` (its size a multiple of H).
  Value slice(Value v, int64_t axis, int64_t begin, int64_t end) {
    if (failedAny)
      return {};
    auto type = llvm::cast<RankedTensorType>(v.getType());
    llvm::SmallVector<int64_t> starts(type.getRank(), 0),
        limits(type.getShape()), strides(type.getRank(), 1);
    starts[axis] = begin;
    limits[axis] = end;
    return op<SliceOp>(v, starts, limits, strides);
  }
  Value reshape(Value v, llvm::ArrayRef<int64_t> shape) {
    if (failedAny)
      return {};
    return check(n.reshape(v, shape));
  }
  Value add(Value a, Value b) { return op<AddOp>(a, b); }
  Value mul(Value a, Value b) { return op<MulOp>(a, b); }
  Value sub(Value a, Value b) { return op<SubOp>(a, b); }
  Value sigmoid(Value a) { return op<SigmoidOp>(a); }
  Value tanh(Value a) { return op<TanhOp>(a); }

  LogicalResult checkAttrs();
  /// Direction d over the sequence: each step's hidden state [B, H] in
  /// time order, and the last hidden (and cell) state.
  void direction(int64_t d, Value x2d, llvm::SmallVectorImpl<Value> &ys,
                 Value &lastH, Value &lastC);
};

LogicalResult Rnn::checkAttrs() {
  if (const onnx::AttributeProto *a = n.attr("activations")) {
    llvm::SmallVector<std::string> want =
        kind == Lstm ? llvm::SmallVector<std::string>{"Sigmoid", "Tanh", "Tanh"}
        : kind == Gru ? llvm::SmallVector<std::string>{"Sigmoid", "Tanh"}
                      : llvm::SmallVector<std::string>{"Tanh"};
    for (int i = 0; i < a->strings_size(); ++i)
      if (a->strings(i) != want[size_t(i) % want.size()])
        return n.unsupported("activation '" + a->strings(i) +
                             "' (only the defaults)");
  }
  if (n.attr("clip"))
    return n.unsupported("attribute 'clip'");
  if (lstm && n.intAttr("input_forget", 0) != 0)
    return n.unsupported("input_forget = 1");
  return success();
}

void Rnn::direction(int64_t d, Value x2d, llvm::SmallVectorImpl<Value> &ys,
                    Value &lastH, Value &lastC) {
  int64_t G = gates();
  // This direction's W [G*H, I], R [G*H, H], biases [G*H] each.
  Value w = reshape(slice(n.input(1), 0, d, d + 1), {G * H, I});
  Value r = reshape(slice(n.input(2), 0, d, d + 1), {G * H, H});
  Value wb, rb;
  if (n.hasInput(3)) {
    Value b = reshape(slice(n.input(3), 0, d, d + 1), {2 * G * H});
    wb = slice(b, 0, 0, G * H);
    rb = slice(b, 0, G * H, 2 * G * H);
  }
  // Every step's input projection at once: [T*B, G*H] -> [T, B, G*H].
  Value xw = op<MatmulOp>(x2d, w, false, true);
  if (wb)
    xw = add(xw, wb);
  // Both biases go with the input projection, except GRU's Rbh under
  // linear_before_reset, which is added inside r (.) (H R_h^T + Rbh).
  bool lbr = kind == Gru && n.intAttr("linear_before_reset", 0) != 0;
  Type elem = n.inputElementType(0);
  auto zeros = [&](llvm::ArrayRef<int64_t> shape) {
    return n.constant(splatOf(RankedTensorType::get(shape, elem), 0.0));
  };
  if (rb) {
    Value extra = rb;
    if (lbr)
      extra = op<ConcatOp>(ValueRange{slice(rb, 0, 0, 2 * H), zeros({H})},
                           int64_t(0));
    xw = add(xw, extra);
  }
  xw = reshape(xw, {T, B, G * H});
  auto initial = [&](int idx) -> Value {
    if (n.hasInput(idx))
      return reshape(slice(n.input(idx), 0, d, d + 1), {B, H});
    return zeros({B, H});
  };
  Value h = initial(5);
  Value c = lstm ? initial(6) : Value();
  Value p;
  if (lstm && n.hasInput(7))
    p = reshape(slice(n.input(7), 0, d, d + 1), {3 * H});
  bool reverse = n.attr("direction") &&
                 (n.attr("direction")->s() == "reverse" ||
                  (n.attr("direction")->s() == "bidirectional" && d == 1));
  // GRU without linear_before_reset multiplies r (.) h by R_h, not h: the
  // per-step product by R^T then needs the z and r rows only.
  Value rStep = lbr || kind != Gru ? r : slice(r, 0, 0, 2 * H);
  Value rh = lbr || kind != Gru ? Value() : slice(r, 0, 2 * H, 3 * H);
  ys.assign(size_t(T), Value());
  for (int64_t k = 0; k < T && !failedAny; ++k) {
    int64_t t = reverse ? T - 1 - k : k;
    Value xt = reshape(slice(xw, 0, t, t + 1), {B, G * H});
    Value hr = op<MatmulOp>(h, rStep, false, true); // [B, G*H or 2H]
    auto gate = [&](Value v, int64_t g) {
      return slice(v, 1, g * H, (g + 1) * H);
    };
    if (kind == Simple) {
      h = tanh(add(xt, hr));
    } else if (lstm) {
      // ONNX's gate order: i, o, f, c.
      Value pre = add(xt, hr);
      Value iPre = gate(pre, 0), oPre = gate(pre, 1), fPre = gate(pre, 2);
      if (p) {
        iPre = add(iPre, mul(slice(p, 0, 0, H), c));
        fPre = add(fPre, mul(slice(p, 0, 2 * H, 3 * H), c));
      }
      Value i = sigmoid(iPre), f = sigmoid(fPre);
      Value cand = tanh(gate(pre, 3));
      c = add(mul(f, c), mul(i, cand));
      if (p)
        oPre = add(oPre, mul(slice(p, 0, H, 2 * H), c));
      h = mul(sigmoid(oPre), tanh(c));
    } else {
      // ONNX's gate order: z, r, h.
      Value z = sigmoid(add(gate(xt, 0), gate(hr, 0)));
      Value rg = sigmoid(add(gate(xt, 1), gate(hr, 1)));
      Value hh;
      if (lbr) {
        Value rec = gate(hr, 2);
        if (rb)
          rec = add(rec, slice(rb, 0, 2 * H, 3 * H));
        hh = tanh(add(gate(xt, 2), mul(rg, rec)));
      } else {
        hh = tanh(add(gate(xt, 2), op<MatmulOp>(mul(rg, h), rh, false, true)));
      }
      Value one = n.scalar(elem, 1.0);
      h = add(mul(sub(one, z), hh), mul(z, h));
    }
    ys[size_t(t)] = h;
  }
  lastH = h;
  lastC = c;
}

LogicalResult Rnn::run() {
  if (failed(checkAttrs()))
    return failure();
  for (int i : {0, 1, 2})
    if (!llvm::isa<FloatType>(n.inputElementType(i)))
      return n.unsupported("integer or bool operands are not supported");
  RankedTensorType xt = n.inputType(0), wt = n.inputType(1);
  if (xt.getRank() != 3 || wt.getRank() != 3)
    return n.fail("X and W must have rank 3");
  bool batchFirst = n.intAttr("layout", 0) != 0;
  T = xt.getDimSize(batchFirst ? 1 : 0);
  B = xt.getDimSize(batchFirst ? 0 : 1);
  I = xt.getDimSize(2);
  D = wt.getDimSize(0);
  H = n.intAttr("hidden_size", wt.getDimSize(1) / gates());
  std::string dir = n.attr("direction") ? n.attr("direction")->s() : "forward";
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
    return n.fail("direction '" + dir + "'");
  if (D != (dir == "bidirectional" ? 2 : 1) ||
      wt.getDimSize(1) != gates() * H || wt.getDimSize(2) != I)
    return n.fail("W is not [" +
                  std::to_string(dir == "bidirectional" ? 2 : 1) + ", " +
                  std::to_string(gates() * H) + ", " + std::to_string(I) + "]");
  if (n.hasInput(4)) {
    DenseElementsAttr lens = n.constantInput(4);
    if (!lens)
      return n.notConstant(4, "sequence_lens (every sample's length)");
    for (llvm::APInt v : lens.getValues<llvm::APInt>())
      if (v.getSExtValue() != T)
        return n.unsupported("sequence_lens other than the sequence length " +
                             std::to_string(T) + " (variable lengths)");
  }
  // [T*B, I] in time-major order.
  Value x = n.input(0);
  if (batchFirst)
    x = op<TransposeOp>(x, llvm::ArrayRef<int64_t>{1, 0, 2});
  Value x2d = reshape(x, {T * B, I});
  llvm::SmallVector<Value> hs, cs;
  std::vector<llvm::SmallVector<Value>> perDir(static_cast<size_t>(D));
  for (int64_t d = 0; d < D; ++d) {
    Value lastH, lastC;
    direction(d, x2d, perDir[size_t(d)], lastH, lastC);
    hs.push_back(lastH);
    cs.push_back(lastC);
  }
  if (failedAny)
    return failure();
  // Y: [T, D, B, H] (layout 0) or [B, T, D, H] (layout 1).
  if (n.outputUsed(0)) {
    llvm::SmallVector<Value> steps;
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d)
        steps.push_back(reshape(perDir[size_t(d)][size_t(t)], {1, B, H}));
    Value y =
        reshape(op<ConcatOp>(ValueRange(steps), int64_t(0)), {T, D, B, H});
    if (batchFirst)
      y = op<TransposeOp>(y, llvm::ArrayRef<int64_t>{2, 0, 1, 3});
    if (failedAny || failed(n.setOutput(0, y)))
      return failure();
  }
  auto stack = [&](llvm::ArrayRef<Value> vs) {
    llvm::SmallVector<Value> parts;
    for (Value v : vs)
      parts.push_back(reshape(v, {1, B, H}));
    Value s = parts.size() == 1 ? parts[0]
                                : op<ConcatOp>(ValueRange(parts), int64_t(0));
    // Layout 1: [B, D, H].
    return batchFirst ? op<TransposeOp>(s, llvm::ArrayRef<int64_t>{1, 0, 2})
                      : s;
  };
  if (n.numOutputs() > 1 && n.outputUsed(1)) {
    Value yh = stack(hs);
    if (failedAny || failed(n.setOutput(1, yh)))
      return failure();
  }
  if (lstm && n.numOutputs() > 2 && n.outputUsed(2)) {
    Value yc = stack(cs);
    if (failedAny || failed(n.setOutput(2, yc)))
      return failure();
  }
  return success();
}

LogicalResult convertLstm(NodeImporter &n) {
  if (failed(n.expectInputs(3, 8)) ||
      failed(n.expectAttrs({"activation_alpha", "activation_beta",
                            "activations", "clip", "direction", "hidden_size",
                            "input_forget", "layout"})))
    return failure();
  return Rnn(n, Rnn::Lstm).run();
}

LogicalResult convertGru(NodeImporter &n) {
  if (failed(n.expectInputs(3, 6)) ||
      failed(n.expectAttrs({"activation_alpha", "activation_beta",
                            "activations", "clip", "direction", "hidden_size",
                            "layout", "linear_before_reset"})))
    return failure();
  return Rnn(n, Rnn::Gru).run();
}

LogicalResult convertRnn(NodeImporter &n) {
  if (failed(n.expectInputs(3, 6)) ||
      failed(
          n.expectAttrs({"activation_alpha", "activation_beta", "activations",
                         "clip", "direction", "hidden_size", "layout"})))
    return failure();
  return Rnn(n, Rnn::Simple).run();
}

} // namespace

void registerRecurrentConverters(ConverterTable &table) {
  table["LSTM"] = convertLstm;
  table["GRU"] = convertGru;
  table["RNN"] = convertRnn;
}

} // namespace tcc::onnx_import
