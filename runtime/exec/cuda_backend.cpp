//===- cuda_backend.cpp - running plan steps on a CUDA device -------------===//
//
// See cuda_backend.h. Memory, streams and graphs go through the CUDA
// runtime API; the fatbin of the generated kernels is loaded and launched
// with the driver API. Both work in the primary context of the session's
// device, which every entry point makes current for its duration
// (ContextScope) rather than switching the caller's device for good: a
// framework keeps working on its own device between calls, and a session
// on device 1 creates no context on device 0. The driver functions are
// resolved through the runtime (cuda_driver.h), not linked from libcuda.
//
//===----------------------------------------------------------------------===//

#include "exec/cuda_backend.h"

#include "data/half.h"
#include "exec/allocator.h"
#include "exec/cuda_calls.h"
#include "exec/cuda_driver.h"
#include "exec/dp_nccl.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/gemm.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace tcc::rt {

std::string cudaUnsupported(const Function &fn, const Step &step) {
  return cudaCallUnsupported(fn, step);
}

namespace {

void check(cudaError_t e, const std::string &what,
           tcc_status status = TCC_ERROR_BACKEND) {
  if (e != cudaSuccess) {
    cudaGetLastError(); // clear a sticky launch error where there is one
    fail(status, "backend 'cuda': " + what + ": " + cudaGetErrorName(e) +
                     " (" + cudaGetErrorString(e) + ")");
  }
}

constexpr int BlockSize = 256;

// The backend's own device memory; cudaMalloc aligns to 256 bytes.
void *cudaAlloc(void *, size_t bytes, size_t, tcc_memory_kind) {
  void *p = nullptr;
  if (cudaMalloc(&p, bytes) == cudaSuccess)
    return p;
  cudaGetLastError();
  return nullptr;
}
void cudaRelease(void *, void *p, size_t, tcc_memory_kind) { cudaFree(p); }

struct EventDeleter {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using Event = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDeleter>;

/// The events of one profiled run: one recorded before and one after each
/// step, so the time between them is the step's time on the device.
struct StepEvents {
  std::vector<Event> before, after;

  explicit StepEvents(size_t steps) {
    for (size_t s = 0; s < steps; ++s) {
      before.push_back(create());
      after.push_back(create());
    }
  }
  static Event create() {
    cudaEvent_t e = nullptr;
    check(cudaEventCreate(&e), "cudaEventCreate");
    return Event(e);
  }
  /// Step s's milliseconds, once the stream has passed its events.
  double ms(size_t s) const {
    float t = 0;
    check(cudaEventElapsedTime(&t, before[s].get(), after[s].get()),
          "cudaEventElapsedTime");
    return t;
  }
};

class CudaBackend final : public Backend {
public:
  CudaBackend(const SessionOptions &options, const Artifact &artifact);
  ~CudaBackend() override;

  const char *name() const override { return "cuda"; }
  const std::string &notes() const override { return notes_; }
  uint8_t *allocate(size_t bytes, const std::string &what) override;
  void upload(uint8_t *dst, const void *src, size_t bytes) override;
  void download(void *dst, const uint8_t *src, size_t bytes) override;
  void prepare(const Bindings &bindings) override;
  void run(size_t f, int64_t step) override;
  void runProfiled(size_t f, int64_t step, std::vector<double> &ms) override;
  int rank() const override { return nccl ? nccl->rank() : 0; }
  int ranks() const override { return nccl ? nccl->size() : 1; }
  void startGather(uint8_t *buf, const std::vector<int64_t> &offsets,
                   const std::vector<int64_t> &counts,
                   const std::string &what) override;
  void startGatherToRoot(const uint8_t *mine, uint8_t *all,
                         const std::vector<int64_t> &offsets,
                         const std::vector<int64_t> &counts,
                         const std::string &what) override;
  void finishExchange() override;

private:
  void init(const SessionOptions &options);
  /// Refuses a caller's stream of another device, or one graphs cannot use.
  void checkCallerStream() const;
  /// Refuses to run while the caller captures the stream into a graph.
  void checkNotCapturing() const;
  void release();
  /// prepare(): runs of adamw_update steps as multi-tensor launches.
  void groupAdamw(const Bindings &bindings);
  /// Copies `step` to the device's step counter (before a run).
  void setStepCounter(int64_t step);
  /// Steps [begin, end) of function f (with poisoning; the result copies
  /// when end is the last step), enqueued on the stream; with `timing`,
  /// each step between its two events.
  void enqueue(size_t f, size_t begin, size_t end,
               const StepEvents *timing = nullptr);
  /// Enqueues step s of function f (its launch or library call).
  void enqueueStep(size_t f, size_t s, const CallContext &ctx);
  /// Synchronises and turns the first set error word into an Error.
  void checkErrorWords(size_t f);
  /// The token bucket of function f's valid tokens (after its pack_index
  /// ran; the stream synchronised).
  int readBucket(size_t f);
  std::string where(size_t f, size_t s) const {
    const Function &fn = art.functions[f];
    return art.file("plan") + ": " + fn.name + " step " + std::to_string(s) +
           " (" + (fn.steps[s].kind == Step::Kernel ? fn.steps[s].symbol
                                                    : opName(fn.steps[s].op)) +
           "): ";
  }

