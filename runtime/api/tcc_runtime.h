/*===- tcc_runtime.h - the tcc runtime's C API ---------------------------===*
 *
 * Loads an artifact written by `tcc compile -o OUT.tcc` (docs/artifact.md)
 * and runs it: a training artifact's training and evaluation steps, or an
 * inference artifact's forward function (`tcc compile` without training
 * flags). Plain C, no LLVM/MLIR: this is what deployments and framework
 * backends link (libtcc_runtime).
 *
 * Conventions
 * - Every function that can fail returns a tcc_status; on anything but
 *   TCC_OK, tcc_last_error() holds one line naming the file, input,
 *   parameter or step at fault.
 * - Ownership: a tcc_session owns all of its memory (parameters, optimizer
 *   state, the arena, bound inputs), taken from the caller's tcc_allocator
 *   when the options give one. Callers pass buffers they own; the
 *   runtime copies from / into them and never keeps a pointer to one (the
 *   options' stream, allocator and communicator, which the session uses
 *   until it is closed, aside). Strings and
 *   tcc_tensor_info returned by the runtime stay valid until the session is
 *   closed.
 * - A session is not thread-safe: use it from one thread at a time.
 * - No function lets a C++ exception escape or aborts the process.
 *
 *===----------------------------------------------------------------------===*/
#ifndef TCC_RUNTIME_API_TCC_RUNTIME_H
#define TCC_RUNTIME_API_TCC_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The artifact format version this runtime reads (manifest "version"). */
#define TCC_ARTIFACT_VERSION 3

typedef enum tcc_status {
  TCC_OK = 0,
  TCC_ERROR_IO = 1,         /**< a file is missing or unreadable/unwritable */
  TCC_ERROR_FORMAT = 2,     /**< a corrupt or malformed artifact/checkpoint */
  TCC_ERROR_VERSION = 3,    /**< an artifact of another format version */
  TCC_ERROR_ARGUMENT = 4,   /**< a bad argument: unknown name, wrong size */
  TCC_ERROR_DATA = 5,       /**< bad input data, e.g. a label out of range */
  TCC_ERROR_BACKEND = 6,    /**< the backend cannot run this (no kernels...) */
  TCC_ERROR_CHECKPOINT = 7, /**< a checkpoint of another model/configuration */
  TCC_ERROR_MEMORY = 8,     /**< an allocation failed (arena, parameters...) */
} tcc_status;

typedef enum tcc_dtype {
  TCC_F32 = 0,
  TCC_F64 = 1,
  TCC_I32 = 2,
  TCC_I64 = 3,
  TCC_BOOL = 4, /**< one byte, 0 or 1 */
  TCC_BF16 = 5,
  TCC_F16 = 6,
} tcc_dtype;

/** A named tensor's description. */
typedef struct tcc_tensor_info {
  const char *name;
  tcc_dtype dtype;
  int32_t rank;
  const int64_t *shape; /**< rank entries */
  size_t bytes;         /**< element count times element size */
} tcc_tensor_info;

/** Bytes the session holds, by purpose. */
typedef struct tcc_memory_info {
  int64_t arena_bytes;     /**< the one scratch arena (the plan's peak) */
  int64_t param_bytes;     /**< parameters */
  int64_t working_bytes;   /**< bf16/f16 working copies of parameters */
  int64_t opt_state_bytes; /**< optimizer state */
  int64_t input_bytes;     /**< bound batch inputs */
  int64_t constant_bytes;  /**< constants the steps read */
  int64_t total_bytes;     /**< the sum of the above */
} tcc_memory_info;

/** What a profiled plan step is (plan.json "steps" kinds). */
typedef enum tcc_profile_kind {
  TCC_PROFILE_KERNEL = 0, /**< a generated kernel (one exec.fusion) */
  TCC_PROFILE_CALL = 1,   /**< a library call (matmul, attention, ...) */
  TCC_PROFILE_COLLECTIVE = 2, /**< a collective (all_reduce, ...) */
} tcc_profile_kind;

