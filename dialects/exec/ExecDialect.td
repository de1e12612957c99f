#ifndef EXEC_DIALECT_TD
#define EXEC_DIALECT_TD

include "mlir/IR/OpBase.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::tcc::exec";
  let summary = "The scheduled step: kernel launches, library calls, collectives, the memory plan";
  let description = [{
    What codegen and the plan writer read: the step functions once lowered,
    each op a plan step the runtime executes. `tcc-fuse` makes every
    generated kernel an `exec.fusion` (the `tcc` ops it computes in its
    region); `tcc-lower-calls` wraps every library op into an `exec.call`
    and declares, as a conversion target, that nothing else launches;
    collectives (`exec.all_reduce`, `exec.reduce_scatter`,
    `exec.all_gather`) exchange tensors between data-parallel ranks;
    `tcc-plan-memory` places every result, as `exec.*` attributes that this
    dialect verifies (`exec.arena_bytes` on a function: the whole plan).
  }];
  let dependentDialects = ["::tcc::TccDialect"];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
}

#endif // EXEC_DIALECT_TD
