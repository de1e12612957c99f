#include "run/tensorboard.h"

#include "run/csvlog.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <unistd.h>

namespace tcc::run {

uint32_t crc32c(const void *data, size_t n) {
  static const auto table = [] {
    std::vector<uint32_t> t(256);
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1; // reflected 0x1EDC6F41
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xffffffffu;
  const uint8_t *p = static_cast<const uint8_t *>(data);
  for (size_t i = 0; i < n; ++i)
    c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

uint32_t maskedCrc32c(const void *data, size_t n) {
  uint32_t c = crc32c(data, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

namespace {

// Protocol buffer wire format: varint (0), 64-bit (1), length-delimited (2),
// 32-bit (5).
void varint(std::string &out, uint64_t v) {
  while (v >= 0x80) {
    out += char(uint8_t(v) | 0x80);
    v >>= 7;
  }
  out += char(uint8_t(v));
}
void key(std::string &out, int field, int wire) {
  varint(out, uint64_t(field) << 3 | uint64_t(wire));
}
template <class T> void fixed(std::string &out, int field, T v) {
  key(out, field, sizeof(T) == 8 ? 1 : 5);
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  out.append(bytes, sizeof(T));
}
void bytesField(std::string &out, int field, const std::string &v) {
  key(out, field, 2);
  varint(out, v.size());
  out += v;
}

double wallTime() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

bool EventWriter::open(const std::string &dir, std::string &error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  char host[256] = "localhost";
  gethostname(host, sizeof host - 1);
  host[sizeof host - 1] = 0;
  // The time in the name orders the files of resumed runs; the pid keeps
  // two runs started in the same second apart.
  file = (std::filesystem::path(dir) /
          ("events.out.tfevents." + std::to_string(int64_t(wallTime())) + "." +
           host + "." + std::to_string(getpid()) + ".tcc"))
             .string();
  out.open(file, std::ios::binary | std::ios::trunc);
  if (!out) {
    error = "--tensorboard " + dir + ": cannot write " + file;
    return false;
  }
  std::string event;
  fixed(event, 1, wallTime());
  bytesField(event, 3, "brain.Event:2");
  record(event);
  return true;
}

void EventWriter::scalars(
    int64_t step, const std::vector<std::pair<std::string, double>> &values) {
  std::string summary;
  for (const auto &[tag, value] : values) {
    std::string v;
    bytesField(v, 1, tag);
    fixed(v, 2, float(value));
    bytesField(summary, 1, v);
  }
  std::string event;
  fixed(event, 1, wallTime());
  key(event, 2, 0);
  varint(event, uint64_t(step));
  bytesField(event, 5, summary);
  record(event);
}

void EventWriter::record(const std::string &bytes) {
  uint64_t length = bytes.size();
  uint32_t lengthCrc = maskedCrc32c(&length, sizeof length),
           dataCrc = maskedCrc32c(bytes.data(), bytes.size());
  out.write(reinterpret_cast<const char *>(&length), sizeof length);
  out.write(reinterpret_cast<const char *>(&lengthCrc), sizeof lengthCrc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.write(reinterpret_cast<const char *>(&dataCrc), sizeof dataCrc);
  out.flush();
  // As the CSV log: a full disk stops the run with one line, never a
  // truncated event file behind an exit status of 0.
  if (!out)
    throw LogWriteError("--tensorboard " + file + ": cannot write: " +
                        std::strerror(errno));
}

} // namespace tcc::run
