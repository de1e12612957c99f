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
// batch starts and a resumed run continues with exactly that batch. Both read
// in order unless told otherwise: shuffle(seed) makes Batcher read each epoch
// in a permutation drawn from the seed, randomWindows(seed) makes
// TokenBatcher cut random windows as nanoGPT's get_batch does (random.h).
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

  /// Index of the sample the next batch starts with, in [0, numSamples());
  /// when shuffled, the number of samples read since the start (epoch
  /// position() / numSamples(), its sample position() % numSamples()).
  int64_t position() const { return pos; }
  /// Makes the next batch start at sample `position`, which must lie in
  /// [0, numSamples()) (any position >= 0 when shuffled).
  void seek(int64_t position);

  /// Reads the samples as one stream of epochs, epoch e in the order
  /// epochPermutation(seed, e) (random.h); batches run across epochs as in
  /// order. Call before the first next() or seek(); position restarts at 0.
  void shuffle(uint64_t seed);

  int64_t numSamples() const { return samples; }
  int64_t batchSize() const { return batch; }

private:
  struct Feed {
    InputSpec spec;
    Array data;
    int64_t sampleElems;
  };
  /// The sample at stream position `g` of a shuffled feed.
  int64_t shuffledSample(int64_t g);

  std::vector<Feed> feeds;
  std::string source;
  int64_t samples = 0, batch = 0, pos = 0;
  bool shuffled = false;
  uint64_t seed = 0;
  /// The permutation of epoch `permEpoch` (-1: none yet).
  std::vector<int64_t> perm;
  int64_t permEpoch = -1;
};

/// Language-model batches from uint16 token files (shards).
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
///
/// Several shards read as llm.c reads them: in the order given, each as
/// above, the next batch moving on to the next shard (after the last, the
/// first) where it would run past the end of one; positions count tokens
/// through the shards one after another.
///
/// With randomWindows(seed), row r of batch k is the T+1 tokens from a start
/// drawn uniformly (streamAt(seed, k), one draw per row) among the starts of
/// all shards whose window lies inside one shard, as nanoGPT's get_batch
/// draws torch.randint(len(data) - T); positions count batches.
///
/// With packDocuments(eot, ...), rows hold whole documents instead of
/// windows (`tcc run --pack-documents`). The shards read as one stream of
/// tokens; a document is the tokens from where the last one ended up to and
/// including the next `eot` (or the stream's last token). Document
/// [d0, ..., dn, eot] trains as n+1 positions: inputs d0..dn, targets
/// d1..dn, eot, position ids 0..n. Each row of T positions takes the next
/// documents in stream order while they fit in what is left of it; the
/// rest of the row is padding: input `eot`, target `ignoreIndex` (the
/// loss's), position ids 0, 1, ... (a segment of its own). A document of
/// more than T positions starts on a row of its own and is cut into chunks
/// of T positions, each chunk's position ids from 0 and its last target the
/// document's next token; the rest after the last whole chunk is a document
/// like any other. Documents of one token (an eot right after an eot) have
/// no positions and are skipped. At the end of the stream the next document
/// starts at token 0. position() is the token index where the next row's
/// first document starts, so seek(position()) repeats the same next batch.
class TokenBatcher {
public:
  /// The whole file is read into memory. Throws Error when the file holds
  /// fewer than B*T+1 tokens.
  TokenBatcher(const std::string &path, int64_t batch, int64_t seqLen,
               std::string inputName, std::string targetName);
  /// Shards in this order; each must hold B*T+1 tokens.
  TokenBatcher(const std::vector<std::string> &paths, int64_t batch,
               int64_t seqLen, std::string inputName, std::string targetName);

  /// {x named inputName, y named targetName}, both int64 [B, T]; packing
  /// documents, then the position ids named positionName, int64 [B, T].
  std::vector<Array> next();

  /// Token index the next batch starts at (random windows: batches drawn).
  int64_t position() const { return pos; }
  /// Makes the next batch start at token `position` in [0, numTokens()); a
  /// position too close to the end for a whole batch starts again at 0.
  /// Random windows: any number of batches drawn >= 0.
  void seek(int64_t position);

  /// Draws random windows from `seed`; call before next() or seek().
  void randomWindows(uint64_t seed);

  /// Packs whole documents ended by token `eot` into the rows (see above),
  /// padding with targets `ignoreIndex`; next() adds the position ids as a
  /// third array named `positionName`. Call before next() or seek(); the
  /// position restarts at 0. Throws Error with random windows.
  void packDocuments(uint16_t eot, int64_t ignoreIndex,
                     std::string positionName = "position_ids");
  bool packsDocuments() const { return packed; }

  int64_t numTokens() const { return total; }
  /// Batches in one pass through the shards in order. Packing documents:
  /// the batches from token 0 that end at or before the end of the stream
  /// (at least 1), counted by packing the whole stream once.
  int64_t batchesPerPass() const;

private:
  void wrapIfShort();
  /// The shard holding global token `p`.
  size_t shardOf(int64_t p) const;
  /// Global token `g` in [0, total); `k` is the shard tried first, and
  /// becomes the one holding `g`.
  uint16_t tokenAt(int64_t g, size_t &k) const;
  /// The positions of the document starting at global token `g`: up to
  /// and including the next eot or the stream's last token, less one;
  /// limit + 1 when more than `limit`.
  int64_t documentPositions(int64_t g, int64_t limit, size_t &k) const;
  /// Fills one packed row from stream position `v` (token v % total; a
  /// count past the end of the stream, so that a pass is v <= total) and
  /// returns the stream position of the next row's first document. Null
  /// x, y, ids: counts only.
  int64_t packRow(int64_t v, int64_t *x, int64_t *y, int64_t *ids,
                  size_t &k) const;

  std::string path, inputName, targetName;
  std::vector<std::vector<uint16_t>> shards;
  /// Global index of each shard's first token.
  std::vector<int64_t> starts;
  int64_t total = 0, batch, seqLen, pos = 0;
  bool random = false;
  uint64_t seed = 0;
  /// packDocuments: the end-of-text token, the padding's target, the name
  /// of the position ids, and batchesPerPass() once counted (-1 before).
  bool packed = false;
  uint16_t eot = 0;
  int64_t ignoreIndex = -100;
  std::string positionName;
  mutable int64_t packedBatches = -1;
};

} // namespace tcc::data

#endif // TCC_RUNTIME_DATA_BATCHER_H
