//===- fingerprint.h - which model a checkpoint belongs to ------*- C++ -*-===//
//
// A checkpoint's state.json names its model by a fingerprint: a hash of the
// parameters' and batch inputs' names, dtypes and shapes and of the training
// configuration line. The compiler writes it into the artifact's manifest,
// the reference trainer computes it from the IR, and a resume refuses a
// checkpoint whose fingerprint differs. One definition, so checkpoints of
// `tcc train --reference` and of a compiled artifact are interchangeable.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CHECKPOINT_FINGERPRINT_H
#define TCC_RUNTIME_CHECKPOINT_FINGERPRINT_H

#include "data/npz.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::checkpoint {

/// A tensor's identity for fingerprinting: no values.
struct TensorSignature {
  std::string name;
  data::DType dtype = data::DType::F32;
  std::vector<int64_t> shape;
};

/// "f32[2x8]".
std::string describeSignature(data::DType dtype,
                              const std::vector<int64_t> &shape);

/// 16 hex digits of FNV-1a over a canonical text of the arguments (stable
/// across builds and platforms). `batch` shapes are the step function's own
/// (with --accum N, [N, b, ...]).
std::string modelFingerprint(const std::vector<TensorSignature> &params,
                             const std::vector<TensorSignature> &batch,
                             const std::string &config);

} // namespace tcc::checkpoint

#endif // TCC_RUNTIME_CHECKPOINT_FINGERPRINT_H
