// Embedding lookup and its gradient (a scatter-add), rows of `dim` floats.
#include "kernels/cpu/cpu_kernels.h"

#include <algorithm>
#include <cstring>

namespace tcc::cpu {

int64_t gather_rows(const float *table, const int64_t *ids, int64_t n,
                    int64_t vocab, int64_t dim, float *out) {
  for (int64_t j = 0; j < n; ++j) {
    int64_t id = ids[j];
    // Unlike gather, an embedding id never counts from the end (PyTorch).
    if (id < 0 || id >= vocab)
      return j;
    std::memcpy(out + j * dim, table + id * dim, sizeof(float) * dim);
  }
  return -1;
}

int64_t scatter_add_rows(const int64_t *ids, const float *dy, int64_t n,
                         int64_t vocab, int64_t dim, float *dtable) {
  // Check first so a bad id leaves dtable untouched rather than half-summed.
  for (int64_t j = 0; j < n; ++j)
    if (ids[j] < -vocab || ids[j] >= vocab)
      return j;
  std::fill(dtable, dtable + vocab * dim, 0.0f);
  // In order of j, in float: repeated ids sum as the interpreter's do.
  for (int64_t j = 0; j < n; ++j) {
    int64_t id = ids[j] < 0 ? ids[j] + vocab : ids[j];
    float *dst = dtable + id * dim;
    const float *src = dy + j * dim;
    for (int64_t e = 0; e < dim; ++e)
      dst[e] += src[e];
  }
  return -1;
}

} // namespace tcc::cpu
