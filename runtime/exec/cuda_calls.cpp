//===- cuda_calls.cpp - the CUDA backend's library calls -------------------===//

#include "exec/cuda_calls.h"
#include "exec/pack_calls.h"
#include "exec/zero.h"
#include "plan/calls.h"

#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/window_kernels.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace tcc::rt {

using data::DType;

namespace {

bool isHalf(DType t) { return t == DType::BF16 || t == DType::F16; }

/// The kernels' storage type of a float dtype (f32, bf16, f16).
cuda::FloatType floatType(DType t) {
  return t == DType::BF16  ? cuda::FloatType::BF16
         : t == DType::F16 ? cuda::FloatType::F16
                           : cuda::FloatType::F32;
}

cuda::GemmDType gemmType(DType t) {
  return t == DType::BF16  ? cuda::GemmDType::BF16
         : t == DType::F16 ? cuda::GemmDType::F16
                           : cuda::GemmDType::F32;
}

/// The largest power of two <= 16 dividing every one of `bytes`, at least
/// `least` (the element size).
int alignmentOf(std::initializer_list<int64_t> bytes, int least) {
  int a = 16;
  for (int64_t b : bytes)
    while (a > least && b % a != 0)
      a /= 2;
  return a;
}

const float *fptr(uint8_t *const *ptrs, int64_t id) {
  return id < 0 ? nullptr : reinterpret_cast<const float *>(ptrs[id]);
}

const void *vptr(uint8_t *const *ptrs, int64_t id) {
  return id < 0 ? nullptr : ptrs[id];
}

} // namespace

bool writesErrorWord(Op op) {
  return op == Op::CrossEntropy || op == Op::CrossEntropyGrad ||
         op == Op::Embedding || op == Op::GatherGrad || op == Op::AdamwUpdate ||
         op == Op::PackIndex || op == Op::Pack || op == Op::Unpack ||
         op == Op::SegmentIndex;
}

cuda::WorkingCopy workingCopy(const Function &fn, const Step &step,
                              uint8_t *const *ptrs, size_t wi, size_t wo) {
  cuda::WorkingCopy w;
  if (wo >= step.outputs.size() || step.outputs[wo] < 0 ||
      wi >= step.inputs.size() || step.inputs[wi] < 0)
    return w;
  w.in = ptrs[step.inputs[wi]];
  w.out = ptrs[step.outputs[wo]];
  w.type = floatType(fn.values[step.outputs[wo]].dtype);
  return w;
}

std::string cudaCallUnsupported(const Function &fn, const Step &step) {
  auto value = [&](size_t i) -> const Value & {
    return fn.values[step.inputs[i]];
  };
  std::string op = opName(step.op);
  // pack and unpack move rows of any dtype as bytes; pack_index reads a
  // bool mask or a float bias.
  if (step.op == Op::Pack || step.op == Op::Unpack)
    return "";
  if (step.op == Op::SegmentIndex) {
    DType pt = value(0).dtype;
    if (pt != DType::I64 && pt != DType::I32)
      return "the cuda backend takes segment_index's position_ids of i64 or "
             "i32, not " +
             std::string(data::dtypeName(pt));
    return "";
  }
  if (step.op == Op::PackIndex) {
    DType mt = value(0).dtype;
    if (mt != DType::Bool && mt != DType::F32 && !isHalf(mt))
      return "the cuda backend takes pack_index's key mask of bool, f32, "
             "bf16 or f16, not " +
             std::string(data::dtypeName(mt));
    return "";
  }
  // The float type the op stores (gather_grad's first operand is the
  // indices). bf16/f16 run natively: the kernels load 16 bits, compute in
  // f32 and round each result once. The optimizers keep f32 master weights.
  DType main = value(step.op == Op::GatherGrad ? 1 : 0).dtype;
  bool optimizer = step.op == Op::SgdUpdate || step.op == Op::AdamwUpdate;
  bool f64Ok = step.op == Op::Dropout;
  if (optimizer && main != DType::F32)
    return "the cuda backend runs " + op +
           " on f32 only (mixed precision keeps f32 master weights and "
           "optimizer state), not " +
           data::dtypeName(main);
  if (main != DType::F32 && !isHalf(main) && !(f64Ok && main == DType::F64))
    return "the cuda backend runs " + op + " on f32, bf16" +
           (f64Ok ? std::string(", f16 and f64") : std::string(" and f16")) +
           " only, not " + data::dtypeName(main);
  switch (step.op) {
  case Op::Conv:
  case Op::ConvGrad:
  case Op::MaxPool:
  case Op::MaxPoolGrad:
  case Op::AvgPool:
  case Op::AvgPoolGrad:
    if (main != DType::F32)
      return "the cuda backend runs " + op + " on f32 only, not " +
             data::dtypeName(main);
    break;
  case Op::Softmax:
  case Op::SoftmaxGrad:
  case Op::LogSoftmax:
  case Op::LogSoftmaxGrad:
    if (step.attrs.axis != int64_t(value(0).shape.size()) - 1)
      return "the cuda backend runs " + op + " over the last axis only, not " +
             "axis " + std::to_string(step.attrs.axis);
    break;
  case Op::GatherGrad:
    if (step.attrs.axis != 0)
      return "the cuda backend runs gather_grad on axis 0 only (the embedding "
             "gradient), not axis " +
             std::to_string(step.attrs.axis);
    break;
  case Op::Attention:
  case Op::AttentionGrad:
  case Op::AttentionQkvGrad: {
    const AttentionCall c = attentionCall(fn, step);
    if (c.d > 128 || c.dv > 128)
      return "the cuda backend runs attention with head dims up to 128, not " +
             std::to_string(c.d) + " / " + std::to_string(c.dv);
    size_t mi = c.keyMask;
    if (mi < step.inputs.size() && step.inputs[mi] >= 0) {
      DType mt = value(mi).dtype;
      if (mt != DType::Bool && mt != DType::F32 && !isHalf(mt) &&
          mt != DType::I32)
        return "the cuda backend takes an attention key mask of bool, f32, "
               "bf16 or f16 (or packed tokens' i32 cu_seqlens), not " +
               std::string(data::dtypeName(mt));
    }
    break;
  }
  case Op::CrossEntropy:
    for (int64_t o : step.outputs)
      if (o >= 0 && fn.values[o].dtype != DType::F32)
        return "the cuda backend writes cross_entropy's loss_sum and count "
               "in f32 only, not " +
               std::string(data::dtypeName(fn.values[o].dtype));
    break;
  case Op::CrossEntropyGrad: {
    DType seed = value(2).dtype;
    if (seed != DType::F32 && !isHalf(seed))
      return "the cuda backend takes cross_entropy_grad's loss_sum_grad in "
             "f32, bf16 or f16, not " +
             std::string(data::dtypeName(seed));
    break;
  }
  case Op::Gemm: {
    const Value &o = fn.values[step.outputs[0]];
    int64_t m = o.shape[0], n = o.shape[1];
    if (step.inputs.size() > 2 && step.inputs[2] >= 0 && step.attrs.beta != 0) {
      const Value &c = value(2);
      size_t cr = c.shape.size();
      int64_t dm = cr == 2 ? c.shape[0] : 1, dn = cr >= 1 ? c.shape[cr - 1] : 1;
      bool full = dm == m && dn == n;
      bool row = dm == 1 && dn == n && step.attrs.beta == 1.0;
      bool bias = step.inputs.size() > 3 && step.inputs[3] >= 0;
      if (!full && (!row || bias))
        return "the cuda backend adds a gemm's c of shape [m, n], or of [n] / "
               "[1, n] with beta 1 and no bias, not " +
               shapeString(c.shape) + " with beta " +
               std::to_string(step.attrs.beta) + (bias ? " and a bias" : "");
    }
    int64_t k = value(0).shape[step.attrs.transposeA ? 0 : 1];
    if (k == 0 && o.elements > 0)
      return "the cuda backend runs no gemm with k = 0";
    break;
  }
  default:
    break;
  }
  return "";
}

