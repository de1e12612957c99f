#include "run/cli.h"
#include "run/profile.h"
#include "run/session_engine.h"

#include "exec/inspect.h"
#include "plan/schedule.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <utility>

namespace tcc::run {

const char *runFlagsHelp() {
  return R"(  --data FILE             training data: .npz/.npy arrays named after the
                          batch inputs, or a uint16 token file (.bin)
  --steps N               total optimizer steps (a resumed run continues to N)
  --checkpoint-dir DIR    write DIR/step-N checkpoints (always after the last)
  --checkpoint-every K    also every K steps
  --keep-checkpoints K    keep only this run's newest K checkpoints
  --resume                continue the newest run in --checkpoint-dir (and
                          append to its --log)
  --overwrite             start a new run where another run left checkpoints
                          (they stay) or a --log (it is replaced)
  --on-nan POLICY         at a NaN/inf loss: stop (default), skip (back to the
                          last checkpoint, leaving out the batches since it)
                          or continue
  --allow-repeat          train on .npz data of fewer samples than one batch
  --eval-data FILE        evaluation data (mean loss over its full batches)
  --eval-every K          evaluate every K steps (default: after the last)
  --log FILE.csv          step,loss,lr,seconds,throughput,elapsed rows
  --progress MODE         auto (one live line on a terminal), lines, none
)";
}

std::vector<std::string> flagsInHelp(const std::string &help) {
  std::vector<std::string> flags;
  size_t start = 0;
  while (start < help.size()) {
    size_t end = help.find('\n', start);
    if (end == std::string::npos)
      end = help.size();
    size_t first = help.find_first_not_of(' ', start);
    if (first < end && help[first] == '-') {
      size_t stop = help.find_first_of(" =,\n", first);
      flags.push_back(help.substr(first, std::min(stop, end) - first));
    }
    start = end + 1;
  }
  return flags;
}

namespace {

/// The Levenshtein distance of `a` and `b`.
size_t editDistance(const std::string &a, const std::string &b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1,
                         diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

} // namespace

std::string closestName(const std::string &name,
                        const std::vector<std::string> &known) {
  // Dashes do not count: -steps, --steps and steps are the same mistake.
  auto bare = [](const std::string &flag) {
    return flag.substr(std::min(flag.find_first_not_of('-'), flag.size()));
  };
  std::string best;
  size_t bestDistance = std::max<size_t>(2, bare(name).size() / 3) + 1;
  for (const std::string &candidate : known) {
    size_t d = editDistance(bare(name), bare(candidate));
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

std::string unknownFlagMessage(const std::string &arg,
                               const std::vector<std::string> &known) {
  std::string name = arg.substr(0, arg.find('='));
  if (name != arg && std::find(known.begin(), known.end(), name) != known.end())
    return "flag '" + name + "' takes no value, got '" + arg + "'";
  std::string best = closestName(name, known);
  if (best.empty())
    return "unknown flag '" + arg + "' (see --help)";
  return "unknown flag '" + arg + "'; did you mean '" + best + "'?";
}

namespace {

/// Takes the value of `--name value` / `--name=value` at args[i].
bool takeValue(std::vector<std::string> &args, size_t i,
               const std::string &name, std::string &value, bool &matched,
               std::string &error) {
  const std::string &arg = args[i];
  matched = false;
  if (arg == name) {
    if (i + 1 >= args.size()) {
      error = name + " needs a value";
      return false;
    }
    value = args[i + 1];
    args.erase(args.begin() + i, args.begin() + i + 2);
    matched = true;
  } else if (arg.compare(0, name.size() + 1, name + "=") == 0) {
    value = arg.substr(name.size() + 1);
    args.erase(args.begin() + i);
    matched = true;
  }
  return true;
}

bool toInt(const std::string &name, const std::string &text, int64_t &out,
           std::string &error) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end || errno) {
    error = name + " expects an integer, got '" + text + "'";
    return false;
  }
  out = v;
  return true;
}

/// The runtime's loader says "no such artifact directory" or names the
/// missing manifest; the two common mistakes get a clearer word first: a
/// file (the model, the data) where the artifact belongs, and a directory
/// that is not an artifact.
bool checkArtifactPath(const std::string &path, std::string &error) {
  std::error_code ec;
  std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st))
    return true;
  if (!std::filesystem::is_directory(st)) {
    error = path + ": not an artifact directory (`tcc compile MODEL --loss "
                   "... -o OUT.tcc` writes one)";
    return false;
  }
  if (!std::filesystem::exists(std::filesystem::path(path) / "manifest.json",
                               ec)) {
    error = path + ": not a tcc artifact (no manifest.json)";
    return false;
  }
  return true;
}