  const Artifact &art;
  const Bindings *bindings = nullptr;
  int device = 0; ///< the ordinal (tcc_session_options.device)
  CUdevice cuDevice = 0;
  CUcontext context = nullptr; ///< its primary context, retained
  cudaStream_t stream = nullptr;
  bool ownStream = false; ///< made here (else the caller's, never destroyed)
  int smCount = 1;
  CUmodule module = nullptr;
  std::unique_ptr<cuda::GemmContext> gemmContext;
  /// Conv steps' cuDNN handle (cudnn_conv.h); null: tcc's conv kernels.
  std::unique_ptr<cuda::CudnnContext> cudnnContext;
  std::string notes_; ///< tcc_backend_notes
  Allocator memory;
  bool useGraphs = true;
  int bucket = 0; ///< the token bucket enqueue runs (0: the capacity)

  struct StepPlan {
    CUfunction kernel = nullptr; ///< kernel steps
    int64_t outputsPerBlock = 0, blockThreads = 0; ///< launch shape (plan)
    int64_t rowSlices = 1; ///< grid.y (plan); > 1: reads kernelScratch
    size_t scratchOffset = 0;     ///< its kernel's area of kernelScratch
    const void *inputs = nullptr; ///< device array of device pointers
    CallPlan call;               ///< call steps
  };
  struct FunctionPlan {
    std::vector<StepPlan> steps;
    /// Segment ends: the error words are read after each segment; the
    /// first ends before the first step writing a param / opt_state slot
    /// when a step before it reads ids; one ends after pack_index, whose
    /// token count picks the later segments' token bucket. One CUDA graph
    /// per segment and bucket: graphs[g * (buckets.count + 1) + bucket].
    std::vector<size_t> segmentEnds;
    std::vector<cudaGraphExec_t> graphs;
    TokenBuckets buckets;
    int64_t packStep = -1;   ///< the pack_index step when bucketed
    int64_t countValue = -1; ///< its cu_seqlens (count at [packBatch])
    int64_t packBatch = 0;
    std::vector<int64_t> errorSteps; ///< step of each error slot
    int firstErrorSlot = 0;
  };
  std::vector<FunctionPlan> plans;
  int errorSlots = 0;
  int64_t *errorWords = nullptr; // device
  void *workspace = nullptr;     // device
  size_t workspaceBytes = 0;
  /// The kernels' workspace: an area per kernel symbol (plan
  /// "workspace_bytes"), after a kernel's inputs in its argument array.
  /// Zeroed once: a kernel leaves its counters at 0 for its next launch,
  /// so no other kernel may write its area (another's partial sums there
  /// would leave its counters at garbage, and its outputs unwritten).
  uint8_t *kernelScratch = nullptr; // device
  size_t kernelScratchBytes = 0;
  std::unordered_map<std::string, size_t> scratchAreas; ///< symbol -> offset
  int64_t hostStep = 0;
  /// With an NCCL communicator: the collectives' group, and per function
  /// which steps read a collective's result (they wait for it).
  std::unique_ptr<dp::NcclGroup> nccl;
  std::vector<std::vector<bool>> readsCollective;
  /// ZeRO-1's exchanges: what the started ones are (for a timeout's
  /// message), and rank 0's device buffer receiving the other ranks'
  /// optimizer state slices for a checkpoint, a chunk at a time.
  std::string exchanging;
  uint8_t *staging = nullptr;
  static constexpr size_t kStagingBytes = size_t(16) << 20;
};

CudaBackend::CudaBackend(const SessionOptions &options,
                         const Artifact &artifact)
    : art(artifact), device(options.device),
      memory(options.allocator, {nullptr, cudaAlloc, cudaRelease},
             TCC_MEMORY_DEVICE, kDeviceAlignment) {
  try {
    init(options);
  } catch (...) {
    release(); // no destructor runs for a constructor that throws
    throw;
  }
}

void CudaBackend::init(const SessionOptions &options) {
  // The device (cudaGetDeviceCount initialises the driver).
  int devices = 0;
  cudaError_t e = cudaGetDeviceCount(&devices);
  if (e != cudaSuccess || devices == 0) {
    cudaGetLastError();
    fail(TCC_ERROR_BACKEND,
         std::string("backend 'cuda': no CUDA device (cudaGetDeviceCount: ") +
             (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")");
  }
  if (device >= devices)
    fail(TCC_ERROR_ARGUMENT,
         "backend 'cuda': device " + std::to_string(device) +
             " does not exist: this machine has " + std::to_string(devices) +
             " CUDA device" +
             (devices == 1 ? " (0)"
                           : "s (0 to " + std::to_string(devices - 1) + ")"));
  std::string noDriver = loadDriver();
  if (!noDriver.empty())
    fail(TCC_ERROR_BACKEND, "backend 'cuda': " + noDriver);
  CUresult r = driver().deviceGet(&cuDevice, device);
  if (r == CUDA_SUCCESS)
    r = driver().primaryCtxRetain(&context, cuDevice);
  if (r != CUDA_SUCCESS) {
    context = nullptr;
    fail(TCC_ERROR_BACKEND, "backend 'cuda': device " + std::to_string(device) +
                                ": no context: " + driverError(r));
  }
  ContextScope scope(context);
  check(
      cudaDeviceGetAttribute(&smCount, cudaDevAttrMultiProcessorCount, device),
      "cudaDeviceGetAttribute");
  const char *graphs = std::getenv("TCC_CUDA_GRAPHS");
  useGraphs = !(graphs && std::string(graphs) == "0");

  // What the backend cannot run, refused before anything else is loaded.
  for (const Function &fn : art.functions)
    for (size_t s = 0; s < fn.steps.size(); ++s) {
      const Step &step = fn.steps[s];
      if (step.kind != Step::Call)
        continue;
      std::string why = cudaUnsupported(fn, step);
      if (!why.empty())
        fail(TCC_ERROR_BACKEND, art.file("plan") + ": " + fn.name + " step " +
                                    std::to_string(s) + " (" +
                                    opName(step.op) + "): " + why);
    }

  if (options.stream) {
    stream = static_cast<cudaStream_t>(options.stream);
    checkCallerStream();
  } else {
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "cudaStreamCreate");
    ownStream = true;
  }
  if (options.communicatorKind == TCC_COMMUNICATOR_NCCL) {
    nccl = dp::openNcclGroup(options.communicator, options.collectiveTimeout);
    for (const Function &fn : art.functions) {
      std::vector<bool> reduced(fn.values.size(), false), reads;
      for (const Step &step : fn.steps) {
        if (step.kind == Step::Collective &&
            step.collective != CollectiveOp::AllReduce)
          fail(TCC_ERROR_BACKEND, art.file("plan") + ": " + fn.name + ": " +
                                      collectiveName(step.collective) +
                                      ": only all_reduce runs over NCCL");
        bool r = false;
        for (int64_t id : step.inputs)
          r = r || (id >= 0 && reduced[size_t(id)]);
        reads.push_back(r);
        if (step.kind == Step::Collective)
          for (int64_t id : step.outputs)
            reduced[size_t(id)] = true;
      }
      readsCollective.push_back(std::move(reads));
      // Without collectives the ranks would each train a model of their own.
      if (fn.name == "train_step" && nccl->size() > 1 &&
          std::none_of(fn.steps.begin(), fn.steps.end(), [](const Step &st) {
            return st.kind == Step::Collective;
          }))
        fail(TCC_ERROR_BACKEND, art.file("plan") +
                                    ": train_step has no all_reduce, so it "
                                    "cannot train on " +
                                    std::to_string(nccl->size()) +
                                    " ranks (compile with --data-parallel)");
    }
  }
  std::string gemmError;
  gemmContext = cuda::GemmContext::create(&gemmError);
  if (!gemmContext)
    fail(TCC_ERROR_BACKEND, "backend 'cuda': cuBLASLt: " + gemmError);
  // cuDNN for the conv steps: loaded (once per process) only for them.
  cuda::CudnnLibrary cudnn;
  ConvTally convs;
  bool hasConv = false;
  for (const Function &fn : art.functions)
    for (const Step &step : fn.steps)
      hasConv |= step.kind == Step::Call &&
                 (step.op == Op::Conv || step.op == Op::ConvGrad);
  if (hasConv) {
    cudnn = cuda::cudnnLibrary();
    std::string cudnnError;
    cudnnContext = cuda::CudnnContext::create(stream, &cudnnError);
    if (!cudnnContext && cudnn.loaded) {
      cudnn.loaded = false; // loaded, but no handle on this device
      cudnn.reason = cudnnError;
    }
  }

  // The generated kernels.
  if (art.hasKernelSteps()) {
    std::string path = art.file("cuda_kernels");
    if (path.empty())
      path = art.dir + "/kernels/kernels.fatbin";
    std::ifstream in(path, std::ios::binary);
    if (!in)
      fail(TCC_ERROR_FORMAT,
           path + ": no CUDA kernels (kernels/kernels.fatbin is missing or "
                  "unreadable: the artifact was compiled without nvcc?)");
    std::string image((std::istreambuf_iterator<char>(in)),
                      std::istreambuf_iterator<char>());
    CUresult r = driver().moduleLoadData(&module, image.data());
    if (r != CUDA_SUCCESS)
      fail(TCC_ERROR_FORMAT, path + ": cannot load the CUDA kernels: " +
                                 driverError(r));
  }

  plans.resize(art.functions.size());
  for (size_t f = 0; f < art.functions.size(); ++f) {
    const Function &fn = art.functions[f];
    FunctionPlan &fp = plans[f];
    fp.steps.resize(fn.steps.size());
    fp.firstErrorSlot = errorSlots;
    fp.buckets = TokenBuckets::of(fn);
    size_t firstWrite = fn.steps.size();
    bool readsIdsBefore = false;
    for (size_t s = 0; s < fn.steps.size(); ++s) {
      const Step &step = fn.steps[s];
      StepPlan &sp = fp.steps[s];
      for (int64_t o : step.outputs)
        if (o >= 0 && firstWrite == fn.steps.size() &&
            (fn.values[o].storage == Storage::Param ||
             fn.values[o].storage == Storage::OptState ||
             fn.values[o].storage == Storage::Working))
          firstWrite = s;
      if (step.kind == Step::Kernel) {
        CUresult r =
            driver().moduleGetFunction(&sp.kernel, module, step.symbol.c_str());
        if (r != CUDA_SUCCESS)
          fail(TCC_ERROR_FORMAT, art.file("cuda_kernels") + ": no kernel '" +
                                     step.symbol + "' (" + fn.name +
                                     " step " + std::to_string(s) + "): " +
                                     driverError(r));
        if (const KernelSignature *k = art.kernel(step.symbol)) {
          sp.outputsPerBlock = k->outputsPerBlock;
          sp.blockThreads = k->blockThreads;
          sp.rowSlices = k->rowSlices;
          if (k->workspaceBytes > 0) {
            auto [at, fresh] =
                scratchAreas.try_emplace(step.symbol, kernelScratchBytes);
            if (fresh)
              kernelScratchBytes +=
                  (size_t(k->workspaceBytes) + 255) & ~size_t(255);
            sp.scratchOffset = at->second;
          }
        }
        continue;
      }
      if (step.kind == Step::Collective)
        continue; // device-to-device copies at one rank (runOneRank)
      sp.call = planCall(fn, s, *gemmContext, cudnnContext.get(), fp.buckets,
                         where(f, s));
      convs.add(step, sp.call);
      if (step.op == Op::PackIndex && fp.buckets.count > 0 &&
          fp.packStep < 0) {
        fp.packStep = int64_t(s);
        fp.countValue = step.outputs[1];
        fp.packBatch = fn.values[step.inputs[0]].shape[0];
      }
      workspaceBytes = std::max(workspaceBytes, sp.call.workspace);
      if (writesErrorWord(step.op)) {
        sp.call.errorSlot = errorSlots++;
        fp.errorSteps.push_back(int64_t(s));
        if (firstWrite == fn.steps.size() && step.op != Op::AdamwUpdate)
          readsIdsBefore = true;
      }
    }
    if (readsIdsBefore && firstWrite > 0 && firstWrite < fn.steps.size())
      fp.segmentEnds.push_back(firstWrite);
    if (fp.packStep >= 0)
      fp.segmentEnds.push_back(size_t(fp.packStep) + 1);
    fp.segmentEnds.push_back(fn.steps.size());
    std::sort(fp.segmentEnds.begin(), fp.segmentEnds.end());
    fp.segmentEnds.erase(
        std::unique(fp.segmentEnds.begin(), fp.segmentEnds.end()),
        fp.segmentEnds.end());
    fp.graphs.assign(fp.segmentEnds.size() * size_t(fp.buckets.count + 1),
                     nullptr);
  }
  notes_ = convs.note(cudnn);
  if (errorSlots)
    errorWords = reinterpret_cast<int64_t *>(
        allocate(sizeof(int64_t) * size_t(errorSlots), "the error words"));
  if (workspaceBytes)
    workspace = allocate(workspaceBytes, "the library calls' workspace");
  if (kernelScratchBytes) {
    kernelScratch = allocate(kernelScratchBytes, "the kernels' workspace");
    check(cudaMemsetAsync(kernelScratch, 0, kernelScratchBytes, stream),
          "zeroing the kernels' workspace");
  }
}

void CudaBackend::checkCallerStream() const {
  int streamDevice = -1;
  cudaError_t e = cudaStreamGetDevice(stream, &streamDevice);
  if (e != cudaSuccess) {
    cudaGetLastError();
    fail(TCC_ERROR_ARGUMENT,
         std::string("backend 'cuda': tcc_session_options.stream is not a "
                     "usable CUDA stream: ") +
             cudaGetErrorString(e));
  }
  if (streamDevice != device)
    fail(TCC_ERROR_ARGUMENT,
         "backend 'cuda': tcc_session_options.stream belongs to device " +
             std::to_string(streamDevice) + ", the session's device is " +
             std::to_string(device));
  if (stream == cudaStreamLegacy && useGraphs)
    fail(TCC_ERROR_ARGUMENT,
         "backend 'cuda': tcc_session_options.stream is the legacy default "
         "stream, which cannot be captured into a CUDA graph: pass a stream "
         "of your own, NULL, or set TCC_CUDA_GRAPHS=0");
}

void CudaBackend::checkNotCapturing() const {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  check(cudaStreamIsCapturing(stream, &capture), "cudaStreamIsCapturing");
  if (capture != cudaStreamCaptureStatusNone)
    fail(TCC_ERROR_ARGUMENT,
         "backend 'cuda': the session's stream is being captured into a "
         "CUDA graph; a step synchronises the stream, so it cannot run "
         "inside the caller's capture");
}

CudaBackend::~CudaBackend() { release(); }

// Everything goes in the reverse order of init, after the stream has
// finished with it; the caller's stream is left alone.
void CudaBackend::release() {
  if (!context)
    return; // init failed before anything needed freeing
  {
    ContextScope scope(context);
    if (stream)
      cudaStreamSynchronize(stream);
    for (FunctionPlan &fp : plans)
      for (cudaGraphExec_t g : fp.graphs)
        if (g)
          cudaGraphExecDestroy(g);
    plans.clear(); // the GemmPlans and CudnnConvPlans before their contexts
    gemmContext.reset();
    nccl.reset();
    cudnnContext.reset();
    if (module)
      driver().moduleUnload(module);
    module = nullptr;
    memory.release();
    if (stream && ownStream)
      cudaStreamDestroy(stream);
    stream = nullptr;
  }
  driver().primaryCtxRelease(cuDevice);
  context = nullptr;
}

uint8_t *CudaBackend::allocate(size_t bytes, const std::string &what) {
  ContextScope scope(context);
  uint8_t *p = memory.allocate(bytes, what);
  if (!p)
    return nullptr;
  check(cudaMemsetAsync(p, 0, bytes, stream), "clearing " + what);
  check(cudaStreamSynchronize(stream), "clearing " + what);
  return p;
}

void CudaBackend::upload(uint8_t *dst, const void *src, size_t bytes) {
  if (!bytes)
    return;
  ContextScope scope(context);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream),
        "copying to the device");
  check(cudaStreamSynchronize(stream), "copying to the device");
}

