// The kernel cache's entries: payload, then the trailer that proves it whole.
#include "KernelCache.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstring>

namespace tcc::codegen {
namespace {

constexpr char kMagic[8] = {'T', 'C', 'C', 'K', 'C', '0', '0', '1'};
constexpr size_t kTrailer = 8 + 8 + 32;

std::array<uint8_t, 32> sha256(llvm::StringRef bytes) {
  llvm::SHA256 h;
  h.update(bytes);
  return h.final();
}

} // namespace

std::string KernelCache::key(llvm::ArrayRef<llvm::StringRef> parts) {
  llvm::SHA256 h;
  for (llvm::StringRef p : parts) {
    uint64_t n = p.size();
    h.update(llvm::ArrayRef<uint8_t>(reinterpret_cast<uint8_t *>(&n), 8));
    h.update(p);
  }
  std::array<uint8_t, 32> digest = h.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

std::string KernelCache::entryPath(const std::string &key) const {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, "kernels", key.substr(0, 2), key);
  return path.str().str();
}

KernelCache::Fetch KernelCache::fetch(const std::string &key,
                                      const std::string &path) const {
  if (!enabled())
    return Fetch::Miss;
  std::string entry = entryPath(key);
  auto buffer = llvm::MemoryBuffer::getFile(entry, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return Fetch::Miss;
  llvm::StringRef bytes = (*buffer)->getBuffer();
  bool whole = bytes.size() >= kTrailer;
  llvm::StringRef payload, trailer;
  if (whole) {
    payload = bytes.drop_back(kTrailer);
    trailer = bytes.take_back(kTrailer);
    uint64_t size;
    std::memcpy(&size, trailer.data() + 8, 8);
    std::array<uint8_t, 32> digest = sha256(payload);
    whole = std::memcmp(trailer.data(), kMagic, 8) == 0 &&
            size == payload.size() &&
            std::memcmp(trailer.data() + 16, digest.data(), 32) == 0;
  }
  if (!whole) {
    llvm::sys::fs::remove(entry);
    return Fetch::Corrupt;
  }
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return Fetch::Miss;
  out << payload;
  out.close();
  if (out.has_error()) {
    out.clear_error();
    llvm::sys::fs::remove(path);
    return Fetch::Miss;
  }
  return Fetch::Hit;
}

void KernelCache::store(const std::string &key, const std::string &path) const {
  if (!enabled())
    return;
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return;
  llvm::StringRef payload = (*buffer)->getBuffer();
  std::string entry = entryPath(key);
  if (llvm::sys::fs::create_directories(llvm::sys::path::parent_path(entry)))
    return;
  // A unique name in the entry's directory, so the rename is atomic and no
  // other process writes the same temporary file.
  llvm::SmallString<256> tmp;
  int fd;
  if (llvm::sys::fs::createUniqueFile(entry + ".tmp-%%%%%%%%", fd, tmp))
    return;
  uint64_t size = payload.size();
  std::array<uint8_t, 32> digest = sha256(payload);
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    out << payload;
    out.write(kMagic, 8);
    out.write(reinterpret_cast<const char *>(&size), 8);
    out.write(reinterpret_cast<const char *>(digest.data()), 32);
    out.close();
    if (out.has_error()) {
      out.clear_error();
      llvm::sys::fs::remove(tmp);
      return;
    }
  }
  if (llvm::sys::fs::rename(tmp, entry))
    llvm::sys::fs::remove(tmp);
}

std::string toolIdentity(llvm::StringRef program) {
  llvm::SmallString<256> real;
  if (llvm::sys::fs::real_path(program, real))
    real = program;
  llvm::sys::fs::file_status status;
  std::string id = real.str().str();
  if (!llvm::sys::fs::status(real, status))
    id += " " + std::to_string(status.getSize()) + " " +
          std::to_string(
              status.getLastModificationTime().time_since_epoch().count());
  return id;
}

} // namespace tcc::codegen
