// Variable-length attention (cuda_kernels.h attention_varlen_*): packed
// tokens gathered per sequence to their batch's first rows, run through the
// dense kernels of attention.cu bounded by each sequence's length
// (Params::cu) and scattered back; packed documents run in place, each
// query's keys bounded by its document (Params::docStart / docEnd).
#include "kernels/cuda/attention_common.cuh"

namespace tcc::cuda {
namespace {
using namespace detail;
using namespace attn;

/// Varlen attention's workspace: q, k, v (and for the backward dout, dq,
/// dk, dv) in the aligned layout of varlen_gather, then the out of the
/// forward or the dense backward's workspace.
struct VarlenWorkspace {
  char *q, *k, *v, *o, *dout, *dq, *dk, *dv, *rest;
  size_t bytes;
};

VarlenWorkspace varlenWorkspace(void *base, int64_t batch, int64_t heads,
                                int64_t seq, int64_t d, int64_t dv,
                                size_t elemBytes, bool backward,
                                bool documents) {
  if (documents) {
    // Packed documents run in place: each token's document start and end,
    // then the dense backward's workspace.
    VarlenWorkspace w{};
    char *p = static_cast<char *>(base);
    const size_t bounds = roundUp256(size_t(batch) * size_t(seq) * sizeof(int32_t));
    w.q = p;                         // the document starts, int32 [batch * seq]
    w.k = p ? p + bounds : nullptr;  // the document ends
    w.bytes = 2 * bounds;
    w.rest = p ? p + w.bytes : nullptr;
    if (backward)
      w.bytes += recomputingBwdWorkspaceBytes(batch, heads, seq, dv);
    return w;
  }
  const size_t rows = size_t(batch) * size_t(heads) * size_t(seq);
  const size_t qk = roundUp256(rows * size_t(d) * elemBytes);
  const size_t vo = roundUp256(rows * size_t(dv) * elemBytes);
  char *p = static_cast<char *>(base);
  VarlenWorkspace w{};
  auto take = [&](size_t n) {
    char *at = p ? p + w.bytes : nullptr;
    w.bytes += n;
    return at;
  };
  w.q = take(qk), w.k = take(qk), w.v = take(vo);
  if (!backward) {
    w.o = take(vo);
  } else {
    w.dout = take(vo), w.dq = take(qk), w.dk = take(qk), w.dv = take(vo);
    w.rest = p ? p + w.bytes : nullptr;
    w.bytes += recomputingBwdWorkspaceBytes(batch, heads, seq, dv);
  }
  return w;
}

/// docStart[r] / docEnd[r] = the row offsets of the first token of token
/// r's document and of the token past it: cu[s] and cu[s+1] less
/// (r / seq) * seq for the last s with cu[s] <= r (binary search;
/// documents never cross a row).
__global__ void __launch_bounds__(256)
    documentStartKernel(const int32_t *cu, int64_t sequences, int64_t batch,
                        int64_t seq, int32_t *docStart, int32_t *docEnd) {
  const int64_t n = batch * seq;
  for (int64_t r = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < n;
       r += int64_t(gridDim.x) * blockDim.x) {
    int64_t lo = 0, hi = sequences; // cu[lo] <= r < cu[hi]
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (cu[mid] <= r)
        lo = mid;
      else
        hi = mid;
    }
    docStart[r] = static_cast<int32_t>(cu[lo] - (r / seq) * seq);
    docEnd[r] = static_cast<int32_t>(cu[lo + 1] - (r / seq) * seq);
  }
}

/// The document bounds of packed documents, computed into the workspace
/// `w` (its first two slices).
Status documentBounds(const VarlenWorkspace &w, const int32_t *cu,
                      int64_t sequences, int64_t batch, int64_t seq,
                      int32_t *&docStart, int32_t *&docEnd,
                      cudaStream_t stream) {
  docStart = reinterpret_cast<int32_t *>(w.q);
  docEnd = reinterpret_cast<int32_t *>(w.k);
  const int64_t n = batch * seq;
  if (n == 0)
    return 0;
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(
      ceilDiv(n, 256), 4096));
  documentStartKernel<<<blocks, 256, 0, stream>>>(cu, sequences, batch, seq,
                                                  docStart, docEnd);
  return launched();
}

