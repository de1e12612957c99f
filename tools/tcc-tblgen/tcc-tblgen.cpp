// tcc-tblgen: mlir-tblgen's driver with tcc's own generators (see
// LibraryCallGen.cpp), as IREE's and CIRCT's custom tblgen tools are built.
#include "mlir/Tools/mlir-tblgen/MlirTblgenMain.h"

int main(int argc, char **argv) { return mlir::MlirTblgenMain(argc, argv); }
