//===- dp_estimate.cpp - `tcc inspect --data-parallel N` ------------------===//

#include "exec/dp_estimate.h"

#include "exec/artifact.h"
#include "exec/backend.h"
#include "exec/gpu_cost.h"
#include "exec/guard.h"
#include "exec/zero.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

namespace tcc::rt {

namespace {

struct Bucket {
  size_t step = 0;
  int64_t bucket = 0, bytes = 0;
  double seconds = 0, ready = 0, start = 0, end = 0, hidden = 0;
};

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s * 1e3);
  return b;
}

/// What a rank holds, with the whole optimizer state and under ZeRO-1
/// (`tcc run --zero 1`, zero.h: the largest slice, rank N-1's), and the
/// step under ZeRO-1: `exposed` and `stepTime` of its replay (gradients
/// reduce-scattered), then the parameter gather: a ring all-gather moves
/// (N-1)/N of the gathered bytes over the link, after the last update, so
/// nothing overlaps it.
void memoryPerRank(const Artifact &art, const DpEstimateOptions &o,
                   double bytesPerSecond, double exposed, double stepTime,
                   std::ostream &out) {
  MemoryPlan m = memoryPlan(art);
  ZeroPlan z = planZero(art);
  int64_t sharded = 0, slices = 0, gathered = 0;
  for (size_t i = 0; i < art.optState.size(); ++i) {
    int64_t n = z.stateElements[i];
    if (n < 0)
      continue;
    int64_t elem = art.optState[i].bytes / std::max<int64_t>(n, 1);
    sharded += art.optState[i].bytes;
    slices += sliceOf(n, o.ranks - 1, o.ranks).count * elem;
  }
  for (size_t p : z.params) {
    const TensorDesc &t = art.params[p];
    gathered += t.bytes;
    if (t.working)
      gathered += t.elements * int64_t(data::dtypeSize(*t.working));
  }
  int64_t zeroTotal = m.total() - sharded + slices;
  double gather = double(o.ranks - 1) / double(o.ranks) * double(gathered) /
                  bytesPerSecond;
  out << "  memory per rank: " << m.total() << " bytes (parameters "
      << m.params + m.working << ", optimizer state " << m.optState
      << ", arena " << m.arena << ", inputs and constants "
      << m.inputs + m.constants << ")\n";
  char line[256];
  std::snprintf(line, sizeof line,
                "  with --zero 1: %lld bytes (optimizer state %lld, %lld of "
                "it in 1/%d slices); gradients reduce-scattered, exposed %s "
                "ms; the parameter gather moves %lld bytes, %s ms after the "
                "update: step %s ms\n",
                static_cast<long long>(zeroTotal),
                static_cast<long long>(m.optState - sharded + slices),
                static_cast<long long>(slices), o.ranks, ms(exposed).c_str(),
                static_cast<long long>(gathered), ms(gather).c_str(),
                ms(stepTime + gather).c_str());
  out << line;
}

/// One train_step on N ranks: compute on one stream, the collectives on
/// one link in plan order. A ring all-reduce moves 2(N-1)/N of its bytes,
/// a reduce-scatter (ZeRO-1's of the gradients, `zero`) (N-1)/N; the
/// scattered_only partial sums are all-reduced under ZeRO-1 and copies
/// (not collectives) without it.
struct Replay {
  std::vector<Bucket> buckets;
  double t1 = 0, stepTime = 0;
};

Replay replay(const Function &fn, const std::vector<double> &seconds,
              int ranks, double bytesPerSecond, bool zero) {
  const double ring = 2.0 * double(ranks - 1) / double(ranks);
  Replay r;
  std::map<int64_t, size_t> reducedBy;         // value id -> its bucket
  std::vector<std::pair<double, double>> busy; // compute intervals
  double t = 0, linkFree = 0;
  for (size_t i = 0; i < fn.steps.size(); ++i) {
    const Step &s = fn.steps[i];
    if (s.kind == Step::Collective) {
      Bucket b;
      b.step = i;
      b.bucket = s.bucket;
      double moved = 0;
      for (size_t k = 0; k < s.inputs.size(); ++k) {
        Exchange e = exchangeOf(s, k, zero);
        if (e == Exchange::None)
          continue;
        int64_t bytes = fn.values[size_t(s.inputs[k])].bytes;
        b.bytes += bytes;
        moved += (e == Exchange::ReduceScatter ? ring / 2 : ring) *
                 double(bytes);
      }
      if (b.bytes == 0)
        continue; // a copy on every rank
      b.seconds = moved / bytesPerSecond;
      b.ready = t;
      b.start = std::max(t, linkFree);
      b.end = linkFree = b.start + b.seconds;
      for (int64_t id : s.outputs)
        reducedBy[id] = r.buckets.size();
      r.buckets.push_back(b);
      continue;
    }
    for (int64_t id : s.inputs)
      if (auto it = reducedBy.find(id); it != reducedBy.end())
        t = std::max(t, r.buckets[it->second].end);
    busy.push_back({t, t + seconds[i]});
    t += seconds[i];
    r.t1 += seconds[i];
  }
  r.stepTime = std::max(t, linkFree);
  for (Bucket &b : r.buckets) {
    for (auto [from, to] : busy)
      b.hidden += std::max(0.0, std::min(to, b.end) - std::max(from, b.start));
    b.hidden = std::min(b.hidden, b.seconds); // not -0.000 exposed
  }
  return r;
}

