//===- digests.h - checksums of a checkpoint's tensors ----------*- C++ -*-===//
//
// Each tensor of params.safetensors and optimizer.safetensors carries its
// SHA-256 in the file's "__metadata__" ("sha256:<tensor name>": 64 hex
// digits), written by saveCheckpoint and checked by loadCheckpoint, so a
// flipped byte is refused on resume instead of trained on. A file with no
// such entry at all was written before checksums and is read unchecked; a
// file with some is checked for every tensor.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CHECKPOINT_DIGESTS_H
#define TCC_RUNTIME_CHECKPOINT_DIGESTS_H

#include "data/npz.h"

#include <map>
#include <string>
#include <vector>

namespace tcc::checkpoint {

/// The metadata entries recording `arrays`' digests.
std::map<std::string, std::string>
tensorDigests(const std::vector<data::Array> &arrays);

/// Checks `arrays`, read from `path` with `metadata`, against the digests
/// there; data::Error "PATH: tensor 'NAME' is damaged (its SHA-256 differs
/// from the one saved with it)" or "PATH: no checksum for tensor 'NAME'".
void checkTensorDigests(const std::string &path,
                        const std::vector<data::Array> &arrays,
                        const std::map<std::string, std::string> &metadata);

} // namespace tcc::checkpoint

#endif // TCC_RUNTIME_CHECKPOINT_DIGESTS_H
