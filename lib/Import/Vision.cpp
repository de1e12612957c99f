// Convolution, pooling, batch normalisation and padding: Conv, ConvTranspose, MaxPool,
// AveragePool, GlobalAveragePool, GlobalMaxPool, BatchNormalization, Pad. tcc's window ops are
// 2-D over NCHW; 1-D forms ([N, C, L]) run as H = 1.
#include "ConstFold.h"
#include "Importer.h"

#include "tcc/TccBatchNorm.h"

#include <algorithm>

using namespace mlir;

namespace tcc::onnx_import {

namespace {

/// ONNX's window attributes for one node, resolved to tcc's 2-D form.
struct OnnxWindow {
  Window2d win;
  int64_t spatial = 0; ///< 1 or 2
};

/// Reads kernel_shape (or `kernel` from a weight), strides, dilations, pads
/// and auto_pad of a node over input `x`; `ceilMode` grows the end pads so
/// the output has ONNX's ceil-mode size.
FailureOr<OnnxWindow> readWindow(NodeImporter &n, RankedTensorType x,
                                 llvm::ArrayRef<int64_t> kernel,
                                 bool ceilMode) {
  OnnxWindow w;
  int64_t rank = x.getRank();
  if (rank != 3 && rank != 4)
    return n.unsupported(
        "input of rank " + std::to_string(rank) +
        ": only 1-D and 2-D forms ([N, C, L] or [N, C, H, W]) are supported");
  int64_t s = rank - 2;
  w.spatial = s;
  if (int64_t(kernel.size()) != s)
    return n.fail("kernel_shape has " + std::to_string(kernel.size()) +
                  " values for " + std::to_string(s) + " spatial dims");
  auto list = [&](llvm::StringRef name, int64_t count,
                  int64_t dflt) -> FailureOr<llvm::SmallVector<int64_t>> {
    auto v = n.intsAttr(name);
    if (!v)
      return llvm::SmallVector<int64_t>(count, dflt);
    if (int64_t(v->size()) != count)
      return n.fail(name + " has " + std::to_string(v->size()) +
                    " values, expected " + std::to_string(count));
    return *v;
  };
  auto strides = list("strides", s, 1), dilations = list("dilations", s, 1),
       pads = list("pads", 2 * s, 0);
  if (failed(strides) || failed(dilations) || failed(pads))
    return failure();
  llvm::SmallVector<int64_t> in(x.getShape().drop_front(2)), k(kernel);
  llvm::SmallVector<int64_t> begin(pads->begin(), pads->begin() + s),
      end(pads->begin() + s, pads->end());
  std::string autoPad = "NOTSET";
  if (const onnx::AttributeProto *a = n.attr("auto_pad"))
    autoPad = a->s();
  for (int64_t d = 0; d < s; ++d) {
    int64_t st = (*strides)[d], dil = (*dilations)[d];
    if (st < 1 || dil < 1 || k[d] < 1)
      return n.fail("kernel_shape, strides and dilations must be positive");
    if (autoPad == "VALID") {
      begin[d] = end[d] = 0;
    } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
      int64_t out = (in[d] + st - 1) / st;
      int64_t total =
          std::max<int64_t>(0, (out - 1) * st + (k[d] - 1) * dil + 1 - in[d]);
      begin[d] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[d] = total - begin[d];
    } else if (autoPad != "NOTSET") {
      return n.fail("auto_pad '" + autoPad +
                    "' is not NOTSET, SAME_UPPER, SAME_LOWER or VALID");
    }
    if (ceilMode) {
      int64_t span = in[d] + begin[d] + end[d] - dil * (k[d] - 1) - 1;
      int64_t out = span < 0 ? 0 : (span + st - 1) / st + 1;
      // The last window must start inside the input or its begin padding.
      if (out > 0 && (out - 1) * st >= in[d] + begin[d])
        --out;
      if (out > 0)
        end[d] = std::max(end[d], (out - 1) * st + dil * (k[d] - 1) + 1 -
                                      in[d] - begin[d]);
    }
  }
  // The 1-D form is the 2-D one with a 1-high window over H = 1.
  int64_t o = s == 2 ? 0 : -1;
  auto at = [&](llvm::ArrayRef<int64_t> v, int64_t d, int64_t dflt) {
    return d < 0 ? dflt : v[d];
  };
  w.win.kh = at(k, o, 1);
  w.win.kw = k[s - 1];
  w.win.sh = at(*strides, o, 1);
  w.win.sw = (*strides)[s - 1];
  w.win.dh = at(*dilations, o, 1);
  w.win.dw = (*dilations)[s - 1];
  w.win.padTop = at(begin, o, 0);
  w.win.padLeft = begin[s - 1];
  w.win.padBottom = at(end, o, 0);
  w.win.padRight = end[s - 1];
  return w;
}

/// A 1-D operand [A, B, L] as [A, B, 1, L]; 2-D ones unchanged.
FailureOr<Value> as2d(NodeImporter &n, Value v) {
  auto t = llvm::cast<RankedTensorType>(v.getType());
  if (t.getRank() == 4)
    return v;
  return n.reshape(v, {t.getDimSize(0), t.getDimSize(1), 1, t.getDimSize(2)});
}

/// Sets output 0 from a 2-D result, back in 1-D form for a 1-D node.
LogicalResult setWindowOutput(NodeImporter &n, const OnnxWindow &w,
                              Value result) {
  if (w.spatial == 2)
    return n.setOutput(0, result);
  auto t = llvm::cast<RankedTensorType>(result.getType());
  auto r =
      n.reshape(result, {t.getDimSize(0), t.getDimSize(1), t.getDimSize(3)});
  return failed(r) ? failure() : n.setOutput(0, *r);
}

LogicalResult expectFloatInputs(NodeImporter &n) {
  for (int i = 0; i < n.numInputs(); ++i)
    if (n.hasInput(i) && !llvm::isa<FloatType>(n.inputElementType(i)))
      return n.unsupported("integer or bool operands are not supported");
  return success();
}

/// The spatial kernel of a convolution's weight (its dims after the first
/// two), checking that the weight has the input's rank.
FailureOr<llvm::ArrayRef<int64_t>> convKernel(NodeImporter &n) {
  RankedTensorType x = n.inputType(0), wt = n.inputType(1);
  if (wt.getRank() != x.getRank())
    return n.fail("weight of rank " + std::to_string(wt.getRank()) +
                  " for an input of rank " + std::to_string(x.getRank()));
  return wt.getShape().drop_front(std::min<int64_t>(2, wt.getRank()));
}

LogicalResult convertConv(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)) ||
      failed(n.expectAttrs({"auto_pad", "dilations", "group", "kernel_shape",
                            "pads", "strides"})) ||
      failed(expectFloatInputs(n)))
    return failure();
  auto kernel = convKernel(n);
  if (failed(kernel))
    return failure();
  if (auto ks = n.intsAttr("kernel_shape");
      ks && llvm::ArrayRef<int64_t>(*ks) != *kernel)
    return n.fail("kernel_shape disagrees with the weight's shape");
  auto w = readWindow(n, n.inputType(0), *kernel, false);
  if (failed(w))
    return failure();
  auto input = as2d(n, n.input(0)), weight = as2d(n, n.input(1));
  if (failed(input) || failed(weight))
    return failure();
  const Window2d &g = w->win;
  auto op =
      n.create<ConvOp>(*input, *weight, n.hasInput(2) ? n.input(2) : Value(),
                       g.sh, g.sw, g.padTop, g.padLeft, g.padBottom, g.padRight,
                       g.dh, g.dw, n.intAttr("group", 1));
  return failed(op) ? failure() : setWindowOutput(n, *w, *op);
}