/// `--profile` and `--profile-json FILE` (which implies --profile).
struct ProfileFlags {
  bool on = false;
  std::string json;
};

bool parseProfileFlags(std::vector<std::string> &args, ProfileFlags &p,
                       std::string &error) {
  for (size_t i = 0; i < args.size();) {
    if (args[i] == "--profile") {
      p.on = true;
      args.erase(args.begin() + i);
      continue;
    }
    bool matched = false;
    if (!takeValue(args, i, "--profile-json", p.json, matched, error))
      return false;
    if (!matched) {
      ++i;
      continue;
    }
    if (p.json.empty()) {
      error = "--profile-json needs a file name";
      return false;
    }
    p.on = true;
  }
  return true;
}

} // namespace

bool parseRunFlags(std::vector<std::string> &args, RunOptions &o,
                   std::string &error) {
  struct StringFlag {
    const char *name;
    std::string *value;
  } strings[] = {
      {"--data", &o.data},          {"--checkpoint-dir", &o.checkpointDir},
      {"--eval-data", &o.evalData}, {"--log", &o.log},
      {"--progress", &o.progress},  {"--on-nan", &o.onNan}};
  struct IntFlag {
    const char *name;
    int64_t *value;
  } ints[] = {{"--steps", &o.steps},
              {"--checkpoint-every", &o.checkpointEvery},
              {"--keep-checkpoints", &o.keepCheckpoints},
              {"--eval-every", &o.evalEvery}};
  struct BoolFlag {
    const char *name;
    bool *value;
  } bools[] = {{"--resume", &o.resume},
               {"--overwrite", &o.overwrite},
               {"--allow-repeat", &o.allowRepeat}};
  for (size_t i = 0; i < args.size();) {
    bool matched = false;
    for (BoolFlag &f : bools)
      if (args[i] == f.name) {
        *f.value = matched = true;
        args.erase(args.begin() + i);
        break;
      }
    if (matched)
      continue;
    for (StringFlag &f : strings) {
      if (!takeValue(args, i, f.name, *f.value, matched, error))
        return false;
      if (matched)
        break;
    }
    for (IntFlag &f : ints) {
      if (matched)
        break;
      std::string text;
      if (!takeValue(args, i, f.name, text, matched, error))
        return false;
      if (matched && !toInt(f.name, text, *f.value, error))
        return false;
      if (matched && f.value == &o.steps)
        o.stepsGiven = true;
    }
    if (!matched)
      ++i;
  }
  return true;
}

/// The command as the user typed it, for a usage line: `program` is the
/// messages' prefix, "run" or "inspect" in the tcc driver.
static std::string asTyped(const std::string &program) {
  return program.rfind("tcc-run", 0) == 0 ? program : "tcc " + program;
}

/// The flags of `tcc run` besides the loop's.
static const char *kRunOnlyHelp =
    R"(  --backend NAME          cpu (default), or cuda (the artifact needs
                          kernels.fatbin)
  --device N              the device to run on: a CUDA device ordinal
                          (default 0, the first GPU); cpu has only 0
  --profile               time each plan step of the last step; print the time
                          per op family and the slowest steps
  --profile-json FILE     also write that profile as JSON (implies --profile)
)";

