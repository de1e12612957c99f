#include "checkpoint/fingerprint.h"

#include <cstdio>

namespace tcc::checkpoint {

std::string describeSignature(data::DType dtype,
                              const std::vector<int64_t> &shape) {
  std::string s = std::string(data::dtypeName(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string modelFingerprint(const std::vector<TensorSignature> &params,
                             const std::vector<TensorSignature> &batch,
                             const std::string &config) {
  std::string text = "tcc-train-fingerprint-v1\n";
  for (const TensorSignature &p : params)
    text += "param " + p.name + " " + describeSignature(p.dtype, p.shape) + "\n";
  for (const TensorSignature &b : batch)
    text += "batch " + b.name + " " + describeSignature(b.dtype, b.shape) + "\n";
  text += "config " + config + "\n";
  // FNV-1a: fixed by its definition, unlike std::hash.
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text)
    hash = (hash ^ c) * 0x100000001b3ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(hash));
  return hex;
}

} // namespace tcc::checkpoint
