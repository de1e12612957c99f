//===- session.cpp - the C API (runtime/api/tcc_runtime.h) ----------------===//
//
// A session owns the artifact as loaded and a backend (backend.h), which
// holds the persistent buffers (parameters, the bf16/f16 working copies of
// those that have one, optimizer state, the step counter, bound inputs,
// constants) and one arena in its memory (host or device) and runs the
// steps. A working copy is derived state: the session writes it, rounded to
// nearest even from the f32 master, whenever it writes the master from the
// host (open, tcc_write_param, tcc_restore_checkpoint); the steps keep it
// up to date (the optimizer's new_working); no checkpoint holds it.
// A training artifact runs train_step / eval_step; an inference artifact
// runs forward, whose outputs are read where the plan left them.
// Every value of every function resolves to a fixed address when the
// session opens, so running a step is a walk over its steps. Bytes move
// between the caller and the session only through Backend::upload/download.
// The session keeps its options (options.h): the backend takes the device,
// stream and allocator; the communicator waits for the collectives.
// Failures are thrown where they are found and become a status and
// tcc_last_error() in guard() (session_state.h, over guard.h); none escapes
// a C API function. The struct itself is in session_state.h, which
// session_checkpoint.cpp (tcc_save_checkpoint, tcc_restore_checkpoint)
// shares.
//
//===----------------------------------------------------------------------===//

#include "api/tcc_runtime.h"

#include "data/half.h"
#include "data/safetensors.h"
#include "exec/artifact.h"
#include "exec/backend.h"
#include "exec/dp.h"
#include "exec/guard.h"
#include "exec/options.h"
#include "exec/session_state.h"
#include "exec/zero_session.h"
#include "plan/liveness.h"
#include "plan/schedule.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

using tcc::data::Array;
using tcc::data::DType;
using namespace tcc::rt;
using namespace tcc::rt::session;

namespace {

thread_local std::string lastErrorText;

} // namespace

namespace tcc::rt::session {

std::string &lastError() { return lastErrorText; }

std::string describe(const TensorDesc &t) {
  return std::string(tcc::data::dtypeName(t.dtype)) + " " +
         shapeString(t.shape);
}

} // namespace tcc::rt::session

namespace {

template <class T> void fillAs(std::vector<uint8_t> &bytes, T value) {
  for (size_t i = 0; i + sizeof(T) <= bytes.size(); i += sizeof(T))
    std::memcpy(bytes.data() + i, &value, sizeof(T));
}

/// `t`'s bytes with every element `value` (which the loader checked fits
/// t.dtype: finite, in range, an integer for integer types).
std::vector<uint8_t> filled(const TensorDesc &t, double value) {
  std::vector<uint8_t> bytes(size_t(t.bytes));
  switch (t.dtype) {
  case DType::F64:
    fillAs(bytes, value);
    break;
  case DType::F32:
    fillAs(bytes, static_cast<float>(value));
    break;
  case DType::BF16:
    fillAs(bytes, tcc::data::floatToBf16(static_cast<float>(value)));
    break;
  case DType::F16:
    fillAs(bytes, tcc::data::floatToF16(static_cast<float>(value)));
    break;
  case DType::I32:
    fillAs(bytes, static_cast<int32_t>(value));
    break;
  case DType::I64:
    fillAs(bytes, static_cast<int64_t>(value));
    break;
  case DType::Bool:
    fillAs(bytes, static_cast<uint8_t>(value != 0));
    break;
  default:
    fail(TCC_ERROR_FORMAT, "optimizer state '" + t.name + "' is " +
                               describe(t) + ", which has no initial value");
  }
  return bytes;
}

} // namespace

