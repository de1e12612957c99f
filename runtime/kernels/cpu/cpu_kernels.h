//===- cpu_kernels.h - host kernels of the CPU backend ----------*- C++ -*-===//
//
// The kernels the compiled CPU backend calls, one per fused op family. They
// take raw, contiguous, row-major float32 buffers and sizes, allocate nothing
// the caller sees, and write every element of their outputs.
//
// Each kernel computes exactly what the reference interpreter (lib/Interp)
// computes for the tcc op it implements, down to where sums accumulate in
// double and where values round to float: the interpreter is the oracle the
// backend is tested against, so matching its arithmetic keeps those tests
// tight. The GEMM is the exception: it is OpenBLAS, whose summation order
// differs (relative error ~1e-6), and so is attention, built on it.
// Attention splits its (batch, head) pairs over the worker pool
// (parallel.h), each pair computed by one thread; everything else is
// single-threaded apart from OpenBLAS. Results are deterministic.
//
// No LLVM or MLIR here: the runtime links this library.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CPU_CPU_KERNELS_H
#define TCC_RUNTIME_KERNELS_CPU_CPU_KERNELS_H

#include "kernels/attention_layout.h"
#include "kernels/window.h"

#include <cstdint>
#include <string>

namespace tcc::cpu {

//===----------------------------------------------------------------------===//
// GEMM (tcc.matmul, tcc.gemm)
//===----------------------------------------------------------------------===//

/// For b in [0, batch): C[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b],
/// with op(A[b]) [m, k] and op(B[b]) [k, n]; A[b] = a + b * strideA (and
/// likewise B, C), each matrix dense row-major as stored (A is [k, m] when
/// transA). A stride of 0 broadcasts one matrix over the batch. With
/// beta == 0, C is only written (NaNs in it do not propagate).
/// OpenBLAS (a DYNAMIC_ARCH build) picks its kernels from the CPU's model
/// number when it loads and falls back to its generic "Prescott" kernels
/// (SSE3, no FMA) for a model it does not know, as virtual machines often
/// report, even when the CPU has AVX2 or AVX-512: its sgemm is then up to
/// 9x slower (docs/benchmarks.md). Unless OPENBLAS_CORETYPE is set, that
/// fallback is replaced by the kernels the CPU's features allow (SkylakeX
/// for AVX-512, Haswell for AVX2 + FMA) through OpenBLAS's own
/// re-initialisation (gotoblas_dynamic_quit / _init, looked up at run time;
/// another BLAS is left alone). Once per process, before the first GEMM;
/// returns a note saying what it chose, or "" when it changed nothing.
const std::string &selectBlasKernels();

void gemm(bool transA, bool transB, int64_t batch, int64_t m, int64_t n,
          int64_t k, float alpha, const float *a, int64_t strideA,
          const float *b, int64_t strideB, float beta, float *c,
          int64_t strideC);

/// sums[i] = sum over j < k of op(A)[i][j] for i < m (op(A) as in gemm: A
/// stored [k, m] when transA): tcc.gemm's bias_grad, a Linear's bias
/// gradient when op(A) = dY^T. Each sum adds j in order in double, rounded
/// once (as the interpreter's), whatever the thread count.
void gemm_row_sums(bool transA, int64_t m, int64_t k, const float *a,
                   float *sums);

//===----------------------------------------------------------------------===//
// Softmax family, over the last dim of [rows, len]
//===----------------------------------------------------------------------===//

/// y = softmax(x) per row (tcc.softmax). A row of all -inf, or with a NaN,
/// becomes all NaN, as torch.softmax gives. y may alias x.
void softmax_rows(const float *x, float *y, int64_t rows, int64_t len);

/// dx = y * (dy - sum(dy * y)) per row (tcc.softmax_grad).
void softmax_grad_rows(const float *y, const float *dy, float *dx, int64_t rows,
                       int64_t len);

/// y = x - max - log(sum(exp(x - max))) per row (tcc.log_softmax).
void log_softmax_rows(const float *x, float *y, int64_t rows, int64_t len);

/// dx = dy - exp(y) * sum(dy) per row (tcc.log_softmax_grad).
void log_softmax_grad_rows(const float *y, const float *dy, float *dx,
                           int64_t rows, int64_t len);

//===----------------------------------------------------------------------===//
// Layer norm over the trailing `len` elements of each of `rows` rows
//===----------------------------------------------------------------------===//

/// y = (x - mean) * rstd * scale + bias (tcc.layer_norm) with the biased
/// variance; scale and bias ([len]) may be null. Also stores each row's mean
/// and rstd = 1 / sqrt(var + eps), as float, into mean / rstd ([rows]) unless
/// they are null.
void layer_norm_fwd(const float *x, const float *scale, const float *bias,
                    float *y, float *mean, float *rstd, int64_t rows,
                    int64_t len, double eps);

/// Gradients of layer_norm (tcc.layer_norm_grad): dx [rows, len] and
/// dscale, dbias [len] (either may be null to skip it); a null scale is 1.
/// A non-null `residual` [rows, len] is added to dx (in double, before dx
/// is rounded to float); a non-null dxsum [len] receives dx's column sums
/// (double, row order). With mean and rstd null the row statistics are
/// recomputed from x in double, bit-matching the interpreter; passing the
/// forward's float statistics saves that pass at ~1e-7 relative difference.
void layer_norm_bwd(const float *x, const float *scale, const float *dy,
                    const float *residual, const float *mean, const float *rstd,
                    float *dx, float *dscale, float *dbias, float *dxsum,
                    int64_t rows, int64_t len, double eps);

//===----------------------------------------------------------------------===//
// Attention over [B, H, T, D]: GEMMs and row softmaxes per (batch, head),
// one tq x tk score matrix at a time
//===----------------------------------------------------------------------===//

/// The optional key mask of tcc.attention, [B, Tk]: at most one is set.
struct KeyMask {
  const uint8_t *keep = nullptr; ///< i1 mask, 0 hides the key
  const float *bias = nullptr;   ///< added to every query's scores
  /// Packed tokens (tcc.pack_index's cu_seqlens, [B + 1], Tq == Tk): the
  /// flattened (batch, seq) positions are packed rows; row b's tokens are
  /// rows [cu[b], cu[b+1]) and attend only to each other (causal: to the
  /// earlier ones); rows from cu[B] on are padding, written as zero.
  const int32_t *cuSeqlens = nullptr;
  /// The sequences of cuSeqlens: B (packed tokens, the default when 0) or
  /// up to B*T (packed documents, tcc.segment_index: [B*T + 1]).
  int64_t sequences = 0;
};

/// out = softmax(scale * q @ k^T + mask) @ v (tcc.attention): q [B,H,Tq,D],
/// k [B,H,Tk,D], v [B,H,Tk,Dv], out [B,H,Tq,Dv]. `causal` hides keys j > i
/// (sequences aligned at the start). A query with every key hidden is NaN.
/// `layout` places the tensors otherwise (token rows; default: as above).
void attention_fwd(const float *q, const float *k, const float *v, float *out,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dv, double scale, bool causal,
                   KeyMask mask = {},
                   const kernels::AttentionLayout &layout = {});

/// dq, dk, dv of attention_fwd given dout (tcc.attention_grad); the
/// probabilities are recomputed as the forward computes them.
void attention_bwd(const float *q, const float *k, const float *v,
                   const float *dout, float *dq, float *dk, float *dv,
                   int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                   int64_t d, int64_t dvDim, double scale, bool causal,
                   KeyMask mask = {},
                   const kernels::AttentionLayout &layout = {});

//===----------------------------------------------------------------------===//
// Packed tokens (pad-skipping: tcc.pack_index, tcc.pack, tcc.unpack)
//===----------------------------------------------------------------------===//

/// A key mask [batch, seq] of bools (`keep`) or float biases (`bias`: 0 is a
/// token, -1000 or below padding) -> rows[i] = b*seq + t of the i-th token
/// in row-major order (-1 past the count) and cu[b] = the tokens before row
/// b (cu[batch] = the count). Returns -1, or the first position whose bias
/// is neither.
int64_t pack_index(const uint8_t *keep, const float *bias, int64_t batch,
                   int64_t seq, int32_t *rows, int32_t *cu);

/// tcc.segment_index: cu [batch*seq + 1] from integer position ids `pos`
/// (int64 when `pos64`, else int32): a document starts at every row start
/// and where the position is 0, else a position continues the previous
/// one by 1; cu lists the starts, then batch*seq. Returns -1, or the first
/// flat position that does neither.
int64_t segment_index(const void *pos, bool pos64, int64_t batch,
                      int64_t seq, int32_t *cu);

/// out row i = in row rows[i] (rows of `rowBytes` bytes), or `fill` (one
/// element of `elemBytes` bytes, repeated) where rows[i] < 0. With `check`,
/// returns the first row not in `rows` that does not hold `fill` (else -1);
/// with `floatZero` (a float fill of 0) -0.0 counts as 0.
int64_t pack_rows(const uint8_t *in, const int32_t *rows, int64_t n,
                  int64_t rowBytes, const uint8_t *fill, int64_t elemBytes,
                  bool check, bool floatZero, uint8_t *out);

/// out = 0, then out row rows[i] = in row i for every rows[i] >= 0. With
/// readEnd > readBegin, returns the first row b*seq + t, t in [readBegin,
/// readEnd), that no packed row fills (a position read later that is
/// padding), else -1.
int64_t unpack_rows(const uint8_t *in, const int32_t *rows, int64_t n,
                    int64_t rowBytes, int64_t seq, int64_t readBegin,
                    int64_t readEnd, uint8_t *out);

//===----------------------------------------------------------------------===//
// Cross-entropy over logits [rows, classes] and labels [rows]
//===----------------------------------------------------------------------===//

/// *lossSum = sum over rows whose label != ignoreIndex of
/// logsumexp(row) - row[label]; *count = the number of such rows
/// (tcc.cross_entropy). Returns -1, or the first row whose label is neither
/// ignoreIndex nor in [0, classes) (outputs are then unspecified).
int64_t cross_entropy_fwd(const float *logits, const int64_t *labels,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          float *lossSum, float *count);

/// dlogits = (softmax(row) - onehot(label)) * lossSumGrad, zero on ignored
/// rows (tcc.cross_entropy_grad). Returns as cross_entropy_fwd does.
int64_t cross_entropy_grad(const float *logits, const int64_t *labels,
                           float lossSumGrad, float *dlogits, int64_t rows,
                           int64_t classes, int64_t ignoreIndex);

//===----------------------------------------------------------------------===//
// Embedding
//===----------------------------------------------------------------------===//

/// out[j] = table[ids[j]] for j in [0, n), rows of `dim` (tcc.embedding).
/// Returns -1, or the first j whose id is outside [0, vocab).
int64_t gather_rows(const float *table, const int64_t *ids, int64_t n,
                    int64_t vocab, int64_t dim, float *out);

/// dtable = 0, then dtable[ids[j]] += dy[j] in order of j (tcc.gather_grad
/// on axis 0, the embedding gradient); a negative id counts from the end as
/// gather_grad's does. Returns -1, or the first j whose id is outside
/// [-vocab, vocab).
int64_t scatter_add_rows(const int64_t *ids, const float *dy, int64_t n,
                         int64_t vocab, int64_t dim, float *dtable);

//===----------------------------------------------------------------------===//
// Optimizer updates, bit-exact with torch 1.13 on the CPU
//===----------------------------------------------------------------------===//

/// The bf16 / f16 working copy an optimizer update also writes (the
/// optional new_working result): element i is the f32 value just written to
/// newParam[i], rounded to nearest even (runtime/data/half.h's
/// floatToBf16 / floatToF16), in the same loop. `data` null: none.
struct WorkingCopy {
  uint16_t *data = nullptr;
  bool bf16 = true; ///< bfloat16, else IEEE binary16
};

/// One torch.optim.SGD step on n elements (tcc.sgd_update). `buf` (the
/// momentum buffer, zero before the first step) and `newBuf` are used iff
/// momentum != 0. Outputs may alias the matching inputs (in-place update).
void sgd_update(const float *param, const float *grad, const float *buf,
                float *newParam, float *newBuf, int64_t n, double lr,
                double momentum, double weightDecay, bool nesterov,
                WorkingCopy working = {});

/// One torch.optim.AdamW step on n elements (tcc.adamw_update), `step` the
/// 1-based step count. Outputs may alias the matching inputs. Returns false
/// (writing nothing) when step < 1.
bool adamw_update(const float *param, const float *grad, const float *expAvg,
                  const float *expAvgSq, float *newParam, float *newExpAvg,
                  float *newExpAvgSq, int64_t n, double lr, int64_t step,
                  double beta1, double beta2, double eps, double weightDecay,
                  WorkingCopy working = {});

//===----------------------------------------------------------------------===//
// Convolution and pooling over NCHW (tcc.conv, tcc.max_pool, tcc.avg_pool
// and their gradients)
//===----------------------------------------------------------------------===//

/// y = conv(x, w) + bias (bias may be null): im2col + sgemm per image and
/// group.
void conv2d_fwd(const kernels::WindowShape &s, const float *x, const float *w,
                const float *bias, float *y);
/// The input, weight and bias gradients of conv2d_fwd (any may be null).
void conv2d_bwd(const kernels::WindowShape &s, const float *x, const float *w,
                const float *dy, float *dx, float *dw, float *db);
/// Max over each window; the gradient goes to the window's first maximum.
void max_pool2d_fwd(const kernels::WindowShape &s, const float *x, float *y);
void max_pool2d_bwd(const kernels::WindowShape &s, const float *x,
                    const float *dy, float *dx);
/// Mean over each window (WindowShape::count divides).
void avg_pool2d_fwd(const kernels::WindowShape &s, const float *x, float *y);
void avg_pool2d_bwd(const kernels::WindowShape &s, const float *dy, float *dx);

} // namespace tcc::cpu

#endif // TCC_RUNTIME_KERNELS_CPU_CPU_KERNELS_H