void CudaBackend::download(void *dst, const uint8_t *src, size_t bytes) {
  if (!bytes)
    return;
  ContextScope scope(context);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream),
        "copying from the device");
  check(cudaStreamSynchronize(stream), "copying from the device");
}

void CudaBackend::startGather(uint8_t *buf,
                              const std::vector<int64_t> &offsets,
                              const std::vector<int64_t> &counts,
                              const std::string &what) {
  if (!nccl)
    return;
  ContextScope scope(context);
  nccl->startGather(buf, offsets, counts, stream);
  exchanging = what;
}

void CudaBackend::startGatherToRoot(const uint8_t *mine, uint8_t *all,
                                    const std::vector<int64_t> &offsets,
                                    const std::vector<int64_t> &counts,
                                    const std::string &what) {
  int me = rank();
  if (me == 0)
    download(all + offsets[0], mine, size_t(counts[0]));
  if (!nccl)
    return;
  // Rank q's slice to rank 0 through its staging buffer, a chunk at a time
  // (NCCL moves device memory; the others wait in the next collective).
  ContextScope scope(context);
  if (me == 0 && !staging)
    staging = allocate(kStagingBytes, "the ZeRO-1 checkpoint's staging buffer");
  for (int q = 1; q < ranks(); ++q) {
    if (me != 0 && me != q)
      continue;
    for (int64_t done = 0; done < counts[size_t(q)];) {
      size_t chunk = size_t(std::min<int64_t>(counts[size_t(q)] - done,
                                              int64_t(kStagingBytes)));
      if (me == 0)
        nccl->startRecv(staging, chunk, q, stream);
      else
        nccl->startSend(mine + done, chunk, 0, stream);
      nccl->join(stream);
      nccl->synchronize(stream, what);
      if (me == 0)
        download(all + offsets[size_t(q)] + done, staging, chunk);
      done += int64_t(chunk);
    }
  }
}

