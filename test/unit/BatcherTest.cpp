//===- BatcherTest.cpp - tests for runtime/data/batcher -------------------===//
//
// Expected batches are written out by hand from the sample indices.
//
//===----------------------------------------------------------------------===//

#include "data/batcher.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace tcc::data;
using namespace testutil;

namespace {

std::string tempPath(const std::string &name) {
  return testutil::tempPath("batch", name);
}

/// 5 samples: x[s] = {10s, 10s+1} (f32), y[s] = s (i64).
std::vector<Array> fiveSamples() {
  std::vector<float> x;
  std::vector<int64_t> y;
  for (int s = 0; s < 5; ++s) {
    x.insert(x.end(), {10.f * s, 10.f * s + 1});
    y.push_back(s);
  }
  return {makeArray("x", DType::F32, {5, 2}, x),
          makeArray("y", DType::I64, {5}, y),
          makeArray("unused", DType::F64, {}, std::vector<double>{1})};
}

std::vector<InputSpec> xy(int64_t b) {
  return {{"x", DType::F32, {b, 2}}, {"y", DType::I64, {b}}};
}

void writeTokens(const std::string &path, const std::vector<uint16_t> &toks,
                 const std::vector<int32_t> &header = {}) {
  std::vector<uint8_t> bytes;
  if (!header.empty()) {
    std::vector<int32_t> h(256, 0);
    std::copy(header.begin(), header.end(), h.begin());
    bytes.resize(1024);
    std::memcpy(bytes.data(), h.data(), 1024);
  }
  size_t at = bytes.size();
  bytes.resize(at + toks.size() * 2);
  if (!toks.empty())
    std::memcpy(bytes.data() + at, toks.data(), toks.size() * 2);
  writeBytes(path, bytes.data(), bytes.size());
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> r;
  for (int64_t i = from; i < to; ++i)
    r.push_back(i);
  return r;
}

} // namespace