namespace {
/// Zero-fills bytes [valid, total) of `p`: the rows a step over packed
/// tokens skips.
int zeroTail(void *p, int64_t valid, int64_t total, cudaStream_t stream) {
  if (!p || valid >= total)
    return 0;
  return cudaMemsetAsync(static_cast<uint8_t *>(p) + valid, 0,
                         size_t(total - valid), stream);
}

/// TCC_CUDA_TF32=1 lets fp32 GEMMs run on TF32 tensor cores (10-bit
/// mantissa products, fp32 accumulation), as PyTorch's
/// torch.backends.cuda.matmul.allow_tf32; off by default, like PyTorch's.
bool allowTF32() {
  const char *v = std::getenv("TCC_CUDA_TF32");
  return v && std::string(v) == "1";
}
} // namespace

int64_t TokenBuckets::rows(int b) const {
  int64_t r = (capacity * b + count - 1) / count;
  r = (r + 63) / 64 * 64;
  return std::min(r, capacity);
}

int TokenBuckets::of(int64_t tokens) const {
  for (int b = 1; b < count; ++b)
    if (rows(b) >= tokens)
      return b;
  return count;
}

int64_t TokenBuckets::rowsOf(const Step &step, int64_t total, int b) const {
  if (b <= 0 || count <= 0 || step.tokenRows <= 0 || total != step.tokenRows)
    return total;
  return std::min(total, rows(b));
}

TokenBuckets TokenBuckets::of(const Function &fn) {
  TokenBuckets t;
  const char *env = std::getenv("TCC_CUDA_TOKEN_BUCKETS");
  int count = env ? std::atoi(env) : 8;
  if (count <= 0)
    return t;
  for (const Step &step : fn.steps)
    if (step.kind == Step::Call && step.op == Op::PackIndex) {
      const Value &mask = fn.values[step.inputs[0]];
      t.capacity = mask.shape[0] * mask.shape[1];
      t.count = int(std::min<int64_t>(count, std::max<int64_t>(t.capacity, 1)));
      break;
    }
  return t;
}

