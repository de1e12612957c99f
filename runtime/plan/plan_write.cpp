//===- plan_write.cpp - manifest.json and plan.json text ------------------===//

#include "plan/plan_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <iterator>

namespace tcc::rt {

using json = nlohmann::ordered_json;

namespace {

json tensorJson(const TensorDesc &t) {
  json j = {{"name", t.name},
            {"dtype", data::dtypeName(t.dtype)},
            {"shape", t.shape}};
  if (t.init)
    j["init"] = *t.init;
  if (t.working)
    j["working"] = data::dtypeName(*t.working);
  return j;
}

json valueJson(int64_t id, const Value &v) {
  json j = {{"id", id},
            {"dtype", data::dtypeName(v.dtype)},
            {"shape", v.shape},
            {"storage", storageName(v.storage)}};
  switch (v.storage) {
  case Storage::Arena:
    j["offset"] = v.offset;
    break;
  case Storage::Param:
  case Storage::OptState:
  case Storage::Input:
  case Storage::Working:
    j["index"] = v.index;
    break;
  case Storage::Constant:
    j["name"] = v.name;
    break;
  case Storage::Step:
    break;
  }
  return j;
}

json attrsJson(const Step &s) {
  json j = json::object();
  for (const AttrSpec &a : opSchema(s.op).attrs) {
    Attrs &attrs = const_cast<Attrs &>(s.attrs);
    switch (a.kind) {
    case AttrKind::Bool:
      j[a.name] = a.asBool(attrs);
      break;
    case AttrKind::Int:
      j[a.name] = a.asInt(attrs);
      break;
    case AttrKind::Float:
      j[a.name] = a.asFloat(attrs);
      break;
    }
  }
  return j;
}

json stepJson(const Step &s) {
  json j;
  switch (s.kind) {
  case Step::Kernel:
    j = {{"kind", "kernel"}, {"symbol", s.symbol}};
    break;
  case Step::Call:
    j = {{"kind", "call"}, {"op", opName(s.op)}, {"attrs", attrsJson(s)}};
    if (s.tokenRows > 0)
      j["token_rows"] = s.tokenRows;
    break;
  case Step::Collective:
    j = {{"kind", "collective"}, {"op", collectiveName(s.collective)}};
    if (s.collective != CollectiveOp::AllGather)
      j["reduction"] = reductionName(s.reduction);
    if (s.collective != CollectiveOp::AllReduce)
      j["world_size"] = s.worldSize;
    j["bucket"] = s.bucket;
    j["stream"] = s.stream;
    if (s.gradients > 0)
      j["gradients"] = s.gradients;
    if (s.scatteredOnly)
      j["scattered_only"] = true;
    break;
  }
  j["inputs"] = s.inputs;
  j["outputs"] = s.outputs;
  if (s.kind == Step::Kernel) {
    j["elements"] = s.elements;
    if (s.tokenRows > 0)
      j["token_rows"] = s.tokenRows;
  }
  return j;
}

json kernelJson(const KernelSignature &k) {
  auto buffer = [](const KernelBuffer &b) {
    return json{{"dtype", data::dtypeName(b.dtype)},
                {"elements", b.elements == kOutputElements ? json("output")
                                                           : json(b.elements)}};
  };
  json inputs = json::array();
  for (const KernelBuffer &b : k.inputs)
    inputs.push_back(buffer(b));
  json j = {
      {"symbol", k.symbol}, {"inputs", inputs}, {"output", buffer(k.output)}};
  if (!k.stores.empty()) {
    json stores = json::array();
    for (const KernelBuffer &b : k.stores)
      stores.push_back(buffer(b));
    j["stores"] = stores;
  }
  if (k.outputsPerBlock > 0) {
    j["outputs_per_block"] = k.outputsPerBlock;
    j["block_threads"] = k.blockThreads;
    if (k.rowSlices > 1) {
      j["row_slices"] = k.rowSlices;
      j["workspace_bytes"] = k.workspaceBytes;
    }
  }
  return j;
}

json resultJson(const Result &r) {
  json j = {{"role", roleName(r.role)}};
  if (r.role == Role::Output || r.role == Role::Metric)
    j["name"] = r.name;
  else if (r.role != Role::Loss)
    j["index"] = r.index;
  j["value"] = r.value;
  return j;
}

/// `"key": [` one line per item `]` at `indent`; "[]" when empty.
template <class T, class F>
void list(std::string &out, const std::string &indent, const char *key,
          const std::vector<T> &items, F line, bool last) {
  out += indent + "\"" + key + "\": [";
  if (!items.empty()) {
    out += "\n";
    for (size_t i = 0; i < items.size(); ++i)
      out += indent + "  " + line(i, items[i]).dump() +
             (i + 1 < items.size() ? ",\n" : "\n");
    out += indent;
  }
  out += last ? "]\n" : "],\n";
}

} // namespace

std::string writeManifestJson(const Manifest &m) {
  // Top-level keys one per line, the schedule on one line, the files in the
  // order a reader looks for them (docs/artifact.md).
  std::vector<std::pair<std::string, json>> fields = {
      {"format", "tcc-artifact"},
      {"version", m.version},
      {"kind", m.kind == Kind::Inference ? "inference" : "training"},
      {"producer", m.producer},
      {"source", m.source}};
  if (m.kind == Kind::Training) {
    const Schedule &s = m.schedule;
    json sched = {{"kind", scheduleKindName(s.kind)}, {"lr", s.lr}};
    if (s.kind != Schedule::Constant) {
      sched["warmup"] = s.warmup;
      sched["total"] = s.total;
    }
    if (s.kind == Schedule::Cosine)
      sched["min_lr"] = s.minLr;
    fields.push_back({"fingerprint", m.fingerprint});
    fields.push_back({"train_config", m.trainConfig});
    fields.push_back({"schedule", sched});
    fields.push_back({"accum", m.accum});
    if (const std::optional<MemoryBudget> &b = m.memoryBudget)
      fields.push_back({"memory_budget",
                        {{"budget", b->budget},
                         {"arena_unbudgeted", b->arenaUnbudgeted},
                         {"step_flops", b->stepFlops},
                         {"extra_flops", b->extraFlops},
                         {"blocked_gradients", b->blockedGradients},
                         {"gradient_blocks", b->gradientBlocks},
                         {"recomputed", b->recomputed},
                         {"arena_timeline_unbudgeted",
                          b->arenaTimelineUnbudgeted}}});
  }
  std::string out = "{\n";
  for (const auto &[key, value] : fields)
    out += "  " + json(key).dump() + ": " + value.dump() + ",\n";
  out += "  \"files\": {";
  static const char *const order[] = {
      "plan",           "weights",      "constants",   "kernel_source",
      "kernel_prelude", "host_kernels", "cuda_kernels"};
  std::vector<std::string> keys(std::begin(order), std::end(order));
  for (const auto &entry : m.files)
    if (std::find(keys.begin(), keys.end(), entry.first) == keys.end())
      keys.push_back(entry.first);
  bool first = true;
  for (const std::string &key : keys) {
    auto it = m.files.find(key);
    if (it == m.files.end())
      continue;
    out += std::string(first ? "\n" : ",\n") + "    " + json(key).dump() +
           ": " + json(it->second).dump();
    first = false;
  }
  out += first ? "}" : "\n  }";
  // One line per file, in path order.
  out += ",\n  \"integrity\": {";
  first = true;
  for (const auto &[rel, rec] : m.integrity) {
    out += std::string(first ? "\n" : ",\n") + "    " + json(rel).dump() +
           ": {\"bytes\": " + std::to_string(rec.bytes) +
           ", \"sha256\": " + json(rec.sha256).dump() + "}";
    first = false;
  }
  out += first ? "}\n}\n" : "\n  }\n}\n";
  return out;
}

std::string writePlanJson(const Plan &plan) {
  auto tensor = [](size_t, const TensorDesc &t) { return tensorJson(t); };
  std::string out =
      "{\n  \"version\": " + std::to_string(kArtifactVersion) + ",\n";
  list(out, "  ", "params", plan.params, tensor, false);
  list(out, "  ", "opt_state", plan.optState, tensor, false);
  list(
      out, "  ", "kernels", plan.kernels,
      [](size_t, const KernelSignature &k) { return kernelJson(k); }, false);
  out += "  \"functions\": {\n";
  for (size_t f = 0; f < plan.functions.size(); ++f) {
    const Function &fn = plan.functions[f];
    out += "    " + json(fn.name).dump() + ": {\n";
    out += "      \"arena_bytes\": " + std::to_string(fn.arenaBytes) + ",\n";
    list(out, "      ", "inputs", fn.inputs, tensor, false);
    list(
        out, "      ", "values", fn.values,
        [](size_t i, const Value &v) { return valueJson(int64_t(i), v); },
        false);
    list(
        out, "      ", "steps", fn.steps,
        [](size_t, const Step &s) { return stepJson(s); }, false);
    list(
        out, "      ", "results", fn.results,
        [](size_t, const Result &r) { return resultJson(r); }, true);
    out += f + 1 < plan.functions.size() ? "    },\n" : "    }\n";
  }
  out += "  }\n}\n";
  return out;
}

} // namespace tcc::rt
