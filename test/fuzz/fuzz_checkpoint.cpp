// libFuzzer target: checkpoint::loadCheckpoint of a step directory whose
// state.json is the input and whose safetensors files are valid.
#include "FuzzUtil.h"

#include "checkpoint/checkpoint.h"

#include <filesystem>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace ck = tcc::checkpoint;
  static const std::string step = [] {
    // One valid checkpoint, saved once; each input replaces its state.json.
    tcc::data::Array w;
    w.name = "w";
    w.dtype = tcc::data::DType::F32;
    w.shape = {2};
    w.bytes.assign(8, 0);
    ck::CheckpointState st;
    st.step = 1;
    return ck::saveCheckpoint(fuzz::scratchDir() + "/ckpt", {w}, {}, st);
  }();
  std::FILE *f = std::fopen((step + "/state.json").c_str(), "wb");
  if (!f)
    std::abort();
  if (size)
    std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    ck::loadCheckpoint(step);
  } catch (const tcc::data::Error &) {
  }
  try {
    ck::listCheckpoints(fuzz::scratchDir() + "/ckpt");
  } catch (const tcc::data::Error &) {
  }
  return 0;
}
