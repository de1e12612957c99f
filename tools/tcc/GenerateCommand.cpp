// `tcc generate ARTIFACT --prompt-tokens 1,2,3 [--checkpoint DIR]`: token
// generation with a language model's inference artifact (`tcc compile MODEL
// -o GEN.tcc`, no --loss), through the runtime's C API as deployments use
// it. The artifact's forward takes one int64 [B, T] input and returns
// logits [B, T, V]; the context (the last T tokens, as nanoGPT's generate
// crops to its block size) is left-aligned in row 0 and padded with token 0,
// and the logits at its last position choose the next token. A causal model
// (a GPT) does not see the padding from there.
#include "Commands.h"

#include "api/tcc_runtime.h"
#include "data/random.h"
#include "run/cli.h"
#include "run/session_engine.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

namespace tcc::driver {

namespace {

const char *usage =
    R"(usage: tcc generate ARTIFACT.tcc --prompt-tokens 1,2,3 [flags]

Continues a token sequence with a language model's inference artifact (tcc
compile MODEL -o GEN.tcc, without --loss): greedy by default, or sampled.
Prints the prompt and the new tokens, comma-separated, on one line.

  --prompt-tokens LIST    the prompt: comma-separated token ids
  --checkpoint DIR        the parameters of a training checkpoint (a step-N
                          directory, or the latest under a checkpoint
                          directory) instead of the artifact's own
  --max-new-tokens N      tokens to generate (default 16)
  --temperature T         0 (default): the most likely token; T > 0: sample
                          from softmax(logits / T)
  --top-k K               sample among the K most likely tokens only
  --seed S                the sampling's seed (default 0)
  --backend NAME          cpu (default) or cuda
  --device N              the device to run on (default 0)
)";

int fail(const std::string &message) {
  std::cout.flush();
  std::cerr << "tcc: generate: " << message << "\n";
  return 1;
}

} // namespace

