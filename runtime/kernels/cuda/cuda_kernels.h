//===- cuda_kernels.h - library kernels of the CUDA backend -----*- C++ -*-===//
//
// The hand-written kernels the CUDA backend calls for library ops, one host
// launcher per kernel of runtime/kernels/cpu/cpu_kernels.h with the same
// argument meaning, plus a stream. Every pointer is a device pointer unless
// its comment says otherwise; buffers are dense, row-major, float32 (dropout
// also float64; bf16 / f16 below), and each launcher writes every element of
// its outputs.
// Float tensors may also be stored as bfloat16 or IEEE half (FloatType):
// every launcher but the optimizers has an overload taking the storage type
// and untyped pointers. Such a kernel loads the 16-bit values, widens them
// exactly to float, computes exactly as its float32 version does (the same
// float math, the same double sums; statistics are never kept in 16 bits)
// and rounds each result once to nearest even when it stores it
// (__float2bfloat16_rn / __float2half_rn) - the reference interpreter's rule
// for bf16/f16 ops, which the CPU backend emulates. Results that stay f32
// (layer norm's mean / rstd, attention's lse, cross-entropy's loss sum and
// count) are not rounded. NaN results are NaN, their payload bits may differ
// from the CPU backend's.
// Launchers only enqueue work on `stream` (never synchronise, never
// allocate); where a kernel needs scratch memory the caller passes a
// `workspace` of at least the size its *_workspace_bytes function returns
// (computed from shapes alone, so a runtime can plan it at load time).
//
// Differences from the CPU kernels, all because the data lives on the device
// and a launcher must not wait for it:
//  * Scalars the graph computes (the loss gradient of cross_entropy_grad, the
//    learning rate and step of the optimizers, dropout's offset) are device
//    pointers, read by the kernel.
//  * A bad label / id / step cannot be returned. Launchers taking an
//    `int64_t *error` (device, may be null) record the smallest bad row there
//    with an atomic min; the caller sets it to -1 first (set_error_word) and
//    reads it after the stream has reached the kernel (read_error_word
//    synchronises the stream). -1 means no error. What a bad row does to the
//    outputs is stated per kernel.
//  * Results are deterministic (the same bits on every run for the same
//    inputs and shapes on the same GPU): no floating-point atomics anywhere,
//    every reduction has a fixed order. They agree with the CPU kernels to
//    the tolerances test/unit/gpu states, not bit for bit, except where a
//    comment says bit-identical (gather, scatter-add, dropout, optimizers).
//
// Every launcher returns a Status: 0 (cudaSuccess) or a cudaError_t value
// (invalid arguments give cudaErrorInvalidValue, before anything is
// enqueued). It is a plain int so this header needs no CUDA headers.
//
// No LLVM or MLIR here: the runtime links this library.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_KERNELS_CUDA_CUDA_KERNELS_H
#define TCC_RUNTIME_KERNELS_CUDA_CUDA_KERNELS_H

#include "kernels/attention_layout.h"

#include <cstddef>
#include <cstdint>

// The one CUDA type used here, declared exactly as driver_types.h does.
struct CUstream_st;
typedef struct CUstream_st *cudaStream_t;

