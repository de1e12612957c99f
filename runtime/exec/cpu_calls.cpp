//===- cpu_calls.cpp - the CPU backend's library calls --------------------===//

#include "exec/cpu_calls.h"
#include "exec/pack_calls.h"
#include "plan/calls.h"

#include "kernels/cpu/cpu_kernels.h"
#include "kernels/dropout_hash.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace tcc::rt {

using data::DType;

namespace {

/// Integer ids/labels as int64 (the CPU kernels' type).
const int64_t *asI64(const Value &v, const uint8_t *p,
                     std::vector<int64_t> &scratch) {
  if (v.dtype == DType::I64)
    return reinterpret_cast<const int64_t *>(p);
  const int32_t *q = reinterpret_cast<const int32_t *>(p);
  scratch.assign(q, q + v.elements);
  return scratch.data();
}

int64_t readInt(const Value &v, const uint8_t *p, int64_t i) {
  if (v.dtype == DType::I64)
    return reinterpret_cast<const int64_t *>(p)[i];
  return reinterpret_cast<const int32_t *>(p)[i];
}

/// With `rows` (packed tokens), element i of packed row i / width is
/// hashed as element rows[i / width] * width + i % width of the unpacked
/// input, and rows past the count are zero.
template <class T>
void dropout(const T *x, T *y, uint8_t *mask, int64_t n, double ratio,
             uint64_t seed, const int32_t *rows, int64_t width) {
  uint32_t threshold = dropoutKeepThreshold(ratio);
  const T scale = static_cast<T>(1.0 / (1.0 - ratio));
  for (int64_t i = 0; i < n; ++i) {
    int64_t index = i;
    if (rows)
      index = rows[i / width] < 0
                  ? -1
                  : int64_t(rows[i / width]) * width + i % width;
    bool keep = index >= 0 &&
                dropoutKeep(seed, static_cast<uint64_t>(index), threshold);
    if (mask)
      mask[i] = keep;
    y[i] = keep ? x[i] * scale : T(0);
  }
}

/// Writes rows [valid, total) of `out` (rows of `rowElems` floats) as zero:
/// what a call over packed token rows skips.
void zeroRows(float *out, int64_t valid, int64_t total, int64_t rowElems) {
  if (out && valid < total)
    std::memset(out + valid * rowElems, 0,
                size_t((total - valid) * rowElems) * sizeof(float));
}

} // namespace

