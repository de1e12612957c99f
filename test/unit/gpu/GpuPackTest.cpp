// The packed-token kernels of the CUDA library (pad-skipping:
// runtime/kernels/cuda/pack.cu and dropout's packed path) against the CPU
// kernels of runtime/kernels/cpu/pack.cpp and host loops, bit for bit: they
// move bytes, so any difference is a bug.
//
//  * pack_index on random key masks (bool, f32, bf16 and f16 bias forms),
//    with a sequence of one token, one of none, one without padding, masks
//    with no padding and all padding, masks over several of the kernel's
//    4096-position chunks; bad bias values go to the error word, the
//    smallest position wins.
//  * pack_rows / unpack_rows against the CPU kernels for 2-, 4- and 8-byte
//    elements, aligned and misaligned (narrower word copies), and the round
//    trip; the fill check (float zero and integer fill) and unpack's read
//    range against the CPU kernels' returned row.
//  * varlen_gather / varlen_scatter against a host loop of the layout
//    formula (sequence lengths 0, 1, full and in between).
//  * dropout with `rows` against a host reference of the CPU backend's
//    packed dropout (runtime/kernels/dropout_hash.h), f32, f64, bf16, f16.
//
// Every output is poisoned (0x5a bytes) before a launch, so a row the
// kernel forgets to write shows. Without a GPU every test prints "no CUDA
// device: skipped" and skips.
#include "GpuTestUtil.h"

#include "data/half.h"
#include "kernels/cpu/cpu_kernels.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/dropout_hash.h"

#include <algorithm>
#include <random>
#include <limits>

