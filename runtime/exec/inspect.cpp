//===- inspect.cpp - `tcc inspect OUT.tcc` --------------------------------===//

#include "exec/inspect.h"

#include "exec/artifact.h"
#include "exec/cpu_backend.h"
#include "exec/gpu_cost.h"
#include "exec/guard.h"
#include "exec/memory_chart.h"
#include "plan/calls.h"
#ifdef TCC_HAVE_CUDA_BACKEND
#include "exec/cuda_calls.h"
#endif

#include "data/npz.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

namespace tcc::rt {

namespace fs = std::filesystem;

namespace {

std::string describe(const TensorDesc &t) {
  return std::string(data::dtypeName(t.dtype)) + " " + shapeString(t.shape);
}

std::string num(double v) {
  std::ostringstream s;
  s.precision(17);
  s << v;
  // The shortest of %.15g..%.17g that reads back as v.
  for (int p = 6; p <= 17; ++p) {
    std::ostringstream t;
    t.precision(p);
    t << v;
    if (std::stod(t.str()) == v)
      return t.str();
  }
  return s.str();
}

void printTensors(std::ostream &out, const std::vector<TensorDesc> &tensors) {
  size_t width = 0;
  for (const TensorDesc &t : tensors)
    width = std::max(width, t.name.size());
  for (const TensorDesc &t : tensors)
    out << "  " << t.name << std::string(width - t.name.size() + 2, ' ')
        << describe(t) << "  " << groupedDigits(t.bytes) << " bytes\n";
}

void print(const Artifact &art, std::ostream &out) {
  const Manifest &m = art.manifest;
  out << "artifact     " << art.dir << "\n";
  out << "format       tcc-artifact version " << m.version << "\n";
  out << "kind         " << (art.inference() ? "inference" : "training")
      << "\n";
  out << "producer     " << (m.producer.empty() ? "?" : m.producer) << "\n";
  out << "source       " << (m.source.empty() ? "?" : m.source) << "\n";
  if (!art.inference()) {
    out << "fingerprint  " << m.fingerprint << "\n";
    out << "train_config " << m.trainConfig << "\n";
    const Schedule &s = m.schedule;
    out << "schedule     " << scheduleKindName(s.kind) << " lr=" << num(s.lr);
    if (s.kind != Schedule::Constant)
      out << " warmup=" << s.warmup << " total=" << s.total;
    if (s.kind == Schedule::Cosine)
      out << " min_lr=" << num(s.minLr);
    out << "\n";
    out << "accum        " << m.accum << "\n";
  }
  out << "files\n";
  size_t keyWidth = 0;
  for (auto &[key, rel] : m.files)
    keyWidth = std::max(keyWidth, key.size());
  for (auto &[key, rel] : m.files) {
    std::error_code ec;
    bool present = fs::exists(fs::path(art.dir) / rel, ec);
    out << "  " << key << std::string(keyWidth + 2 - key.size(), ' ')
        << rel << (present ? "" : "  (missing)") << "\n";
  }
  out << "kernels     ";
  bool anyKernelFile = false;
  for (const char *key : {"kernel_source", "host_kernels", "cuda_kernels"}) {
    std::string path = art.file(key);
    std::error_code ec;
    if (!path.empty() && fs::exists(path, ec)) {
      out << " " << m.files.at(key);
      anyKernelFile = true;
    }
  }
  out << (anyKernelFile ? "" : " none") << "\n";

  const Function &main = art.primary();
  out << "\ninputs (" << main.inputs.size() << ", as " << main.name
      << " takes them";
  if (m.accum > 1)
    out << "; the data feed yields " << m.accum << " x the leading dim";
  out << ")\n";
  printTensors(out, main.inputs);
  if (art.inference()) {
    std::vector<TensorDesc> outputs;
    for (const Result &r : main.results) {
      const Value &v = main.values[r.value];
      TensorDesc t;
      t.name = r.name;
      t.dtype = v.dtype;
      t.shape = v.shape;
      t.elements = v.elements;
      t.bytes = v.bytes;
      outputs.push_back(std::move(t));
    }
    out << "\noutputs (" << outputs.size() << ")\n";
    printTensors(out, outputs);
  }

  MemoryPlan mem = memoryPlan(art);
  int64_t elements = 0;
  for (const TensorDesc &t : art.params)
    elements += t.elements;
  out << "\nparameters: " << art.params.size() << ", " << groupedDigits(elements)
      << " elements, " << groupedDigits(mem.params) << " bytes\n";
  printTensors(out, art.params);
  if (!art.inference())
    out << "\noptimizer state: " << art.optState.size() << ", "
        << groupedDigits(mem.optState) << " bytes\n";
  if (!art.constants.empty())
    out << "constants: " << art.constants.size() << ", "
        << groupedDigits(mem.constants) << " bytes\n";

  out << "\nfunctions\n";
  std::string unsupported;
  for (const Function &fn : art.functions) {
    int64_t kernels = 0, calls = 0, collectives = 0;
    std::map<std::string, int64_t> byOp;
    for (size_t i = 0; i < fn.steps.size(); ++i) {
      const Step &step = fn.steps[i];
      if (step.kind == Step::Kernel) {
        ++kernels;
        continue;
      }
      if (step.kind == Step::Collective) {
        ++collectives;
        continue;
      }
      ++calls;
      ++byOp[opName(step.op)];
      std::string why = cpuUnsupported(fn, step);
      if (unsupported.empty() && !why.empty())
        unsupported = fn.name + " step " + std::to_string(i) + " (" +
                      opName(step.op) + "): " + why;
    }
    out << "  " << fn.name << ": " << fn.steps.size() << " steps, " << kernels
        << " kernels, " << calls << " library calls";
    if (!byOp.empty()) {
      out << " (";
      bool first = true;
      for (auto &[op, count] : byOp) {
        out << (first ? "" : ", ") << op << " " << count;
        first = false;
      }
      out << ")";
    }
    if (collectives)
      out << ", " << collectives << " collectives";
    out << "; arena " << groupedDigits(fn.arenaBytes) << " bytes\n";
  }
  std::error_code hostError;
  std::string host = art.file("host_kernels");
  if (unsupported.empty() && art.hasKernelSteps() &&
      (host.empty() || !fs::exists(host, hostError)))
    unsupported = "its kernel steps: kernels/host.so is missing";
  out << "cpu backend: "
      << (unsupported.empty() ? "runs every step"
                              : "cannot run " + unsupported)
      << "\n";
#ifdef TCC_HAVE_CUDA_BACKEND
  out << "cuda backend: " << cudaBackendVerdict(art) << "\n";
#else
  out << "cuda backend: not built\n";
#endif

  auto line = [&](const char *what, int64_t bytes) {
    std::string b = groupedDigits(bytes);
    out << "  " << what << std::string(14 - std::string(what).size(), ' ')
        << std::string(b.size() < 16 ? 16 - b.size() : 0, ' ') << b
        << " bytes\n";
  };
  out << "\nsession memory\n";
  line("arena", mem.arena);
  line("parameters", mem.params);
  if (mem.working > 0)
    line("working copies", mem.working);
  line("optimizer", mem.optState);
  line("inputs", mem.inputs);
  line("constants", mem.constants);
  line("total", mem.total());

  if (const std::optional<MemoryBudget> &b = m.memoryBudget) {
    out << "\nmemory budget " << groupedDigits(b->budget) << " bytes: planned "
        << groupedDigits(mem.total()) << " bytes, arena " << groupedDigits(mem.arena)
        << " (unbudgeted " << groupedDigits(b->arenaUnbudgeted) << ")\n";
    char percent[32];
    std::snprintf(percent, sizeof percent, "%.2f",
                  b->stepFlops ? 100.0 * double(b->extraFlops) /
                                     double(b->stepFlops)
                               : 0.0);
    out << "  recomputed " << b->recomputed.size() << " ops, +"
        << groupedDigits(b->extraFlops) << " FLOPs per step (+" << percent
        << "% of " << groupedDigits(b->stepFlops) << ")\n";
    for (const std::string &op : b->recomputed)
      out << "    " << op << "\n";
    if (b->blockedGradients > 0)
      out << "  " << b->blockedGradients
          << (b->blockedGradients == 1 ? " weight gradient" : " weight gradients")
          << " made in row blocks (" << b->gradientBlocks
          << " blocks), each applied to its rows before the next is made\n";
    for (const Function &fn : art.functions)
      if (fn.name == "train_step")
        printMemoryTimeline(out, fn, *b);
  }
}

} // namespace

tcc_status inspectArtifact(const std::string &dir, std::ostream &out,
                           std::string &error, const GpuSpec *gpu,
                           bool tf32) {
  return guarded(
      [&] {
        Artifact art = loadArtifact(dir);
        std::ostringstream text;
        print(art, text);
        if (gpu) {
          text << "\n";
          printGpuCost(art, *gpu, tf32, text);
        }
        out << text.str();
      },
      error);
}

} // namespace tcc::rt
