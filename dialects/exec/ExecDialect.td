#ifndef EXEC_DIALECT_TD
#define EXEC_DIALECT_TD

include "mlir/IR/OpBase.td"

def Exec_Dialect : Dialect {
  let name = "exec";
  let cppNamespace = "::tcc::exec";
  let summary = "The scheduled step: kernel launches, library calls, buffers";
  let description = [{
    What codegen and the plan writer read. Lowering from the `tcc` dialect
    happens in steps; the first is fusion: every generated kernel is an
    `exec.fusion` whose region holds the `tcc` ops it computes (elementwise
    ops around at most one layout or reduction op).
  }];
  let dependentDialects = ["::tcc::TccDialect"];
}

#endif // EXEC_DIALECT_TD