namespace tcc::gputest {
namespace {

namespace cu = tcc::cuda;
using cu::FloatType;
using GpuPack = GpuTest;

/// Fills the device buffer with `byte` (a pattern no kernel writes by
/// accident: 0x5a5a5a5a is neither -1 nor a small row index).
template <class T> void poisonWith(DevBuf<T> &b, uint8_t byte = 0x5a) {
  check(cudaMemset(b.get(), byte, sizeof(T) * b.size()), "cudaMemset");
}

int64_t readError(const DevBuf<int64_t> &e) { return e.download()[0]; }

void resetError(DevBuf<int64_t> &e) {
  checkStatus(cu::set_error_word(e.get(), nullptr), "set_error_word");
}

//===----------------------------------------------------------------------===//
// Key masks
//===----------------------------------------------------------------------===//

enum class MaskKind { Mixed, NoPadding, AllPadding };

/// A [batch, seq] bool mask. Mixed: sequence 0 has random holes, 1 exactly
/// one token (at seq / 2), 2 none, 3 none padded, the rest random
/// left-aligned lengths (Hugging Face's padding) or random holes.
std::vector<uint8_t> makeKeep(int64_t batch, int64_t seq, MaskKind kind,
                              uint32_t seed) {
  std::vector<uint8_t> keep(size_t(batch * seq), 0);
  if (seq == 0)
    return keep;
  if (kind != MaskKind::Mixed) {
    std::fill(keep.begin(), keep.end(), kind == MaskKind::NoPadding);
    return keep;
  }
  std::mt19937 rng(seed);
  for (int64_t b = 0; b < batch; ++b) {
    uint8_t *row = keep.data() + b * seq;
    switch (b) {
    case 1:
      row[seq / 2] = 1;
      break;
    case 2:
      break;
    case 3:
      std::fill_n(row, seq, 1);
      break;
    default:
      if (b % 2 == 0) {
        for (int64_t t = 0; t < seq; ++t)
          row[t] = rng() % 3 != 0;
      } else {
        int64_t len = int64_t(rng() % uint32_t(seq + 1));
        std::fill_n(row, len, 1);
      }
    }
  }
  return keep;
}

/// The f32 bias of a bool mask: 0 or -0 for a token; -10000, -1000, -inf or
/// the most negative float for padding (all <= -1000 in every type once
/// rounded).
std::vector<float> biasOf(const std::vector<uint8_t> &keep, uint32_t seed) {
  const float pad[] = {-10000.0f, -1000.0f,
                       -std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::max()};
  std::mt19937 rng(seed);
  std::vector<float> bias(keep.size());
  for (size_t p = 0; p < keep.size(); ++p)
    bias[p] = keep[p] ? (rng() % 2 ? 0.0f : -0.0f) : pad[rng() % 4];
  return bias;
}

uint16_t toBits(FloatType t, float f) {
  return t == FloatType::BF16 ? data::floatToBf16(f) : data::floatToF16(f);
}
float fromBits(FloatType t, uint16_t h) {
  return t == FloatType::BF16 ? data::bf16ToFloat(h) : data::f16ToFloat(h);
}

/// pack_index on the device with the mask as keep (type null) or as a bias
/// of `type` (`bias` rounded to it first); compares rows, cu and the error
/// word with the CPU kernel on the same (widened) values.
void packIndexCase(int64_t batch, int64_t seq, const std::vector<uint8_t> &keep,
                   std::vector<float> bias, const FloatType *type,
                   const std::string &what) {
  SCOPED_TRACE(what + " batch " + std::to_string(batch) + " seq " +
               std::to_string(seq) +
               (type ? std::string(" bias ") + cu::float_type_name(*type)
                     : std::string(" keep")));
  const size_t n = size_t(batch * seq);
  std::vector<int32_t> refRows(n), refCu(size_t(batch + 1));
  DevBuf<int32_t> rows(n), cuSeq(size_t(batch + 1));
  DevBuf<int64_t> error(1);
  poisonWith(rows);
  poisonWith(cuSeq);
  resetError(error);
  int64_t refError;
  if (!type) {
    refError = cpu::pack_index(keep.data(), nullptr, batch, seq, refRows.data(),
                               refCu.data());
    DevBuf<uint8_t> dkeep(keep);
    checkStatus(cu::pack_index(dkeep.get(), nullptr, FloatType::F32, batch, seq,
                               rows.get(), cuSeq.get(), error.get(), nullptr),
                "pack_index");
    EXPECT_EQ(readError(error), refError);
  } else if (*type == FloatType::F32) {
    refError = cpu::pack_index(nullptr, bias.data(), batch, seq, refRows.data(),
                               refCu.data());
    DevBuf<float> dbias(bias);
    checkStatus(cu::pack_index(nullptr, dbias.get(), FloatType::F32, batch, seq,
                               rows.get(), cuSeq.get(), error.get(), nullptr),
                "pack_index");
    EXPECT_EQ(readError(error), refError);
  } else {
    std::vector<uint16_t> bits(n);
    for (size_t p = 0; p < n; ++p) {
      bits[p] = toBits(*type, bias[p]);
      bias[p] = fromBits(*type, bits[p]); // what the kernel sees, widened
    }
    refError = cpu::pack_index(nullptr, bias.data(), batch, seq, refRows.data(),
                               refCu.data());
    DevBuf<uint16_t> dbias(bits);
    checkStatus(cu::pack_index(nullptr, dbias.get(), *type, batch, seq,
                               rows.get(), cuSeq.get(), error.get(), nullptr),
                "pack_index");
    EXPECT_EQ(readError(error), refError);
  }
  if (refError >= 0)
    return; // the outputs are unspecified then
  EXPECT_EQ(rows.download(), refRows);
  EXPECT_EQ(cuSeq.download(), refCu);
}

struct MaskShape {
  int64_t batch, seq;
  MaskKind kind;
};

const MaskShape kMasks[] = {
    {5, 37, MaskKind::Mixed},       {7, 1, MaskKind::Mixed},
    {9, 1000, MaskKind::Mixed},  // 9000 positions: three chunks
    {16, 1024, MaskKind::Mixed}, // exactly four chunks
    {8, 1024, MaskKind::NoPadding}, {3, 300, MaskKind::AllPadding},
    {1, 1, MaskKind::NoPadding},    {1, 5000, MaskKind::Mixed},
    {3, 0, MaskKind::Mixed},        {0, 5, MaskKind::Mixed},
};

TEST_F(GpuPack, IndexMatchesTheCpuKernel) {
  uint32_t seed = 1;
  for (const MaskShape &m : kMasks) {
    std::vector<uint8_t> keep = makeKeep(m.batch, m.seq, m.kind, seed++);
    std::vector<float> bias = biasOf(keep, seed++);
    packIndexCase(m.batch, m.seq, keep, bias, nullptr, "mask");
    for (FloatType t : {FloatType::F32, FloatType::BF16, FloatType::F16})
      packIndexCase(m.batch, m.seq, keep, bias, &t, "mask");
  }
}

TEST_F(GpuPack, IndexRecordsTheFirstBadBias) {
  const int64_t batch = 6, seq = 1000; // two chunks
  std::vector<uint8_t> keep = makeKeep(batch, seq, MaskKind::Mixed, 3);
  const float bad[] = {-5.0f, std::numeric_limits<float>::quiet_NaN(), -999.0f,
                       1.0f, std::numeric_limits<float>::infinity()};
  // One bad value alone, then two of them: the smaller position wins, in
  // either chunk and in either order of the values.
  for (float value : bad)
    for (int64_t p :
         {int64_t(0), int64_t(4095), int64_t(4096), int64_t(5999)}) {
      std::vector<float> bias = biasOf(keep, 4);
      bias[size_t(p)] = value;
      for (FloatType t : {FloatType::F32, FloatType::BF16, FloatType::F16})
        packIndexCase(batch, seq, keep, bias, &t,
                      "bad " + std::to_string(value) + " at " +
                          std::to_string(p));
      bias[size_t(p == 0 ? 5000 : p - 1)] = bad[0];
      for (FloatType t : {FloatType::F32, FloatType::BF16, FloatType::F16})
        packIndexCase(batch, seq, keep, bias, &t,
                      "two bad, one at " + std::to_string(p));
    }
}

//===----------------------------------------------------------------------===//
// pack_rows / unpack_rows
//===----------------------------------------------------------------------===//

/// The rows of a mixed mask of batch x seq.
std::vector<int32_t> packedRows(int64_t batch, int64_t seq, MaskKind kind,
                                uint32_t seed, int32_t *count = nullptr) {
  std::vector<uint8_t> keep = makeKeep(batch, seq, kind, seed);
  std::vector<int32_t> rows(size_t(batch * seq)), cuSeq(size_t(batch + 1));
  EXPECT_EQ(cpu::pack_index(keep.data(), nullptr, batch, seq, rows.data(),
                            cuSeq.data()),
            -1);
  if (count)
    *count = cuSeq[size_t(batch)];
  return rows;
}

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t &b : v)
    b = static_cast<uint8_t>(rng());
  return v;
}

