// Layer norm forward and backward over contiguous rows, with the CPU
// kernel's arithmetic (runtime/kernels/cpu/layer_norm.cpp): two-pass
// statistics in double, the forward's normalisation in float from float
// mean and rstd (explicitly rounded, no contraction), the backward's dx in
// double, plus the residual gradient when there is one. dscale / dbias and
// dx's sum are column sums over all rows, done without atomics in two
// kernels: per (column tile, chunk of rows) partial sums into the
// workspace, then a per-column sum of the chunks in order. The chunking
// depends on `rows` only, so the result is the same on every run.
// Templated on the storage type T of x, scale, bias, y, dy, the residual
// and dx (float, bf16, f16): loads widen to float, every output is rounded
// once when stored; mean, rstd, dscale, dbias and dx's sum stay float. dx's
// sum adds dx's float values before their rounding to T, as the CPU kernel
// on widened values does: for T = float the stored dx, for 16-bit T
// recomputed in the column kernel from the row statistics and the row
// kernel's two means.
#include "kernels/cuda/common.cuh"

#include <algorithm>
#include <type_traits>

namespace tcc::cuda {
namespace {
using namespace detail;

/// Mean and rstd of a row (two passes: sum, then centred squares).
template <int TPR, int VEC, class T>
__device__ __forceinline__ void rowStats(const T *xr, int64_t len,
                                         double eps, int t, bool valid,
                                         RowScratch<TPR> &scratch,
                                         double &mean, double &rstd) {
  double sum = 0;
  if (valid)
    for (int64_t c = int64_t(t) * VEC; c < len; c += TPR * VEC) {
      float v[VEC];
      loadVec<VEC>(xr + c, v);
#pragma unroll
      for (int u = 0; u < VEC; ++u)
        sum += v[u];
    }
  mean = groupSum<TPR>(sum, scratch) / double(len);
  double sq = 0;
  if (valid)
    for (int64_t c = int64_t(t) * VEC; c < len; c += TPR * VEC) {
      float v[VEC];
      loadVec<VEC>(xr + c, v);
#pragma unroll
      for (int u = 0; u < VEC; ++u) {
        double dlt = v[u] - mean;
        sq += dlt * dlt;
      }
    }
  sq = groupSum<TPR>(sq, scratch);
  rstd = 1.0 / sqrt(sq / double(len) + eps);
}

template <class T, int TPR, int VEC>
__global__ void __launch_bounds__(rowBlockThreads<TPR>())
    layerNormFwdKernel(const T *x, const T *scale, const T *bias, T *y,
                       float *mean, float *rstd, int64_t rows, int64_t len,
                       double eps) {
  __shared__ RowScratch<TPR> scratch;
  RowPos<TPR> pos;
  const bool valid = pos.row < rows;
  const T *xr = x + (valid ? pos.row : 0) * len;
  double m, s;
  rowStats<TPR, VEC>(xr, len, eps, pos.t, valid, scratch, m, s);
  if (!valid)
    return;
  const float mu = static_cast<float>(m), rs = static_cast<float>(s);
  if (pos.t == 0) {
    if (mean)
      mean[pos.row] = mu;
    if (rstd)
      rstd[pos.row] = rs;
  }
  T *yr = y + pos.row * len;
  for (int64_t c = int64_t(pos.t) * VEC; c < len; c += TPR * VEC) {
    float v[VEC], sc[VEC], bi[VEC];
    loadVec<VEC>(xr + c, v);
    if (scale)
      loadVec<VEC>(scale + c, sc);
    if (bias)
      loadVec<VEC>(bias + c, bi);
#pragma unroll
    for (int u = 0; u < VEC; ++u) {
      float r = __fmul_rn(__fsub_rn(v[u], mu), rs);
      if (scale)
        r = __fmul_rn(r, sc[u]);
      if (bias)
        r = __fadd_rn(r, bi[u]);
      v[u] = r;
    }
    storeVec<VEC>(yr + c, v);
  }
}

/// dx per row; also stores the row's statistics (double) for the column
/// kernel.
template <class T, int TPR, int VEC>
__global__ void __launch_bounds__(rowBlockThreads<TPR>())
    layerNormBwdRowKernel(const T *x, const T *scale, const T *dy,
                          const T *residual, const float *mean,
                          const float *rstd, T *dx,
                          double *statMean, double *statRstd, double *statA,
                          double *statB, int64_t rows,
                          int64_t len, double eps) {
  __shared__ RowScratch<TPR> scratch;
  RowPos<TPR> pos;
  const bool valid = pos.row < rows;
  const int64_t base = (valid ? pos.row : 0) * len;
  const T *xr = x + base, *gr = dy + base;
  double mu, rs;
  if (mean && rstd) {
    mu = valid ? mean[pos.row] : 0.0;
    rs = valid ? rstd[pos.row] : 0.0;
  } else {
    rowStats<TPR, VEC>(xr, len, eps, pos.t, valid, scratch, mu, rs);
  }
  double sumDxhat = 0, sumDxhatXhat = 0;
  if (valid)
    for (int64_t c = int64_t(pos.t) * VEC; c < len; c += TPR * VEC) {
      float v[VEC], g[VEC], sc[VEC];
      loadVec<VEC>(xr + c, v);
      loadVec<VEC>(gr + c, g);
      if (scale)
        loadVec<VEC>(scale + c, sc);
#pragma unroll
      for (int u = 0; u < VEC; ++u) {
        double xhat = (v[u] - mu) * rs;
        double dxhat = static_cast<double>(g[u]) * (scale ? sc[u] : 1.0);
        sumDxhat += dxhat;
        sumDxhatXhat += dxhat * xhat;
      }
    }
  const double a = groupSum<TPR>(sumDxhat, scratch) / double(len);
  const double b = groupSum<TPR>(sumDxhatXhat, scratch) / double(len);
  if (!valid)
    return;
  if (pos.t == 0) {
    statMean[pos.row] = mu;
    statRstd[pos.row] = rs;
    statA[pos.row] = a;
    statB[pos.row] = b;
  }
  T *dxr = dx + base;
  const T *resr = residual ? residual + base : nullptr;
  for (int64_t c = int64_t(pos.t) * VEC; c < len; c += TPR * VEC) {
    float v[VEC], g[VEC], sc[VEC], res[VEC], r[VEC];
    loadVec<VEC>(xr + c, v);
    loadVec<VEC>(gr + c, g);
    if (scale)
      loadVec<VEC>(scale + c, sc);
    if (resr)
      loadVec<VEC>(resr + c, res);
#pragma unroll
    for (int u = 0; u < VEC; ++u) {
      double xhat = (v[u] - mu) * rs;
      double dxhat = static_cast<double>(g[u]) * (scale ? sc[u] : 1.0);
      double d = rs * (dxhat - a - xhat * b);
      r[u] = static_cast<float>(resr ? d + res[u] : d);
    }
    storeVec<VEC>(dxr + c, r);
  }
}

constexpr int kColTile = 32;  // columns per block (one per lane)
constexpr int kColLanes = 8;  // rows walked in parallel per column
constexpr int kMaxChunks = 1024;
constexpr int kMinRowsPerChunk = 64;

struct Chunking {
  int64_t chunks, rowsPerChunk;
};

Chunking chunking(int64_t rows) {
  int64_t chunks =
      std::min<int64_t>(kMaxChunks, std::max<int64_t>(1, ceilDiv(rows, kMinRowsPerChunk)));
  return {chunks, std::max<int64_t>(1, ceilDiv(rows, chunks))};
}

/// Partial dscale / dbias / dx sums of one column tile over one chunk of
/// rows: partScale[chunk * len + col], partBias and partSum likewise.
template <class T>
__global__ void __launch_bounds__(kColTile *kColLanes)
    layerNormColumnPartialKernel(const T *x, const T *scale, const T *dy,
                                 const T *residual, const T *dx,
                                 const double *statMean,
                                 const double *statRstd, const double *statA,
                                 const double *statB, double *partScale,
                                 double *partBias, double *partSum,
                                 int64_t rows, int64_t len,
                                 int64_t rowsPerChunk, bool wantScale,
                                 bool wantBias, bool wantSum) {
  __shared__ double sScale[kColLanes][kColTile], sBias[kColLanes][kColTile],
      sSum[kColLanes][kColTile];
  const int tx = threadIdx.x % kColTile, ty = threadIdx.x / kColTile;
  const int64_t col = int64_t(blockIdx.x) * kColTile + tx;
  const int64_t chunk = blockIdx.y;
  const int64_t r0 = chunk * rowsPerChunk;
  const int64_t r1 = r0 + rowsPerChunk < rows ? r0 + rowsPerChunk : rows;
  double ds = 0, db = 0, dsum = 0;
  if (col < len)
    for (int64_t r = r0 + ty; r < r1; r += kColLanes) {
      float g = toFloat(dy[r * len + col]);
      if (wantScale)
        ds += g * ((toFloat(x[r * len + col]) - statMean[r]) * statRstd[r]);
      db += g;
      if (wantSum) {
        if constexpr (std::is_same_v<T, float>) {
          dsum += dx[r * len + col];
        } else {
          // The row kernel's float dx before its rounding to T.
          double xhat = (toFloat(x[r * len + col]) - statMean[r]) * statRstd[r];
          double dxhat =
              static_cast<double>(g) * (scale ? toFloat(scale[col]) : 1.0);
          double d = statRstd[r] * (dxhat - statA[r] - xhat * statB[r]);
          dsum += static_cast<float>(
              residual ? d + toFloat(residual[r * len + col]) : d);
        }
      }
    }
  sScale[ty][tx] = ds;
  sBias[ty][tx] = db;
  sSum[ty][tx] = dsum;
  __syncthreads();
  if (ty == 0 && col < len) {
    for (int i = 1; i < kColLanes; ++i) {
      ds += sScale[i][tx];
      db += sBias[i][tx];
      dsum += sSum[i][tx];
    }
    if (wantScale)
      partScale[chunk * len + col] = ds;
    if (wantBias)
      partBias[chunk * len + col] = db;
    if (wantSum)
      partSum[chunk * len + col] = dsum;
  }
}

/// dscale / dbias and dx's sum are float for every storage type: the
/// parameters' fp32 gradients (sums over all rows; no 16-bit rounding
/// before the optimizer).
__global__ void layerNormColumnFinalKernel(const double *partScale,
                                           const double *partBias,
                                           const double *partSum,
                                           float *dscale, float *dbias,
                                           float *dxsum, int64_t len,
                                           int64_t chunks) {
  int64_t col = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (col >= len)
    return;
  if (dxsum) {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c)
      s += partSum[c * len + col];
    dxsum[col] = static_cast<float>(s);
  }
  if (dscale) {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c)
      s += partScale[c * len + col];
    dscale[col] = static_cast<float>(s);
  }
  if (dbias) {
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c)
      s += partBias[c * len + col];
    dbias[col] = static_cast<float>(s);
  }
}

