//===- safetensors.cpp - safetensors tensor file I/O ----------------------===//
//
// Format: https://github.com/huggingface/safetensors (README, "Format"). The
// limits and checks mirror the reference reader (Metadata::validate), so a
// file accepted here is accepted there and the other way round.
//
// Sizes from the file are checked against the file size before anything is
// allocated, so a corrupt header cannot ask for a huge buffer.
//
//===----------------------------------------------------------------------===//

#include "data/safetensors.h"

#include "data/fileio.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>
#include <tuple>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tcc::data assumes a little-endian host"
#endif

namespace tcc::data {

using detail::InFile;
using detail::OutFile;
using nlohmann::json;

// The reference reader refuses larger headers.
static constexpr uint64_t MaxHeaderSize = 100000000;
static constexpr const char *MetadataKey = "__metadata__";

[[noreturn]] static void fail(const std::string &ctx, const std::string &msg) {
  throw Error(ctx + msg);
}

static std::string tensorContext(const std::string &path,
                                 const std::string &name) {
  return path + ": tensor '" + name + "': ";
}

namespace {
struct STypeInfo {
  const char *name;
  // Position in the reference's Dtype enum, which is in increasing alignment
  // order; the writer sorts by it to lay tensors out as the reference does.
  int rank;
};
} // namespace

// Indexed by DType.
static constexpr STypeInfo STypes[] = {
    {"F16", 5}, {"BF16", 6}, {"F32", 9},  {"F64", 10}, {"I8", 2},
    {"I16", 3}, {"I32", 7},  {"I64", 11}, {"U8", 1},   {"U16", 4},
    {"U32", 8}, {"U64", 12}, {"BOOL", 0}};
static constexpr size_t NumSTypes = sizeof(STypes) / sizeof(STypes[0]);
static_assert(NumSTypes == size_t(DType::Bool) + 1, "one entry per DType");

const char *safetensorsDTypeName(DType dtype) {
  return size_t(dtype) < NumSTypes ? STypes[size_t(dtype)].name : "?";
}

static std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

namespace {

struct Entry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

} // namespace

static uint64_t unsignedField(const json &v, const std::string &ctx,
                              const char *what) {
  // Only plain non-negative integers: "2.0" or "-1" are corrupt headers.
  if (!v.is_number_unsigned() || v.get<uint64_t>() > uint64_t(INT64_MAX))
    fail(ctx, std::string("'") + what + "' must hold non-negative integers");
  return v.get<uint64_t>();
}

static Entry parseEntry(const std::string &path, const std::string &name,
                        const json &info, uint64_t dataSize) {
  std::string ctx = tensorContext(path, name);
  if (!info.is_object())
    fail(ctx, "header entry is not an object");
  auto dtypeIt = info.find("dtype"), shapeIt = info.find("shape"),
       offsetsIt = info.find("data_offsets");
  if (dtypeIt == info.end() || shapeIt == info.end() || offsetsIt == info.end())
    fail(ctx, std::string("header entry lacks '") +
                  (dtypeIt == info.end()   ? "dtype"
                   : shapeIt == info.end() ? "shape"
                                           : "data_offsets") +
                  "'");

  Entry e{name, DType::F32, {}, 0, 0};
  if (!dtypeIt->is_string())
    fail(ctx, "'dtype' is not a string");
  const std::string &dt = dtypeIt->get_ref<const std::string &>();
  size_t i = 0;
  while (i < NumSTypes && dt != STypes[i].name)
    ++i;
  if (i == NumSTypes)
    fail(ctx, "unsupported dtype '" + dt + "'");
  e.dtype = DType(i);

  if (!shapeIt->is_array())
    fail(ctx, "'shape' is not an array");
  uint64_t elems = 1;
  bool overflow = false;
  for (const json &d : *shapeIt) {
    uint64_t dim = unsignedField(d, ctx, "shape");
    e.shape.push_back(int64_t(dim));
    if (dim != 0 && elems > UINT64_MAX / dim)
      overflow = true;
    elems *= dim;
  }
  size_t elemSize = dtypeSize(e.dtype);
  if (overflow || elems > UINT64_MAX / elemSize)
    fail(ctx, "shape " + shapeString(e.shape) + " is too large");

  if (!offsetsIt->is_array() || offsetsIt->size() != 2)
    fail(ctx, "'data_offsets' is not a [begin, end] pair");
  e.begin = unsignedField((*offsetsIt)[0], ctx, "data_offsets");
  e.end = unsignedField((*offsetsIt)[1], ctx, "data_offsets");
  std::string range =
      "[" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "]";
  if (e.end < e.begin)
    fail(ctx, "data_offsets " + range + " end before they begin");
  if (e.end - e.begin != elems * elemSize)
    fail(ctx, "data_offsets " + range + " hold " +
                  std::to_string(e.end - e.begin) + " bytes but " + dt + " " +
                  shapeString(e.shape) + " needs " +
                  std::to_string(elems * elemSize));
  if (e.end > dataSize)
    fail(ctx, "data_offsets " + range + " extend past the " +
                  std::to_string(dataSize) +
                  " data bytes in the file (truncated file?)");
  return e;
}

std::vector<Array>
readSafetensors(const std::string &path,
                std::map<std::string, std::string> *metadata) {
  std::string ctx = path + ": ";
  InFile in(path);
  if (in.size < 8)
    fail(ctx, "truncated file (no 8-byte header length)");
  uint8_t lenBytes[8];
  in.read(0, lenBytes, 8, "header length");
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i)
    n = n << 8 | lenBytes[i];
  if (n > MaxHeaderSize)
    fail(ctx, "header length " + std::to_string(n) +
                  " is too large (not a safetensors file?)");
  if (n > in.size - 8)
    fail(ctx, "truncated file (header of " + std::to_string(n) +
                  " bytes extends past the end)");
  std::string header(size_t(n), '\0');
  in.read(8, header.data(), n, "header");
  if (header.empty() || header[0] != '{')
    fail(ctx, "not a safetensors file (header does not start with '{')");
  // Without exceptions: a parse error becomes one line of ours, not
  // nlohmann's multi-part message. Invalid UTF-8 is a parse error too.
  json root = json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object())
    fail(ctx, "malformed JSON header");

  uint64_t dataStart = 8 + n, dataSize = in.size - dataStart;
  std::vector<Entry> entries;
  if (metadata)
    metadata->clear();
  for (auto it = root.begin(); it != root.end(); ++it) {
    if (it.key() != MetadataKey) {
      entries.push_back(parseEntry(path, it.key(), it.value(), dataSize));
      continue;
    }
    if (!it->is_object())
      fail(ctx, "'__metadata__' is not an object");
    for (auto m = it->begin(); m != it->end(); ++m) {
      if (!m->is_string())
        fail(ctx, "'__metadata__' value of '" + m.key() + "' is not a string");
      if (metadata)
        (*metadata)[m.key()] = m->get<std::string>();
    }
  }

  // Name breaks ties between zero-size tensors so the order is stable.
  std::sort(entries.begin(), entries.end(), [](const Entry &a, const Entry &b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t cursor = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry &e = entries[i];
    if (e.begin < cursor)
      fail(tensorContext(path, e.name),
           "data overlaps tensor '" + entries[i - 1].name + "'");
    if (e.begin > cursor)
      fail(tensorContext(path, e.name),
           "gap of " + std::to_string(e.begin - cursor) +
               " bytes before the data (offsets must be contiguous)");
    cursor = e.end;
  }
  if (cursor != dataSize)
    fail(ctx, std::to_string(dataSize - cursor) +
                  " bytes after the last tensor's data");

  std::vector<Array> arrays;
  arrays.reserve(entries.size());
  for (Entry &e : entries) {
    Array a;
    a.name = std::move(e.name);
    a.dtype = e.dtype;
    a.shape = std::move(e.shape);
    a.bytes.resize(size_t(e.end - e.begin));
    in.read(dataStart + e.begin, a.bytes.data(), e.end - e.begin,
            "tensor data");
    arrays.push_back(std::move(a));
  }
  return arrays;
}