namespace tcc::rt::session {

/// Optimizer state i as this session holds it: all of it, or this rank's
/// slice.
Slice heldState(const tcc_session &s, size_t i) {
  return s.zero ? s.zero->held(i) : Slice{0, s.art.optState[i].elements};
}

/// Parameter i's working copy, when it has one, from `master`: the
/// parameter's f32 bytes on the host, each element rounded to nearest even
/// (data/half.h, as the optimizer kernels round new_working).
void refreshWorking(tcc_session &s, size_t i, const void *master) {
  const TensorDesc &p = s.art.params[i];
  if (!p.working || s.working[i].size() == 0)
    return;
  std::vector<uint16_t> bits(size_t(p.elements));
  const uint8_t *src = static_cast<const uint8_t *>(master);
  bool bf16 = *p.working == DType::BF16;
  for (size_t e = 0; e < bits.size(); ++e) {
    float f;
    std::memcpy(&f, src + 4 * e, 4); // the caller's buffer may be unaligned
    bits[e] = bf16 ? tcc::data::floatToBf16(f) : tcc::data::floatToF16(f);
  }
  s.backend->upload(s.working[i].data(), bits.data(), s.working[i].size());
}

} // namespace tcc::rt::session

namespace {

/// The batch input value `v` of `fn` holds, read by step `before`: an input
/// itself, or under --accum its micro-batch slice (the last step before
/// `before` writing v's arena bytes, a kernel reading only that input).
std::optional<int64_t> batchInputOf(const Function &fn, int64_t v,
                                    size_t before) {
  const Value &value = fn.values[size_t(v)];
  if (value.storage == Storage::Input)
    return value.index;
  if (value.storage != Storage::Arena)
    return std::nullopt;
  for (size_t i = before; i-- > 0;) {
    const Step &step = fn.steps[i];
    bool writes = std::any_of(
        step.outputs.begin(), step.outputs.end(), [&](int64_t o) {
          const Value &out = fn.values[size_t(o)];
          return out.storage == Storage::Arena && out.offset == value.offset;
        });
    if (!writes)
      continue;
    if (step.kind != Step::Kernel || step.inputs.size() != 1)
      return std::nullopt;
    const Value &in = fn.values[size_t(step.inputs[0])];
    return in.storage == Storage::Input ? std::optional<int64_t>(in.index)
                                        : std::nullopt;
  }
  return std::nullopt;
}

void open(tcc_session &s, const std::string &dir,
          const tcc_session_options *options) {
  s.options = readSessionOptions(options);
  checkBackendOptions(s.options);
  s.art = loadArtifact(dir);
  const Artifact &art = s.art;
  s.backend = makeBackend(s.options, art);

  // Parameters from the initial weights (the loader checked the header).
  std::string weightsPath = art.file("weights");
  std::vector<Array> weights = tcc::data::readSafetensors(weightsPath);
  for (const TensorDesc &p : art.params) {
    const Array *w = tcc::data::findArray(weights, p.name);
    if (!w || w->bytes.size() != size_t(p.bytes))
      fail(TCC_ERROR_FORMAT,
           weightsPath + ": parameter '" + p.name + "' is missing or mis-sized");
    s.params.push_back(s.alloc(p.bytes, "parameter '" + p.name + "'"));
    s.backend->upload(s.params.back().data(), w->bytes.data(), p.bytes);
    // Its working copy, allocated apart like the parameter itself.
    s.working.push_back(
        p.working ? s.alloc(size_t(p.elements) * tcc::data::dtypeSize(*p.working),
                            "the working copy of parameter '" + p.name + "'")
                  : Mem{});
    refreshWorking(s, s.params.size() - 1, w->bytes.data());
  }
  weights.clear();
  if (s.options.zeroStage == 1 &&
      s.options.communicatorKind != TCC_COMMUNICATOR_NONE)
    s.zero = std::make_unique<ZeroShards>(s.art, *s.backend);
  // Optimizer state starts at zero (the backends clear what they allocate)
  // or at its plan "init", e.g. a loss scale of 65536; under ZeRO-1 this
  // rank's slice of what is sharded.
  for (size_t i = 0; i < art.optState.size(); ++i) {
    const TensorDesc &t = art.optState[i];
    size_t elem = tcc::data::dtypeSize(t.dtype);
    Slice held = heldState(s, i);
    size_t bytes = size_t(held.count) * elem;
    s.optState.push_back(s.alloc(bytes, "optimizer state '" + t.name + "'"));
    double init = t.init.value_or(0.0);
    if ((init != 0 || std::signbit(init)) && bytes > 0)
      s.backend->upload(s.optState.back().data(),
                        filled(t, init).data() + size_t(held.first) * elem,
                        bytes);
  }
  // The session's inputs: train_step's (every function binds by name from
  // them), or forward's in an inference artifact.
  const Function &train = art.primary();
  for (const TensorDesc &t : train.inputs) {
    s.inputs.push_back(s.alloc(t.bytes, "input '" + t.name + "'"));
    std::vector<int64_t> shape = t.shape;
    if (art.manifest.accum > 1 && shape.size() >= 2) {
      shape[1] *= shape[0];
      shape.erase(shape.begin());
    }
    s.feedShapes.push_back(std::move(shape));
  }
  s.bound.assign(train.inputs.size(), false);
  std::vector<std::string> constantNames;
  if (!art.file("constants").empty()) {
    std::string path = art.file("constants");
    std::vector<Array> constants = tcc::data::readSafetensors(path);
    for (const TensorDesc &c : art.constants) {
      const Array *a = tcc::data::findArray(constants, c.name);
      if (!a || a->bytes.size() != size_t(c.bytes))
        fail(TCC_ERROR_FORMAT,
             path + ": constant '" + c.name + "' is missing or mis-sized");
      s.constants.push_back(s.alloc(c.bytes, "constant '" + c.name + "'"));
      s.backend->upload(s.constants.back().data(), a->bytes.data(), c.bytes);
    }
  }
  MemoryPlan mem = memoryPlan(art);
  s.arena = s.alloc(size_t(mem.arena), "the arena");
  s.step = s.alloc(sizeof(int64_t), "the step counter");
  s.bindings.arena = s.arena.data();
  s.bindings.step = s.step.data();
  const char *poison = std::getenv("TCC_POISON_ARENA");
  bool poisoning = poison && std::string(poison) == "1";

  for (const Function &fn : art.functions) {
    std::vector<size_t> inputOf;
    for (const TensorDesc &in : fn.inputs)
      for (size_t i = 0; i < train.inputs.size(); ++i)
        if (train.inputs[i].name == in.name)
          inputOf.push_back(i);
    std::vector<uint8_t *> ptrs;
    for (const Value &v : fn.values) {
      uint8_t *p = nullptr;
      switch (v.storage) {
      case Storage::Arena:
        p = s.arena.data() + v.offset;
        break;
      case Storage::Param:
        p = s.params[v.index].data();
        break;
      case Storage::Working:
        p = s.working[v.index].data();
        break;
      case Storage::OptState:
        p = s.optState[v.index].data();
        break;
      case Storage::Step:
        p = s.step.data();
        break;
      case Storage::Input:
        p = s.inputs[inputOf[v.index]].data();
        break;
      case Storage::Constant:
        for (size_t c = 0; c < art.constants.size(); ++c)
          if (art.constants[c].name == v.name)
            p = s.constants[c].data();
        break;
      }
      ptrs.push_back(p);
    }
    FunctionBinding fb;
    if (s.zero) {
      fb.shards = s.zero->stepShards(s.bindings.functions.size());
      fb.scatterGradients = !fb.shards.empty();
    }
    for (const Result &r : fn.results) {
      const std::vector<Mem> *slots = r.role == Role::Param    ? &s.params
                                      : r.role == Role::OptState ? &s.optState
                                      : r.role == Role::Working  ? &s.working
                                                                   : nullptr;
      if (!slots)
        continue;
      const Mem &slot = (*slots)[r.index];
      if (ptrs[r.value] != slot.data() && slot.size())
        fb.resultCopies.push_back({slot.data(), ptrs[r.value], slot.size()});
    }
    fb.ptrs = std::move(ptrs);
    if (poisoning) {
      Dataflow flow = analyzeDataflow(fn, [](const std::string &msg) {
        fail(TCC_ERROR_FORMAT, msg); // the loader has already checked this
      });
      fb.poison = poisonSchedule(fn, flow, mem.arena);
    }
    s.bindings.functions.push_back(std::move(fb));
    s.inputOf.push_back(std::move(inputOf));
  }
  s.backend->prepare(s.bindings);

  if (art.inference())
    for (const Result &r : train.results) {
      const Value &v = train.values[r.value];
      TensorDesc t;
      t.name = r.name;
      t.dtype = v.dtype;
      t.shape = v.shape;
      t.elements = v.elements;
      t.bytes = v.bytes;
      s.outputs.push_back(std::move(t));
      s.outputValues.push_back(r.value);
      s.outputCopies.emplace_back();
    }

  for (const Function &fn : s.art.functions)
    for (const Result &r : fn.results)
      if (r.role == Role::Metric &&
          std::find(s.metricNames.begin(), s.metricNames.end(), r.name) ==
              s.metricNames.end()) {
        s.metricNames.push_back(r.name);
        s.metricValues.push_back(std::nan(""));
      }

  bool crossEntropy = false;
  for (size_t at = 0; at < train.steps.size(); ++at)
    if (const Step &step = train.steps[at];
        step.kind == Step::Call && step.op == Op::CrossEntropy) {
      if (std::optional<int64_t> input =
              batchInputOf(train, step.inputs[1], at))
        s.labelInput = train.inputs[size_t(*input)].name;
      s.labelIgnoreIndex = step.attrs.ignoreIndex;
      crossEntropy = true;
      break;
    }
  if (!crossEntropy) // no cross_entropy: its gradient's, if any
    for (const Step &step : train.steps)
      if (step.kind == Step::Call && step.op == Op::CrossEntropyGrad) {
        s.labelIgnoreIndex = step.attrs.ignoreIndex;
        break;
      }
}

/// Runs function `f` on the bound inputs: its steps, then the copies of
/// param / opt_state results into their slots. With `ms`, profiled: ms[i]
/// receives step i's time (Backend::runProfiled).
void execute(tcc_session &s, size_t f, std::vector<double> *ms = nullptr) {
  const Function &fn = s.art.functions[f];
  for (size_t i = 0; i < fn.inputs.size(); ++i)
    if (!s.bound[s.inputOf[f][i]])
      fail(TCC_ERROR_ARGUMENT, fn.name + ": input '" + fn.inputs[i].name +
                                   "' is not bound (tcc_bind_input)");
  if (ms)
    s.backend->runProfiled(f, s.stepsDone, *ms);
  else
    s.backend->run(f, s.stepsDone);
  if (s.zero)
    s.zero->gatherAfter(f, s.params, s.working);
}

/// The f32 or f64 scalar value `v` of function `f` after it ran.
double readScalar(const tcc_session &s, size_t f, int64_t v) {
  const uint8_t *p = s.ptrs(f)[v];
  if (s.art.functions[f].values[v].dtype == DType::F64) {
    double x;
    s.backend->download(&x, p, sizeof x);
    return x;
  }
  float x;
  s.backend->download(&x, p, sizeof x);
  return x;
}

/// Runs training function `f` on the bound inputs and returns its loss;
/// its metrics go to s.metricValues.
double run(tcc_session &s, size_t f, std::vector<double> *ms = nullptr) {
  execute(s, f, ms);
  const Function &fn = s.art.functions[f];
  for (const Result &r : fn.results)
    if (r.role == Role::Metric) {
      auto it = std::find(s.metricNames.begin(), s.metricNames.end(), r.name);
      s.metricValues[size_t(it - s.metricNames.begin())] =
          readScalar(s, f, r.value);
    }
  return readScalar(s, f, fn.lossValue);
}

void needSession(const tcc_session *s) {
  if (!s)
    fail(TCC_ERROR_ARGUMENT, "session is NULL");
}

} // namespace

