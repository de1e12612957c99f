// The attention probabilities of one query, shared by the forward kernel and
// attention_grad so that the backward recomputes exactly the masking the
// forward applied.
#ifndef TCC_LIB_INTERP_ATTENTION_H
#define TCC_LIB_INTERP_ATTENTION_H

#include "Numerics.h"

#include "data/npz.h"

#include <cstdint>
#include <limits>

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

} // namespace tcc::interp

#endif // TCC_LIB_INTERP_ATTENTION_H