/// `s` as a JSON string literal, escaped as serde_json and nlohmann both do.
static std::string jsonString(const std::string &s, const std::string &ctx,
                              const char *what) {
  try {
    return json(s).dump();
  } catch (const json::exception &) {
    fail(ctx, std::string(what) + " is not valid UTF-8");
  }
}

void writeSafetensors(const std::string &path, const std::vector<Array> &arrays,
                      const std::map<std::string, std::string> &metadata) {
  std::vector<TensorSource> sources;
  sources.reserve(arrays.size());
  for (const Array &a : arrays) {
    size_t want = size_t(a.dtype) < NumSTypes
                      ? dtypeSize(a.dtype) * size_t(a.numElements())
                      : a.bytes.size();
    bool negative = std::any_of(a.shape.begin(), a.shape.end(),
                                [](int64_t d) { return d < 0; });
    if (!negative && a.bytes.size() != want)
      fail(tensorContext(path, a.name),
           "holds " + std::to_string(a.bytes.size()) + " bytes but " +
               dtypeName(a.dtype) + " " + shapeString(a.shape) + " needs " +
               std::to_string(want));
    sources.push_back({a.name, a.dtype, a.shape, [&a](const ByteSink &sink) {
                         sink(a.bytes.data(), a.bytes.size());
                       }});
  }
  streamSafetensors(path, sources, metadata);
}