struct RowCase {
  int64_t batch, seq, width, elemBytes;
  size_t misalign; // bytes added to both pointers
};

// Row bytes 1536 (16-byte words, a full warp per row), 12 (4-byte words),
// 8, 6 (2-byte words), 2; misaligned by one element: narrower words.
const RowCase kRowCases[] = {
    {4, 50, 768, 2, 0}, {4, 50, 768, 2, 2}, {3, 33, 3, 4, 0}, {3, 33, 64, 4, 4},
    {5, 20, 1, 8, 0},   {5, 20, 3, 8, 8},   {6, 17, 3, 2, 0}, {6, 17, 1, 2, 2},
    {2, 2100, 8, 4, 0}, {1, 1, 16, 4, 0},
};

std::string rowCaseName(const RowCase &c) {
  return "batch " + std::to_string(c.batch) + " seq " + std::to_string(c.seq) +
         " width " + std::to_string(c.width) + " elem " +
         std::to_string(c.elemBytes) + " misalign " +
         std::to_string(c.misalign);
}

TEST_F(GpuPack, PackAndUnpackRowsMatchTheCpuKernels) {
  uint32_t seed = 10;
  for (const RowCase &c : kRowCases)
    for (MaskKind kind :
         {MaskKind::Mixed, MaskKind::NoPadding, MaskKind::AllPadding}) {
      SCOPED_TRACE(rowCaseName(c) + " kind " + std::to_string(int(kind)));
      const int64_t n = c.batch * c.seq, rowBytes = c.width * c.elemBytes;
      const size_t bytes = size_t(n * rowBytes);
      std::vector<int32_t> rows = packedRows(c.batch, c.seq, kind, seed++);
      std::vector<uint8_t> x = randomBytes(bytes, seed++);
      // A fill element: random bytes (a label, a float).
      std::vector<uint8_t> fill = randomBytes(size_t(c.elemBytes), seed++);
      uint64_t fillBits = 0;
      std::memcpy(&fillBits, fill.data(), size_t(c.elemBytes));

      std::vector<uint8_t> refPacked(bytes), refBack(bytes);
      ASSERT_EQ(cpu::pack_rows(x.data(), rows.data(), n, rowBytes, fill.data(),
                               c.elemBytes, false, false, refPacked.data()),
                -1);
      ASSERT_EQ(cpu::unpack_rows(refPacked.data(), rows.data(), n, rowBytes,
                                 c.seq, 0, 0, refBack.data()),
                -1);

      DevBuf<uint8_t> dx(x, c.misalign), packed(bytes, c.misalign),
          back(bytes, c.misalign);
      DevBuf<int32_t> drows(rows);
      DevBuf<int64_t> error(1);
      poisonWith(packed);
      poisonWith(back);
      resetError(error);
      checkStatus(cu::pack_rows(dx.get(), drows.get(), n, rowBytes, fillBits,
                                c.elemBytes, false, false, packed.get(),
                                error.get(), nullptr),
                  "pack_rows");
      checkStatus(cu::unpack_rows(packed.get(), drows.get(), n, rowBytes, c.seq,
                                  0, 0, back.get(), error.get(), nullptr),
                  "unpack_rows");
      expectBitEqual(packed.download(), refPacked, "packed");
      expectBitEqual(back.download(), refBack, "unpacked");
      EXPECT_EQ(readError(error), -1);

      // The round trip: the tokens' rows come back, padding is zero.
      std::vector<uint8_t> got = back.download();
      std::vector<uint8_t> selected(size_t(n), 0);
      for (int32_t r : rows)
        if (r >= 0)
          selected[size_t(r)] = 1;
      size_t bad = 0;
      for (int64_t p = 0; p < n; ++p)
        for (int64_t k = 0; k < rowBytes; ++k) {
          size_t at = size_t(p * rowBytes + k);
          bad += got[at] != (selected[size_t(p)] ? x[at] : 0);
        }
      EXPECT_EQ(bad, 0u) << "round trip";
    }
}