void CudaBackend::finishExchange() {
  if (!nccl)
    return;
  ContextScope scope(context);
  nccl->join(stream);
  nccl->synchronize(stream, exchanging.empty() ? "a ZeRO-1 exchange"
                                               : exchanging);
  exchanging.clear();
}

// TCC_CUDA_MULTI_TENSOR=0 keeps one launch per adamw_update (the groups'
// results are bit for bit the same); TCC_POISON_ARENA=1 does too, as a
// group's launch at its first step would run ahead of the poisoning before
// its later steps.
void CudaBackend::groupAdamw(const Bindings &b) {
  const char *multi = std::getenv("TCC_CUDA_MULTI_TENSOR");
  if (multi && std::string(multi) == "0")
    return;
  struct Group {
    size_t f;
    std::vector<size_t> steps;
    size_t offset;
    int64_t chunks;
  };
  std::vector<Group> groups;
  std::vector<char> tables; // every group's table, each 256-byte aligned
  for (size_t f = 0; f < art.functions.size(); ++f) {
    const FunctionBinding &fb = b.functions[f];
    if (!fb.poison.empty())
      continue;
    const Function &fn = art.functions[f];
    for (std::vector<size_t> &steps :
         adamwGroups(fn, fb.ptrs.data(), fb.shards)) {
      Group g{f, std::move(steps), (tables.size() + 255) / 256 * 256, 0};
      std::vector<char> t = adamwGroupTable(fn, g.steps, fb.ptrs.data(),
                                            fb.shards, g.chunks);
      tables.resize(g.offset);
      tables.insert(tables.end(), t.begin(), t.end());
      groups.push_back(std::move(g));
    }
  }
  if (groups.empty())
    return;
  uint8_t *dev = allocate(tables.size(), "the multi-tensor AdamW tables");
  upload(dev, tables.data(), tables.size());
  for (const Group &g : groups) {
    std::vector<StepPlan> &steps = plans[g.f].steps;
    CallPlan &first = steps[g.steps.front()].call;
    first.adamw.table = dev + g.offset;
    first.adamw.count = int(g.steps.size());
    first.adamw.chunks = g.chunks;
    for (size_t i = 1; i < g.steps.size(); ++i)
      steps[g.steps[i]].call.adamwGrouped = true;
  }
}

