// Packed tokens (pad-skipping): the CUDA kernels of
// runtime/kernels/cpu/pack.cpp and the layout change of varlen attention
// (runtime/kernels/cpu/attention.cpp's Packed).
//
// pack_index (and segment_index, packed documents' boundaries) is one block
// of 1024 threads walking the key mask in chunks of 4096 positions (4 consecutive positions per thread): a block-wide
// exclusive prefix sum of the token flags (warp shuffles, then the 32 warp
// totals scanned by warp 0) gives each token its packed row, and a running
// total carries from chunk to chunk.
//
// The row movers (pack_rows, unpack_rows, varlen_gather, varlen_scatter)
// share one scheme: every *output* row is written by one group of TPR
// threads (TPR a power of two from 1 to 32, the smallest covering the row's
// words, at most a warp) that first finds the row's source row (or none:
// the fill row, zero) and then copies it in words of W bytes, W the widest
// of 16, 8, 4, 2, 1 that divides the row bytes and both pointers. Blocks of
// 256 threads, a grid-stride loop over the rows, at most 4096 blocks. No
// thread ever synchronises with another, so groups may leave early. Where
// the source row is found by a binary search (unpack_rows; pack_rows'
// check; varlen_scatter) every thread of the group runs the same search, on
// the same addresses.
#include "kernels/cuda/common.cuh"

#include <climits>