/// Gathers packed rows into the aligned layout, runs the dense kernels over
/// each sequence's rows (Params::cu) and scatters the results back. Packed
/// documents (more sequences than batch rows) run in place instead, each
/// query's keys bounded by its document's start (Params::docStart).
Status attentionVarlenFwd(FloatType type, const void *q, const void *k, const void *v,
                          void *out, const int32_t *cu, int64_t sequences,
                          int64_t batch, int64_t heads, int64_t seq, int64_t d,
                          int64_t dv, double scale, bool causal,
                          void *workspace, cudaStream_t stream,
                          AttentionPath path) {
  if (Status st = checkShapes(batch, heads, seq, seq, d, dv))
    return st;
  if (!cu || !workspace || sequences < batch)
    return invalid();
  const int64_t es = int64_t(float_type_size(type));
  const bool documents = sequences > batch;
  VarlenWorkspace w = varlenWorkspace(workspace, batch, heads, seq, d, dv, es,
                                      false, documents);
  if (documents) {
    int32_t *starts, *ends;
    if (Status st = documentBounds(w, cu, sequences, batch, seq, starts, ends,
                                   stream))
      return st;
    return denseFwd(type, q, k, v, out, batch, heads, seq, seq, d, dv, scale,
                    causal, stream, path, nullptr, starts, ends);
  }
  Status st = varlen_gather(q, cu, batch, heads, seq, d, es, w.q, stream);
  if (!st)
    st = varlen_gather(k, cu, batch, heads, seq, d, es, w.k, stream);
  if (!st)
    st = varlen_gather(v, cu, batch, heads, seq, dv, es, w.v, stream);
  if (!st)
    st = denseFwd(type, w.q, w.k, w.v, w.o, batch, heads, seq, seq, d, dv,
                  scale, causal, stream, path, cu, nullptr, nullptr);
  if (!st)
    st = varlen_scatter(w.o, cu, batch, heads, seq, dv, es, out, stream);
  return st;
}

Status attentionVarlenBwd(FloatType type, const void *q, const void *k, const void *v,
                          const void *dout, void *dq, void *dk, void *dv,
                          const int32_t *cu, int64_t sequences, int64_t batch,
                          int64_t heads, int64_t seq, int64_t d, int64_t dvDim,
                          double scale, bool causal, void *workspace,
                          cudaStream_t stream, AttentionPath path) {
  if (Status st = checkShapes(batch, heads, seq, seq, d, dvDim))
    return st;
  if (!cu || !workspace || sequences < batch)
    return invalid();
  const int64_t es = int64_t(float_type_size(type));
  const bool documents = sequences > batch;
  VarlenWorkspace w = varlenWorkspace(workspace, batch, heads, seq, d, dvDim,
                                      es, true, documents);
  if (documents) {
    int32_t *starts, *ends;
    if (Status st = documentBounds(w, cu, sequences, batch, seq, starts, ends,
                                   stream))
      return st;
    return denseBwd(type, q, k, v, dout, dq, dk, dv, batch, heads, seq, seq, d,
                    dvDim, scale, causal, w.rest, stream, path, nullptr,
                    starts, ends);
  }
  Status st = varlen_gather(q, cu, batch, heads, seq, d, es, w.q, stream);
  if (!st)
    st = varlen_gather(k, cu, batch, heads, seq, d, es, w.k, stream);
  if (!st)
    st = varlen_gather(v, cu, batch, heads, seq, dvDim, es, w.v, stream);
  if (!st)
    st = varlen_gather(dout, cu, batch, heads, seq, dvDim, es, w.dout, stream);
  if (!st)
    st = denseBwd(type, w.q, w.k, w.v, w.dout, w.dq, w.dk, w.dv, batch, heads,
                  seq, seq, d, dvDim, scale, causal, w.rest, stream, path, cu,
                  nullptr, nullptr);
  if (!st)
    st = varlen_scatter(w.dq, cu, batch, heads, seq, d, es, dq, stream);
  if (!st)
    st = varlen_scatter(w.dk, cu, batch, heads, seq, d, es, dk, stream);
  if (!st)
    st = varlen_scatter(w.dv, cu, batch, heads, seq, dvDim, es, dv, stream);
  return st;
}

} // namespace

size_t attention_varlen_workspace_bytes(FloatType type, int64_t sequences,
                                        int64_t batch, int64_t heads,
                                        int64_t seq, int64_t d, int64_t dv,
                                        bool backward) {
  if (batch <= 0 || heads <= 0 || seq <= 0)
    return 0;
  return varlenWorkspace(nullptr, batch, heads, seq, d, dv,
                         float_type_size(type), backward, sequences > batch)
      .bytes;
}

Status attention_varlen_fwd(FloatType type, const void *q, const void *k,
                            const void *v, void *out, const int32_t *cu,
                            int64_t sequences, int64_t batch, int64_t heads,
                            int64_t seq, int64_t d, int64_t dv, double scale,
                            bool causal, void *workspace, cudaStream_t stream,
                            AttentionPath path) {
  return attentionVarlenFwd(type, q, k, v, out, cu, sequences, batch, heads,
                            seq, d, dv, scale, causal, workspace, stream, path);
}

Status attention_varlen_bwd(FloatType type, const void *q, const void *k,
                            const void *v, const void *dout, void *dq,
                            void *dk, void *dv, const int32_t *cu,
                            int64_t sequences, int64_t batch, int64_t heads,
                            int64_t seq, int64_t d, int64_t dvDim,
                            double scale, bool causal, void *workspace,
                            cudaStream_t stream, AttentionPath path) {
  return attentionVarlenBwd(type, q, k, v, dout, dq, dk, dv, cu, sequences,
                            batch, heads, seq, d, dvDim, scale, causal,
                            workspace, stream, path);
}

} // namespace tcc::cuda
