// libFuzzer target: a token shard (raw uint16 or llm.c's headered .bin) read
// by data::TokenBatcher, then a few batches and a seek.
#include "FuzzUtil.h"

#include "data/batcher.h"
#include "data/npz.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fuzz::writeInput("in.bin", data, size);
  try {
    tcc::data::TokenBatcher b(path, 2, 3, "x", "y");
    for (int i = 0; i < 3; ++i)
      b.next();
    b.seek(b.numTokens() / 2);
    b.next();
  } catch (const tcc::data::Error &) {
  }
  return 0;
}
