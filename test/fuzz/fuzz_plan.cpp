// libFuzzer target: the artifact loader's readers, manifest.json and
// plan.json (runtime/plan), on arbitrary text. Every input is read or
// refused with rt::Error; nothing else may happen.
#include "FuzzUtil.h"

#include "plan/plan_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The first byte picks the file, so one corpus of both kinds feeds both.
  if (size == 0)
    return 0;
  bool manifest = data[0] == '{' ? false : (data[0] & 1);
  if (manifest) {
    std::string path = fuzz::writeInput("manifest.json", data + 1, size - 1);
    try {
      tcc::rt::readManifestJson(path);
    } catch (const tcc::rt::Error &) {
    }
    return 0;
  }
  std::string path = fuzz::writeInput("plan.json", data, size);
  for (tcc::rt::Kind kind : {tcc::rt::Kind::Training, tcc::rt::Kind::Inference}) {
    tcc::rt::Manifest m;
    m.kind = kind;
    try {
      tcc::rt::readPlanJson(path, m, {}, "");
    } catch (const tcc::rt::Error &) {
    }
  }
  return 0;
}
