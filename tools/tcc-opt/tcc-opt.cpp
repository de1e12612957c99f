// tcc-opt: mlir-opt with the tcc dialects, passes and pipelines
// (--tcc-train-pipeline, --tcc-lower-pipeline: the stages `tcc compile`
// runs), for lit tests and for compiler engineers inspecting IR between
// passes (--mlir-print-ir-after-all).
#include "exec/ExecOps.h"
#include "tcc/TccOps.h"
#include "tcc/Transforms/Passes.h"
#include "tcc/Transforms/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<tcc::TccDialect, tcc::exec::ExecDialect,
                  mlir::func::FuncDialect>();
  tcc::registerTccPasses();
  tcc::registerTccPipelines();
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  mlir::registerInlinerPass();
  mlir::registerSymbolDCEPass();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tcc optimizer driver\n", registry));
}