namespace tcc::cuda {
namespace {
using namespace detail;

//===----------------------------------------------------------------------===//
// pack_index
//===----------------------------------------------------------------------===//

constexpr int kIndexThreads = 1024; // exactly 32 warps: the scan needs them
constexpr int kIndexItems = 4;      // consecutive positions per thread

/// Whether position p of the key mask is a token; a bias that is neither 0
/// nor <= -1000 (NaN included) goes to `error` and counts as padding.
__device__ __forceinline__ bool isToken(const uint8_t *keep, const void *bias,
                                        FloatType biasType, int64_t p,
                                        int64_t *error) {
  if (keep)
    return keep[p] != 0;
  const float v = loadAs(biasType, bias, p); // widened exactly, as the CPU
  if (v == 0.0f)
    return true;
  if (v <= -1000.0f)
    return false;
  recordError(error, p);
  return false;
}

/// Block-wide stream compaction (one block of kIndexThreads): writes, in
/// order, every position p < n with flag(p) to out[0 .. count) and calls
/// atRowStart(p, before) at each p % seq == 0 with the count before p.
/// Returns the count, in every thread.
template <class Flag, class AtRowStart>
__device__ int compactPositions(int64_t n, int64_t seq, Flag flag,
                                AtRowStart atRowStart, int32_t *out) {
  __shared__ int warpScan[kIndexThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int base = 0; // flagged positions before the current chunk (every thread)
  for (int64_t c0 = 0; c0 < n; c0 += int64_t(kIndexThreads) * kIndexItems) {
    const int64_t p0 = c0 + int64_t(threadIdx.x) * kIndexItems;
    bool hit[kIndexItems];
    int count = 0;
#pragma unroll
    for (int j = 0; j < kIndexItems; ++j) {
      hit[j] = p0 + j < n && flag(p0 + j);
      count += hit[j];
    }
    // Inclusive scan of the counts over the warp, then over the warps.
    int incl = count;
#pragma unroll
    for (int off = 1; off < 32; off <<= 1) {
      const int v = __shfl_up_sync(kFullMask, incl, off);
      if (lane >= off)
        incl += v;
    }
    if (lane == 31)
      warpScan[warp] = incl;
    __syncthreads();
    if (warp == 0) {
      int t = warpScan[lane];
#pragma unroll
      for (int off = 1; off < 32; off <<= 1) {
        const int v = __shfl_up_sync(kFullMask, t, off);
        if (lane >= off)
          t += v;
      }
      warpScan[lane] = t; // inclusive over warps 0 .. lane
    }
    __syncthreads();
    // Flags before position p0: earlier chunks, earlier warps, earlier
    // lanes of this warp.
    int before = base + (warp > 0 ? warpScan[warp - 1] : 0) + (incl - count);
#pragma unroll
    for (int j = 0; j < kIndexItems; ++j) {
      const int64_t p = p0 + j;
      if (p >= n)
        break;
      if (p % seq == 0)
        atRowStart(p, before);
      if (hit[j])
        out[before++] = static_cast<int32_t>(p);
    }
    base += warpScan[kIndexThreads / 32 - 1];
    __syncthreads(); // warpScan is rewritten by the next chunk
  }
  return base;
}

__global__ void __launch_bounds__(kIndexThreads)
    packIndexKernel(const uint8_t *keep, const void *bias, FloatType biasType,
                    int64_t batch, int64_t seq, int32_t *rows, int32_t *cu,
                    int64_t *error) {
  const int64_t n = batch * seq; // <= INT32_MAX (checked by the launcher)
  const int base = compactPositions(
      n, seq,
      [&](int64_t p) { return isToken(keep, bias, biasType, p, error); },
      [&](int64_t p, int before) { cu[p / seq] = before; }, rows);
  if (threadIdx.x == 0)
    cu[batch] = base;
  if (seq == 0) // no positions: every sequence starts at 0
    for (int64_t b = threadIdx.x; b < batch; b += kIndexThreads)
      cu[b] = 0;
  for (int64_t i = base + int64_t(threadIdx.x); i < n; i += kIndexThreads)
    rows[i] = -1;
}

/// segment_index: a document starts at every row start and where the
/// position is 0; any other position must continue the previous one by 1
/// (else `error`, and it counts as no start).
template <class P>
__global__ void __launch_bounds__(kIndexThreads)
    segmentIndexKernel(const P *pos, int64_t batch, int64_t seq, int32_t *cu,
                       int64_t *error) {
  const int64_t n = batch * seq;
  const int count = compactPositions(
      n, seq,
      [&](int64_t p) {
        if (p % seq == 0 || pos[p] == 0)
          return true;
        if (pos[p] != pos[p - 1] + 1)
          recordError(error, p);
        return false;
      },
      [](int64_t, int) {}, cu);
  for (int64_t s = count + int64_t(threadIdx.x); s <= n; s += kIndexThreads)
    cu[s] = static_cast<int32_t>(n);
}

//===----------------------------------------------------------------------===//
// Row movers
//===----------------------------------------------------------------------===//

constexpr int kRowThreads = 256;
constexpr int64_t kMaxRowBlocks = 4096;

/// The 8 bytes of a pattern whose period (elemBytes) divides 8, as a W-byte
/// word starting at byte `offset` of a row (a multiple of sizeof(V)).
template <class V>
__device__ __forceinline__ V patternWord(uint64_t pattern8, int64_t offset) {
  if constexpr (std::is_same_v<V, uint4>) {
    const uint32_t lo = static_cast<uint32_t>(pattern8);
    const uint32_t hi = static_cast<uint32_t>(pattern8 >> 32);
    return make_uint4(lo, hi, lo, hi);
  } else {
    // sizeof(V) <= 8 divides offset, so offset % 8 + sizeof(V) <= 8.
    return static_cast<V>(pattern8 >> (8 * (offset & 7)));
  }
}

/// Whether a and b differ in a bit that m selects.
__device__ __forceinline__ bool maskedNe(uint4 a, uint4 b, uint4 m) {
  return (((a.x ^ b.x) & m.x) | ((a.y ^ b.y) & m.y) | ((a.z ^ b.z) & m.z) |
          ((a.w ^ b.w) & m.w)) != 0;
}
template <class V> __device__ __forceinline__ bool maskedNe(V a, V b, V m) {
  return ((a ^ b) & m) != 0;
}

/// Where a thread works: its group's first row, the row stride of the grid,
/// and its lane within the group of `tpr` threads.
struct RowLoop {
  int64_t first, stride;
  int lane, tpr;
  __device__ __forceinline__ explicit RowLoop(int tprLog2) {
    tpr = 1 << tprLog2;
    const int groups = kRowThreads >> tprLog2; // groups (rows) per block
    first = int64_t(blockIdx.x) * groups + (threadIdx.x >> tprLog2);
    stride = int64_t(gridDim.x) * groups;
    lane = threadIdx.x & (tpr - 1);
  }
};

/// Output row `dst` (`words` words of V) = input row `src`, or the pattern
/// row when src < 0; this thread's words of it.
template <class V>
__device__ __forceinline__ void
copyRow(const V *__restrict__ in, int64_t src, V *__restrict__ out, int64_t dst,
        int64_t words, const RowLoop &g, uint64_t fill8) {
  V *o = out + dst * words;
  if (src >= 0) {
    const V *s = in + src * words;
#pragma unroll 4
    for (int64_t w = g.lane; w < words; w += g.tpr)
      o[w] = s[w];
  } else {
    for (int64_t w = g.lane; w < words; w += g.tpr)
      o[w] = patternWord<V>(fill8, w * int64_t(sizeof(V)));
  }
}

/// The i with rows[i] == p, or -1: rows is ascending over its non-negative
/// prefix and negative after it, so "rows[i] is a token below p" holds
/// exactly for a prefix of [0, n).
__device__ __forceinline__ int64_t findRow(const int32_t *rows, int64_t n,
                                           int64_t p) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const int32_t r = rows[mid];
    if (r >= 0 && r < p)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < n && rows[lo] == p ? lo : -1;
}

/// pack_rows: out row i = in row rows[i] or the fill row; with `check`, an
/// unselected row i of `in` must equal `expect8` in the bits of `mask8`
/// (patterns as fill8).
template <class V>
__global__ void __launch_bounds__(kRowThreads)
    packRowsKernel(const V *__restrict__ in, const int32_t *rows, int64_t n,
                   int64_t words, int tprLog2, uint64_t fill8, bool check,
                   uint64_t expect8, uint64_t mask8, V *__restrict__ out,
                   int64_t *error) {
  const RowLoop g(tprLog2);
  for (int64_t i = g.first; i < n; i += g.stride) {
    const int32_t r = rows[i];
    copyRow(in, r >= 0 && r < n ? int64_t(r) : -1, out, i, words, g, fill8);
    if (!check || findRow(rows, n, i) >= 0)
      continue;
    const V *s = in + i * words;
    for (int64_t w = g.lane; w < words; w += g.tpr) {
      const int64_t offset = w * int64_t(sizeof(V));
      if (maskedNe(s[w], patternWord<V>(expect8, offset),
                   patternWord<V>(mask8, offset))) {
        recordError(error, i);
        break;
      }
    }
  }
}

/// unpack_rows: out row p = in row i with rows[i] == p, else zero; an
/// unselected p < checkRows with readBegin <= p % seq < readEnd is an error.
template <class V>
__global__ void __launch_bounds__(kRowThreads)
    unpackRowsKernel(const V *__restrict__ in, const int32_t *rows, int64_t n,
                     int64_t words, int tprLog2, int64_t seq, int64_t readBegin,
                     int64_t readEnd, int64_t checkRows, V *__restrict__ out,
                     int64_t *error) {
  const RowLoop g(tprLog2);
  for (int64_t p = g.first; p < n; p += g.stride) {
    const int64_t i = findRow(rows, n, p);
    copyRow(in, i, out, p, words, g, 0);
    if (i < 0 && p < checkRows && g.lane == 0) {
      const int64_t t = p % seq;
      if (t >= readBegin && t < readEnd)
        recordError(error, p);
    }
  }
}

/// varlen_gather (SCATTER false) or varlen_scatter (true) over the
/// batch * heads * seq rows of the output.
template <class V, bool SCATTER>
__global__ void __launch_bounds__(kRowThreads)
    varlenKernel(const V *__restrict__ in, const int32_t *cu, int64_t batch,
                 int64_t heads, int64_t seq, int64_t words, int tprLog2,
                 V *__restrict__ out) {
  const RowLoop g(tprLog2);
  const int64_t rowsOut = batch * heads * seq;
  for (int64_t q = g.first; q < rowsOut; q += g.stride) {
    // q = (b * heads + h) * seq + t in either layout.
    const int64_t b = q / (heads * seq), h = (q / seq) % heads, t = q % seq;
    int64_t src = -1;
    if (!SCATTER) {
      // Aligned row: token t of sequence b, packed token r = cu[b] + t.
      const int64_t start = cu[b], len = cu[b + 1] - start, r = start + t;
      if (t < len && r >= 0 && r < batch * seq)
        src = ((r / seq) * heads + h) * seq + r % seq;
    } else {
      // Packed row: packed token r = b * seq + t, of the sequence s with
      // cu[s] <= r < cu[s + 1] (the last s with cu[s] <= r: lengths may be
      // 0, so several cu entries can be equal).
      const int64_t r = b * seq + t;
      if (r < cu[batch]) {
        const int64_t s = sequenceOf(cu, batch, r), i = r - cu[s];
        if (i >= 0 && i < seq)
          src = (s * heads + h) * seq + i;
      }
    }
    copyRow(in, src, out, q, words, g, 0);
  }
}

/// Bytes of the widest word (16, 8, 4, 2 or 1) dividing rowBytes and every
/// pointer.
int wordBytes(int64_t rowBytes, const void *a, const void *b) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(a) |
                         reinterpret_cast<uintptr_t>(b) |
                         static_cast<uintptr_t>(rowBytes);
  int w = 16;
  while (w > 1 && (bits & uintptr_t(w - 1)) != 0)
    w /= 2;
  return w;
}

/// Calls f(V{}) with V the word type of `bytes` bytes.
template <class F> Status dispatchWord(int bytes, F &&f) {
  switch (bytes) {
  case 16:
    return f(uint4{});
  case 8:
    return f(uint64_t{});
  case 4:
    return f(uint32_t{});
  case 2:
    return f(uint16_t{});
  default:
    return f(uint8_t{});
  }
}

/// log2 of the threads per row: the smallest power of two >= words, at
/// most 32.
int groupLog2(int64_t words) {
  int l = 0;
  while (l < 5 && (int64_t(1) << l) < words)
    ++l;
  return l;
}

/// Blocks for `rows` rows of groups of 2^log2 threads.
unsigned rowBlocks(int64_t rows, int log2) {
  const int64_t blocks = ceilDiv(rows, kRowThreads >> log2);
  return static_cast<unsigned>(blocks < kMaxRowBlocks ? blocks : kMaxRowBlocks);
}

/// The low `elemBytes` bytes of `bits` repeated over 8 bytes.
uint64_t repeat8(uint64_t bits, int64_t elemBytes) {
  if (elemBytes == 8)
    return bits;
  const uint64_t one = bits & ((uint64_t(1) << (8 * elemBytes)) - 1);
  uint64_t out = 0;
  for (int64_t b = 0; b < 8; b += elemBytes)
    out |= one << (8 * b);
  return out;
}

bool elemBytesOk(int64_t e) { return e == 1 || e == 2 || e == 4 || e == 8; }

} // namespace