TEST(Batcher, ConsecutiveBatchesWrapAround) {
  Batcher b(fiveSamples(), xy(2), "mem");
  EXPECT_EQ(b.numSamples(), 5);
  EXPECT_EQ(b.batchSize(), 2);
  // Samples 0 1 | 2 3 | 4 0 | 1 2 | 3 4 | 0 1
  std::vector<std::vector<int64_t>> want{{0, 1}, {2, 3}, {4, 0},
                                         {1, 2}, {3, 4}, {0, 1}};
  std::vector<int64_t> positions{2, 4, 1, 3, 0, 2};
  for (size_t i = 0; i < want.size(); ++i) {
    std::vector<Array> batch = b.next();
    ASSERT_EQ(batch.size(), 2u);
    EXPECT_EQ(batch[0].name, "x");
    EXPECT_EQ(batch[0].shape, (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(batch[1].name, "y");
    EXPECT_EQ(batch[1].dtype, DType::I64);
    EXPECT_EQ(values<int64_t>(batch[1]), want[i]) << "batch " << i;
    std::vector<float> wantX;
    for (int64_t s : want[i])
      wantX.insert(wantX.end(), {10.f * s, 10.f * s + 1});
    EXPECT_EQ(values<float>(batch[0]), wantX) << "batch " << i;
    EXPECT_EQ(b.position(), positions[i]);
  }
}

TEST(Batcher, OneBatchOfDataRepeats) {
  std::vector<Array> arrays = fiveSamples();
  Batcher b(arrays, xy(5), "mem");
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(values<int64_t>(b.next()[1]), range(0, 5));
    EXPECT_EQ(b.position(), 0);
  }
}

TEST(Batcher, FewerSamplesThanBatchWrapWithinBatch) {
  std::vector<Array> two{
      makeArray("y", DType::I64, {2}, std::vector<int64_t>{7, 8})};
  Batcher b(two, {{"y", DType::I64, {5}}}, "mem");
  EXPECT_EQ(values<int64_t>(b.next()[0]),
            (std::vector<int64_t>{7, 8, 7, 8, 7}));
  EXPECT_EQ(b.position(), 1);
  EXPECT_EQ(values<int64_t>(b.next()[0]),
            (std::vector<int64_t>{8, 7, 8, 7, 8}));
  EXPECT_EQ(b.position(), 0);
}

TEST(Batcher, SeekResumesWithTheSameBatch) {
  Batcher a(fiveSamples(), xy(2), "mem");
  for (int i = 0; i < 3; ++i)
    a.next();
  int64_t saved = a.position();
  Batcher resumed(fiveSamples(), xy(2), "mem");
  resumed.seek(saved);
  for (int i = 0; i < 4; ++i) {
    std::vector<Array> want = a.next(), got = resumed.next();
    EXPECT_EQ(got[0].bytes, want[0].bytes);
    EXPECT_EQ(got[1].bytes, want[1].bytes);
  }
  EXPECT_EQ(errorOf([&] { resumed.seek(5); }),
            "mem: position 5 is outside the 5 samples");
  EXPECT_EQ(errorOf([&] { resumed.seek(-1); }),
            "mem: position -1 is outside the 5 samples");
}

TEST(Batcher, WidensNarrowIntegers) {
  std::vector<Array> arrays{
      makeArray("idx", DType::I32, {3, 2},
                std::vector<int32_t>{-1, 2, 3, 4, 2147483647, -2147483648}),
      makeArray("tok", DType::U16, {3}, std::vector<uint16_t>{1, 65535, 9})};
  Batcher b(arrays, {{"idx", DType::I64, {2, 2}}, {"tok", DType::I32, {2}}},
            "mem");
  std::vector<Array> first = b.next(), second = b.next();
  EXPECT_EQ(first[0].dtype, DType::I64);
  EXPECT_EQ(values<int64_t>(first[0]), (std::vector<int64_t>{-1, 2, 3, 4}));
  EXPECT_EQ(values<int32_t>(first[1]), (std::vector<int32_t>{1, 65535}));
  EXPECT_EQ(values<int64_t>(second[0]),
            (std::vector<int64_t>{2147483647, -2147483648LL, -1, 2}));
  EXPECT_EQ(values<int32_t>(second[1]), (std::vector<int32_t>{9, 1}));
}

TEST(Batcher, ValidationErrors) {
  std::vector<Array> data = fiveSamples();
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"idx", DType::I64, {2, 2}}}, "d.npz");
            }),
            "d.npz: no array for input 'idx' (arrays present: x, y, unused)");
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"x", DType::F32, {2, 3}}}, "d.npz");
            }),
            "d.npz: array 'x': sample shape [2] does not match the input's "
            "[3] (array shape [5, 2], batch shape [2, 3])");
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"y", DType::I64, {2, 1}}}, "d.npz");
            }),
            "d.npz: array 'y': sample shape [] does not match the input's "
            "[1] (array shape [5], batch shape [2, 1])");
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"x", DType::F64, {2, 2}}}, "d.npz");
            }),
            "d.npz: array 'x': dtype f32 does not match the input's f64");
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"y", DType::I32, {2}}}, "d.npz");
            }),
            "d.npz: array 'y': dtype i64 does not match the input's i32");
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"unused", DType::F64, {1}}}, "d.npz");
            }),
            "d.npz: array 'unused': a scalar has no sample axis; expected "
            "samples of shape []");
  data.push_back(makeArray("z", DType::F32, {4}, std::vector<float>(4)));
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"x", DType::F32, {2, 2}}, {"z", DType::F32, {2}}},
                      "d.npz");
            }),
            "d.npz: arrays 'x' (5 samples) and 'z' (4 samples) differ in the "
            "number of samples");
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"x", DType::F32, {2, 2}}, {"y", DType::I64, {3}}},
                      "d.npz");
            }),
            "d.npz: inputs 'x' and 'y' disagree on the batch size (2 vs 3)");
  EXPECT_EQ(errorOf([&] {
              Batcher(data, {{"y", DType::I64, {}}}, "d.npz");
            }),
            "d.npz: input 'y': batch shape [] needs a leading batch dimension "
            ">= 1");
  EXPECT_EQ(errorOf([&] { Batcher(data, {}, "d.npz"); }),
            "d.npz: no inputs to feed");
  std::vector<Array> empty{
      makeArray("y", DType::I64, {0}, std::vector<int64_t>{})};
  EXPECT_EQ(errorOf([&] {
              Batcher(empty, {{"y", DType::I64, {1}}}, "e");
            }),
            "e: array 'y' holds no samples");
}

