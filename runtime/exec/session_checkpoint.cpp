//===- session_checkpoint.cpp - checkpoints of a session (C API) ---------===//
//
// tcc_save_checkpoint and tcc_restore_checkpoint (api/tcc_runtime.h): the
// session's parameters and optimizer state to and from a checkpoint
// directory (checkpoint/checkpoint.h), with its step, data position and
// train config. Under ZeRO-1 rank 0 writes the whole state, gathered from
// the ranks, and every rank restores its slice. A restore checks every
// tensor before it writes any, so a refused checkpoint leaves the session
// as it was.
//
//===----------------------------------------------------------------------===//

#include "exec/session_state.h"

#include "checkpoint/checkpoint.h"
#include "checkpoint/compat.h"
#include "data/safetensors.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using nlohmann::json;
using tcc::data::Array;
using namespace tcc::rt;
using namespace tcc::rt::session;

namespace {

std::vector<Array> snapshot(Backend &backend,
                            const std::vector<TensorDesc> &descs,
                            const std::vector<Mem> &buffers) {
  std::vector<Array> out;
  for (size_t i = 0; i < descs.size(); ++i) {
    Array a;
    a.name = descs[i].name;
    a.dtype = descs[i].dtype;
    a.shape = descs[i].shape;
    a.bytes.resize(buffers[i].size());
    backend.download(a.bytes.data(), buffers[i].data(), buffers[i].size());
    out.push_back(std::move(a));
  }
  return out;
}

/// Matches the arrays of a checkpoint file to the session's slots by name:
/// every slot present with its dtype and shape, nothing else.
std::vector<const Array *> matchArrays(const std::vector<TensorDesc> &descs,
                                       const std::vector<Array> &arrays,
                                       const std::string &file) {
  std::vector<const Array *> out;
  for (const TensorDesc &t : descs) {
    const Array *a = tcc::data::findArray(arrays, t.name);
    if (!a)
      fail(TCC_ERROR_CHECKPOINT, file + ": no tensor '" + t.name + "'");
    if (a->dtype != t.dtype || a->shape != t.shape)
      fail(TCC_ERROR_CHECKPOINT, file + ": '" + t.name + "' is " +
                                     tcc::data::dtypeName(a->dtype) + " " +
                                     shapeString(a->shape) +
                                     ", the artifact's is " + describe(t));
    out.push_back(a);
  }
  for (const Array &a : arrays) {
    bool known = false;
    for (const TensorDesc &t : descs)
      known |= t.name == a.name;
    if (!known)
      fail(TCC_ERROR_CHECKPOINT,
           file + ": tensor '" + a.name + "' is not in the artifact");
  }
  return out;
}

} // namespace

extern "C" {

tcc_status tcc_save_checkpoint(tcc_session *s, const char *dir,
                               int64_t data_position, const char *extra_json,
                               const char **written) {
  return guard([&] {
    needTraining(s, "tcc_save_checkpoint");
    if (!dir || !*dir)
      fail(TCC_ERROR_ARGUMENT, "tcc_save_checkpoint: no directory");
    if (data_position < 0)
      fail(TCC_ERROR_ARGUMENT, "tcc_save_checkpoint: negative data_position " +
                                   std::to_string(data_position));
    tcc::checkpoint::CheckpointState state;
    state.step = s->stepsDone;
    state.dataPosition = data_position;
    state.modelFingerprint = s->art.manifest.fingerprint;
    state.rng = json::object();
    state.extra = json::object();
    state.extra["train_config"] = s->art.manifest.trainConfig;
    if (extra_json) {
      json extra = json::parse(extra_json, nullptr, /*allow_exceptions=*/false);
      if (extra.is_discarded() || !extra.is_object())
        fail(TCC_ERROR_ARGUMENT,
             "tcc_save_checkpoint: extra_json is not a JSON object");
      for (auto it = extra.begin(); it != extra.end(); ++it) {
        for (const char *reserved : {"format_version", "step", "data_position",
                                     "model", "rng", "train_config"})
          if (it.key() == reserved)
            fail(TCC_ERROR_ARGUMENT, "tcc_save_checkpoint: extra_json field '" +
                                         it.key() + "' is reserved");
        state.extra[it.key()] = it.value();
      }
    }
    std::vector<Array> opt =
        s->zero ? s->zero->stateSnapshot(s->optState)
                : snapshot(*s->backend, s->art.optState, s->optState);
    if (s->zero && s->zero->rank() != 0) {
      s->written.clear(); // rank 0 writes the whole state
      if (written)
        *written = s->written.c_str();
      return;
    }
    try {
      s->written = tcc::checkpoint::saveCheckpoint(
          dir, snapshot(*s->backend, s->art.params, s->params), opt, state);
    } catch (const tcc::data::Error &e) {
      fail(TCC_ERROR_IO, e.what());
    }
    if (written)
      *written = s->written.c_str();
  });
}

tcc_status tcc_restore_checkpoint(tcc_session *s, const char *path,
                                  int64_t *data_position,
                                  const char **restored_from) {
  return guard([&] {
    needTraining(s, "tcc_restore_checkpoint");
    if (!path || !*path)
      fail(TCC_ERROR_ARGUMENT, "tcc_restore_checkpoint: no path");
    std::string stepDir;
    try {
      stepDir = tcc::checkpoint::resolveCheckpoint(path);
    } catch (const tcc::data::Error &e) {
      fail(TCC_ERROR_IO, e.what());
    }
    tcc::checkpoint::Checkpoint ck = tcc::checkpoint::loadCheckpoint(stepDir);
    const Manifest &m = s->art.manifest;
    std::string why =
        tcc::checkpoint::incompatibility(ck, m.fingerprint, m.trainConfig);
    if (!why.empty())
      fail(TCC_ERROR_CHECKPOINT, why);
    auto params =
        matchArrays(s->art.params, ck.params,
                    (fs::path(stepDir) / tcc::checkpoint::ParamsFile).string());
    auto opt = matchArrays(
        s->art.optState, ck.optState,
        (fs::path(stepDir) / tcc::checkpoint::OptimizerFile).string());
    // Everything checked: nothing below can fail.
    for (size_t i = 0; i < params.size(); ++i) {
      s->backend->upload(s->params[i].data(), params[i]->bytes.data(),
                         params[i]->bytes.size());
      refreshWorking(*s, i, params[i]->bytes.data());
    }
    for (size_t i = 0; i < opt.size(); ++i) {
      size_t elem = tcc::data::dtypeSize(s->art.optState[i].dtype);
      if (s->optState[i].size() == 0)
        continue; // this rank's slice is empty
      s->backend->upload(s->optState[i].data(),
                         opt[i]->bytes.data() +
                             size_t(heldState(*s, i).first) * elem,
                         s->optState[i].size());
    }
    s->stepsDone = ck.state.step;
    s->restoredFrom = ck.dir;
    if (data_position)
      *data_position = ck.state.dataPosition;
    if (restored_from)
      *restored_from = s->restoredFrom.c_str();
  });
}

} // extern "C"
