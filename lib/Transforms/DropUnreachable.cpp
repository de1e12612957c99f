// tcc-drop-unreachable: keeps the functions an artifact runs (the roots) and
// what they call, so that lowering never sees, nor rejects, anything else.
#include "tcc/Transforms/Passes.h"

#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;

namespace tcc {

#define GEN_PASS_DEF_DROPUNREACHABLE
#include "tcc/Transforms/Passes.h.inc"

namespace {
struct DropUnreachablePass : impl::DropUnreachableBase<DropUnreachablePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::StringSet<> reachable;
    SmallVector<Operation *> work;
    for (const std::string &name : roots)
      if (auto f = module.lookupSymbol<func::FuncOp>(name)) {
        reachable.insert(name);
        work.push_back(f);
      }
    if (work.empty()) {
      module.emitError("tcc-drop-unreachable: the module has none of the "
                       "root functions (")
          << llvm::join(roots, ", ") << ")";
      return signalPassFailure();
    }
    while (!work.empty()) {
      Operation *f = work.pop_back_val();
      // Parameter reads are symbol uses too; only functions are followed.
      if (auto uses = SymbolTable::getSymbolUses(f))
        for (const SymbolTable::SymbolUse &use : *uses) {
          StringRef callee = use.getSymbolRef().getRootReference().getValue();
          if (auto g = module.lookupSymbol<func::FuncOp>(callee))
            if (reachable.insert(callee).second)
              work.push_back(g);
        }
    }
    for (func::FuncOp f :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
      if (!reachable.contains(f.getSymName()))
        f.erase();
  }
};
} // namespace

} // namespace tcc