struct BwdWorkspace {
  double *statMean, *statRstd, *statA, *statB, *partScale, *partBias, *partSum;
  size_t bytes;
};

BwdWorkspace bwdWorkspace(void *base, int64_t rows, int64_t len) {
  Chunking ch = chunking(rows);
  size_t stats = roundUp256(sizeof(double) * size_t(rows));
  size_t part = roundUp256(sizeof(double) * size_t(ch.chunks) * size_t(len));
  char *p = static_cast<char *>(base);
  BwdWorkspace w;
  w.statMean = reinterpret_cast<double *>(p);
  w.statRstd = reinterpret_cast<double *>(p + stats);
  w.statA = reinterpret_cast<double *>(p + 2 * stats);
  w.statB = reinterpret_cast<double *>(p + 3 * stats);
  w.partScale = reinterpret_cast<double *>(p + 4 * stats);
  w.partBias = reinterpret_cast<double *>(p + 4 * stats + part);
  w.partSum = reinterpret_cast<double *>(p + 4 * stats + 2 * part);
  w.bytes = 4 * stats + 3 * part;
  return w;
}


template <class T>
Status layerNormFwd(const T *x, const T *scale, const T *bias, T *y,
                    float *mean, float *rstd, int64_t rows, int64_t len,
                    double eps, cudaStream_t stream) {
  if (rows < 0 || len < 0)
    return invalid();
  if (rows == 0)
    return 0;
  if (len == 0) // statistics of an empty row are NaN, as in the CPU kernel
    return invalid();
  constexpr int VW = kVecWidth<T>;
  bool vec = len % VW == 0 && aligned16(x) && aligned16(y) &&
             (!scale || aligned16(scale)) && (!bias || aligned16(bias));
  return dispatchRows<VW>(len, vec, [&](auto tpr, auto vw) {
    constexpr int TPR = decltype(tpr)::value, VEC = decltype(vw)::value;
    layerNormFwdKernel<T, TPR, VEC>
        <<<rowGrid<TPR>(rows), rowBlockThreads<TPR>(), 0, stream>>>(
            x, scale, bias, y, mean, rstd, rows, len, eps);
    return launched();
  });
}

