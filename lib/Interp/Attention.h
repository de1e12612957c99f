// The attention probabilities of one query, shared by the forward kernel and
// attention_grad so that the backward recomputes exactly the masking the
// forward applied.
#ifndef TCC_LIB_INTERP_ATTENTION_H
#define TCC_LIB_INTERP_ATTENTION_H

#include "Numerics.h"

#include "data/npz.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace tcc::interp {

/// p[j] = softmax_j(scale * q.k_j) for query `i` of batch `b`, over the `tk`
/// keys (rows of `keys`, `d` wide). Hidden keys (causal: j > i; i1 key_mask
/// false) are -inf and a float key_mask is added before the softmax. S is the
/// type the scores are computed in: T in the forward kernel (as a float32
/// kernel would), double in the backward one.
template <class S, class T>
void attentionProbs(const T *query, const T *keys, int64_t tk, int64_t d,
                    double scale, bool causal, const data::Array *mask,
                    int64_t b, int64_t i, S *p) {
  const S inf = std::numeric_limits<S>::infinity();
  for (int64_t j = 0; j < tk; ++j) {
    double dot = 0;
    for (int64_t e = 0; e < d; ++e)
      dot += static_cast<double>(query[e]) * keys[j * d + e];
    p[j] = static_cast<S>(scale * dot);
    if (causal && j > i)
      p[j] = -inf;
    if (mask && mask->dtype == data::DType::Bool &&
        !mask->data<uint8_t>()[b * tk + j])
      p[j] = -inf;
    if (mask && mask->dtype != data::DType::Bool)
      p[j] += mask->data<T>()[b * tk + j];
  }
  softmaxRow(p, tk);
}

/// Packed tokens (tcc-pack-tokens, i32 cu_seqlens [B + 1]) or packed
/// documents (tcc.segment_index, [B*T + 1]): a key mask of `sequences + 1`
/// row offsets. Token r of the flattened (batch, seq) order sits, for head
/// h, at row ((r / seq) * heads + h) * seq + r % seq of a [B, H, T, D]
/// tensor; sequence s holds tokens [cu[s], cu[s+1]), rows from
/// cu[sequences] on are padding.
struct PackedRows {
  const int32_t *cu;
  int64_t batch, heads, seq, sequences;

  static bool is(const data::Array *mask) {
    return mask && mask->dtype == data::DType::I32;
  }
  int64_t begin(int64_t s) const { return cu[s]; }
  int64_t length(int64_t s) const { return cu[s + 1] - cu[s]; }
  int64_t row(int64_t r, int64_t h) const {
    return ((r / seq) * heads + h) * seq + r % seq;
  }
  /// Sequence s's rows of head h, `dim` wide, contiguous.
  template <class T>
  std::vector<T> gather(const T *src, int64_t s, int64_t h, int64_t dim) const {
    std::vector<T> out(size_t(length(s) * dim));
    for (int64_t i = 0; i < length(s); ++i)
      std::copy_n(src + row(begin(s) + i, h) * dim, dim, out.data() + i * dim);
    return out;
  }
  template <class T>
  void scatter(const std::vector<T> &src, int64_t s, int64_t h, int64_t dim,
               T *dst) const {
    for (int64_t i = 0; i < length(s); ++i)
      std::copy_n(src.data() + i * dim, dim, dst + row(begin(s) + i, h) * dim);
  }
  /// The padding rows of every head, zero.
  template <class T> void zeroPadding(T *dst, int64_t dim) const {
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = cu[sequences]; r < batch * seq; ++r)
        std::fill_n(dst + row(r, h) * dim, dim, T(0));
  }
};

/// Token rows (tcc.attention's `heads` > 0) as the heads-first tensors the
/// kernels above take: the reference runs on copies, so both layouts
/// compute the same values in the same order.
struct TokenRows {
  int64_t batch, heads, dim;

  /// [B, seq, width] rows, heads from `column` -> [B, H, seq, dim].
  template <class T>
  std::vector<T> headsFirst(const T *rows, int64_t seq, int64_t width,
                            int64_t column) const {
    std::vector<T> out(size_t(batch * heads * seq * dim));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t t = 0; t < seq; ++t)
          std::copy_n(rows + (b * seq + t) * width + column + h * dim, dim,
                      out.data() + ((b * heads + h) * seq + t) * dim);
    return out;
  }
  /// [B, H, seq, dim] -> [B, seq, width] rows, the heads from `column`.
  template <class T>
  void store(const std::vector<T> &headsFirst, int64_t seq, T *rows,
             int64_t width, int64_t column) const {
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t t = 0; t < seq; ++t)
          std::copy_n(headsFirst.data() + ((b * heads + h) * seq + t) * dim,
                      dim, rows + (b * seq + t) * width + column + h * dim);
  }
};

} // namespace tcc::interp

#endif // TCC_LIB_INTERP_ATTENTION_H