void CudaBackend::prepare(const Bindings &b) {
  ContextScope scope(context);
  bindings = &b;
  for (size_t f = 0; f < art.functions.size(); ++f)
    for (size_t s = 0; s < b.functions[f].shards.size(); ++s)
      plans[f].steps[s].call.shard = b.functions[f].shards[s];
  groupAdamw(b);
  // Every kernel step's inputs as one device array of device pointers.
  std::vector<const void *> table;
  std::vector<std::pair<size_t, size_t>> at; // (function, step) per array
  std::vector<size_t> offsets;
  for (size_t f = 0; f < art.functions.size(); ++f) {
    const Function &fn = art.functions[f];
    for (size_t s = 0; s < fn.steps.size(); ++s) {
      const Step &step = fn.steps[s];
      if (step.kind != Step::Kernel ||
          (step.inputs.empty() && step.outputs.size() == 1 &&
           plans[f].steps[s].rowSlices <= 1))
        continue;
      at.push_back({f, s});
      offsets.push_back(table.size());
      // The inputs, the stores' buffers (outputs 1..), the workspace.
      for (int64_t v : step.inputs)
        table.push_back(b.functions[f].ptrs[v]);
      for (size_t o = 1; o < step.outputs.size(); ++o)
        table.push_back(b.functions[f].ptrs[step.outputs[o]]);
      if (plans[f].steps[s].rowSlices > 1)
        table.push_back(kernelScratch + plans[f].steps[s].scratchOffset);
    }
  }
  if (table.empty())
    return;
  size_t bytes = table.size() * sizeof(void *);
  auto *dev = reinterpret_cast<const void **>(
      allocate(bytes, "the kernel argument arrays"));
  upload(reinterpret_cast<uint8_t *>(dev), table.data(), bytes);
  for (size_t i = 0; i < at.size(); ++i)
    plans[at[i].first].steps[at[i].second].inputs = dev + offsets[i];
}

