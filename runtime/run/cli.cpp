#include "run/cli.h"
#include "run/dp_inspect.h"
#include "run/profile.h"
#include "run/session_engine.h"

#include "data/sha256.h"
#include "exec/dp.h"
#include "exec/dp_nccl.h"
#include "exec/gpu_cost.h"
#include "exec/inspect.h"
#include "plan/plan.h"
#include "plan/schedule.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <sstream>
#include <utility>

namespace tcc::run {

const char *runFlagsHelp() {
  return R"(  --data FILE             training data: .npz/.npy arrays named after the
                          batch inputs, or a uint16 token file (.bin); a
                          pattern such as 'train_*.bin' reads several shards
  --steps N               total optimizer steps (a resumed run continues to N)
  --epochs N              in place of --steps: N passes over the data
  --more-steps N          with --resume, in place of --steps: N steps past
                          the checkpoint
  --shuffle               read the samples in a shuffled order per epoch (a
                          token file: random windows, as nanoGPT); resumed
                          runs continue the checkpoint's order
  --seed S                the shuffle's seed (default 0)
  --pack-documents EOT_ID pack a token file's documents, each ended by token
                          EOT_ID, whole into the rows (padding the rest of a
                          row) with their position_ids, for an artifact of
                          `tcc compile --pack-documents`
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
  --eval-batches N        evaluate on the first N batches of --eval-data
  --early-stop patience=P,min_delta=D
                          stop when P evaluations in a row did not lower the
                          eval loss by more than D (min_delta default 0)
  --save-best             keep the checkpoint of the lowest eval loss in
                          CHECKPOINT_DIR/best
  --tensorboard DIR       write TensorBoard event files (loss, lr,
                          throughput, loss scale, eval loss) into DIR
  --log FILE.csv          step,loss,lr,seconds,throughput,elapsed rows (and
                          eval_loss with --eval-data)
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

/// "patience=P,min_delta=D" (min_delta optional).
bool parseEarlyStop(const std::string &text, RunOptions &o,
                    std::string &error) {
  error = "--early-stop expects patience=P[,min_delta=D], got '" + text + "'";
  std::stringstream in(text);
  std::string item;
  bool patience = false;
  while (std::getline(in, item, ',')) {
    size_t eq = item.find('=');
    if (eq == std::string::npos)
      return false;
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    char *end = nullptr;
    if (key == "patience") {
      errno = 0;
      o.patience = std::strtoll(value.c_str(), &end, 10);
      if (value.empty() || *end || errno || o.patience < 1)
        return false;
      patience = true;
    } else if (key == "min_delta") {
      o.minDelta = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(o.minDelta >= 0))
        return false;
    } else {
      return false;
    }
  }
  if (!patience)
    return false;
  error.clear();
  return true;
}

/// `tcc run INFERENCE.tcc --inputs IN.npz [--outputs OUT.npz]
/// [--checkpoint DIR]`: one forward pass through the C API; prints each
/// output's name, dtype, shape and first values.
int forward(const std::string &artifact, const std::string &backend,
            int32_t device, const std::string &inputs,
            const std::string &outputs, const std::string &checkpointPath) {
  auto fail = [](const std::string &message) {
    std::cerr << "tcc: " << message << "\n";
    return 1;
  };
  if (inputs.empty())
    return fail("run: --inputs FILE.npz is required to run an inference "
                "artifact");
  std::string error;
  std::unique_ptr<SessionEngine> engine =
      SessionEngine::open(artifact, backend, device, error);
  if (!engine)
    return fail(error);
  tcc_session *s = engine->session();
  if (tcc_num_outputs(s) == 0)
    return fail("run: " + artifact +
                " is a training artifact: --inputs and --checkpoint run an "
                "inference artifact (tcc compile MODEL -o OUT.tcc, without "
                "--loss); train this one with --data");
  if (!checkpointPath.empty()) {
    std::string from;
    if (!loadCheckpointParams(s, checkpointPath, from, error))
      return fail(error);
    std::cout << "parameters from " << from << "\n";
  }
  std::vector<data::Array> arrays, results;
  try {
    arrays = data::readNpz(inputs);
  } catch (const data::Error &e) {
    return fail(e.what());
  }
  for (int32_t i = 0, n = tcc_num_inputs(s); i < n; ++i) {
    tcc_tensor_info info;
    tcc_input_info(s, i, &info);
    const data::Array *a = data::findArray(arrays, info.name);
    if (!a)
      return fail(inputs + ": no array for input '" + info.name + "'");
    if (tcc_bind_input(s, info.name, a->bytes.data(), a->bytes.size()) !=
        TCC_OK)
      return fail(inputs + ": " + tcc_last_error());
  }
  if (tcc_forward(s) != TCC_OK)
    return fail(tcc_last_error());
  for (int32_t i = 0, n = tcc_num_outputs(s); i < n; ++i) {
    tcc_tensor_info info;
    tcc_output_info(s, i, &info);
    data::Array a;
    a.name = info.name;
    a.dtype = rt::fromApiDType(info.dtype);
    a.shape.assign(info.shape, info.shape + info.rank);
    a.bytes.resize(info.bytes);
    if (tcc_read_output(s, info.name, a.bytes.data(), a.bytes.size()) != TCC_OK)
      return fail(tcc_last_error());
    std::cout << "output '" << a.name << "' " << data::dtypeName(a.dtype)
              << "[";
    for (size_t d = 0; d < a.shape.size(); ++d)
      std::cout << (d ? "x" : "") << a.shape[d];
    std::cout << "]\n";
    results.push_back(std::move(a));
  }
  if (!outputs.empty()) {
    try {
      data::writeNpz(outputs, results);
    } catch (const data::Error &e) {
      return fail(e.what());
    }
  }
  return 0;
}

} // namespace