CallPlan planCall(const Function &fn, size_t s, const cuda::GemmContext &gemm,
                  const cuda::CudnnContext *cudnn, const TokenBuckets &buckets,
                  const std::string &where) {
  const Step &step = fn.steps[s];
  const Attrs &a = step.attrs;
  auto in = [&](size_t i) -> const Value & {
    return fn.values[step.inputs[i]];
  };
  const Value &o = fn.values[step.outputs[0]];
  CallPlan plan;
  cuda::GemmDesc desc;
  desc.allowTF32 = allowTF32();
  switch (step.op) {
  case Op::Matmul: {
    GemmStep &g = plan.gemm;
    const Value &l = in(0), &r = in(1);
    size_t lr = l.shape.size(), orank = o.shape.size();
    g.m = o.shape[orank - 2], g.n = o.shape[orank - 1];
    g.k = l.shape[a.transposeLhs ? lr - 2 : lr - 1];
    if (o.elements == 0) {
      g.empty = true;
      return plan;
    }
    if (g.k == 0) {
      g.zero = true;
      return plan;
    }
    desc.dtype = gemmType(o.dtype);
    g.elementBytes = int64_t(data::dtypeSize(o.dtype));
    std::vector<int64_t> ob(o.shape.begin(), o.shape.end() - 2);
    g.lmap = batchMap({l.shape.begin(), l.shape.end() - 2}, ob);
    g.rmap = batchMap({r.shape.begin(), r.shape.end() - 2}, ob);
    int64_t batches = int64_t(g.lmap.size());
    int64_t ls = uniformStride(g.lmap), rs = uniformStride(g.rmap);
    desc.transA = a.transposeLhs;
    desc.transB = a.transposeRhs;
    desc.n = g.n;
    desc.k = g.k;
    if (ls == 1 && rs == 0 && !a.transposeLhs) {
      desc.m = batches * g.m; // [..., m, k] @ [k, n]: one GEMM over all rows
      if (step.tokenRows == desc.m)
        g.tokenDim = TokenDim::M;
    } else if (ls >= 0 && rs >= 0) {
      // A weight gradient over packed tokens, [b, t, m]^T @ [b, t, n] per
      // batch (summed over b next): the batches past the tokens are zero.
      if (ls == 1 && rs == 1 && a.transposeLhs &&
          step.tokenRows == batches * g.k)
        g.tokenDim = TokenDim::Batch;
      desc.m = g.m;
      desc.batch = batches;
      desc.strideA = ls * g.m * g.k;
      desc.strideB = rs * g.k * g.n;
      desc.strideC = g.m * g.n;
    } else {
      desc.m = g.m;
      g.loop = true;
      const int64_t e = int64_t(data::dtypeSize(o.dtype));
      desc.alignment =
          alignmentOf({g.m * g.k * e, g.k * g.n * e, g.m * g.n * e}, int(e));
    }
    if (!g.loop)
      g.lmap.clear(), g.rmap.clear();
    break;
  }
  case Op::Gemm: {
    GemmStep &g = plan.gemm;
    g.m = o.shape[0], g.n = o.shape[1];
    g.k = in(0).shape[a.transposeA ? 0 : 1];
    if (o.elements == 0) {
      g.empty = true;
      return plan;
    }
    g.alpha = static_cast<float>(a.alpha);
    desc.dtype = gemmType(o.dtype);
    g.elementBytes = int64_t(data::dtypeSize(o.dtype));
    if (step.inputs.size() > 2 && step.inputs[2] >= 0 && a.beta != 0) {
      const Value &c = in(2);
      size_t cr = c.shape.size();
      int64_t dm = cr == 2 ? c.shape[0] : 1;
      if (dm == g.m && c.elements == g.m * g.n) {
        g.fullC = true;
        g.beta = static_cast<float>(a.beta);
      } else {
        g.biasC = true; // [n] / [1, n] with beta 1 (cudaCallUnsupported)
        desc.epilogue = cuda::Epilogue::Bias;
      }
    }
    if (step.inputs.size() > 3 && step.inputs[3] >= 0) {
      g.bias = true; // never beside biasC (cudaCallUnsupported)
      desc.epilogue = cuda::Epilogue::Bias;
    }
    if (step.outputs.size() > 1 && step.outputs[1] >= 0) {
      g.biasGrad = GemmStep::BiasGrad::Epilogue; // never beside a bias
      desc.epilogue = cuda::Epilogue::BGradB;
    }
    desc.transA = a.transposeA;
    desc.transB = a.transposeB;
    desc.m = g.m, desc.n = g.n, desc.k = g.k;
    // Packed token rows: m, or the contraction's k.
    if (step.tokenRows > 0 && !a.transposeA && g.m == step.tokenRows)
      g.tokenDim = TokenDim::M;
    else if (step.tokenRows > 0 && a.transposeA && g.k == step.tokenRows)
      g.tokenDim = TokenDim::K;
    break;
  }
  case Op::LayerNormGrad: {
    const Value &x = in(0);
    plan.workspace = cuda::layer_norm_bwd_workspace_bytes(
        product(x.shape, 0, a.axis), product(x.shape, a.axis, x.shape.size()));
    return plan;
  }
  case Op::Attention:
  case Op::AttentionGrad:
  case Op::AttentionQkvGrad: {
    const bool grad = step.op != Op::Attention;
    const AttentionCall c = attentionCall(fn, step);
    const Value *mask = operand(fn, step.inputs, c.keyMask);
    if (mask && mask->dtype == DType::I32)
      plan.workspace = cuda::attention_varlen_workspace_bytes(
          floatType(in(0).dtype), mask->elements - 1, c.batch, c.heads, c.tq,
          c.d, c.dv, grad);
    else if (grad)
      plan.workspace = cuda::attention_bwd_workspace_bytes(
          c.batch, c.heads, c.tq, c.tk, c.d, c.dv, /*haveForward=*/false);
    return plan;
  }
  case Op::Conv:
  case Op::ConvGrad: {
    cuda::CudnnConvDims dims;
    if (!cudnn || !cuda::cudnnConvDims(windowShape(fn, step), dims,
                                       plan.convOwn))
      return plan;
    plan.conv = cuda::CudnnConvPlan::create(
        *cudnn, dims, step.op == Op::ConvGrad, desc.allowTF32,
        desc.maxWorkspaceBytes, &plan.convOwn);
    if (plan.conv)
      plan.workspace = plan.conv->workspaceBytes();
    return plan;
  }
  case Op::CrossEntropy:
    plan.workspace = cuda::cross_entropy_fwd_workspace_bytes(in(1).elements);
    return plan;
  case Op::GatherGrad:
    plan.workspace =
        cuda::scatter_add_rows_workspace_bytes(in(0).elements, o.shape[0]);
    return plan;
  default:
    return plan;
  }
  GemmStep &g = plan.gemm;
  // The plan and, over packed tokens, one per bucket; false (with `error`)
  // when cuBLASLt refuses one.
  std::string error;
  int64_t failedRows = -1;
  auto makePlans = [&](const cuda::GemmDesc &full) {
    g.bucketPlans.clear();
    g.plan = cuda::GemmPlan::create(gemm, full, &error);
    if (!g.plan)
      return false;
    plan.workspace = g.plan->workspaceBytes();
    if (g.tokenDim == TokenDim::None || buckets.count == 0)
      return true;
    for (int b = 1; b <= buckets.count; ++b) {
      cuda::GemmDesc d = full;
      int64_t rows = std::min(step.tokenRows, buckets.rows(b));
      if (g.tokenDim == TokenDim::M)
        d.m = rows;
      else if (g.tokenDim == TokenDim::K)
        d.k = rows;
      else
        d.batch = (rows + g.k - 1) / g.k;
      g.bucketPlans.push_back(cuda::GemmPlan::create(gemm, d, &error));
      if (!g.bucketPlans.back()) {
        failedRows = rows;
        return false;
      }
      plan.workspace =
          std::max(plan.workspace, g.bucketPlans.back()->workspaceBytes());
    }
    return true;
  };
  bool made = makePlans(desc);
  if (!made && g.biasGrad == GemmStep::BiasGrad::Epilogue) {
    // No BGRADB for this type or shape (the full GEMM's or a bucket's): the
    // plain GEMMs, then the column sums of A ([k, m] stored, op(A) = A^T)
    // in a kernel of their own.
    if (!desc.transA)
      fail(TCC_ERROR_BACKEND,
           where + "cuBLASLt has no bias-gradient epilogue for this GEMM (" +
               error + ") and the cuda backend sums only a transposed a");
    desc.epilogue = cuda::Epilogue::None;
    g.biasGrad = GemmStep::BiasGrad::Kernel;
    failedRows = -1;
    made = makePlans(desc);
  }
  if (!made)
    fail(TCC_ERROR_BACKEND,
         where + "cuBLASLt cannot run this GEMM" +
             (failedRows >= 0
                  ? " over " + std::to_string(failedRows) + " token rows"
                  : std::string()) +
             ": " + error);
  if (g.biasGrad == GemmStep::BiasGrad::Kernel)
    plan.workspace =
        std::max(plan.workspace, cuda::column_sums_workspace_bytes(g.k, g.m));
  return plan;
}