TEST(Batcher, OpensNpzAndNpy) {
  std::string npz = tempPath("data.npz"), npy = tempPath("y.npy");
  std::vector<Array> arrays = fiveSamples();
  writeNpz(npz, arrays);
  writeNpy(npy, arrays[1]);
  Batcher fromNpz = Batcher::open(npz, xy(3));
  EXPECT_EQ(values<int64_t>(fromNpz.next()[1]), range(0, 3));
  EXPECT_EQ(values<int64_t>(fromNpz.next()[1]),
            (std::vector<int64_t>{3, 4, 0}));
  Batcher fromNpy = Batcher::open(
      npy,
      {{tempPath("y").substr(::testing::TempDir().size()), DType::I64, {4}}});
  EXPECT_EQ(values<int64_t>(fromNpy.next()[0]), range(0, 4));
  EXPECT_EQ(errorOf([&] {
              Batcher::open(npz, {{"w", DType::F32, {1}}});
            }),
            npz + ": no array for input 'w' (arrays present: x, y, unused)");
  std::remove(npz.c_str());
  std::remove(npy.c_str());
}

TEST(TokenBatcher, RawShardShiftsTargetsAndRestarts) {
  std::string path = tempPath("raw.bin");
  std::vector<uint16_t> toks;
  for (int i = 0; i < 21; ++i)
    toks.push_back(uint16_t(i));
  writeTokens(path, toks);
  TokenBatcher b(path, 2, 5, "idx", "targets");
  EXPECT_EQ(b.numTokens(), 21);
  std::vector<Array> first = b.next();
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].name, "idx");
  EXPECT_EQ(first[1].name, "targets");
  EXPECT_EQ(first[0].dtype, DType::I64);
  EXPECT_EQ(first[0].shape, (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(values<int64_t>(first[0]), range(0, 10));
  EXPECT_EQ(values<int64_t>(first[1]), range(1, 11));
  EXPECT_EQ(b.position(), 10);
  std::vector<Array> second = b.next();
  EXPECT_EQ(values<int64_t>(second[0]), range(10, 20));
  EXPECT_EQ(values<int64_t>(second[1]), range(11, 21));
  // 20 + 10 + 1 > 21: the next batch starts over rather than straddle.
  EXPECT_EQ(b.position(), 0);
  EXPECT_EQ(b.next()[0].bytes, first[0].bytes);

  b.seek(3);
  EXPECT_EQ(values<int64_t>(b.next()[1]), range(4, 14));
  b.seek(11); // 11 + 11 > 21
  EXPECT_EQ(b.position(), 0);
  EXPECT_EQ(errorOf([&] { b.seek(21); }),
            path + ": position 21 is outside the 21 tokens");
  std::remove(path.c_str());
}

TEST(TokenBatcher, LlmcShard) {
  std::string path = tempPath("llmc.bin");
  std::vector<uint16_t> toks;
  for (int i = 0; i < 13; ++i)
    toks.push_back(uint16_t(65535 - i)); // Unsigned: never negative ids.
  writeTokens(path, toks, {20240520, 1, 13});
  TokenBatcher b(path, 1, 4, "input_ids", "labels");
  EXPECT_EQ(b.numTokens(), 13);
  std::vector<int64_t> starts{0, 4, 8, 0};
  for (int64_t start : starts) {
    EXPECT_EQ(b.position(), start);
    std::vector<Array> batch = b.next();
    EXPECT_EQ(batch[0].shape, (std::vector<int64_t>{1, 4}));
    std::vector<int64_t> x, y;
    for (int64_t i = 0; i < 4; ++i) {
      x.push_back(65535 - (start + i));
      y.push_back(65535 - (start + i + 1));
    }
    EXPECT_EQ(values<int64_t>(batch[0]), x);
    EXPECT_EQ(values<int64_t>(batch[1]), y);
  }

  // Exactly B*T+1 tokens: one batch, repeated.
  writeTokens(path, std::vector<uint16_t>(toks.begin(), toks.begin() + 9),
              {20240520, 1, 9});
  TokenBatcher one(path, 2, 4, "x", "y");
  std::vector<Array> a = one.next();
  EXPECT_EQ(one.position(), 0);
  EXPECT_EQ(one.next()[1].bytes, a[1].bytes);
  std::remove(path.c_str());
}

TEST(TokenBatcher, Errors) {
  std::string path = tempPath("bad.bin");
  std::vector<uint16_t> toks(20, 1);
  writeTokens(path, toks, {20240520, 1, 21});
  EXPECT_EQ(errorOf([&] { TokenBatcher(path, 1, 4, "x", "y"); }),
            path + ": llm.c header promises 21 tokens but 40 bytes follow it");
  writeTokens(path, toks, {20240520, 2, 20});
  EXPECT_EQ(errorOf([&] { TokenBatcher(path, 1, 4, "x", "y"); }),
            path + ": unsupported llm.c token file version 2 (expected 1)");
  writeTokens(path, toks, {20240801, 7, 20});
  EXPECT_EQ(errorOf([&] { TokenBatcher(path, 1, 4, "x", "y"); }),
            path + ": llm.c uint32 token files (magic 20240801) are not "
                   "supported");
  writeTokens(path, toks);
  EXPECT_EQ(errorOf([&] { TokenBatcher(path, 4, 5, "x", "y"); }),
            path + ": 20 tokens, but a batch of 4x5 needs at least 21");
  EXPECT_EQ(errorOf([&] { TokenBatcher(path, 0, 5, "x", "y"); }),
            path + ": invalid batch shape 0x5");
  uint8_t odd[3] = {1, 2, 3};
  writeBytes(path, odd, 3);
  EXPECT_EQ(errorOf([&] { TokenBatcher(path, 1, 1, "x", "y"); }),
            path + ": odd size 3: not a file of uint16 tokens");
  std::remove(path.c_str());
  EXPECT_EQ(errorOf([&] { TokenBatcher(path, 1, 1, "x", "y"); }),
            path + ": cannot open: No such file or directory");
}

TEST(Batcher, ShuffledEpochsArePermutations) {
  // 5 samples, batches of 2: 15 samples of the stream are 3 epochs, each
  // of them every sample once; the same seed repeats the order, seeking
  // into the stream continues it.
  auto stream = [](uint64_t seed, int64_t from, int steps) {
    Batcher b(fiveSamples(), xy(2), "d.npz");
    b.shuffle(seed);
    b.seek(from);
    std::vector<int64_t> ys;
    for (int i = 0; i < steps; ++i) {
      std::vector<Array> batch = b.next();
      const int64_t *y = batch[1].data<int64_t>();
      ys.insert(ys.end(), y, y + 2);
      // x follows y: x[s] = {10s, 10s+1}.
      EXPECT_EQ(batch[0].data<float>()[0], 10.f * y[0]);
      EXPECT_EQ(batch[0].data<float>()[3], 10.f * y[1] + 1);
    }
    EXPECT_EQ(b.position(), from + 2 * steps);
    return ys;
  };
  std::vector<int64_t> ys = stream(7, 0, 8);
  ASSERT_EQ(ys.size(), 16u);
  for (int e = 0; e < 3; ++e) {
    std::vector<int64_t> epoch(ys.begin() + 5 * e, ys.begin() + 5 * e + 5);
    std::sort(epoch.begin(), epoch.end());
    EXPECT_EQ(epoch, range(0, 5)) << "epoch " << e;
  }
  EXPECT_EQ(stream(7, 0, 8), ys);
  EXPECT_NE(stream(8, 0, 8), ys);
  std::vector<int64_t> tail = stream(7, 6, 5);
  EXPECT_EQ(tail, std::vector<int64_t>(ys.begin() + 6, ys.end()));
}

TEST(TokenBatcher, ShardsInOrderAndRandomWindows) {
  // Shards of 6 and 7 tokens (t = 0..5 and 100..106), batches of 1x2 read
  // 3 tokens: shard 0 at 0, 2 (4+3 > 6), shard 1 at 0, 2, 4, then shard 0.
  std::string a = tempPath("shard_a.bin"), b = tempPath("shard_b.bin");
  std::vector<uint16_t> ta = {0, 1, 2, 3, 4, 5}, tb;
  for (uint16_t t = 100; t < 107; ++t)
    tb.push_back(t);
  writeTokens(a, ta);
  writeTokens(b, tb, {20240520, 1, 7});
  TokenBatcher seq({a, b}, 1, 2, "x", "y");
  EXPECT_EQ(seq.numTokens(), 13);
  EXPECT_EQ(seq.batchesPerPass(), 2 + 3);
  std::vector<int64_t> starts;
  for (int i = 0; i < 6; ++i) {
    std::vector<Array> batch = seq.next();
    starts.push_back(batch[0].data<int64_t>()[0]);
    EXPECT_EQ(batch[1].data<int64_t>()[0], starts.back() + 1);
  }
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 2, 100, 102, 104, 0}));

  // Random windows of 3 tokens lie inside one shard: starts 0..3 of shard
  // 0 and 100..104 of shard 1; a seed repeats them.
  auto draw = [&](uint64_t seed) {
    TokenBatcher r({a, b}, 1, 2, "x", "y");
    r.randomWindows(seed);
    std::vector<int64_t> s;
    for (int i = 0; i < 100; ++i) {
      std::vector<Array> batch = r.next();
      for (int row = 0; row < 1; ++row) {
        int64_t x0 = batch[0].data<int64_t>()[2 * row];
        EXPECT_TRUE((x0 >= 0 && x0 <= 3) || (x0 >= 100 && x0 <= 104)) << x0;
        EXPECT_EQ(batch[0].data<int64_t>()[2 * row + 1], x0 + 1);
        EXPECT_EQ(batch[1].data<int64_t>()[2 * row + 1], x0 + 2);
        s.push_back(x0);
      }
    }
    EXPECT_EQ(r.position(), 100);
    return s;
  };
  std::vector<int64_t> s = draw(3);
  EXPECT_EQ(draw(3), s);
  EXPECT_NE(draw(4), s);
  // All 9 starts turn up in 100 draws.
  std::sort(s.begin(), s.end());
  s.erase(std::unique(s.begin(), s.end()), s.end());
  EXPECT_EQ(s, (std::vector<int64_t>{0, 1, 2, 3, 100, 101, 102, 103, 104}));
  std::remove(a.c_str());
  std::remove(b.c_str());
}