Status pack_index(const uint8_t *keep, const void *bias, FloatType biasType,
                  int64_t batch, int64_t seq, int32_t *rows, int32_t *cu,
                  int64_t *error, cudaStream_t stream) {
  if (batch < 0 || seq < 0 || (!keep && !bias) || !cu ||
      (seq > 0 && batch > INT32_MAX / seq))
    return invalid();
  if (!keep && biasType != FloatType::F32 && biasType != FloatType::BF16 &&
      biasType != FloatType::F16)
    return invalid();
  // One block even for batch * seq == 0: cu is written.
  packIndexKernel<<<1, kIndexThreads, 0, stream>>>(keep, bias, biasType, batch,
                                                   seq, rows, cu, error);
  return launched();
}

Status segment_index(const void *pos, bool pos64, int64_t batch, int64_t seq,
                     int32_t *cu, int64_t *error, cudaStream_t stream) {
  if (batch < 0 || seq <= 0 || !pos || !cu || batch >= INT32_MAX / seq)
    return invalid();
  if (pos64)
    segmentIndexKernel<<<1, kIndexThreads, 0, stream>>>(
        static_cast<const int64_t *>(pos), batch, seq, cu, error);
  else
    segmentIndexKernel<<<1, kIndexThreads, 0, stream>>>(
        static_cast<const int32_t *>(pos), batch, seq, cu, error);
  return launched();
}

