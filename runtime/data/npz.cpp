//===- npz.cpp - NumPy .npy / .npz array I/O ------------------------------===//
//
// Formats: the .npy format of numpy.lib.format (versions 1.0-3.0) and the zip
// subset that Python's zipfile writes for np.savez / np.savez_compressed
// (APPNOTE.TXT: local headers, central directory, zip64 records).
//
// Untrusted input never indexes memory directly: every fixed-size structure
// goes through a bounds-checked Cursor or InFile::read, and every size taken
// from a file is checked against the file size before anything is allocated.
//
//===----------------------------------------------------------------------===//

#include "data/npz.h"

#include "data/fileio.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <unordered_set>

// Array::bytes is little-endian and Array::data<T>() reinterprets it.
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tcc::data assumes a little-endian host"
#endif

namespace tcc::data {

using detail::InFile;
using detail::OutFile;

static constexpr uint64_t Max32 = 0xFFFFFFFFu;
static constexpr uint32_t LocalSig = 0x04034b50, CentralSig = 0x02014b50,
                          EndSig = 0x06054b50, End64Sig = 0x06064b50,
                          End64LocatorSig = 0x07064b50;
static constexpr size_t LocalHeaderSize = 30, CentralHeaderSize = 46,
                        EndSize = 22, End64Size = 56, End64LocatorSize = 20;
// DOS date 1980-01-01, time 00:00: written archives are byte-reproducible.
static constexpr uint16_t FixedDosDate = 0x21;

[[noreturn]] static void fail(const std::string &ctx, const std::string &msg) {
  throw Error(ctx + msg);
}

/// Message prefix: "file: " or "file: array 'name': ".
static std::string context(const std::string &path, const std::string &name) {
  std::string ctx = path + ": ";
  if (!name.empty())
    ctx += "array '" + name + "': ";
  return ctx;
}

static uint64_t loadLE(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i)
    v = v << 8 | p[i];
  return v;
}

static void appendLE(std::vector<uint8_t> &out, uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    out.push_back(uint8_t(v >> (8 * i)));
}

// zlib counts in uInt; chunking keeps members over 4 GiB correct.
static uint32_t crc32Of(const uint8_t *p, size_t n, uint32_t crc = 0) {
  while (n > 0) {
    uInt chunk = uInt(std::min<size_t>(n, size_t(1) << 30));
    crc = uint32_t(::crc32(crc, p, chunk));
    p += chunk;
    n -= chunk;
  }
  return crc;
}

namespace {
struct DTypeInfo {
  const char *name;
  size_t size;
  const char *descr; // As numpy writes it; null where numpy has no dtype.
};
} // namespace

// Indexed by DType.
static constexpr DTypeInfo DTypeInfos[] = {
    {"f16", 2, "<f2"}, {"bf16", 2, nullptr}, {"f32", 4, "<f4"},
    {"f64", 8, "<f8"}, {"i8", 1, "|i1"},     {"i16", 2, "<i2"},
    {"i32", 4, "<i4"}, {"i64", 8, "<i8"},    {"u8", 1, "|u1"},
    {"u16", 2, "<u2"}, {"u32", 4, "<u4"},    {"u64", 8, "<u8"},
    {"bool", 1, "|b1"}};
static constexpr size_t NumDTypes = sizeof(DTypeInfos) / sizeof(DTypeInfos[0]);
static_assert(NumDTypes == size_t(DType::Bool) + 1, "one entry per DType");

static const DTypeInfo *infoOf(DType dtype) {
  return size_t(dtype) < NumDTypes ? &DTypeInfos[size_t(dtype)] : nullptr;
}

size_t dtypeSize(DType dtype) {
  const DTypeInfo *info = infoOf(dtype);
  return info ? info->size : 0;
}

const char *dtypeName(DType dtype) {
  const DTypeInfo *info = infoOf(dtype);
  return info ? info->name : "?";
}

const Array *findArray(const std::vector<Array> &arrays,
                       const std::string &name) {
  for (const Array &a : arrays)
    if (a.name == name)
      return &a;
  return nullptr;
}

