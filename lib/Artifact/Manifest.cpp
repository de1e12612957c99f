// manifest.json: what the artifact is (its kind), which files it has, and
// for a training artifact the training configuration the runtime prints,
// logs and stores in checkpoints.
#include "Plan.h"

#include "tcc/Artifact/Artifact.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

namespace tcc::artifact {

/// The schedule object on one line.
static std::string scheduleJson(const TrainConfig &config) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::json::OStream j(os);
  const ScheduleSpec &sched = config.schedule;
  j.object([&] {
    j.attribute("kind", sched.kind == ScheduleSpec::Cosine   ? "cosine"
                        : sched.kind == ScheduleSpec::Linear ? "linear"
                                                             : "constant");
    j.attributeBegin("lr");
    j.rawValue(formatDouble(config.optimizer.lr));
    j.attributeEnd();
    if (sched.kind != ScheduleSpec::Constant) {
      j.attribute("warmup", sched.warmup);
      j.attribute("total", sched.total);
    }
    if (sched.kind == ScheduleSpec::Cosine) {
      j.attributeBegin("min_lr");
      j.rawValue(formatDouble(sched.minLr));
      j.attributeEnd();
    }
  });
  return s;
}

/// The "files" object.
static void filesJson(llvm::json::OStream &json, const ManifestFiles &files) {
  json.attributeBegin("files");
  json.object([&] {
    json.attribute("plan", "plan.json");
    json.attribute("weights", "weights.safetensors");
    if (files.constants)
      json.attribute("constants", "constants.safetensors");
    json.attribute("kernel_source", "kernels/kernels.cc");
    json.attribute("kernel_prelude", "kernels/tcc_kernel.h");
    json.attribute("host_kernels", "kernels/host.so");
    if (files.cudaKernels)
      json.attribute("cuda_kernels", "kernels/kernels.fatbin");
  });
  json.attributeEnd();
}

std::string manifestJson(const std::string &source,
                         const std::string &fingerprint,
                         const TrainConfig &config,
                         const ManifestFiles &files) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("format", "tcc-artifact");
    json.attribute("version", kArtifactVersion);
    json.attribute("kind", "training");
    json.attribute("producer", "tcc " TCC_VERSION);
    json.attribute("source", llvm::sys::path::filename(source));
    json.attribute("fingerprint", fingerprint);
    json.attribute("train_config", describeTrainConfig(config));
    json.attributeBegin("schedule");
    json.rawValue(scheduleJson(config));
    json.attributeEnd();
    json.attribute("accum", config.accum);
    filesJson(json, files);
  });
  os << "\n";
  return s;
}

std::string inferenceManifestJson(const std::string &source,
                                  const ManifestFiles &files) {
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::json::OStream json(os, /*IndentSize=*/2);
  json.object([&] {
    json.attribute("format", "tcc-artifact");
    json.attribute("version", kArtifactVersion);
    json.attribute("kind", "inference");
    json.attribute("producer", "tcc " TCC_VERSION);
    json.attribute("source", llvm::sys::path::filename(source));
    filesJson(json, files);
  });
  os << "\n";
  return s;
}

} // namespace tcc::artifact
