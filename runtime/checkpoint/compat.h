//===- compat.h - may this run resume from that checkpoint? -----*- C++ -*-===//
//
// The checks a resume makes before touching any state, shared by the
// runtime's tcc_restore_checkpoint and the reference trainer, so both refuse
// the same checkpoints with the same words.
//
//===----------------------------------------------------------------------===//
#ifndef TCC_RUNTIME_CHECKPOINT_COMPAT_H
#define TCC_RUNTIME_CHECKPOINT_COMPAT_H

#include "checkpoint/checkpoint.h"

#include <string>

namespace tcc::checkpoint {

/// The step directory `path` names: `path` itself when it holds a
/// state.json, else the latest complete checkpoint under it. Throws Error
/// ("no checkpoint in 'DIR'") when there is none.
std::string resolveCheckpoint(const std::string &path);

/// Why `ck` cannot be resumed by a run whose model fingerprint and
/// configuration line are `fingerprint` and `config`, or "" when it can:
/// "'DIR' was trained with another configuration: <fields> there, <fields>
/// here" or "'DIR' is a checkpoint of another model (...)".
std::string incompatibility(const Checkpoint &ck,
                            const std::string &fingerprint,
                            const std::string &config);

} // namespace tcc::checkpoint

#endif // TCC_RUNTIME_CHECKPOINT_COMPAT_H
