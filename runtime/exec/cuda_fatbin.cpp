//===- cuda_fatbin.cpp - which GPUs an artifact's fatbin runs on ----------===//
//
// The fatbin reader and `tcc inspect`'s verdict for the cuda backend
// (cuda_calls.h), decided without a GPU or libcuda.
//
//===----------------------------------------------------------------------===//

#include "exec/cuda_calls.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

namespace tcc::rt {

bool FatbinCode::runsOn(int arch) const {
  for (int a : sass)
    if (a / 10 == arch / 10 && a <= arch)
      return true;
  for (int a : ptx)
    if (a <= arch)
      return true;
  return false;
}

// The layout nvcc writes (little-endian): one or more fatbins, each a
// 16-byte header {u32 magic 0xBA55ED50, u16 version, u16 header size,
// u64 entries' bytes} followed by its entries, each {u16 kind (1 PTX,
// 2 ELF/SASS), u16, u32 header size, u64 payload bytes, u32, u32, u16,
// u16, u32 arch (80 for sm_80), ...} and its payload.
bool readFatbinCode(const std::string &path, FatbinCode &code,
                    std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot be read";
    return false;
  }
  std::string bytes((std::istreambuf_iterator<char>(in)),
                    std::istreambuf_iterator<char>());
  auto u16 = [&](size_t at) {
    uint16_t v;
    std::memcpy(&v, bytes.data() + at, 2);
    return v;
  };
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, bytes.data() + at, 4);
    return v;
  };
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  code = FatbinCode();
  size_t at = 0;
  while (at + 16 <= bytes.size() && u32(at) == 0xBA55ED50u) {
    uint64_t header = u16(at + 6), size = u64(at + 8);
    if (header < 16 || size > bytes.size() - at - 16 ||
        header > bytes.size() - at - size) {
      error = "a fatbin header runs past the end of the file";
      return false;
    }
    size_t entry = at + header, end = at + header + size;
    while (entry + 32 <= end) {
      uint16_t kind = u16(entry);
      uint64_t entryHeader = u32(entry + 4), payload = u64(entry + 8);
      if (entryHeader < 32 || entryHeader > end - entry ||
          payload > end - entry - entryHeader) {
        error = "a fatbin entry runs past its fatbin";
        return false;
      }
      int arch = int(u32(entry + 28));
      if (kind == 2)
        code.sass.push_back(arch);
      else if (kind == 1)
        code.ptx.push_back(arch);
      entry += entryHeader + payload;
    }
    at = end;
  }
  if (at == 0) {
    error = "not a CUDA fatbin (no fatbin header)";
    return false;
  }
  return true;
}

std::string cudaBackendVerdict(const Artifact &art) {
  for (const Function &fn : art.functions)
    for (size_t s = 0; s < fn.steps.size(); ++s) {
      const Step &step = fn.steps[s];
      if (step.kind != Step::Call)
        continue;
      std::string why = cudaCallUnsupported(fn, step);
      if (!why.empty())
        return "cannot run " + fn.name + " step " + std::to_string(s) + " (" +
               opName(step.op) + "): " + why;
    }
  // The path the backend loads (cuda_backend.cpp).
  auto listed = art.manifest.files.find("cuda_kernels");
  std::string rel = listed == art.manifest.files.end()
                        ? std::string("kernels/kernels.fatbin")
                        : listed->second;
  std::string path = art.dir + "/" + rel;
  std::ifstream probe(path, std::ios::binary);
  if (!probe) {
    if (art.hasKernelSteps())
      return "cannot run its kernel steps: " + rel + " is missing";
    return "runs every step (no kernel steps: no fatbin needed)";
  }
  FatbinCode code;
  std::string error;
  if (!readFatbinCode(path, code, error))
    return art.hasKernelSteps()
               ? "cannot run its kernel steps: " + rel + ": " + error
               : "runs every step (no kernel steps; " + rel + ": " + error +
                     ")";
  std::string archs;
  for (int a : code.sass)
    archs += (archs.empty() ? "" : ", ") + std::string("sm_") +
             std::to_string(a);
  for (int a : code.ptx)
    archs += (archs.empty() ? "" : ", ") + std::string("compute_") +
             std::to_string(a) + " PTX";
  if (archs.empty())
    archs = "no code";
  bool on80 = code.runsOn(80), on90 = code.runsOn(90);
  if (art.hasKernelSteps() && !on80 && !on90)
    return "cannot run its kernel steps on sm_80 or sm_90: " + rel +
           " holds " + archs;
  std::string note = rel + ": " + archs;
  if (!on80 || !on90)
    note += std::string("; nothing for ") +
            (on80 ? "sm_90" : on90 ? "sm_80" : "sm_80 or sm_90");
  return "runs every step (" + note + ")";
}

} // namespace tcc::rt