/// ConvTranspose (nn.ConvTranspose1d/2d) as the convolution it is the
/// gradient of: the input with stride - 1 zeros inserted between its
/// elements (a broadcast times a 0/1 mask), padded by dilation * (k - 1)
/// minus the node's pads (plus output_padding at the end), convolved at
/// stride 1 with the kernel flipped and its in/out channels swapped per
/// group. Every piece is an op autodiff knows, so it trains as it is; the
/// convolution does stride^2 times the FLOPs of a direct transposed one.
LogicalResult convertConvTranspose(NodeImporter &n) {
  if (failed(n.expectInputs(2, 3)) ||
      failed(n.expectAttrs({"auto_pad", "dilations", "group", "kernel_shape",
                            "output_padding", "output_shape", "pads",
                            "strides"})) ||
      failed(expectFloatInputs(n)))
    return failure();
  std::string autoPad = "NOTSET";
  if (const onnx::AttributeProto *a = n.attr("auto_pad"))
    autoPad = a->s();
  if (autoPad == "VALID")
    autoPad = "NOTSET"; // zero pads, as readWindow reads them
  RankedTensorType x = n.inputType(0), wt = n.inputType(1);
  auto kernelOr = convKernel(n);
  if (failed(kernelOr))
    return failure();
  llvm::ArrayRef<int64_t> kernel = *kernelOr;
  auto w = readWindow(n, x, kernel, false);
  if (failed(w))
    return failure();
  int64_t groups = n.intAttr("group", 1);
  if (groups < 1 || x.getDimSize(1) % groups != 0 ||
      wt.getDimSize(0) != x.getDimSize(1))
    return n.fail("weight [" + std::to_string(wt.getDimSize(0)) +
                  ", ...] and group " + std::to_string(groups) +
                  " do not fit an input of " + std::to_string(x.getDimSize(1)) +
                  " channels");
  llvm::SmallVector<int64_t> outPad(size_t(w->spatial), 0);
  if (auto op = n.intsAttr("output_padding")) {
    if (int64_t(op->size()) != w->spatial)
      return n.fail("output_padding has " + std::to_string(op->size()) +
                    " values for " + std::to_string(w->spatial) +
                    " spatial dims");
    outPad = *op;
  }
  // output_shape, or SAME_*'s input * stride: the total padding that gives
  // it, split as the spec says (SAME_UPPER: the odd one at the end).
  auto outShape = n.intsAttr("output_shape");
  if (outShape || autoPad != "NOTSET") {
    int64_t s = w->spatial;
    if (outShape && int64_t(outShape->size()) != s)
      return n.fail("output_shape has " + std::to_string(outShape->size()) +
                    " values for " + std::to_string(s) + " spatial dims");
    Window2d &win = w->win;
    for (int64_t d = 0; d < s; ++d) {
      bool rows = s == 2 && d == 0;
      int64_t st = rows ? win.sh : win.sw, dil = rows ? win.dh : win.dw,
              k = kernel[d], in = x.getDimSize(2 + d);
      int64_t want = outShape ? (*outShape)[d] : in * st;
      int64_t total = st * (in - 1) + outPad[d] + (k - 1) * dil + 1 - want;
      // A negative total (a requested size beyond the natural one) adds
      // zeros at the end, as onnx's reference does.
      int64_t begin = total < 0                 ? 0
                      : autoPad == "SAME_UPPER" ? total / 2
                                                : total - total / 2;
      (rows ? win.padTop : win.padLeft) = begin;
      (rows ? win.padBottom : win.padRight) = total - begin;
    }
  }
  const Window2d &g = w->win;
  int64_t opH = w->spatial == 2 ? outPad[0] : 0, opW = outPad.back();
  auto input = as2d(n, n.input(0)), weight = as2d(n, n.input(1));
  if (failed(input) || failed(weight))
    return failure();
  auto shape = [](Value v) {
    return llvm::SmallVector<int64_t>(
        llvm::cast<RankedTensorType>(v.getType()).getShape());
  };
  Value xv = *input;
  llvm::SmallVector<int64_t> xs = shape(xv);
  int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  if (g.sh > 1 || g.sw > 1) {
    // x[n, c, i, j] at (i * sh, j * sw) of a zero grid.
    auto six = n.reshape(xv, {N, C, H, 1, W, 1});
    if (failed(six))
      return failure();
    auto wide = n.broadcast(*six, {N, C, H, g.sh, W, g.sw});
    if (failed(wide))
      return failure();
    Type elem = x.getElementType();
    llvm::SmallVector<Attribute> ones;
    for (int64_t a = 0; a < g.sh; ++a)
      for (int64_t b = 0; b < g.sw; ++b)
        ones.push_back(FloatAttr::get(elem, a == 0 && b == 0 ? 1.0 : 0.0));
    auto maskType = RankedTensorType::get({1, 1, 1, g.sh, 1, g.sw}, elem);
    auto masked = n.create<MulOp>(*wide, n.constant(DenseElementsAttr::get(
                                             maskType, ones)));
    if (failed(masked))
      return failure();
    auto grid = n.reshape(*masked, {N, C, H * g.sh, W * g.sw});
    if (failed(grid))
      return failure();
    auto cut = n.create<SliceOp>(
        *grid, llvm::ArrayRef<int64_t>{0, 0, 0, 0},
        llvm::ArrayRef<int64_t>{N, C, (H - 1) * g.sh + 1, (W - 1) * g.sw + 1},
        llvm::ArrayRef<int64_t>{1, 1, 1, 1});
    if (failed(cut))
      return failure();
    xv = *cut;
  }
  // Weight [Cin, Cout/g, kh, kw] -> [Cout, Cin/g, kh, kw], flipped.
  llvm::SmallVector<int64_t> ws = shape(*weight);
  int64_t cin = ws[0], coutG = ws[1], kh = ws[2], kw = ws[3];
  auto grouped = n.reshape(*weight, {groups, cin / groups, coutG, kh, kw});
  if (failed(grouped))
    return failure();
  auto swapped =
      n.create<TransposeOp>(*grouped, llvm::ArrayRef<int64_t>{0, 2, 1, 3, 4});
  if (failed(swapped))
    return failure();
  auto convW = n.reshape(*swapped, {groups * coutG, cin / groups, kh, kw});
  if (failed(convW))
    return failure();
  auto flipped = n.create<SliceOp>(
      *convW, llvm::ArrayRef<int64_t>{0, 0, kh - 1, kw - 1},
      llvm::ArrayRef<int64_t>{groups * coutG, cin / groups, -1, -1},
      llvm::ArrayRef<int64_t>{1, 1, -1, -1});
  if (failed(flipped))
    return failure();
  int64_t spanH = g.dh * (kh - 1), spanW = g.dw * (kw - 1);
  int64_t pt = spanH - g.padTop, pb = spanH - g.padBottom + opH,
          pl = spanW - g.padLeft, pr = spanW - g.padRight + opW;
  if (pt < 0 || pb < 0 || pl < 0 || pr < 0)
    return n.unsupported("pads larger than the dilated kernel's span");
  auto op = n.create<ConvOp>(xv, *flipped,
                             n.hasInput(2) ? n.input(2) : Value(), int64_t(1),
                             int64_t(1), pt, pl, pb, pr, g.dh, g.dw, groups);
  return failed(op) ? failure() : setWindowOutput(n, *w, *op);
}

