//===- batcher.h - training data feed ---------------------------*- C++ -*-===//
//
// Cuts training data into the per-step batches a compiled train step takes.
// Two sources, as design.md's data contract names them:
//
//  - Batcher: arrays from an .npz (or one .npy) named after the graph inputs,
//    leading axis = samples. Each step takes the next B samples in order for
//    every input, B being the leading dimension of the input's batch shape,
//    wrapping around at the end of the data.
//  - TokenBatcher: a uint16 token shard (nanoGPT's raw train.bin, or llm.c's
//    .bin with its 256 x int32 header); each step yields inputs x and targets
//    y = x shifted by one token, as int64 [B, T].
//
// Both expose position() and seek() so a checkpoint can record where the next
// batch starts and a resumed run continues with exactly that batch.
//
//===----------------------------------------------------------------------===//

#ifndef TCC_RUNTIME_DATA_BATCHER_H
#define TCC_RUNTIME_DATA_BATCHER_H

#include "data/npz.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tcc::data {

/// One graph input as the train step takes it.
struct InputSpec {
  std::string name;
  DType dtype = DType::F32;
  /// Per-step shape [B, sample dims...]; rank >= 1, B >= 1.
  std::vector<int64_t> shape;
};

/// Batches of samples from named arrays.
///
/// Every input must be present with its sample shape (the array's shape
/// without the leading axis equals the input's shape without B) and its
/// dtype. Integer data may be widened losslessly: i8/i16/u8/u16 to i32, and
/// i8/i16/i32/u8/u16/u32 to i64, because NumPy writes int32 or uint16 token
/// ids as readily as int64 and an ONNX export asks for int64. Nothing else is
/// converted. All inputs must share B and the same number of samples; arrays
/// no input names are ignored.
class Batcher {
public:
  /// `source` names the data in messages (normally the file path).
  Batcher(std::vector<Array> arrays, std::vector<InputSpec> inputs,
          std::string source);
  /// Reads `path` (.npz, or .npy holding one array named after the file).
  static Batcher open(const std::string &path, std::vector<InputSpec> inputs);

  /// The next batch: one Array per input, in the order of the inputs, named
  /// and shaped as the input. Samples are taken from position() on and wrap
  /// to sample 0 at the end, so data holding exactly B samples repeats one
  /// batch and data with fewer than B samples repeats within a batch (which
  /// the training loop refuses unless --allow-repeat).
  std::vector<Array> next();

  /// Index of the sample the next batch starts with, in [0, numSamples()).
  int64_t position() const { return pos; }
  /// Makes the next batch start at sample `position`, which must lie in
  /// [0, numSamples()).
  void seek(int64_t position);

  int64_t numSamples() const { return samples; }
  int64_t batchSize() const { return batch; }

private:
  struct Feed {
    InputSpec spec;
    Array data;
    int64_t sampleElems;
  };
  std::vector<Feed> feeds;
  std::string source;
  int64_t samples = 0, batch = 0, pos = 0;
};

/// Language-model batches from a uint16 token file.
///
/// Format: llm.c's shard when the file starts with a 1024-byte header of
/// int32 {20240520, 1, ntokens, 0...} followed by exactly ntokens uint16
/// tokens; otherwise the whole file is raw uint16 tokens (nanoGPT). The magic
/// reads as the token pair (55240, 308), and 55240 is past GPT-2's vocabulary,
/// so a raw GPT-2 file is never mistaken for a header.
///
/// A batch reads the B*T+1 tokens t[p .. p+B*T] and returns x = t[p ..
/// p+B*T-1] and y = t[p+1 .. p+B*T], each reshaped to [B, T]; the position
/// then advances by B*T. As llm.c's loader does, when the next batch would
/// run past the end it starts again at token 0 instead of joining the end of
/// the file to its start, so a file of exactly B*T+1 tokens repeats one batch.
class TokenBatcher {
public:
  /// The whole file is read into memory. Throws Error when the file holds
  /// fewer than B*T+1 tokens.
  TokenBatcher(const std::string &path, int64_t batch, int64_t seqLen,
               std::string inputName, std::string targetName);

  /// {x named inputName, y named targetName}, both int64 [B, T].
  std::vector<Array> next();

  /// Token index the next batch starts at.
  int64_t position() const { return pos; }
  /// Makes the next batch start at token `position` in [0, numTokens()); a
  /// position too close to the end for a whole batch starts again at 0.
  void seek(int64_t position);

  int64_t numTokens() const { return int64_t(tokens.size()); }

private:
  void wrapIfShort();

  std::string path, inputName, targetName;
  std::vector<uint16_t> tokens;
  int64_t batch, seqLen, pos = 0;
};

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_BATCHER_H
