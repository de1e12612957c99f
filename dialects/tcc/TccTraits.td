#ifndef TCC_TRAITS_TD
#define TCC_TRAITS_TD

include "mlir/IR/OpBase.td"

// How an op executes once lowered. Fusion, memory planning, lowering and
// code generation ask these traits (and LibraryCallOpInterface), never a
// list of op classes, so a new op declares its class where it is defined.

class Tcc_OpTrait<string name> : NativeOpTrait<name> {
  let cppNamespace = "::tcc::OpClass";
}

// Computes every result element from its operands' elements at the same
// (numpy-broadcast) position: arithmetic, math, compare/select, casts,
// broadcast. A chain of them is one loop, so any number fuse into a kernel.
def Tcc_Elementwise : Tcc_OpTrait<"Elementwise">;

// A layout or reduction op that one generated kernel computes, one output
// element per iteration from a few input elements found by index arithmetic
// on static shapes (a reduction: from a loop over the reduced elements).
// An exec.fusion holds one (or one layout chain).
def Tcc_Structured : Tcc_OpTrait<"Structured">;

// A structured op that only moves elements: each output element is one
// input element, so a chain of them (with reshapes between) is one index
// computation per element.
def Tcc_Layout : Tcc_OpTrait<"Layout">;
defvar Tcc_LayoutTraits = [Tcc_Structured, Tcc_Layout];

// Same bytes under another shape: no kernel, an alias of its operand's
// storage.
def Tcc_View : Tcc_OpTrait<"View">;

#endif // TCC_TRAITS_TD
