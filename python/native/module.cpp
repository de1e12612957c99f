// tcc._native: the runtime's C API (runtime/api/tcc_runtime.h) for Python.
//
// A thin layer: one class over tcc_session, each method one C API call. A
// failed call raises tcc.TccError (tcc/_errors.py) with tcc_last_error()'s
// line and the status string (e.status); a closed session raises instead of
// passing NULL. Names, shapes and dtypes are checked in
// python/tcc/session.py, which builds the arrays this module reads from and
// writes into; the C API checks every size again, so a wrong one is an
// error here, not a crash.
//
// Buffers are taken as C-contiguous host ndarrays and handed to the runtime
// as they are (the runtime copies from or into them during the call): no
// copy on the Python side. The GIL stays held: a session is not thread-safe.
//
// Data parallel: a process mpirun started joins the MPI job once
// (join_world, runtime/exec/dp.h, as tcc-run does); a session opened with
// data_parallel then reduces over the world's communicator (cpu) or an
// NCCL communicator of its own over the ranks (cuda), which it destroys
// when it closes. leave_world ends the job's MPI at interpreter exit.
#include "api/tcc_runtime.h"
#include "checkpoint/checkpoint.h"
#include "data/npz.h"
#include "exec/dp.h"
#include "exec/dp_nccl.h"

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <tuple>
#include <vector>

namespace nb = nanobind;

namespace {

PyObject *tccError = nullptr;

[[noreturn]] void raise(const std::string &message, const char *status) {
  nb::object error = nb::borrow(tccError)(message, status);
  PyErr_SetObject(tccError, error.ptr());
  throw nb::python_error();
}

void check(tcc_status status) {
  if (status != TCC_OK)
    raise(tcc_last_error(), tcc_status_string(status));
}

/// (name, dtype code, shape) of a tcc_tensor_info.
using Info = std::tuple<std::string, int, std::vector<int64_t>>;

Info toInfo(const tcc_tensor_info &info) {
  return {info.name, int(info.dtype),
          std::vector<int64_t>(info.shape, info.shape + info.rank)};
}

using In = nb::ndarray<nb::ro, nb::c_contig, nb::device::cpu>;
using Out = nb::ndarray<nb::c_contig, nb::device::cpu>;

/// The MPI job of this process, joined at the first join_world (a world of
/// one when mpirun did not start it).
tcc::rt::dp::World &world() {
  static tcc::rt::dp::World w;
  return w;
}
bool joined = false;

/// (rank, world size) of this process's job, joining it first.
std::tuple<int, int> joinWorld() {
  if (!joined) {
    try {
      world() = tcc::rt::dp::joinWorld();
    } catch (const tcc::data::Error &e) {
      raise(e.what(), "backend error");
    }
    joined = true;
  }
  return {world().rank, world().size};
}

void leaveWorld() {
  if (joined)
    tcc::rt::dp::leaveWorld();
  joined = false;
}

class Session {
public:
  /// `dataParallel`: over the ranks of the job (join_world), ZeRO stage
  /// `zero`, collectives failing after `timeout` seconds; on cuda the local
  /// rank r runs on device + r.
  Session(const std::string &artifact, const std::string &backend,
          int32_t device, bool dataParallel, int64_t zero, double timeout) {
    tcc_session_options options;
    tcc_session_options_init(&options);
    options.backend = backend.c_str();
    if (dataParallel) {
      auto [rank, size] = joinWorld();
      if (size > 1) {
        if (backend == "cuda") {
          if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK"))
            device += std::atoi(local);
          try {
            nccl_ = tcc::rt::dp::createNcclComm(
                rank, size, device, tcc::rt::dp::broadcastFromRank0);
          } catch (const tcc::data::Error &e) {
            raise(e.what(), "backend error");
          }
          options.communicator_kind = TCC_COMMUNICATOR_NCCL;
          options.communicator = nccl_;
        } else {
          options.communicator_kind = TCC_COMMUNICATOR_MPI;
          options.communicator = world().comm;
        }
        options.collective_timeout_s = timeout;
      }
      rank_ = rank;
      size_ = size;
    }
    options.zero_stage = zero;
    options.device = device;
    tcc_status status = tcc_session_open(artifact.c_str(), &options, &session_);
    if (status != TCC_OK) {
      tcc::rt::dp::destroyNcclComm(nccl_);
      nccl_ = nullptr;
      check(status);
    }
  }
  ~Session() { close(); }
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  void close() {
    tcc_session_close(session_);
    session_ = nullptr;
    tcc::rt::dp::destroyNcclComm(nccl_);
    nccl_ = nullptr;
  }
  int rank() const { return rank_; }
  int worldSize() const { return size_; }
  bool closed() const { return session_ == nullptr; }