namespace {

int runGemm(const Function &fn, const Step &step, const GemmStep &g,
            uint8_t *const *ptrs, const CallContext &ctx) {
  const cuda::GemmPlan *plan = g.plan.get();
  if (ctx.bucket > 0 && !g.bucketPlans.empty())
    plan = g.bucketPlans[size_t(ctx.bucket - 1)].get();
  uint8_t *c = ptrs[step.outputs[0]];
  if (g.empty)
    return 0;
  if (g.zero)
    return cudaMemsetAsync(c, 0, size_t(fn.values[step.outputs[0]].bytes),
                           ctx.stream);
  const uint8_t *pa = ptrs[step.inputs[0]], *pb = ptrs[step.inputs[1]];
  void *bias = nullptr;
  const void *cIn = g.fullC ? ptrs[step.inputs[2]] : nullptr;
  if (g.biasC)
    bias = ptrs[step.inputs[2]];
  if (g.bias)
    bias = ptrs[step.inputs[3]];
  if (g.biasGrad == GemmStep::BiasGrad::Epilogue)
    bias = ptrs[step.outputs[1]]; // written by BGRADB
  if (!g.loop) {
    int st = plan->run(pa, pb, c, g.alpha, g.beta, bias, ctx.workspace,
                       ctx.stream, cIn);
    // Over packed tokens: the rows (or batches) past the bucket are zero.
    const cuda::GemmDesc &full = g.plan->desc(), &ran = plan->desc();
    const int64_t e = g.elementBytes;
    if (!st && g.biasGrad == GemmStep::BiasGrad::Kernel)
      st = cuda::column_sums(floatType(fn.values[step.inputs[0]].dtype), pa,
                             ran.k, ran.m, ptrs[step.outputs[1]], ctx.workspace,
                             ctx.stream);
    if (!st && g.tokenDim == TokenDim::M)
      st = zeroTail(c, ran.m * full.n * e, full.m * full.n * e, ctx.stream);
    if (!st && g.tokenDim == TokenDim::Batch)
      st = zeroTail(c, ran.batch * ran.strideC * e,
                    full.batch * full.strideC * e, ctx.stream);
    return st;
  }
  const int64_t e = g.elementBytes;
  for (size_t b = 0; b < g.lmap.size(); ++b) {
    int st = g.plan->run(pa + g.lmap[b] * g.m * g.k * e,
                         pb + g.rmap[b] * g.k * g.n * e,
                         c + int64_t(b) * g.m * g.n * e, 1.0f, 0.0f, nullptr,
                         ctx.workspace, ctx.stream);
    if (st)
      return st;
  }
  return 0;
}

} // namespace

void ConvTally::add(const Step &step, const CallPlan &plan) {
  if (step.kind != Step::Call ||
      (step.op != Op::Conv && step.op != Op::ConvGrad))
    return;
  ++steps;
  if (plan.conv)
    return;
  if (own++ == 0)
    why = plan.convOwn;
}

std::string ConvTally::note(const cuda::CudnnLibrary &library) const {
  if (steps == 0)
    return "";
  std::string line = "conv: " + cuda::convLibraryName(library);
  if (library.loaded && own > 0)
    line += ", " + std::to_string(own) + " of " + std::to_string(steps) +
            " conv steps on tcc kernels (" + why + ")";
  return line + "\n";
}

