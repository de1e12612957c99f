#include "checkpoint/compat.h"

#include <filesystem>

namespace fs = std::filesystem;

namespace tcc::checkpoint {

std::string resolveCheckpoint(const std::string &path) {
  std::error_code ec;
  if (fs::exists(fs::path(path) / StateFile, ec))
    return path;
  std::optional<std::string> latest = latestCheckpoint(path);
  if (!latest)
    throw Error("no checkpoint in '" + path + "'");
  return *latest;
}

std::string incompatibility(const Checkpoint &ck,
                            const std::string &fingerprint,
                            const std::string &config) {
  if (ck.state.modelFingerprint == fingerprint)
    return "";
  auto it = ck.state.extra.find("train_config");
  if (it != ck.state.extra.end() && it->is_string() &&
      it->get<std::string>() != config)
    return "'" + ck.dir + "' was trained with another configuration: " +
           configDifference(it->get<std::string>(), config);
  return "'" + ck.dir +
         "' is a checkpoint of another model (its parameters or batch inputs "
         "differ in name, dtype or shape)";
}

} // namespace tcc::checkpoint