namespace tcc::cuda {

/// 0 (cudaSuccess) or a cudaError_t value.
using Status = int;

/// cudaGetErrorString of a Status.
const char *status_string(Status status);

/// How a float tensor is stored in device memory.
enum class FloatType : int {
  F32,  ///< float
  BF16, ///< bfloat16 (__nv_bfloat16): 8 exponent, 7 mantissa bits
  F16,  ///< IEEE binary16 (__half): 5 exponent, 10 mantissa bits
};

/// "f32", "bf16", "f16".
const char *float_type_name(FloatType type);

/// Bytes per element: 4 or 2.
inline size_t float_type_size(FloatType type) {
  return type == FloatType::F32 ? 4 : 2;
}

/// Sets the device error word to -1 (no error), on `stream`.
Status set_error_word(int64_t *error, cudaStream_t stream);

/// Synchronises `stream` and returns the error word (-1: no error), or
/// INT64_MIN when the synchronisation or the copy fails.
int64_t read_error_word(const int64_t *error, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Softmax family, over the last dim of [rows, len]
//===----------------------------------------------------------------------===//
//
// One row per warp (len <= 128), per 128 threads (len <= 2048) or per 512
// threads; 16-byte loads when len % 4 == 0 and the buffers are 16-byte
// aligned. Row sums accumulate in double (fixed reduction tree), elementwise
// math is float, as the CPU kernels do; the max and the exp-sum are found in
// one pass (online softmax), so the exponentials are evaluated against the
// running maximum and then rescaled (agreement ~1e-6 relative).

/// y = softmax(x) per row. A row containing NaN, or whose maximum is +-inf
/// (all -inf, or some +inf), becomes all NaN, as the CPU kernel gives.
/// y may alias x.
Status softmax_rows(const float *x, float *y, int64_t rows, int64_t len,
                    cudaStream_t stream);

/// dx = y * (dy - sum(dy * y)) per row.
Status softmax_grad_rows(const float *y, const float *dy, float *dx,
                         int64_t rows, int64_t len, cudaStream_t stream);

/// y = x - max - log(sum(exp(x - max))) per row (NaN rows as softmax_rows).
Status log_softmax_rows(const float *x, float *y, int64_t rows, int64_t len,
                        cudaStream_t stream);

/// dx = dy - exp(y) * sum(dy) per row.
Status log_softmax_grad_rows(const float *y, const float *dy, float *dx,
                             int64_t rows, int64_t len, cudaStream_t stream);

/// The four above on `type` storage (x, y, dy, dx all of `type`); 16-byte
/// accesses (8 elements) for 16-bit rows when len % 8 == 0 and aligned.
Status softmax_rows(FloatType type, const void *x, void *y, int64_t rows,
                    int64_t len, cudaStream_t stream);
Status softmax_grad_rows(FloatType type, const void *y, const void *dy,
                         void *dx, int64_t rows, int64_t len,
                         cudaStream_t stream);
Status log_softmax_rows(FloatType type, const void *x, void *y, int64_t rows,
                        int64_t len, cudaStream_t stream);
Status log_softmax_grad_rows(FloatType type, const void *y, const void *dy,
                             void *dx, int64_t rows, int64_t len,
                             cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Layer norm over the trailing `len` elements of each of `rows` rows
//===----------------------------------------------------------------------===//

/// y = (x - mean) * rstd * scale + bias with the biased variance; scale and
/// bias ([len]) may be null. Statistics are two-pass (mean, then the centred
/// sum of squares) in double, as the CPU kernel; mean and rstd ([rows],
/// float) are stored unless null.
Status layer_norm_fwd(const float *x, const float *scale, const float *bias,
                      float *y, float *mean, float *rstd, int64_t rows,
                      int64_t len, double eps, cudaStream_t stream);

size_t layer_norm_bwd_workspace_bytes(int64_t rows, int64_t len);

/// dx [rows, len] and dscale, dbias [len] (either may be null); a null scale
/// is 1. A non-null `residual` [rows, len] is added to dx (in double, before
/// dx is rounded); a non-null dxsum [len] receives dx's column sums. With
/// mean and rstd null the statistics are recomputed from x in double. dx is
/// one pass per row (sums in double). dscale, dbias and dxsum are
/// deterministic without atomics: a first kernel sums fixed chunks of rows
/// per column into the workspace, a second adds the chunks per column in
/// order.
Status layer_norm_bwd(const float *x, const float *scale, const float *dy,
                      const float *residual, const float *mean,
                      const float *rstd, float *dx, float *dscale,
                      float *dbias, float *dxsum, int64_t rows, int64_t len,
                      double eps, void *workspace, cudaStream_t stream);

/// The two above on `type` storage: x, scale, bias, y, dy, residual and dx
/// of `type`; mean, rstd, dscale, dbias and dxsum stay float (the
/// parameters' gradients are fp32, as tcc.layer_norm_grad types them). The
/// statistics, dx's row sums and the column sums are double as for float32;
/// dxsum adds dx's float values before their rounding to `type`.
Status layer_norm_fwd(FloatType type, const void *x, const void *scale,
                      const void *bias, void *y, float *mean, float *rstd,
                      int64_t rows, int64_t len, double eps,
                      cudaStream_t stream);
Status layer_norm_bwd(FloatType type, const void *x, const void *scale,
                      const void *dy, const void *residual, const float *mean,
                      const float *rstd, void *dx, float *dscale, float *dbias,
                      float *dxsum, int64_t rows, int64_t len, double eps,
                      void *workspace, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Attention over [B, H, T, D], flash-style: never materialises Tq x Tk
//===----------------------------------------------------------------------===//
//
// Tiles of queries stay in shared memory while tiles of keys and values
// stream through it; scores live in registers and the softmax is online
// (running max and sum per query, the output rescaled as the max grows).
// FP32 FMA register tiles for float32 (TF32 would miss the 1e-5 agreement
// of an fp32 path) and for the backward of every type. Head dims up to 128
// (d and dv padded to 32, 64 or 128 inside the kernel); larger ones return
// cudaErrorInvalidValue.
//
// bf16 / f16 storage: the FMA kernels widen the tiles to float as they
// load them into shared memory, so they compute exactly what the float32
// kernels compute on the widened values. The forward has a tensor-core
// path (mma.sync m16n8k16, bf16/f16 operands, f32 accumulators; see
// AttentionPath): scores are exact products summed in f32, the online
// softmax is f32, and the probabilities are rounded to the storage type to
// multiply V (FlashAttention-2's choice; the row sum adds the rounded P) -
// one extra rounding of P, so it agrees with the FMA path to the 16-bit
// tolerances, not bit for bit. The tensor-core backward likewise computes
// S, dP, dQ, dK, dV on tensor cores with P and dS rounded to the storage
// type before they multiply (FlashAttention-2's backward); its forward
// recomputation is the tensor-core forward with a float output.

/// The optional key mask of tcc.attention, [B, Tk], device pointers; at
/// most one is set.
struct KeyMask {
  const uint8_t *keep = nullptr; ///< i1 mask, 0 hides the key
  const void *bias = nullptr;    ///< added to every query's scores
  FloatType biasType = FloatType::F32; ///< how `bias` is stored
};

/// Which kernels run a bf16/f16 attention, forward or backward.
enum class AttentionPath {
  /// Tensor cores when d == dv is 64 or 128 and the tensors are 16-byte
  /// aligned; the FMA kernels otherwise (and always for float32).
  Auto,
  Fma,        ///< the FMA kernel (tiles widened to float)
  TensorCore, ///< tensor cores; cudaErrorInvalidValue when they cannot run
};

/// Whether attention_fwd(type, ..., AttentionPath::Auto) takes the tensor
/// cores for these operands.
bool attention_fwd_uses_tensor_cores(
    FloatType type, int64_t d, int64_t dv, const void *q, const void *k,
    const void *v, const void *out,
    const kernels::AttentionLayout &layout = {});

/// out = softmax(scale * q @ k^T + mask) @ v: q [B,H,Tq,D], k [B,H,Tk,D],
/// v [B,H,Tk,Dv], out [B,H,Tq,Dv]. `causal` hides keys j > i. A query with
/// every key hidden (or a NaN score) is NaN. When lse is not null it
/// receives each query's log-sum-exp of its (scaled, masked) scores,
/// [B,H,Tq], which attention_bwd can reuse.
Status attention_fwd(const float *q, const float *k, const float *v,
                     float *out, int64_t batch, int64_t heads, int64_t tq,
                     int64_t tk, int64_t d, int64_t dv, double scale,
                     bool causal, KeyMask mask, float *lse,
                     cudaStream_t stream);

/// Workspace of attention_bwd; `haveForward` when the caller passes the
/// forward's out and lse (otherwise they are recomputed into the workspace).
size_t attention_bwd_workspace_bytes(int64_t batch, int64_t heads, int64_t tq,
                                     int64_t tk, int64_t d, int64_t dv,
                                     bool haveForward);

/// dq, dk, dv of attention_fwd given dout. `out` and `lse` are the
/// forward's (both or neither; null: recomputed). Three kernels after that:
/// delta = rowsum(dout * out) per query; dq with one block per query tile
/// looping over key tiles; dk and dv with one block per key tile looping
/// over query tiles. Each recomputes its probabilities from lse, so no
/// output is reduced across blocks and nothing needs atomics. A query whose
/// keys are all hidden has NaN gradients, which reach dk/dv of every key its
/// block pairs with (all keys unless causal skips the tile).
Status attention_bwd(const float *q, const float *k, const float *v,
                     const float *dout, float *dq, float *dk, float *dv,
                     int64_t batch, int64_t heads, int64_t tq, int64_t tk,
                     int64_t d, int64_t dvDim, double scale, bool causal,
                     KeyMask mask, const float *out, const float *lse,
                     void *workspace, cudaStream_t stream);

/// The forward on `type` storage: q, k, v and out of `type`, lse float.
/// `layout` places q, k, v and out otherwise (token rows; default: heads
/// first as above); lse stays [B,H,Tq].
Status attention_fwd(FloatType type, const void *q, const void *k,
                     const void *v, void *out, int64_t batch, int64_t heads,
                     int64_t tq, int64_t tk, int64_t d, int64_t dv,
                     double scale, bool causal, KeyMask mask, float *lse,
                     cudaStream_t stream,
                     AttentionPath path = AttentionPath::Auto,
                     const kernels::AttentionLayout &layout = {});

/// The backward on `type` storage: q, k, v, dout, dq, dk, dv and the
/// forward's `out` of `type`, lse float. Without out / lse the forward is
/// recomputed into the workspace in float (unrounded, as the op's own f32
/// computation would have it) by the forward kernel of the same path.
/// `layout.o` places dout (and the given out), the rest as the forward's.
Status attention_bwd(FloatType type, const void *q, const void *k,
                     const void *v, const void *dout, void *dq, void *dk,
                     void *dv, int64_t batch, int64_t heads, int64_t tq,
                     int64_t tk, int64_t d, int64_t dvDim, double scale,
                     bool causal, KeyMask mask, const void *out,
                     const float *lse, void *workspace, cudaStream_t stream,
                     AttentionPath path = AttentionPath::Auto,
                     const kernels::AttentionLayout &layout = {});

/// Whether attention_bwd(type, ..., AttentionPath::Auto) takes the tensor
/// cores: the forward's conditions on q, k, v and dout, and 16-byte aligned
/// dq, dk, dv.
bool attention_bwd_uses_tensor_cores(
    FloatType type, int64_t d, int64_t dv, const void *q, const void *k,
    const void *v, const void *dout, const void *dq, const void *dk,
    const void *dvp, const kernels::AttentionLayout &layout = {});

/// Variable-length attention over packed tokens (pad-skipping; the CPU
/// kernels' KeyMask::cuSeqlens): q, k, v, out / dout, dq, dk, dv are
/// [B,H,T,D] of `type` whose flattened (batch, seq) rows are packed tokens
/// (token r of head h at row ((r / T) * H + h) * T + r % T); sequence s is
/// tokens [cu[s], cu[s+1]) (cu: device int32 [B+1], tcc.pack_index's) and
/// attends only to its own tokens (causal: to the earlier ones). Rows from
/// cu[sequences] on are padding, written as zero. With `sequences` == B
/// (packed tokens, tcc.pack_index) it runs as varlen_gather into the
/// workspace (each sequence at the start of its batch's rows), the dense
/// kernels above bounded by each sequence's length (query and key tiles
/// past it are skipped, so the work is sum len^2, not B T^2), and
/// varlen_scatter back. With more (packed documents, tcc.segment_index:
/// cu [B*T + 1], every token a token, no document crossing a row) it runs
/// in place: each query's keys start at its document's first token, and
/// key tiles before it are skipped. Same numerics and paths as the dense
/// forward and backward (the backward recomputes the forward). `layout`
/// as the dense calls' (token rows: token r of head h is element (r / T,
/// h, r % T) by the strides; the aligned copies stay heads first).
size_t attention_varlen_workspace_bytes(FloatType type, int64_t sequences,
                                        int64_t batch, int64_t heads,
                                        int64_t seq, int64_t d, int64_t dv,
                                        bool backward);
Status attention_varlen_fwd(FloatType type, const void *q, const void *k,
                            const void *v, void *out, const int32_t *cu,
                            int64_t sequences, int64_t batch, int64_t heads,
                            int64_t seq, int64_t d, int64_t dv, double scale,
                            bool causal, void *workspace, cudaStream_t stream,
                            AttentionPath path = AttentionPath::Auto,
                            const kernels::AttentionLayout &layout = {});
Status attention_varlen_bwd(FloatType type, const void *q, const void *k,
                            const void *v, const void *dout, void *dq,
                            void *dk, void *dv, const int32_t *cu,
                            int64_t sequences, int64_t batch, int64_t heads,
                            int64_t seq, int64_t d, int64_t dvDim,
                            double scale, bool causal, void *workspace,
                            cudaStream_t stream,
                            AttentionPath path = AttentionPath::Auto,
                            const kernels::AttentionLayout &layout = {});

//===----------------------------------------------------------------------===//
// Cross-entropy over logits [rows, classes] and labels [rows]
//===----------------------------------------------------------------------===//
//
// Labels may be int64 or int32. A label that is neither ignoreIndex nor in
// [0, classes) is recorded in `error` (smallest such row) and its row is
// treated as ignored.

size_t cross_entropy_fwd_workspace_bytes(int64_t rows);

/// *lossSum (device float) = sum over non-ignored rows of
/// logsumexp(row) - row[label]; *count = their number. Per-row losses in
/// double go to the workspace, then one block adds them in a fixed order.
Status cross_entropy_fwd(const float *logits, const int64_t *labels,
                         int64_t rows, int64_t classes, int64_t ignoreIndex,
                         float *lossSum, float *count, void *workspace,
                         int64_t *error, cudaStream_t stream);
Status cross_entropy_fwd(const float *logits, const int32_t *labels,
                         int64_t rows, int64_t classes, int64_t ignoreIndex,
                         float *lossSum, float *count, void *workspace,
                         int64_t *error, cudaStream_t stream);

/// dlogits = (softmax(row) - onehot(label)) * *lossSumGrad (a device
/// float), zero on ignored rows. The row's log-sum-exp is recomputed; the
/// probabilities are never stored.
Status cross_entropy_grad(const float *logits, const int64_t *labels,
                          const float *lossSumGrad, float *dlogits,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          int64_t *error, cudaStream_t stream);
Status cross_entropy_grad(const float *logits, const int32_t *labels,
                          const float *lossSumGrad, float *dlogits,
                          int64_t rows, int64_t classes, int64_t ignoreIndex,
                          int64_t *error, cudaStream_t stream);

/// The two above with logits (and dlogits) on `type` storage; lossSum and
/// count stay float. The gradient's seed *lossSumGrad is stored as
/// `seedType` (float, or a 16-bit scalar, widened).
Status cross_entropy_fwd(FloatType type, const void *logits,
                         const int64_t *labels, int64_t rows, int64_t classes,
                         int64_t ignoreIndex, float *lossSum, float *count,
                         void *workspace, int64_t *error, cudaStream_t stream);
Status cross_entropy_fwd(FloatType type, const void *logits,
                         const int32_t *labels, int64_t rows, int64_t classes,
                         int64_t ignoreIndex, float *lossSum, float *count,
                         void *workspace, int64_t *error, cudaStream_t stream);
Status cross_entropy_grad(FloatType type, const void *logits,
                          const int64_t *labels, FloatType seedType,
                          const void *lossSumGrad, void *dlogits, int64_t rows,
                          int64_t classes, int64_t ignoreIndex, int64_t *error,
                          cudaStream_t stream);
Status cross_entropy_grad(FloatType type, const void *logits,
                          const int32_t *labels, FloatType seedType,
                          const void *lossSumGrad, void *dlogits, int64_t rows,
                          int64_t classes, int64_t ignoreIndex, int64_t *error,
                          cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Embedding (ids int64 or int32)
//===----------------------------------------------------------------------===//

/// out[j] = table[ids[j]] (bit-identical copy). An id outside [0, vocab)
/// is recorded in `error` and its output row is zero.
Status gather_rows(const float *table, const int64_t *ids, int64_t n,
                   int64_t vocab, int64_t dim, float *out, int64_t *error,
                   cudaStream_t stream);
Status gather_rows(const float *table, const int32_t *ids, int64_t n,
                   int64_t vocab, int64_t dim, float *out, int64_t *error,
                   cudaStream_t stream);

size_t scatter_add_rows_workspace_bytes(int64_t n, int64_t vocab);

/// dtable = 0, then dtable[ids[j]] += dy[j] in order of j (negative ids
/// count from the end), bit-identical to the CPU kernel. Deterministic
/// without atomics: the (id, j) pairs are radix-sorted by id (stable, so j
/// stays in order within an id), then one block per distinct id adds its
/// rows of dy in float in order of j. An id outside [-vocab, vocab) is
/// recorded in `error` and skipped (the CPU kernel writes nothing then).
Status scatter_add_rows(const int64_t *ids, const float *dy, int64_t n,
                        int64_t vocab, int64_t dim, float *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream);
Status scatter_add_rows(const int32_t *ids, const float *dy, int64_t n,
                        int64_t vocab, int64_t dim, float *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream);

/// gather_rows on `type` storage: a copy of the rows' bits (16-byte
/// accesses when the row bytes and pointers allow).
Status gather_rows(FloatType type, const void *table, const int64_t *ids,
                   int64_t n, int64_t vocab, int64_t dim, void *out,
                   int64_t *error, cudaStream_t stream);
Status gather_rows(FloatType type, const void *table, const int32_t *ids,
                   int64_t n, int64_t vocab, int64_t dim, void *out,
                   int64_t *error, cudaStream_t stream);

/// scatter_add_rows on `type` storage: each id's rows of dy are widened and
/// added in float in order of j, and the sum is rounded once to `type` -
/// bit-identical to the CPU backend's emulation (the float kernel on the
/// widened dy, then rounded).
Status scatter_add_rows(FloatType type, const int64_t *ids, const void *dy,
                        int64_t n, int64_t vocab, int64_t dim, void *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream);
Status scatter_add_rows(FloatType type, const int32_t *ids, const void *dy,
                        int64_t n, int64_t vocab, int64_t dim, void *dtable,
                        void *workspace, int64_t *error, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Dropout (the mask of runtime/kernels/dropout_hash.h)
//===----------------------------------------------------------------------===//

/// y = keep ? x * (1 / (1 - ratio)) : 0 with keep = dropoutKeep(seed', i),
/// seed' = dropoutSeed(seed, *offset) when offset (device int64) is not
/// null, else seed; mask (uint8, may be null) receives keep. Bit-identical
/// to the CPU backend's dropout. ratio in [0, 1).
/// Packed tokens: with `rows` (pack_index's rows, device int32, one per
/// packed row of `width` elements; width > 0), element i of packed row
/// i / width is hashed as element rows[i / width] * width + i % width of the
/// unpacked tensor, and where rows[i / width] < 0 it is dropped (y 0, mask
/// 0) - the CPU backend's packed dropout, bit for bit.
Status dropout(const float *x, float *y, uint8_t *mask, int64_t n,
               double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream, const int32_t *rows = nullptr,
               int64_t width = 0);
Status dropout(const double *x, double *y, uint8_t *mask, int64_t n,
               double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream, const int32_t *rows = nullptr,
               int64_t width = 0);

/// dropout on `type` storage: y = keep ? round(float(x) * float scale) : 0,
/// bit-identical to the CPU backend's emulation (NaN payloads aside).
Status dropout(FloatType type, const void *x, void *y, uint8_t *mask,
               int64_t n, double ratio, uint64_t seed, const int64_t *offset,
               cudaStream_t stream, const int32_t *rows = nullptr,
               int64_t width = 0);

//===----------------------------------------------------------------------===//
// Packed tokens (pad-skipping; the CPU kernels of runtime/kernels/cpu/pack.cpp)
//===----------------------------------------------------------------------===//
//
// pack_index is one block of 1024 threads: a block-wide prefix sum of the
// token flags over chunks of 4096 positions. The row movers write each
// output row with a group of 1 to 32 threads (a power of two, the smallest
// covering the row's words, at most a warp; 256-thread blocks, grid-stride,
// at most 4096 blocks), in words of the widest of 16, 8, 4, 2, 1 bytes that
// divides the row bytes and the two pointers. Rows are opaque bytes; every
// result is a copy, so it is bit-identical to the CPU kernels'. All
// pointers are device pointers; `error` (may be null) follows the error-word
// rule above.

/// rows [batch*seq] and cu [batch+1] (int32) from the key mask: keep
/// (uint8, 0 = padding) or, when keep is null, bias (storage biasType; 0 =
/// token, <= -1000 = padding, anything else incl. NaN is an error: the
/// smallest such flat position goes to `error` by atomic min, and the
/// outputs are then unspecified but written). rows[i] for i < cu[batch] are
/// the token positions b*seq+t in ascending order, the rest -1; cu[b] =
/// tokens before sequence b. Exactly the CPU pack_index's results.
/// batch * seq must fit in int32.
Status pack_index(const uint8_t *keep, const void *bias, FloatType biasType,
                  int64_t batch, int64_t seq, int32_t *rows, int32_t *cu,
                  int64_t *error, cudaStream_t stream);

/// Packed documents (tcc.segment_index, the CPU kernel segment_index):
/// cu [batch*seq + 1] from position ids `pos` [batch, seq] (int64 when
/// `pos64`, else int32): a document starts at every row start and where
/// the position is 0; its starts in order, then batch*seq. A position that
/// neither is 0 nor continues the previous one by 1 goes to `error` (the
/// smallest such flat position).
Status segment_index(const void *pos, bool pos64, int64_t batch, int64_t seq,
                     int32_t *cu, int64_t *error, cudaStream_t stream);

/// out row i (rowBytes bytes) = in row rows[i] when rows[i] >= 0, else the
/// fill row (the elemBytes-byte value `fillBits` (little-endian low bytes of
/// the uint64) repeated). With `check`: every row p of `in` that no rows[i]
/// selects must be all zero floats (+0 or -0 of elemBytes-byte floats) when
/// floatZero, else byte-equal to the fill row; the smallest violating p goes
/// to `error`. rows is sorted ascending over its non-negative prefix
/// (pack_index's output), so "p is selected" is a binary search. `in` and
/// `out` hold n rows; elemBytes is 1, 2, 4 or 8 and divides rowBytes.
Status pack_rows(const void *in, const int32_t *rows, int64_t n,
                 int64_t rowBytes, uint64_t fillBits, int64_t elemBytes,
                 bool check, bool floatZero, void *out, int64_t *error,
                 cudaStream_t stream);

/// The inverse: out row p = in row i where rows[i] == p, zero where no i
/// selects p (a binary search per output row). When readEnd > readBegin
/// (then seq > 0), an unselected p with readBegin <= p % seq < readEnd is an
/// error (smallest p to `error`).
Status unpack_rows(const void *in, const int32_t *rows, int64_t n,
                   int64_t rowBytes, int64_t seq, int64_t readBegin,
                   int64_t readEnd, void *out, int64_t *error,
                   cudaStream_t stream);

/// Varlen attention's layout change, for elemBytes 2 or 4: packed [batch,
/// heads, seq, dim] (packed token r of head h at row ((r/seq)*heads + h)*seq
/// + r%seq; r < cu[batch] are tokens, sequence s owns r in [cu[s],
/// cu[s+1])) -> aligned [batch, heads, seq, dim] where token i of sequence s
/// (i < cu[s+1]-cu[s]) is row (s*heads + h)*seq + i; aligned rows past a
/// sequence's length are written as zero.
Status varlen_gather(const void *packed, const int32_t *cu, int64_t batch,
                     int64_t heads, int64_t seq, int64_t dim,
                     int64_t elemBytes, void *aligned, cudaStream_t stream);

/// The inverse: packed rows r < cu[batch] from the aligned rows (the
/// sequence of r by a binary search over cu); packed rows r >= cu[batch]
/// written as zero (for every head).
Status varlen_scatter(const void *aligned, const int32_t *cu, int64_t batch,
                      int64_t heads, int64_t seq, int64_t dim,
                      int64_t elemBytes, void *packed, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Optimizer updates: torch 1.13's formulas op by op, as the CPU kernels
//===----------------------------------------------------------------------===//
//
// float32 only: mixed precision keeps the master weights and the optimizer
// state in f32.
//
// Every rounding of the CPU kernels is reproduced with explicit
// __fmaf_rn / __fmul_rn / __fadd_rn / __fdiv_rn / __fsqrt_rn, so the
// updates are bit-identical to the CPU kernels given the same float scalars.
// The learning rate (double) and AdamW's step (int64) are device values; the
// bias corrections pow(beta, step) are computed in double on the device and
// can differ from glibc's in the last bit of a double, which shows in the
// float results only in rare ties.

// `skip` (a device byte, or null) is dynamic loss scaling's overflow flag:
// nonzero, an update leaves parameter and state as they are (copied to the
// outputs where those are not the inputs).

/// The bf16 / f16 working copy of the parameter an update also writes (the
/// plan's working / new_working): element i of `out` is the f32 value just
/// written to newParam[i] rounded to nearest even (__float2bfloat16_rn /
/// __float2half_rn, the CPU kernels' floatToBf16 / floatToF16 bit for bit,
/// NaN payloads aside), in the same kernel. `in` is read only by a skipped
/// update, which copies it to `out` unless they are the same (in place).
/// `out` null: no working copy. Device pointers.
struct WorkingCopy {
  const void *in = nullptr;
  void *out = nullptr;
  FloatType type = FloatType::BF16; ///< BF16 or F16
};

/// One SGD step on n elements; buf / newBuf used iff momentum != 0. Outputs
/// may alias the matching inputs.
Status sgd_update(const float *param, const float *grad, const float *buf,
                  float *newParam, float *newBuf, int64_t n, const double *lr,
                  double momentum, double weightDecay, bool nesterov,
                  const uint8_t *skip, WorkingCopy working,
                  cudaStream_t stream);

/// One AdamW step on n elements. With *step < 1 nothing is written and
/// `error` (if not null) receives 0.
Status adamw_update(const float *param, const float *grad,
                    const float *expAvg, const float *expAvgSq,
                    float *newParam, float *newExpAvg, float *newExpAvgSq,
                    int64_t n, const double *lr, const int64_t *step,
                    double beta1, double beta2, double eps,
                    double weightDecay, const uint8_t *skip,
                    WorkingCopy working, int64_t *error, cudaStream_t stream);

/// One tensor of a multi-tensor AdamW update (device pointers; the outputs
/// may equal the inputs for an in-place update) with its own weight decay
/// and working copy (working.out null: none; a table may mix tensors with
/// and without one, bf16 and f16).
struct AdamwTensor {
  const float *param;
  const float *grad;
  const float *expAvg;
  const float *expAvgSq;
  float *newParam;
  float *newExpAvg;
  float *newExpAvgSq;
  int64_t n;
  double weightDecay;
  WorkingCopy working = {};
};

/// Bytes of the device table describing `count` tensors.
size_t adamw_table_bytes(int count);

/// Writes the table for `tensors` (host array) into `hostTable` (host
/// memory of adamw_table_bytes(count)) and returns its number of chunks;
/// the caller copies the table to the device once (the runtime at load
/// time: arena addresses do not move).
int64_t adamw_build_table(const AdamwTensor *tensors, int count,
                          void *hostTable);

/// The AdamW step of every tensor of the table in one launch: the tensors
/// are cut into chunks of 16384 elements and a grid-stride loop of blocks
/// walks the chunks (16-byte accesses where a tensor's pointers allow).
/// Each tensor's result is bit for bit adamw_update's with its weight decay
/// (the same scalars and per-element arithmetic); the same `error` rule.
/// No limit on `count` (the table is in device memory).
Status adamw_update_multi(const void *deviceTable, int count, int64_t chunks,
                          const double *lr, const int64_t *step, double beta1,
                          double beta2, double eps, const uint8_t *skip,
                          int64_t *error, cudaStream_t stream);

//===----------------------------------------------------------------------===//
// Column sums (a GEMM's bias gradient without cuBLASLt's BGRADB epilogue)
//===----------------------------------------------------------------------===//

/// The float workspace column_sums needs.
size_t column_sums_workspace_bytes(int64_t rows, int64_t cols);

/// sums[c] = sum over r < rows of x[r][c] for the row-major [rows, cols] x
/// (stored as `type`, summed in f32, written as `type`): chunks of rows
/// summed by many blocks, then the chunks in order; deterministic.
Status column_sums(FloatType type, const void *x, int64_t rows, int64_t cols,
                   void *sums, void *workspace, cudaStream_t stream);

} // namespace tcc::cuda

#endif // TCC_RUNTIME_KERNELS_CUDA_CUDA_KERNELS_H