namespace {

/// One sgd_update or adamw_update launch, of the elements [first, first +
/// count) of its parameter under ZeRO-1 (`shard`; the whole when its count
/// is < 0): the parameter, gradient and working copy from that element on,
/// the optimizer state (zero.h's updateState) holding just those. A block
/// update (attribute element_offset, a gradient smaller than the parameter;
/// never sharded, zero.cpp refuses) changes the elements [element_offset,
/// element_offset + numel(grad)) of the parameter, its state and working
/// copy, the gradient from its first element; the rest pass through,
/// copied first where a result is not updated in place.
cuda::Status enqueueUpdate(const Function &fn, const Step &step,
                           FunctionBinding::Shard shard, uint8_t *const *ptrs,
                           int64_t *error, cudaStream_t st) {
  const Attrs &a = step.attrs;
  bool adamw = step.op == Op::AdamwUpdate;
  size_t workingIn = adamw ? 7 : 5, workingOut = adamw ? 3 : 2;
  const Value &param = fn.values[step.inputs[0]];
  int64_t gradElements = fn.values[step.inputs[1]].elements;
  bool block = a.elementOffset != 0 || gradElements != param.elements;
  // Element offsets of the parameter (and working copy), the gradient and
  // the optimizer state.
  int64_t first = 0, gradFirst = 0, stateFirst = 0;
  if (block) {
    shard = {a.elementOffset, gradElements};
    first = stateFirst = a.elementOffset;
    std::vector<std::pair<size_t, size_t>> pairs = updateState(step);
    pairs.push_back({0, 0});
    pairs.push_back({workingIn, workingOut});
    for (auto [i, o] : pairs) {
      if (i >= step.inputs.size() || o >= step.outputs.size() ||
          step.inputs[i] < 0 || step.outputs[o] < 0 ||
          ptrs[step.inputs[i]] == ptrs[step.outputs[o]])
        continue;
      int e = cudaMemcpyAsync(ptrs[step.outputs[o]], ptrs[step.inputs[i]],
                              size_t(fn.values[step.inputs[i]].bytes),
                              cudaMemcpyDeviceToDevice, st);
      if (e != 0)
        return static_cast<cuda::Status>(e);
    }
  } else {
    if (shard.count < 0)
      shard = {0, param.elements};
    first = gradFirst = shard.first;
  }
  if (shard.count == 0)
    return 0;
  auto at = [&](const std::vector<int64_t> &ids, size_t i,
                int64_t offset) -> uint8_t * {
    if (i >= ids.size() || ids[i] < 0)
      return nullptr;
    return ptrs[ids[i]] +
           size_t(offset) * data::dtypeSize(fn.values[ids[i]].dtype);
  };
  auto in = [&](size_t i, int64_t offset) {
    return reinterpret_cast<float *>(at(step.inputs, i, offset));
  };
  auto out = [&](size_t o, int64_t offset) {
    return reinterpret_cast<float *>(at(step.outputs, o, offset));
  };
  cuda::WorkingCopy working = workingCopy(fn, step, ptrs, workingIn, workingOut);
  if (working.out) {
    working.in = at(step.inputs, workingIn, first);
    working.out = at(step.outputs, workingOut, first);
  }
  if (!adamw)
    return cuda::sgd_update(in(0, first), in(1, gradFirst), in(3, stateFirst),
                            out(0, first), out(1, stateFirst), shard.count,
                            reinterpret_cast<const double *>(in(2, 0)),
                            a.momentum, a.weightDecay, a.nesterov,
                            at(step.inputs, 4, 0), working, st);
  return cuda::adamw_update(
      in(0, first), in(1, gradFirst), in(2, stateFirst), in(3, stateFirst),
      out(0, first), out(1, stateFirst), out(2, stateFirst), shard.count,
      reinterpret_cast<const double *>(in(4, 0)),
      reinterpret_cast<const int64_t *>(in(5, 0)), a.beta1, a.beta2, a.eps,
      a.weightDecay, at(step.inputs, 6, 0), working, error, st);
}

} // namespace