void estimate(const Artifact &art, const DpEstimateOptions &o,
              std::ostream &out) {
  const Function *fn = nullptr;
  for (const Function &f : art.functions)
    if (f.name == "train_step")
      fn = &f;
  if (!fn)
    fail(TCC_ERROR_ARGUMENT, art.dir + ": --data-parallel estimates a "
                                       "training artifact (no train_step)");
  std::vector<double> seconds;
  if (!o.measuredMs.empty()) {
    if (o.measuredMs.size() != fn->steps.size())
      fail(TCC_ERROR_ARGUMENT,
           o.measuredFrom + ": a profile of " +
               std::to_string(o.measuredMs.size()) + " plan steps, but " +
               art.dir + "'s train_step has " +
               std::to_string(fn->steps.size()) +
               ": profile this artifact (tcc run ARTIFACT --profile-json "
               "FILE)");
    for (double m : o.measuredMs)
      seconds.push_back(m / 1e3);
  } else {
    seconds = gpuStepSeconds(art, *fn, *o.gpu, o.tf32);
  }
  const double bytesPerSecond = o.linkGbps * 1e9 / 8;
  Replay r = replay(*fn, seconds, o.ranks, bytesPerSecond, false);
  if (r.buckets.empty())
    fail(TCC_ERROR_ARGUMENT, art.dir + ": train_step has no all_reduce: "
                                       "compile with --data-parallel");
  const std::vector<Bucket> &buckets = r.buckets;
  double t1 = r.t1, stepTime = r.stepTime;
  double exposed = stepTime - t1;

  char line[256];
  std::snprintf(line, sizeof line,
                "data-parallel estimate: %d ranks, link %g Gbit/s (%g GB/s); "
                "ring all-reduce 2(N-1)/N x bytes / link\n",
                o.ranks, o.linkGbps, bytesPerSecond / 1e9);
  out << line << "  train_step on one rank: T1 = " << ms(t1) << " ms, "
      << (o.measuredMs.empty() ? std::string("the GPU cost model on ") +
                                     (o.gpu ? o.gpu->name : "?")
                               : "measured (" + o.measuredFrom + ")")
      << "\n";
  std::snprintf(line, sizeof line, "  %6s %5s %12s %10s %9s %9s %9s %9s %9s\n",
                "bucket", "step", "bytes", "reduce ms", "ready ms", "start ms",
                "end ms", "hidden ms", "exposed");
  out << line;
  for (const Bucket &b : buckets) {
    std::snprintf(line, sizeof line,
                  "  %6lld %5zu %12lld %10s %9s %9s %9s %9s %9s\n",
                  static_cast<long long>(b.bucket), b.step,
                  static_cast<long long>(b.bytes), ms(b.seconds).c_str(),
                  ms(b.ready).c_str(), ms(b.start).c_str(), ms(b.end).c_str(),
                  ms(b.hidden).c_str(), ms(b.seconds - b.hidden).c_str());
    out << line;
  }
  std::snprintf(line, sizeof line,
                "  exposed communication per step: %s ms; step on %d ranks "
                "%s ms; scaling efficiency T1/(T1+exposed) = %.1f%%\n",
                ms(exposed).c_str(), o.ranks, ms(stepTime).c_str(),
                stepTime > 0 ? 100.0 * t1 / stepTime : 100.0);
  out << line;
  Replay zero = replay(*fn, seconds, o.ranks, bytesPerSecond, true);
  memoryPerRank(art, o, bytesPerSecond, zero.stepTime - zero.t1,
                zero.stepTime, out);
}

} // namespace

tcc_status inspectDataParallel(const std::string &dir,
                               const DpEstimateOptions &options,
                               std::ostream &out, std::string &error) {
  return guarded(
      [&] {
        Artifact art = loadArtifact(dir);
        std::ostringstream text;
        estimate(art, options, text);
        out << text.str();
      },
      error);
}

} // namespace tcc::rt