void CudaBackend::enqueue(size_t f, size_t begin, size_t end,
                          const StepEvents *timing) {
  const Function &fn = art.functions[f];
  const FunctionBinding &fb = bindings->functions[f];
  auto poison = [&](size_t i) {
    if (!fb.poison.empty())
      for (const ByteRange &r : fb.poison[i])
        check(cudaMemsetAsync(bindings->arena + r.begin, 0xFF,
                              size_t(r.end - r.begin), stream),
              "poisoning the arena");
  };
  if (begin == 0 && errorSlots)
    check(cudaMemsetAsync(errorWords, 0xFF, sizeof(int64_t) * errorSlots,
                          stream),
          "clearing the error words"); // -1: no error
  CallContext ctx{stream, workspace, errorWords, &plans[f].buckets, bucket};
  for (size_t s = begin; s < end; ++s) {
    poison(s);
    if (nccl && readsCollective[f][s])
      nccl->join(stream);
    if (!timing) {
      enqueueStep(f, s, ctx);
      continue;
    }
    check(cudaEventRecord(timing->before[s].get(), stream), "cudaEventRecord");
    enqueueStep(f, s, ctx);
    check(cudaEventRecord(timing->after[s].get(), stream), "cudaEventRecord");
  }
  if (nccl) // a segment (a graph) ends with its collectives done
    nccl->join(stream);
  if (end == fn.steps.size()) {
    poison(end);
    for (const FunctionBinding::Copy &c : fb.resultCopies)
      check(cudaMemcpyAsync(c.dst, c.src, c.bytes, cudaMemcpyDeviceToDevice,
                            stream),
            "copying a result into its slot");
  }
}

