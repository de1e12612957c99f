//===- dp_inspect.cpp - `tcc inspect --data-parallel N` flags -------------===//

#include "run/dp_inspect.h"

#include "exec/dp_estimate.h"
#include "run/profile.h"

#include <cstdlib>
#include <iostream>

namespace tcc::run {

const std::vector<std::string> kDpInspectFlags = {
    "--data-parallel", "--link-gbps", "--profile-json"};

bool takeDpInspectFlag(const std::vector<std::string> &args, size_t &i,
                       DpInspectFlags &flags, std::string &error) {
  const std::string &a = args[i];
  std::string *values[] = {&flags.ranks, &flags.linkGbps, &flags.profileJson};
  for (size_t k = 0; k < kDpInspectFlags.size(); ++k) {
    const std::string &name = kDpInspectFlags[k];
    if (a.rfind(name + "=", 0) == 0) {
      *values[k] = a.substr(name.size() + 1);
    } else if (a == name) {
      if (i + 1 >= args.size()) {
        error = name + " needs a value";
        return false;
      }
      *values[k] = args[++i];
    } else {
      continue;
    }
    if (values[k]->empty())
      error = name + " needs a value";
    return error.empty();
  }
  return false;
}

int printDpInspect(const std::string &program, const std::string &artifact,
                   const DpInspectFlags &flags, const rt::GpuSpec *gpu,
                   bool tf32) {
  auto fail = [&](const std::string &message) {
    std::cerr << "tcc: " << program << ": " << message << "\n";
    return 1;
  };
  if (flags.ranks.empty())
    return fail("--link-gbps and --profile-json go with --data-parallel N");
  rt::DpEstimateOptions o;
  char *end = nullptr;
  long ranks = std::strtol(flags.ranks.c_str(), &end, 10);
  if (*end || ranks < 2 || ranks > 1000000)
    return fail("--data-parallel expects a number of ranks >= 2, got '" +
                flags.ranks + "'");
  o.ranks = int(ranks);
  o.linkGbps = std::strtod(flags.linkGbps.c_str(), &end);
  if (flags.linkGbps.empty() || *end || !(o.linkGbps > 0 && o.linkGbps < 1e9))
    return fail("--data-parallel needs --link-gbps B, the link's rate in "
                "Gbit/s (a number > 0)" +
                (flags.linkGbps.empty() ? std::string()
                                        : ", got '" + flags.linkGbps + "'"));
  std::string error;
  if (!flags.profileJson.empty()) {
    if (gpu)
      return fail("--profile-json (measured step times) and --gpu (the cost "
                  "model's) exclude each other");
    if (!readProfileJson(flags.profileJson, o.measuredMs, error))
      return fail("--profile-json " + error);
    o.measuredFrom = flags.profileJson;
  } else if (!gpu) {
    return fail("--data-parallel needs train_step's step times: "
                "--profile-json FILE (written by `tcc run --profile-json`) "
                "or --gpu NAME (the cost model)");
  }
  o.gpu = gpu;
  o.tf32 = tf32;
  if (rt::inspectDataParallel(artifact, o, std::cout, error) != TCC_OK) {
    std::cerr << "tcc: " << error << "\n";
    return 1;
  }
  return 0;
}

} // namespace tcc::run
