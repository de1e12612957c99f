#include "run/session_engine.h"

#include "checkpoint/checkpoint.h"
#include "data/finite.h"
#include "data/half.h"
#include "plan/plan.h"

#include <cstring>
#include <filesystem>

namespace tcc::run {

static std::string lastError() { return tcc_last_error(); }

std::unique_ptr<SessionEngine> SessionEngine::open(const std::string &artifact,
                                                   const std::string &backend,
                                                   int32_t device,
                                                   std::string &error,
                                                   void *comm, double timeout,
                                                   int64_t zeroStage) {
  tcc_session_options options;
  tcc_session_options_init(&options);
  options.backend = backend.c_str();
  options.device = device;
  if (comm) {
    options.communicator_kind =
        backend == "cuda" ? TCC_COMMUNICATOR_NCCL : TCC_COMMUNICATOR_MPI;
    options.communicator = comm;
    options.collective_timeout_s = timeout;
    options.zero_stage = zeroStage;
  }
  tcc_session *s = nullptr;
  if (tcc_session_open(artifact.c_str(), &options, &s) != TCC_OK) {
    error = lastError();
    return nullptr;
  }
  std::unique_ptr<SessionEngine> engine(new SessionEngine(s));
  for (int32_t i = 0, n = tcc_num_inputs(s); i < n; ++i) {
    tcc_tensor_info info;
    if (tcc_input_info(s, i, &info) != TCC_OK) {
      error = lastError();
      return nullptr;
    }
    data::InputSpec spec;
    spec.name = info.name;
    spec.dtype = rt::fromApiDType(info.dtype);
    spec.shape.assign(info.shape, info.shape + info.rank);
    engine->specs.push_back(std::move(spec));
  }
  return engine;
}

SessionEngine::~SessionEngine() { tcc_session_close(handle); }

std::string SessionEngine::tokenTarget() const {
  const char *label = tcc_label_input(handle);
  return label ? label : "";
}

bool SessionEngine::bind(const std::vector<data::Array> &batch,
                         std::string &error) {
  for (const data::Array &a : batch)
    if (tcc_bind_input(handle, a.name.c_str(), a.bytes.data(),
                       a.bytes.size()) != TCC_OK) {
      error = lastError();
      return false;
    }
  return true;
}

bool SessionEngine::step(std::vector<data::Array> batch, double &loss,
                         std::string &error) {
  if (!bind(batch, error))
    return false;
  if (tcc_train_step(handle, &loss) != TCC_OK) {
    error = lastError();
    return false;
  }
  return true;
}

bool SessionEngine::evalLoss(std::vector<data::Array> batch, double &loss,
                             std::string &error) {
  if (!bind(batch, error))
    return false;
  if (tcc_eval_step(handle, &loss) != TCC_OK) {
    error = lastError();
    return false;
  }
  return true;
}

int64_t SessionEngine::stepsDone() const { return tcc_steps_done(handle); }

double SessionEngine::learningRate(int64_t it) const {
  return tcc_learning_rate(handle, it);
}

bool SessionEngine::metric(const std::string &name, double &value) const {
  for (int32_t i = 0, n = tcc_num_metrics(handle); i < n; ++i)
    if (name == tcc_metric_name(handle, i))
      return tcc_read_metric(handle, name.c_str(), &value) == TCC_OK;
  return false;
}

bool SessionEngine::optStateScalar(const std::string &name,
                                   double &value) const {
  for (int32_t i = 0, n = tcc_num_opt_state(handle); i < n; ++i) {
    tcc_tensor_info info;
    if (tcc_opt_state_info(handle, i, &info) != TCC_OK || name != info.name)
      continue;
    if (info.rank != 0 && !(info.rank == 1 && info.shape[0] == 1))
      return false;
    unsigned char bytes[8] = {};
    if (info.bytes > sizeof bytes ||
        tcc_read_opt_state(handle, info.name, bytes, info.bytes) != TCC_OK)
      return false;
    auto as = [&](auto v) {
      std::memcpy(&v, bytes, sizeof v);
      return v;
    };
    switch (info.dtype) {
    case TCC_F32:
      value = as(float());
      return true;
    case TCC_F64:
      value = as(double());
      return true;
    case TCC_I32:
      value = double(as(int32_t()));
      return true;
    case TCC_I64:
      value = double(as(int64_t()));
      return true;
    case TCC_BF16:
      value = data::bf16ToFloat(as(uint16_t()));
      return true;
    case TCC_F16:
      value = data::f16ToFloat(as(uint16_t()));
      return true;
    default:
      return false;
    }
  }
  return false;
}

bool SessionEngine::findNonFinite(std::string &name, std::string &error) const {
  // One slot at a time through one buffer: a copy of the model's state at
  // once would double its host memory.
  std::vector<uint8_t> bytes;
  auto scan = [&](int32_t count, auto info, auto read, bool state) {
    for (int32_t i = 0; i < count; ++i) {
      tcc_tensor_info t;
      if (info(handle, i, &t) != TCC_OK)
        return false;
      // Under ZeRO-1 a rank holds a slice of some optimizer state.
      int64_t held = int64_t(t.bytes);
      if (state) {
        int64_t count = 0;
        if (tcc_opt_state_shard(handle, i, nullptr, &count) != TCC_OK)
          return false;
        held = count * int64_t(data::dtypeSize(rt::fromApiDType(t.dtype)));
      }
      bytes.resize(size_t(held));
      if (read(handle, t.name, bytes.data(), bytes.size()) != TCC_OK)
        return false;
      if (!data::allFinite(rt::fromApiDType(t.dtype), bytes.data(),
                           bytes.size())) {
        name = t.name;
        return true;
      }
    }
    return true;
  };
  name.clear();
  if (scan(tcc_num_params(handle), tcc_param_info, tcc_read_param, false) &&
      (!name.empty() || scan(tcc_num_opt_state(handle), tcc_opt_state_info,
                             tcc_read_opt_state, true)))
    return true;
  error = lastError();
  return false;
}

bool SessionEngine::saveCheckpoint(const std::string &dir, int64_t dataPosition,
                                   const nlohmann::json &extra,
                                   std::string &written, std::string &error) {
  const char *path = nullptr;
  if (tcc_save_checkpoint(handle, dir.c_str(), dataPosition,
                          extra.dump().c_str(), &path) != TCC_OK) {
    error = lastError();
    return false;
  }
  written = path ? path : dir;
  return true;
}

bool SessionEngine::restoreCheckpoint(const std::string &path,
                                      int64_t &dataPosition, std::string &from,
                                      std::string &error) {
  const char *used = nullptr;
  if (tcc_restore_checkpoint(handle, path.c_str(), &dataPosition, &used) !=
      TCC_OK) {
    error = lastError();
    return false;
  }
  from = used ? used : path;
  return true;
}

bool loadCheckpointParams(tcc_session *session, const std::string &path,
                          std::string &from, std::string &error) {
  checkpoint::Checkpoint ck;
  try {
    ck = checkpoint::loadCheckpoint(checkpoint::checkpointStepDir(path));
  } catch (const data::Error &e) {
    error = std::string("--checkpoint ") + e.what();
    return false;
  }
  from = ck.dir;
  for (int32_t i = 0, n = tcc_num_params(session); i < n; ++i) {
    tcc_tensor_info info;
    if (tcc_param_info(session, i, &info) != TCC_OK) {
      error = lastError();
      return false;
    }
    const data::Array *a = data::findArray(ck.params, info.name);
    std::vector<int64_t> shape(info.shape, info.shape + info.rank);
    if (!a) {
      error = from + ": no parameter '" + info.name +
              "' (a checkpoint of another model?)";
      return false;
    }
    if (a->dtype != rt::fromApiDType(info.dtype) || a->shape != shape) {
      error = from + ": parameter '" + info.name +
              "' differs in dtype or shape from the artifact's";
      return false;
    }
    if (tcc_write_param(session, info.name, a->bytes.data(), a->bytes.size()) !=
        TCC_OK) {
      error = lastError();
      return false;
    }
  }
  return true;
}

} // namespace tcc::run