/** The time of one plan step of a profiled step (tcc_profile_step). */
typedef struct tcc_profile_record {
  int32_t step;          /**< its index in train_step's plan steps */
  tcc_profile_kind kind;
  const char *name;      /**< the kernel symbol ("tcc_fused_3"), the
                              library op ("matmul", "adamw_update") or
                              the collective ("all_reduce") */
  double ms;             /**< milliseconds, >= 0 */
  int64_t token_rows;    /**< > 0: the step runs over packed token rows
                              (pad-skipping), this many at most; else 0 */
} tcc_profile_record;

typedef struct tcc_session tcc_session;

/** "ok", "i/o error", ...: a fixed string for `status`. */
const char *tcc_status_string(tcc_status status);

/** The message of the last failed call on this thread ("" if none). */
const char *tcc_last_error(void);

/** Where a buffer lives (tcc_allocator). */
typedef enum tcc_memory_kind {
  TCC_MEMORY_HOST = 0,   /**< host memory (the "cpu" backend's) */
  TCC_MEMORY_DEVICE = 1, /**< device memory of the session's CUDA device */
} tcc_memory_kind;

/** Where a session's buffers come from, for a framework that manages memory
 *  itself (a caching allocator, a memory pool, accounting). The session
 *  calls `alloc` for every buffer it holds: parameters, their working
 *  copies, optimizer state, the step counter, bound inputs, constants, the
 *  arena and the backend's scratch ("cpu": the 16-bit calls' f32 scratch;
 *  "cuda": the library calls' workspace, the kernels' argument arrays, the
 *  multi-tensor AdamW tables, the error words). The plan's metadata and the
 *  CPU library kernels' row-sized temporaries come from the C++ heap.
 *  - alloc(ctx, bytes, alignment, kind): `bytes` > 0 bytes of `kind`
 *    memory whose address is a multiple of `alignment` (a power of two: 64
 *    for host memory, the arena's alignment; 256 for device memory, what
 *    cudaMalloc gives), or NULL when it cannot, which fails the call that
 *    asked with TCC_ERROR_MEMORY naming the buffer and its size (a
 *    misaligned address is given back and fails with TCC_ERROR_ARGUMENT).
 *    The memory need not be cleared (the session clears what it needs),
 *    but device memory must be ready for use on the session's stream: no
 *    work still pending on it in another stream (a caching allocator that
 *    hands out a block last used on another stream synchronizes with that
 *    stream first; the session's stream may be non-blocking). Device
 *    memory is asked for with the session's device current, so
 *    cudaGetDevice() inside alloc names it.
 *  - free(ctx, ptr, bytes, kind): gives back a buffer alloc returned, with
 *    its size and kind; called when the session closes (or when an open
 *    fails), after the device has finished with it, the session's device
 *    current.
 *  Neither is called for an empty buffer. Both must be set, or neither (the
 *  backend's own allocator: calloc, cudaMalloc). `ctx` is passed through;
 *  the session never reads it. Both are called from the thread that made
 *  the tcc_* call. */
typedef struct tcc_allocator {
  void *ctx;
  void *(*alloc)(void *ctx, size_t bytes, size_t alignment,
                 tcc_memory_kind kind);
  void (*free)(void *ctx, void *ptr, size_t bytes, tcc_memory_kind kind);
} tcc_allocator;

/** What tcc_session_options.communicator is. */
typedef enum tcc_communicator_kind {
  TCC_COMMUNICATOR_NONE = 0, /**< one process (communicator NULL) */
  TCC_COMMUNICATOR_MPI = 1,  /**< communicator points to an MPI_Comm */
  TCC_COMMUNICATOR_NCCL = 2, /**< communicator is an ncclComm_t ("cuda") */
} tcc_communicator_kind;

