//===- checkpoint.cpp - training checkpoints ------------------------------===//
//
// Crash safety rests on two properties: every file is fsynced inside the temp
// directory before the directory is renamed into place, and the rename of a
// directory is atomic. The parent is fsynced after the rename so the new name
// itself survives a power cut.
//
//===----------------------------------------------------------------------===//

#include "checkpoint/checkpoint.h"
#include "checkpoint/digests.h"

#include "data/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <tuple>

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

namespace tcc::checkpoint {

namespace fs = std::filesystem;
using nlohmann::json;

const char *const ParamsFile = "params.safetensors";
const char *const OptimizerFile = "optimizer.safetensors";
const char *const StateFile = "state.json";
const char *const RunField = "run";

static const char *const ReservedKeys[] = {"format_version", "step",
                                           "data_position", "model", "rng"};

[[noreturn]] static void fail(const std::string &path, const std::string &msg) {
  throw Error(path + ": " + msg);
}

static std::string join(const std::string &dir, const std::string &name) {
  return (fs::path(dir) / name).string();
}

/// N of a canonical decimal `<prefix>N<rest...>`; `end` receives the index
/// after the digits.
static std::optional<int64_t> parseNumber(const std::string &s, size_t from,
                                          size_t *end) {
  size_t i = from;
  int64_t v = 0;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) {
    if (v > (INT64_MAX - (s[i] - '0')) / 10)
      return std::nullopt;
    v = v * 10 + (s[i] - '0');
  }
  // Canonical only: "step-05" is not ours and must not shadow "step-5".
  if (i == from || (s[from] == '0' && i - from > 1))
    return std::nullopt;
  *end = i;
  return v;
}

static std::optional<int64_t> parseStepName(const std::string &name) {
  size_t end;
  if (name.rfind("step-", 0) != 0)
    return std::nullopt;
  std::optional<int64_t> n = parseNumber(name, 5, &end);
  return n && end == name.size() ? n : std::nullopt;
}

static void fsyncPath(const std::string &path, bool isDir) {
  int fd = ::open(path.c_str(), O_RDONLY | (isDir ? O_DIRECTORY : 0));
  if (fd < 0)
    fail(path, std::string("cannot open to sync: ") + std::strerror(errno));
  // Some filesystems cannot sync a directory; the rename is still atomic.
  if (::fsync(fd) != 0 && errno != EINVAL) {
    int err = errno;
    ::close(fd);
    fail(path, std::string("fsync failed: ") + std::strerror(err));
  }
  ::close(fd);
}

static void writeSynced(const std::string &path, const std::string &text) {
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    fail(path, std::string("cannot open for writing: ") + std::strerror(errno));
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size() &&
            std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  int err = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    fail(path, std::string("write failed: ") + std::strerror(err));
}

static void removeAll(const std::string &path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec)
    fail(path, "cannot remove: " + ec.message());
}

static bool isComplete(const fs::path &stepDir) {
  std::error_code ec;
  for (const char *file : {ParamsFile, OptimizerFile, StateFile})
    if (!fs::is_regular_file(stepDir / file, ec))
      return false;
  return true;
}

/// The testing hook of checkpoint.h: TCC_CHECKPOINT_FAULT=POINT[:N] ends
/// the process at `point` of the save of step N (of any step without :N).
static void faultPoint(const char *point, int64_t step) {
  const char *spec = std::getenv("TCC_CHECKPOINT_FAULT");
  if (!spec || !*spec)
    return;
  std::string s = spec;
  size_t colon = s.find(':');
  if (s.compare(0, colon, point) != 0)
    return;
  if (colon != std::string::npos) {
    size_t end;
    std::optional<int64_t> n = parseNumber(s, colon + 1, &end);
    if (!n || end != s.size() || *n != step)
      return;
  }
  ::_exit(86);
}

namespace {
/// Removes the temp directory unless the save completed.
struct TempDirGuard {
  std::string path;
  bool keep = false;
  ~TempDirGuard() {
    if (!keep) {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  }
};
} // namespace

/// Moves the complete `tmp` to `final`, which exists.
static void replaceDir(const std::string &tmp, const std::string &final,
                       const std::string &old) {
#if defined(__linux__) && defined(RENAME_EXCHANGE)
  // One atomic swap: at no instant is there no step-<N>.
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, final.c_str(),
                  RENAME_EXCHANGE) == 0) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    return;
  }
  if (errno != EINVAL && errno != ENOSYS)
    fail(final, std::string("cannot replace: ") + std::strerror(errno));
#endif
  if (std::rename(final.c_str(), old.c_str()) != 0)
    fail(final, std::string("cannot move the old checkpoint away: ") +
                    std::strerror(errno));
  if (std::rename(tmp.c_str(), final.c_str()) != 0) {
    int err = errno;
    std::rename(old.c_str(), final.c_str());
    fail(final, std::string("cannot rename into place: ") + std::strerror(err));
  }
  // The new checkpoint is in place; a leftover is pruneCheckpoints' to clear.
  std::error_code ec;
  fs::remove_all(old, ec);
}