template <class T>
Status layerNormBwd(const T *x, const T *scale, const T *dy, const T *residual,
                    const float *mean, const float *rstd, T *dx, float *dscale,
                    float *dbias, float *dxsum, int64_t rows, int64_t len,
                    double eps, void *workspace, cudaStream_t stream) {
  if (rows < 0 || len < 0 || (len > 0 && rows > 0 && !workspace))
    return invalid();
  if (len == 0)
    return 0;
  if (rows == 0) {
    // Column sums over no rows (+0 has all bits zero in every type).
    cudaError_t e = cudaSuccess;
    if (dscale)
      e = cudaMemsetAsync(dscale, 0, sizeof(float) * len, stream);
    if (dbias && e == cudaSuccess)
      e = cudaMemsetAsync(dbias, 0, sizeof(float) * len, stream);
    if (dxsum && e == cudaSuccess)
      e = cudaMemsetAsync(dxsum, 0, sizeof(float) * len, stream);
    return static_cast<Status>(e);
  }
  BwdWorkspace w = bwdWorkspace(workspace, rows, len);
  bool haveStats = mean && rstd;
  constexpr int VW = kVecWidth<T>;
  bool vec = len % VW == 0 && aligned16(x) && aligned16(dy) && aligned16(dx) &&
             (!scale || aligned16(scale)) && (!residual || aligned16(residual));
  Status st = dispatchRows<VW>(len, vec, [&](auto tpr, auto vw) {
    constexpr int TPR = decltype(tpr)::value, VEC = decltype(vw)::value;
    layerNormBwdRowKernel<T, TPR, VEC>
        <<<rowGrid<TPR>(rows), rowBlockThreads<TPR>(), 0, stream>>>(
            x, scale, dy, residual, haveStats ? mean : nullptr,
            haveStats ? rstd : nullptr, dx, w.statMean, w.statRstd, w.statA,
            w.statB, rows, len, eps);
    return launched();
  });
  if (st || (!dscale && !dbias && !dxsum))
    return st;
  Chunking ch = chunking(rows);
  dim3 grid(static_cast<unsigned>(ceilDiv(len, kColTile)),
            static_cast<unsigned>(ch.chunks));
  layerNormColumnPartialKernel<T><<<grid, kColTile * kColLanes, 0, stream>>>(
      x, scale, dy, residual, dx, w.statMean, w.statRstd, w.statA, w.statB,
      w.partScale, w.partBias, w.partSum, rows, len, ch.rowsPerChunk,
      dscale != nullptr, dbias != nullptr, dxsum != nullptr);
  if ((st = launched()))
    return st;
  layerNormColumnFinalKernel<<<static_cast<unsigned>(ceilDiv(len, 256)),
                                  256, 0, stream>>>(
      w.partScale, w.partBias, w.partSum, dscale, dbias, dxsum, len,
      ch.chunks);
  return launched();
}

} // namespace