void CudaBackend::enqueueStep(size_t f, size_t s, const CallContext &ctx) {
  const Function &fn = art.functions[f];
  const FunctionBinding &fb = bindings->functions[f];
  const Step &step = fn.steps[s];
  const StepPlan &sp = plans[f].steps[s];
  if (step.kind == Step::Collective) {
    runOneRank(step, fn, fb.ptrs.data(),
               [&](uint8_t *dst, const uint8_t *src, size_t bytes) {
                 check(cudaMemcpyAsync(dst, src, bytes,
                                       cudaMemcpyDeviceToDevice, stream),
                       where(f, s) + "copying a collective's result");
               });
    // Reduced in place in the outputs, on the NCCL stream: the gradients
    // reduce-scattered under ZeRO-1, its partial sums then summed (else
    // they are whole already).
    if (!nccl)
      return;
    bool mean = step.reduction == Reduction::Mean;
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      int64_t id = step.outputs[i];
      const Value &v = fn.values[id];
      switch (exchangeOf(step, i, fb.scatterGradients)) {
      case Exchange::None:
        break;
      case Exchange::AllReduce:
        nccl->start(fb.ptrs[id], v.elements, v.dtype, mean, stream);
        break;
      case Exchange::ReduceScatter:
        nccl->startScatter(fb.ptrs[id], v.elements, v.dtype, mean, stream);
        break;
      }
    }
    return;
  }
  if (step.kind == Step::Call) {
    cuda::Status st = enqueueCall(fn, s, sp.call, fb.ptrs.data(), ctx);
    if (st)
      fail(TCC_ERROR_BACKEND, where(f, s) + "the cuda launcher failed: " +
                                  cuda::status_string(st));
    return;
  }
  if (step.elements <= 0)
    return;
  const void *inputs = sp.inputs;
  void *output = fb.ptrs[step.outputs[0]];
  int64_t first = 0, last = step.elements;
  if (step.tokenRows > 0) {
    // Over packed tokens: the bucket's rows, the rest written as zero.
    int64_t rows = plans[f].buckets.rowsOf(step, step.tokenRows, bucket);
    last = step.elements / step.tokenRows * rows;
    if (last < step.elements) {
      size_t size = data::dtypeSize(fn.values[step.outputs[0]].dtype);
      check(cudaMemsetAsync(static_cast<uint8_t *>(output) + size * last, 0,
                            size * size_t(step.elements - last), stream),
            where(f, s) + "zeroing the rows past the token bucket");
    }
    if (last == 0)
      return;
  }
  void *args[] = {&inputs, &output, &first, &last};
  // One thread per output, or the plan's launch shape: a block of
  // blockThreads per outputsPerBlock outputs and rowSlices slices of the
  // rows in grid.y (a column reduction whose warps split the rows); a
  // grid-stride loop beyond.
  const bool perTile = sp.outputsPerBlock > 0;
  const int64_t perBlock = perTile ? sp.outputsPerBlock : BlockSize;
  const unsigned threads = unsigned(perTile ? sp.blockThreads : BlockSize);
  int64_t blocksNeeded = (last + perBlock - 1) / perBlock;
  unsigned grid = unsigned(std::min<int64_t>(blocksNeeded, int64_t(smCount) * 32));
  const unsigned slices = unsigned(perTile ? sp.rowSlices : 1);
  CUresult r = driver().launchKernel(
      sp.kernel, grid, slices, 1, threads, 1, 1, 0,
      reinterpret_cast<CUstream>(stream), args, nullptr);
  if (r != CUDA_SUCCESS)
    fail(TCC_ERROR_BACKEND, where(f, s) + "cuLaunchKernel: " + driverError(r));
}

