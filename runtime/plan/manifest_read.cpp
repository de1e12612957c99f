//===- manifest_read.cpp - reading and checking manifest.json -------------===//

#include "plan/json_file.h"

#include <filesystem>

namespace tcc::rt {

namespace fs = std::filesystem;
using namespace json_read;

namespace {

/// The fields of a training artifact's manifest.
void readTrainingManifest(const JsonFile &file, const json &doc, Manifest &m) {
  m.fingerprint = file.stringField(doc, "", "fingerprint");
  if (m.fingerprint.empty())
    file.bad("fingerprint", "is empty");
  m.trainConfig = file.stringField(doc, "", "train_config");
  m.accum = 1;
  if (const json *v = file.optField(doc, "", "accum"))
    m.accum = file.toInt(*v, "accum");
  if (m.accum < 1)
    file.bad("accum", "must be >= 1, got " + std::to_string(m.accum));

  if (const json *v = file.optField(doc, "", "memory_budget")) {
    MemoryBudget &b = m.memoryBudget.emplace();
    const char *where = "memory_budget";
    b.budget = file.intField(*v, where, "budget");
    b.arenaUnbudgeted = file.intField(*v, where, "arena_unbudgeted");
    b.stepFlops = file.intField(*v, where, "step_flops");
    b.extraFlops = file.intField(*v, where, "extra_flops");
    for (auto [key, field] :
         {std::make_pair("blocked_gradients", &b.blockedGradients),
          std::make_pair("gradient_blocks", &b.gradientBlocks)})
      if (const json *n = file.optField(*v, where, key)) {
        *field = file.toInt(*n, std::string(where) + "." + key);
        if (*field < 0)
          file.bad(std::string(where) + "." + key,
                   "must be >= 0, got " + std::to_string(*field));
      }
    const json &ops = file.arrayField(*v, where, "recomputed");
    for (size_t i = 0; i < ops.size(); ++i)
      b.recomputed.push_back(
          file.toString(ops[i], JsonFile::at("memory_budget.recomputed", i)));
    if (const json *t = file.optField(*v, where, "arena_timeline_unbudgeted")) {
      const char *at = "memory_budget.arena_timeline_unbudgeted";
      if (!t->is_array() || t->size() > kTimelineColumns)
        file.bad(at, "must be an array of at most " +
                         std::to_string(kTimelineColumns) + " byte counts");
      for (size_t i = 0; i < t->size(); ++i) {
        int64_t bytes = file.toInt((*t)[i], JsonFile::at(at, i));
        if (bytes < 0 || bytes > b.arenaUnbudgeted)
          file.bad(JsonFile::at(at, i),
                   "must be between 0 and arena_unbudgeted, got " +
                       std::to_string(bytes));
        b.arenaTimelineUnbudgeted.push_back(bytes);
      }
    }
  }

  const json &sched = file.field(doc, "", "schedule");
  Schedule &s = m.schedule;
  std::string kind = file.stringField(sched, "schedule", "kind");
  if (kind == "constant")
    s.kind = Schedule::Constant;
  else if (kind == "cosine")
    s.kind = Schedule::Cosine;
  else if (kind == "linear")
    s.kind = Schedule::Linear;
  else
    file.bad("schedule.kind", "unknown schedule '" + kind +
                                  "' (expected constant, cosine or linear)");
  s.lr = file.numberField(sched, "schedule", "lr");
  if (s.kind != Schedule::Constant) {
    if (file.optField(sched, "schedule", "warmup"))
      s.warmup = file.intField(sched, "schedule", "warmup");
    s.total = file.intField(sched, "schedule", "total");
    if (s.kind == Schedule::Cosine &&
        file.optField(sched, "schedule", "min_lr"))
      s.minLr = file.numberField(sched, "schedule", "min_lr");
    if (s.warmup < 0 || s.total <= s.warmup)
      file.bad("schedule", "needs 0 <= warmup < total, got warmup " +
                               std::to_string(s.warmup) + ", total " +
                               std::to_string(s.total));
  }
}

/// The "files" object, paths relative to the artifact directory.
void readFiles(const JsonFile &file, const json &doc, Manifest &m) {
  const json &files = file.field(doc, "", "files");
  if (!files.is_object())
    file.bad("files", "expected an object, got " + brief(files));
  for (auto it = files.begin(); it != files.end(); ++it) {
    std::string where = "files." + it.key();
    std::string rel = file.toString(it.value(), where);
    fs::path p(rel);
    if (rel.empty() || p.is_absolute())
      file.bad(where, "'" + rel + "' is not a path relative to the artifact");
    for (const fs::path &part : p)
      if (part == "..")
        file.bad(where, "'" + rel + "' leaves the artifact directory");
    m.files[it.key()] = rel;
  }
  for (const char *key : {"plan", "weights"})
    if (!m.files.count(key))
      file.bad("files", std::string("missing '") + key + "'");
}

/// The "integrity" object: a size and SHA-256 for every file of "files".
void readIntegrity(const JsonFile &file, const json &doc, Manifest &m) {
  const json &integrity = file.field(doc, "", "integrity");
  if (!integrity.is_object())
    file.bad("integrity", "expected an object, got " + brief(integrity));
  for (auto it = integrity.begin(); it != integrity.end(); ++it) {
    std::string where = "integrity." + it.key();
    bool listed = false;
    for (const auto &entry : m.files)
      listed |= entry.second == it.key();
    if (!listed)
      file.bad(where, "'" + it.key() + "' is not a file of 'files'");
    FileIntegrity rec;
    int64_t bytes = file.intField(it.value(), where, "bytes");
    if (bytes < 0)
      file.bad(where + ".bytes", "is negative");
    rec.bytes = uint64_t(bytes);
    rec.sha256 = file.stringField(it.value(), where, "sha256");
    if (rec.sha256.size() != 64 ||
        rec.sha256.find_first_not_of("0123456789abcdef") != std::string::npos)
      file.bad(where + ".sha256", "expected 64 lowercase hex digits, got \"" +
                                      rec.sha256.substr(0, 70) + "\"");
    m.integrity[it.key()] = rec;
  }
}

} // namespace

Manifest readManifestJson(const std::string &path) {
  JsonFile file(path);
  json doc = file.read();
  if (!doc.is_object())
    file.bad("", "expected a JSON object, got " + brief(doc));
  Manifest m;
  std::string format = file.stringField(doc, "", "format");
  if (format != "tcc-artifact")
    file.bad("format", "expected \"tcc-artifact\", got \"" + format + "\"");
  m.version = file.intField(doc, "", "version");
  if (m.version != TCC_ARTIFACT_VERSION)
    file.bad("version",
             "artifact version " + std::to_string(m.version) +
                 " is not supported: this runtime reads version " +
                 std::to_string(TCC_ARTIFACT_VERSION),
             TCC_ERROR_VERSION);
  if (const json *v = file.optField(doc, "", "producer"))
    m.producer = file.toString(*v, "producer");
  if (const json *v = file.optField(doc, "", "source"))
    m.source = file.toString(*v, "source");
  std::string kind = file.stringField(doc, "", "kind");
  if (kind == "inference")
    m.kind = Kind::Inference;
  else if (kind != "training")
    file.bad("kind",
             "unknown kind '" + kind + "' (expected training or inference)");
  if (m.kind == Kind::Training)
    readTrainingManifest(file, doc, m);
  readFiles(file, doc, m);
  readIntegrity(file, doc, m);
  return m;
}


} // namespace tcc::rt