bool parseRunFlags(std::vector<std::string> &args, RunOptions &o,
                   std::string &error) {
  std::string earlyStop, packText;
  bool packGiven = false;
  struct StringFlag {
    const char *name;
    std::string *value;
  } strings[] = {{"--data", &o.data},
                 {"--checkpoint-dir", &o.checkpointDir},
                 {"--eval-data", &o.evalData},
                 {"--log", &o.log},
                 {"--progress", &o.progress},
                 {"--on-nan", &o.onNan},
                 {"--tensorboard", &o.tensorboard},
                 {"--early-stop", &earlyStop},
                 {"--pack-documents", &packText}};
  struct IntFlag {
    const char *name;
    int64_t *value;
  } ints[] = {{"--steps", &o.steps},
              {"--checkpoint-every", &o.checkpointEvery},
              {"--keep-checkpoints", &o.keepCheckpoints},
              {"--eval-every", &o.evalEvery},
              {"--epochs", &o.epochs},
              {"--more-steps", &o.moreSteps},
              {"--seed", &o.seed},
              {"--eval-batches", &o.evalBatches}};
  struct BoolFlag {
    const char *name;
    bool *value;
  } bools[] = {{"--resume", &o.resume},
               {"--overwrite", &o.overwrite},
               {"--allow-repeat", &o.allowRepeat},
               {"--shuffle", &o.shuffle},
               {"--save-best", &o.saveBest}};
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
      if (matched) {
        packGiven |= f.value == &packText;
        break;
      }
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
      if (matched && f.value == &o.seed)
        o.seedGiven = true;
    }
    if (!matched)
      ++i;
  }
  if (packGiven) {
    std::string ignored;
    if (!toInt("--pack-documents", packText, o.packDocuments, ignored) ||
        o.packDocuments < 0 || o.packDocuments > 65535) {
      error = "--pack-documents expects the end-of-text token id, an integer "
              "in 0..65535, got '" +
              packText + "'";
      return false;
    }
  }
  return earlyStop.empty() || parseEarlyStop(earlyStop, o, error);
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
  --collective-timeout S  under mpirun: a rank whose collective waits longer
                          than S seconds for the others (a rank died or
                          hangs) stops the job with an error (default 300;
                          0 waits forever)
  --zero N                under mpirun: 1 shards the optimizer state over the
                          ranks (ZeRO-1: the gradients are reduce-scattered,
                          each rank updates its slice of every parameter,
                          then the ranks gather the parameters); 0, the
                          default, keeps it whole on every rank

An inference artifact (tcc compile MODEL -o OUT.tcc, without --loss) runs its
forward pass instead: ARTIFACT.tcc --inputs IN.npz [--outputs OUT.npz]
[--checkpoint DIR]
  --inputs FILE.npz       one array per input, named after it
  --outputs FILE.npz      write the outputs, named after them
  --checkpoint DIR        the parameters of a training checkpoint (a step-N
                          directory, or the latest under DIR)
)";

namespace {
/// Discards what is written to it: the progress of ranks other than 0.
class NullBuffer : public std::streambuf {
protected:
  int overflow(int c) override { return c; }
};

/// The digest of an artifact's plan and manifest: ranks must agree on it.
std::string artifactDigest(const std::string &artifact) {
  std::string all;
  for (const char *file : {"manifest.json", "plan.json"}) {
    try {
      all += data::digestFile((std::filesystem::path(artifact) / file).string())
                 .sha256;
    } catch (const std::exception &) {
      all += "-"; // the session reports the missing file
    }
  }
  return all;
}
} // namespace

