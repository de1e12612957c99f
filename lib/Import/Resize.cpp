// Resize in modes nearest and linear (what PyTorch's F.interpolate and
// nn.Upsample export), as ONNX's reference computes it: separably, one
// resized axis after the other. Along an axis each output position o reads
// the input at x = f(o), f given by coordinate_transformation_mode; nearest
// takes one input index (rounded by nearest_mode), linear the two around x,
// edge-clamped, weighted 1 - r and r. Both become a tcc.gather with the
// import-time index table (and for linear a weighted sum of two gathers with
// constant weights), so Resize runs wherever gather runs (generated CPU and
// CUDA kernels, fused with what follows) and its gradient is gather's
// (gather_grad's scatter-add). Refused, naming the node, the opset and the
// attribute: cubic, tf_crop_and_resize, antialias when downsampling,
// exclude_outside; scales or sizes not known at import time.
#include "ConstFold.h"
#include "Importer.h"

#include "llvm/ADT/StringExtras.h"

#include <cmath>

using namespace mlir;

namespace tcc::onnx_import {

namespace {

/// The source of each output position along one axis: nearest reads i0
/// only; linear reads (1 - w1) * x[i0] + w1 * x[i1].
struct AxisTable {
  llvm::SmallVector<int64_t> i0, i1;
  llvm::SmallVector<double> w1;
};

struct ResizeAttrs {
  bool linear = false;
  std::string coord = "half_pixel", nearest = "round_prefer_floor";
};

/// The source coordinate of output `o` of `out` along an axis of `in` with
/// `scale`, as ONNX's spec defines it: align_corners and pytorch_half_pixel
/// over the output's length `out` ("length_resized"), as onnxruntime and
/// PyTorch compute them; ONNX's reference takes the unrounded scale * in
/// there, which differs when a scale does not give a whole length.
double sourceCoordinate(const std::string &coord, double o, double scale,
                        int64_t in, int64_t out) {
  if (coord == "align_corners")
    return out == 1 ? 0.0 : o * double(in - 1) / double(out - 1);
  if (coord == "asymmetric")
    return o / scale;
  if (coord == "pytorch_half_pixel")
    return out == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
  if (coord == "half_pixel_symmetric") {
    double width = scale * double(in); // the unrounded output length
    double offset = double(in) / 2 * (1 - double(out) / width);
    return offset + (o + 0.5) / scale - 0.5;
  }
  return (o + 0.5) / scale - 0.5; // half_pixel
}

AxisTable axisTable(const ResizeAttrs &a, double scale, int64_t in,
                    int64_t out) {
  AxisTable t;
  auto clamp = [&](int64_t i) {
    return std::min(std::max<int64_t>(i, 0), in - 1);
  };
  for (int64_t o = 0; o < out; ++o) {
    double x = sourceCoordinate(a.coord, double(o), scale, in, out);
    double fl = std::floor(x), r = x - fl;
    int64_t lo = int64_t(fl);
    if (a.linear) {
      t.i0.push_back(clamp(lo));
      t.i1.push_back(clamp(lo + 1));
      t.w1.push_back(r);
      continue;
    }
    bool up = r == 0                             ? false
              : a.nearest == "round_prefer_ceil" ? r >= 0.5
              : a.nearest == "floor"             ? false
              : a.nearest == "ceil"              ? true
                                                 : r > 0.5;
    t.i0.push_back(clamp(lo + (up ? 1 : 0)));
  }
  return t;
}

/// Reads the string attribute `name`, which must be one of `allowed`.
FailureOr<std::string> stringAttr(NodeImporter &n, llvm::StringRef name,
                                  std::string dflt,
                                  llvm::ArrayRef<llvm::StringRef> allowed) {
  if (const onnx::AttributeProto *at = n.attr(name))
    dflt = at->s();
  if (llvm::is_contained(allowed, dflt))
    return dflt;
  return n.unsupported(name + " '" + dflt + "' at opset " +
                       std::to_string(n.opset()) + " is not supported (only " +
                       llvm::join(allowed, ", ") + ")");
}

/// Resizes `x` along `axis` by `t`.
FailureOr<Value> resizeAxis(NodeImporter &n, Value x, int64_t axis,
                            const AxisTable &t, bool linear) {
  auto xType = llvm::cast<RankedTensorType>(x.getType());
  int64_t out = int64_t(t.i0.size());
  auto indexType =
      RankedTensorType::get({out}, IntegerType::get(n.context(), 64));
  auto gather = [&](llvm::ArrayRef<int64_t> idx) -> FailureOr<Value> {
    auto g = n.create<GatherOp>(
        x, n.constant(DenseElementsAttr::get(indexType, idx)), axis);
    return failed(g) ? FailureOr<Value>(failure()) : FailureOr<Value>(*g);
  };
  auto a = gather(t.i0);
  if (failed(a) || !linear ||
      llvm::all_of(t.w1, [](double w) { return w == 0; }))
    return a;
  auto b = gather(t.i1);
  if (failed(b))
    return failure();
  // The weights as [out, 1, ...], broadcast over the dims after `axis`.
  llvm::SmallVector<int64_t> shape(xType.getRank() - axis, 1);
  shape[0] = out;
  auto weights = [&](bool second) {
    Lit w;
    w.type = RankedTensorType::get(shape, xType.getElementType());
    for (double w1 : t.w1)
      w.floats.push_back(second ? w1 : 1 - w1);
    return n.constant(fromLit(w));
  };
  auto wa = n.create<MulOp>(*a, weights(false));
  auto wb = n.create<MulOp>(*b, weights(true));
  if (failed(wa) || failed(wb))
    return failure();
  auto sum = n.create<AddOp>(*wa, *wb);
  return failed(sum) ? FailureOr<Value>(failure()) : FailureOr<Value>(*sum);
}

LogicalResult convertResize(NodeImporter &n) {
  if (failed(n.expectInputs(1, 4)) ||
      failed(n.expectAttrs(
          {"antialias", "axes", "coordinate_transformation_mode",
           "cubic_coeff_a", "exclude_outside", "extrapolation_value",
           "keep_aspect_ratio_policy", "mode", "nearest_mode"})))
    return failure();
  std::string at = " at opset " + std::to_string(n.opset());
  ResizeAttrs a;
  auto mode = stringAttr(n, "mode", "nearest", {"nearest", "linear"});
  auto coord =
      stringAttr(n, "coordinate_transformation_mode", "half_pixel",
                 {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel",
                  "align_corners", "asymmetric"});
  auto nearest =
      stringAttr(n, "nearest_mode", "round_prefer_floor",
                 {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
  auto policy = stringAttr(n, "keep_aspect_ratio_policy", "stretch",
                           {"stretch", "not_larger", "not_smaller"});
  if (failed(mode) || failed(coord) || failed(nearest) || failed(policy))
    return failure();
  a.linear = *mode == "linear";
  a.coord = *coord;
  a.nearest = *nearest;
  if (n.intAttr("exclude_outside", 0) != 0)
    return n.unsupported("exclude_outside = 1" + at + " is not supported");
  RankedTensorType type = n.inputType(0);
  int64_t rank = type.getRank();
  if (a.linear && !llvm::isa<FloatType>(type.getElementType()))
    return n.unsupported("linear mode of a non-float input" + at);

  // The resized axes, and their scales or sizes.
  std::optional<llvm::SmallVector<int64_t>> given = n.intsAttr("axes");
  auto resized = n.normalizeAxes(
      given ? std::optional<llvm::ArrayRef<int64_t>>(*given) : std::nullopt,
      rank, "axes");
  if (failed(resized))
    return failure();
  llvm::SmallVector<int64_t> &axes = *resized;
  int64_t k = int64_t(axes.size());
  llvm::SmallVector<double> scale(rank, 1.0);
  llvm::SmallVector<int64_t> out(type.getShape());
  bool haveScales = false;
  if (n.hasInput(2)) {
    DenseElementsAttr c = n.constantInput(2);
    if (!c)
      return n.notConstant(2, "scales");
    haveScales = c.getNumElements() > 0;
    if (haveScales) {
      if (c.getNumElements() != k)
        return n.fail("scales has " + std::to_string(c.getNumElements()) +
                      " values for " + std::to_string(k) + " axes");
      std::optional<Lit> s = toLit(c);
      for (int64_t i = 0; i < k; ++i) {
        double v = s->asDouble(i);
        if (!(v > 0))
          return n.fail("scales must be positive, got " + std::to_string(v));
        scale[axes[i]] = v;
        out[axes[i]] = int64_t(v * double(type.getDimSize(axes[i])));
      }
    }
  }
  bool haveSizes = n.hasInput(3);
  if (haveScales == haveSizes)
    return n.fail("exactly one of scales and sizes must be given");
  if (haveSizes) {
    auto sizes = n.intsInput(3, "sizes");
    if (failed(sizes))
      return failure();
    if (int64_t(sizes->size()) != k)
      return n.fail("sizes has " + std::to_string(sizes->size()) +
                    " values for " + std::to_string(k) + " axes");
    for (int64_t i = 0; i < k; ++i) {
      if ((*sizes)[i] < 1)
        return n.fail("sizes must be positive");
      out[axes[i]] = (*sizes)[i];
      scale[axes[i]] = double((*sizes)[i]) / double(type.getDimSize(axes[i]));
    }
    if (*policy != "stretch") {
      double s = scale[axes[0]];
      for (int64_t d : axes)
        s = *policy == "not_larger" ? std::min(s, scale[d])
                                    : std::max(s, scale[d]);
      for (int64_t d : axes) {
        scale[d] = s;
        out[d] = int64_t(s * double(type.getDimSize(d)) + 0.5);
      }
    }
  }
  if (n.intAttr("antialias", 0) != 0 && a.linear)
    for (int64_t d : axes)
      if (scale[d] < 1)
        return n.unsupported("antialias = 1 when downsampling (axis " +
                             std::to_string(d) + ", scale " +
                             std::to_string(scale[d]) + ")" + at +
                             " is not supported");

  Value x = n.input(0);
  llvm::SmallVector<int64_t> sorted(axes);
  llvm::sort(sorted);
  for (int64_t d : sorted) {
    int64_t in = type.getDimSize(d);
    if (out[d] < 1 || in < 1)
      return n.fail("axis " + std::to_string(d) + " resizes " +
                    std::to_string(in) + " to " + std::to_string(out[d]));
    AxisTable t = axisTable(a, scale[d], in, out[d]);
    bool identity = out[d] == in;
    for (int64_t o = 0; identity && o < out[d]; ++o)
      identity = t.i0[o] == o && (!a.linear || t.w1[o] == 0);
    if (identity)
      continue;
    auto r = resizeAxis(n, x, d, t, a.linear);
    if (failed(r))
      return failure();
    x = *r;
  }
  return n.setOutput(0, x);
}

} // namespace

void registerResizeConverter(ConverterTable &table) {
  table["Resize"] = convertResize;
}

} // namespace tcc::onnx_import