std::string saveCheckpoint(const std::string &dir,
                           const std::vector<Array> &params,
                           const std::vector<Array> &optState,
                           const CheckpointState &state) {
  if (dir.empty())
    throw Error("checkpoint directory name is empty");
  if (state.step < 0 || state.dataPosition < 0)
    fail(dir, "step and data position must be non-negative");
  if (!state.extra.is_null() && !state.extra.is_object())
    fail(dir, "extra checkpoint state must be a JSON object");
  json doc = {{"format_version", FormatVersion},
              {"step", state.step},
              {"data_position", state.dataPosition},
              {"model", state.modelFingerprint},
              {"rng", state.rng}};
  if (state.extra.is_object())
    for (auto it = state.extra.begin(); it != state.extra.end(); ++it) {
      if (doc.contains(it.key()))
        fail(dir, "extra checkpoint field '" + it.key() + "' is reserved");
      doc[it.key()] = it.value();
    }
  std::string text;
  try {
    text = doc.dump(2) + "\n";
  } catch (const json::exception &e) {
    fail(dir, std::string("cannot serialise the state: ") + e.what());
  }

  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    fail(dir, "cannot create directory: " + ec.message());
  std::string step = "step-" + std::to_string(state.step);
  std::string pid = std::to_string(::getpid());
  std::string final = join(dir, step);
  TempDirGuard tmp{join(dir, "." + step + ".tmp-" + pid)};
  removeAll(tmp.path); // A failed earlier save of this process.
  if (!fs::create_directory(tmp.path, ec) || ec)
    fail(tmp.path, "cannot create directory: " +
                       (ec ? ec.message() : std::string("exists")));

  data::writeSafetensors(join(tmp.path, ParamsFile), params,
                         tensorDigests(params));
  faultPoint("after-params", state.step);
  data::writeSafetensors(join(tmp.path, OptimizerFile), optState,
                         tensorDigests(optState));
  writeSynced(join(tmp.path, StateFile), text);
  fsyncPath(tmp.path, /*isDir=*/true);
  faultPoint("before-rename", state.step);

  if (fs::exists(final, ec)) {
    replaceDir(tmp.path, final, join(dir, "." + step + ".old-" + pid));
  } else if (std::rename(tmp.path.c_str(), final.c_str()) != 0) {
    fail(final,
         std::string("cannot rename into place: ") + std::strerror(errno));
  }
  tmp.keep = true;
  fsyncPath(dir, /*isDir=*/true);
  return final;
}

static int64_t intField(const json &doc, const char *key,
                        const std::string &path) {
  auto it = doc.find(key);
  if (it == doc.end())
    fail(path, std::string("missing '") + key + "'");
  if (!it->is_number_integer() ||
      (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)))
    fail(path, std::string("'") + key + "' is not an integer");
  return it->get<int64_t>();
}

static CheckpointState readState(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::string text{std::istreambuf_iterator<char>(in), {}};
  if (in.bad())
    fail(path, "read error");
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object())
    fail(path, "malformed JSON (truncated or corrupt checkpoint state)");

  int64_t version = intField(doc, "format_version", path);
  if (version != FormatVersion)
    fail(path, "unsupported format_version " + std::to_string(version) +
                   " (this runtime reads " + std::to_string(FormatVersion) +
                   ")");
  CheckpointState st;
  st.step = intField(doc, "step", path);
  st.dataPosition = intField(doc, "data_position", path);
  if (st.step < 0 || st.dataPosition < 0)
    fail(path, "negative 'step' or 'data_position'");
  auto model = doc.find("model");
  if (model == doc.end() || !model->is_string())
    fail(path, "missing or non-string 'model'");
  st.modelFingerprint = model->get<std::string>();
  auto rng = doc.find("rng");
  if (rng == doc.end())
    fail(path, "missing 'rng'");
  st.rng = *rng;
  for (const char *key : ReservedKeys)
    doc.erase(key);
  st.extra = std::move(doc);
  return st;
}

/// The run of a checkpoint whose state.json at `path` holds `state`.
static int64_t runOf(const CheckpointState &state, const std::string &path) {
  auto it = state.extra.find(RunField);
  if (it == state.extra.end())
    return 0;
  if (!it->is_number_integer() || it->get<int64_t>() < 0)
    fail(path, std::string("'") + RunField + "' is not a non-negative integer");
  return it->get<int64_t>();
}

std::vector<StepDir> listCheckpoints(const std::string &dir) {
  std::vector<StepDir> steps;
  std::error_code ec;
  if (!fs::exists(dir, ec))
    return steps;
  if (!fs::is_directory(dir, ec))
    fail(dir, "not a directory");
  fs::directory_iterator it(dir, ec), end;
  if (ec)
    fail(dir, "cannot list: " + ec.message());
  for (; it != end; it.increment(ec)) {
    std::optional<int64_t> n = parseStepName(it->path().filename().string());
    if (n && it->is_directory(ec) && isComplete(it->path()))
      steps.push_back({*n, 0, it->path().string()});
  }
  if (ec)
    fail(dir, "cannot list: " + ec.message());
  for (StepDir &s : steps) {
    std::string state = join(s.path, StateFile);
    s.run = runOf(readState(state), state);
  }
  std::sort(steps.begin(), steps.end(), [](const StepDir &a, const StepDir &b) {
    return std::tie(a.run, a.step) > std::tie(b.run, b.step);
  });
  return steps;
}