void CudaBackend::checkErrorWords(size_t f) {
  if (nccl)
    nccl->synchronize(stream, art.functions[f].name);
  else
    check(cudaStreamSynchronize(stream), art.functions[f].name);
  const FunctionPlan &fp = plans[f];
  if (fp.errorSteps.empty())
    return;
  std::vector<int64_t> words(fp.errorSteps.size());
  check(cudaMemcpy(words.data(), errorWords + fp.firstErrorSlot,
                   words.size() * sizeof(int64_t), cudaMemcpyDeviceToHost),
        "reading the error words");
  const Function &fn = art.functions[f];
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i] < 0)
      continue;
    auto readInt = [&](int64_t value, int64_t index) -> int64_t {
      const Value &v = fn.values[value];
      const uint8_t *p = bindings->functions[f].ptrs[value];
      if (v.dtype == data::DType::I64) {
        int64_t x = 0;
        download(&x, p + index * 8, 8);
        return x;
      }
      int32_t x = 0;
      download(&x, p + index * 4, 4);
      return x;
    };
    auto readFloat = [&](int64_t value, int64_t index) -> double {
      const Value &v = fn.values[value];
      const uint8_t *p = bindings->functions[f].ptrs[value];
      if (v.dtype == data::DType::F32) {
        float x = 0;
        download(&x, p + index * 4, 4);
        return x;
      }
      uint16_t h = 0;
      download(&h, p + index * 2, 2);
      return v.dtype == data::DType::BF16 ? data::bf16ToFloat(h)
                                          : data::f16ToFloat(h);
    };
    tcc_status status;
    std::string msg = callErrorMessage(fn, size_t(fp.errorSteps[i]), words[i],
                                       art.params, readInt, readFloat, status);
    fail(status, msg);
  }
}

void CudaBackend::setStepCounter(int64_t step) {
  hostStep = step;
  if (bindings->step)
    check(cudaMemcpyAsync(bindings->step, &hostStep, sizeof(int64_t),
                          cudaMemcpyHostToDevice, stream),
          "setting the step counter");
}

void CudaBackend::run(size_t f, int64_t step) {
  ContextScope scope(context);
  checkNotCapturing();
  FunctionPlan &fp = plans[f];
  setStepCounter(step);
  size_t begin = 0;
  bucket = 0;
  for (size_t g = 0; g < fp.segmentEnds.size(); ++g) {
    size_t end = fp.segmentEnds[g];
    cudaGraphExec_t &exec =
        fp.graphs[g * size_t(fp.buckets.count + 1) + size_t(bucket)];
    if (!useGraphs) {
      enqueue(f, begin, end);
    } else {
      if (!exec) {
        check(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture");
        try {
          enqueue(f, begin, end);
        } catch (...) {
          cudaGraph_t partial = nullptr;
          cudaStreamEndCapture(stream, &partial);
          if (partial)
            cudaGraphDestroy(partial);
          throw;
        }
        cudaGraph_t graph = nullptr;
        check(cudaStreamEndCapture(stream, &graph), "cudaStreamEndCapture");
        cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
        cudaGraphDestroy(graph);
        check(e, "cudaGraphInstantiate");
      }
      check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    }
    checkErrorWords(f); // synchronises
    if (int64_t(end) == fp.packStep + 1)
      bucket = readBucket(f);
    begin = end;
  }
  bucket = 0;
}

int CudaBackend::readBucket(size_t f) {
  const FunctionPlan &fp = plans[f];
  int32_t count = 0;
  download(&count,
           bindings->functions[f].ptrs[fp.countValue] + 4 * fp.packBatch, 4);
  return fp.buckets.of(count);
}

// Eager, not a graph replay: a graph's kernels cannot be timed one by one
// from the host. The segments and error checks are run()'s.
void CudaBackend::runProfiled(size_t f, int64_t step, std::vector<double> &ms) {
  ContextScope scope(context);
  checkNotCapturing();
  size_t steps = art.functions[f].steps.size();
  StepEvents timing(steps);
  setStepCounter(step);
  size_t begin = 0;
  bucket = 0;
  for (size_t end : plans[f].segmentEnds) {
    enqueue(f, begin, end, &timing);
    checkErrorWords(f); // synchronises
    if (int64_t(end) == plans[f].packStep + 1)
      bucket = readBucket(f);
    begin = end;
  }
  bucket = 0;
  ms.resize(steps);
  for (size_t s = 0; s < steps; ++s)
    ms[s] = timing.ms(s);
}

} // namespace

std::unique_ptr<Backend> makeCudaBackend(const SessionOptions &options,
                                         const Artifact &artifact) {
  return std::make_unique<CudaBackend>(options, artifact);
}

} // namespace tcc::rt
