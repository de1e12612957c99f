//===- plan.h - the artifact's plan and manifest as data --------*- C++ -*-===//
//
// The one schema of an artifact's manifest.json and plan.json
// (docs/artifact.md): plain structs that the compiler's artifact writer
// fills (lib/Artifact) and writes with writePlanJson / writeManifestJson, and
// that the runtime's loader reads back with readPlanJson / readManifestJson
// (plan_json.h), checking every field. Names, roles, storages and the arena
// alignment are defined here and nowhere else. No LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_PLAN_PLAN_H
#define TCC_RUNTIME_PLAN_PLAN_H

#include "api/tcc_runtime.h"
#include "data/npz.h"
#include "plan/library_ops.h"
#include "plan/schedule.h"

#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tcc::rt {

/// The artifact format version (manifest and plan "version").
constexpr int kArtifactVersion = TCC_ARTIFACT_VERSION;

/// Arena offsets and buffer sizes are multiples of this: cache lines, and
/// enough for the 16-byte vector accesses of generated kernels. Device and
/// host allocations of a session are aligned to it too.
constexpr int64_t kArenaAlignment = 64;

/// The largest arena a plan may have: 128 TiB, the user address space of
/// x86-64 and AArch64 Linux (47/48-bit), so no process could allocate more.
/// The writer refuses to write a plan beyond it and the reader to read one.
constexpr int64_t kMaxArenaBytes = INT64_C(1) << 47;

/// A failure with the status the C API returns for it: the runtime's one
/// error type (docs/architecture.md, "Error conventions").
class Error : public std::runtime_error {
public:
  Error(tcc_status status, const std::string &message)
      : std::runtime_error(message), status(status) {}
  tcc_status status;
};

[[noreturn]] void fail(tcc_status status, const std::string &message);

/// "[2, 3]"; "[]" for a scalar.
std::string shapeString(const std::vector<int64_t> &shape);

/// `n` with its digits in groups of three: "1,234,567" (`tcc inspect`'s
/// and the compile report's byte and FLOP counts).
std::string groupedDigits(int64_t n);

/// `path` opened for reading; TCC_ERROR_IO naming it when it does not exist
/// or cannot be opened.
std::ifstream openInput(const std::string &path);

/// The shortest "%.{15,16,17}g" text that reads back as `v`, for messages.
std::string formatNumber(double v);

/// Where a value's bytes live (plan "storage").
/// Working: the bf16/f16 working copy of parameter `index` (plan
/// params[i].working), kept equal to its master rounded to nearest even.
enum class Storage { Arena, Param, OptState, Step, Input, Constant, Working };
const char *storageName(Storage storage);

/// What a function result is (plan "role"). Working: the value becomes
/// parameter `index`'s working copy; Output: an inference result, by name.
enum class Role { Loss, Param, OptState, Output, Working, Metric };
const char *roleName(Role role);

/// What an artifact runs (manifest "kind").
enum class Kind { Training, Inference };

/// A named tensor's dtype and shape, with its element and byte counts
/// (filled by the reader, and by TensorDesc::make).
struct TensorDesc {
  std::string name;
  data::DType dtype = data::DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  int64_t bytes = 0;
  /// Optimizer state only: every element's value when the session opens
  /// (plan "init"; 0 when absent). Finite and fits `dtype` (initUnfit).
  std::optional<double> init;
  /// Parameters only: the dtype (bf16 or f16) of the parameter's working
  /// copy (plan "working"), absent when it has none; the parameter is f32.
  std::optional<data::DType> working;

  static TensorDesc make(std::string name, data::DType dtype,
                         std::vector<int64_t> shape);
};

/// One entry of a function's "values" (its id is its position).
struct Value {
  data::DType dtype = data::DType::F32;
  std::vector<int64_t> shape;
  int64_t elements = 1;
  int64_t bytes = 0;
  Storage storage = Storage::Arena;
  int64_t offset = 0; ///< Arena
  int64_t index = -1; ///< Param, OptState, Input, Working (the param's)
  std::string name;   ///< Constant: the tensor in constants.safetensors

  static Value make(data::DType dtype, std::vector<int64_t> shape);
};

/// What a collective step does over the data-parallel ranks (exec.all_reduce,
/// exec.reduce_scatter, exec.all_gather).
enum class CollectiveOp { AllReduce, ReduceScatter, AllGather };
const char *collectiveName(CollectiveOp op);
/// How an all_reduce or reduce_scatter combines the ranks' tensors.
enum class Reduction { Sum, Mean };
const char *reductionName(Reduction reduction);