Status pack_rows(const void *in, const int32_t *rows, int64_t n,
                 int64_t rowBytes, uint64_t fillBits, int64_t elemBytes,
                 bool check, bool floatZero, void *out, int64_t *error,
                 cudaStream_t stream) {
  if (n < 0 || rowBytes < 0 || !elemBytesOk(elemBytes) ||
      rowBytes % elemBytes != 0)
    return invalid();
  if (n == 0 || rowBytes == 0)
    return 0; // nothing to write; a row of no bytes equals the fill row
  const uint64_t fill8 = repeat8(fillBits, elemBytes);
  // floatZero: every bit but each element's sign must be 0.
  const uint64_t sign = uint64_t(1) << (8 * elemBytes - 1);
  const uint64_t expect8 = floatZero ? 0 : fill8;
  const uint64_t mask8 = floatZero ? repeat8(~sign, elemBytes) : ~uint64_t(0);
  return dispatchWord(wordBytes(rowBytes, in, out), [&](auto word) {
    using V = decltype(word);
    const int64_t words = rowBytes / int64_t(sizeof(V));
    const int l = groupLog2(words);
    packRowsKernel<V><<<rowBlocks(n, l), kRowThreads, 0, stream>>>(
        static_cast<const V *>(in), rows, n, words, l, fill8, check, expect8,
        mask8, static_cast<V *>(out), error);
    return launched();
  });
}