template <bool Max> LogicalResult convertPool(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(expectFloatInputs(n)))
    return failure();
  if (Max ? failed(n.expectAttrs({"auto_pad", "ceil_mode", "dilations",
                                  "kernel_shape", "pads", "storage_order",
                                  "strides"}))
          : failed(n.expectAttrs({"auto_pad", "ceil_mode", "count_include_pad",
                                  "dilations", "kernel_shape", "pads",
                                  "strides"})))
    return failure();
  if (Max && n.outputUsed(1))
    return n.unsupported("the Indices output is not supported");
  auto kernel = n.intsAttr("kernel_shape");
  if (!kernel)
    return n.fail("kernel_shape is required");
  bool ceilMode = n.intAttr("ceil_mode", 0) != 0;
  bool includePad = n.intAttr("count_include_pad", 0) != 0;
  auto w = readWindow(n, n.inputType(0), *kernel, ceilMode);
  if (failed(w))
    return failure();
  if (ceilMode && includePad) {
    auto plain = readWindow(n, n.inputType(0), *kernel, false);
    if (failed(plain))
      return failure();
    if (plain->win.padBottom != w->win.padBottom ||
        plain->win.padRight != w->win.padRight)
      return n.unsupported(
          "ceil_mode with count_include_pad where the last window passes "
          "the padded input");
  }
  auto input = as2d(n, n.input(0));
  if (failed(input))
    return failure();
  const Window2d &g = w->win;
  if constexpr (Max) {
    auto op =
        n.create<MaxPoolOp>(*input, g.kh, g.kw, g.sh, g.sw, g.padTop, g.padLeft,
                            g.padBottom, g.padRight, g.dh, g.dw);
    return failed(op) ? failure() : setWindowOutput(n, *w, *op);
  } else {
    auto op =
        n.create<AvgPoolOp>(*input, g.kh, g.kw, g.sh, g.sw, g.padTop, g.padLeft,
                            g.padBottom, g.padRight, g.dh, g.dw, includePad);
    return failed(op) ? failure() : setWindowOutput(n, *w, *op);
  }
}