  std::vector<Info> inputs() const {
    return infos(tcc_num_inputs(open()), tcc_input_info);
  }
  std::vector<Info> params() const {
    return infos(tcc_num_params(open()), tcc_param_info);
  }
  std::vector<Info> optState() const {
    return infos(tcc_num_opt_state(open()), tcc_opt_state_info);
  }
  std::vector<Info> outputs() const {
    return infos(tcc_num_outputs(open()), tcc_output_info);
  }
  std::optional<std::string> labelInput() const {
    const char *label = tcc_label_input(open());
    return label ? std::optional<std::string>(label) : std::nullopt;
  }

  void bindInput(const std::string &name, In data) {
    check(tcc_bind_input(open(), name.c_str(), data.data(), data.nbytes()));
  }
  double trainStep() {
    double loss = 0;
    check(tcc_train_step(open(), &loss));
    return loss;
  }
  double evalStep() {
    double loss = 0;
    check(tcc_eval_step(open(), &loss));
    return loss;
  }
  void forward() { check(tcc_forward(open())); }
  void readOutput(const std::string &name, Out dst) const {
    check(tcc_read_output(open(), name.c_str(), dst.data(), dst.nbytes()));
  }
  void readParam(const std::string &name, Out dst) const {
    check(tcc_read_param(open(), name.c_str(), dst.data(), dst.nbytes()));
  }
  void writeParam(const std::string &name, In src) {
    check(tcc_write_param(open(), name.c_str(), src.data(), src.nbytes()));
  }
  void readOptState(const std::string &name, Out dst) const {
    check(tcc_read_opt_state(open(), name.c_str(), dst.data(), dst.nbytes()));
  }
  void writeOptState(const std::string &name, In src) {
    check(tcc_write_opt_state(open(), name.c_str(), src.data(), src.nbytes()));
  }
  std::tuple<int64_t, int64_t> optStateShard(int32_t index) const {
    int64_t first = 0, count = 0;
    check(tcc_opt_state_shard(open(), index, &first, &count));
    return {first, count};
  }

  std::string saveCheckpoint(const std::string &dir, int64_t dataPosition) {
    const char *written = nullptr;
    check(tcc_save_checkpoint(open(), dir.c_str(), dataPosition, nullptr,
                              &written));
    return written;
  }
  std::tuple<std::string, int64_t> restoreCheckpoint(const std::string &path) {
    const char *from = nullptr;
    int64_t position = 0;
    check(tcc_restore_checkpoint(open(), path.c_str(), &position, &from));
    return {from, position};
  }

