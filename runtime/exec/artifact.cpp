//===- artifact.cpp - reading and checking manifest.json and plan.json ----===//

#include "exec/artifact.h"

#include "plan/plan_json.h"

#include "data/safetensors.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>

namespace tcc::rt {

namespace fs = std::filesystem;
using data::DType;
using nlohmann::json;

namespace {

std::string joinPath(const std::string &dir, const std::string &rel) {
  return (fs::path(dir) / rel).string();
}

std::string describe(const TensorDesc &t) {
  return std::string(data::dtypeName(t.dtype)) + " " + shapeString(t.shape);
}

/// The params of weights.safetensors: exactly the plan's, by name.
void checkWeights(const Artifact &art) {
  std::string path = art.file("weights");
  std::vector<TensorDesc> weights = readSafetensorsHeader(path);
  for (const TensorDesc &p : art.params) {
    const TensorDesc *w = nullptr;
    for (const TensorDesc &t : weights)
      if (t.name == p.name)
        w = &t;
    if (!w)
      fail(TCC_ERROR_FORMAT,
           path + ": no tensor for parameter '" + p.name + "'");
    if (w->dtype != p.dtype || w->shape != p.shape)
      fail(TCC_ERROR_FORMAT, path + ": parameter '" + p.name + "' is " +
                                 describe(*w) + ", the plan says " +
                                 describe(p));
  }
  for (const TensorDesc &t : weights) {
    bool known = false;
    for (const TensorDesc &p : art.params)
      known |= p.name == t.name;
    if (!known)
      fail(TCC_ERROR_FORMAT, path + ": tensor '" + t.name +
                                 "' is not a parameter of the plan");
  }
}

} // namespace

const Function &Artifact::primary() const {
  const Function *f = function(inference() ? "forward" : "train_step");
  if (!f) // loadArtifact refuses such an artifact
    fail(TCC_ERROR_FORMAT, dir + ": the artifact has no " +
                               (inference() ? "forward" : "train_step"));
  return *f;
}

std::string Artifact::file(const std::string &key) const {
  auto it = manifest.files.find(key);
  return it == manifest.files.end() ? "" : joinPath(dir, it->second);
}

bool Artifact::hasKernelSteps() const {
  for (const Function &fn : functions)
    for (const Step &s : fn.steps)
      if (s.kind == Step::Kernel)
        return true;
  return false;
}

std::vector<TensorDesc> readSafetensorsHeader(const std::string &path) {
  std::ifstream in = openInput(path);
  std::error_code ec;
  uint8_t len[8];
  if (!in.read(reinterpret_cast<char *>(len), 8))
    fail(TCC_ERROR_FORMAT, path + ": truncated safetensors header");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = (n << 8) | len[i];
  uint64_t size = fs::file_size(path, ec);
  if (ec || n > size - 8 || n > (uint64_t(1) << 30))
    fail(TCC_ERROR_FORMAT, path + ": safetensors header length " +
                               std::to_string(n) + " exceeds the file");
  std::string text(n, '\0');
  if (!in.read(text.data(), std::streamsize(n)))
    fail(TCC_ERROR_FORMAT, path + ": truncated safetensors header");
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    fail(TCC_ERROR_FORMAT, path + ": malformed safetensors header");
  std::vector<TensorDesc> out;
  for (auto it = doc.begin(); it != doc.end(); ++it) {
    if (it.key() == "__metadata__")
      continue;
    const json &t = it.value();
    TensorDesc d;
    d.name = it.key();
    auto bad = [&](const std::string &what) {
      fail(TCC_ERROR_FORMAT, path + ": tensor '" + d.name + "': " + what);
    };
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() ||
        !t.contains("shape") || !t["shape"].is_array())
      bad("malformed entry");
    std::string dt = t["dtype"].get<std::string>();
    bool found = false;
    for (DType c : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I8,
                    DType::I16, DType::I32, DType::I64, DType::U8, DType::U16,
                    DType::U32, DType::U64, DType::Bool})
      if (dt == data::safetensorsDTypeName(c)) {
        d.dtype = c;
        found = true;
      }
    if (!found)
      bad("unknown dtype '" + dt + "'");
    for (const json &dim : t["shape"]) {
      if (!dim.is_number_unsigned() || dim.get<uint64_t>() > (1ull << 40))
        bad("malformed shape");
      d.shape.push_back(dim.get<int64_t>());
      if (d.shape.back() != 0 && d.elements > (INT64_C(1) << 56) / d.shape.back())
        bad("shape too large");
      d.elements *= d.shape.back();
    }
    d.bytes = d.elements * int64_t(data::dtypeSize(d.dtype));
    out.push_back(std::move(d));
  }
  return out;
}

Artifact loadArtifact(const std::string &dir) {
  Artifact art;
  art.dir = dir;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    fail(TCC_ERROR_IO, dir + ": no such artifact directory");
  art.manifest = readManifestJson(joinPath(dir, "manifest.json"));
  // Before anything reads a file, and before host.so is ever dlopen'ed.
  checkIntegrity(dir, art.manifest);
  if (!art.file("constants").empty())
    art.constants = readSafetensorsHeader(art.file("constants"));
  static_cast<Plan &>(art) = readPlanJson(art.file("plan"), art.manifest,
                                          art.constants, art.file("constants"));
  checkWeights(art);
  if (art.hasKernelSteps() && art.file("host_kernels").empty())
    fail(TCC_ERROR_FORMAT, joinPath(dir, "manifest.json") +
                               ": files: missing 'host_kernels', but the plan "
                               "has kernel steps");
  return art;
}

MemoryPlan memoryPlan(const Artifact &art) {
  MemoryPlan m;
  for (const Function &fn : art.functions)
    m.arena = std::max(m.arena, fn.arenaBytes);
  for (const TensorDesc &t : art.params) {
    m.params += t.bytes;
    if (t.working)
      m.working += t.elements * int64_t(data::dtypeSize(*t.working));
  }
  for (const TensorDesc &t : art.optState)
    m.optState += t.bytes;
  if (const Function *main =
          art.function(art.inference() ? "forward" : "train_step"))
    for (const TensorDesc &t : main->inputs)
      m.inputs += t.bytes;
  for (const TensorDesc &t : art.constants)
    m.constants += t.bytes;
  return m;
}

} // namespace tcc::rt