cuda::Status enqueueCall(const Function &fn, size_t s, const CallPlan &plan,
                uint8_t *const *ptrs, const CallContext &ctx) {
  const Step &step = fn.steps[s];
  const Attrs &a = step.attrs;
  cudaStream_t st = ctx.stream;
  auto in = [&](size_t i) -> const Value & {
    return fn.values[step.inputs[i]];
  };
  auto fin = [&](size_t i) {
    return i < step.inputs.size() ? fptr(ptrs, step.inputs[i]) : nullptr;
  };
  auto fout = [&](size_t i) -> float * {
    return i >= step.outputs.size() || step.outputs[i] < 0
               ? nullptr
               : reinterpret_cast<float *>(ptrs[step.outputs[i]]);
  };
  // An optimizer update's skip flag (a bool byte; null when absent).
  auto flag = [&](size_t i) -> const uint8_t * {
    return i < step.inputs.size() && step.inputs[i] >= 0 ? ptrs[step.inputs[i]]
                                                         : nullptr;
  };
  // Untyped operands and results of the float tensors of `type` (absent
  // optional ones null).
  auto vin = [&](size_t i) {
    return i < step.inputs.size() ? vptr(ptrs, step.inputs[i]) : nullptr;
  };
  auto vout = [&](size_t i) -> void * {
    return i >= step.outputs.size() || step.outputs[i] < 0
               ? nullptr
               : ptrs[step.outputs[i]];
  };
  int64_t *error =
      plan.errorSlot < 0 ? nullptr : ctx.errorWords + plan.errorSlot;
  // Rows of `total` this run computes: its token bucket's over packed
  // tokens, else all.
  auto tokenRows = [&](int64_t total) {
    return ctx.buckets ? ctx.buckets->rowsOf(step, total, ctx.bucket) : total;
  };
  switch (step.op) {
  case Op::Matmul:
  case Op::Gemm:
    return runGemm(fn, step, plan.gemm, ptrs, ctx);
  case Op::Conv:
  case Op::ConvGrad:
  case Op::MaxPool:
  case Op::MaxPoolGrad:
  case Op::AvgPool:
  case Op::AvgPoolGrad: {
    const kernels::WindowShape ws = windowShape(fn, step);
    const cuda::CudnnConvPlan *conv = plan.conv.get();
    switch (step.op) {
    case Op::Conv:
      if (conv)
        return conv->forward(fin(0), fin(1), fin(2), fout(0), ctx.workspace);
      return cuda::conv2d_fwd(ws, fin(0), fin(1), fin(2), fout(0), st);
    case Op::ConvGrad:
      if (conv) {
        cuda::Status r = conv->backward(fin(0), fin(1), fin(2), fout(0),
                                        fout(1), ctx.workspace);
        // The bias gradient: conv.cu's per-channel sum.
        return r || !fout(2) ? r
                             : cuda::conv2d_bwd(ws, nullptr, nullptr, fin(2),
                                                nullptr, nullptr, fout(2), st);
      }
      return cuda::conv2d_bwd(ws, fin(0), fin(1), fin(2), fout(0), fout(1),
                              fout(2), st);
    case Op::MaxPool:
      return cuda::max_pool2d_fwd(ws, fin(0), fout(0), st);
    case Op::MaxPoolGrad:
      return cuda::max_pool2d_bwd(ws, fin(0), fin(1), fout(0), st);
    case Op::AvgPool:
      return cuda::avg_pool2d_fwd(ws, fin(0), fout(0), st);
    default:
      return cuda::avg_pool2d_bwd(ws, fin(1), fout(0), st);
    }
  }
  case Op::LayerNorm:
  case Op::LayerNormGrad: {
    const Value &x = in(0);
    const cuda::FloatType type = floatType(x.dtype);
    int64_t total = product(x.shape, 0, a.axis);
    int64_t rows = tokenRows(total);
    int64_t len = product(x.shape, a.axis, x.shape.size());
    const int64_t rowBytes = len * int64_t(cuda::float_type_size(type));
    cuda::Status r =
        step.op == Op::LayerNorm
            ? cuda::layer_norm_fwd(type, vin(0), vin(1), vin(2), vout(0),
                                   nullptr, nullptr, rows, len, a.epsilon, st)
            : cuda::layer_norm_bwd(type, vin(0), vin(1), vin(2), vin(3),
                                   nullptr, nullptr, vout(0),
                                   static_cast<float *>(vout(1)),
                                   static_cast<float *>(vout(2)),
                                   static_cast<float *>(vout(3)),
                                   rows, len, a.epsilon, ctx.workspace, st);
    return r ? r : zeroTail(vout(0), rows * rowBytes, total * rowBytes, st);
  }
  case Op::Softmax:
  case Op::SoftmaxGrad:
  case Op::LogSoftmax:
  case Op::LogSoftmaxGrad: {
    const Value &x = in(0);
    const cuda::FloatType type = floatType(x.dtype);
    int64_t len = x.shape.back();
    int64_t total = len == 0 ? 0 : x.elements / len;
    int64_t rows = tokenRows(total);
    if (rows == 0)
      return 0;
    cuda::Status r;
    if (step.op == Op::Softmax)
      r = cuda::softmax_rows(type, vin(0), vout(0), rows, len, st);
    else if (step.op == Op::LogSoftmax)
      r = cuda::log_softmax_rows(type, vin(0), vout(0), rows, len, st);
    else if (step.op == Op::SoftmaxGrad)
      r = cuda::softmax_grad_rows(type, vin(0), vin(1), vout(0), rows, len,
                                  st);
    else
      r = cuda::log_softmax_grad_rows(type, vin(0), vin(1), vout(0), rows,
                                      len, st);
    const int64_t rowBytes = len * int64_t(cuda::float_type_size(type));
    return r ? r : zeroTail(vout(0), rows * rowBytes, total * rowBytes, st);
  }
  case Op::Attention:
  case Op::AttentionGrad:
  case Op::AttentionQkvGrad: {
    bool grad = step.op != Op::Attention;
    const cuda::FloatType type = floatType(in(0).dtype);
    cuda::KeyMask mask;
    const AttentionCall c = attentionCall(fn, step);
    size_t mi = c.keyMask;
    const int64_t b = c.batch, h = c.heads, tq = c.tq, tk = c.tk, d = c.d,
                  dv = c.dv;
    // Token rows: q, k and v from their first columns; the gradients at
    // theirs (attention_qkv_grad: one tensor).
    const size_t es = cuda::float_type_size(type);
    const void *qp = static_cast<const char *>(vin(c.query)) + c.offset[0] * es,
               *kp = static_cast<const char *>(vin(c.key)) + c.offset[1] * es,
               *vp = static_cast<const char *>(vin(c.value)) + c.offset[2] * es;
    const void *dout = grad ? vin(c.resultGrad) : nullptr;
    void *dq = grad ? static_cast<char *>(vout(c.gradOutput[0])) +
                          c.gradOffset[0] * es
                    : nullptr,
         *dk = grad ? static_cast<char *>(vout(c.gradOutput[1])) +
                          c.gradOffset[1] * es
                    : nullptr,
         *dvp = grad ? static_cast<char *>(vout(c.gradOutput[2])) +
                           c.gradOffset[2] * es
                     : nullptr;
    if (mi < step.inputs.size() && step.inputs[mi] >= 0 &&
        in(mi).dtype == DType::I32) {
      // Packed tokens: the mask is pack_index's cu_seqlens.
      // Packed tokens (one sequence per row) or packed documents.
      auto cu = reinterpret_cast<const int32_t *>(ptrs[step.inputs[mi]]);
      int64_t sequences = in(mi).elements - 1;
      if (!grad)
        return cuda::attention_varlen_fwd(
            type, qp, kp, vp, vout(0), cu, sequences, b, h, tq, d, dv,
            a.scale, a.causal, ctx.workspace, st, cuda::AttentionPath::Auto,
            c.layout);
      return cuda::attention_varlen_bwd(type, qp, kp, vp, dout, dq, dk, dvp, cu,
                                        sequences, b, h, tq, d, dv, a.scale,
                                        a.causal, ctx.workspace, st,
                                        cuda::AttentionPath::Auto, c.layout);
    }
    if (mi < step.inputs.size() && step.inputs[mi] >= 0) {
      if (in(mi).dtype == DType::Bool) {
        mask.keep = ptrs[step.inputs[mi]];
      } else {
        mask.bias = vin(mi);
        mask.biasType = floatType(in(mi).dtype);
      }
    }
    if (!grad)
      return cuda::attention_fwd(type, qp, kp, vp, vout(0), b, h, tq, tk, d,
                                 dv, a.scale, a.causal, mask, nullptr, st,
                                 cuda::AttentionPath::Auto, c.layout);
    return cuda::attention_bwd(type, qp, kp, vp, dout, dq, dk, dvp, b, h, tq,
                               tk, d, dv, a.scale, a.causal, mask, nullptr,
                               nullptr, ctx.workspace, st,
                               cuda::AttentionPath::Auto, c.layout);
  }
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad: {
    const Value &logits = in(0), &labels = in(1);
    const cuda::FloatType type = floatType(logits.dtype);
    int64_t classes = logits.shape.back(), rows = tokenRows(labels.elements);
    const uint8_t *ids = ptrs[step.inputs[1]];
    bool i64 = labels.dtype == DType::I64;
    auto l64 = reinterpret_cast<const int64_t *>(ids);
    auto l32 = reinterpret_cast<const int32_t *>(ids);
    if (step.op == Op::CrossEntropy)
      return i64 ? cuda::cross_entropy_fwd(type, vin(0), l64, rows, classes,
                                           a.ignoreIndex, fout(0), fout(1),
                                           ctx.workspace, error, st)
                 : cuda::cross_entropy_fwd(type, vin(0), l32, rows, classes,
                                           a.ignoreIndex, fout(0), fout(1),
                                           ctx.workspace, error, st);
    const cuda::FloatType seed = floatType(in(2).dtype);
    cuda::Status r =
        i64 ? cuda::cross_entropy_grad(type, vin(0), l64, seed, vin(2),
                                       vout(0), rows, classes, a.ignoreIndex,
                                       error, st)
            : cuda::cross_entropy_grad(type, vin(0), l32, seed, vin(2),
                                       vout(0), rows, classes, a.ignoreIndex,
                                       error, st);
    const int64_t rowBytes = classes * int64_t(cuda::float_type_size(type));
    return r ? r
             : zeroTail(vout(0), rows * rowBytes, labels.elements * rowBytes,
                        st);
  }
  case Op::Embedding: {
    const Value &table = in(0), &idv = in(1);
    const cuda::FloatType type = floatType(table.dtype);
    const uint8_t *ids = ptrs[step.inputs[1]];
    if (idv.dtype == DType::I64)
      return cuda::gather_rows(type, vin(0),
                               reinterpret_cast<const int64_t *>(ids),
                               idv.elements, table.shape[0], table.shape[1],
                               vout(0), error, st);
    return cuda::gather_rows(type, vin(0),
                             reinterpret_cast<const int32_t *>(ids),
                             idv.elements, table.shape[0], table.shape[1],
                             vout(0), error, st);
  }
  case Op::GatherGrad: {
    const Value &idv = in(0), &o = fn.values[step.outputs[0]];
    const cuda::FloatType type = floatType(o.dtype);
    const uint8_t *ids = ptrs[step.inputs[0]];
    int64_t vocab = o.shape[0], dim = product(o.shape, 1, o.shape.size());
    if (idv.dtype == DType::I64)
      return cuda::scatter_add_rows(type,
                                    reinterpret_cast<const int64_t *>(ids),
                                    vin(1), idv.elements, vocab, dim, vout(0),
                                    ctx.workspace, error, st);
    return cuda::scatter_add_rows(type, reinterpret_cast<const int32_t *>(ids),
                                  vin(1), idv.elements, vocab, dim, vout(0),
                                  ctx.workspace, error, st);
  }
  case Op::Dropout: {
    const Value &x = in(0);
    const int64_t *offset =
        step.inputs.size() > 1 && step.inputs[1] >= 0
            ? reinterpret_cast<const int64_t *>(ptrs[step.inputs[1]])
            : nullptr;
    uint8_t *mask = step.outputs.size() > 1 && step.outputs[1] >= 0
                        ? ptrs[step.outputs[1]]
                        : nullptr;
    uint64_t seed = static_cast<uint64_t>(a.seed);
    // Packed tokens: each row hashes its unpacked position (pack_index's rows).
    const Value *rowsValue = operand(fn, step.inputs, 2);
    const auto *rows = rowsValue ? reinterpret_cast<const int32_t *>(
                                       ptrs[step.inputs[2]])
                                 : nullptr;
    int64_t width = rowsValue ? x.elements / rowsValue->elements : 0;
    if (x.dtype == DType::F64)
      return cuda::dropout(
          reinterpret_cast<const double *>(ptrs[step.inputs[0]]),
          reinterpret_cast<double *>(ptrs[step.outputs[0]]), mask, x.elements,
          a.ratio, seed, offset, st, rows, width);
    return cuda::dropout(floatType(x.dtype), vin(0), vout(0), mask,
                         x.elements, a.ratio, seed, offset, st, rows, width);
  }
  case Op::SegmentIndex: {
    const Value &pos = in(0);
    return cuda::segment_index(vin(0), pos.dtype == DType::I64, pos.shape[0],
                               pos.shape[1],
                               reinterpret_cast<int32_t *>(vout(0)), error, st);
  }
  case Op::PackIndex: {
    const Value &mask = in(0);
    bool keep = mask.dtype == DType::Bool;
    return cuda::pack_index(keep ? ptrs[step.inputs[0]] : nullptr,
                            keep ? nullptr : vin(0), floatType(mask.dtype),
                            mask.shape[0], mask.shape[1],
                            reinterpret_cast<int32_t *>(vout(0)),
                            reinterpret_cast<int32_t *>(vout(1)), error, st);
  }
  case Op::Pack:
  case Op::Unpack: {
    const Value &x = in(0), &rows = in(1);
    int64_t rowBytes = x.bytes / rows.elements;
    const auto *index = reinterpret_cast<const int32_t *>(ptrs[step.inputs[1]]);
    if (step.op == Op::Unpack)
      return cuda::unpack_rows(vin(0), index, rows.elements, rowBytes, a.seq,
                               a.readBegin, a.readEnd, vout(0), error, st);
    return cuda::pack_rows(vin(0), index, rows.elements, rowBytes,
                           scalarBits(x.dtype, a.fill),
                           int64_t(data::dtypeSize(x.dtype)), a.checkFill,
                           packComparesFloats(x.dtype), vout(0), error, st);
  }
  case Op::AdamwUpdate:
    if (plan.adamwGrouped)
      return 0; // the group's first step launched it
    if (plan.adamw.count > 0)
      return cuda::adamw_update_multi(
          plan.adamw.table, plan.adamw.count, plan.adamw.chunks,
          reinterpret_cast<const double *>(ptrs[step.inputs[4]]),
          reinterpret_cast<const int64_t *>(ptrs[step.inputs[5]]), a.beta1,
          a.beta2, a.eps, flag(6), error, st);
    [[fallthrough]];
  case Op::SgdUpdate:
    return enqueueUpdate(fn, step, plan.shard, ptrs, error, st);
  }
  return 0;
}