/// A tensor of n rows of `width` elements T, zero (or `fill`) on the rows
/// no token selects, random elsewhere.
template <class T>
std::vector<T> paddedInput(const std::vector<int32_t> &rows, int64_t width,
                           T fill, uint32_t seed) {
  const int64_t n = int64_t(rows.size());
  std::vector<T> x(size_t(n * width), fill);
  std::mt19937 rng(seed);
  for (int32_t r : rows)
    if (r >= 0)
      for (int64_t k = 0; k < width; ++k)
        x[size_t(r * width + k)] = static_cast<T>(int(rng() % 1000) + 1);
  return x;
}

/// pack_rows with `check` on the device and on the CPU: the same output and
/// the CPU's returned row in the error word.
template <class T>
void checkedPack(const std::vector<T> &x, const std::vector<int32_t> &rows,
                 int64_t width, T fill, bool floatZero,
                 const std::string &what) {
  SCOPED_TRACE(what);
  const int64_t n = int64_t(rows.size()), rowBytes = width * int64_t(sizeof(T));
  std::vector<T> ref(x.size());
  const int64_t refError = cpu::pack_rows(
      reinterpret_cast<const uint8_t *>(x.data()), rows.data(), n, rowBytes,
      reinterpret_cast<const uint8_t *>(&fill), sizeof(T), true, floatZero,
      reinterpret_cast<uint8_t *>(ref.data()));
  uint64_t fillBits = 0;
  std::memcpy(&fillBits, &fill, sizeof(T));
  DevBuf<T> dx(x), out(x.size());
  DevBuf<int32_t> drows(rows);
  DevBuf<int64_t> error(1);
  poisonWith(out);
  resetError(error);
  checkStatus(cu::pack_rows(dx.get(), drows.get(), n, rowBytes, fillBits,
                            sizeof(T), true, floatZero, out.get(), error.get(),
                            nullptr),
              "pack_rows");
  EXPECT_EQ(readError(error), refError);
  std::vector<T> got = out.download();
  EXPECT_EQ(std::memcmp(got.data(), ref.data(), sizeof(T) * ref.size()), 0)
      << "packed rows";
}

TEST_F(GpuPack, PackRowsChecksTheUnselectedRows) {
  int32_t count = 0;
  const int64_t batch = 6, seq = 40;
  std::vector<int32_t> rows =
      packedRows(batch, seq, MaskKind::Mixed, 21, &count);
  std::vector<int32_t> unselected;
  {
    std::vector<uint8_t> sel(rows.size(), 0);
    for (int32_t r : rows)
      if (r >= 0)
        sel[size_t(r)] = 1;
    for (size_t p = 0; p < sel.size(); ++p)
      if (!sel[p])
        unselected.push_back(int32_t(p));
  }
  ASSERT_GE(unselected.size(), 3u);
  const size_t a = unselected[unselected.size() / 3],
               b = unselected[2 * unselected.size() / 3];

  // A gradient (float zero): -0 passes, anything else is an error.
  for (int64_t width : {int64_t(64), int64_t(3)}) {
    std::vector<float> g = paddedInput<float>(rows, width, 0.0f, 22);
    checkedPack(g, rows, width, 0.0f, true, "f32 zero");
    g[a * size_t(width) + 1] = -0.0f;
    checkedPack(g, rows, width, 0.0f, true, "f32 with -0");
    g[b * size_t(width) + size_t(width) - 1] = 1e-30f;
    checkedPack(g, rows, width, 0.0f, true, "f32 nonzero at b");
    g[a * size_t(width)] = std::numeric_limits<float>::denorm_min();
    checkedPack(g, rows, width, 0.0f, true, "f32 nonzero at a and b");

    std::vector<double> d = paddedInput<double>(rows, width, 0.0, 23);
    d[a * size_t(width)] = -0.0;
    checkedPack(d, rows, width, 0.0, true, "f64 with -0");
    d[b * size_t(width)] = -1.0;
    checkedPack(d, rows, width, 0.0, true, "f64 nonzero at b");

    // bf16 bits: 0x8000 is -0, 0x0001 the smallest subnormal.
    std::vector<uint16_t> h = paddedInput<uint16_t>(rows, width, 0, 24);
    h[b * size_t(width)] = 0x8000;
    checkedPack(h, rows, width, uint16_t(0), true, "bf16 with -0");
    h[b * size_t(width) + size_t(width) - 1] = 0x0001;
    checkedPack(h, rows, width, uint16_t(0), true, "bf16 nonzero at b");
  }

  // Labels (integer fill): the unselected rows must hold the fill.
  std::vector<int64_t> labels = paddedInput<int64_t>(rows, 1, -100, 25);
  checkedPack(labels, rows, 1, int64_t(-100), false, "i64 labels");
  labels[b] = 0;
  checkedPack(labels, rows, 1, int64_t(-100), false, "i64 label 0 at b");
  labels[a] = -101;
  checkedPack(labels, rows, 1, int64_t(-100), false, "i64 labels at a, b");
  std::vector<int32_t> labels32 = paddedInput<int32_t>(rows, 2, -100, 26);
  checkedPack(labels32, rows, 2, int32_t(-100), false, "i32 labels");
  labels32[b * 2 + 1] = 100;
  checkedPack(labels32, rows, 2, int32_t(-100), false, "i32 label at b");
  // An integer fill check takes -0.0's bits literally.
  std::vector<uint32_t> bits = paddedInput<uint32_t>(rows, 4, 0, 27);
  bits[a * 4 + 2] = 0x80000000u;
  checkedPack(bits, rows, 4, uint32_t(0), false, "bytes of -0.0f");
}

