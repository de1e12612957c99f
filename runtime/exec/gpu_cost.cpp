//===- gpu_cost.cpp - `tcc inspect --gpu`: a per-step GPU cost model ------===//

#include "exec/gpu_cost.h"

#include "plan/calls.h"
#include "plan/library_ops.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <map>
#include <set>
#include <vector>

namespace tcc::rt {

namespace {

// Bandwidth: a large device-to-device copy counting bytes read and written;
// bf16: an 8192^3 bf16 matrix product on random data; TF32: the same in f32
// with TF32 allowed (test/bench/gpt_bench.py's GEMM rate); FP32 FMA: the
// datasheet's. Launch costs are leads, not measured per kernel. iteration:
// GPT-2 124M's 8192-row bias gradients with one thread per output took 33
// ns per row on an H200 (270 us for 8192 rows, 2026-11-26), the loads the
// compiler keeps in flight hiding most of a memory latency.
const GpuSpec kSpecs[] = {
    {"h100",
     "NVIDIA H100 SXM 80 GB: 132 SMs; 3.0 TB/s copy, 798 TFLOP/s bf16 "
     "measured here (2026-11-13); TF32 as the H200's, FP32 FMA the "
     "datasheet's 67 TFLOP/s",
     132, 3.0e12, 798e12, 416e12, 67e12, 1.0e-6, 4.0e-6, 33e-9},
    {"h200",
     "NVIDIA H200 SXM 141 GB: 132 SMs; 4.3 TB/s copy, 790 TFLOP/s bf16, "
     "416 TFLOP/s TF32 measured here (2026-10-28, 2026-11-26), FP32 FMA "
     "the datasheet's 67 TFLOP/s",
     132, 4.3e12, 790e12, 416e12, 67e12, 1.0e-6, 4.0e-6, 33e-9},
    {"a100",
     "NVIDIA A100 SXM 80 GB: 108 SMs; the datasheet's 2.0 TB/s, 312 "
     "TFLOP/s bf16, 156 TFLOP/s TF32, 19.5 TFLOP/s FP32 (not measured "
     "here)",
     108, 2.0e12, 312e12, 156e12, 19.5e12, 1.0e-6, 4.0e-6, 40e-9},
};

/// The fraction of its roofline time each family of steps reached on an
/// H200 (GPT-2 124M, batch 8 x 1024, 2026-11-26: the measured profile over
/// this model's roofline), for 16-bit and for f32 operands (TF32 GEMMs, the
/// FMA attention); the bandwidth/FLOP term of a step is divided by it. The
/// same software on every device, so one table (16-bit attention refitted
/// 2026-11-27 to the kernels with the unmasked-tile path: 7.68 ms measured
/// for the 24 attention steps). Generated kernels: the
/// elementwise and layout kernels (the serial-loop term of reductions is
/// modelled apart and not scaled).
struct Efficiency {
  const char *family;
  double half, f32;
};
const Efficiency kEfficiency[] = {
    {"GEMM", 0.84, 0.65},        {"optimizer", 0.75, 0.75},
    {"generated kernels", 0.40, 0.40}, {"embedding", 0.35, 0.55},
    {"cross_entropy", 0.30, 0.50}, {"layer_norm", 0.15, 0.25},
    {"attention", 0.14, 0.23},
};

double efficiency(const std::string &family, bool half) {
  for (const Efficiency &e : kEfficiency)
    if (family == e.family)
      return half ? e.half : e.f32;
  return 1.0;
}

constexpr int64_t kThreadsPerSm = 2048; // resident threads of an SM
constexpr int64_t kBlockSize = 256;     // the CUDA backend's default block
constexpr int64_t kLongLoop = 64;       // a serial loop longer is flagged

struct StepCost {
  size_t index = 0;
  std::string kind, name, family;
  int64_t blocks = 0, threads = 0, loop = 0;
  double bytes = 0, flops = 0;
  double roofline = 0; ///< max(bytes / bandwidth, FLOPs / rate, loop term)
  double seconds = 0;  ///< at the family's measured efficiency
  std::string flag;
  /// A kernel with less work than one wave (every element it reads or
  /// writes would fit a thread of its own): no launch fills the device, its
  /// launch is its cost. Not flagged; counted apart.
  bool small = false;
};

bool isHalf(data::DType t) {
  return t == data::DType::BF16 || t == data::DType::F16;
}

int64_t dim(const Value &v, int fromEnd) {
  int64_t r = int64_t(v.shape.size());
  return r >= fromEnd ? v.shape[size_t(r - fromEnd)] : 1;
}

/// The FLOPs of a library call and whether they run on matrix units.
double callFlops(const Function &fn, const Step &s, bool &matrix) {
  auto in = [&](size_t i) -> const Value * {
    return i < s.inputs.size() && s.inputs[i] >= 0 ? &fn.values[size_t(s.inputs[i])]
                                                   : nullptr;
  };
  const Value *out = s.outputs.empty() || s.outputs[0] < 0
                         ? nullptr
                         : &fn.values[size_t(s.outputs[0])];
  matrix = false;
  double elements = out ? double(out->elements) : 0;
  switch (s.op) {
  case Op::Matmul: {
    matrix = true;
    int64_t k = s.attrs.transposeLhs ? dim(*in(0), 2) : dim(*in(0), 1);
    return 2.0 * elements * double(k);
  }
  case Op::Gemm: {
    matrix = true;
    int64_t k = s.attrs.transposeA ? dim(*in(0), 2) : dim(*in(0), 1);
    return 2.0 * elements * double(k);
  }
  case Op::Attention:
  case Op::AttentionGrad:
  case Op::AttentionQkvGrad: {
    matrix = true;
    const AttentionCall a = attentionCall(fn, s);
    double fwd = 2.0 * double(a.batch * a.heads) * double(a.tq) *
                 double(a.tk) * double(a.d + a.dv) *
                 (s.attrs.causal ? 0.5 : 1.0);
    // The backward recomputes the forward, then S, dP, dQ (dQ kernel) and
    // S, dP, dV, dK (dK/dV kernel): 9 products of the forward's 2 each.
    return s.op == Op::Attention ? fwd : 4.5 * fwd;
  }
  case Op::Conv:
  case Op::ConvGrad: {
    matrix = true;
    const Value &w = *in(1); // [Cout, Cin / group, kh, kw]
    double perOut = double(w.elements) / double(std::max<int64_t>(1, w.shape[0]));
    double conv = 2.0 * double(s.op == Op::Conv ? elements
                                                : double(in(2)->elements)) *
                  perOut;
    return s.op == Op::Conv ? conv : 2.0 * conv; // dX and dW
  }
  default: {
    double n = 0;
    for (int64_t id : s.inputs)
      if (id >= 0)
        n += double(fn.values[size_t(id)].elements);
    return n;
  }
  }
}

StepCost stepCost(const Artifact &art, const Function &fn, size_t i,
                  const GpuSpec &gpu, bool tf32) {
  const Step &s = fn.steps[i];
  StepCost c;
  c.index = i;
  std::set<int64_t> ids(s.inputs.begin(), s.inputs.end());
  ids.insert(s.outputs.begin(), s.outputs.end());
  for (int64_t id : ids)
    if (id >= 0)
      c.bytes += double(fn.values[size_t(id)].bytes);
  double rate = gpu.fp32;
  if (s.kind == Step::Collective) {
    c.kind = "coll";
    c.name = collectiveName(s.collective);
    c.family = kCollectiveFamily;
    c.seconds = 0; // one rank here; NCCL's time is not modelled
    return c;
  }
  if (s.kind == Step::Call) {
    bool matrix = false;
    c.kind = "call";
    c.name = opName(s.op);
    c.family = opSchema(s.op).family;
    c.flops = callFlops(fn, s, matrix);
    const Value &first = fn.values[size_t(s.inputs.at(0))];
    bool half = isHalf(first.dtype);
    if (matrix && half)
      rate = gpu.bf16;
    else if (matrix && tf32 &&
             std::strcmp(opSchema(s.op).family, "attention") != 0)
      rate = gpu.tf32; // f32 attention stays on the FMA units
    c.roofline = std::max(c.bytes / gpu.bandwidth, c.flops / rate);
    c.seconds = c.roofline / efficiency(c.family, half);
    return c;
  }
  c.kind = "kernel";
  c.name = s.symbol;
  c.family = kKernelFamily;
  int64_t maxIn = 0;
  for (int64_t id : s.inputs)
    if (id >= 0) {
      maxIn = std::max(maxIn, fn.values[size_t(id)].elements);
      c.flops += double(fn.values[size_t(id)].elements);
    }
  const KernelSignature *k = art.kernel(s.symbol);
  int64_t rows = s.elements > 0 && maxIn > s.elements ? maxIn / s.elements : 1;
  if (k && k->outputsPerBlock > 0) {
    // rowSlices blocks per outputsPerBlock outputs, a slice of the rows
    // each, its warps splitting the slice's rows.
    c.blocks = (s.elements + k->outputsPerBlock - 1) / k->outputsPerBlock *
               k->rowSlices;
    c.threads = c.blocks * k->blockThreads;
    // The threads an output's reduction is split over (a column
    // reduction's 32 warps, 32 outputs a block of 1024; a row reduction's
    // warp or block) and, for a column reduction, its slice of the rows.
    int64_t perOutput = std::max<int64_t>(1, k->blockThreads / k->outputsPerBlock);
    int64_t sliceRows = (rows + k->rowSlices - 1) / k->rowSlices;
    c.loop = (sliceRows + perOutput - 1) / perOutput;
  } else {
    c.blocks = (s.elements + kBlockSize - 1) / kBlockSize;
    c.threads = s.elements;
    c.loop = rows;
  }
  double streaming = std::max(c.bytes / gpu.bandwidth, c.flops / rate);
  double loopTime = c.loop > 1 ? double(c.loop) * gpu.iteration : 0.0;
  c.roofline = std::max(streaming, loopTime);
  c.seconds = std::max(streaming / efficiency(c.family, true), loopTime);
  const int64_t wave = int64_t(gpu.sms) * kThreadsPerSm;
  const int64_t work = std::max(s.elements, maxIn);
  char why[160] = "";
  if (c.loop > kLongLoop)
    std::snprintf(why, sizeof why, "serial loop of %lld",
                  static_cast<long long>(c.loop));
  else if (c.threads < wave && work >= wave)
    std::snprintf(why, sizeof why, "%lld threads, under one wave (%lld)",
                  static_cast<long long>(c.threads),
                  static_cast<long long>(wave));
  c.flag = why;
  c.small = c.flag.empty() && work < wave;
  return c;
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s * 1e3);
  return b;
}

std::string us(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", s * 1e6);
  return b;
}

std::string si(double v) {
  const char *unit[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (v >= 1000 && u < 4) {
    v /= 1000;
    ++u;
  }
  char b[32];
  std::snprintf(b, sizeof b, u ? "%.1f%s" : "%.0f%s", v, unit[u]);
  return b;
}

void printFunction(const Artifact &art, const Function &fn, const GpuSpec &gpu,
                   bool tf32, std::ostream &out) {
  std::vector<StepCost> steps;
  for (size_t i = 0; i < fn.steps.size(); ++i)
    steps.push_back(stepCost(art, fn, i, gpu, tf32));
  double total = 0, roofline = 0;
  int64_t launches = 0;
  std::map<std::string, std::pair<double, int>> families;
  for (const StepCost &c : steps) {
    total += c.seconds;
    roofline += c.roofline;
    launches += c.kind != "coll";
    families[c.family].first += c.seconds;
    families[c.family].second += 1;
  }
  double graphs = total + double(launches) * gpu.launchGraph;
  double eager = total + double(launches) * gpu.launchEager;
  out << "\n" << fn.name << ": " << fn.steps.size() << " steps, predicted "
      << ms(graphs) << " ms with CUDA graphs, " << ms(eager)
      << " ms launched one by one";
  // Tokens: the first integer input (token ids, labels) counts them.
  for (const TensorDesc &t : fn.inputs)
    if (t.dtype == data::DType::I64 || t.dtype == data::DType::I32) {
      char b[96];
      std::snprintf(b, sizeof b, "; %lld tokens (%s): %s tokens/s",
                    static_cast<long long>(t.elements), t.name.c_str(),
                    si(double(t.elements) / graphs).c_str());
      out << b;
      break;
    }
  out << "\n";
  std::vector<std::pair<std::string, std::pair<double, int>>> order(
      families.begin(), families.end());
  std::stable_sort(order.begin(), order.end(), [](auto &a, auto &b) {
    return a.second.first > b.second.first;
  });
  char line[256];
  std::snprintf(line, sizeof line, "  %-20s %10s %7s %6s\n", "family", "ms",
                "% step", "count");
  out << line;
  for (auto &[family, t] : order) {
    std::snprintf(line, sizeof line, "  %-20s %10s %6.1f%% %6d\n",
                  family.c_str(), ms(t.first).c_str(),
                  total > 0 ? 100 * t.first / total : 0.0, t.second);
    out << line;
  }
  std::snprintf(line, sizeof line, "  %-20s %10s (+ %lld launches: %s ms "
                "with graphs; the bare roofline %s ms)\n", "sum of the steps",
                ms(total).c_str(), static_cast<long long>(launches),
                ms(double(launches) * gpu.launchGraph).c_str(),
                ms(roofline).c_str());
  out << line;
  int flagged = 0;
  std::map<std::string, int> flaggedSymbols;
  for (const StepCost &c : steps)
    if (!c.flag.empty()) {
      ++flagged;
      ++flaggedSymbols[c.name];
    }
  out << "  generated kernels that cannot fill the device: " << flagged
      << " launches of " << flaggedSymbols.size() << " kernels\n";
  int small = 0;
  double smallSeconds = 0;
  for (const StepCost &c : steps)
    if (c.small) {
      ++small;
      smallSeconds += c.seconds + gpu.launchGraph;
    }
  out << "  launch-bound kernels (less work than one wave, none can fill it): "
      << small << " launches, " << us(smallSeconds)
      << " us with graphs\n";
  out << "  steps (grid x 256 threads, or the kernel's block; loop: elements "
         "a thread sums serially)\n";
  std::snprintf(line, sizeof line, "  %5s  %-6s %-20s %9s %11s %5s %9s %9s %9s  %s\n",
                "step", "kind", "name", "blocks", "threads", "loop", "bytes",
                "FLOPs", "us", "flag");
  out << line;
  for (const StepCost &c : steps) {
    std::string blocks = c.kind == "kernel" ? std::to_string(c.blocks) : "-";
    std::string threads = c.kind == "kernel" ? std::to_string(c.threads) : "-";
    std::string loop = c.kind == "kernel" ? std::to_string(c.loop) : "-";
    std::snprintf(line, sizeof line,
                  "  %5zu  %-6s %-20s %9s %11s %5s %9s %9s %9s  %s\n", c.index,
                  c.kind.c_str(), c.name.c_str(), blocks.c_str(),
                  threads.c_str(), loop.c_str(), si(c.bytes).c_str(),
                  si(c.flops).c_str(), us(c.seconds).c_str(),
                  c.small ? "(launch-bound)" : c.flag.c_str());
    out << line;
  }
}

} // namespace

const GpuSpec *findGpuSpec(const std::string &name) {
  for (const GpuSpec &s : kSpecs)
    if (name == s.name)
      return &s;
  return nullptr;
}

std::string gpuSpecNames() {
  std::string out;
  for (const GpuSpec &s : kSpecs)
    out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

std::vector<double> gpuStepSeconds(const Artifact &art, const Function &fn,
                                   const GpuSpec &gpu, bool tf32) {
  std::vector<double> seconds;
  for (size_t i = 0; i < fn.steps.size(); ++i) {
    StepCost c = stepCost(art, fn, i, gpu, tf32);
    seconds.push_back(c.kind == "coll" ? 0.0 : c.seconds + gpu.launchGraph);
  }
  return seconds;
}

void printGpuCost(const Artifact &art, const GpuSpec &gpu, bool tf32,
                  std::ostream &out) {
  char line[200];
  std::snprintf(line, sizeof line,
                "gpu cost model: %s%s, an estimate: per step max(bytes / "
                "%.1f TB/s, FLOPs / rate) / efficiency, serial loop x %.0f ns\n",
                gpu.name, tf32 ? " (f32 GEMMs on TF32)" : "",
                gpu.bandwidth / 1e12, gpu.iteration * 1e9);
  out << line << "  " << gpu.description << "\n";
  std::snprintf(line, sizeof line,
                "  rates: bf16/f16 tensor cores %.0f, TF32 %.0f, FP32 %.1f "
                "TFLOP/s; launch %.1f us in a graph, %.1f us eager\n",
                gpu.bf16 / 1e12, gpu.tf32 / 1e12, gpu.fp32 / 1e12,
                gpu.launchGraph * 1e6, gpu.launchEager * 1e6);
  out << line << "  efficiency (the fraction of the roofline each family "
                 "reached, 16-bit/f32, H200 2026-11-26):";
  for (const Efficiency &e : kEfficiency) {
    std::snprintf(line, sizeof line, " %s %.2f/%.2f", e.family, e.half, e.f32);
    out << line << (&e == &kEfficiency[std::size(kEfficiency) - 1] ? "\n" : ",");
  }
  for (const Function &fn : art.functions)
    printFunction(art, fn, gpu, tf32, out);
}

} // namespace tcc::rt