std::string callErrorMessage(
    const Function &fn, size_t s, int64_t word,
    const std::vector<TensorDesc> &params,
    const std::function<int64_t(int64_t, int64_t)> &readInt,
    const std::function<double(int64_t, int64_t)> &readFloat,
    tcc_status &status) {
  const Step &step = fn.steps[s];
  const Attrs &a = step.attrs;
  std::string where = fn.name + " step " + std::to_string(s) + " (" +
                      opName(step.op) + "): ";
  auto name = [&](size_t i) {
    const Value &v = fn.values[step.inputs[i]];
    if (v.storage == Storage::Input)
      return "input '" + fn.inputs[v.index].name + "'";
    if (v.storage == Storage::Param)
      return "param '" + params[v.index].name + "'";
    return "value " + std::to_string(step.inputs[i]);
  };
  status = TCC_ERROR_DATA;
  std::string row = std::to_string(word);
  switch (step.op) {
  case Op::CrossEntropy:
  case Op::CrossEntropyGrad:
    return where + "label " + std::to_string(readInt(step.inputs[1], word)) +
           " in row " + row + " of " + name(1) + " is out of range for " +
           std::to_string(fn.values[step.inputs[0]].shape.back()) +
           " classes (and is not ignore_index " +
           std::to_string(a.ignoreIndex) + ")";
  case Op::Embedding:
    return where + "id " + std::to_string(readInt(step.inputs[1], word)) +
           " in row " + row + " of " + name(1) +
           " is out of range for a vocabulary of " +
           std::to_string(fn.values[step.inputs[0]].shape[0]);
  case Op::GatherGrad:
    return where + "index " + std::to_string(readInt(step.inputs[0], word)) +
           " in row " + row + " of " + name(0) +
           " is out of range for dim 0 of size " +
           std::to_string(fn.values[step.outputs[0]].shape[0]);
  case Op::PackIndex:
    return packIndexError(where, name(0), readFloat(step.inputs[0], word),
                          word, fn.values[step.inputs[0]].shape[1]);
  case Op::Pack: {
    const Value &x = fn.values[step.inputs[0]];
    bool floats = packComparesFloats(x.dtype);
    int64_t perRow = x.elements / fn.values[step.inputs[1]].elements;
    return packFillError(where, name(0), floats, word,
                         floats ? 0 : readInt(step.inputs[0], word * perRow),
                         int64_t(a.fill));
  }
  case Op::Unpack:
    return unpackReadError(where, word, a.seq);
  case Op::SegmentIndex:
    return segmentIndexError(where, name(0), readInt(step.inputs[0], word),
                             word, fn.values[step.inputs[0]].shape[1]);
  case Op::AdamwUpdate:
    status = TCC_ERROR_FORMAT;
    return where + "step " + std::to_string(readInt(step.inputs[5], 0)) +
           " is not a valid AdamW step (the first update is step 1): the "
           "plan computes the step operand wrongly";
  default:
    return where + "error word " + row;
  }
}

} // namespace tcc::rt
