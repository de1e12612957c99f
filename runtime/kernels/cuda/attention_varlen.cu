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
    const int64_t lo = sequenceOf(cu, sequences, r);
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

/// varlen_gather (SCATTER false) and varlen_scatter (true) for a packed
/// tensor at strides `st` (token rows): one thread per element of the
/// output, E the element's storage (2 or 4 bytes). Gather: aligned element
/// ((b * heads + h) * seq + t) * dim + x is packed token cu[b] + t's, zero
/// past sequence b's length. Scatter: packed token r = b * seq + t of
/// sequence s (binary search, as varlen_scatter) takes aligned row (s *
/// heads + h) * seq + r - cu[s]; tokens from cu[batch] on are zero.
template <class E, bool SCATTER>
__global__ void __launch_bounds__(256)
    stridedVarlenKernel(const E *in, const int32_t *cu, int64_t batch,
                        int64_t heads, int64_t seq, int64_t dim,
                        kernels::AttentionStrides st, E *out) {
  const int64_t n = batch * heads * seq * dim;
  for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < n;
       e += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = e / dim, x = e % dim;
    const int64_t b = row / (heads * seq), h = (row / seq) % heads,
                  t = row % seq;
    if (!SCATTER) {
      const int64_t start = cu[b], len = cu[b + 1] - start, r = start + t;
      out[e] = t < len && r >= 0 && r < batch * seq
                   ? in[st.at(r / seq, h, r % seq) + x]
                   : E(0);
      continue;
    }
    const int64_t r = b * seq + t;
    E v = E(0);
    if (r < cu[batch]) {
      const int64_t s = sequenceOf(cu, batch, r), i = r - cu[s];
      if (i >= 0 && i < seq)
        v = in[((s * heads + h) * seq + i) * dim + x];
    }
    out[st.at(b, h, t) + x] = v;
  }
}

/// varlen_gather / varlen_scatter of a tensor at strides `s`: theirs for
/// heads first, stridedVarlenKernel otherwise.
template <bool SCATTER>
Status varlenMove(const void *in, const int32_t *cu, int64_t batch,
                  int64_t heads, int64_t seq, int64_t dim, int64_t es,
                  const kernels::AttentionStrides &s, void *out,
                  cudaStream_t stream) {
  if (s.isHeadsFirst(heads, seq, dim))
    return SCATTER ? varlen_scatter(in, cu, batch, heads, seq, dim, es, out,
                                    stream)
                   : varlen_gather(in, cu, batch, heads, seq, dim, es, out,
                                   stream);
  const int64_t n = batch * heads * seq * dim;
  if (n == 0)
    return 0;
  const unsigned blocks =
      static_cast<unsigned>(std::min<int64_t>(ceilDiv(n, 256), 4096));
  if (es == 2)
    stridedVarlenKernel<uint16_t, SCATTER><<<blocks, 256, 0, stream>>>(
        static_cast<const uint16_t *>(in), cu, batch, heads, seq, dim, s,
        static_cast<uint16_t *>(out));
  else
    stridedVarlenKernel<uint32_t, SCATTER><<<blocks, 256, 0, stream>>>(
        static_cast<const uint32_t *>(in), cu, batch, heads, seq, dim, s,
        static_cast<uint32_t *>(out));
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
                          AttentionPath path,
                          const kernels::AttentionLayout &layout) {
  if (Status st = checkShapes(batch, heads, seq, seq, d, dv))
    return st;
  const kernels::AttentionLayout l = layout.resolve(heads, seq, seq, d, dv);
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
                    causal, stream, path, nullptr, starts, ends, l);
  }
  // The aligned copies are heads first.
  Status st = varlenMove<false>(q, cu, batch, heads, seq, d, es, l.q, w.q,
                                stream);
  if (!st)
    st = varlenMove<false>(k, cu, batch, heads, seq, d, es, l.k, w.k, stream);
  if (!st)
    st = varlenMove<false>(v, cu, batch, heads, seq, dv, es, l.v, w.v, stream);
  if (!st)
    st = denseFwd(type, w.q, w.k, w.v, w.o, batch, heads, seq, seq, d, dv,
                  scale, causal, stream, path, cu, nullptr, nullptr, {});
  if (!st)
    st = varlenMove<true>(w.o, cu, batch, heads, seq, dv, es, l.o, out,
                          stream);
  return st;
}

Status attentionVarlenBwd(FloatType type, const void *q, const void *k, const void *v,
                          const void *dout, void *dq, void *dk, void *dv,
                          const int32_t *cu, int64_t sequences, int64_t batch,
                          int64_t heads, int64_t seq, int64_t d, int64_t dvDim,
                          double scale, bool causal, void *workspace,
                          cudaStream_t stream, AttentionPath path,
                          const kernels::AttentionLayout &layout) {
  if (Status st = checkShapes(batch, heads, seq, seq, d, dvDim))
    return st;
  const kernels::AttentionLayout l =
      layout.resolve(heads, seq, seq, d, dvDim);
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
                    starts, ends, l);
  }
  // The aligned copies are heads first.
  Status st = varlenMove<false>(q, cu, batch, heads, seq, d, es, l.q, w.q,
                                stream);
  if (!st)
    st = varlenMove<false>(k, cu, batch, heads, seq, d, es, l.k, w.k, stream);
  if (!st)
    st = varlenMove<false>(v, cu, batch, heads, seq, dvDim, es, l.v, w.v,
                           stream);
  if (!st)
    st = varlenMove<false>(dout, cu, batch, heads, seq, dvDim, es, l.o,
                           w.dout, stream);
  if (!st)
    st = denseBwd(type, w.q, w.k, w.v, w.dout, w.dq, w.dk, w.dv, batch, heads,
                  seq, seq, d, dvDim, scale, causal, w.rest, stream, path, cu,
                  nullptr, nullptr, {});
  if (!st)
    st = varlenMove<true>(w.dq, cu, batch, heads, seq, d, es, l.dq, dq,
                          stream);
  if (!st)
    st = varlenMove<true>(w.dk, cu, batch, heads, seq, d, es, l.dk, dk,
                          stream);
  if (!st)
    st = varlenMove<true>(w.dv, cu, batch, heads, seq, dvDim, es, l.dv, dv,
                          stream);
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
                            AttentionPath path,
                            const kernels::AttentionLayout &layout) {
  return attentionVarlenFwd(type, q, k, v, out, cu, sequences, batch, heads,
                            seq, d, dv, scale, causal, workspace, stream, path,
                            layout);
}

Status attention_varlen_bwd(FloatType type, const void *q, const void *k,
                            const void *v, const void *dout, void *dq,
                            void *dk, void *dv, const int32_t *cu,
                            int64_t sequences, int64_t batch, int64_t heads,
                            int64_t seq, int64_t d, int64_t dvDim,
                            double scale, bool causal, void *workspace,
                            cudaStream_t stream, AttentionPath path,
                            const kernels::AttentionLayout &layout) {
  return attentionVarlenBwd(type, q, k, v, dout, dq, dk, dv, cu, sequences,
                            batch, heads, seq, d, dvDim, scale, causal,
                            workspace, stream, path, layout);
}

} // namespace tcc::cuda