std::optional<std::string> latestCheckpoint(const std::string &dir) {
  std::vector<StepDir> steps = listCheckpoints(dir);
  if (steps.empty())
    return std::nullopt;
  return steps.front().path;
}

std::string checkpointStepDir(const std::string &path) {
  std::error_code ec;
  if (fs::exists(fs::path(path) / StateFile, ec))
    return path;
  std::optional<std::string> latest = latestCheckpoint(path);
  if (!latest)
    fail(path, "no checkpoint there");
  return *latest;
}

Checkpoint loadCheckpoint(const std::string &stepDir) {
  Checkpoint ckpt;
  ckpt.dir = stepDir;
  std::error_code ec;
  if (!fs::is_directory(stepDir, ec))
    fail(stepDir, "not a checkpoint directory");
  ckpt.state = readState(join(stepDir, StateFile));
  fs::path name = fs::path(stepDir);
  if (name.filename().empty())
    name = name.parent_path();
  std::optional<int64_t> n = parseStepName(name.filename().string());
  if (n && *n != ckpt.state.step)
    fail(join(stepDir, StateFile), "step " + std::to_string(ckpt.state.step) +
                                       " does not match the directory name " +
                                       name.filename().string());
  std::map<std::string, std::string> metadata;
  ckpt.params = data::readSafetensors(join(stepDir, ParamsFile), &metadata);
  checkTensorDigests(join(stepDir, ParamsFile), ckpt.params, metadata);
  ckpt.optState =
      data::readSafetensors(join(stepDir, OptimizerFile), &metadata);
  checkTensorDigests(join(stepDir, OptimizerFile), ckpt.optState, metadata);
  return ckpt;
}

/// Whether `name` is ".step-<N>.tmp-<pid>" or ".step-<N>.old-<pid>" of a
/// process other than this one that is not running.
static bool isStaleTemp(const std::string &name) {
  size_t end;
  if (name.rfind(".step-", 0) != 0 || !parseNumber(name, 6, &end))
    return false;
  std::string rest = name.substr(end);
  if (rest.rfind(".tmp-", 0) != 0 && rest.rfind(".old-", 0) != 0)
    return false;
  std::optional<int64_t> pid = parseNumber(rest, 5, &end);
  if (!pid || end != rest.size() || *pid <= 0 || *pid > INT32_MAX ||
      *pid == ::getpid())
    return false;
  return ::kill(pid_t(*pid), 0) != 0 && errno == ESRCH;
}

void pruneCheckpoints(const std::string &dir, int keepLast, int64_t run) {
  if (keepLast < 1)
    fail(dir, "must keep at least one checkpoint");
  int kept = 0;
  for (const StepDir &s : listCheckpoints(dir)) {
    if (s.run != run || ++kept <= keepLast)
      continue;
    // Renamed first, so a kill mid-delete leaves a ".old-<pid>" directory
    // the cleanup below removes later, never a half-deleted step-<N>.
    std::string doomed = join(dir, ".step-" + std::to_string(s.step) + ".old-" +
                                       std::to_string(::getpid()));
    std::error_code renameError;
    fs::rename(s.path, doomed, renameError);
    removeAll(renameError ? s.path : doomed);
  }
  std::error_code ec;
  std::vector<std::string> stale;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec))
    if (isStaleTemp(it->path().filename().string()))
      stale.push_back(it->path().string());
  for (const std::string &path : stale)
    removeAll(path);
}

std::string configDifference(const std::string &theirs,
                             const std::string &ours) {
  static const char *const keys[] = {"loss=",     " optimizer=",
                                     " grad_clip=", " lr_schedule=",
                                     " accum=",   " freeze=",
                                     " no_decay="};
  constexpr size_t numKeys = sizeof(keys) / sizeof(keys[0]);
  auto field = [](const std::string &line, size_t k) {
    size_t begin = line.find(keys[k]);
    if (begin == std::string::npos)
      return line; // not one of ours: show it whole
    size_t end = k + 1 < numKeys ? line.find(keys[k + 1], begin) : line.size();
    std::string f = line.substr(
        begin, end == std::string::npos ? std::string::npos : end - begin);
    size_t first = f.find_first_not_of(" \t\n\v\f\r");
    return first == std::string::npos ? std::string() : f.substr(first);
  };
  std::string there, here;
  for (size_t k = 0; k < numKeys; ++k) {
    std::string a = field(theirs, k), b = field(ours, k);
    if (a == b)
      continue;
    there += (there.empty() ? "" : " ") + a;
    here += (here.empty() ? "" : " ") + b;
    if (a == theirs || b == ours)
      break;
  }
  return there + " there, " + here + " here";
}

} // namespace tcc::checkpoint
