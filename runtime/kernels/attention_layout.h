//===- attention_layout.h - where attention's tensors are -------*- C++ -*-===//
//
// The CPU and CUDA attention kernels read q, k, v and the result gradient
// and write the result and the gradients through strides, so they run on
// both layouts of tcc.attention:
// - heads first, [B, H, T, D] (the default);
// - token rows, [B, T, W]: each token's H heads of D features at
//   consecutive columns of its row, from a column offset (tcc-fold-attention-
//   layout: q, k and v read straight from the q/k/v projection's output,
//   the result written as the output projection's input).
// A head's D (or Dv) features are always contiguous.
//
// Plain C++ with no dependencies; marked for CUDA when compiled by nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_KERNELS_ATTENTION_LAYOUT_H
#define TCC_KERNELS_ATTENTION_LAYOUT_H

#include "kernels/host_device.h"

#include <cstdint>

namespace tcc::kernels {

/// Element (b, h, t, x) of one tensor at b * batch + h * head + t * row + x.
struct AttentionStrides {
  int64_t batch = 0, head = 0, row = 0;

  TCC_HOST_DEVICE int64_t at(int64_t b, int64_t h, int64_t t) const {
    return b * batch + h * head + t * row;
  }
  /// [B, H, seq, dim] contiguous.
  static TCC_HOST_DEVICE AttentionStrides headsFirst(int64_t heads,
                                                     int64_t seq,
                                                     int64_t dim) {
    return {heads * seq * dim, seq * dim, dim};
  }
  /// [B, seq, width]: head h's `dim` features at columns h * dim on (of the
  /// pointer, which the caller offsets to the tensor's first column).
  static TCC_HOST_DEVICE AttentionStrides tokenRows(int64_t seq,
                                                    int64_t width,
                                                    int64_t dim) {
    return {seq * width, dim, width};
  }
  TCC_HOST_DEVICE bool isHeadsFirst(int64_t heads, int64_t seq,
                                    int64_t dim) const {
    return batch == heads * seq * dim && head == seq * dim && row == dim;
  }
};

/// The strides of one attention call's tensors: q, k, v, o (the forward's
/// result, or the backward's result gradient) and the backward's dq, dk,
/// dv. Default-constructed (all zero) means heads first; resolve() fills
/// that in.
struct AttentionLayout {
  AttentionStrides q, k, v, o, dq, dk, dv;

  static TCC_HOST_DEVICE AttentionLayout headsFirst(int64_t heads, int64_t tq,
                                                    int64_t tk, int64_t d,
                                                    int64_t dv) {
    AttentionLayout l;
    l.q = l.dq = AttentionStrides::headsFirst(heads, tq, d);
    l.k = l.dk = AttentionStrides::headsFirst(heads, tk, d);
    l.v = l.dv = AttentionStrides::headsFirst(heads, tk, dv);
    l.o = AttentionStrides::headsFirst(heads, tq, dv);
    return l;
  }
  /// This layout, or heads first when it is default-constructed.
  TCC_HOST_DEVICE AttentionLayout resolve(int64_t heads, int64_t tq,
                                          int64_t tk, int64_t d,
                                          int64_t dv) const {
    return q.row == 0 ? headsFirst(heads, tq, tk, d, dv) : *this;
  }
};

} // namespace tcc::kernels

#endif // TCC_KERNELS_ATTENTION_LAYOUT_H