namespace tcc::rt::session {

/// Refuses `call` (a training function) on an inference session.
void needTraining(const tcc_session *s, const char *call) {
  needSession(s);
  if (s->art.inference())
    fail(TCC_ERROR_ARGUMENT,
         std::string(call) + ": '" + s->art.dir +
             "' is an inference artifact (manifest kind \"inference\"): it "
             "has no training step or optimizer state; run it with "
             "tcc_forward");
}

} // namespace tcc::rt::session

namespace {

/// Refuses `call` (an inference function) on a training session.
void needInference(const tcc_session *s, const char *call) {
  needSession(s);
  if (!s->art.inference())
    fail(TCC_ERROR_ARGUMENT,
         std::string(call) + ": '" + s->art.dir +
             "' is a training artifact: it has no forward function or "
             "outputs; run it with tcc_train_step / tcc_eval_step");
}

/// Refuses an optimizer-state index out of range.
void needStateIndex(const tcc_session *s, int32_t index) {
  needSession(s);
  if (index < 0 || size_t(index) >= s->optState.size())
    fail(TCC_ERROR_ARGUMENT, "optimizer state index " + std::to_string(index) +
                                 " is out of range (" +
                                 std::to_string(s->optState.size()) + ")");
}

void needName(const char *name, const char *what) {
  if (!name)
    fail(TCC_ERROR_ARGUMENT, std::string(what) + " name is NULL");
}

void fillInfo(const TensorDesc &t, const std::vector<int64_t> &shape,
              tcc_tensor_info *info) {
  if (!info)
    fail(TCC_ERROR_ARGUMENT, "info is NULL");
  info->name = t.name.c_str();
  info->dtype = apiDType(t.dtype);
  info->rank = int32_t(shape.size());
  info->shape = shape.data();
  info->bytes = size_t(t.bytes);
}

/// The slot called `name` of `descs`; `what` names the kind in messages.
size_t findSlot(const std::vector<TensorDesc> &descs, const char *name,
                const char *what) {
  needName(name, what);
  for (size_t i = 0; i < descs.size(); ++i)
    if (descs[i].name == name)
      return i;
  std::string known;
  for (size_t i = 0; i < descs.size() && i < 8; ++i)
    known += (i ? ", " : "") + descs[i].name;
  if (descs.size() > 8)
    known += ", ...";
  fail(TCC_ERROR_ARGUMENT, std::string("no ") + what + " '" + name + "'" +
                               (descs.empty() ? std::string(" (there are none)")
                                              : " (" + known + ")"));
}

void checkBytes(const TensorDesc &t, size_t bytes, const void *p,
                const char *what) {
  if (size_t(t.bytes) != bytes)
    fail(TCC_ERROR_ARGUMENT, std::string(what) + " '" + t.name + "' is " +
                                 std::to_string(t.bytes) + " bytes (" +
                                 describe(t) + "), got " +
                                 std::to_string(bytes));
  if (!p && bytes)
    fail(TCC_ERROR_ARGUMENT, std::string(what) + " '" + t.name +
                                 "': the buffer is NULL");
}

/// checkBytes for optimizer state i, which under ZeRO-1 may be this rank's
/// slice only.
void checkStateBytes(const tcc_session &s, size_t i, size_t bytes,
                     const void *p) {
  const TensorDesc &t = s.art.optState[i];
  Slice held = heldState(s, i);
  if (held.count == t.elements) {
    checkBytes(t, bytes, p, "optimizer state");
    return;
  }
  if (s.optState[i].size() != bytes)
    fail(TCC_ERROR_ARGUMENT,
         "optimizer state '" + t.name + "' is sharded over " +
             std::to_string(s.zero->ranks()) +
             " ranks (zero_stage 1): this rank holds its elements [" +
             std::to_string(held.first) + ", " +
             std::to_string(held.first + held.count) + "), " +
             std::to_string(s.optState[i].size()) + " bytes, got " +
             std::to_string(bytes));
  if (!p && bytes)
    fail(TCC_ERROR_ARGUMENT, "optimizer state '" + t.name +
                                 "': the buffer is NULL");
}

} // namespace

