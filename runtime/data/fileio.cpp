//===- fileio.cpp - bounds-checked reads and atomic writes ----------------===//

#include "data/fileio.h"

#include "data/npz.h"

#include <cerrno>
#include <climits>
#include <cstring>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace tcc::data::detail {

[[noreturn]] static void fail(const std::string &path, const std::string &msg) {
  throw Error(path + ": " + msg);
}

InFile::InFile(const std::string &path) : path(path) {
  f = std::fopen(path.c_str(), "rb");
  if (!f)
    fail(path, std::string("cannot open: ") + std::strerror(errno));
  long end = -1;
  if (std::fseek(f, 0, SEEK_END) == 0)
    end = std::ftell(f);
  if (end < 0) {
    std::fclose(f);
    fail(path, "cannot determine the file size");
  }
  size = uint64_t(end);
}

InFile::~InFile() { std::fclose(f); }

void InFile::read(uint64_t offset, void *dst, uint64_t len, const char *what) {
  checkRange(offset, len, what);
  if (len == 0)
    return;
  if (offset > uint64_t(LONG_MAX) ||
      std::fseek(f, long(offset), SEEK_SET) != 0 ||
      std::fread(dst, 1, size_t(len), f) != len)
    fail(path, std::string("read error: ") + std::strerror(errno));
}

std::vector<uint8_t> InFile::read(uint64_t offset, uint64_t len,
                                  const char *what) {
  // Check before allocating: a corrupt size must not become a huge vector.
  checkRange(offset, len, what);
  std::vector<uint8_t> buf(len);
  read(offset, buf.data(), len, what);
  return buf;
}

void InFile::checkRange(uint64_t offset, uint64_t len, const char *what) {
  if (offset > size || len > size - offset)
    fail(path,
         std::string("truncated file (") + what + " extends past the end)");
}

OutFile::OutFile(const std::string &path) : path(path), tmp(path + ".tmp") {
  f = std::fopen(tmp.c_str(), "wb");
  if (!f)
    fail(path,
         "cannot open '" + tmp + "' for writing: " + std::strerror(errno));
}

OutFile::~OutFile() {
  if (f) {
    std::fclose(f);
    std::remove(tmp.c_str());
  }
}

void OutFile::write(const void *p, size_t n) {
  if (n != 0 && std::fwrite(p, 1, n, f) != n)
    fail(path, std::string("write failed: ") + std::strerror(errno));
  pos += n;
}

void OutFile::commit() {
  bool ok = std::fflush(f) == 0;
#if defined(__unix__) || defined(__APPLE__)
  // Data must be on disk before the rename makes it visible.
  ok = ok && ::fsync(fileno(f)) == 0;
#endif
  int err = ok ? 0 : errno;
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    err = errno;
  }
  f = nullptr;
  if (ok) {
    if (std::rename(tmp.c_str(), path.c_str()) == 0)
      return;
    err = errno;
  }
  std::remove(tmp.c_str());
  fail(path, std::string("write failed: ") + std::strerror(err));
}

} // namespace tcc::data::detail