int runCommand(const std::string &program, std::vector<std::string> args) {
  const std::string flagsHelp = std::string(runFlagsHelp()) + kRunOnlyHelp;
  auto usage = [&] {
    std::cout << "usage: " << asTyped(program)
              << " ARTIFACT.tcc --data FILE --steps N "
              << "[flags]\n\nTrains a compiled artifact (tcc compile -o "
                 "ARTIFACT.tcc).\n\n"
              << flagsHelp;
    return 0;
  };
  for (const std::string &a : args)
    if (a == "--help" || a == "-h")
      return usage();
  auto fail = [&](const std::string &message) {
    std::cout.flush(); // the message follows what the run printed
    std::cerr << "tcc: " << message << "\n";
    return 1;
  };
  RunOptions options;
  ProfileFlags profileFlags;
  std::string error, backend = "cpu", deviceText = "0";
  if (!parseRunFlags(args, options, error) ||
      !parseProfileFlags(args, profileFlags, error))
    return fail(program + ": " + error);
  for (size_t i = 0; i < args.size();) {
    bool matched = false;
    for (auto [flag, value] : {std::pair{"--backend", &backend},
                               std::pair{"--device", &deviceText}}) {
      if (!takeValue(args, i, flag, *value, matched, error))
        return fail(program + ": " + error);
      if (matched)
        break;
    }
    if (!matched)
      ++i;
  }
  int64_t device = 0;
  if (!toInt("--device", deviceText, device, error))
    return fail(program + ": " + error);
  if (device < 0 || device > INT32_MAX)
    return fail(program +
                ": --device expects a device ordinal (0, 1, ...), "
                "got " +
                deviceText);
  std::string artifact;
  for (const std::string &a : args) {
    if (a.size() > 1 && a[0] == '-')
      return fail(program + ": " +
                  unknownFlagMessage(a, flagsInHelp(flagsHelp + "  --help\n")));
    if (!artifact.empty())
      return fail(program + ": one artifact expected, got '" + artifact +
                  "' and '" + a + "'");
    artifact = a;
  }
  if (artifact.empty())
    return fail(program + ": no artifact given (the OUT.tcc directory that "
                          "`tcc compile -o OUT.tcc` wrote)");
  if (!checkRunOptions(options, program, error))
    return fail(error);
  if (!checkArtifactPath(artifact, error))
    return fail(error);
  std::unique_ptr<SessionEngine> engine =
      SessionEngine::open(artifact, backend, int32_t(device), error);
  if (!engine)
    return fail(error);
  Profiler profiler;
  if (profileFlags.on) {
    if (!profiler.open(profileFlags.json, error))
      return fail(program + ": " + error);
    options.lastStep = profiler.lastStep(engine->session(), backend);
  }
  int status = runTraining(*engine, options, std::cout, std::cerr);
  if (status != 0 || !profileFlags.on)
    return status;
  if (!profiler.report(std::cout, error))
    return fail(program + ": " + error);
  return 0;
}

int inspectCommand(const std::string &program, std::vector<std::string> args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: " << asTyped(program)
              << " ARTIFACT.tcc\n\nPrints an artifact's inputs, parameters, "
                 "kernels, memory plan and peak memory.\n";
    return 0;
  }
  for (const std::string &a : args)
    if (a.size() > 1 && a[0] == '-') {
      std::cerr << "tcc: " << program << ": "
                << unknownFlagMessage(a, {"--help"}) << "\n";
      return 1;
    }
  if (args.size() != 1 || args[0].empty()) {
    std::cerr << "tcc: " << program
              << ": expected one artifact directory (see --help)\n";
    return 1;
  }
  std::string error;
  if (!checkArtifactPath(args[0], error)) {
    std::cerr << "tcc: " << error << "\n";
    return 1;
  }
  if (tcc::rt::inspectArtifact(args[0], std::cout, error) != TCC_OK) {
    std::cerr << "tcc: " << error << "\n";
    return 1;
  }
  return 0;
}

} // namespace tcc::run