  int64_t stepsDone() const { return tcc_steps_done(open()); }
  double learningRate(int64_t it) const {
    return tcc_learning_rate(open(), it);
  }
  std::string trainConfig() const { return tcc_train_config(open()); }
  std::string backendNotes() const { return tcc_backend_notes(open()); }
  std::vector<std::string> metrics() const {
    std::vector<std::string> names;
    for (int32_t i = 0, n = tcc_num_metrics(open()); i < n; ++i)
      names.push_back(tcc_metric_name(session_, i));
    return names;
  }
  double metric(const std::string &name) const {
    double value = 0;
    check(tcc_read_metric(open(), name.c_str(), &value));
    return value;
  }
  nb::dict memory() const {
    tcc_memory_info m;
    check(tcc_memory(open(), &m));
    nb::dict d;
    d["arena_bytes"] = m.arena_bytes;
    d["param_bytes"] = m.param_bytes;
    d["working_bytes"] = m.working_bytes;
    d["opt_state_bytes"] = m.opt_state_bytes;
    d["input_bytes"] = m.input_bytes;
    d["constant_bytes"] = m.constant_bytes;
    d["total_bytes"] = m.total_bytes;
    return d;
  }

private:
  tcc_session *open() const {
    if (!session_)
      raise("the session is closed", tcc_status_string(TCC_ERROR_ARGUMENT));
    return session_;
  }
  template <typename F> std::vector<Info> infos(int32_t n, F get) const {
    std::vector<Info> out;
    for (int32_t i = 0; i < n; ++i) {
      tcc_tensor_info info;
      check(get(session_, i, &info));
      out.push_back(toInfo(info));
    }
    return out;
  }

  tcc_session *session_ = nullptr;
  void *nccl_ = nullptr; ///< the session's NCCL communicator (cuda ranks)
  int rank_ = 0, size_ = 1;
};

/// The step directory a --checkpoint PATH names (runtime/checkpoint): PATH
/// when it holds state.json, else the newest complete checkpoint under it.
std::string checkpointStepDir(const std::string &path) {
  try {
    return tcc::checkpoint::checkpointStepDir(path);
  } catch (const std::exception &e) {
    raise(e.what(), tcc_status_string(TCC_ERROR_IO));
  }
}

} // namespace

NB_MODULE(_native, m) {
  // One exception type for the package, defined in Python (tcc/_errors.py).
  nb::object error = nb::module_::import_("tcc._errors").attr("TccError");
  tccError = error.release().ptr();
  m.attr("ARTIFACT_VERSION") = TCC_ARTIFACT_VERSION;
  m.def("checkpoint_step_dir", &checkpointStepDir, nb::arg("path"));
  m.def("join_world", &joinWorld);
  m.def("leave_world", &leaveWorld);

  nb::class_<Session>(m, "Session")
      .def(nb::init<const std::string &, const std::string &, int32_t, bool,
                    int64_t, double>(),
           nb::arg("artifact"), nb::arg("backend"), nb::arg("device"),
           nb::arg("data_parallel"), nb::arg("zero"), nb::arg("timeout"))
      .def("close", &Session::close)
      .def_prop_ro("closed", &Session::closed)
      .def_prop_ro("rank", &Session::rank)
      .def_prop_ro("world_size", &Session::worldSize)
      .def("inputs", &Session::inputs)
      .def("params", &Session::params)
      .def("opt_state", &Session::optState)
      .def("outputs", &Session::outputs)
      .def("label_input", &Session::labelInput)
      .def("bind_input", &Session::bindInput)
      .def("train_step", &Session::trainStep)
      .def("eval_step", &Session::evalStep)
      .def("forward", &Session::forward)
      .def("read_output", &Session::readOutput)
      .def("read_param", &Session::readParam)
      .def("write_param", &Session::writeParam)
      .def("read_opt_state", &Session::readOptState)
      .def("write_opt_state", &Session::writeOptState)
      .def("opt_state_shard", &Session::optStateShard)
      .def("save_checkpoint", &Session::saveCheckpoint)
      .def("restore_checkpoint", &Session::restoreCheckpoint)
      .def("steps_done", &Session::stepsDone)
      .def("learning_rate", &Session::learningRate)
      .def("train_config", &Session::trainConfig)
      .def("backend_notes", &Session::backendNotes)
      .def("metrics", &Session::metrics)
      .def("metric", &Session::metric)
      .def("memory", &Session::memory);
}
