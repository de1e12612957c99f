//===- dp_inspect.h - `tcc inspect --data-parallel N` flags ------*- C++
//-*-===//
//
// The command line of the data-parallel scaling estimate
// (exec/dp_estimate.h): --data-parallel N, --link-gbps B and the step times
// from --profile-json FILE (a `tcc run --profile-json` file) or --gpu NAME.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_DP_INSPECT_H
#define TCC_RUNTIME_RUN_DP_INSPECT_H

#include <string>
#include <vector>

namespace tcc::rt {
struct GpuSpec;
}

namespace tcc::run {

/// The flags as given ("" when absent).
struct DpInspectFlags {
  std::string ranks, linkGbps, profileJson;
  bool any() const {
    return !ranks.empty() || !linkGbps.empty() || !profileJson.empty();
  }
};

/// The flag names, for unknownFlagMessage.
extern const std::vector<std::string> kDpInspectFlags;

/// Takes args[i] and its value (`--flag V` or `--flag=V`, advancing `i`)
/// when it is one of the flags: true. False otherwise, or with `error` set
/// when the value is missing.
bool takeDpInspectFlag(const std::vector<std::string> &args, size_t &i,
                       DpInspectFlags &flags, std::string &error);

/// Checks the flags and prints the estimate of `artifact` to stdout; the
/// exit status (1 after a "tcc: PROGRAM: ..." line on stderr).
int printDpInspect(const std::string &program, const std::string &artifact,
                   const DpInspectFlags &flags, const rt::GpuSpec *gpu,
                   bool tf32);

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_DP_INSPECT_H