TEST_F(GpuPack, UnpackRowsChecksTheReadRange) {
  const int64_t batch = 6, seq = 40, width = 8;
  std::vector<uint8_t> keep = makeKeep(batch, seq, MaskKind::NoPadding, 0);
  // Sequence 2 pads its position 0 (a CLS token), sequence 4 its position 3,
  // sequence 5 position 39.
  keep[2 * seq] = 0;
  keep[4 * seq + 3] = 0;
  keep[5 * seq + 39] = 0;
  std::vector<int32_t> rows(size_t(batch * seq)), cuSeq(size_t(batch + 1));
  ASSERT_EQ(cpu::pack_index(keep.data(), nullptr, batch, seq, rows.data(),
                            cuSeq.data()),
            -1);
  const int64_t n = batch * seq, rowBytes = width * 4;
  std::vector<uint8_t> x = randomBytes(size_t(n * rowBytes), 31);
  DevBuf<uint8_t> dx(x), out(x.size());
  DevBuf<int32_t> drows(rows);
  DevBuf<int64_t> error(1);
  struct Range {
    int64_t begin, end;
  };
  for (Range r : {Range{0, 1}, Range{1, 3}, Range{3, 4}, Range{2, 40},
                  Range{39, 40}, Range{5, 5}, Range{4, 2}}) {
    SCOPED_TRACE("read [" + std::to_string(r.begin) + ", " +
                 std::to_string(r.end) + ")");
    std::vector<uint8_t> ref(x.size());
    const int64_t refError = cpu::unpack_rows(
        x.data(), rows.data(), n, rowBytes, seq, r.begin, r.end, ref.data());
    poisonWith(out);
    resetError(error);
    checkStatus(cu::unpack_rows(dx.get(), drows.get(), n, rowBytes, seq,
                                r.begin, r.end, out.get(), error.get(),
                                nullptr),
                "unpack_rows");
    EXPECT_EQ(readError(error), refError);
    expectBitEqual(out.download(), ref, "unpacked");
  }
}

TEST_F(GpuPack, BadArgumentsAreRejected) {
  DevBuf<uint8_t> buf(64);
  DevBuf<int32_t> rows(std::vector<int32_t>{0, 1, -1, -1});
  const int invalid = int(cudaErrorInvalidValue);
  EXPECT_EQ(cu::pack_rows(buf.get(), rows.get(), 4, 6, 0, 4, false, false,
                          buf.get(), nullptr, nullptr),
            invalid); // 6 bytes of 4-byte elements
  EXPECT_EQ(cu::pack_rows(buf.get(), rows.get(), 4, 6, 0, 3, false, false,
                          buf.get(), nullptr, nullptr),
            invalid);
  EXPECT_EQ(cu::unpack_rows(buf.get(), rows.get(), 4, 4, 0, 0, 1, buf.get(),
                            nullptr, nullptr),
            invalid); // a read range without a sequence length
  EXPECT_EQ(cu::varlen_gather(buf.get(), rows.get(), 1, 1, 4, 1, 8, buf.get(),
                              nullptr),
            invalid);
  EXPECT_EQ(cu::pack_index(nullptr, nullptr, FloatType::F32, 1, 4, rows.get(),
                           rows.get(), nullptr, nullptr),
            invalid);
  EXPECT_EQ(cu::dropout(reinterpret_cast<float *>(buf.get()),
                        reinterpret_cast<float *>(buf.get()), nullptr, 4, 0.5,
                        1, nullptr, nullptr, rows.get(), 0),
            invalid);
}