void runCall(const Artifact &artifact, const Function &fn, size_t s,
             uint8_t *const *ptrs, int64_t &tokens) {
  const Step &step = fn.steps[s];
  const Attrs &a = step.attrs;
  // Rows of `total` that hold packed tokens: `tokens` when the call runs
  // over packed token rows and `total` is their capacity, else all.
  auto validRows = [&](int64_t total) {
    return step.tokenRows > 0 && total == step.tokenRows
               ? std::min(tokens, total)
               : total;
  };
  auto in = [&](size_t i) -> const Value & {
    return fn.values[step.inputs[i]];
  };
  auto out = [&](size_t i) -> const Value & {
    return fn.values[step.outputs[i]];
  };
  auto fin = [&](size_t i) -> const float * {
    return step.inputs[i] < 0
               ? nullptr
               : reinterpret_cast<const float *>(ptrs[step.inputs[i]]);
  };
  auto fout = [&](size_t i) -> float * {
    return step.outputs[i] < 0
               ? nullptr
               : reinterpret_cast<float *>(ptrs[step.outputs[i]]);
  };
  auto where = [&] {
    return fn.name + " step " + std::to_string(s) + " (" + opName(step.op) +
           "): ";
  };
  // An optimizer update's `skip` flag (dynamic loss scaling's overflow):
  // set, the results are the operands, copied unless updated in place.
  auto skipped = [&](size_t i) {
    return step.inputs[i] >= 0 && *ptrs[step.inputs[i]] != 0;
  };
  auto keep = [&](std::initializer_list<std::pair<size_t, size_t>> pairs) {
    for (auto [i, o] : pairs)
      if (step.inputs[i] >= 0 && step.outputs[o] >= 0 &&
          ptrs[step.inputs[i]] != ptrs[step.outputs[o]])
        std::memcpy(ptrs[step.outputs[o]], ptrs[step.inputs[i]],
                    size_t(in(i).bytes));
  };
  // An optimizer update's new_working result (16 bits, never widened).
  auto working = [&](size_t o) {
    cpu::WorkingCopy w;
    if (step.outputs[o] >= 0) {
      w.data = reinterpret_cast<uint16_t *>(ptrs[step.outputs[o]]);
      w.bf16 = out(o).dtype == DType::BF16;
    }
    return w;
  };
  // "input 'labels'" for a batch input (or a reshape of one), else the value.
  auto name = [&](size_t i) {
    const Value &v = in(i);
    if (v.storage == Storage::Input)
      return "input '" + fn.inputs[v.index].name + "'";
    if (v.storage == Storage::Param)
      return "param '" + artifact.params[v.index].name + "'";
    return "value " + std::to_string(step.inputs[i]);
  };
  std::vector<int64_t> scratch;

  switch (step.op) {
  case Op::Matmul: {
    const Value &l = in(0), &r = in(1), &o = out(0);
    size_t lr = l.shape.size(), orank = o.shape.size();
    int64_t m = o.shape[orank - 2], n = o.shape[orank - 1];
    int64_t k = l.shape[a.transposeLhs ? lr - 2 : lr - 1];
    std::vector<int64_t> ob(o.shape.begin(), o.shape.end() - 2);
    std::vector<int64_t> lmap =
        batchMap({l.shape.begin(), l.shape.end() - 2}, ob);
    std::vector<int64_t> rmap =
        batchMap({r.shape.begin(), r.shape.end() - 2}, ob);
    int64_t batches = int64_t(lmap.size());
    int64_t ls = uniformStride(lmap), rs = uniformStride(rmap);
    const float *pa = fin(0), *pb = fin(1);
    float *pc = fout(0);
    if (ls == 1 && rs == 0 && !a.transposeLhs) {
      // [..., m, k] @ [k, n]: one GEMM over all rows (the valid ones of
      // packed tokens).
      int64_t rows = validRows(batches * m);
      cpu::gemm(false, a.transposeRhs, 1, rows, n, k, 1.0f, pa, 0, pb, 0, 0.0f,
                pc, 0);
      zeroRows(pc, rows, batches * m, n);
    } else if (ls == 1 && rs == 1 && a.transposeLhs &&
               step.tokenRows == batches * k) {
      // A weight gradient over packed tokens, [b, t, m]^T @ [b, t, n] per
      // batch (summed over b next): the batches past the valid tokens hold
      // only zero rows.
      int64_t used = (validRows(batches * k) + k - 1) / k;
      cpu::gemm(true, a.transposeRhs, used, m, n, k, 1.0f, pa, m * k, pb,
                k * n, 0.0f, pc, m * n);
      zeroRows(pc, used, batches, m * n);
    } else if (ls >= 0 && rs >= 0) {
      cpu::gemm(a.transposeLhs, a.transposeRhs, batches, m, n, k, 1.0f, pa,
                ls * m * k, pb, rs * k * n, 0.0f, pc, m * n);
    } else {
      for (int64_t b = 0; b < batches; ++b)
        cpu::gemm(a.transposeLhs, a.transposeRhs, 1, m, n, k, 1.0f,
                  pa + lmap[b] * m * k, 0, pb + rmap[b] * k * n, 0, 0.0f,
                  pc + b * m * n, 0);
    }
    return;
  }
  case Op::Gemm: {
    const Value &o = out(0);
    int64_t m = o.shape[0], n = o.shape[1];
    int64_t k = in(0).shape[a.transposeA ? 0 : 1];
    float *pc = fout(0);
    const Value *c = operand(fn, step.inputs, 2);
    // The output starts as beta * C + bias (C broadcast, bias on every
    // row); the BLAS adds the product to it.
    float beta = 0.0f;
    const float *bias = fin(3);
    if ((c && a.beta != 0) || bias) {
      const float *pcIn = c && a.beta != 0 ? fin(2) : nullptr;
      size_t cr = pcIn ? c->shape.size() : 0;
      int64_t dm = cr == 2 ? c->shape[0] : 1, dn = cr >= 1 ? c->shape[cr - 1] : 1;
      float cb = static_cast<float>(a.beta);
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          float v = pcIn ? pcIn[(dm == 1 ? 0 : i) * dn + (dn == 1 ? 0 : j)]
                         : 0.0f;
          if (bias)
            v = (pcIn ? cb * v : 0.0f) + bias[j];
          pc[i * n + j] = v;
        }
      beta = bias ? 1.0f : cb;
    }
    // Packed token rows: m of them, or the contraction's k.
    int64_t rows = a.transposeA ? m : validRows(m);
    int64_t kk = a.transposeA ? validRows(k) : k;
    cpu::gemm(a.transposeA, a.transposeB, 1, rows, n, kk,
              static_cast<float>(a.alpha), fin(0), 0, fin(1), 0, beta, pc, 0);
    zeroRows(pc, rows, m, n);
    if (step.outputs.size() > 1 && step.outputs[1] >= 0)
      cpu::gemm_row_sums(a.transposeA, m, kk, fin(0), fout(1));
    return;
  }
  case Op::LayerNorm:
  case Op::LayerNormGrad: {
    const Value &x = in(0);
    int64_t total = product(x.shape, 0, a.axis);
    int64_t rows = validRows(total);
    int64_t len = product(x.shape, a.axis, x.shape.size());
    if (step.op == Op::LayerNorm)
      cpu::layer_norm_fwd(fin(0), fin(1), fin(2), fout(0), nullptr, nullptr,
                          rows, len, a.epsilon);
    else
      cpu::layer_norm_bwd(fin(0), fin(1), fin(2), fin(3), nullptr, nullptr,
                          fout(0), fout(1), fout(2), fout(3), rows, len,
                          a.epsilon);
    zeroRows(fout(0), rows, total, len);
    return;
  }
  case Op::Conv:
    cpu::conv2d_fwd(windowShape(fn, step), fin(0), fin(1), fin(2), fout(0));
    return;
  case Op::ConvGrad:
    cpu::conv2d_bwd(windowShape(fn, step), fin(0), fin(1), fin(2), fout(0),
                    fout(1), fout(2));
    return;
  case Op::MaxPool:
    cpu::max_pool2d_fwd(windowShape(fn, step), fin(0), fout(0));
    return;
  case Op::MaxPoolGrad:
    cpu::max_pool2d_bwd(windowShape(fn, step), fin(0), fin(1), fout(0));
    return;
  case Op::AvgPool:
    cpu::avg_pool2d_fwd(windowShape(fn, step), fin(0), fout(0));
    return;
  case Op::AvgPoolGrad:
    cpu::avg_pool2d_bwd(windowShape(fn, step), fin(1), fout(0));
    return;
  case Op::Softmax:
  case Op::SoftmaxGrad:
  case Op::LogSoftmax:
  case Op::LogSoftmaxGrad: {
    const Value &x = in(0);
    size_t rank = x.shape.size();
    size_t axis = rank == 0 ? 0 : size_t(a.axis);
    int64_t len = rank == 0 ? 1 : x.shape[axis];
    int64_t rows = len == 0 ? 0 : x.elements / len;
    int64_t inner = rank == 0 ? 1 : product(x.shape, axis + 1, rank);
    bool binary = step.op == Op::SoftmaxGrad || step.op == Op::LogSoftmaxGrad;
    // Over another axis than the last: the rows are strided by `inner`;
    // gather them contiguous, run the row kernel, scatter the result back.
    std::vector<float> x0, x1, y;
    auto gather = [&](const float *src, std::vector<float> &dst) {
      dst.resize(size_t(x.elements));
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t l = 0; l < len; ++l)
          dst[size_t(r * len + l)] =
              src[(r / inner * len + l) * inner + r % inner];
      return dst.data();
    };
    bool strided = inner != 1;
    int64_t total = rows;
    if (!strided)
      rows = validRows(total);
    const float *p0 = strided ? gather(fin(0), x0) : fin(0);
    const float *p1 = binary ? (strided ? gather(fin(1), x1) : fin(1)) : nullptr;
    if (strided)
      y.resize(size_t(x.elements));
    float *q = strided ? y.data() : fout(0);
    if (step.op == Op::Softmax)
      cpu::softmax_rows(p0, q, rows, len);
    else if (step.op == Op::LogSoftmax)
      cpu::log_softmax_rows(p0, q, rows, len);
    else if (step.op == Op::SoftmaxGrad)
      cpu::softmax_grad_rows(p0, p1, q, rows, len);
    else
      cpu::log_softmax_grad_rows(p0, p1, q, rows, len);
    if (strided)
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t l = 0; l < len; ++l)
          fout(0)[(r / inner * len + l) * inner + r % inner] =
              y[size_t(r * len + l)];
    else
      zeroRows(fout(0), rows, total, len);
    return;
  }
  case Op::Attention:
  case Op::AttentionGrad:
  case Op::AttentionQkvGrad: {
    bool grad = step.op != Op::Attention;
    const AttentionCall c = attentionCall(fn, step);
    cpu::KeyMask mask;
    size_t maskIndex = c.keyMask;
    if (const Value *mv = operand(fn, step.inputs, maskIndex)) {
      if (mv->dtype == DType::Bool)
        mask.keep = ptrs[step.inputs[maskIndex]];
      else if (mv->dtype == DType::I32) {
        mask.cuSeqlens =
            reinterpret_cast<const int32_t *>(ptrs[step.inputs[maskIndex]]);
        mask.sequences = mv->elements - 1;
      }
      else
        mask.bias = fin(maskIndex);
    }
    const float *qp = fin(c.query) + c.offset[0],
                *kp = fin(c.key) + c.offset[1],
                *vp = fin(c.value) + c.offset[2];
    if (!grad)
      cpu::attention_fwd(qp, kp, vp, fout(0), c.batch, c.heads, c.tq, c.tk,
                         c.d, c.dv, a.scale, a.causal, mask, c.layout);
    else
      cpu::attention_bwd(qp, kp, vp, fin(c.resultGrad),
                         fout(c.gradOutput[0]) + c.gradOffset[0],
                         fout(c.gradOutput[1]) + c.gradOffset[1],
                         fout(c.gradOutput[2]) + c.gradOffset[2], c.batch,
                         c.heads, c.tq, c.tk, c.d, c.dv, a.scale, a.causal,
                         mask, c.layout);
    return;
  }
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad: {
    const Value &logits = in(0), &labels = in(1);
    int64_t classes = logits.shape.back();
    int64_t rows = validRows(labels.elements);
    const int64_t *ids = asI64(labels, ptrs[step.inputs[1]], scratch);
    int64_t badRow;
    if (step.op == Op::CrossEntropy)
      badRow = cpu::cross_entropy_fwd(fin(0), ids, rows, classes,
                                      a.ignoreIndex, fout(0), fout(1));
    else
      badRow = cpu::cross_entropy_grad(fin(0), ids, fin(2)[0], fout(0), rows,
                                       classes, a.ignoreIndex);
    if (step.op == Op::CrossEntropyGrad)
      zeroRows(fout(0), rows, labels.elements, classes);
    if (badRow >= 0)
      fail(TCC_ERROR_DATA,
           where() + "label " + std::to_string(ids[badRow]) + " in row " +
               std::to_string(badRow) + " of " + name(1) +
               " is out of range for " + std::to_string(classes) +
               " classes (and is not ignore_index " +
               std::to_string(a.ignoreIndex) + ")");
    return;
  }
  case Op::PackIndex: {
    const Value &mask = in(0);
    int64_t bad = cpu::pack_index(
        mask.dtype == DType::Bool ? ptrs[step.inputs[0]] : nullptr,
        mask.dtype == DType::Bool ? nullptr : fin(0), mask.shape[0],
        mask.shape[1], reinterpret_cast<int32_t *>(ptrs[step.outputs[0]]),
        reinterpret_cast<int32_t *>(ptrs[step.outputs[1]]));
    if (bad >= 0)
      fail(TCC_ERROR_DATA,
           packIndexError(where(), name(0), fin(0)[bad], bad, mask.shape[1]));
    tokens = reinterpret_cast<const int32_t *>(
        ptrs[step.outputs[1]])[mask.shape[0]];
    return;
  }
  case Op::SegmentIndex: {
    const Value &pos = in(0);
    int64_t bad = cpu::segment_index(
        ptrs[step.inputs[0]], pos.dtype == DType::I64, pos.shape[0],
        pos.shape[1], reinterpret_cast<int32_t *>(ptrs[step.outputs[0]]));
    if (bad >= 0)
      fail(TCC_ERROR_DATA,
           segmentIndexError(where(), name(0),
                             readInt(pos, ptrs[step.inputs[0]], bad), bad,
                             pos.shape[1]));
    return;
  }
  case Op::Pack:
  case Op::Unpack: {
    const Value &x = in(0), &rows = in(1);
    int64_t rowBytes = x.bytes / rows.elements;
    const auto *index = reinterpret_cast<const int32_t *>(ptrs[step.inputs[1]]);
    if (step.op == Op::Unpack) {
      int64_t bad = cpu::unpack_rows(ptrs[step.inputs[0]], index,
                                     rows.elements, rowBytes, a.seq,
                                     a.readBegin, a.readEnd,
                                     ptrs[step.outputs[0]]);
      if (bad >= 0)
        fail(TCC_ERROR_DATA, unpackReadError(where(), bad, a.seq));
      return;
    }
    uint64_t fill = scalarBits(x.dtype, a.fill);
    int64_t elemBytes = int64_t(data::dtypeSize(x.dtype));
    bool floats = packComparesFloats(x.dtype);
    int64_t bad = cpu::pack_rows(
        ptrs[step.inputs[0]], index, rows.elements, rowBytes,
        reinterpret_cast<const uint8_t *>(&fill), elemBytes, a.checkFill,
        floats, ptrs[step.outputs[0]]);
    if (bad >= 0)
      fail(TCC_ERROR_DATA,
           packFillError(where(), name(0), floats, bad,
                         floats ? 0
                                : readInt(x, ptrs[step.inputs[0]],
                                          bad * (rowBytes / elemBytes)),
                         int64_t(a.fill)));
    return;
  }
  case Op::Embedding: {
    const Value &table = in(0), &idv = in(1);
    const int64_t *ids = asI64(idv, ptrs[step.inputs[1]], scratch);
    int64_t bad = cpu::gather_rows(fin(0), ids, idv.elements, table.shape[0],
                                   table.shape[1], fout(0));
    if (bad >= 0)
      fail(TCC_ERROR_DATA,
           where() + "id " +
               std::to_string(readInt(idv, ptrs[step.inputs[1]], bad)) +
               " in row " + std::to_string(bad) + " of " + name(1) +
               " is out of range for a vocabulary of " +
               std::to_string(table.shape[0]));
    return;
  }
  case Op::GatherGrad: {
    const Value &idv = in(0), &o = out(0);
    const int64_t *ids = asI64(idv, ptrs[step.inputs[0]], scratch);
    int64_t vocab = o.shape[0];
    int64_t bad = cpu::scatter_add_rows(ids, fin(1), idv.elements, vocab,
                                        product(o.shape, 1, o.shape.size()),
                                        fout(0));
    if (bad >= 0)
      fail(TCC_ERROR_DATA, where() + "index " + std::to_string(ids[bad]) +
                               " in row " + std::to_string(bad) + " of " +
                               name(0) + " is out of range for dim 0 of size " +
                               std::to_string(vocab));
    return;
  }
  case Op::Dropout: {
    const Value &x = in(0);
    uint64_t seed = static_cast<uint64_t>(a.seed);
    if (step.inputs[1] >= 0)
      seed = dropoutSeed(seed, static_cast<uint64_t>(*reinterpret_cast<
                                   const int64_t *>(ptrs[step.inputs[1]])));
    uint8_t *mask = step.outputs[1] < 0 ? nullptr : ptrs[step.outputs[1]];
    const Value *rowsValue = operand(fn, step.inputs, 2);
    const auto *rows = rowsValue ? reinterpret_cast<const int32_t *>(
                                       ptrs[step.inputs[2]])
                                 : nullptr;
    int64_t width = rowsValue ? x.elements / rowsValue->elements : 1;
    if (x.dtype == DType::F64)
      dropout(reinterpret_cast<const double *>(ptrs[step.inputs[0]]),
              reinterpret_cast<double *>(ptrs[step.outputs[0]]), mask,
              x.elements, a.ratio, seed, rows, width);
    else
      dropout(fin(0), fout(0), mask, x.elements, a.ratio, seed, rows, width);
    return;
  }
  case Op::SgdUpdate: {
    // A block update changes the elements [off, off + n) only: the rest
    // pass through (copied first unless updated in place).
    bool block = a.elementOffset != 0 || in(1).elements != in(0).elements;
    if (skipped(4) || block)
      keep({{0, 0}, {3, 1}, {5, 2}});
    if (skipped(4))
      return;
    int64_t off = a.elementOffset;
    auto at = [&](auto *p) { return p ? p + off : p; };
    cpu::WorkingCopy w = working(2);
    w.data = at(w.data);
    double lr = *reinterpret_cast<const double *>(ptrs[step.inputs[2]]);
    cpu::sgd_update(at(fin(0)), fin(1), at(fin(3)), at(fout(0)), at(fout(1)),
                    in(1).elements, lr, a.momentum, a.weightDecay, a.nesterov,
                    w);
    return;
  }
  case Op::AdamwUpdate: {
    bool block = a.elementOffset != 0 || in(1).elements != in(0).elements;
    if (skipped(6) || block)
      keep({{0, 0}, {2, 1}, {3, 2}, {7, 3}});
    if (skipped(6))
      return;
    int64_t off = a.elementOffset;
    auto at = [&](auto *p) { return p ? p + off : p; };
    cpu::WorkingCopy w = working(3);
    w.data = at(w.data);
    double lr = *reinterpret_cast<const double *>(ptrs[step.inputs[4]]);
    int64_t t = *reinterpret_cast<const int64_t *>(ptrs[step.inputs[5]]);
    if (!cpu::adamw_update(at(fin(0)), fin(1), at(fin(2)), at(fin(3)),
                           at(fout(0)), at(fout(1)), at(fout(2)),
                           in(1).elements, lr, t, a.beta1, a.beta2, a.eps,
                           a.weightDecay, w))
      fail(TCC_ERROR_FORMAT,
           where() + "step " + std::to_string(t) +
               " is not a valid AdamW step (the first update is step 1): the "
               "plan computes the step operand wrongly");
    return;
  }
  }
}

} // namespace tcc::rt
