//===- session_engine.h - the loop's engine over a compiled artifact ------===//
//
// Drives a tcc_session (runtime/api/tcc_runtime.h): what `tcc run`,
// `tcc-run` and `tcc train` use. Going through the C API, not around it,
// keeps the API honest: the CLI can do nothing a deployment cannot.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_RUN_SESSION_ENGINE_H
#define TCC_RUNTIME_RUN_SESSION_ENGINE_H

#include "api/tcc_runtime.h"
#include "run/engine.h"

#include <memory>

namespace tcc::run {

class SessionEngine : public Engine {
public:
  /// Opens `artifact` on `backend` ("cpu", "cuda") and its device
  /// `device`, a rank of the communicator `comm` when it is not null: on
  /// "cpu" it points to an MPI_Comm, on "cuda" it is an ncclComm_t
  /// (collectives wait `timeout` seconds at most, 0: forever), with the
  /// optimizer state sharded over its ranks when `zeroStage` is 1; null
  /// with `error` set on failure.
  static std::unique_ptr<SessionEngine>
  open(const std::string &artifact, const std::string &backend, int32_t device,
       std::string &error, void *comm = nullptr, double timeout = 0,
       int64_t zeroStage = 0);
  ~SessionEngine() override;

  const std::vector<data::InputSpec> &batchSpecs() const override {
    return specs;
  }
  std::string tokenTarget() const override;
  int64_t labelIgnoreIndex() const override {
    return tcc_label_ignore_index(handle);
  }
  bool step(std::vector<data::Array> batch, double &loss,
            std::string &error) override;
  bool evalLoss(std::vector<data::Array> batch, double &loss,
                std::string &error) override;
  int64_t stepsDone() const override;
  double learningRate(int64_t it) const override;
  bool optStateScalar(const std::string &name, double &value) const override;
  bool metric(const std::string &name, double &value) const override;
  bool findNonFinite(std::string &name, std::string &error) const override;
  bool saveCheckpoint(const std::string &dir, int64_t dataPosition,
                      const nlohmann::json &extra, std::string &written,
                      std::string &error) override;
  bool restoreCheckpoint(const std::string &path, int64_t &dataPosition,
                         std::string &from, std::string &error) override;

  tcc_session *session() const { return handle; }

private:
  explicit SessionEngine(tcc_session *s) : handle(s) {}
  bool bind(const std::vector<data::Array> &batch, std::string &error);

  tcc_session *handle;
  std::vector<data::InputSpec> specs;
};

/// Writes the parameters of the checkpoint `path` (a step directory, or the
/// latest checkpoint under a checkpoint directory) into `session`, which
/// may be an inference artifact of the model trained: every parameter of
/// the session must be in the checkpoint with its dtype and shape. `from`
/// receives the step directory read.
bool loadCheckpointParams(tcc_session *session, const std::string &path,
                          std::string &from, std::string &error);

} // namespace tcc::run

#endif // TCC_RUNTIME_RUN_SESSION_ENGINE_H