//===----------------------------------------------------------------------===//
// varlen_gather / varlen_scatter
//===----------------------------------------------------------------------===//

struct VarlenCase {
  std::vector<int32_t> lengths; // per sequence, <= seq
  int64_t heads, seq, dim;
  size_t misalign; // elements
};

template <class T> void varlenCase(const VarlenCase &c, uint32_t seed) {
  const int64_t batch = int64_t(c.lengths.size()), H = c.heads, T_ = c.seq,
                D = c.dim;
  SCOPED_TRACE("batch " + std::to_string(batch) + " heads " +
               std::to_string(H) + " seq " + std::to_string(T_) + " dim " +
               std::to_string(D) + " elem " + std::to_string(sizeof(T)) +
               " misalign " + std::to_string(c.misalign));
  std::vector<int32_t> cuSeq(size_t(batch + 1), 0);
  for (int64_t s = 0; s < batch; ++s)
    cuSeq[size_t(s + 1)] = cuSeq[size_t(s)] + c.lengths[size_t(s)];
  const int64_t count = cuSeq[size_t(batch)];
  const size_t size = size_t(batch * H * T_ * D);
  auto packedRow = [&](int64_t r, int64_t h) {
    return ((r / T_) * H + h) * T_ + r % T_;
  };
  std::mt19937 rng(seed);
  std::vector<T> packed(size), aligned(size);
  for (T &v : packed)
    v = static_cast<T>(rng());
  for (T &v : aligned)
    v = static_cast<T>(rng());

  // The formula, on the host.
  std::vector<T> refAligned(size, T(0)), refPacked(size, T(0));
  for (int64_t s = 0; s < batch; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < c.lengths[size_t(s)]; ++i) {
        int64_t r = cuSeq[size_t(s)] + i, a = (s * H + h) * T_ + i;
        std::copy_n(packed.begin() + packedRow(r, h) * D, D,
                    refAligned.begin() + a * D);
        std::copy_n(aligned.begin() + a * D, D,
                    refPacked.begin() + packedRow(r, h) * D);
      }

  DevBuf<T> dpacked(packed, c.misalign), daligned(aligned, c.misalign),
      gathered(size, c.misalign), scattered(size, c.misalign);
  DevBuf<int32_t> dcu(cuSeq);
  poisonWith(gathered);
  poisonWith(scattered);
  checkStatus(cu::varlen_gather(dpacked.get(), dcu.get(), batch, H, T_, D,
                                sizeof(T), gathered.get(), nullptr),
              "varlen_gather");
  checkStatus(cu::varlen_scatter(daligned.get(), dcu.get(), batch, H, T_, D,
                                 sizeof(T), scattered.get(), nullptr),
              "varlen_scatter");
  expectBitEqual(gathered.download(), refAligned, "gathered");
  expectBitEqual(scattered.download(), refPacked, "scattered");

  // scatter(gather(packed)) is packed on the tokens, zero past the count.
  DevBuf<T> back(size, c.misalign);
  poisonWith(back);
  checkStatus(cu::varlen_scatter(gathered.get(), dcu.get(), batch, H, T_, D,
                                 sizeof(T), back.get(), nullptr),
              "varlen_scatter");
  std::vector<T> refBack(size, T(0));
  for (int64_t r = 0; r < count; ++r)
    for (int64_t h = 0; h < H; ++h)
      std::copy_n(packed.begin() + packedRow(r, h) * D, D,
                  refBack.begin() + packedRow(r, h) * D);
  expectBitEqual(back.download(), refBack, "round trip");
}

TEST_F(GpuPack, VarlenGatherAndScatterFollowTheLayout) {
  // Lengths: full, 1, 0, in between; a batch of one; all empty.
  const std::vector<int32_t> mixed = {37, 1, 0, 20, 36, 0, 5};
  uint32_t seed = 40;
  for (int64_t misalign : {0, 1}) {
    varlenCase<uint16_t>({mixed, 3, 37, 64, size_t(misalign)}, seed++);
    varlenCase<uint16_t>({mixed, 2, 37, 5, size_t(misalign)}, seed++);
    varlenCase<uint32_t>({mixed, 3, 37, 64, size_t(misalign)}, seed++);
    varlenCase<uint32_t>({mixed, 1, 37, 3, size_t(misalign)}, seed++);
  }
  varlenCase<uint16_t>({{128}, 12, 128, 64, 0}, seed++);
  varlenCase<uint16_t>({{0, 0, 0}, 2, 16, 64, 0}, seed++);
  varlenCase<uint32_t>({{16, 16, 16}, 2, 16, 128, 0}, seed++);
  // GPT-2 sized: 8 sequences of up to 1024 tokens, 12 heads of 64.
  std::vector<int32_t> gpt2 = {1024, 1000, 17, 512, 1, 0, 1023, 700};
  varlenCase<uint16_t>({gpt2, 12, 1024, 64, 0}, seed++);
}