void streamSafetensors(const std::string &path,
                       const std::vector<TensorSource> &tensors,
                       const std::map<std::string, std::string> &metadata) {
  std::set<std::string> seen;
  for (const TensorSource &t : tensors) {
    std::string ctx = tensorContext(path, t.name);
    if (t.name.empty())
      fail(path + ": ", "empty tensor name");
    if (t.name == MetadataKey)
      fail(ctx, "the name is reserved for the metadata map");
    if (!seen.insert(t.name).second)
      fail(ctx, "duplicate tensor name");
    if (size_t(t.dtype) >= NumSTypes)
      fail(ctx, "invalid dtype");
    for (int64_t d : t.shape)
      if (d < 0)
        fail(ctx, "negative dimension in shape " + shapeString(t.shape));
  }
  auto bytesOf = [](const TensorSource &t) {
    return uint64_t(dtypeSize(t.dtype)) * uint64_t(t.numElements());
  };

  std::vector<const TensorSource *> order;
  for (const TensorSource &t : tensors)
    order.push_back(&t);
  std::sort(order.begin(), order.end(),
            [](const TensorSource *a, const TensorSource *b) {
              int ra = STypes[size_t(a->dtype)].rank;
              int rb = STypes[size_t(b->dtype)].rank;
              return ra != rb ? ra > rb : a->name < b->name;
            });

  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto &[k, v] : metadata) {
      std::string mctx = path + ": metadata '" + k + "': ";
      h += (first ? "" : ",") + jsonString(k, mctx, "the key") + ":" +
           jsonString(v, mctx, "the value");
      first = false;
    }
    h += "}";
  }
  uint64_t offset = 0;
  for (const TensorSource *t : order) {
    if (h.size() > 1)
      h += ",";
    h += jsonString(t->name, tensorContext(path, t->name), "the name");
    h += ":{\"dtype\":\"" + std::string(STypes[size_t(t->dtype)].name) +
         "\",\"shape\":[";
    for (size_t i = 0; i < t->shape.size(); ++i)
      h += (i ? "," : "") + std::to_string(t->shape[i]);
    h += "],\"data_offsets\":[" + std::to_string(offset) + ",";
    offset += bytesOf(*t);
    h += std::to_string(offset) + "]}";
  }
  h += "}";
  // Spaces, as the reference pads, so the data starts 8-byte aligned.
  h.append((8 - h.size() % 8) % 8, ' ');
  if (h.size() > MaxHeaderSize)
    fail(path + ": ", "header of " + std::to_string(h.size()) +
                          " bytes exceeds the format's limit");

  uint8_t len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = uint8_t(uint64_t(h.size()) >> (8 * i));
  OutFile out(path);
  out.write(len, 8);
  out.write(h.data(), h.size());
  for (const TensorSource *t : order) {
    // The header already promised this many bytes: more or fewer would
    // shift every later tensor.
    uint64_t want = bytesOf(*t), got = 0;
    if (t->write)
      t->write([&](const void *data, size_t size) {
        got += size;
        if (got > want)
          fail(tensorContext(path, t->name),
               "its source gave more than the " + std::to_string(want) +
                   " bytes of " + dtypeName(t->dtype) + " " +
                   shapeString(t->shape));
        out.write(data, size);
      });
    if (got != want)
      fail(tensorContext(path, t->name),
           "its source gave " + std::to_string(got) + " bytes but " +
               dtypeName(t->dtype) + " " + shapeString(t->shape) + " needs " +
               std::to_string(want));
  }
  out.commit();
}

} // namespace tcc::data
