// Embedding lookup and its gradient (runtime/kernels/cpu/embedding.cpp).
//
// The gradient is a scatter-add of rows, made deterministic without
// floating-point atomics: the (id, j) pairs are sorted by id with CUB's
// stable radix sort (so equal ids keep j in increasing order), and one block
// per distinct id (per 512-column slice) adds that id's rows of dy in order
// of j, in float, starting from 0 - the CPU kernel's exact sequence of
// additions, hence bit-identical results. For 16-bit storage the gather
// copies bits, and the scatter-add widens dy, adds in float and rounds each
// sum once - what the CPU backend's emulation computes, bit for bit.
#include "kernels/cuda/common.cuh"

#include <cub/device/device_radix_sort.cuh>

namespace tcc::cuda {
namespace {
using namespace detail;

constexpr int kGatherThreads = 256;

/// One warp per output row, copying it in units of U (uint4: 16 bytes,
/// unsigned: 4, unsigned short: 2); `units` per row.
template <class U, class I>
__global__ void __launch_bounds__(kGatherThreads)
    gatherRowsKernel(const U *table, const I *ids, int64_t n, int64_t vocab,
                     int64_t units, U *out, int64_t *error) {
  const int64_t j = int64_t(blockIdx.x) * (kGatherThreads / 32) + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (j >= n)
    return;
  const int64_t id = static_cast<int64_t>(ids[j]);
  // Unlike gather, an embedding id never counts from the end (PyTorch).
  const bool ok = id >= 0 && id < vocab;
  if (!ok && lane == 0)
    recordError(error, j);
  const U *src = table + (ok ? id : 0) * units;
  U *dst = out + j * units;
  for (int64_t c = lane; c < units; c += 32) {
    U v;
    if (ok)
      v = src[c];
    else
      memset(&v, 0, sizeof v); // +0.0 in every float type
    dst[c] = v;
  }
}

/// Sort keys: the id made non-negative, or `vocab` for a bad id (sorted
/// last and skipped).
template <class I>
__global__ void scatterKeysKernel(const I *ids, int64_t n, int64_t vocab,
                                  uint32_t *keys, uint32_t *positions,
                                  int64_t *error) {
  int64_t j = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n)
    return;
  int64_t id = static_cast<int64_t>(ids[j]);
  bool ok = id >= -vocab && id < vocab;
  if (!ok)
    recordError(error, j);
  keys[j] = static_cast<uint32_t>(!ok ? vocab : id < 0 ? id + vocab : id);
  positions[j] = static_cast<uint32_t>(j);
}

constexpr int kScatterThreads = 128;

/// Block (p, slice): when sorted position p starts a run of equal ids, sums
/// dy rows of the run in order into dtable[id] (columns of the slice).
template <class T, int VEC>
__global__ void __launch_bounds__(kScatterThreads)
    scatterSumKernel(const uint32_t *keys, const uint32_t *positions,
                     const T *dy, int64_t n, int64_t vocab, int64_t dim,
                     T *dtable) {
  const int64_t p = blockIdx.x;
  const uint32_t key = keys[p];
  if (key >= vocab || (p > 0 && keys[p - 1] == key))
    return;
  const int64_t c = (int64_t(blockIdx.y) * kScatterThreads + threadIdx.x) * VEC;
  if (c >= dim)
    return;
  float acc[VEC];
#pragma unroll
  for (int u = 0; u < VEC; ++u)
    acc[u] = 0.f;
  for (int64_t e = p; e < n && keys[e] == key; ++e) {
    float v[VEC];
    loadVec<VEC>(dy + int64_t(positions[e]) * dim + c, v);
#pragma unroll
    for (int u = 0; u < VEC; ++u)
      acc[u] = __fadd_rn(acc[u], v[u]);
  }
  storeVec<VEC>(dtable + int64_t(key) * dim + c, acc);
}

/// Bits the sort looks at: enough for 0 .. vocab (the bad-id key).
int keyBits(int64_t vocab) {
  int bits = 1;
  while (bits < 32 && (int64_t(1) << bits) <= vocab)
    ++bits;
  return bits;
}

struct ScatterWorkspace {
  uint32_t *keysIn, *keysOut, *posIn, *posOut;
  void *temp;
  size_t tempBytes, bytes;
};

/// The sections of the workspace; tempBytes comes from CUB (0 on failure).
ScatterWorkspace scatterWorkspace(void *base, int64_t n, int64_t vocab) {
  ScatterWorkspace w{};
  size_t arr = roundUp256(sizeof(uint32_t) * size_t(n));
  char *p = static_cast<char *>(base);
  w.keysIn = reinterpret_cast<uint32_t *>(p);
  w.keysOut = reinterpret_cast<uint32_t *>(p + arr);
  w.posIn = reinterpret_cast<uint32_t *>(p + 2 * arr);
  w.posOut = reinterpret_cast<uint32_t *>(p + 3 * arr);
  w.temp = p + 4 * arr;
  size_t temp = 0;
  if (cub::DeviceRadixSort::SortPairs(nullptr, temp, w.keysIn, w.keysOut,
                                      w.posIn, w.posOut, static_cast<int>(n),
                                      0, keyBits(vocab)) != cudaSuccess)
    temp = 0;
  w.tempBytes = temp;
  w.bytes = 4 * arr + roundUp256(temp);
  return w;
}

bool scatterShapesOk(int64_t n, int64_t vocab, int64_t dim) {
  return n >= 0 && vocab >= 0 && dim >= 0 && n < INT32_MAX &&
         vocab < INT32_MAX && dim / (kScatterThreads * 4) < 65535;
}

template <class I>
Status gatherRows(FloatType type, const void *table, const I *ids, int64_t n,
                  int64_t vocab, int64_t dim, void *out, int64_t *error,
                  cudaStream_t stream) {
  if (n < 0 || vocab < 0 || dim < 0)
    return invalid();
  if (n == 0 || dim == 0)
    return 0;
  const int64_t rowBytes = dim * int64_t(float_type_size(type));
  unsigned blocks = static_cast<unsigned>(ceilDiv(n, kGatherThreads / 32));
  if (rowBytes % 16 == 0 && aligned16(table) && aligned16(out))
    gatherRowsKernel<uint4, I><<<blocks, kGatherThreads, 0, stream>>>(
        static_cast<const uint4 *>(table), ids, n, vocab, rowBytes / 16,
        static_cast<uint4 *>(out), error);
  else if (type == FloatType::F32)
    gatherRowsKernel<unsigned, I><<<blocks, kGatherThreads, 0, stream>>>(
        static_cast<const unsigned *>(table), ids, n, vocab, dim,
        static_cast<unsigned *>(out), error);
  else
    gatherRowsKernel<unsigned short, I><<<blocks, kGatherThreads, 0, stream>>>(
        static_cast<const unsigned short *>(table), ids, n, vocab, dim,
        static_cast<unsigned short *>(out), error);
  return launched();
}

template <class T, class I>
Status scatterAddRows(const I *ids, const T *dy, int64_t n, int64_t vocab,
                      int64_t dim, T *dtable, void *workspace, int64_t *error,
                      cudaStream_t stream) {
  if (!scatterShapesOk(n, vocab, dim) || (n > 0 && !workspace))
    return invalid();
  if (vocab == 0 || dim == 0)
    return 0;
  cudaError_t e = cudaMemsetAsync(dtable, 0, sizeof(T) * vocab * dim, stream);
  if (e != cudaSuccess || n == 0)
    return static_cast<Status>(e);
  ScatterWorkspace w = scatterWorkspace(workspace, n, vocab);
  if (w.tempBytes == 0) { // CUB could not size its scratch (no device?)
    Status st = launched();
    return st ? st : static_cast<Status>(cudaErrorUnknown);
  }
  scatterKeysKernel<I><<<static_cast<unsigned>(ceilDiv(n, 256)), 256, 0,
                         stream>>>(ids, n, vocab, w.keysIn, w.posIn, error);
  if (Status st = launched())
    return st;
  size_t temp = w.tempBytes;
  e = cub::DeviceRadixSort::SortPairs(w.temp, temp, w.keysIn, w.keysOut,
                                      w.posIn, w.posOut, static_cast<int>(n),
                                      0, keyBits(vocab), stream);
  if (e != cudaSuccess)
    return static_cast<Status>(e);
  // 4 elements per thread: 16-byte float / 8-byte 16-bit accesses.
  bool vec4 = dim % 4 == 0 && aligned16(dy) && aligned16(dtable);
  const int vec = vec4 ? 4 : 1;
  dim3 grid(static_cast<unsigned>(n),
            static_cast<unsigned>(ceilDiv(dim, kScatterThreads * vec)));
  if (vec4)
    scatterSumKernel<T, 4><<<grid, kScatterThreads, 0, stream>>>(
        w.keysOut, w.posOut, dy, n, vocab, dim, dtable);
  else
    scatterSumKernel<T, 1><<<grid, kScatterThreads, 0, stream>>>(
        w.keysOut, w.posOut, dy, n, vocab, dim, dtable);
  return launched();
}

template <class I>
Status scatterAddRowsAny(FloatType type, const I *ids, const void *dy,
                         int64_t n, int64_t vocab, int64_t dim, void *dtable,
                         void *workspace, int64_t *error,
                         cudaStream_t stream) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return scatterAddRows<T, I>(ids, static_cast<const T *>(dy), n, vocab, dim,
                                static_cast<T *>(dtable), workspace, error,
                                stream);
  });
}

} // namespace