/// One plan step.
struct Step {
  enum Kind { Kernel, Call, Collective } kind = Kernel;
  std::string symbol;   ///< Kernel: the host.so / fatbin symbol
  int64_t elements = 0; ///< Kernel: the output's element count
  Op op = Op{};         ///< Call
  Attrs attrs;          ///< Call: the fields of `op`'s attributes
  /// Collective: input i's result is output i. `worldSize` is the number of
  /// ranks the shapes were planned for (reduce_scatter, all_gather; 1 for
  /// all_reduce); `bucket` numbers the gradient bucket, `stream` the stream
  /// it runs on (0 compute, 1 communication).
  CollectiveOp collective = CollectiveOp::AllReduce;
  Reduction reduction = Reduction::Sum;
  int64_t bucket = 0, stream = 0, worldSize = 1;
  /// all_reduce (exec.all_reduce's attributes of the same names): its first
  /// `gradients` inputs are parameter gradients a ZeRO-1 session may
  /// reduce-scatter (rank r of N keeps elements [n*r/N, n*(r+1)/N), zeros
  /// elsewhere; zero.h); `scatteredOnly`: the inputs are partial sums over
  /// such slices, summed over the ranks only when the session scattered
  /// the gradients, else copied.
  int64_t gradients = 0;
  bool scatteredOnly = false;
  /// Call or kernel (plan "token_rows"; 0 when absent): the step's rows
  /// are packed tokens (tcc-pack-tokens), this many at most, and a backend
  /// may run it over the valid ones only: those the function's pack_index
  /// step found (its cu_seqlens' last element). The rows it then skips it
  /// writes as zero. Running every row is as correct: packed rows past the
  /// count hold finite values, and gradients zero there. A kernel's rows
  /// are its output's leading elements, elements / token_rows each.
  int64_t tokenRows = 0;
  /// Value ids in the op's operand / result order (library_ops.inc); -1 for
  /// an absent optional operand or result.
  std::vector<int64_t> inputs, outputs;
};

/// The metric a pad-skipping training or evaluation step returns
/// (tcc-pack-tokens): the valid tokens it packed, an f32 scalar.
inline constexpr const char *kValidTokensMetric = "valid_tokens";
/// train_step's global gradient L2 norm before clipping, as
/// torch.nn.utils.clip_grad_norm_ returns it (f32): returned when the step
/// computes it (--grad-clip, dynamic loss scaling, --grad-norm).
inline constexpr const char *kGradNormMetric = "grad_norm";
/// eval_step's for a cross-entropy loss (f32): the labels predicted right
/// (the label's logit is the row's largest) and those counted (not
/// ignore_index); the accuracy is their ratio.
inline constexpr const char *kCorrectMetric = "correct";
inline constexpr const char *kCountedMetric = "counted";

struct Result {
  Role role = Role::Loss;
  int64_t index = -1; ///< Param, OptState, Working
  int64_t value = -1;
  std::string name; ///< Output, Metric
};

struct Function {
  std::string name;
  int64_t arenaBytes = 0;
  std::vector<TensorDesc> inputs;
  std::vector<Value> values;
  std::vector<Step> steps;
  std::vector<Result> results;
  int64_t lossValue = -1; ///< the loss result's value (set by the reader)
};

/// The value of optional operand or result `i` of a step (ids: its inputs
/// or outputs); null when absent (-1) or past the end.
inline const Value *operand(const Function &fn, const std::vector<int64_t> &ids,
                            size_t i) {
  return i >= ids.size() || ids[i] < 0 ? nullptr : &fn.values[ids[i]];
}

/// One buffer of a generated kernel: its dtype and its elements. For an
/// input, `elements` is the fewest the kernel may be given (those of its
/// fusion, or the fewest over the fusions sharing its code), or
/// kOutputElements: exactly the calling step's output's (an elementwise
/// input of fusions of several sizes). For the output, the count every
/// call writes, or kOutputElements when the sharing fusions differ.
constexpr int64_t kOutputElements = -1;
struct KernelBuffer {
  data::DType dtype = data::DType::F32;
  int64_t elements = 0;
};