/// GlobalAveragePool / GlobalMaxPool: a keepdims reduction over the spatial
/// dims.
template <class ReduceOpT> LogicalResult convertGlobalPool(NodeImporter &n) {
  if (failed(n.expectInputs(1, 1)) || failed(n.expectAttrs({})) ||
      failed(expectFloatInputs(n)))
    return failure();
  int64_t rank = n.inputType(0).getRank();
  if (rank < 3)
    return n.fail("input of rank " + std::to_string(rank) +
                  " has no spatial dims");
  llvm::SmallVector<int64_t> axes;
  for (int64_t d = 2; d < rank; ++d)
    axes.push_back(d);
  auto op = n.create<ReduceOpT>(n.input(0), axes, true);
  return failed(op) ? failure() : n.setOutput(0, *op);
}

/// BatchNormalization over dim 1, as one tcc.batch_norm (TccBatchNorm.td):
/// in training mode (training_mode = 1) it normalises with the batch's
/// statistics and its optional outputs are ONNX's running statistics;
/// otherwise it normalises with input_mean and input_var. The training-step
/// builder picks the mode per step function, as PyTorch's train()/eval().
LogicalResult convertBatchNorm(NodeImporter &n) {
  if (failed(n.expectInputs(5, 5)) ||
      failed(
          n.expectAttrs({"epsilon", "momentum", "training_mode", "spatial"})) ||
      failed(expectFloatInputs(n)))
    return failure();
  if (n.intAttr("spatial", 1) != 1)
    return n.unsupported("spatial = 0 is not supported");
  RankedTensorType x = n.inputType(0);
  int64_t rank = x.getRank();
  if (rank < 2)
    return n.fail("input of rank " + std::to_string(rank) +
                  " has no channel dim");
  int64_t channels = x.getDimSize(1);
  Type elem = x.getElementType();
  bool training = n.intAttr("training_mode", 0) != 0;
  if (!training && (n.outputUsed(1) || n.outputUsed(2)))
    return n.fail(
        "running_mean and running_var are outputs only in training mode");
  Value perChannel[4];
  for (int i = 1; i <= 4; ++i) {
    if (n.inputType(i).getRank() != 1 ||
        n.inputType(i).getDimSize(0) != channels)
      return n.fail("input " + std::to_string(i) + " must be [" +
                    std::to_string(channels) + "], got " +
                    std::to_string(n.inputType(i).getNumElements()) +
                    " elements");
    perChannel[i - 1] = n.cast(n.input(i), elem);
  }
  OpBuilder &b = n.builder();
  auto op = BatchNormOp::create(
      b, n.loc(), n.input(0), perChannel[0], perChannel[1], perChannel[2],
      perChannel[3], b.getF64FloatAttr(n.floatAttr("epsilon", 1e-5)),
      b.getF64FloatAttr(n.floatAttr("momentum", 0.9)),
      training ? b.getUnitAttr() : UnitAttr());
  if (failed(n.setOutput(0, op.getResult())))
    return failure();
  for (int i : {1, 2})
    if (n.outputUsed(i) &&
        failed(n.setOutput(i, n.cast(op->getResult(i),
                                     n.inputElementType(i + 2)))))
      return failure();
  return success();
}