/** How to open a session. Every field's default is all zero bytes, so
 *  tcc_session_options_init (or `= {sizeof(tcc_session_options)}` in C)
 *  gives the defaults; NULL options to tcc_session_open are the defaults.
 *
 *  ABI: `struct_size` is sizeof(tcc_session_options) as the caller
 *  compiled it. Fields are only ever appended, each with an all-zero
 *  default, and the struct has no trailing padding, so:
 *  - a field that ends beyond struct_size is not read: its default applies
 *    (a caller built against an older, smaller struct keeps working);
 *  - struct_size larger than this runtime's struct is accepted when the
 *    bytes this runtime does not know are all zero (their defaults), and
 *    refused otherwise (TCC_ERROR_ARGUMENT: options this runtime cannot
 *    honour, built against a newer tcc_runtime.h);
 *  - struct_size smaller than struct_size + backend (the mandatory prefix)
 *    is refused (TCC_ERROR_ARGUMENT), as is every refusal below. */
typedef struct tcc_session_options {
  size_t struct_size;
  /** "cpu" (NULL: the default) or "cuda":
   *  - "cpu": host memory; kernels/host.so and the CPU library kernels.
   *  - "cuda": device memory (tcc_memory counts the same bytes as "cpu"; a
   *    scratch workspace comes on top), kernels from
   *    kernels/kernels.fatbin, steps replayed as CUDA graphs.
   *    TCC_ERROR_BACKEND when the runtime was built without CUDA ("this
   *    runtime was built without CUDA") or there is no device;
   *    TCC_ERROR_FORMAT naming kernels.fatbin when it is missing. Every
   *    read/write/bind/checkpoint call copies between host and device and
   *    waits for it. Not yet run on a GPU (docs/artifact.md). */
  const char *backend;
  /** The device ordinal (default 0). "cuda": the CUDA device the session
   *  runs on (as cudaSetDevice counts them); an ordinal >= the device count
   *  is TCC_ERROR_ARGUMENT naming both. Each tcc_* call on the session
   *  makes that device's primary context current while it runs and
   *  restores the caller's current context before it returns. "cpu": only
   *  0 (TCC_ERROR_ARGUMENT otherwise). */
  int32_t device;
  /** What `communicator` is; TCC_COMMUNICATOR_NONE by default. */
  tcc_communicator_kind communicator_kind;
  /** "cuda": a cudaStream_t of the session's device that every copy,
   *  launch and CUDA graph of the session runs on (captured on it and
   *  replayed on it), after the work the caller enqueued on it before the
   *  call; calls return once the stream is idle. The session never
   *  destroys it; it must outlive the session, and must not be the legacy
   *  default stream (cudaStreamLegacy) unless TCC_CUDA_GRAPHS=0, nor be
   *  capturing when a step runs. NULL: the session creates a stream of its
   *  own. "cpu": must be NULL. */
  void *stream;
  /** Where the session's buffers come from (tcc_allocator); all NULL: the
   *  backend's own. */
  tcc_allocator allocator;
  /** The data-parallel group this session is a rank of (the MPI
   *  communicator's address or the NCCL communicator, as
   *  communicator_kind says), owned by the caller, outliving the session.
   *  The plan's collectives (exec.all_reduce) run over it: MPI on "cpu".
   *  Refused (TCC_ERROR_ARGUMENT): a kind without a communicator, a
   *  communicator without a kind, an unknown kind, NCCL on "cpu". */
  void *communicator;
  /** With a communicator: seconds a collective may wait for the other
   *  ranks before the step fails (TCC_ERROR_BACKEND naming it: a rank died
   *  or hangs); 0, the default, waits forever. */
  double collective_timeout_s;
  /** ZeRO stage: 0 (the default) or 1. With 1 and a communicator of N
   *  ranks (MPI on "cpu", NCCL on "cuda"), each rank keeps 1/N of the
   *  optimizer state: the elements [n*r/N, n*(r+1)/N) of every state
   *  tensor that an optimizer update (adamw_update's moments, sgd_update's
   *  momentum buffer) reads, n the parameter's elements. The gradients are
   *  reduce-scattered (each rank receives the slice its updates read), the
   *  gradient norm sums the ranks' parts, each update runs on its slice
   *  only, and the parameters (and their working copies) are then gathered
   *  from the ranks, so every rank ends the step with the same parameters
   *  (those without ZeRO up to the order of the sums). Then
   *  tcc_opt_state_shard says which elements this rank holds,
   *  tcc_read_opt_state / tcc_write_opt_state move that slice only,
   *  tcc_memory counts it, and tcc_save_checkpoint is collective: every
   *  rank calls it, rank 0 writes the whole state. Other state (a loss
   *  scale, its counters) is whole on every rank. Without a communicator
   *  it changes nothing. Other values: TCC_ERROR_ARGUMENT. */
  int64_t zero_stage;
} tcc_session_options;

