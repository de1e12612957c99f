//===- column_sums.cu - column sums of a row-major matrix --------*- CUDA
//-*-===//
//
// sums[c] = sum over r < rows of x[r][c]: tcc.gemm's bias_grad (a Linear's
// bias gradient, the sums of dY's columns) where cuBLASLt has no BGRADB
// epilogue for the GEMM's type. Two stages, both in a fixed order: blocks
// of 32 columns x 8 row lanes sum a chunk of rows each (the lanes in
// stride, then the 8 partials in lane order) into the workspace, then one
// thread per column adds the chunks in order. Many chunks fill the device
// when there are few columns (a GPT-2 bias gradient: 768 columns over
// 8192 rows).
//
//===----------------------------------------------------------------------===//

#include "kernels/cuda/common.cuh"

namespace tcc::cuda {
namespace {

using namespace detail;

constexpr int kCols = 32, kLanes = 8;
/// Rows a chunk sums at least (fewer chunks below that).
constexpr int64_t kMinChunkRows = 64;

int64_t chunksFor(int64_t rows, int64_t cols) {
  // About four blocks per SM of a large GPU, never chunks of few rows.
  int64_t colBlocks = ceilDiv(cols, kCols);
  int64_t want = ceilDiv(int64_t(528), colBlocks);
  return std::max<int64_t>(1, std::min(want, ceilDiv(rows, kMinChunkRows)));
}

template <class T>
__global__ void partialSums(const T *x, int64_t rows, int64_t cols,
                            int64_t chunkRows, float *partial) {
  __shared__ float s[kLanes][kCols];
  const int64_t c = int64_t(blockIdx.x) * kCols + threadIdx.x;
  const int64_t r0 = int64_t(blockIdx.y) * chunkRows;
  const int64_t r1 = r0 + chunkRows < rows ? r0 + chunkRows : rows;
  float acc = 0.0f;
  if (c < cols)
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kLanes)
      acc += toFloat(x[r * cols + c]);
  s[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    float sum = s[0][threadIdx.x];
    for (int l = 1; l < kLanes; ++l)
      sum += s[l][threadIdx.x];
    partial[int64_t(blockIdx.y) * cols + c] = sum;
  }
}

template <class T>
__global__ void finishSums(const float *partial, int64_t chunks, int64_t cols,
                           T *sums) {
  const int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (c >= cols)
    return;
  float sum = 0.0f;
  for (int64_t i = 0; i < chunks; ++i)
    sum += partial[i * cols + c];
  sums[c] = fromFloat<T>(sum);
}

} // namespace

size_t column_sums_workspace_bytes(int64_t rows, int64_t cols) {
  return roundUp256(size_t(chunksFor(rows, cols) * cols) * sizeof(float));
}

Status column_sums(FloatType type, const void *x, int64_t rows, int64_t cols,
                   void *sums, void *workspace, cudaStream_t stream) {
  if (cols <= 0)
    return 0;
  if (rows <= 0)
    return static_cast<Status>(
        cudaMemsetAsync(sums, 0, size_t(cols) * float_type_size(type), stream));
  const int64_t chunks = chunksFor(rows, cols);
  const int64_t chunkRows = ceilDiv(rows, chunks);
  float *partial = static_cast<float *>(workspace);
  return dispatchType(type, [&](auto tag) -> Status {
    using T = decltype(tag);
    dim3 grid(unsigned(ceilDiv(cols, kCols)), unsigned(chunks));
    partialSums<T><<<grid, dim3(kCols, kLanes), 0, stream>>>(
        static_cast<const T *>(x), rows, cols, chunkRows, partial);
    if (Status st = launched())
      return st;
    finishSums<T><<<unsigned(ceilDiv(cols, 256)), 256, 0, stream>>>(
        partial, chunks, cols, static_cast<T *>(sums));
    return launched();
  });
}

} // namespace tcc::cuda