namespace {

/// Bounds-checked little-endian reads over a byte range.
class Cursor {
public:
  Cursor(const uint8_t *p, size_t n, std::string ctx, const char *what)
      : p(p), n(n), ctx(std::move(ctx)), what(what) {}
  uint64_t u(int bytes) { return loadLE(take(bytes), bytes); }
  const uint8_t *take(size_t bytes) {
    if (bytes > n - pos)
      fail(ctx, std::string("truncated ") + what);
    const uint8_t *r = p + pos;
    pos += bytes;
    return r;
  }
  size_t remaining() const { return n - pos; }

private:
  const uint8_t *p;
  size_t n, pos = 0;
  std::string ctx;
  const char *what;
};

struct NpyHeader {
  DType dtype;
  std::vector<int64_t> shape;
  size_t dataOffset;
};

/// The header is a Python dict literal, e.g.
///   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
/// Only the literal forms numpy writes are accepted; no evaluation.
class HeaderParser {
public:
  HeaderParser(const std::string &s, const std::string &ctx) : s(s), ctx(ctx) {}

  void parse(std::string &descr, bool &fortran, std::vector<int64_t> &shape) {
    bool haveDescr = false, haveFortran = false, haveShape = false;
    expect('{');
    while (!eat('}')) {
      std::string key = str();
      expect(':');
      if (key == "descr") {
        if (peek() == '[')
          fail(ctx, "structured dtypes are not supported");
        descr = str();
        haveDescr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
        haveFortran = true;
      } else if (key == "shape") {
        shape = tuple();
        haveShape = true;
      } else {
        fail(ctx, "malformed .npy header: unexpected key '" + key + "'");
      }
      if (!eat(',')) {
        expect('}');
        break;
      }
    }
    skipSpace();
    if (i != s.size())
      malformed();
    if (!haveDescr || !haveFortran || !haveShape)
      fail(ctx, std::string("malformed .npy header: missing '") +
                    (!haveDescr     ? "descr"
                     : !haveFortran ? "fortran_order"
                                    : "shape") +
                    "'");
  }

private:
  [[noreturn]] void malformed() {
    std::string shown = s.substr(0, 80);
    while (!shown.empty() && std::isspace((unsigned char)shown.back()))
      shown.pop_back();
    for (char &c : shown)
      if (!std::isprint((unsigned char)c))
        c = '?';
    fail(ctx, "malformed .npy header: " + shown);
  }
  void skipSpace() {
    while (i < s.size() && std::isspace((unsigned char)s[i]))
      ++i;
  }
  char peek() {
    skipSpace();
    return i < s.size() ? s[i] : '\0';
  }
  bool eat(char c) {
    if (peek() != c)
      return false;
    ++i;
    return true;
  }
  void expect(char c) {
    if (!eat(c))
      malformed();
  }
  std::string str() {
    char q = peek();
    if (q != '\'' && q != '"')
      malformed();
    size_t end = s.find(q, i + 1);
    if (end == std::string::npos)
      malformed();
    std::string r = s.substr(i + 1, end - i - 1);
    i = end + 1;
    return r;
  }
  bool boolean() {
    skipSpace();
    for (const char *w : {"True", "False"}) {
      size_t n = std::strlen(w);
      if (s.compare(i, n, w) == 0) {
        i += n;
        return w[0] == 'T';
      }
    }
    malformed();
  }
  int64_t integer() {
    skipSpace();
    if (i >= s.size() || !std::isdigit((unsigned char)s[i]))
      malformed();
    int64_t v = 0;
    for (; i < s.size() && std::isdigit((unsigned char)s[i]); ++i) {
      int d = s[i] - '0';
      if (v > (INT64_MAX - d) / 10)
        fail(ctx, "shape dimension too large");
      v = v * 10 + d;
    }
    if (i < s.size() && s[i] == 'L') // Python 2 long suffix.
      ++i;
    return v;
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!eat(')')) {
      dims.push_back(integer());
      if (!eat(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  const std::string &s;
  const std::string &ctx;
  size_t i = 0;
};

} // namespace

static DType parseDescr(const std::string &descr, const std::string &ctx) {
  char order = descr.empty() ? '\0' : descr[0];
  std::string code = descr.empty() ? "" : descr.substr(1);
  if (!code.empty() && code[0] == 'O')
    fail(ctx, "object arrays are not supported");
  for (size_t i = 0; i < NumDTypes; ++i) {
    const DTypeInfo &info = DTypeInfos[i];
    if (!info.descr || code != info.descr + 1)
      continue;
    // Byte order is meaningless for one-byte types; '=' is native, and the
    // host is little-endian.
    if (info.size == 1 || order == '<' || order == '=')
      return DType(i);
    if (order == '>')
      fail(ctx, "big-endian arrays are not supported (descr '" + descr + "')");
    break;
  }
  fail(ctx, "unsupported dtype '" + descr + "'");
}

/// Parses the .npy header in `buf` and checks that the data after it has
/// exactly the size the header promises.
static NpyHeader parseNpy(const uint8_t *buf, size_t n,
                          const std::string &ctx) {
  static const char magic[] = "\x93NUMPY";
  if (n > 0 && std::memcmp(buf, magic, std::min<size_t>(n, 6)) != 0)
    fail(ctx, "not an .npy file (bad magic)");
  Cursor c(buf, n, ctx, ".npy header");
  c.take(6);
  unsigned major = unsigned(c.u(1)), minor = unsigned(c.u(1));
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(ctx, "unsupported .npy version " + std::to_string(major) + "." +
                  std::to_string(minor));
  uint64_t headerLen = c.u(major == 1 ? 2 : 4);
  const uint8_t *text = c.take(headerLen);
  std::string header(reinterpret_cast<const char *>(text), headerLen);

  std::string descr;
  bool fortran = false;
  NpyHeader h;
  HeaderParser(header, ctx).parse(descr, fortran, h.shape);
  h.dtype = parseDescr(descr, ctx);
  if (fortran)
    fail(ctx, "fortran-order arrays are not supported");
  h.dataOffset = n - c.remaining();

  uint64_t expected = dtypeSize(h.dtype);
  for (int64_t d : h.shape) {
    if (d != 0 && expected > uint64_t(INT64_MAX) / uint64_t(d))
      fail(ctx, "shape too large");
    expected *= uint64_t(d);
  }
  if (c.remaining() != expected)
    fail(ctx, "data size mismatch: header promises " +
                  std::to_string(expected) + " bytes, file has " +
                  std::to_string(c.remaining()));
  return h;
}

/// Turns a whole .npy image into an Array, reusing its storage.
static Array npyFromBuffer(std::vector<uint8_t> &&buf, const std::string &name,
                           const std::string &ctx) {
  NpyHeader h = parseNpy(buf.data(), buf.size(), ctx);
  Array a;
  a.name = name;
  a.dtype = h.dtype;
  a.shape = std::move(h.shape);
  buf.erase(buf.begin(), buf.begin() + h.dataOffset);
  a.bytes = std::move(buf);
  return a;
}

Array readNpy(const std::string &path) {
  InFile f(path);
  std::vector<uint8_t> buf = f.read(0, f.size, ".npy data");
  std::string name = path.substr(path.find_last_of('/') + 1);
  if (name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0)
    name.resize(name.size() - 4);
  return npyFromBuffer(std::move(buf), name, path + ": ");
}

//===----------------------------------------------------------------------===//
// Zip reading
//===----------------------------------------------------------------------===//

namespace {
struct ZipEntry {
  std::string arrayName;
  uint16_t flags, method;
  uint32_t crc;
  uint64_t compSize, size, localOffset;
};
} // namespace

/// Replaces 0xFFFFFFFF placeholders with the zip64 extra field's values, which
/// appear in this fixed order and only for the fields that overflowed.
static void applyZip64(const uint8_t *extra, size_t n, ZipEntry &e,
                       const std::string &ctx) {
  bool needSize = e.size == Max32, needComp = e.compSize == Max32,
       needOffset = e.localOffset == Max32;
  if (!needSize && !needComp && !needOffset)
    return;
  Cursor c(extra, n, ctx, "zip extra field");
  while (c.remaining() > 0) {
    uint64_t id = c.u(2), len = c.u(2);
    Cursor field(c.take(len), len, ctx, "zip64 extra field");
    if (id != 1)
      continue;
    if (needSize)
      e.size = field.u(8);
    if (needComp)
      e.compSize = field.u(8);
    if (needOffset)
      e.localOffset = field.u(8);
    return;
  }
  fail(ctx, "corrupt zip: sizes overflow but no zip64 extra field");
}

static std::vector<ZipEntry> readCentralDirectory(InFile &f,
                                                  const std::string &path) {
  std::string ctx = path + ": ";
  uint64_t tailLen = std::min<uint64_t>(f.size, EndSize + 0xFFFF);
  uint64_t tailStart = f.size - tailLen;
  std::vector<uint8_t> tail = f.read(tailStart, tailLen, "end record");
  // The end record is followed only by its comment: search backwards.
  size_t pos = tail.size() >= EndSize ? tail.size() - EndSize + 1 : 0;
  bool found = false;
  while (pos-- > 0)
    if (loadLE(&tail[pos], 4) == EndSig) {
      found = true;
      break;
    }
  if (!found) {
    uint8_t head[6] = {};
    if (f.size >= 6)
      f.read(0, head, 6, "magic");
    if (std::memcmp(head, "\x93NUMPY", 6) == 0)
      fail(ctx, "is an .npy file, not an .npz archive");
    fail(ctx, "not a zip archive, or truncated (no end-of-central-directory "
              "record)");
  }
  uint64_t endPos = tailStart + pos;
  Cursor end(&tail[pos], tail.size() - pos, ctx, "end record");
  end.take(4);
  uint64_t disk = end.u(2), cdDisk = end.u(2), entriesHere = end.u(2),
           entries = end.u(2), cdSize = end.u(4), cdOffset = end.u(4);

  // Python's zipfile looks for a zip64 locator whether or not the end record
  // has overflowed fields; so do we.
  if (endPos >= End64LocatorSize + End64Size) {
    uint8_t loc[End64LocatorSize];
    f.read(endPos - End64LocatorSize, loc, sizeof(loc), "zip64 locator");
    if (loadLE(loc, 4) == End64LocatorSig) {
      uint64_t recordPos = loadLE(loc + 8, 8);
      uint8_t rec[End64Size];
      f.read(recordPos, rec, sizeof(rec), "zip64 end record");
      if (loadLE(rec, 4) != End64Sig)
        fail(ctx, "corrupt zip: bad zip64 end record");
      disk = loadLE(rec + 16, 4);
      cdDisk = loadLE(rec + 20, 4);
      entriesHere = loadLE(rec + 24, 8);
      entries = loadLE(rec + 32, 8);
      cdSize = loadLE(rec + 40, 8);
      cdOffset = loadLE(rec + 48, 8);
    }
  }
  if (disk != 0 || cdDisk != 0 || entriesHere != entries)
    fail(ctx, "multi-disk zip archives are not supported");
  if (cdOffset > f.size || cdSize > f.size - cdOffset ||
      entries > cdSize / CentralHeaderSize)
    fail(ctx, "corrupt zip: central directory out of range");

  std::vector<uint8_t> cd = f.read(cdOffset, cdSize, "central directory");
  Cursor c(cd.data(), cd.size(), ctx, "central directory");
  std::vector<ZipEntry> result;
  std::unordered_set<std::string> seen;
  for (uint64_t i = 0; i < entries; ++i) {
    if (c.u(4) != CentralSig)
      fail(ctx,
           "corrupt zip: bad central directory entry " + std::to_string(i));
    ZipEntry e;
    c.take(4); // Versions made by / needed.
    e.flags = uint16_t(c.u(2));
    e.method = uint16_t(c.u(2));
    c.take(4); // Time, date.
    e.crc = uint32_t(c.u(4));
    e.compSize = c.u(4);
    e.size = c.u(4);
    uint64_t nameLen = c.u(2), extraLen = c.u(2), commentLen = c.u(2);
    c.take(8); // Disk, internal and external attributes.
    e.localOffset = c.u(4);
    const uint8_t *name = c.take(nameLen);
    const uint8_t *extra = c.take(extraLen);
    c.take(commentLen);

    std::string member(reinterpret_cast<const char *>(name), nameLen);
    if (member.size() < 4 || member.compare(member.size() - 4, 4, ".npy"))
      fail(ctx, "member '" + member + "' is not an .npy file");
    e.arrayName = member.substr(0, member.size() - 4);
    std::string actx = context(path, e.arrayName);
    if (!seen.insert(e.arrayName).second)
      fail(actx, "duplicate array in archive");
    if (e.flags & 1)
      fail(actx, "encrypted zip members are not supported");
    applyZip64(extra, extraLen, e, actx);
    result.push_back(std::move(e));
  }
  return result;
}

static void inflateMember(InFile &f, uint64_t offset, const ZipEntry &e,
                          std::vector<uint8_t> &out, const std::string &ctx) {
  z_stream zs{};
  if (inflateInit2(&zs, -15) != Z_OK) // Raw deflate: zip has no zlib header.
    fail(ctx, "cannot initialise zlib");
  struct Guard {
    z_stream &zs;
    ~Guard() { inflateEnd(&zs); }
  } guard{zs};

  // One byte of slack lets an overlong stream show itself instead of
  // stopping exactly at the recorded size.
  out.resize(e.size + 1);
  std::vector<uint8_t> in(std::min<uint64_t>(e.compSize, 1 << 20));
  uint64_t inLeft = e.compSize;
  zs.next_out = out.data();
  size_t outGiven = 0;
  for (;;) {
    if (zs.avail_in == 0) {
      if (inLeft == 0)
        fail(ctx, "corrupt zip: deflate stream ends early");
      size_t n = size_t(std::min<uint64_t>(inLeft, in.size()));
      f.read(offset, in.data(), n, "compressed data");
      offset += n;
      inLeft -= n;
      zs.next_in = in.data();
      zs.avail_in = uInt(n);
    }
    if (zs.avail_out == 0) {
      if (outGiven == out.size())
        fail(ctx, "corrupt zip: data larger than recorded size");
      size_t n = std::min<size_t>(out.size() - outGiven, size_t(1) << 30);
      zs.avail_out = uInt(n);
      outGiven += n;
    }
    int ret = inflate(&zs, Z_NO_FLUSH);
    if (ret == Z_STREAM_END)
      break;
    if (ret != Z_OK)
      fail(ctx, std::string("corrupt deflate data: ") +
                    (zs.msg ? zs.msg : "zlib error " + std::to_string(ret)));
  }
  if (size_t(zs.next_out - out.data()) != e.size)
    fail(ctx, "corrupt zip: data size differs from recorded size");
  out.resize(e.size);
}

static std::vector<uint8_t> readMember(InFile &f, const ZipEntry &e,
                                       const std::string &ctx) {
  uint8_t lh[LocalHeaderSize];
  f.read(e.localOffset, lh, sizeof(lh), "local header");
  if (loadLE(lh, 4) != LocalSig)
    fail(ctx, "corrupt zip: bad local header");
  uint64_t dataOffset =
      e.localOffset + LocalHeaderSize + loadLE(lh + 26, 2) + loadLE(lh + 28, 2);
  if (dataOffset > f.size || e.compSize > f.size - dataOffset)
    fail(ctx, "truncated file (member data extends past the end)");

  std::vector<uint8_t> data;
  if (e.method == 0) {
    if (e.compSize != e.size)
      fail(ctx, "corrupt zip: stored member sizes disagree");
    data = f.read(dataOffset, e.size, "member data");
  } else if (e.method == 8) {
    // Deflate cannot expand more than ~1032:1; a larger claim is corruption,
    // and must not turn into a huge allocation.
    if (e.size / 1032 > e.compSize + 1024 || e.size >= SIZE_MAX)
      fail(ctx, "corrupt zip: implausible uncompressed size");
    inflateMember(f, dataOffset, e, data, ctx);
  } else {
    fail(ctx, "unsupported zip compression method " + std::to_string(e.method) +
                  " (only stored and deflate)");
  }
  if (crc32Of(data.data(), data.size()) != e.crc)
    fail(ctx, "CRC mismatch (corrupt data)");
  return data;
}

std::vector<Array> readNpz(const std::string &path) {
  InFile f(path);
  std::vector<ZipEntry> entries = readCentralDirectory(f, path);
  std::vector<Array> arrays;
  arrays.reserve(entries.size());
  for (const ZipEntry &e : entries) {
    std::string ctx = context(path, e.arrayName);
    arrays.push_back(npyFromBuffer(readMember(f, e, ctx), e.arrayName, ctx));
  }
  return arrays;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

static const char *npyDescr(DType dtype, const std::string &ctx) {
  const DTypeInfo *info = infoOf(dtype);
  if (!info)
    fail(ctx, "invalid dtype");
  if (!info->descr)
    fail(ctx, std::string(info->name) + " has no npy dtype");
  return info->descr;
}

/// Validates `a` and returns its .npy header, laid out as numpy does it: the
/// data starts on a 64-byte boundary and the dict ends in '\n'.
static std::string npyHeader(const Array &a, const std::string &ctx) {
  std::string dict = std::string("{'descr': '") + npyDescr(a.dtype, ctx) +
                     "', 'fortran_order': False, 'shape': (";
  uint64_t expected = dtypeSize(a.dtype);
  for (size_t i = 0; i < a.shape.size(); ++i) {
    int64_t d = a.shape[i];
    if (d < 0)
      fail(ctx, "negative dimension in shape");
    if (d != 0 && expected > uint64_t(INT64_MAX) / uint64_t(d))
      fail(ctx, "shape too large");
    expected *= uint64_t(d);
    dict += (i ? ", " : "") + std::to_string(d);
  }
  dict += a.shape.size() == 1 ? ",), }" : "), }";
  if (a.bytes.size() != expected)
    fail(ctx, "has " + std::to_string(a.bytes.size()) + " bytes, but its " +
                  dtypeName(a.dtype) + " shape needs " +
                  std::to_string(expected));

  auto padded = [&](size_t prefix) {
    return (prefix + dict.size() + 1 + 63) / 64 * 64 - prefix;
  };
  bool v2 = padded(10) > 0xFFFF; // Version 1.0 has a 16-bit length.
  size_t prefix = v2 ? 12 : 10, len = padded(prefix);
  dict.append(len - dict.size() - 1, ' ');
  dict += '\n';
  std::vector<uint8_t> head = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  head.push_back(v2 ? 2 : 1);
  head.push_back(0);
  appendLE(head, len, v2 ? 4 : 2);
  return std::string(head.begin(), head.end()) + dict;
}

void writeNpy(const std::string &path, const Array &array) {
  std::string header = npyHeader(array, context(path, array.name));
  OutFile out(path);
  out.write(header);
  out.write(array.bytes);
  out.commit();
}

namespace {
struct ZipMember {
  const Array *array;
  std::string name, npyHeader;
  uint64_t size, offset = 0;
  uint32_t crc;
  bool zip64Sizes, zip64Offset = false;
};
} // namespace

static uint16_t zipFlags(const std::string &name) {
  // Bit 11: the name is UTF-8 (it is written as given).
  for (unsigned char ch : name)
    if (ch >= 0x80)
      return 0x800;
  return 0;
}

static std::vector<uint8_t> localHeader(const ZipMember &m) {
  std::vector<uint8_t> h;
  appendLE(h, LocalSig, 4);
  appendLE(h, m.zip64Sizes ? 45 : 20, 2);
  appendLE(h, zipFlags(m.name), 2);
  appendLE(h, 0, 2); // Stored.
  appendLE(h, 0, 2);
  appendLE(h, FixedDosDate, 2);
  appendLE(h, m.crc, 4);
  appendLE(h, m.zip64Sizes ? Max32 : m.size, 4);
  appendLE(h, m.zip64Sizes ? Max32 : m.size, 4);
  appendLE(h, m.name.size(), 2);
  appendLE(h, m.zip64Sizes ? 20 : 0, 2);
  h.insert(h.end(), m.name.begin(), m.name.end());
  if (m.zip64Sizes) {
    appendLE(h, 1, 2);
    appendLE(h, 16, 2);
    appendLE(h, m.size, 8);
    appendLE(h, m.size, 8);
  }
  return h;
}

static void appendCentralHeader(std::vector<uint8_t> &h, const ZipMember &m) {
  bool zip64 = m.zip64Sizes || m.zip64Offset;
  size_t extraLen =
      zip64 ? 4 + (m.zip64Sizes ? 16 : 0) + (m.zip64Offset ? 8 : 0) : 0;
  appendLE(h, CentralSig, 4);
  appendLE(h, 0x0300 | 45, 2); // Made by Unix, so the attributes mean 0644.
  appendLE(h, zip64 ? 45 : 20, 2);
  appendLE(h, zipFlags(m.name), 2);
  appendLE(h, 0, 2);
  appendLE(h, 0, 2);
  appendLE(h, FixedDosDate, 2);
  appendLE(h, m.crc, 4);
  appendLE(h, m.zip64Sizes ? Max32 : m.size, 4);
  appendLE(h, m.zip64Sizes ? Max32 : m.size, 4);
  appendLE(h, m.name.size(), 2);
  appendLE(h, extraLen, 2);
  appendLE(h, 0, 2); // Comment length.
  appendLE(h, 0, 2); // Disk.
  appendLE(h, 0, 2); // Internal attributes.
  appendLE(h, 0100644u << 16, 4);
  appendLE(h, m.zip64Offset ? Max32 : m.offset, 4);
  h.insert(h.end(), m.name.begin(), m.name.end());
  if (zip64) {
    appendLE(h, 1, 2);
    appendLE(h, extraLen - 4, 2);
    if (m.zip64Sizes) {
      appendLE(h, m.size, 8);
      appendLE(h, m.size, 8);
    }
    if (m.zip64Offset)
      appendLE(h, m.offset, 8);
  }
}

static std::vector<uint8_t> endRecords(uint64_t entries, uint64_t cdOffset,
                                       uint64_t cdSize, bool forceZip64) {
  std::vector<uint8_t> h;
  bool zip64 =
      forceZip64 || entries >= 0xFFFF || cdOffset >= Max32 || cdSize >= Max32;
  if (zip64) {
    uint64_t recordPos = cdOffset + cdSize;
    appendLE(h, End64Sig, 4);
    appendLE(h, End64Size - 12, 8); // Size of the rest of the record.
    appendLE(h, 0x0300 | 45, 2);
    appendLE(h, 45, 2);
    appendLE(h, 0, 4);
    appendLE(h, 0, 4);
    appendLE(h, entries, 8);
    appendLE(h, entries, 8);
    appendLE(h, cdSize, 8);
    appendLE(h, cdOffset, 8);
    appendLE(h, End64LocatorSig, 4);
    appendLE(h, 0, 4);
    appendLE(h, recordPos, 8);
    appendLE(h, 1, 4); // Total disks.
  }
  appendLE(h, EndSig, 4);
  appendLE(h, 0, 2);
  appendLE(h, 0, 2);
  appendLE(h, zip64 ? 0xFFFF : entries, 2);
  appendLE(h, zip64 ? 0xFFFF : entries, 2);
  appendLE(h, zip64 ? Max32 : cdSize, 4);
  appendLE(h, zip64 ? Max32 : cdOffset, 4);
  appendLE(h, 0, 2); // Comment length.
  return h;
}

void writeNpz(const std::string &path, const std::vector<Array> &arrays,
              bool forceZip64) {
  // Everything is validated before the file is created.
  std::vector<ZipMember> members;
  std::unordered_set<std::string> seen;
  for (const Array &a : arrays) {
    std::string ctx = context(path, a.name);
    if (a.name.empty())
      fail(ctx, "array with an empty name");
    if (!seen.insert(a.name).second)
      fail(ctx, "duplicate array name");
    ZipMember m;
    m.array = &a;
    m.name = a.name + ".npy";
    if (m.name.size() > 0xFFFF)
      fail(ctx, "array name too long for zip");
    m.npyHeader = npyHeader(a, ctx);
    const auto *h = reinterpret_cast<const uint8_t *>(m.npyHeader.data());
    m.crc =
        crc32Of(a.bytes.data(), a.bytes.size(), crc32Of(h, m.npyHeader.size()));
    m.size = m.npyHeader.size() + a.bytes.size();
    m.zip64Sizes = forceZip64 || m.size >= Max32;
    members.push_back(std::move(m));
  }

  OutFile out(path);
  for (ZipMember &m : members) {
    m.offset = out.pos;
    m.zip64Offset = forceZip64 || m.offset >= Max32;
    out.write(localHeader(m));
    out.write(m.npyHeader);
    out.write(m.array->bytes);
  }
  uint64_t cdOffset = out.pos;
  std::vector<uint8_t> cd;
  for (const ZipMember &m : members)
    appendCentralHeader(cd, m);
  out.write(cd);
  out.write(endRecords(members.size(), cdOffset, cd.size(), forceZip64));
  out.commit();
}

} // namespace tcc::data