namespace {

/// One packed batch: x, y and the position ids, row after row.
struct Packed {
  std::vector<int64_t> x, y, ids;
};

Packed packedBatch(TokenBatcher &b) {
  std::vector<Array> batch = b.next();
  EXPECT_EQ(batch.size(), 3u);
  return {values<int64_t>(batch[0]), values<int64_t>(batch[1]),
          values<int64_t>(batch[2])};
}

std::vector<int64_t> cat(std::vector<int64_t> a,
                         const std::vector<int64_t> &b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

} // namespace

TEST(TokenBatcher, PacksDocuments) {
  // EOT 0, B=2, T=6. Documents: A = 1 2 3 0 (3 positions), B = 4 5 0 (2),
  // an empty one (0 after 0), D = 6..13 0 (8 positions: more than T),
  // E = 14 15 0 (2), and the stream's last token 16 (no positions).
  std::string path = tempPath("docs.bin");
  writeTokens(path, {1, 2,  3,  0,  4,  5, 0,  0,  6, 7, 8,
                     9, 10, 11, 12, 13, 0, 14, 15, 0, 16});
  TokenBatcher b(path, 2, 6, "idx", "labels");
  b.packDocuments(0, -1, "position_ids");
  EXPECT_TRUE(b.packsDocuments());
  constexpr int64_t I = -1; // the ignore index: padding's targets

  // A and B fit row 0; the empty document is skipped; D does not fit the
  // one position left, which is padding; D fits no row: row 1 is its first
  // chunk of 6 positions, whose last target is D's next token (12).
  std::vector<int64_t> abRowX = {1, 2, 3, 4, 5, 0}, abRowY = {2, 3, 0, 5, 0, I},
                       abRowIds = {0, 1, 2, 0, 1, 0};
  std::vector<int64_t> chunkX = {6, 7, 8, 9, 10, 11},
                       chunkY = {7, 8, 9, 10, 11, 12},
                       chunkIds = {0, 1, 2, 3, 4, 5};
  std::vector<Array> first = b.next();
  ASSERT_EQ(first.size(), 3u);
  EXPECT_EQ(first[0].name, "idx");
  EXPECT_EQ(first[1].name, "labels");
  EXPECT_EQ(first[2].name, "position_ids");
  for (const Array &a : first) {
    EXPECT_EQ(a.dtype, DType::I64);
    EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 6}));
  }
  EXPECT_EQ(values<int64_t>(first[0]), cat(abRowX, chunkX));
  EXPECT_EQ(values<int64_t>(first[1]), cat(abRowY, chunkY));
  EXPECT_EQ(values<int64_t>(first[2]), cat(abRowIds, chunkIds));
  // The next row starts where D goes on, at token 14 (12).
  EXPECT_EQ(b.position(), 14);

  // Row 0: the rest of D (12 13 0: 2 positions, from 0 again), E, the last
  // token (skipped), then the stream starts over: A does not fit the 2
  // positions left, padding (ids 0 1). Row 1: A, B, padding as before.
  std::vector<int64_t> tailRowX = {12, 13, 14, 15, 0, 0},
                       tailRowY = {13, 0, 15, 0, I, I},
                       tailRowIds = {0, 1, 0, 1, 0, 1};
  Packed second = packedBatch(b);
  EXPECT_EQ(second.x, cat(tailRowX, abRowX));
  EXPECT_EQ(second.y, cat(tailRowY, abRowY));
  EXPECT_EQ(second.ids, cat(tailRowIds, abRowIds));
  // The second pass's D: token 8.
  EXPECT_EQ(b.position(), 8);

  Packed third = packedBatch(b);
  EXPECT_EQ(third.x, cat(chunkX, tailRowX));
  EXPECT_EQ(third.y, cat(chunkY, tailRowY));
  EXPECT_EQ(third.ids, cat(chunkIds, tailRowIds));
  EXPECT_EQ(b.position(), 0);
  EXPECT_EQ(b.next()[0].bytes, first[0].bytes);

  // Resuming at a recorded position repeats the same next batch.
  b.seek(14);
  Packed again = packedBatch(b);
  EXPECT_EQ(again.x, second.x);
  EXPECT_EQ(again.y, second.y);
  EXPECT_EQ(again.ids, second.ids);
  EXPECT_EQ(b.position(), 8);
  // From 0, the first batch ends within the pass (at 14), the second past it.
  EXPECT_EQ(b.batchesPerPass(), 1);
  EXPECT_EQ(errorOf([&] { b.seek(21); }),
            path + ": position 21 is outside the 21 tokens");
  std::remove(path.c_str());
}

