// libFuzzer target: data::readSafetensors on arbitrary bytes. Every input is
// read or refused with data::Error; nothing else may happen.
#include "FuzzUtil.h"

#include "data/npz.h"
#include "data/safetensors.h"

#include <map>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fuzz::writeInput("in.safetensors", data, size);
  try {
    std::map<std::string, std::string> meta;
    std::vector<tcc::data::Array> arrays =
        tcc::data::readSafetensors(path, &meta);
    for (const tcc::data::Array &a : arrays)
      if (a.bytes.size() != size_t(a.numElements()) *
                                tcc::data::dtypeSize(a.dtype))
        __builtin_trap(); // the reader promised consistent arrays
  } catch (const tcc::data::Error &) {
  }
  return 0;
}