/** Fills `options` with the defaults and struct_size = sizeof. Inline, so
 *  that struct_size is the size the caller was compiled with (a function in
 *  the library would write its own, possibly larger, struct). */
static inline void tcc_session_options_init(tcc_session_options *options) {
  if (!options)
    return;
  memset(options, 0, sizeof *options);
  options->struct_size = sizeof *options;
}

/** Loads `artifact_dir`, a training or an inference artifact (manifest
 *  "kind"), with `options` (NULL: the defaults, backend "cpu"). On open:
 *  parameters start at the artifact's initial weights, optimizer state at
 *  zero, steps done at 0. On failure *out is NULL and everything allocated
 *  has been freed. Everything is checked here, not when a step runs: the
 *  options, the manifest and plan, the weights, and whether the backend can
 *  run every step (TCC_ERROR_BACKEND naming the op and step otherwise).
 *  `options` is read during the call only; the stream, allocator and
 *  communicator it names must outlive the session.
 *  With TCC_CUDA_GRAPHS=0 set when a "cuda" session opens its steps are
 *  launched one by one rather than replayed as CUDA graphs; with
 *  TCC_CUDA_TF32=1 its fp32 GEMMs may run on TF32 tensor cores (as
 *  torch.backends.cuda.matmul.allow_tf32; off by default).
 *  Debugging: with the environment variable TCC_POISON_ARENA=1 set when the
 *  session opens, every arena byte not held by a live value is filled with
 *  0xFF (a NaN for floats) before each step, so a step that reads memory
 *  the plan does not give it shows up as NaNs. */
tcc_status tcc_session_open(const char *artifact_dir,
                            const tcc_session_options *options,
                            tcc_session **out);

/** Frees everything the session owns (its buffers through the options'
 *  allocator, after the device has finished with them). NULL is ignored. */
void tcc_session_close(tcc_session *session);

/** The batch inputs of the training step, as the data feed yields them:
 *  with accum N > 1 the leading dim is N*b (samples for all micro-batches).
 *  For an inference artifact: the inputs of forward, in its order. */
int32_t tcc_num_inputs(const tcc_session *session);
tcc_status tcc_input_info(const tcc_session *session, int32_t index,
                          tcc_tensor_info *info);

/** Parameters and optimizer state, in checkpoint order. */
int32_t tcc_num_params(const tcc_session *session);
tcc_status tcc_param_info(const tcc_session *session, int32_t index,
                          tcc_tensor_info *info);
int32_t tcc_num_opt_state(const tcc_session *session);
tcc_status tcc_opt_state_info(const tcc_session *session, int32_t index,
                              tcc_tensor_info *info);
/** The elements [*first, *first + *count) of optimizer state `index` that
 *  this session holds: all of them, or under zero_stage 1 this rank's
 *  slice (possibly none). Either pointer may be NULL. */
tcc_status tcc_opt_state_shard(const tcc_session *session, int32_t index,
                               int64_t *first, int64_t *count);

/** The batch input holding the loss's labels — the labels operand of the
 *  training step's first cross_entropy when that is a batch input (for a
 *  token file: the next-token targets) — or NULL when there is none. */
const char *tcc_label_input(const tcc_session *session);

/** The ignore_index of the training step's loss: that of its first
 *  cross_entropy (the one tcc_label_input names the labels of), else of its
 *  first cross_entropy_grad. A label equal to it counts for nothing: what a
 *  data feed writes as the target of a position with none (the padding of
 *  a packed row). -100, PyTorch's default, when the step has neither (and
 *  for a NULL session or an inference artifact). */