/// Pad (opset 11+: pads and constant_value as inputs known at import time)
/// in constant, edge and reflect mode: per padded dim a concat of the input
/// with the padding, a broadcast constant, a broadcast edge slice or a
/// reversed slice. Negative pads crop with a slice. Built of tcc ops, so
/// its gradient is theirs.
LogicalResult convertPad(NodeImporter &n) {
  if (failed(n.expectInputs(2, 4)) || failed(n.expectAttrs({"mode"})))
    return failure();
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  auto given = n.intsInput(1, "pads");
  if (failed(given))
    return failure();
  // Opset 18's axes input: pads holds begins and ends of those axes only.
  llvm::SmallVector<int64_t> axesGiven;
  if (n.hasInput(3)) {
    auto a = n.intsInput(3, "axes");
    if (failed(a))
      return failure();
    axesGiven = std::move(*a);
  }
  auto padded = n.normalizeAxes(
      n.hasInput(3) ? std::optional<llvm::ArrayRef<int64_t>>(axesGiven)
                    : std::nullopt,
      rank, "axes");
  if (failed(padded))
    return failure();
  llvm::SmallVector<int64_t> &axes = *padded;
  int64_t k = int64_t(axes.size());
  if (int64_t(given->size()) != 2 * k)
    return n.fail("pads has " + std::to_string(given->size()) + " values for " +
                  std::to_string(k) + " padded axes");
  llvm::SmallVector<int64_t> padsAll(2 * rank, 0);
  for (int64_t i = 0; i < k; ++i) {
    padsAll[axes[i]] = (*given)[i];
    padsAll[axes[i] + rank] = (*given)[i + k];
  }
  auto pads = &padsAll;
  std::string mode = "constant";
  if (const onnx::AttributeProto *a = n.attr("mode"))
    mode = a->s();
  if (mode != "constant" && mode != "edge" && mode != "reflect")
    return n.unsupported("mode '" + mode + "'");
  double fill = 0;
  if (n.hasInput(2)) {
    DenseElementsAttr c = n.constantInput(2);
    if (!c)
      return n.notConstant(2, "constant_value");
    if (c.getNumElements() != 1)
      return n.fail("constant_value must be a scalar");
    fill = toLit(c)->asDouble(0);
  }
  Value x = n.input(0);
  auto shapeOf = [](Value v) {
    return llvm::SmallVector<int64_t>(
        llvm::cast<RankedTensorType>(v.getType()).getShape());
  };
  auto slice = [&](Value v, int64_t d, int64_t start, int64_t limit,
                   int64_t stride) -> FailureOr<Value> {
    llvm::SmallVector<int64_t> shape = shapeOf(v), starts(rank, 0),
                                      limits(shape), strides(rank, 1);
    starts[d] = start;
    limits[d] = limit;
    strides[d] = stride;
    auto op = n.create<SliceOp>(v, starts, limits, strides);
    if (failed(op))
      return failure();
    return Value(*op);
  };
  for (int64_t d = 0; d < rank; ++d) {
    int64_t begin = (*pads)[d], end = (*pads)[d + rank];
    int64_t dim = shapeOf(x)[d];
    if (begin < 0 || end < 0) {
      auto cropped = slice(x, d, std::max<int64_t>(0, -begin),
                           dim - std::max<int64_t>(0, -end), 1);
      if (failed(cropped))
        return failure();
      x = *cropped;
      dim = shapeOf(x)[d];
    }
    begin = std::max<int64_t>(0, begin);
    end = std::max<int64_t>(0, end);
    if (begin == 0 && end == 0)
      continue;
    if (mode == "reflect" && (begin >= dim || end >= dim))
      return n.unsupported("reflect pads of " + std::to_string(begin) +
                           " and " + std::to_string(end) + " on a dim of " +
                           std::to_string(dim));
    if (mode == "edge" && dim == 0)
      return n.fail("edge padding of an empty dim");
    llvm::SmallVector<Value> parts;
    for (bool before : {true, false}) {
      int64_t count = before ? begin : end;
      if (count == 0) {
        if (!before)
          break;
        parts.push_back(x);
        continue;
      }
      llvm::SmallVector<int64_t> shape = shapeOf(x);
      shape[d] = count;
      FailureOr<Value> part = failure();
      if (mode == "constant") {
        part = n.broadcast(n.scalar(type.getElementType(), fill), shape);
      } else if (mode == "edge") {
        auto e = before ? slice(x, d, 0, 1, 1) : slice(x, d, dim - 1, dim, 1);
        if (failed(e))
          return failure();
        part = n.broadcast(*e, shape);
      } else {
        part = before ? slice(x, d, count, 0, -1)
                      : slice(x, d, dim - 2, dim - 2 - count, -1);
      }
      if (failed(part))
        return failure();
      if (before) {
        parts.push_back(*part);
        parts.push_back(x);
      } else {
        parts.push_back(*part);
      }
    }
    auto op = n.create<ConcatOp>(parts, d);
    if (failed(op))
      return failure();
    x = *op;
  }
  return n.setOutput(0, x);
}

} // namespace

void registerVisionConverters(ConverterTable &table) {
  table["Conv"] = convertConv;
  table["ConvTranspose"] = convertConvTranspose;
  table["MaxPool"] = convertPool<true>;
  table["AveragePool"] = convertPool<false>;
  table["GlobalAveragePool"] = convertGlobalPool<ReduceMeanOp>;
  table["GlobalMaxPool"] = convertGlobalPool<ReduceMaxOp>;
  table["BatchNormalization"] = convertBatchNorm;
  table["Pad"] = convertPad;
}

} // namespace tcc::onnx_import