//===----------------------------------------------------------------------===//
// Packed dropout
//===----------------------------------------------------------------------===//

/// The CPU backend's packed dropout on the host: element i of packed row
/// i / width hashed as rows[i / width] * width + i % width, dropped where
/// that row is negative. `mul` is the kernel's multiply of one element.
template <class T, class Mul>
void refPackedDropout(const std::vector<T> &x, const std::vector<int32_t> &rows,
                      int64_t width, uint64_t seed, double ratio, Mul mul,
                      std::vector<T> &y, std::vector<uint8_t> &mask) {
  const uint32_t threshold = dropoutKeepThreshold(ratio);
  const int64_t n = int64_t(x.size());
  y.assign(x.size(), T(0));
  mask.assign(x.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t r = rows[size_t(i / width)];
    const int64_t index = r < 0 ? -1 : int64_t(r) * width + i % width;
    const bool keep =
        index >= 0 &&
        dropoutKeep(seed, static_cast<uint64_t>(index), threshold);
    mask[size_t(i)] = keep;
    if (keep)
      y[size_t(i)] = mul(x[size_t(i)]);
  }
}

struct DropoutCase {
  int64_t batch, seq, width;
  double ratio;
  size_t misalign;
  bool withOffset;
};

const DropoutCase kDropoutCases[] = {
    {4, 64, 768, 0.1, 0, true}, {3, 33, 5, 0.5, 0, false},
    {3, 33, 1, 0.25, 0, true},  {2, 40, 3, 0.5, 1, false},
    {5, 17, 2, 0.9, 3, true},   {1, 1, 4, 0.5, 0, false},
};

std::string dropoutName(const DropoutCase &c) {
  return "batch " + std::to_string(c.batch) + " seq " + std::to_string(c.seq) +
         " width " + std::to_string(c.width) + " ratio " +
         std::to_string(c.ratio) + " misalign " + std::to_string(c.misalign) +
         (c.withOffset ? " offset" : "");
}

TEST_F(GpuPack, PackedDropoutMatchesTheCpuBackend) {
  const uint64_t seed = 0x1234abcdull;
  const int64_t step = 17;
  uint32_t rseed = 50;
  for (const DropoutCase &c : kDropoutCases) {
    SCOPED_TRACE(dropoutName(c));
    std::vector<int32_t> rows =
        packedRows(c.batch, c.seq, MaskKind::Mixed, rseed++);
    const int64_t n = int64_t(rows.size()) * c.width;
    const uint64_t s = c.withOffset ? dropoutSeed(seed, step) : seed;
    DevBuf<int32_t> drows(rows);
    DevBuf<int64_t> doff(std::vector<int64_t>{step});
    const int64_t *offset = c.withOffset ? doff.get() : nullptr;
    DevBuf<uint8_t> mask(size_t(n), c.misalign);

    {
      std::vector<float> x = randomNormal(size_t(n), rseed++);
      const float scale = static_cast<float>(1.0 / (1.0 - c.ratio));
      std::vector<float> ref;
      std::vector<uint8_t> refMask;
      refPackedDropout(
          x, rows, c.width, s, c.ratio, [&](float v) { return v * scale; }, ref,
          refMask);
      DevBuf<float> dx(x, c.misalign), dy(size_t(n), c.misalign);
      poisonWith(mask);
      checkStatus(cu::dropout(dx.get(), dy.get(), mask.get(), n, c.ratio, seed,
                              offset, nullptr, drows.get(), c.width),
                  "dropout f32");
      expectBitEqual(dy.download(), ref, "f32 y");
      expectBitEqual(mask.download(), refMask, "f32 mask");
      // Without a mask.
      dy.poison();
      checkStatus(cu::dropout(dx.get(), dy.get(), nullptr, n, c.ratio, seed,
                              offset, nullptr, drows.get(), c.width),
                  "dropout f32 without mask");
      expectBitEqual(dy.download(), ref, "f32 y without mask");
    }
    {
      std::vector<double> x(static_cast<size_t>(n));
      std::mt19937 rng(rseed++);
      for (double &v : x)
        v = std::normal_distribution<double>()(rng);
      const double scale = 1.0 / (1.0 - c.ratio);
      std::vector<double> ref;
      std::vector<uint8_t> refMask;
      refPackedDropout(
          x, rows, c.width, s, c.ratio, [&](double v) { return v * scale; },
          ref, refMask);
      DevBuf<double> dx(x, c.misalign), dy(size_t(n), c.misalign);
      poisonWith(mask);
      checkStatus(cu::dropout(dx.get(), dy.get(), mask.get(), n, c.ratio, seed,
                              offset, nullptr, drows.get(), c.width),
                  "dropout f64");
      expectBitEqual(dy.download(), ref, "f64 y");
      expectBitEqual(mask.download(), refMask, "f64 mask");
    }
    for (FloatType t : {FloatType::BF16, FloatType::F16}) {
      SCOPED_TRACE(cu::float_type_name(t));
      std::vector<float> wide = randomNormal(size_t(n), rseed++, 3.0f);
      std::vector<uint16_t> x(static_cast<size_t>(n));
      for (size_t i = 0; i < x.size(); ++i)
        x[i] = toBits(t, wide[i]);
      const float scale = static_cast<float>(1.0 / (1.0 - c.ratio));
      std::vector<uint16_t> ref;
      std::vector<uint8_t> refMask;
      refPackedDropout(
          x, rows, c.width, s, c.ratio,
          [&](uint16_t v) { return toBits(t, fromBits(t, v) * scale); }, ref,
          refMask);
      DevBuf<uint16_t> dx(x, c.misalign), dy(size_t(n), c.misalign);
      poisonWith(mask);
      checkStatus(cu::dropout(t, dx.get(), dy.get(), mask.get(), n, c.ratio,
                              seed, offset, nullptr, drows.get(), c.width),
                  "dropout 16-bit");
      expectBitEqual(dy.download(), ref, "16-bit y");
      expectBitEqual(mask.download(), refMask, "16-bit mask");
    }
  }
}