int64_t tcc_label_ignore_index(const tcc_session *session);

/** Copies `bytes` (must equal the input's info.bytes) into input `name`.
 *  Every input a step function reads must have been bound once before it
 *  runs (TCC_ERROR_ARGUMENT otherwise); a binding stays until replaced. */
tcc_status tcc_bind_input(tcc_session *session, const char *name,
                          const void *data, size_t bytes);

/** One optimizer step on the bound inputs; *loss (may be NULL) receives the
 *  step's loss, computed before the update. Increments the step count.
 *  On failure the step count is unchanged; a TCC_ERROR_DATA (a label or
 *  token id out of range, naming the input and the row) is raised where the
 *  step reads the bad value, before any parameter is updated in compiled
 *  plans (ids and labels are read in the forward pass). */
tcc_status tcc_train_step(tcc_session *session, double *loss);

/** tcc_train_step with each step of train_step's plan timed: one real
 *  optimizer step (the same results as tcc_train_step, steps done
 *  incremented, *loss as there) whose records[i] (i < *count) receive the
 *  time of plan step i, in plan order. `count` must not be NULL: *count
 *  receives the number of plan steps. With `records` NULL nothing runs (a
 *  query of *count); otherwise `capacity` must be at least that number
 *  (TCC_ERROR_ARGUMENT, nothing run). Record names stay valid until the
 *  session is closed. Times: "cpu" the wall time of each step on the
 *  calling thread (threads it starts included); "cuda" the device time
 *  between two events recorded around each step on the session's stream,
 *  the steps launched one by one rather than replayed as a CUDA graph,
 *  with a synchronisation at the end, so the profiled step is slower as a
 *  whole than a tcc_train_step. The records leave out what runs between
 *  steps (poisoning, result copies, reading the loss). Errors and their
 *  effects as tcc_train_step's. For measuring, not for every step. */
tcc_status tcc_profile_step(tcc_session *session, double *loss,
                            tcc_profile_record *records, size_t capacity,
                            size_t *count);

/** What the session's backend chose, when it opened, to run some ops: one
 *  line per choice, each ending in a newline; "" when there is nothing to
 *  say. "cuda" with conv steps: "conv: cuDNN 9.1.0" or "conv: tcc kernels
 *  (libcudnn.so.9 not found)" (docs/architecture.md). Valid until the
 *  session is closed; "" for NULL. */
const char *tcc_backend_notes(const tcc_session *session);

/** The evaluation loss on the bound inputs (no dropout, no update).
 *  TCC_ERROR_ARGUMENT when the artifact has no eval_step. */
tcc_status tcc_eval_step(tcc_session *session, double *loss);

/** Optimizer steps done (what the step function sees as its step input). */
int64_t tcc_steps_done(const tcc_session *session);

/** Scalar metrics the training functions return besides the loss (plan
 *  results of role "metric", names in docs/artifact.md): train_step's
 *  "grad_norm" when it computes the gradient norm, eval_step's "correct"
 *  and "counted" for a cross-entropy loss. 0 for an inference artifact.
 *  tcc_metric_name is NULL for an index out of range. */
int32_t tcc_num_metrics(const tcc_session *session);
const char *tcc_metric_name(const tcc_session *session, int32_t index);
/** *value receives metric `name` as the last successful tcc_train_step,
 *  tcc_profile_step or tcc_eval_step that returns it computed it; NaN
 *  before the first. TCC_ERROR_ARGUMENT for a name the artifact lacks. */
tcc_status tcc_read_metric(const tcc_session *session, const char *name,
                           double *value);

/* Inference artifacts (manifest "kind": "inference") have one function,
 * forward, and no optimizer state: tcc_train_step, tcc_eval_step,
 * tcc_save_checkpoint and tcc_restore_checkpoint return TCC_ERROR_ARGUMENT
 * on them (tcc_learning_rate is NaN, tcc_train_config ""), and the calls
 * below return TCC_ERROR_ARGUMENT on a training artifact. Parameters are
 * read and written as in training. */

