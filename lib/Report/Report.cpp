// The HTML report of `tcc compile --report`; see Report.h. Written for an
// ML engineer: launches, cost and memory by model layer (the ONNX node
// names PyTorch writes, kept in each op's location), a memory timeline with
// axes, units and a legend, human units, and the buffers at the peak.
#include "tcc/Report/Report.h"

#include "exec/ExecOps.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Fuse.h"
#include "exec/MemoryPlan.h"
#include "tcc/Support/OutputFile.h"

#include "plan/plan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

using namespace mlir;

namespace tcc::report {

int64_t countFunctionOps(ModuleOp module, llvm::StringRef name) {
  auto func = module.lookupSymbol<func::FuncOp>(name);
  if (!func || func.isExternal())
    return 0;
  return static_cast<int64_t>(func.getBody().front().getOperations().size());
}

/// As tcc-fuse counts them: every op but terminators, constants, parameter
/// reads and reshapes is one kernel launch.
static int64_t countKernels(func::FuncOp func) {
  return countKernelLaunches(func.getBody().front());
}

static int64_t numElements(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return 0;
  return tensor.getNumElements();
}

static int64_t tensorBytes(Type type) {
  auto tensor = llvm::dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return 0;
  unsigned bits = tensor.getElementType().getIntOrFloatBitWidth();
  return numElements(type) * std::max<int64_t>(1, (bits + 7) / 8);
}

/// What a launch runs: a library call's op, a generated kernel by its
/// name, else the op itself.
static std::string launchName(Operation *op) {
  if (auto call = llvm::dyn_cast<exec::CallOp>(op))
    return call.getCallee()->getName().getStringRef().str();
  if (auto fusion = llvm::dyn_cast<exec::FusionOp>(op))
    return "kernel " + fusion.getName().str();
  return op->getName().getStringRef().str();
}

/// Estimated FLOPs of one launch (tcc::opFlops of the ops it runs).
static int64_t launchFlops(Operation *op) {
  if (auto call = llvm::dyn_cast<exec::CallOp>(op))
    return opFlops(call.getCallee());
  int64_t flops = 0;
  if (auto fusion = llvm::dyn_cast<exec::FusionOp>(op)) {
    fusion.getBody().walk([&](Operation *inner) {
      if (!llvm::isa<ConstantOp, exec::YieldOp>(inner))
        flops += opFlops(inner);
    });
    return flops;
  }
  return opFlops(op);
}

static int64_t launchBytes(Operation *op) {
  int64_t bytes = 0;
  for (Type type : op->getOperandTypes())
    bytes += tensorBytes(type);
  for (Type type : op->getResultTypes())
    bytes += tensorBytes(type);
  return bytes;
}

static std::string escape(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

static std::string typeString(Type type) {
  std::string s;
  llvm::raw_string_ostream os(s);
  type.print(os);
  return escape(s);
}

/// Bytes in binary units, as an ML engineer reads them: "512 B",
/// "12.0 KiB", "1.50 MiB", "3.20 GiB".
static std::string humanBytes(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && std::abs(bytes) >= 1024) {
    bytes /= 1024;
    ++u;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (u == 0)
    os << llvm::format("%.0f B", bytes);
  else
    os << llvm::format(bytes < 10 ? "%.2f %s" : "%.1f %s", bytes, units[u]);
  return text;
}

/// FLOPs in decimal units: "800 FLOP", "4.50 MFLOP", "1.23 GFLOP".
static std::string humanFlops(double flops) {
  const char *units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP"};
  int u = 0;
  while (u < 5 && flops >= 1000) {
    flops /= 1000;
    ++u;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (u == 0)
    os << llvm::format("%.0f FLOP", flops);
  else
    os << llvm::format(flops < 10 ? "%.2f %s" : "%.1f %s", flops, units[u]);
  return text;
}

/// The first ONNX node name in `loc` (through fused and call-site
/// locations), or "".
static std::string nodeName(Location loc) {
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return name.getName().str();
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string n = nodeName(inner); !n.empty())
        return n;
  if (auto call = llvm::dyn_cast<CallSiteLoc>(loc))
    return nodeName(call.getCallee());
  return "";
}

/// The model layer an op belongs to: the module path of the ONNX node name
/// PyTorch writes (/h.0/attn/MatMul is in /h.0/attn), kept through fusion
/// and differentiation in the op's location. Ops the importer named after
/// the graph (`model`, e.g. parameters and what the optimizer does with
/// them) and ops without a name are "(whole model)".
static std::string layerOf(Operation *op, llvm::StringRef model) {
  std::string name = nodeName(op->getLoc());
  if (name.empty() || name == model)
    return "(whole model)";
  size_t slash = name.rfind('/');
  if (slash == std::string::npos)
    return "(top level)";
  return slash == 0 ? "/" : name.substr(0, slash);
}

/// Ticks for an axis from 0 to `max`: a step of 1, 2 or 5 times a power of
/// ten giving at most about `count` of them.
static double tickStep(double max, int count) {
  double raw = std::max(max, 1e-9) / count;
  double power = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

/// The arena offset the plan gave result `resultNumber` of `op`, or -1.
static int64_t plannedOffset(Operation *op, unsigned resultNumber) {
  if (auto offset = op->getAttrOfType<IntegerAttr>(kOffsetAttr))
    return offset.getInt();
  if (auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr))
    return offsets[resultNumber];
  return -1;
}

/// Where the live arena bytes peak: the op index and the bytes.
struct LivePeak {
  int64_t op = 0;
  int64_t bytes = 0;
};

static bool planned(const Buffer &buffer) {
  return buffer.def && buffer.region == BufferRegion::Arena &&
         plannedOffset(buffer.def, buffer.resultNumber) >= 0;
}

static LivePeak livePeak(const BufferLiveness &live) {
  std::vector<int64_t> delta(live.numOps + 2, 0);
  for (const Buffer &buffer : live.buffers)
    if (planned(buffer)) {
      delta[std::max<int64_t>(0, buffer.start)] += buffer.bytes;
      delta[std::min<int64_t>(live.numOps, buffer.end) + 1] -= buffer.bytes;
    }
  LivePeak peak;
  int64_t sum = 0;
  for (int64_t i = 0; i < live.numOps; ++i) {
    sum += delta[i];
    if (sum > peak.bytes)
      peak = {i, sum};
  }
  return peak;
}

/// The memory plan as an SVG: x is the op index in execution order, y the
/// arena offset, with ticks and units on both axes; one rectangle per arena
/// buffer from its def to its last use, coloured by model layer (the legend
/// names the layers that hold the most bytes at the peak, the rest grey);
/// the arena size and the peak of live bytes marked.
static void writeTimeline(llvm::raw_ostream &os, const BufferLiveness &live,
                          int64_t arenaBytes, const LivePeak &peak,
                          llvm::function_ref<std::string(Operation *)> layer) {
  const double width = 1180, height = 460, left = 90, top = 20, bottom = 60,
               legendW = 300;
  double plotW = width - left - legendW - 20, plotH = height - top - bottom;
  double numOps = std::max<int64_t>(1, live.numOps);
  // y in the unit that suits the arena.
  const char *unit = "B";
  double scale = 1;
  for (const char *u : {"KiB", "MiB", "GiB"})
    if (arenaBytes >= scale * 1024 * 4) {
      scale *= 1024;
      unit = u;
    }
  double maxY = std::max<int64_t>(1, arenaBytes) * 1.08 / scale;
  auto x = [&](double i) { return left + i / numOps * plotW; };
  auto f = [](double v) { return llvm::format("%.1f", v); };
  auto num = [](double v) {
    std::string text;
    llvm::raw_string_ostream(text) << llvm::format("%.1f", v);
    return text;
  };
  auto y = [&](double b) { return top + plotH - b / scale / maxY * plotH; };
  // The layers holding the most bytes at the peak get colours.
  std::map<std::string, int64_t> atPeak;
  for (const Buffer &buffer : live.buffers)
    if (planned(buffer) && buffer.start <= peak.op && peak.op <= buffer.end)
      atPeak[layer(buffer.def)] += buffer.bytes;
  std::vector<std::pair<int64_t, std::string>> ranked;
  for (auto &[name, bytes] : atPeak)
    ranked.push_back({-bytes, name});
  llvm::sort(ranked);
  const char *palette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759",
                           "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                           "#9c755f", "#86bcb6"};
  std::map<std::string, const char *> colour;
  for (size_t i = 0; i < ranked.size() && i < std::size(palette); ++i)
    colour[ranked[i].second] = palette[i];
  auto colourOf = [&](const std::string &name) {
    auto it = colour.find(name);
    return it == colour.end() ? "#c8c8c8" : it->second;
  };

  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f(width)
     << "\" height=\"" << f(height)
     << "\" class=\"timeline\" font-family=\"sans-serif\" "
        "font-size=\"12\">\n";
  os << "<rect x=\"" << f(left) << "\" y=\"" << f(top) << "\" width=\""
     << f(plotW) << "\" height=\"" << f(plotH)
     << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  // Grid and ticks: y in `unit`, x in ops.
  double yStep = tickStep(maxY, 8);
  for (double v = 0; v <= maxY; v += yStep) {
    double py = top + plotH - v / maxY * plotH;
    os << "<line x1=\"" << f(left - 5) << "\" x2=\"" << f(left + plotW)
       << "\" y1=\"" << f(py) << "\" y2=\"" << f(py)
       << "\" stroke=\"#e4e4e4\"/>\n<text x=\"" << f(left - 8) << "\" y=\""
       << f(py + 4) << "\" text-anchor=\"end\">" << llvm::format("%g", v) << " "
       << unit << "</text>\n";
  }
  double xStep = std::max(1.0, tickStep(numOps, 10));
  for (double v = 0; v <= numOps; v += xStep) {
    double px = x(v);
    os << "<line x1=\"" << f(px) << "\" x2=\"" << f(px) << "\" y1=\""
       << f(top + plotH) << "\" y2=\"" << f(top + plotH + 5)
       << "\" stroke=\"#666\"/>\n<text x=\"" << f(px) << "\" y=\""
       << f(top + plotH + 18) << "\" text-anchor=\"middle\">"
       << llvm::format("%g", v) << "</text>\n";
  }
  os << "<text x=\"" << f(left + plotW / 2) << "\" y=\"" << f(height - 14)
     << "\" text-anchor=\"middle\">op of @train_step, in execution order "
        "(forward, then backward and optimizer)</text>\n";
  os << "<text transform=\"translate(16," << f(top + plotH / 2)
     << ") rotate(-90)\" text-anchor=\"middle\">arena offset (" << unit
     << ")</text>\n";
  for (const Buffer &buffer : live.buffers) {
    if (!planned(buffer))
      continue;
    int64_t offset = plannedOffset(buffer.def, buffer.resultNumber);
    std::string name = layer(buffer.def);
    os << "<rect x=\"" << f(x(buffer.start)) << "\" y=\""
       << f(y(offset + buffer.bytes)) << "\" width=\""
       << f(std::max(1.0, x(buffer.end + 1) - x(buffer.start)))
       << "\" height=\""
       << f(std::max(0.5, y(offset) - y(offset + buffer.bytes))) << "\" fill=\""
       << colourOf(name) << "\" stroke=\"#333\" stroke-width=\"0.3\"><title>"
       << escape(launchName(buffer.def)) << " in " << escape(name) << ", ops "
       << buffer.start << "-" << buffer.end << ", offset " << humanBytes(offset)
       << ", " << humanBytes(buffer.bytes) << "</title></rect>\n";
  }
  // The arena line 2 px wide: a full pixel row at any fractional height.
  os << "<line x1=\"" << f(left) << "\" x2=\"" << f(left + plotW) << "\" y1=\""
     << f(y(arenaBytes)) << "\" y2=\"" << f(y(arenaBytes))
     << "\" stroke=\"#c00\" stroke-width=\"2\" stroke-dasharray=\"6,3\"/>\n";
  os << "<line x1=\"" << f(x(peak.op + 0.5)) << "\" x2=\""
     << f(x(peak.op + 0.5)) << "\" y1=\"" << f(top) << "\" y2=\""
     << f(top + plotH) << "\" stroke=\"#000\" stroke-dasharray=\"2,3\"/>\n";
  // Legend.
  double lx = left + plotW + 20, ly = top + 10;
  auto entry = [&](llvm::StringRef swatch, const std::string &text) {
    os << swatch << "<text x=\"" << f(lx + 24) << "\" y=\"" << f(ly + 4)
       << "\">" << escape(text) << "</text>\n";
    ly += 18;
  };
  entry(("<line x1=\"" + num(lx) + "\" x2=\"" + num(lx + 18) + "\" y1=\"" +
         num(ly) + "\" y2=\"" + num(ly) +
         "\" stroke=\"#c00\" stroke-width=\"2\" stroke-dasharray=\"6,3\"/>"),
        "arena " + humanBytes(arenaBytes));
  entry(("<line x1=\"" + num(lx + 9) + "\" x2=\"" + num(lx + 9) + "\" y1=\"" +
         num(ly - 7) + "\" y2=\"" + num(ly + 7) +
         "\" stroke=\"#000\" stroke-dasharray=\"2,3\"/>"),
        "peak live " + humanBytes(peak.bytes) + " at op " +
            std::to_string(peak.op));
  ly += 6;
  os << "<text x=\"" << f(lx) << "\" y=\"" << f(ly + 4)
     << "\" font-weight=\"bold\">buffers by layer (bytes at the peak)"
        "</text>\n";
  ly += 18;
  for (size_t i = 0; i < ranked.size() && i < std::size(palette); ++i)
    entry(("<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 6) +
           "\" width=\"18\" height=\"12\" fill=\"" + palette[i] +
           "\" stroke=\"#333\" stroke-width=\"0.3\"/>"),
          ranked[i].second + "  " + humanBytes(-ranked[i].first));
  if (ranked.size() > std::size(palette))
    entry("<rect x=\"" + num(lx) + "\" y=\"" + num(ly - 6) +
              "\" width=\"18\" height=\"12\" fill=\"#c8c8c8\"/>",
          "other layers");
  os << "</svg>\n";
}

/// The precision policy in force: every op kind of the table, the
/// overridden ones marked.
static void writePrecision(llvm::raw_ostream &os, ModuleOp module,
                           const PrecisionPolicy &policy) {
  os << "<h2>Precision</h2>\n<p>" << escape(describePrecision(policy));
  if (policy.precision == Precision::FP32) {
    os << ": every op computes and stores in fp32.</p>\n";
    return;
  }
  unsigned casts = 0;
  if (auto forward = module.lookupSymbol<func::FuncOp>("forward"))
    forward.walk([&](tcc::CastOp) { ++casts; });
  os << ": " << casts << " casts in @forward. Op kinds not listed are low "
     << "(they compute in fp32 registers and round each result once).</p>\n"
     << "<table><tr><th>op</th><th>stores</th><th>why</th></tr>\n";
  auto row = [&](llvm::StringRef op, OpPrecision p, llvm::StringRef note) {
    os << "<tr><td>" << escape(op) << "</td><td>"
       << (p == OpPrecision::Low ? precisionName(policy.precision) : "fp32")
       << "</td><td>" << escape(note) << "</td></tr>\n";
  };
  for (const PolicyRow &r : defaultPolicyTable())
    row(r.op, opPrecision(policy, r.op),
        policy.overrides.count(r.op) ? "overridden (--precision-policy)"
                                     : r.note);
  for (const auto &entry : policy.overrides)
    if (llvm::none_of(defaultPolicyTable(), [&](const PolicyRow &r) {
          return r.op == entry.getKey();
        }))
      row(entry.getKey(), entry.getValue(), "overridden (--precision-policy)");
  os << "</table>\n";
}

/// Arena bytes live at each op of a planned one-block function.
static std::vector<int64_t> liveBytes(const BufferLiveness &live) {
  std::vector<int64_t> curve(std::max<int64_t>(1, live.numOps), 0);
  for (const Buffer &buffer : live.buffers)
    if (buffer.def && buffer.region == BufferRegion::Arena)
      for (int64_t i = std::max<int64_t>(0, buffer.start);
           i <= buffer.end && i < int64_t(curve.size()); ++i)
        curve[i] += buffer.bytes;
  return curve;
}

/// tcc-rematerialize's decisions (`tcc.remat` on @train_step) and the live
/// arena bytes of the step without and with the budget on one chart (x:
/// the position in each step, as the two have different op counts).
static LogicalResult writeMemoryBudget(llvm::raw_ostream &os,
                                       func::FuncOp trained,
                                       const BufferLiveness &after,
                                       ModuleOp unbudgeted) {
  auto remat = trained->getAttrOfType<DictionaryAttr>("tcc.remat");
  if (!remat || !unbudgeted)
    return success();
  auto get = [&](StringRef key) {
    auto a = remat.getAs<IntegerAttr>(key);
    return a ? a.getInt() : int64_t(0);
  };
  auto before = unbudgeted.lookupSymbol<func::FuncOp>("train_step");
  if (!before || before.isExternal())
    return success();
  FailureOr<BufferLiveness> live = computeBufferLiveness(before);
  if (failed(live))
    return failure();
  int64_t budget = get("budget"), fixed = get("fixed_bytes");
  int64_t extra = get("extra_flops"), total = get("step_flops");
  auto values = remat.getAs<ArrayAttr>("recomputed");
  os << "<h2>Memory budget</h2>\n<table><tr><th>budget</th><th>outside the "
     << "arena</th><th>arena before</th><th>arena after</th><th>planned "
     << "session</th><th>updates moved early / ops moved late</th><th>extra "
        "FLOPs per "
     << "step</th></tr>\n<tr><td class=\"n\">" << rt::groupedDigits(budget)
     << "</td><td class=\"n\">" << rt::groupedDigits(fixed) << "</td><td class=\"n\">"
     << rt::groupedDigits(get("arena_before")) << "</td><td class=\"n\">"
     << rt::groupedDigits(get("arena_after")) << "</td><td class=\"n\">"
     << rt::groupedDigits(fixed + get("arena_after")) << "</td><td class=\"n\">"
     << get("early_updates") << " / " << get("sunk_ops")
     << "</td><td class=\"n\">" << rt::groupedDigits(extra)
     << llvm::format(" (+%.2f%%)", total ? 100.0 * extra / total : 0.0)
     << "</td></tr></table>\n";
  if (int64_t interleaved = get("interleaved_ops"))
    os << "<p>The micro-batches' backward passes are interleaved by the "
       << "forward depth they differentiate (" << interleaved
       << " ops moved), so a weight's gradients are summed as they are "
          "made.</p>\n";
  if (int64_t blocked = get("blocked_gradients"))
    os << "<p>" << blocked
       << (blocked == 1 ? " weight gradient is" : " weight gradients are")
       << " made in " << get("gradient_blocks")
       << " row blocks, each applied to its rows of the parameter before the "
          "next block is made (nothing else fitted).</p>\n";
  if (int64_t segments = get("segments"))
    os << "<p>Chen's sqrt(N) segments (per-value choices did not fit): 1 in "
       << segments << " cuts of the forward kept as checkpoints, the rest "
       << "recomputed.</p>\n";
  os << "<p>Recomputed in the backward pass ("
     << (values ? values.size() : 0) << " ops):</p>\n<ul>\n";
  if (values)
    for (Attribute v : values)
      os << "<li><code>" << escape(llvm::cast<StringAttr>(v).getValue())
         << "</code></li>\n";
  os << "</ul>\n";

  std::vector<int64_t> curves[] = {liveBytes(*live), liveBytes(after)};
  const char *colors[] = {"#36c", "#c33"};
  const double width = 960, height = 300, left = 80, top = 20, bottom = 30;
  double plotW = width - left - 10, plotH = height - top - bottom;
  int64_t peak = 1;
  for (const std::vector<int64_t> &c : curves)
    for (int64_t b : c)
      peak = std::max(peak, b);
  double maxBytes = peak * 1.05;
  auto f = [](double v) { return llvm::format("%.1f", v); };
  auto y = [&](double b) { return top + plotH - b / maxBytes * plotH; };
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f(width)
     << "\" height=\"" << f(height) << "\" class=\"budget\">\n"
     << "<rect x=\"" << f(left) << "\" y=\"" << f(top) << "\" width=\""
     << f(plotW) << "\" height=\"" << f(plotH)
     << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  for (unsigned k = 0; k < 2; ++k) {
    const std::vector<int64_t> &c = curves[k];
    double last = double(std::max<size_t>(1, c.size() - 1));
    os << "<polyline fill=\"none\" stroke=\"" << colors[k]
       << "\" stroke-width=\"1.5\" points=\"";
    for (size_t i = 0; i < c.size(); ++i)
      os << f(left + plotW * double(i) / last) << "," << f(y(c[i])) << " ";
    os << "\"/>\n";
  }
  os << "<text x=\"" << f(left + 4) << "\" y=\"" << f(top + 14)
     << "\" font-size=\"12\" fill=\"" << colors[0]
     << "\">live arena bytes without the budget</text>\n<text x=\""
     << f(left + 4) << "\" y=\"" << f(top + 28) << "\" font-size=\"12\" fill=\""
     << colors[1] << "\">with the budget</text>\n<text x=\"4\" y=\""
     << f(y(peak)) << "\" font-size=\"12\">" << peak << " B</text>\n"
     << "<text x=\"4\" y=\"" << f(y(0)) << "\" font-size=\"12\">0 B</text>\n"
     << "</svg>\n";
  return success();
}

/// Pad-skipping and packed documents in @train_step: where the packed
/// order comes from, which launches run over the packed token rows (the
/// plan's token_rows) by model layer, where values enter and leave the
/// packed order, and the attention that reads the sequences' offsets.
/// The tcc op a launch runs: an exec.call's callee, an exec.fusion's root
/// (its result's op), else the op.
static Operation *rootOf(Operation *op) {
  if (auto call = llvm::dyn_cast<exec::CallOp>(op))
    return call.getCallee();
  if (auto fusion = llvm::dyn_cast<exec::FusionOp>(op))
    if (Operation *root = fusion.getBody().front().getTerminator()
                              ->getOperand(0)
                              .getDefiningOp())
      return root;
  return op;
}

/// `v` as the function sees it: a block argument of an exec.call's body is
/// the call's input.
static Value outside(Value v) {
  if (auto arg = llvm::dyn_cast<BlockArgument>(v))
    if (auto call = llvm::dyn_cast<exec::CallOp>(arg.getOwner()->getParentOp()))
      return call.getInputs()[arg.getArgNumber()];
  return v;
}

static void writePacking(llvm::raw_ostream &os, func::FuncOp func,
                         llvm::function_ref<std::string(Operation *)> layer) {
  Operation *index = nullptr;
  func.walk([&](Operation *op) {
    if (!index && llvm::isa<PackIndexOp, SegmentIndexOp>(op))
      index = op;
  });
  if (!index)
    return;
  bool documents = llvm::isa<SegmentIndexOp>(index);
  auto input = llvm::cast<RankedTensorType>(index->getOperand(0).getType());
  os << "<h2>" << (documents ? "Packed documents" : "Packed tokens")
     << "</h2>\n<p>";
  if (documents)
    os << "<code>tcc.segment_index</code> reads the documents of each row "
          "from <code>position_ids</code> ("
       << typeString(input)
       << "); every attention runs within its document (docs/"
          "pad-skipping.md#packed-documents).";
  else
    os << "<code>tcc.pack_index</code> packs the valid tokens of the key mask ("
       << typeString(input) << ", capacity "
       << input.getNumElements()
       << " tokens) at run time; the launches below run over the valid rows "
          "only (on CUDA over the smallest token bucket holding them).";
  os << "</p>\n";
  struct Row {
    int64_t first = 0, packed = 0, all = 0;
  };
  std::map<std::string, Row> rows;
  int64_t position = 0, attention = 0;
  SmallVector<Operation *> entries, exits;
  for (Operation &op : func.getBody().front()) {
    std::string name = layer(&op);
    if (!rows.count(name))
      rows[name].first = position;
    ++position;
    Operation *root = rootOf(&op);
    if (llvm::isa<PackOp>(root))
      entries.push_back(&op);
    if (llvm::isa<UnpackOp>(root))
      exits.push_back(&op);
    Value mask;
    if (auto a = llvm::dyn_cast<AttentionOp>(root))
      mask = a.getKeyMask();
    else if (auto g = llvm::dyn_cast<AttentionGradOp>(root))
      mask = g.getKeyMask();
    else if (auto g = llvm::dyn_cast<AttentionQkvGradOp>(root))
      mask = g.getKeyMask();
    if (mask)
      if (Operation *def = outside(mask).getDefiningOp();
          def && rootOf(def) == index)
        ++attention;
    if (!launchesKernel(&op))
      continue;
    ++rows[name].all;
    if (root->hasAttr(kTokenRowsAttr))
      ++rows[name].packed;
  }
  int64_t packed = 0, all = 0;
  for (const auto &[name, row] : rows)
    packed += row.packed, all += row.all;
  os << "<p>" << attention << " attention calls read the sequences' offsets; "
     << packed << " of " << all
     << " launches run over packed token rows.</p>\n";
  if (packed) {
    std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
    llvm::stable_sort(sorted, [](const auto &a, const auto &b) {
      return a.second.first < b.second.first;
    });
    os << "<table><tr><th>layer</th><th>launches over packed rows</th>"
       << "<th>launches</th></tr>\n";
    for (const auto &[name, row] : sorted)
      if (row.all)
        os << "<tr><td>" << escape(name) << "</td><td class=\"n\">"
           << row.packed << "</td><td class=\"n\">" << row.all
           << "</td></tr>\n";
    os << "</table>\n";
  }
  for (auto [title, ops] : {std::pair{"Into packed order (tcc.pack)", &entries},
                            {"Out of packed order (tcc.unpack)", &exits}}) {
    if (ops->empty())
      continue;
    os << "<h3>" << title << "</h3>\n<ul>\n";
    for (Operation *op : *ops) {
      Value v = op->getOperand(0);
      Operation *def = v.getDefiningOp();
      os << "<li><code>" << typeString(v.getType()) << "</code> from "
         << (def ? escape(launchName(def)) + " (" + escape(layer(def)) + ")"
                 : std::string("an input"))
         << "</li>\n";
    }
    os << "</ul>\n";
  }
}

LogicalResult writeReport(ModuleOp trained, ModuleOp lowered,
                          ArrayRef<ReportStage> stages,
                          const PrecisionPolicy &policy,
                          const std::string &path, ModuleOp unbudgeted) {
  Location flag = UnknownLoc::get(trained.getContext());
  std::error_code ec;
  llvm::ToolOutputFile out(path, ec, llvm::sys::fs::OF_Text);
  if (ec)
    return emitError(flag) << "--report: cannot write '" << path
                           << "': " << ec.message();

  auto before = trained.lookupSymbol<func::FuncOp>("train_step");
  auto func = lowered.lookupSymbol<func::FuncOp>("train_step");
  if (!before || before.isExternal() || !func || func.isExternal())
    return emitError(flag) << "--report: the module has no @train_step";
  int64_t kernelsBefore = countKernels(before);
  int64_t kernelsAfter = countKernels(func);
  int64_t arenaBytes = 0;
  if (auto attr = func->getAttrOfType<IntegerAttr>(kArenaBytesAttr))
    arenaBytes = attr.getInt();
  // The lowered module verified, so this fails only with an error at the
  // op whose buffers make no sense.
  FailureOr<BufferLiveness> live = computeBufferLiveness(func);
  if (failed(live))
    return failure();

  int64_t flops = 0, bytes = 0;
  for (Operation &op : func.getBody().front())
    if (launchesKernel(&op)) {
      flops += launchFlops(&op);
      bytes += launchBytes(&op);
    }

  llvm::raw_ostream &os = out.os();
  os << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
     << "<title>tcc compile report</title>\n<style>\n"
     << "body{font-family:sans-serif;margin:2em;color:#222}\n"
     << "table{border-collapse:collapse;margin:1em 0}\n"
     << "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}\n"
     << "th{background:#eee}td.n{text-align:right}\n"
     << "code{font-size:90%}\n</style></head><body>\n"
     << "<h1>tcc compile report</h1>\n";

  std::string model;
  if (auto name = llvm::dyn_cast<NameLoc>(trained.getLoc()))
    model = name.getName().str();
  auto layer = [&](Operation *op) { return layerOf(op, model); };
  LivePeak peak = livePeak(*live);

  // By model layer: the launches, their cost, and the arena buffers they
  // define, in the order the layers first run.
  struct LayerRow {
    int64_t first = 0, launches = 0, flops = 0, bytesMoved = 0, defined = 0,
            atPeak = 0;
  };
  std::map<std::string, LayerRow> layers;
  int64_t index = 0;
  for (Operation &op : func.getBody().front()) {
    std::string name = layer(&op);
    if (!layers.count(name))
      layers[name].first = index;
    ++index;
    if (!launchesKernel(&op))
      continue;
    LayerRow &row = layers[name];
    ++row.launches;
    row.flops += launchFlops(&op);
    row.bytesMoved += launchBytes(&op);
  }
  for (const Buffer &buffer : live->buffers)
    if (planned(buffer)) {
      LayerRow &row = layers[layer(buffer.def)];
      row.defined += buffer.bytes;
      if (buffer.start <= peak.op && peak.op <= buffer.end)
        row.atPeak += buffer.bytes;
    }
  std::vector<std::pair<std::string, LayerRow>> layerRows(layers.begin(),
                                                          layers.end());
  llvm::stable_sort(layerRows, [](const auto &a, const auto &b) {
    return a.second.first < b.second.first;
  });
  os << "<p>@train_step per step: " << humanFlops(flops) << ", "
     << humanBytes(bytes) << " moved, " << kernelsAfter
     << " launches after fusion (" << kernelsBefore << " before); arena "
     << humanBytes(arenaBytes) << ", live buffers peak at "
     << humanBytes(peak.bytes) << ". Model: <code>" << escape(model)
     << "</code>.</p>\n";
  os << "<h2>By model layer</h2>\n<p>Each launch of @train_step (forward, "
     << "backward and optimizer) under the layer of the ONNX node it comes "
     << "from (PyTorch's module path, e.g. <code>/h.0/attn</code>); "
     << "<i>(whole model)</i> is what belongs to no one node, such as the "
     << "optimizer's updates.</p>\n<table><tr><th>layer</th><th>launches"
     << "</th><th>FLOPs</th><th>bytes moved</th><th>arena buffers it "
     << "defines</th><th>live at the peak</th></tr>\n";
  for (const auto &[name, row] : layerRows) {
    if (!row.launches && !row.defined)
      continue;
    os << "<tr><td>" << escape(name) << "</td><td class=\"n\">" << row.launches
       << "</td><td class=\"n\">" << humanFlops(row.flops)
       << "</td><td class=\"n\">" << humanBytes(row.bytesMoved)
       << "</td><td class=\"n\">" << humanBytes(row.defined)
       << "</td><td class=\"n\">" << humanBytes(row.atPeak) << "</td></tr>\n";
  }
  os << "</table>\n";

  os << "<h2>Memory plan</h2>\n<p>Arena: " << humanBytes(arenaBytes) << " ("
     << rt::groupedDigits(arenaBytes) << " bytes) over " << live->numOps
     << " ops of @train_step; live buffers peak at " << humanBytes(peak.bytes)
     << " at op " << peak.op << " ("
     << escape(launchName(&*std::next(func.getBody().front().begin(), peak.op)))
     << ").</p>\n";
  writeTimeline(os, *live, arenaBytes, peak, layer);

  // The buffers live at the peak, largest first.
  std::vector<const Buffer *> atPeak;
  for (const Buffer &buffer : live->buffers)
    if (planned(buffer) && buffer.start <= peak.op && peak.op <= buffer.end)
      atPeak.push_back(&buffer);
  llvm::stable_sort(atPeak, [](const Buffer *a, const Buffer *b) {
    return a->bytes > b->bytes;
  });
  os << "<h3>Largest buffers at the peak</h3>\n<table><tr><th>size</th>"
     << "<th>made by</th><th>layer</th><th>type</th><th>live ops</th></tr>\n";
  for (const Buffer *buffer : llvm::ArrayRef(atPeak).take_front(10))
    os << "<tr><td class=\"n\">" << humanBytes(buffer->bytes) << "</td><td>"
       << escape(launchName(buffer->def)) << "</td><td>"
       << escape(layer(buffer->def)) << "</td><td><code>"
       << typeString(buffer->value.getType()) << "</code></td><td>"
       << buffer->start << "&ndash;" << buffer->end << "</td></tr>\n";
  os << "</table>\n<p>" << atPeak.size() << " buffers live at op " << peak.op
     << ".</p>\n";

  os << "<h2>Estimated cost per step</h2>\n<table><tr><th>FLOPs</th>"
     << "<th>bytes moved</th></tr>\n<tr><td class=\"n\">" << humanFlops(flops)
     << " (" << rt::groupedDigits(flops) << ")</td><td class=\"n\">"
     << humanBytes(bytes) << " (" << rt::groupedDigits(bytes)
     << ")</td></tr></table>\n"
     << "<p>FLOPs: each op's count (<code>tcc::opFlops</code>, the cost "
        "model of docs/architecture.md): 2&middot;M&middot;N&middot;K per "
        "matmul/gemm, 2&middot;(D+Dv) per query-key pair of attention "
        "(2&middot;(3D+2Dv) for its gradient; halved when causal), 5 per "
        "result element of the other library calls, 1 per input element of "
        "a reduction, 0 for layout ops, 1 per result element otherwise. "
        "Bytes moved: operands plus results of every launch.</p>\n";
  os << "<h2>Pipeline stages</h2>\n<table><tr><th>stage</th><th>function"
     << "</th><th>ops</th><th>note</th></tr>\n";
  for (const ReportStage &stage : stages)
    os << "<tr><td>" << escape(stage.name) << "</td><td>"
       << escape(stage.function) << "</td><td class=\"n\">" << stage.ops
       << "</td><td>" << escape(stage.note) << "</td></tr>\n";
  os << "</table>\n";

  writePrecision(os, trained, policy);
  writePacking(os, func, layer);

  os << "<h2>Kernels per step</h2>\n<table><tr><th>before fusion</th>"
     << "<th>after fusion</th></tr>\n<tr><td class=\"n\">" << kernelsBefore
     << "</td><td class=\"n\">" << kernelsAfter << "</td></tr></table>\n";

  os << "<h2>Fusion groups</h2>\n<table><tr><th>name</th><th>result</th>"
     << "<th>ops</th></tr>\n";
  unsigned groups = 0;
  func.walk([&](exec::FusionOp fusion) {
    ++groups;
    os << "<tr><td>" << escape(fusion.getName()) << "</td><td><code>"
       << typeString(fusion.getResult().getType());
    for (Value stored : fusion.getStores())
      os << ", stores " << typeString(stored.getType());
    os << "</code></td><td>";
    llvm::ListSeparator sep(", ");
    for (Operation &inner : fusion.getBody().front())
      if (!llvm::isa<exec::YieldOp>(inner))
        os << sep << escape(inner.getName().getStringRef());
    os << "</td></tr>\n";
  });
  os << "</table>\n<p>" << groups << " fusion groups.</p>\n";

  if (failed(writeMemoryBudget(os, before, *live, unbudgeted)))
    return failure();
  os << "</body></html>\n";
  if (std::error_code written = commitOutput(out))
    return emitError(flag) << "--report: cannot write '" << path
                           << "': " << written.message();
  return success();
}

} // namespace tcc::report