Status layer_norm_fwd(const float *x, const float *scale, const float *bias,
                      float *y, float *mean, float *rstd, int64_t rows,
                      int64_t len, double eps, cudaStream_t stream) {
  return layerNormFwd<float>(x, scale, bias, y, mean, rstd, rows, len, eps,
                             stream);
}

Status layer_norm_fwd(FloatType type, const void *x, const void *scale,
                      const void *bias, void *y, float *mean, float *rstd,
                      int64_t rows, int64_t len, double eps,
                      cudaStream_t stream) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return layerNormFwd<T>(static_cast<const T *>(x),
                           static_cast<const T *>(scale),
                           static_cast<const T *>(bias), static_cast<T *>(y),
                           mean, rstd, rows, len, eps, stream);
  });
}

size_t layer_norm_bwd_workspace_bytes(int64_t rows, int64_t len) {
  if (rows <= 0 || len <= 0)
    return 0;
  return bwdWorkspace(nullptr, rows, len).bytes;
}

Status layer_norm_bwd(const float *x, const float *scale, const float *dy,
                      const float *residual, const float *mean,
                      const float *rstd, float *dx, float *dscale,
                      float *dbias, float *dxsum, int64_t rows, int64_t len,
                      double eps, void *workspace, cudaStream_t stream) {
  return layerNormBwd<float>(x, scale, dy, residual, mean, rstd, dx, dscale,
                             dbias, dxsum, rows, len, eps, workspace, stream);
}

Status layer_norm_bwd(FloatType type, const void *x, const void *scale,
                      const void *dy, const void *residual, const float *mean,
                      const float *rstd, void *dx, float *dscale, float *dbias,
                      float *dxsum, int64_t rows, int64_t len, double eps,
                      void *workspace, cudaStream_t stream) {
  return dispatchType(type, [&](auto tag) {
    using T = decltype(tag);
    return layerNormBwd<T>(
        static_cast<const T *>(x), static_cast<const T *>(scale),
        static_cast<const T *>(dy), static_cast<const T *>(residual), mean,
        rstd, static_cast<T *>(dx), dscale, dbias, dxsum,
        rows, len, eps, workspace, stream);
  });
}

} // namespace tcc::cuda