TEST(TokenBatcher, PackedDocumentsRunAcrossShards) {
  // Shards 1 2 0 3 4 | 5 0 6 7 0 read as one stream: 1 2 0, then 3 4 5 0
  // across the shards, 6 7 0. B=1, T=3; the padding's target is -100.
  std::string a = tempPath("docs_a.bin"), b = tempPath("docs_b.bin");
  writeTokens(a, {1, 2, 0, 3, 4});
  writeTokens(b, {5, 0, 6, 7, 0}, {20240520, 1, 5});
  TokenBatcher t({a, b}, 1, 3, "x", "y");
  t.packDocuments(0, -100);
  Packed p = packedBatch(t);
  EXPECT_EQ(p.x, (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(p.y, (std::vector<int64_t>{2, 0, -100}));
  EXPECT_EQ(p.ids, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(t.position(), 3);
  p = packedBatch(t);
  EXPECT_EQ(p.x, (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(p.y, (std::vector<int64_t>{4, 5, 0}));
  EXPECT_EQ(p.ids, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(t.position(), 7);
  p = packedBatch(t); // 1 2 0 after the wrap does not fit the last position
  EXPECT_EQ(p.x, (std::vector<int64_t>{6, 7, 0}));
  EXPECT_EQ(p.y, (std::vector<int64_t>{7, 0, -100}));
  EXPECT_EQ(p.ids, (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(t.position(), 0);
  // The third batch ends exactly at the end of the stream: a whole pass.
  EXPECT_EQ(t.batchesPerPass(), 3);

  // A document of exactly T positions fills a row; one of T+1 is a chunk
  // of T and a rest of one position. EOT 9.
  writeTokens(a, {1, 2, 3, 9, 4, 5, 6, 7, 9, 8});
  TokenBatcher c(a, 1, 3, "x", "y");
  c.packDocuments(9, -100);
  p = packedBatch(c);
  EXPECT_EQ(p.x, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(p.y, (std::vector<int64_t>{2, 3, 9}));
  p = packedBatch(c);
  EXPECT_EQ(p.x, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(p.y, (std::vector<int64_t>{5, 6, 7}));
  EXPECT_EQ(p.ids, (std::vector<int64_t>{0, 1, 2}));
  // The rest of the document (7 9), then 8, the last token, is skipped and
  // the stream starts over: 1 2 3 9 does not fit.
  p = packedBatch(c);
  EXPECT_EQ(p.x, (std::vector<int64_t>{7, 9, 9}));
  EXPECT_EQ(p.y, (std::vector<int64_t>{9, -100, -100}));
  EXPECT_EQ(p.ids, (std::vector<int64_t>{0, 0, 1}));
  EXPECT_EQ(c.position(), 0);
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(TokenBatcher, PackDocumentsErrors) {
  std::string path = tempPath("eots.bin");
  // Every token an EOT but the last, which ends the stream: no positions.
  writeTokens(path, {7, 7, 7, 7, 7, 3});
  TokenBatcher b(path, 1, 2, "x", "y");
  EXPECT_EQ(errorOf([&] { b.packDocuments(7, -100); }),
            path + ": no document to pack: every token is the end-of-text "
                   "token 7");
  TokenBatcher r(path, 1, 2, "x", "y");
  r.randomWindows(1);
  EXPECT_EQ(errorOf([&] { r.packDocuments(3, -100); }),
            path + ": random windows cut through documents: they cannot be "
                   "packed");
  TokenBatcher p(path, 1, 2, "x", "y");
  p.packDocuments(3, -100);
  EXPECT_EQ(errorOf([&] { p.randomWindows(1); }),
            path + ": random windows cut through documents: they cannot be "
                   "packed");
  std::remove(path.c_str());
}
