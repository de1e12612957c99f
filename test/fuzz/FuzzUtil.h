// Shared by the libFuzzer targets (test/fuzz, docs/fuzzing.md): the readers
// under test take paths, so each input is written to a per-process file.
#ifndef TCC_TEST_FUZZ_FUZZUTIL_H
#define TCC_TEST_FUZZ_FUZZUTIL_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace fuzz {

/// A directory of this process under $TMPDIR (or /tmp).
inline const std::string &scratchDir() {
  static const std::string dir = [] {
    const char *tmp = std::getenv("TMPDIR");
    std::string d = std::string(tmp && *tmp ? tmp : "/tmp") + "/tcc-fuzz-" +
                    std::to_string(::getpid());
    std::string cmd = "mkdir -p '" + d + "'";
    if (std::system(cmd.c_str()) != 0)
      std::abort();
    return d;
  }();
  return dir;
}

/// Writes `size` bytes to scratchDir()/name and returns its path.
inline std::string writeInput(const std::string &name, const uint8_t *data,
                              size_t size) {
  std::string path = scratchDir() + "/" + name;
  std::FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    std::abort();
  if (size && std::fwrite(data, 1, size, f) != size)
    std::abort();
  std::fclose(f);
  return path;
}

} // namespace fuzz

#endif // TCC_TEST_FUZZ_FUZZUTIL_H
