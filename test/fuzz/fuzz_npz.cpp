// libFuzzer target: data::readNpz (and readNpy) on arbitrary bytes.
#include "FuzzUtil.h"

#include "data/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The first byte picks the reader, so one corpus feeds both.
  bool npy = size > 0 && (data[0] & 1);
  std::string path =
      fuzz::writeInput(npy ? "in.npy" : "in.npz", data, size);
  try {
    if (npy) {
      tcc::data::Array a = tcc::data::readNpy(path);
      if (a.bytes.size() !=
          size_t(a.numElements()) * tcc::data::dtypeSize(a.dtype))
        __builtin_trap();
    } else {
      for (const tcc::data::Array &a : tcc::data::readNpz(path))
        if (a.bytes.size() !=
            size_t(a.numElements()) * tcc::data::dtypeSize(a.dtype))
          __builtin_trap();
    }
  } catch (const tcc::data::Error &) {
  }
  return 0;
}