static int runTrainingCommand(const std::string &program,
                              std::vector<std::string> args,
                              const rt::dp::World &world);

int runCommand(const std::string &program, std::vector<std::string> args) {
  for (const std::string &a : args)
    if (a == "--help" || a == "-h")
      return runTrainingCommand(program, std::move(args), {});
  rt::dp::World world;
  try {
    world = rt::dp::joinWorld();
  } catch (const data::Error &e) {
    std::cerr << "tcc: " << program << ": " << e.what() << "\n";
    return 1;
  }
  int status = runTrainingCommand(program, std::move(args), world);
  // Other ranks may wait in a collective for this one: end them all. A
  // signal's stop (128 + it) is one the ranks agreed on after the same step
  // (loop.cpp): they all end so, none waits.
  if (status != 0 && status < 128 && world.size > 1) {
    std::cout.flush();
    std::cerr.flush();
    rt::dp::abortWorld(status);
  }
  rt::dp::leaveWorld();
  return status;
}

static int runTrainingCommand(const std::string &program,
                              std::vector<std::string> args,
                              const rt::dp::World &world) {
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
    // One write: under mpirun the ranks' output and mpirun's own messages
    // interleave by write, and a line must stay whole.
    std::cerr << ("tcc: " + message + "\n");
    return 1;
  };
  RunOptions options;
  ProfileFlags profileFlags;
  std::string error, backend = "cpu", deviceText = "0";
  std::string inputs, outputs, checkpointPath, timeoutText = "300",
                                               zeroText = "0";
  if (!parseRunFlags(args, options, error) ||
      !parseProfileFlags(args, profileFlags, error))
    return fail(program + ": " + error);
  for (size_t i = 0; i < args.size();) {
    bool matched = false;
    for (auto [flag, value] :
         {std::pair{"--backend", &backend}, std::pair{"--device", &deviceText},
          std::pair{"--inputs", &inputs}, std::pair{"--outputs", &outputs},
          std::pair{"--checkpoint", &checkpointPath},
          std::pair{"--collective-timeout", &timeoutText},
          std::pair{"--zero", &zeroText}}) {
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
  if (!inputs.empty() || !outputs.empty() || !checkpointPath.empty()) {
    if (!options.data.empty() || options.stepsGiven || profileFlags.on)
      return fail(program + ": --inputs runs an inference artifact's forward "
                            "pass: it takes no training flags");
    if (!checkArtifactPath(artifact, error))
      return fail(error);
    return forward(artifact, backend, int32_t(device), inputs, outputs,
                   checkpointPath);
  }
  if (!checkRunOptions(options, program, error))
    return fail(error);
  if (!checkArtifactPath(artifact, error))
    return fail(error);
  char *end = nullptr;
  double timeout = std::strtod(timeoutText.c_str(), &end);
  if (timeoutText.empty() || *end || !(timeout >= 0 && timeout < 1e9))
    return fail(program +
                ": --collective-timeout expects seconds (a number "
                ">= 0), got '" +
                timeoutText + "'");
  if (zeroText != "0" && zeroText != "1")
    return fail(program + ": --zero expects 0 or 1 (ZeRO-1 shards the "
                          "optimizer state; stages 2 and 3 are not "
                          "implemented), got '" +
                zeroText + "'");
  int64_t zeroStage = zeroText == "1" ? 1 : 0;
  options.rank = world.rank;
  options.worldSize = world.size;
  options.shardedState = zeroStage == 1 && world.size > 1;
  static NullBuffer discard;
  static std::ostream nowhere(&discard);
  std::ostream &out = world.rank == 0 ? std::cout : nowhere;
  if (world.size > 1) {
    if (!rt::dp::sameOnAllRanks(artifactDigest(artifact)))
      return fail(program + ": rank " + std::to_string(world.rank) + ": " +
                  artifact +
                  " differs between the ranks (plan.json or manifest.json); "
                  "every rank must run the same artifact");
    std::shared_ptr<rt::dp::Group> group(
        rt::dp::openGroup(world.comm, timeout).release());
    options.sumOverRanks = [group](std::vector<double> &values,
                                   const std::string &what) {
      group->start(reinterpret_cast<uint8_t *>(values.data()),
                   int64_t(values.size()), data::DType::F64, /*mean=*/false,
                   what);
      group->waitAll();
    };
    if (world.rank != 0) { // rank 0 alone logs and writes the profile
      profileFlags.json.clear();
      options.log.clear();
      options.tensorboard.clear();
      options.progress = "none";
    }
  }
  // On CUDA the ranks reduce over NCCL, the local rank r on device
  // --device + r; the communicator outlives the session.
  std::unique_ptr<void, void (*)(void *)> nccl(nullptr,
                                               rt::dp::destroyNcclComm);
  void *comm = world.comm;
  if (world.size > 1 && backend == "cuda") {
    if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"))
      device += std::atoi(local);
    try {
      nccl.reset(rt::dp::createNcclComm(world.rank, world.size, int(device),
                                        rt::dp::broadcastFromRank0));
    } catch (const data::Error &e) {
      return fail(program + ": " + e.what());
    }
    comm = nccl.get();
  }
  std::unique_ptr<SessionEngine> engine = SessionEngine::open(
      artifact, backend, int32_t(device), error, comm, timeout, zeroStage);
  if (!engine)
    return fail(error);
  Profiler profiler;
  if (profileFlags.on) {
    if (!profiler.open(profileFlags.json, error))
      return fail(program + ": " + error);
    options.lastStep = profiler.lastStep(engine->session(), backend);
  }
  int status = runTraining(*engine, options, out, std::cerr);
  if (status != 0 || !profileFlags.on)
    return status;
  if (!profiler.report(out, error))
    return fail(program + ": " + error);
  return 0;
}

int inspectCommand(const std::string &program, std::vector<std::string> args) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
    std::cout << "usage: " << asTyped(program)
              << " ARTIFACT.tcc [--gpu NAME [--tf32]] [--data-parallel N "
                 "--link-gbps B\n       [--profile-json FILE]]\n\nPrints an "
                 "artifact's "
                 "inputs, parameters, kernels, memory plan and peak memory.\n\n"
                 "  --gpu NAME   also the GPU cost model on NAME ("
              << tcc::rt::gpuSpecNames()
              << "): every step's launch,\n"
                 "               bytes, FLOPs and roofline time, the predicted "
                 "step time and\n"
                 "               tokens/s, the kernels that cannot fill the "
                 "device (an estimate)\n"
                 "  --tf32       with --gpu: f32 GEMMs on TF32 tensor cores "
                 "(TCC_CUDA_TF32=1)\n"
                 "  --data-parallel N --link-gbps B [--profile-json FILE]\n"
                 "               in place of the summary, the scaling "
                 "estimate on N ranks\n"
                 "               over a B Gbit/s link: per gradient bucket "
                 "the ring all-reduce\n"
                 "               and what backward hides of it, the exposed "
                 "communication and\n"
                 "               the efficiency, from the step times FILE "
                 "(tcc run\n"
                 "               --profile-json) measured or --gpu NAME "
                 "predicts\n";
    return 0;
  }
  const tcc::rt::GpuSpec *gpu = nullptr;
  bool tf32 = false;
  DpInspectFlags dp;
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string flagError;
    if (takeDpInspectFlag(args, i, dp, flagError))
      continue;
    if (!flagError.empty()) {
      std::cerr << "tcc: " << program << ": " << flagError << "\n";
      return 1;
    }
    const std::string &a = args[i];
    if (a == "--gpu" || a.rfind("--gpu=", 0) == 0) {
      std::string name = a == "--gpu" ? (i + 1 < args.size() ? args[++i] : "")
                                      : a.substr(6);
      gpu = tcc::rt::findGpuSpec(name);
      if (!gpu) {
        std::cerr << "tcc: " << program << ": --gpu '" << name
                  << "': expected one of " << tcc::rt::gpuSpecNames() << "\n";
        return 1;
      }
      continue;
    }
    if (a == "--tf32") {
      tf32 = true;
      continue;
    }
    if (a.size() > 1 && a[0] == '-') {
      std::vector<std::string> known = {"--help", "--gpu", "--tf32"};
      known.insert(known.end(), kDpInspectFlags.begin(), kDpInspectFlags.end());
      std::cerr << "tcc: " << program << ": " << unknownFlagMessage(a, known)
                << "\n";
      return 1;
    }
    rest.push_back(a);
  }
  if (tf32 && !gpu) {
    std::cerr << "tcc: " << program << ": --tf32 needs --gpu NAME\n";
    return 1;
  }
  args = rest;
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
  if (dp.any())
    return printDpInspect(program, args[0], dp, gpu, tf32);
  if (tcc::rt::inspectArtifact(args[0], std::cout, error, gpu, tf32) !=
      TCC_OK) {
    std::cerr << "tcc: " << error << "\n";
    return 1;
  }
  return 0;
}

} // namespace tcc::run