Status gather_rows(const float *table, const int64_t *ids, int64_t n,
                   int64_t vocab, int64_t dim, float *out, int64_t *error,
                   cudaStream_t stream) {
  return gatherRows(FloatType::F32, table, ids, n, vocab, dim, out, error,
                    stream);
}

Status gather_rows(const float *table, const int32_t *ids, int64_t n,
                   int64_t vocab, int64_t dim, float *out, int64_t *error,
                   cudaStream_t stream) {
  return gatherRows(FloatType::F32, table, ids, n, vocab, dim, out, error,
                    stream);
}

Status gather_rows(FloatType type, const void *table, const int64_t *ids,
                   int64_t n, int64_t vocab, int64_t dim, void *out,
                   int64_t *error, cudaStream_t stream) {
  return gatherRows(type, table, ids, n, vocab, dim, out, error, stream);
}

Status gather_rows(FloatType type, const void *table, const int32_t *ids,
                   int64_t n, int64_t vocab, int64_t dim, void *out,
                   int64_t *error, cudaStream_t stream) {
  return gatherRows(type, table, ids, n, vocab, dim, out, error, stream);
}

size_t scatter_add_rows_workspace_bytes(int64_t n, int64_t vocab) {
  if (n <= 0 || vocab <= 0 || n >= INT32_MAX || vocab >= INT32_MAX)
    return 0;
  return scatterWorkspace(nullptr, n, vocab).bytes;
}

Status scatter_add_rows(const int64_t *ids, const float *dy, int64_t n,
                        int64_t vocab, int64_t dim, float *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream) {
  return scatterAddRows<float>(ids, dy, n, vocab, dim, dtable, workspace,
                               error, stream);
}

Status scatter_add_rows(const int32_t *ids, const float *dy, int64_t n,
                        int64_t vocab, int64_t dim, float *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream) {
  return scatterAddRows<float>(ids, dy, n, vocab, dim, dtable, workspace,
                               error, stream);
}

Status scatter_add_rows(FloatType type, const int64_t *ids, const void *dy,
                        int64_t n, int64_t vocab, int64_t dim, void *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream) {
  return scatterAddRowsAny(type, ids, dy, n, vocab, dim, dtable, workspace,
                           error, stream);
}

Status scatter_add_rows(FloatType type, const int32_t *ids, const void *dy,
                        int64_t n, int64_t vocab, int64_t dim, void *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream) {
  return scatterAddRowsAny(type, ids, dy, n, vocab, dim, dtable, workspace,
                           error, stream);
}

} // namespace tcc::cuda
