// The HTML report of `tcc compile --report`; see Report.h.
#include "tcc/Report/Report.h"

#include "exec/ExecOps.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Fuse.h"
#include "exec/MemoryPlan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <map>

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

/// Contraction length of a matmul/gemm operand pair.
static int64_t contraction(Value lhs, bool transposed) {
  auto shape = llvm::cast<RankedTensorType>(lhs.getType()).getShape();
  return transposed ? shape[shape.size() - 2] : shape.back();
}

static int64_t attentionFlops(Value query, Value key) {
  auto q = llvm::cast<RankedTensorType>(query.getType()).getShape();
  auto k = llvm::cast<RankedTensorType>(key.getType()).getShape();
  // 4 * B * H * Tq * Tk * D: q @ k^T and p @ v.
  return 4 * q[0] * q[1] * q[2] * k[2] * q[3];
}

/// What a launch runs: a library call's op, else the op itself.
static llvm::StringRef launchName(Operation *op) {
  if (auto call = llvm::dyn_cast<exec::CallOp>(op))
    return call.getCallee()->getName().getStringRef();
  return op->getName().getStringRef();
}

/// Estimated FLOPs of one launch.
static int64_t launchFlops(Operation *op) {
  if (auto mm = llvm::dyn_cast<MatmulOp>(op))
    return 2 * numElements(mm.getType()) *
           contraction(mm.getLhs(), mm.getTransposeLhs());
  if (auto gemm = llvm::dyn_cast<GemmOp>(op))
    return 2 * numElements(gemm.getType()) *
           contraction(gemm.getA(), gemm.getTransposeA());
  if (auto att = llvm::dyn_cast<AttentionOp>(op))
    return attentionFlops(att.getQuery(), att.getKey());
  if (auto grad = llvm::dyn_cast<AttentionGradOp>(op))
    return 2 * attentionFlops(grad.getQuery(), grad.getKey());
  if (auto call = llvm::dyn_cast<exec::CallOp>(op))
    return launchFlops(call.getCallee());
  if (auto fusion = llvm::dyn_cast<exec::FusionOp>(op)) {
    int64_t flops = 0;
    fusion.getBody().walk([&](Operation *inner) {
      if (!llvm::isa<ConstantOp, exec::YieldOp>(inner))
        flops += launchFlops(inner);
    });
    return flops;
  }
  int64_t flops = 0;
  for (Type type : op->getResultTypes())
    flops += numElements(type);
  return flops;
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

static std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

/// The arena offset the plan gave result `resultNumber` of `op`, or -1.
static int64_t plannedOffset(Operation *op, unsigned resultNumber) {
  if (auto offset = op->getAttrOfType<IntegerAttr>(kOffsetAttr))
    return offset.getInt();
  if (auto offsets = op->getAttrOfType<DenseI64ArrayAttr>(kOffsetsAttr))
    return offsets[resultNumber];
  return -1;
}

/// The memory plan as an SVG: x is the op index, y the arena offset; one
/// rectangle per arena buffer from its def to its last use.
static void writeTimeline(llvm::raw_ostream &os, const BufferLiveness &live,
                          int64_t arenaBytes) {
  const double width = 960, height = 400, left = 80, top = 20, bottom = 30;
  double plotW = width - left - 10, plotH = height - top - bottom;
  double numOps = std::max<int64_t>(1, live.numOps);
  double maxBytes = std::max<int64_t>(1, arenaBytes) * 1.05;
  auto x = [&](double i) { return left + i / numOps * plotW; };
  auto f = [](double v) { return llvm::format("%.1f", v); };
  auto y = [&](double b) { return top + plotH - b / maxBytes * plotH; };
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << f(width)
     << "\" height=\"" << f(height) << "\" class=\"timeline\">\n";
  os << "<rect x=\"" << f(left) << "\" y=\"" << f(top) << "\" width=\"" << f(plotW)
     << "\" height=\"" << f(plotH) << "\" fill=\"#fafafa\" stroke=\"#999\"/>\n";
  unsigned n = 0;
  for (const Buffer &buffer : live.buffers) {
    if (!buffer.def || buffer.region != BufferRegion::Arena)
      continue;
    int64_t offset = plannedOffset(buffer.def, buffer.resultNumber);
    if (offset < 0)
      continue;
    double hue = (n++ * 47) % 360;
    os << "<rect x=\"" << f(x(buffer.start)) << "\" y=\""
       << f(y(offset + buffer.bytes)) << "\" width=\""
       << f(std::max(1.0, x(buffer.end + 1) - x(buffer.start))) << "\" height=\""
       << f(std::max(0.5, y(offset) - y(offset + buffer.bytes)))
       << "\" fill=\"hsl(" << f(hue) << ",60%,60%)\" stroke=\"#333\" "
       << "stroke-width=\"0.3\"><title>"
       << escape(launchName(buffer.def)) << " ops "
       << buffer.start << "-" << buffer.end << ", offset " << offset << ", "
       << buffer.bytes << " bytes</title></rect>\n";
  }
  os << "<line x1=\"" << f(left) << "\" x2=\"" << f(left + plotW) << "\" y1=\""
     << f(y(arenaBytes)) << "\" y2=\"" << f(y(arenaBytes))
     << "\" stroke=\"#c00\" stroke-dasharray=\"6,3\"/>\n";
  os << "<text x=\"" << f(left + 4) << "\" y=\"" << f(y(arenaBytes) - 4)
     << "\" fill=\"#c00\" font-size=\"12\">peak " << arenaBytes
     << " bytes</text>\n";
  os << "<text x=\"" << f(left) << "\" y=\"" << f(height - 8)
     << "\" font-size=\"12\">op 0</text><text x=\"" << f(left + plotW - 60)
     << "\" y=\"" << f(height - 8) << "\" font-size=\"12\">op "
     << live.numOps - 1 << "</text>\n";
  os << "<text x=\"4\" y=\"" << f(y(0)) << "\" font-size=\"12\">0 B</text>\n";
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
     << "session</th><th>updates moved early</th><th>extra FLOPs per "
     << "step</th></tr>\n<tr><td class=\"n\">" << withCommas(budget)
     << "</td><td class=\"n\">" << withCommas(fixed) << "</td><td class=\"n\">"
     << withCommas(get("arena_before")) << "</td><td class=\"n\">"
     << withCommas(get("arena_after")) << "</td><td class=\"n\">"
     << withCommas(fixed + get("arena_after")) << "</td><td class=\"n\">"
     << get("early_updates") << "</td><td class=\"n\">" << withCommas(extra)
     << llvm::format(" (+%.2f%%)", total ? 100.0 * extra / total : 0.0)
     << "</td></tr></table>\n<p>Recomputed in the backward pass ("
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

  os << "<h2>Pipeline stages</h2>\n<table><tr><th>stage</th><th>function"
     << "</th><th>ops</th><th>note</th></tr>\n";
  for (const ReportStage &stage : stages)
    os << "<tr><td>" << escape(stage.name) << "</td><td>"
       << escape(stage.function) << "</td><td class=\"n\">" << stage.ops
       << "</td><td>" << escape(stage.note) << "</td></tr>\n";
  os << "</table>\n";

  writePrecision(os, trained, policy);

  os << "<h2>Kernels per step</h2>\n<table><tr><th>before fusion</th>"
     << "<th>after fusion</th></tr>\n<tr><td class=\"n\">" << kernelsBefore
     << "</td><td class=\"n\">" << kernelsAfter << "</td></tr></table>\n";

  os << "<h2>Fusion groups</h2>\n<table><tr><th>name</th><th>result</th>"
     << "<th>ops</th></tr>\n";
  unsigned groups = 0;
  func.walk([&](exec::FusionOp fusion) {
    ++groups;
    os << "<tr><td>" << escape(fusion.getName()) << "</td><td><code>"
       << typeString(fusion.getType()) << "</code></td><td>";
    llvm::ListSeparator sep(", ");
    for (Operation &inner : fusion.getBody().front())
      if (!llvm::isa<exec::YieldOp>(inner))
        os << sep << escape(inner.getName().getStringRef());
    os << "</td></tr>\n";
  });
  os << "</table>\n<p>" << groups << " fusion groups.</p>\n";

  os << "<h2>Memory plan</h2>\n<p>Arena: " << arenaBytes << " bytes ("
     << withCommas(arenaBytes) << ") over " << live->numOps
     << " ops of @train_step.</p>\n";
  writeTimeline(os, *live, arenaBytes);
  if (failed(writeMemoryBudget(os, before, *live, unbudgeted)))
    return failure();

  os << "<h2>Estimated cost per step</h2>\n<table><tr><th>FLOPs</th>"
     << "<th>bytes moved</th></tr>\n<tr><td class=\"n\">" << flops
     << " (" << withCommas(flops) << ")</td><td class=\"n\">" << bytes
     << " (" << withCommas(bytes) << ")</td></tr></table>\n"
     << "<p>FLOPs: 2&middot;M&middot;N&middot;K per matmul/gemm, "
     << "4&middot;B&middot;H&middot;Tq&middot;Tk&middot;D per attention (2&times; "
     << "for its gradient), 1 per element otherwise. Bytes moved: operands "
     << "plus results of every launch.</p>\n</body></html>\n";
  out.keep();
  return success();
}

} // namespace tcc::report