/** Runs forward on the bound inputs (every input must be bound). The
 *  outputs keep the values of the last successful tcc_forward until the
 *  next one or until the session closes; rebinding inputs or writing
 *  parameters does not change them. */
tcc_status tcc_forward(tcc_session *session);

/** Forward's outputs, in its result order (0 for a training artifact). */
int32_t tcc_num_outputs(const tcc_session *session);
tcc_status tcc_output_info(const tcc_session *session, int32_t index,
                           tcc_tensor_info *info);

/** Copies output `name` into `dst`; `bytes` must equal its info.bytes.
 *  TCC_ERROR_ARGUMENT before the first successful tcc_forward (or after a
 *  failed one). */
tcc_status tcc_read_output(const tcc_session *session, const char *name,
                           void *dst, size_t bytes);

/** Copy a parameter / optimizer state slot out of or into the session;
 *  `bytes` must equal its info.bytes (a sharded optimizer state's: its
 *  slice's, tcc_opt_state_shard's count times the element size). Writing a parameter that has a
 *  bf16/f16 working copy (plan params[i].working) also rewrites that copy,
 *  the new values rounded to nearest even. Working copies are derived
 *  state: not parameters or optimizer state here, not in checkpoints. */
tcc_status tcc_read_param(const tcc_session *session, const char *name,
                          void *dst, size_t bytes);
tcc_status tcc_write_param(tcc_session *session, const char *name,
                           const void *src, size_t bytes);
tcc_status tcc_read_opt_state(const tcc_session *session, const char *name,
                              void *dst, size_t bytes);
tcc_status tcc_write_opt_state(tcc_session *session, const char *name,
                               const void *src, size_t bytes);

/** Writes DIR/step-<steps done>/ (runtime/checkpoint: params, optimizer
 *  state, state.json with the artifact's fingerprint and train_config,
 *  `data_position`, and `extra_json` — a JSON object text or NULL — merged
 *  in). Atomic: an interrupted save leaves the previous checkpoint intact.
 *  If `written` is not NULL it receives the step directory's path (valid
 *  until the next call on this session). Under zero_stage 1 with several
 *  ranks every rank must call it (the state's slices are gathered to rank
 *  0, which writes the whole of it; the others write nothing and receive
 *  ""). */
tcc_status tcc_save_checkpoint(tcc_session *session, const char *dir,
                               int64_t data_position, const char *extra_json,
                               const char **written);

/** Restores a step directory (or, given a checkpoint root, its latest
 *  complete checkpoint): parameters (and their working copies, rounded
 *  from them), optimizer state (under zero_stage 1, this rank's slice of
 *  it: a checkpoint resumes at any world size) and steps done.
 *  Refuses (TCC_ERROR_CHECKPOINT) a checkpoint of another model or
 *  configuration, naming what differs. *data_position (may be NULL)
 *  receives the saved data position; *restored_from (may be NULL) the step
 *  directory used. Nothing changes on failure. */
tcc_status tcc_restore_checkpoint(tcc_session *session, const char *path,
                                  int64_t *data_position,
                                  const char **restored_from);

/** The manifest's training configuration line and learning-rate schedule:
 *  the learning rate of step `it` (0-based: `it` is the steps done before
 *  the step), as the step computes it (nanoGPT's get_lr, in double).
 *  "" and NaN for an inference artifact. */
const char *tcc_train_config(const tcc_session *session);
double tcc_learning_rate(const tcc_session *session, int64_t it);

/** Bytes held; arena_bytes equals the plan's peak, the largest arena_bytes
 *  over the plan's functions, and total_bytes what `tcc inspect` prints as
 *  the session's memory. Constants count every tensor of
 *  constants.safetensors. */
tcc_status tcc_memory(const tcc_session *session, tcc_memory_info *info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TCC_RUNTIME_API_TCC_RUNTIME_H */
