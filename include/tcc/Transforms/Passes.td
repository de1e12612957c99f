// Every tcc pass, declared in TableGen: Passes.h.inc (the pass classes,
// options and statistics) and the pass reference docs/passes.md are
// generated from here.
#ifndef TCC_TRANSFORMS_PASSES_TD
#define TCC_TRANSFORMS_PASSES_TD

include "tcc/Transforms/TrainPasses.td"
include "tcc/Transforms/LowerPasses.td"

#endif // TCC_TRANSFORMS_PASSES_TD
