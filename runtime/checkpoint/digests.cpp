//===- digests.cpp - checksums of a checkpoint's tensors ------------------===//

#include "checkpoint/digests.h"

#include "data/sha256.h"

namespace tcc::checkpoint {

static const char kPrefix[] = "sha256:";

std::map<std::string, std::string>
tensorDigests(const std::vector<data::Array> &arrays) {
  std::map<std::string, std::string> out;
  for (const data::Array &a : arrays)
    out[kPrefix + a.name] = data::sha256Hex(a.bytes.data(), a.bytes.size());
  return out;
}

void checkTensorDigests(const std::string &path,
                        const std::vector<data::Array> &arrays,
                        const std::map<std::string, std::string> &metadata) {
  bool any = false;
  for (const auto &entry : metadata)
    any |= entry.first.compare(0, sizeof kPrefix - 1, kPrefix) == 0;
  if (!any)
    return; // saved before checkpoints had checksums
  for (const data::Array &a : arrays) {
    auto it = metadata.find(kPrefix + a.name);
    if (it == metadata.end())
      throw data::Error(path + ": no checksum for tensor '" + a.name + "'");
    if (it->second != data::sha256Hex(a.bytes.data(), a.bytes.size()))
      throw data::Error(path + ": tensor '" + a.name +
                        "' is damaged (its SHA-256 differs from the one "
                        "saved with it)");
  }
}

} // namespace tcc::checkpoint