/// One generated kernel (plan "kernels"): the symbol host.so and the fatbin
/// export, its inputs in the ABI's order and its output. The only symbols
/// a backend resolves; every kernel step is checked against its entry.
struct KernelSignature {
  std::string symbol;
  std::vector<KernelBuffer> inputs;
  KernelBuffer output;
  /// The other results a kernel writes (plan "stores", absent when none;
  /// exec.fusion's results 1..: a reduction's prologue values, or the
  /// results of a kernel of siblings): buffers after the inputs in the
  /// argument array, each of exactly these elements (kOutputElements: the
  /// calling step's output's). A kernel step's outputs are its output, then
  /// these.
  std::vector<KernelBuffer> stores;
  /// CUDA launch: one block of `blockThreads` threads per this many
  /// consecutive outputs (a column reduction whose warps split the rows;
  /// "outputs_per_block" and "block_threads", absent when 0: any launch
  /// shape, one thread per output).
  int64_t outputsPerBlock = 0, blockThreads = 0;
  /// With outputsPerBlock: that many blocks per outputs in grid.y, each a
  /// slice of the rows ("row_slices", absent when 1), and the device
  /// workspace they share, zeroed once, passed after the inputs
  /// ("workspace_bytes", with row_slices).
  int64_t rowSlices = 1, workspaceBytes = 0;
};

/// plan.json: persistent state and the step functions.
struct Plan {
  std::vector<TensorDesc> params, optState;
  /// The generated kernels the steps call, one entry per symbol.
  std::vector<KernelSignature> kernels;
  /// train_step, eval_step; forward in an inference plan
  std::vector<Function> functions;

  /// The function called `name`, or null.
  const Function *function(const std::string &name) const;
  /// The kernel table entry of `symbol`, or null.
  const KernelSignature *kernel(const std::string &symbol) const;
};

/// The kernel table of `plan`'s kernel steps, in order of first use (the
/// writer's), with the sizes KernelBuffer describes. Fails
/// (std::logic_error) where two steps of one symbol differ in arity or
/// dtypes, which shared kernel text cannot.
std::vector<KernelSignature> kernelTable(const Plan &plan);

/// A file's size and SHA-256 (manifest "integrity").
struct FileIntegrity {
  uint64_t bytes = 0;
  std::string sha256;
};

/// What `tcc compile --memory-budget` decided (manifest "memory_budget"):
/// the budget, the arena without it, the recomputed ops and their FLOPs
/// against the step's, the weight gradients made in row blocks. The
/// planned session is the plan's own total.
struct MemoryBudget {
  int64_t budget = 0, arenaUnbudgeted = 0, stepFlops = 0, extraFlops = 0;
  /// Weight gradients made in row blocks (each block applied to its rows
  /// before the next is made) and their blocks; 0 in older artifacts.
  int64_t blockedGradients = 0, gradientBlocks = 0;
  std::vector<std::string> recomputed;
  /// train_step's live arena bytes without the budget, in at most
  /// kTimelineColumns columns (liveness.h's heldArenaBytes, then
  /// timelinePeaks); empty in artifacts written before it existed.
  std::vector<int64_t> arenaTimelineUnbudgeted;
};
/// The columns of the memory timelines `tcc inspect` charts.
inline constexpr size_t kTimelineColumns = 64;

/// manifest.json.
struct Manifest {
  int64_t version = kArtifactVersion;
  Kind kind = Kind::Training;
  std::string producer, source;
  /// Training only (empty, a constant schedule and 1 for inference).
  std::string fingerprint, trainConfig;
  Schedule schedule;
  int64_t accum = 1;
  /// Training under --memory-budget only.
  std::optional<MemoryBudget> memoryBudget;
  /// "plan", "weights", ... -> path relative to the artifact directory.
  std::map<std::string, std::string> files;
  /// Path in `files` -> its size and SHA-256, one for every file listed.
  std::map<std::string, FileIntegrity> integrity;
};

/// The integrity record of each file of `manifest.files` in `dir` (which
/// all exist): what the writer puts in `manifest.integrity`. rt::Error
/// (TCC_ERROR_IO) naming a file that cannot be read.
std::map<std::string, FileIntegrity> fileIntegrity(const std::string &dir,
                                                   const Manifest &manifest);

/// Checks every file of `manifest.files` in `dir` that exists against its
/// integrity record before anything reads it: TCC_ERROR_FORMAT naming the
/// file that is damaged (size or SHA-256). Missing files are left to the
/// reader that needs them.
void checkIntegrity(const std::string &dir, const Manifest &manifest);

/// Why `v` cannot be every element of a `dtype` tensor (an optimizer
/// state's "init"), or "": the writer and the reader check the same.
std::string initUnfit(double v, data::DType dtype);

/// The C API's name of a plan dtype (the plan admits only these), and back.
tcc_dtype apiDType(data::DType t);
data::DType fromApiDType(tcc_dtype t);

} // namespace tcc::rt

#endif // TCC_RUNTIME_PLAN_PLAN_H