int generateCommand(std::vector<std::string> args) {
  std::string artifact, checkpointPath, prompt, backend = "cpu";
  int64_t maxNew = 16, topK = 0, seed = 0, device = 0;
  double temperature = 0;
  std::string error;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i], value;
    if (arg == "--help" || arg == "-h") {
      std::cout << usage;
      return 0;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      if (!artifact.empty())
        return fail("one artifact expected, got '" + artifact + "' and '" +
                    arg + "'");
      artifact = arg;
      continue;
    }
    size_t eq = arg.find('=');
    static const std::vector<std::string> known = tcc::run::flagsInHelp(usage);
    if (std::find(known.begin(), known.end(), arg.substr(0, eq)) ==
        known.end())
      return fail(tcc::run::unknownFlagMessage(arg, known));
    if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[++i];
    } else {
      return fail(arg + " needs a value");
    }
    bool ok = true;
    if (arg == "--checkpoint")
      checkpointPath = value;
    else if (arg == "--prompt-tokens")
      prompt = value;
    else if (arg == "--backend")
      backend = value;
    else if (arg == "--max-new-tokens")
      ok = tcc::run::toInt(arg, value, maxNew, error);
    else if (arg == "--top-k")
      ok = tcc::run::toInt(arg, value, topK, error);
    else if (arg == "--seed")
      ok = tcc::run::toInt(arg, value, seed, error);
    else if (arg == "--device")
      ok = tcc::run::toInt(arg, value, device, error);
    else if (arg == "--temperature") {
      char *end = nullptr;
      temperature = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !(temperature >= 0) ||
          !std::isfinite(temperature)) {
        error = "--temperature expects a number >= 0, got '" + value + "'";
        ok = false;
      }
    } else
      return fail("unknown flag '" + arg + "' (see --help)");
    if (!ok)
      return fail(error);
  }
  if (artifact.empty())
    return fail("no artifact given (an inference artifact: tcc compile MODEL "
                "-o GEN.tcc, without --loss)");
  if (maxNew < 0 || topK < 0 || device < 0 || device > INT32_MAX)
    return fail("--max-new-tokens, --top-k and --device take numbers >= 0");
  std::vector<int64_t> tokens;
  {
    std::stringstream in(prompt);
    std::string item;
    while (std::getline(in, item, ',')) {
      int64_t t = 0;
      if (!tcc::run::toInt("--prompt-tokens", item, t, error))
        return fail(error);
      tokens.push_back(t);
    }
  }
  if (tokens.empty())
    return fail("--prompt-tokens 1,2,3 (at least one token id) is required");

  tcc_session_options options;
  tcc_session_options_init(&options);
  options.backend = backend.c_str();
  options.device = int32_t(device);
  tcc_session *s = nullptr;
  if (tcc_session_open(artifact.c_str(), &options, &s) != TCC_OK)
    return fail(tcc_last_error());
  struct Close {
    tcc_session *s;
    ~Close() { tcc_session_close(s); }
  } close{s};

  tcc_tensor_info in, out;
  if (tcc_num_outputs(s) == 0)
    return fail(artifact + " is a training artifact; generate runs the "
                           "forward pass of an inference artifact (tcc "
                           "compile MODEL -o GEN.tcc, without --loss) with "
                           "--checkpoint DIR of the training run");
  if (tcc_num_inputs(s) != 1 || tcc_input_info(s, 0, &in) != TCC_OK ||
      in.dtype != TCC_I64 || in.rank != 2 ||
      tcc_output_info(s, 0, &out) != TCC_OK || out.dtype != TCC_F32 ||
      out.rank != 3 || out.shape[0] != in.shape[0] ||
      out.shape[1] != in.shape[1])
    return fail(artifact + ": not a language model: generate needs one int64 "
                           "[B, T] input and f32 logits [B, T, V] as the "
                           "first output");
  int64_t B = in.shape[0], T = in.shape[1], V = out.shape[2];
  for (int64_t t : tokens)
    if (t < 0 || t >= V)
      return fail("--prompt-tokens: token " + std::to_string(t) +
                  " is outside the vocabulary [0, " + std::to_string(V) + ")");
  if (!checkpointPath.empty()) {
    std::string from;
    if (!run::loadCheckpointParams(s, checkpointPath, from, error))
      return fail(error);
  }
  std::string outName = out.name;
  data::SplitMix64 rng(data::mix64(uint64_t(seed)));
  std::vector<int64_t> input(static_cast<size_t>(B * T));
  std::vector<float> logits(static_cast<size_t>(B * T * V));
  std::vector<double> p(static_cast<size_t>(V));
  std::vector<int64_t> order(static_cast<size_t>(V));
  for (int64_t n = 0; n < maxNew; ++n) {
    int64_t len = std::min<int64_t>(int64_t(tokens.size()), T);
    std::fill(input.begin(), input.end(), 0);
    for (int64_t b = 0; b < B; ++b)
      std::copy(tokens.end() - len, tokens.end(), input.begin() + b * T);
    if (tcc_bind_input(s, in.name, input.data(), input.size() * 8) != TCC_OK ||
        tcc_forward(s) != TCC_OK ||
        tcc_read_output(s, outName.c_str(), logits.data(), logits.size() * 4) !=
            TCC_OK)
      return fail(tcc_last_error());
    const float *row = logits.data() + (len - 1) * V;
    int64_t next = 0;
    if (temperature == 0) {
      next = std::max_element(row, row + V) - row; // the first of ties
    } else {
      std::iota(order.begin(), order.end(), 0);
      int64_t k = topK > 0 && topK < V ? topK : V;
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t a, int64_t b) { return row[a] > row[b]; });
      double top = row[order[0]], sum = 0;
      for (int64_t i = 0; i < k; ++i)
        sum += p[size_t(i)] =
            std::exp((row[order[size_t(i)]] - top) / temperature);
      double u = double(rng.next() >> 11) * 0x1p-53 * sum;
      next = order[size_t(k - 1)];
      for (int64_t i = 0; i < k; ++i) {
        if (u < p[size_t(i)]) {
          next = order[size_t(i)];
          break;
        }
        u -= p[size_t(i)];
      }
    }
    tokens.push_back(next);
  }
  for (size_t i = 0; i < tokens.size(); ++i)
    std::cout << (i ? "," : "") << tokens[i];
  std::cout << "\n";
  return 0;
}

} // namespace tcc::driver
