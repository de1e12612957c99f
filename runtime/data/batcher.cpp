//===- batcher.cpp - training data feed -----------------------------------===//
//
// llm.c's token shard layout is the one its dev/data scripts write
// (write_datafile): int32 header[256] = {20240520, 1, ntokens, 0, ...}, then
// ntokens little-endian uint16 tokens.
//
//===----------------------------------------------------------------------===//

#include "data/batcher.h"
#include "data/random.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "tcc::data assumes a little-endian host"
#endif

namespace tcc::data {

[[noreturn]] static void fail(const std::string &ctx, const std::string &msg) {
  throw Error(ctx + msg);
}

static std::string shapeString(const std::vector<int64_t> &shape,
                               size_t from = 0) {
  std::string s = "[";
  for (size_t i = from; i < shape.size(); ++i)
    s += (i > from ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

static bool isWidening(DType from, DType to) {
  switch (from) {
  case DType::I8:
  case DType::I16:
  case DType::U8:
  case DType::U16:
    return to == DType::I32 || to == DType::I64;
  case DType::I32:
  case DType::U32:
    return to == DType::I64;
  default:
    return false;
  }
}

template <class Src, class Dst>
static void widenAs(const uint8_t *src, uint8_t *dst, int64_t n) {
  // memcpy per element: sample boundaries need not be aligned for Src.
  for (int64_t i = 0; i < n; ++i) {
    Src s;
    std::memcpy(&s, src + i * sizeof(Src), sizeof(Src));
    Dst d = Dst(s);
    std::memcpy(dst + i * sizeof(Dst), &d, sizeof(Dst));
  }
}

template <class Dst>
static void widenTo(const uint8_t *src, DType from, uint8_t *dst, int64_t n) {
  switch (from) {
  case DType::I8:
    return widenAs<int8_t, Dst>(src, dst, n);
  case DType::I16:
    return widenAs<int16_t, Dst>(src, dst, n);
  case DType::I32:
    return widenAs<int32_t, Dst>(src, dst, n);
  case DType::U8:
    return widenAs<uint8_t, Dst>(src, dst, n);
  case DType::U16:
    return widenAs<uint16_t, Dst>(src, dst, n);
  case DType::U32:
    return widenAs<uint32_t, Dst>(src, dst, n);
  default:
    assert(false && "not a widening the constructor accepted");
  }
}

/// Copies `n` elements, widening where isWidening(from, to).
static void convert(const uint8_t *src, DType from, uint8_t *dst, DType to,
                    int64_t n) {
  if (n == 0)
    return; // Zero-size samples: the buffers may be null.
  if (from == to)
    std::memcpy(dst, src, size_t(n) * dtypeSize(from));
  else if (to == DType::I64)
    widenTo<int64_t>(src, from, dst, n);
  else
    widenTo<int32_t>(src, from, dst, n);
}

Batcher::Batcher(std::vector<Array> arrays, std::vector<InputSpec> inputs,
                 std::string sourceName)
    : source(std::move(sourceName)) {
  std::string ctx = source + ": ";
  if (inputs.empty())
    fail(ctx, "no inputs to feed");
  const InputSpec *first = &inputs.front();
  for (const InputSpec &in : inputs) {
    if (in.shape.empty() || in.shape[0] < 1 ||
        std::any_of(in.shape.begin(), in.shape.end(),
                    [](int64_t d) { return d < 0; }))
      fail(ctx, "input '" + in.name + "': batch shape " +
                    shapeString(in.shape) +
                    " needs a leading batch dimension >= 1");
    if (in.shape[0] != first->shape[0])
      fail(ctx, "inputs '" + first->name + "' and '" + in.name +
                    "' disagree on the batch size (" +
                    std::to_string(first->shape[0]) + " vs " +
                    std::to_string(in.shape[0]) + ")");
  }
  batch = first->shape[0];

  const Array *firstArray = nullptr;
  for (InputSpec &in : inputs) {
    auto it = std::find_if(arrays.begin(), arrays.end(),
                           [&](const Array &a) { return a.name == in.name; });
    if (it == arrays.end()) {
      std::string present;
      for (const Array &a : arrays)
        present += (present.empty() ? "" : ", ") + a.name;
      fail(ctx, "no array for input '" + in.name + "' (arrays present: " +
                    (present.empty() ? "none" : present) + ")");
    }
    std::string actx = ctx + "array '" + in.name + "': ";
    if (it->shape.empty())
      fail(actx, "a scalar has no sample axis; expected samples of shape " +
                     shapeString(in.shape, 1));
    if (!std::equal(it->shape.begin() + 1, it->shape.end(),
                    in.shape.begin() + 1, in.shape.end()))
      fail(actx, "sample shape " + shapeString(it->shape, 1) +
                     " does not match the input's " + shapeString(in.shape, 1) +
                     " (array shape " + shapeString(it->shape) +
                     ", batch shape " + shapeString(in.shape) + ")");
    if (it->dtype != in.dtype && !isWidening(it->dtype, in.dtype))
      fail(actx, std::string("dtype ") + dtypeName(it->dtype) +
                     " does not match the input's " + dtypeName(in.dtype));
    if (!firstArray) {
      firstArray = &*it;
      samples = it->shape[0];
    } else if (it->shape[0] != samples) {
      fail(ctx, "arrays '" + firstArray->name + "' (" +
                    std::to_string(samples) + " samples) and '" + in.name +
                    "' (" + std::to_string(it->shape[0]) +
                    " samples) differ in the number of samples");
    }
    Feed feed{std::move(in), *it, 1};
    for (size_t d = 1; d < feed.data.shape.size(); ++d)
      feed.sampleElems *= feed.data.shape[d];
    feeds.push_back(std::move(feed));
  }
  if (samples == 0)
    fail(ctx, "array '" + firstArray->name + "' holds no samples");
}

Batcher Batcher::open(const std::string &path, std::vector<InputSpec> inputs) {
  bool npy = path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0;
  std::vector<Array> arrays;
  if (npy)
    arrays.push_back(readNpy(path));
  else
    arrays = readNpz(path);
  return Batcher(std::move(arrays), std::move(inputs), path);
}

int64_t Batcher::shuffledSample(int64_t g) {
  int64_t epoch = g / samples;
  if (epoch != permEpoch) {
    perm = epochPermutation(seed, uint64_t(epoch), samples);
    permEpoch = epoch;
  }
  return perm[size_t(g % samples)];
}

void Batcher::shuffle(uint64_t s) {
  shuffled = true;
  seed = s;
  pos = 0;
  permEpoch = -1;
}

std::vector<Array> Batcher::next() {
  std::vector<int64_t> order;
  if (shuffled) {
    order.resize(size_t(batch));
    for (int64_t i = 0; i < batch; ++i)
      order[size_t(i)] = shuffledSample(pos + i);
  }
  std::vector<Array> out;
  out.reserve(feeds.size());
  for (const Feed &f : feeds) {
    Array a;
    a.name = f.spec.name;
    a.dtype = f.spec.dtype;
    a.shape = f.spec.shape;
    size_t srcSample = size_t(f.sampleElems) * dtypeSize(f.data.dtype),
           dstSample = size_t(f.sampleElems) * dtypeSize(a.dtype);
    a.bytes.resize(size_t(batch) * dstSample);
    // Copy runs of consecutive samples: in order, a run ends at the end of
    // the data; shuffled, every sample is a run of its own.
    for (int64_t i = 0; i < batch;) {
      int64_t s = shuffled ? order[size_t(i)] : (pos + i) % samples;
      int64_t run = shuffled ? 1 : std::min(batch - i, samples - s);
      convert(f.data.bytes.data() + size_t(s) * srcSample, f.data.dtype,
              a.bytes.data() + size_t(i) * dstSample, a.dtype,
              run * f.sampleElems);
      i += run;
    }
    out.push_back(std::move(a));
  }
  pos = shuffled ? pos + batch : (pos + batch % samples) % samples;
  return out;
}

void Batcher::seek(int64_t position) {
  if (position < 0 || (!shuffled && position >= samples))
    fail(source + ": ", "position " + std::to_string(position) +
                            " is outside the " + std::to_string(samples) +
                            " samples");
  pos = position;
}

// llm.c dev/data/data_common.py.
static constexpr int32_t LlmcMagic = 20240520, LlmcVersion = 1,
                         LlmcLlama3Magic = 20240801;
static constexpr size_t LlmcHeaderInts = 256,
                        LlmcHeaderBytes = LlmcHeaderInts * sizeof(int32_t);

/// Reads one uint16 token file (raw, or llm.c's shard) into `tokens`.
static void readTokenFile(const std::string &path,
                          std::vector<uint16_t> &tokens) {
  std::string ctx = path + ": ";
  std::FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    fail(ctx, std::string("cannot open: ") + std::strerror(errno));
  // Read straight into `tokens`: shards run to hundreds of MB.
  auto readAt = [&](long offset, void *dst, size_t n) {
    if (std::fseek(f, offset, SEEK_SET) != 0 || std::fread(dst, 1, n, f) != n) {
      int err = errno;
      std::fclose(f);
      fail(ctx, std::string("read error: ") + std::strerror(err));
    }
  };
  long size = -1;
  if (std::fseek(f, 0, SEEK_END) == 0)
    size = std::ftell(f);
  if (size < 0) {
    std::fclose(f);
    fail(ctx, "cannot determine the file size");
  }
  size_t bytes = size_t(size), tokenStart = 0;
  int32_t header[3] = {0, 0, 0};
  if (bytes >= LlmcHeaderBytes)
    readAt(0, header, sizeof(header));
  std::string bad;
  if (header[0] == LlmcLlama3Magic) {
    bad = "llm.c uint32 token files (magic 20240801) are not supported";
  } else if (header[0] == LlmcMagic) {
    size_t body = bytes - LlmcHeaderBytes;
    if (header[1] != LlmcVersion)
      bad = "unsupported llm.c token file version " +
            std::to_string(header[1]) + " (expected 1)";
    else if (header[2] < 0 || body % 2 != 0 || uint64_t(header[2]) != body / 2)
      bad = "llm.c header promises " + std::to_string(header[2]) +
            " tokens but " + std::to_string(body) + " bytes follow it";
    tokenStart = LlmcHeaderBytes;
  } else if (bytes % 2 != 0) {
    bad = "odd size " + std::to_string(bytes) + ": not a file of uint16 tokens";
  }
  if (!bad.empty()) {
    std::fclose(f);
    fail(ctx, bad);
  }
  tokens.resize((bytes - tokenStart) / 2);
  if (!tokens.empty())
    readAt(long(tokenStart), tokens.data(), tokens.size() * 2);
  std::fclose(f);
}

TokenBatcher::TokenBatcher(const std::string &path, int64_t batch,
                           int64_t seqLen, std::string inputName,
                           std::string targetName)
    : TokenBatcher(std::vector<std::string>{path}, batch, seqLen,
                   std::move(inputName), std::move(targetName)) {}

TokenBatcher::TokenBatcher(const std::vector<std::string> &paths, int64_t batch,
                           int64_t seqLen, std::string inputName,
                           std::string targetName)
    : path(paths.empty() ? std::string() : paths.front()),
      inputName(std::move(inputName)), targetName(std::move(targetName)),
      batch(batch), seqLen(seqLen) {
  if (paths.empty())
    fail("", "no token files");
  if (batch < 1 || seqLen < 1 || batch > (INT64_MAX - 1) / seqLen)
    fail(path + ": ", "invalid batch shape " + std::to_string(batch) + "x" +
                          std::to_string(seqLen));
  shards.resize(paths.size());
  for (size_t i = 0; i < paths.size(); ++i) {
    readTokenFile(paths[i], shards[i]);
    if (int64_t(shards[i].size()) < batch * seqLen + 1)
      fail(paths[i] + ": ",
           std::to_string(shards[i].size()) + " tokens, but a batch of " +
               std::to_string(batch) + "x" + std::to_string(seqLen) +
               " needs at least " + std::to_string(batch * seqLen + 1));
    starts.push_back(total);
    total += int64_t(shards[i].size());
  }
}

size_t TokenBatcher::shardOf(int64_t p) const {
  return size_t(std::upper_bound(starts.begin(), starts.end(), p) -
                starts.begin() - 1);
}

int64_t TokenBatcher::batchesPerPass() const {
  if (packed) {
    if (packedBatches < 0) {
      // Batches from token 0 while the stream position stays within the
      // first pass (a batch ending exactly at the end counts).
      int64_t v = 0, n = 0;
      size_t k = 0;
      while (v < total) {
        for (int64_t r = 0; r < batch; ++r)
          v = packRow(v, nullptr, nullptr, nullptr, k);
        if (v > total)
          break;
        ++n;
      }
      packedBatches = std::max<int64_t>(n, 1);
    }
    return packedBatches;
  }
  int64_t n = 0;
  for (const std::vector<uint16_t> &s : shards)
    n += (int64_t(s.size()) - 1) / (batch * seqLen);
  return n;
}

void TokenBatcher::randomWindows(uint64_t s) {
  if (packed)
    fail(path + ": ", "random windows cut through documents: they cannot "
                      "be packed");
  random = true;
  seed = s;
  pos = 0;
}

void TokenBatcher::packDocuments(uint16_t eotToken, int64_t ignore,
                                 std::string name) {
  if (random)
    fail(path + ": ", "random windows cut through documents: they cannot "
                      "be packed");
  // Some token before the last that is not an eot starts a document of at
  // least one position; without one every row would be padding.
  bool any = false;
  for (size_t k = 0; k < shards.size() && !any; ++k) {
    size_t n = shards[k].size() - (k + 1 == shards.size() ? 1 : 0);
    any = std::any_of(shards[k].begin(), shards[k].begin() + long(n),
                      [&](uint16_t t) { return t != eotToken; });
  }
  if (!any)
    fail(path + ": ", "no document to pack: every token is the end-of-text "
                      "token " +
                          std::to_string(eotToken));
  packed = true;
  eot = eotToken;
  ignoreIndex = ignore;
  positionName = std::move(name);
  packedBatches = -1;
  pos = 0;
}

uint16_t TokenBatcher::tokenAt(int64_t g, size_t &k) const {
  if (g < starts[k] || g - starts[k] >= int64_t(shards[k].size()))
    k = shardOf(g);
  return shards[k][size_t(g - starts[k])];
}

int64_t TokenBatcher::documentPositions(int64_t g, int64_t limit,
                                        size_t &k) const {
  for (int64_t i = g;; ++i) {
    if (i - g > limit)
      return limit + 1;
    if (i == total - 1 || tokenAt(i, k) == eot)
      return i - g;
  }
}

int64_t TokenBatcher::packRow(int64_t v, int64_t *x, int64_t *y, int64_t *ids,
                              size_t &k) const {
  int64_t t = 0, skipped = 0;
  while (t < seqLen) {
    int64_t g = v % total;
    int64_t n = documentPositions(g, seqLen, k);
    if (n == 0) { // an eot right after an eot: nothing to train on
      // packDocuments found a document: this ends within one pass.
      ++skipped;
      assert(skipped <= total && "no document in the stream");
      (void)skipped;
      ++v;
      continue;
    }
    // A document that does not fit ends the row, unless it fits no row:
    // then it starts one and fills it with its first T positions.
    if (n > seqLen - t && (n <= seqLen || t > 0))
      break;
    int64_t m = std::min(n, seqLen);
    if (x)
      for (int64_t i = 0; i < m; ++i) {
        x[t + i] = tokenAt(g + i, k);
        y[t + i] = tokenAt(g + i + 1, k);
        ids[t + i] = i;
      }
    t += m;
    v += m < n ? m : n + 1; // a chunk: the document goes on at its next token
  }
  if (x)
    for (int64_t i = t; i < seqLen; ++i) {
      x[i] = eot;
      y[i] = ignoreIndex;
      ids[i] = i - t;
    }
  return v;
}

void TokenBatcher::wrapIfShort() {
  size_t k = shardOf(pos);
  if (pos + batch * seqLen + 1 > starts[k] + int64_t(shards[k].size()))
    pos = k + 1 < shards.size() ? starts[k + 1] : 0;
}

std::vector<Array> TokenBatcher::next() {
  std::vector<Array> out(packed ? 3 : 2);
  int64_t n = batch * seqLen;
  for (size_t k = 0; k < out.size(); ++k) {
    Array &a = out[k];
    a.name = k == 0 ? inputName : k == 1 ? targetName : positionName;
    a.dtype = DType::I64;
    a.shape = {batch, seqLen};
    a.bytes.resize(size_t(n) * sizeof(int64_t));
  }
  int64_t *x = out[0].data<int64_t>(), *y = out[1].data<int64_t>();
  if (packed) {
    int64_t *ids = out[2].data<int64_t>();
    int64_t v = pos;
    size_t k = shardOf(pos);
    for (int64_t r = 0; r < batch; ++r)
      v = packRow(v, x + r * seqLen, y + r * seqLen, ids + r * seqLen, k);
    pos = v % total;
    return out;
  }
  if (random) {
    // Windows of T+1 tokens; shard i has size - T starts.
    int64_t windows = 0;
    for (const std::vector<uint16_t> &s : shards)
      windows += int64_t(s.size()) - seqLen;
    SplitMix64 rng = streamAt(seed, uint64_t(pos));
    for (int64_t r = 0; r < batch; ++r) {
      int64_t w = int64_t(rng.below(uint64_t(windows)));
      size_t k = 0;
      while (w >= int64_t(shards[k].size()) - seqLen)
        w -= int64_t(shards[k++].size()) - seqLen;
      const uint16_t *src = shards[k].data() + w;
      for (int64_t t = 0; t < seqLen; ++t) {
        x[r * seqLen + t] = src[t];
        y[r * seqLen + t] = src[t + 1];
      }
    }
    ++pos;
    return out;
  }
  size_t k = shardOf(pos);
  const uint16_t *src = shards[k].data() + (pos - starts[k]);
  for (int64_t i = 0; i < n; ++i) {
    x[i] = src[i];
    y[i] = src[i + 1];
  }
  pos += n;
  wrapIfShort();
  return out;
}

void TokenBatcher::seek(int64_t position) {
  if (random) {
    if (position < 0)
      fail(path + ": ", "position " + std::to_string(position) +
                            " is not a number of batches");
    pos = position;
    return;
  }
  if (position < 0 || position >= numTokens())
    fail(path + ": ", "position " + std::to_string(position) +
                          " is outside the " + std::to_string(numTokens()) +
                          " tokens");
  pos = position;
  if (!packed)
    wrapIfShort();
}

} // namespace tcc::data