Status unpack_rows(const void *in, const int32_t *rows, int64_t n,
                   int64_t rowBytes, int64_t seq, int64_t readBegin,
                   int64_t readEnd, void *out, int64_t *error,
                   cudaStream_t stream) {
  const bool checkRead = readEnd > readBegin;
  if (n < 0 || rowBytes < 0 || (checkRead && seq <= 0))
    return invalid();
  if (n == 0)
    return 0;
  // The CPU kernel checks the positions b * seq + t of b < n / seq.
  const int64_t checkRows = checkRead ? n / seq * seq : 0;
  return dispatchWord(wordBytes(rowBytes, in, out), [&](auto word) {
    using V = decltype(word);
    const int64_t words = rowBytes / int64_t(sizeof(V));
    const int l = groupLog2(words);
    unpackRowsKernel<V><<<rowBlocks(n, l), kRowThreads, 0, stream>>>(
        static_cast<const V *>(in), rows, n, words, l, checkRead ? seq : 1,
        readBegin, readEnd, checkRows, static_cast<V *>(out), error);
    return launched();
  });
}

namespace {

template <bool SCATTER>
Status varlen(const void *in, const int32_t *cu, int64_t batch, int64_t heads,
              int64_t seq, int64_t dim, int64_t elemBytes, void *out,
              cudaStream_t stream) {
  if (batch < 0 || heads < 0 || seq < 0 || dim < 0 ||
      (elemBytes != 2 && elemBytes != 4))
    return invalid();
  const int64_t rowsOut = batch * heads * seq;
  if (rowsOut == 0 || dim == 0)
    return 0;
  const int64_t rowBytes = dim * elemBytes;
  return dispatchWord(wordBytes(rowBytes, in, out), [&](auto word) {
    using V = decltype(word);
    const int64_t words = rowBytes / int64_t(sizeof(V));
    const int l = groupLog2(words);
    varlenKernel<V, SCATTER><<<rowBlocks(rowsOut, l), kRowThreads, 0, stream>>>(
        static_cast<const V *>(in), cu, batch, heads, seq, words, l,
        static_cast<V *>(out));
    return launched();
  });
}

} // namespace

Status varlen_gather(const void *packed, const int32_t *cu, int64_t batch,
                     int64_t heads, int64_t seq, int64_t dim, int64_t elemBytes,
                     void *aligned, cudaStream_t stream) {
  return varlen<false>(packed, cu, batch, heads, seq, dim, elemBytes, aligned,
                       stream);
}

Status varlen_scatter(const void *aligned, const int32_t *cu, int64_t batch,
                      int64_t heads, int64_t seq, int64_t dim,
                      int64_t elemBytes, void *packed, cudaStream_t stream) {
  return varlen<true>(aligned, cu, batch, heads, seq, dim, elemBytes, packed,
                      stream);
}

} // namespace tcc::cuda
