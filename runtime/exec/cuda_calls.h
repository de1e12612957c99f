//===- cuda_calls.h - the CUDA backend's library calls ----------*- C++ -*-===//
//
// Internal to the CUDA backend (cuda_backend.cpp): how each call step of a
// plan maps onto tcc_cuda_kernels and cuBLASLt GemmPlans, dispatched by the
// plan's dtypes (f32, and bf16 / f16 natively in every call but the
// optimizer updates). planCall runs
// when the session opens (shapes only: GEMM plans, workspace sizes, which
// steps report bad ids); enqueueCall when the step runs (enqueue only, no
// synchronisation, no allocation, so it can be captured in a CUDA graph).
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_EXEC_CUDA_CALLS_H
#define TCC_RUNTIME_EXEC_CUDA_CALLS_H

#include "exec/artifact.h"
#include "exec/backend.h"
#include "kernels/cuda/cudnn_conv.h"
#include "kernels/cuda/gemm.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace tcc::rt {

/// Token buckets: how the CUDA backend runs the steps over packed tokens
/// (the plan's token_rows, pad-skipping). The count of valid tokens is on
/// the device (pack_index's cu_seqlens); the backend reads it once a step,
/// after pack_index (a segment ends there), and runs the rest of the step
/// as the CUDA graph of its bucket: the smallest of `count` row counts
/// (capacity * b / count, b = 1..count, rounded up to 64 rows) holding
/// the valid tokens. Steps over packed tokens then run that many rows
/// (GEMMs through a cuBLASLt plan made per bucket at open) and write the
/// rows past them as zero, as the CPU backend does past the count.
/// TCC_CUDA_TOKEN_BUCKETS=N sets the number (default 8; 0: every step
/// runs over the capacity).
struct TokenBuckets {
  int64_t capacity = 0; ///< B*T of the function's pack_index; 0: none
  int count = 0;        ///< buckets; 0: off
  /// The rows bucket b (1..count) runs.
  int64_t rows(int b) const;
  /// The bucket holding `tokens` valid tokens (1 at least).
  int of(int64_t tokens) const;
  /// The rows a step over packed tokens runs of its `total` in bucket b:
  /// total unless the step is over packed tokens (tokenRows == total),
  /// the bucket is set (b > 0) and buckets are on.
  int64_t rowsOf(const Step &step, int64_t total, int b) const;
  /// The function's buckets: none without a pack_index step or when
  /// TCC_CUDA_TOKEN_BUCKETS is 0.
  static TokenBuckets of(const Function &fn);
};

/// Which dimension of a GEMM over packed tokens depends on the count.
enum class TokenDim { None, M, K, Batch };

/// A matmul or gemm call as the CPU backend maps it (cpu_calls.cpp):
/// one GEMM over all rows, one strided-batched GEMM, or one GEMM per output
/// batch with the broadcast operand's matrix looked up.
struct GemmStep {
  std::unique_ptr<cuda::GemmPlan> plan;
  /// Over packed tokens: the dimension that follows the token count and
  /// one plan per token bucket (bucketPlans[b - 1]).
  TokenDim tokenDim = TokenDim::None;
  std::vector<std::unique_ptr<cuda::GemmPlan>> bucketPlans;
  bool empty = false;     ///< no output element: nothing to do
  bool zero = false;      ///< k == 0: the output is zero-filled
  bool loop = false;      ///< one GEMM per entry of lmap / rmap
  std::vector<int64_t> lmap, rmap;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
  int64_t elementBytes = 4; ///< of A, B, C (f32 4, bf16 / f16 2)
  bool fullC = false; ///< gemm: c [m, n] is cuBLASLt's C (beta * C)
  bool biasC = false; ///< gemm: c [n] / [1, n] added by the bias epilogue
  bool bias = false;  ///< gemm: its bias [n], added by the bias epilogue
  /// gemm: how its bias_grad (the sums of op(A)'s rows) is made: by
  /// cuBLASLt's BGRADB epilogue, or, where cuBLASLt has none for the type,
  /// by cuda::column_sums after the GEMM (transpose_a only).
  enum class BiasGrad { None, Epilogue, Kernel } biasGrad = BiasGrad::None;
};

/// adamw_update steps run as one multi-tensor launch (adamw_update_multi):
/// its device table (adamw_build_table's layout, uploaded once when the
/// session opens), tensor and chunk counts.
struct AdamwGroupLaunch {
  const void *table = nullptr;
  int count = 0;
  int64_t chunks = 0;
};

struct CallPlan {
  GemmStep gemm;         ///< Matmul, Gemm
  size_t workspace = 0;  ///< scratch bytes the call needs
  int errorSlot = -1;    ///< its device error word, for steps reading ids
  /// AdamwUpdate in a group (adamwGroups): the group's first step launches
  /// every member's update (`adamw.count` > 0, its error slot is the
  /// group's); the later members' `adamwGrouped` steps enqueue nothing.
  AdamwGroupLaunch adamw;
  bool adamwGrouped = false;
  /// SgdUpdate, AdamwUpdate under ZeRO-1 (FunctionBinding::shards, set at
  /// prepare): the elements of the parameter this rank updates; its
  /// optimizer state holds just those. count < 0: the whole tensor.
  FunctionBinding::Shard shard;
  /// Conv, ConvGrad on cuDNN; null: tcc's kernels (conv.cu), `convOwn`
  /// saying why when cuDNN is loaded but cannot run this conv.
  std::unique_ptr<cuda::CudnnConvPlan> conv;
  std::string convOwn;
};

/// Whether call `op` reports bad rows / steps through an error word.
bool writesErrorWord(Op op);