extern "C" {

const char *tcc_status_string(tcc_status status) {
  switch (status) {
  case TCC_OK:
    return "ok";
  case TCC_ERROR_IO:
    return "i/o error";
  case TCC_ERROR_FORMAT:
    return "malformed artifact or checkpoint";
  case TCC_ERROR_VERSION:
    return "unsupported artifact version";
  case TCC_ERROR_ARGUMENT:
    return "bad argument";
  case TCC_ERROR_DATA:
    return "bad input data";
  case TCC_ERROR_BACKEND:
    return "unsupported by the backend";
  case TCC_ERROR_CHECKPOINT:
    return "checkpoint of another model or configuration";
  case TCC_ERROR_MEMORY:
    return "out of memory";
  }
  return "unknown status";
}

const char *tcc_last_error(void) { return lastErrorText.c_str(); }

tcc_status tcc_session_open(const char *artifact_dir,
                            const tcc_session_options *options,
                            tcc_session **out) {
  if (out)
    *out = nullptr;
  return guard([&] {
    if (!out)
      fail(TCC_ERROR_ARGUMENT, "tcc_session_open: out is NULL");
    if (!artifact_dir)
      fail(TCC_ERROR_ARGUMENT, "tcc_session_open: artifact_dir is NULL");
    auto s = std::make_unique<tcc_session>();
    open(*s, artifact_dir, options);
    *out = s.release();
  });
}

void tcc_session_close(tcc_session *session) { delete session; }

int32_t tcc_num_inputs(const tcc_session *s) {
  return s ? int32_t(s->inputs.size()) : 0;
}

tcc_status tcc_input_info(const tcc_session *s, int32_t index,
                          tcc_tensor_info *info) {
  return guard([&] {
    needSession(s);
    if (index < 0 || size_t(index) >= s->inputs.size())
      fail(TCC_ERROR_ARGUMENT, "input index " + std::to_string(index) +
                                   " is out of range (" +
                                   std::to_string(s->inputs.size()) + ")");
    fillInfo(s->art.primary().inputs[index], s->feedShapes[index], info);
  });
}

int32_t tcc_num_params(const tcc_session *s) {
  return s ? int32_t(s->params.size()) : 0;
}

tcc_status tcc_param_info(const tcc_session *s, int32_t index,
                          tcc_tensor_info *info) {
  return guard([&] {
    needSession(s);
    if (index < 0 || size_t(index) >= s->params.size())
      fail(TCC_ERROR_ARGUMENT, "parameter index " + std::to_string(index) +
                                   " is out of range (" +
                                   std::to_string(s->params.size()) + ")");
    fillInfo(s->art.params[index], s->art.params[index].shape, info);
  });
}

int32_t tcc_num_opt_state(const tcc_session *s) {
  return s ? int32_t(s->optState.size()) : 0;
}

tcc_status tcc_opt_state_info(const tcc_session *s, int32_t index,
                              tcc_tensor_info *info) {
  return guard([&] {
    needStateIndex(s, index);
    fillInfo(s->art.optState[index], s->art.optState[index].shape, info);
  });
}

tcc_status tcc_opt_state_shard(const tcc_session *s, int32_t index,
                               int64_t *first, int64_t *count) {
  return guard([&] {
    needStateIndex(s, index);
    Slice held = heldState(*s, size_t(index));
    if (first)
      *first = held.first;
    if (count)
      *count = held.count;
  });
}

const char *tcc_label_input(const tcc_session *s) {
  return s && !s->labelInput.empty() ? s->labelInput.c_str() : nullptr;
}

int64_t tcc_label_ignore_index(const tcc_session *s) {
  return s ? s->labelIgnoreIndex : -100;
}

tcc_status tcc_bind_input(tcc_session *s, const char *name, const void *data,
                          size_t bytes) {
  return guard([&] {
    needSession(s);
    const std::vector<TensorDesc> &inputs = s->art.primary().inputs;
    size_t i = findSlot(inputs, name, "input");
    checkBytes(inputs[i], bytes, data, "input");
    s->backend->upload(s->inputs[i].data(), data, bytes);
    s->bound[i] = true;
  });
}

tcc_status tcc_train_step(tcc_session *s, double *loss) {
  return guard([&] {
    needTraining(s, "tcc_train_step");
    double l = run(*s, s->fnIndex("train_step"));
    ++s->stepsDone;
    if (loss)
      *loss = l;
  });
}

tcc_status tcc_profile_step(tcc_session *s, double *loss,
                            tcc_profile_record *records, size_t capacity,
                            size_t *count) {
  return guard([&] {
    needTraining(s, "tcc_profile_step");
    if (!count)
      fail(TCC_ERROR_ARGUMENT, "tcc_profile_step: count is NULL");
    size_t f = s->fnIndex("train_step");
    const Function &fn = s->art.functions[f];
    *count = fn.steps.size();
    if (!records)
      return;
    if (capacity < fn.steps.size())
      fail(TCC_ERROR_ARGUMENT,
           "tcc_profile_step: capacity " + std::to_string(capacity) +
               " is less than train_step's " +
               std::to_string(fn.steps.size()) + " steps");
    std::vector<double> ms;
    double l = run(*s, f, &ms);
    ++s->stepsDone;
    if (loss)
      *loss = l;
    for (size_t i = 0; i < fn.steps.size(); ++i) {
      const Step &step = fn.steps[i];
      switch (step.kind) {
      case Step::Kernel:
        records[i] = {int32_t(i), TCC_PROFILE_KERNEL, step.symbol.c_str(),
                      ms[i], step.tokenRows};
        break;
      case Step::Call:
        records[i] = {int32_t(i), TCC_PROFILE_CALL, opName(step.op), ms[i],
                      step.tokenRows};
        break;
      case Step::Collective:
        records[i] = {int32_t(i), TCC_PROFILE_COLLECTIVE,
                      collectiveName(step.collective), ms[i], 0};
        break;
      }
    }
  });
}

tcc_status tcc_eval_step(tcc_session *s, double *loss) {
  return guard([&] {
    needTraining(s, "tcc_eval_step");
    size_t f = s->fnIndex("eval_step");
    if (f == s->art.functions.size())
      fail(TCC_ERROR_ARGUMENT, s->art.file("plan") + ": the artifact has no "
                                                     "eval_step");
    double l = run(*s, f);
    if (loss)
      *loss = l;
  });
}

int64_t tcc_steps_done(const tcc_session *s) { return s ? s->stepsDone : 0; }

const char *tcc_backend_notes(const tcc_session *s) {
  return s ? s->backend->notes().c_str() : "";
}

int32_t tcc_num_metrics(const tcc_session *s) {
  return s ? int32_t(s->metricNames.size()) : 0;
}

const char *tcc_metric_name(const tcc_session *s, int32_t index) {
  return s && index >= 0 && size_t(index) < s->metricNames.size()
             ? s->metricNames[index].c_str()
             : nullptr;
}

tcc_status tcc_read_metric(const tcc_session *s, const char *name,
                           double *value) {
  return guard([&] {
    needSession(s);
    needName(name, "metric");
    if (!value)
      fail(TCC_ERROR_ARGUMENT, "tcc_read_metric: value is NULL");
    auto it = std::find(s->metricNames.begin(), s->metricNames.end(),
                        std::string(name));
    if (it == s->metricNames.end()) {
      std::string known;
      for (const std::string &m : s->metricNames)
        known += (known.empty() ? "" : ", ") + m;
      fail(TCC_ERROR_ARGUMENT,
           std::string("no metric '") + name + "' (" +
               (known.empty() ? std::string("the artifact has none") : known) +
               ")");
    }
    *value = s->metricValues[size_t(it - s->metricNames.begin())];
  });
}

tcc_status tcc_forward(tcc_session *s) {
  return guard([&] {
    needInference(s, "tcc_forward");
    s->forwardDone = false;
    size_t f = s->fnIndex("forward");
    execute(*s, f);
    const Function &fn = s->art.functions[f];
    for (size_t i = 0; i < s->outputs.size(); ++i) {
      const Value &v = fn.values[s->outputValues[i]];
      if (v.storage == Storage::Arena)
        continue;
      std::vector<uint8_t> &copy = s->outputCopies[i];
      copy.resize(size_t(v.bytes));
      s->backend->download(copy.data(), s->ptrs(f)[s->outputValues[i]],
                           size_t(v.bytes));
    }
    s->forwardDone = true;
  });
}

int32_t tcc_num_outputs(const tcc_session *s) {
  return s ? int32_t(s->outputs.size()) : 0;
}

tcc_status tcc_output_info(const tcc_session *s, int32_t index,
                           tcc_tensor_info *info) {
  return guard([&] {
    needInference(s, "tcc_output_info");
    if (index < 0 || size_t(index) >= s->outputs.size())
      fail(TCC_ERROR_ARGUMENT, "output index " + std::to_string(index) +
                                   " is out of range (" +
                                   std::to_string(s->outputs.size()) + ")");
    fillInfo(s->outputs[index], s->outputs[index].shape, info);
  });
}

tcc_status tcc_read_output(const tcc_session *s, const char *name, void *dst,
                           size_t bytes) {
  return guard([&] {
    needInference(s, "tcc_read_output");
    size_t i = findSlot(s->outputs, name, "output");
    checkBytes(s->outputs[i], bytes, dst, "output");
    if (!s->forwardDone)
      fail(TCC_ERROR_ARGUMENT,
           std::string("tcc_read_output: output '") + name +
               "' has no value: tcc_forward has not run (or failed)");
    size_t f = s->fnIndex("forward");
    const Value &v = s->art.functions[f].values[s->outputValues[i]];
    if (v.storage == Storage::Arena)
      s->backend->download(dst, s->ptrs(f)[s->outputValues[i]], bytes);
    else if (bytes)
      std::memcpy(dst, s->outputCopies[i].data(), bytes);
  });
}

tcc_status tcc_read_param(const tcc_session *s, const char *name, void *dst,
                          size_t bytes) {
  return guard([&] {
    needSession(s);
    size_t i = findSlot(s->art.params, name, "parameter");
    checkBytes(s->art.params[i], bytes, dst, "parameter");
    s->backend->download(dst, s->params[i].data(), bytes);
  });
}

tcc_status tcc_write_param(tcc_session *s, const char *name, const void *src,
                           size_t bytes) {
  return guard([&] {
    needSession(s);
    size_t i = findSlot(s->art.params, name, "parameter");
    checkBytes(s->art.params[i], bytes, src, "parameter");
    s->backend->upload(s->params[i].data(), src, bytes);
    refreshWorking(*s, i, src);
  });
}

tcc_status tcc_read_opt_state(const tcc_session *s, const char *name,
                              void *dst, size_t bytes) {
  return guard([&] {
    needSession(s);
    size_t i = findSlot(s->art.optState, name, "optimizer state");
    checkStateBytes(*s, i, bytes, dst);
    if (bytes) // a rank's slice may be empty
      s->backend->download(dst, s->optState[i].data(), bytes);
  });
}

tcc_status tcc_write_opt_state(tcc_session *s, const char *name,
                               const void *src, size_t bytes) {
  return guard([&] {
    needSession(s);
    size_t i = findSlot(s->art.optState, name, "optimizer state");
    checkStateBytes(*s, i, bytes, src);
    if (bytes)
      s->backend->upload(s->optState[i].data(), src, bytes);
  });
}

const char *tcc_train_config(const tcc_session *s) {
  return s ? s->art.manifest.trainConfig.c_str() : "";
}

double tcc_learning_rate(const tcc_session *s, int64_t it) {
  return s && !s->art.inference() ? learningRate(s->art.manifest.schedule, it)
                                  : NAN;
}

tcc_status tcc_memory(const tcc_session *s, tcc_memory_info *info) {
  return guard([&] {
    needSession(s);
    if (!info)
      fail(TCC_ERROR_ARGUMENT, "info is NULL");
    // What the session allocated, which is what memoryPlan() predicts.
    auto sum = [](const std::vector<Mem> &bufs) {
      int64_t n = 0;
      for (const Mem &b : bufs)
        n += int64_t(b.size());
      return n;
    };
    info->arena_bytes = int64_t(s->arena.size());
    info->param_bytes = sum(s->params);
    info->working_bytes = sum(s->working);
    info->opt_state_bytes = sum(s->optState);
    info->input_bytes = sum(s->inputs);
    info->constant_bytes = sum(s->constants);
    info->total_bytes = info->arena_bytes + info->param_bytes +
                        info->working_bytes + info->opt_state_bytes +
                        info->input_bytes + info->constant_bytes;
  });
}

} // extern "C"