// segment_index (packed documents) against the CPU kernel: documents of
// random lengths in rows that span several 4096-position chunks, positions
// continuing across a row start, int64 and int32; and the first position
// that neither restarts nor continues.
TEST_F(GpuPack, SegmentIndexMatchesTheCpuKernel) {
  std::mt19937 rng(5);
  for (int64_t seq : {1, 7, 1000, 5000})
    for (bool pos64 : {true, false}) {
      SCOPED_TRACE("seq " + std::to_string(seq) + (pos64 ? " i64" : " i32"));
      const int64_t batch = 3, n = batch * seq;
      std::vector<int64_t> p64(static_cast<size_t>(n));
      int64_t next = 0;
      for (int64_t r = 0; r < n; ++r) {
        if (std::uniform_int_distribution<int>(0, 9)(rng) == 0)
          next = 0; // a new document
        p64[size_t(r)] = next++;
      }
      std::vector<int32_t> p32(p64.begin(), p64.end());
      std::vector<int32_t> want(size_t(n + 1));
      ASSERT_EQ(cpu::segment_index(pos64 ? static_cast<const void *>(p64.data())
                                         : p32.data(),
                                   pos64, batch, seq, want.data()),
                -1);
      DevBuf<int64_t> d64(p64);
      DevBuf<int32_t> d32(p32), cuOut(size_t(n + 1));
      DevBuf<int64_t> error(1);
      resetError(error);
      poisonWith(cuOut);
      checkStatus(cu::segment_index(pos64 ? static_cast<const void *>(d64.get())
                                          : d32.get(),
                                    pos64, batch, seq, cuOut.get(),
                                    error.get(), nullptr),
                  "segment_index");
      EXPECT_EQ(cuOut.download(), want);
      EXPECT_EQ(readError(error), -1);
      if (seq < 7)
        continue;
      // Two bad positions: the smaller is reported, as the CPU's.
      p64[size_t(seq + 3)] = p64[size_t(seq + 2)] + 5;
      p64[size_t(2 * seq + 4)] = 77;
      if (p64[size_t(2 * seq + 3)] == 76)
        p64[size_t(2 * seq + 4)] = 78;
      std::vector<int32_t> ignore(size_t(n + 1));
      const int64_t first = cpu::segment_index(p64.data(), true, batch, seq,
                                               ignore.data());
      ASSERT_EQ(first, seq + 3);
      DevBuf<int64_t> bad(p64);
      resetError(error);
      checkStatus(cu::segment_index(bad.get(), true, batch, seq, cuOut.get(),
                                    error.get(), nullptr),
                  "segment_index");
      EXPECT_EQ(readError(error), first);
    }
}

} // namespace
} // namespace tcc::gputest