/// The adamw_update steps of `fn` that one multi-tensor launch can run, in
/// groups of at least two (step indices, ascending), given every value's
/// address `ptrs[v]` (byte ranges decide independence). Within a run of
/// consecutive adamw_update steps, none writing bytes another step of the
/// run reads or writes (a dependence ends the run), the steps with the same
/// lr and step operands (value ids) and the same beta1, beta2 and eps form
/// a group; weight decay and the working copy (present or not, bf16 or
/// f16) may differ (they are per tensor). A working copy's operand and
/// result count as read and written. Steps with a skip operand the others
/// do not share or an empty tensor stay alone. A step of a group runs at the
/// group's first step, so the run's steps are reordered, which their
/// independence allows. Needs no GPU.
/// Under ZeRO-1 (`shards` not empty, FunctionBinding::shards) a step's
/// tensor is its slice, and an empty slice stays alone too.
std::vector<std::vector<size_t>>
adamwGroups(const Function &fn, uint8_t *const *ptrs,
            const std::vector<FunctionBinding::Shard> &shards);

/// An adamw_update's or sgd_update's working copy for the kernels: operand
/// `wi` (working) and result `wo` (new_working); out null when absent.
cuda::WorkingCopy workingCopy(const Function &fn, const Step &step,
                              uint8_t *const *ptrs, size_t wi, size_t wo);

/// The host table of adamw_update_multi for `group` (adamw_table_bytes of
/// its size), each tensor its ZeRO-1 slice when `shards` is not empty; its
/// chunk count in `chunks`.
std::vector<char>
adamwGroupTable(const Function &fn, const std::vector<size_t> &group,
                uint8_t *const *ptrs,
                const std::vector<FunctionBinding::Shard> &shards,
                int64_t &chunks);

/// Why the CUDA backend cannot run call `step` of `fn`, or "".
std::string cudaCallUnsupported(const Function &fn, const Step &step);

/// The GPU code of a CUDA fatbin (nvcc -fatbin): the architectures of its
/// SASS (80 for sm_80) and of its PTX (90 for compute_90), in file order.
struct FatbinCode {
  std::vector<int> sass, ptx;
  /// Whether a device of compute capability `arch` (80, 90) can load it:
  /// SASS of the same major version at most `arch`, or PTX at most `arch`
  /// (JIT-compiled by the driver).
  bool runsOn(int arch) const;
};

/// Reads the fatbin headers of `path` (no GPU, no libcuda); false with
/// `error` set when it cannot be read or is not a fatbin.
bool readFatbinCode(const std::string &path, FatbinCode &code,
                    std::string &error);

/// `tcc inspect`'s verdict for the cuda backend (after "cuda backend: "),
/// from the rules the backend applies when a session opens, decided without
/// a GPU or libcuda: "cannot run " and the first call step
/// cudaCallUnsupported refuses, or kernel steps without a fatbin that an
/// sm_80 or sm_90 device can load; otherwise "runs every step" and the
/// fatbin's architectures. (cuBLASLt can still refuse a GEMM at open.)
std::string cudaBackendVerdict(const Artifact &art);

/// Plans call `s` of `fn` (its GemmPlan made on `gemm`, and one per token
/// bucket for a GEMM over packed tokens; a conv's CudnnConvPlan on `cudnn`
/// when not null and cuDNN can run it); throws TCC_ERROR_BACKEND naming
/// `where` when cuBLASLt refuses the GEMM.
CallPlan planCall(const Function &fn, size_t s, const cuda::GemmContext &gemm,
                  const cuda::CudnnContext *cudnn, const TokenBuckets &buckets,
                  const std::string &where);

/// The conv steps of a session's plans, for tcc_backend_notes.
struct ConvTally {
  int64_t steps = 0, own = 0; ///< conv / conv_grad steps; on tcc's kernels
  std::string why;            ///< the first own step's convOwn
  /// Counts `step` (planned as `plan`) when it is a conv or conv_grad.
  void add(const Step &step, const CallPlan &plan);
  /// "" without conv steps; "conv: cuDNN 9.1.0\n" with ", N of M conv
  /// steps on tcc kernels (why)" before the newline when some are not on
  /// cuDNN; "conv: tcc kernels (reason)\n" when cuDNN is not loaded.
  std::string note(const cuda::CudnnLibrary &library) const;
};

struct CallContext {
  cudaStream_t stream = nullptr;
  void *workspace = nullptr;
  int64_t *errorWords = nullptr; ///< device, one per error slot
  const TokenBuckets *buckets = nullptr;
  int bucket = 0; ///< the token bucket this run is in; 0: the capacity
};

/// Enqueues call `s` of `fn`; `ptrs[v]` is value v's device address.
/// Returns 0 or the cuda::Status (a cudaError_t) of a launcher that refused.
cuda::Status enqueueCall(const Function &fn, size_t s, const CallPlan &plan,
                         uint8_t *const *ptrs, const CallContext &ctx);

/// The TCC_ERROR_DATA / TCC_ERROR_FORMAT message for error word value
/// `word` (>= 0) of call `s`, as the CPU backend words it. `readInt(v, i)`
/// and `readFloat(v, i)` download element i of the integer / float value
/// with id v; `params` names parameters.
std::string callErrorMessage(
    const Function &fn, size_t s, int64_t word,
    const std::vector<TensorDesc> &params,
    const std::function<int64_t(int64_t, int64_t)> &readInt,
    const std::function<double(int64_t, int64_t)> &readFloat,
    tcc_status &status);

} // namespace tcc::rt

#endif // TCC_RUNTIME_EXEC_CUDA_CALLS_H
