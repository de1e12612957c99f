#ifndef EXEC_OPS_TD
#define EXEC_OPS_TD

include "ExecDialect.td"
include "tcc/TccInterfaces.td"
include "tcc/TccTraits.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_FusionOp : Exec_Op<"fusion", [IsolatedFromAbove, Pure, SingleBlock]> {
  let summary = "one generated kernel: fused elementwise ops around one layout or reduction op or one chain of layout ops";
  let description = [{
    One generated kernel computing its result (and the stores below). Its block arguments
    are the operands, so codegen sees the kernel's parameters explicitly;
    splat constants live inside. `name` identifies the kernel in reports and
    in generated code. The kernel computes each element of the result once
    (one loop iteration or GPU thread per output element), so the body is
    a DAG read backwards from the `exec.yield`: every value is evaluated at
    the elements its users need, and only block arguments touch memory.

    The body holds `tcc` elementwise ops (`isFusibleOp`: arithmetic, math,
    compare/select, `cast`, `broadcast`), splat `tcc.constant`s, and either
    **one structured op** (`isStructuredOp`): `transpose`, `slice`,
    `slice_grad`, `concat`, `gather`, `gather_grad` with `axis` != 0, or
    `reduce_sum/mean/max/min`, or **one layout chain**: layout ops
    (`isLayoutOp`: `transpose`, `slice`, `concat`) and `tcc.reshape`s
    between them, where every member but the last has exactly one use, by
    the next member (a concat may take several chains; a reshape may also
    start a chain, reading a block argument or a prologue op). Each layout op
    reads one input element per output element and a reshape only renames
    the flat index, so a chain is one index computation per element, and
    the q/k/v head split (`slice -> reshape -> transpose`) and its gradient
    (`transpose -> reshape -> concat`) are one kernel each. Reshapes appear
    in a body only in a chain. With a structured op or chain the body has
    three parts:

    * the **prologue**: the elementwise ops the structured op (or a chain's
      op) reads, each evaluated at the elements of its own shape that op
      reads (a reduction's input, a transpose's source), never stored.
      `reduce_sum(mul(g, g))` is one kernel: one pass over `g`.
    * the **structured op** or chain: its (last op's) result must have the
      kernel's result shape, so it is computed exactly once per output
      element (a reduction loops over its reduced elements, in row-major
      order, inside that element).
    * the **epilogue**: elementwise ops that read the structured op's (the
      chain's) result. Each of them has the kernel's result shape, so the
      structured op is never recomputed; other operands broadcast as usual
      (`sqrt(reduce_sum(...))`, a mean's scaling).

    **Stores**: a kernel whose structured op is a reduction may have more
    results than the first. Result k >= 1 is a prologue value the kernel
    also writes out where it computes it (yielded k-th): an elementwise op
    of the reduction input's shape, so every element of it is computed
    exactly once in a launch (a reduction reads each input element once,
    and along the path to it no op broadcasts). The gradient a bias
    gradient sums is also read by the weight and input gradients' GEMMs;
    as a store of the reduction's kernel it is computed and written in the
    pass that sums it, one launch instead of two.
    ```mlir
    %b, %g = exec.fusion "fused_3" (%dy, %h) : (tensor<16x64xf32>, tensor<16x64xf32>) -> (tensor<64xf32>, tensor<16x64xf32>) {
    ^bb0(%a: tensor<16x64xf32>, %c: tensor<16x64xf32>):
      %0 = tcc.gelu_grad %a, %c : (tensor<16x64xf32>, tensor<16x64xf32>) -> tensor<16x64xf32>
      %1 = tcc.reduce_sum %0 {axes = array<i64: 0>} : (tensor<16x64xf32>) -> tensor<64xf32>
      exec.yield %1, %0 : tensor<64xf32>, tensor<16x64xf32>
    }
    ```
    **Siblings**: a kernel without a reduction (or `gather_grad`) may have
    several results of one shape, each computed at every output index from
    the ops it reads (each result's ops are a body as above; results may
    share ops). tcc-fuse merges layout-chain kernels launched one after
    another that read a common input: the q/k/v head split's three chains
    are one kernel of three results.

    **A layout chain under a reduction**: a reduction's input may be a
    layout chain of its input's shape (each element read once, at the
    index the chain maps it to), checked as a body of its own; the chain's
    top may be a store. The attention gradient's q/k/v concat and the qkv
    bias gradient's sum over it are one kernel.

    A body without a structured op is a plain elementwise kernel over the
    result shape. `tcc.split` (several results) is never a body op: tcc-fuse
    rewrites it into one `tcc.slice` per result first. Layout ops move bits,
    so a chain computes exactly what its ops compute one by one.
    ```mlir
    %r = exec.fusion "fused_0" (%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %0 = tcc.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %1 = tcc.gelu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
      exec.yield %1 : tensor<4x8xf32>
    }
    %n = exec.fusion "fused_1" (%g) : (tensor<32x16xf32>) -> tensor<f32> {
    ^bb0(%a: tensor<32x16xf32>):
      %0 = tcc.mul %a, %a : (tensor<32x16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32>
      %1 = tcc.reduce_sum %0 {axes = array<i64: 0, 1>} : (tensor<32x16xf32>) -> tensor<f32>
      %2 = tcc.sqrt %1 : (tensor<f32>) -> tensor<f32>
      exec.yield %2 : tensor<f32>
    }
    %q = exec.fusion "fused_2" (%qkv) : (tensor<2x8x96xf32>) -> tensor<2x2x8x16xf32> {
    ^bb0(%a: tensor<2x8x96xf32>):
      %0 = tcc.slice %a {limits = array<i64: 2, 8, 32>, starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} : (tensor<2x8x96xf32>) -> tensor<2x8x32xf32>
      %1 = tcc.reshape %0 : (tensor<2x8x32xf32>) -> tensor<2x8x2x16xf32>
      %2 = tcc.transpose %1 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x8x2x16xf32>) -> tensor<2x2x8x16xf32>
      exec.yield %2 : tensor<2x2x8x16xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let extraClassDeclaration = [{
    /// The body's structured op (layout or reduction; of a layout chain, its
    /// last layout op), or null for a purely elementwise kernel.
    ::mlir::Operation *getStructuredOp();
    /// The kernel's result (its launch space): result 0. Results 1.. are
    /// the stored prologue values of a reduction (see the description).
    ::mlir::Value getResult() { return getResults().front(); }
    ::mlir::Value getResult(unsigned i) { return getOperation()->getResult(i); }
    /// The stored prologue values: results 1...
    ::mlir::ResultRange getStores() { return getResults().drop_front(); }
  }];
  let hasVerifier = 1;
}

def Exec_CallOp : Exec_Op<"call", [IsolatedFromAbove, SingleBlock,
    RecursiveMemoryEffects, DeclareOpInterfaceMethods<Tcc_InPlaceOpInterface>]> {
  let summary = "one library call: a hand-written kernel of every backend";
  let description = [{
    The runtime's "call" step (docs/artifact.md): the one `tcc` op of its
    body, which implements `LibraryCallOpInterface` in a form that is a
    library call, runs as that op's kernel (a GEMM, attention, a
    normalisation, the fused loss, an optimizer update...). The op keeps its
    own semantics, verifier and attributes; its operands are the body's
    arguments in order and its results are yielded in order, so the call's
    operands and results are exactly the op's. `tcc-lower-calls` wraps every
    library op of a step function into one; the memory plan and the plan
    writer read these, codegen ignores them.
    ```mlir
    %r = exec.call (%x, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>):
      %0 = tcc.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
      exec.yield %0 : tensor<4x16xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs);
  let results = (outs Variadic<AnyRankedTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    `(` $inputs `)` attr-dict `:` functional-type($inputs, $results) $body
  }];
  let extraClassDeclaration = [{
    /// The library op the call runs (the verifier checked there is one).
    ::tcc::LibraryCallOpInterface getCallee();
  }];
  let hasVerifier = 1;
}

def Exec_Reduction : I32EnumAttr<"Reduction", "how a collective combines ranks", [
    I32EnumAttrCase<"sum", 0>, I32EnumAttrCase<"mean", 1>]> {
  let cppNamespace = "::tcc::exec";
  let genSpecializedAttr = 0;
}
def Exec_ReductionAttr : EnumAttr<Exec_Dialect, Exec_Reduction, "reduction">;

class Exec_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Exec_Op<mnemonic, !listconcat(traits, [Pure])> {
  // Every rank runs the same step function, so a collective is as
  // deterministic as any op: value semantics, in the order of the block.
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Exec_AllReduceOp : Exec_CollectiveOp<"all_reduce",
    [DeclareOpInterfaceMethods<Tcc_DifferentiableOpInterface>]> {
  let summary = "the sum (or mean) of each tensor over all ranks";
  let description = [{
    Every result is its operand combined element by element over the ranks
    of the data-parallel group: `sum`, or `mean` (the sum divided by the
    number of ranks). The operands are one bucket of gradients (or the loss
    and token counts); `bucket` numbers it in the order backward produces
    them and `stream` is the stream it runs on (1: the communication stream,
    so it overlaps the rest of backward; 0: the compute stream). With one
    rank every result equals its operand.

    Its gradient is the same all-reduce of the results' gradients (the
    transpose of a sum over ranks is a sum over ranks), on the compute
    stream: a data-parallel loss divides by the all-reduced label count.

    Under ZeRO-1 the runtime may reduce-scatter instead; two attributes
    say where (the training step sets them; the artifact does not depend on
    the world size):
    - `gradients`: the leading operands that are parameter gradients, read
      after this op only by elementwise scaling (clipping, unscaling), the
      gradient norm's sum of squares and the optimizer updates. A session
      that shards the updates gives rank r of N only elements
      [n*r/N, n*(r+1)/N) of each reduced gradient of n elements (the slice
      its update reads) and zeros elsewhere.
    - `scattered_only`: the operands are each rank's partial sums over
      such gradients (the norm's sum of squares), summed over the ranks
      only when the gradients were scattered; otherwise every rank already
      holds the total and each result equals its operand.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs,
                       DefaultValuedAttr<Exec_ReductionAttr, "Reduction::sum">:$reduction,
                       DefaultValuedAttr<I64Attr, "0">:$bucket,
                       DefaultValuedAttr<I64Attr, "1">:$stream,
                       DefaultValuedAttr<I64Attr, "0">:$gradients,
                       UnitAttr:$scattered_only);
  let results = (outs Variadic<AnyRankedTensor>:$results);
}

def Exec_ReduceScatterOp : Exec_CollectiveOp<"reduce_scatter"> {
  let summary = "each rank's slice of the sum over all ranks (ZeRO)";
  let description = [{
    The operand's leading dimension holds `world_size` equal slices; the
    result is this rank's slice of the operand combined over the ranks
    (`sum` or `mean`), as ZeRO's sharded optimizer needs. Shapes are static,
    so the group size is part of the op.
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$world_size,
                       DefaultValuedAttr<Exec_ReductionAttr, "Reduction::sum">:$reduction,
                       DefaultValuedAttr<I64Attr, "0">:$bucket,
                       DefaultValuedAttr<I64Attr, "1">:$stream);
  let results = (outs Variadic<AnyRankedTensor>:$results);
}

def Exec_AllGatherOp : Exec_CollectiveOp<"all_gather"> {
  let summary = "every rank's tensor, concatenated along the leading dimension";
  let description = [{
    The inverse of `reduce_scatter`'s slicing: the result's leading
    dimension is `world_size` times the operand's, rank r's operand at slice
    r (ZeRO's gather of the updated parameter shards).
  }];
  let arguments = (ins Variadic<AnyRankedTensor>:$inputs, I64Attr:$world_size,
                       DefaultValuedAttr<I64Attr, "0">:$bucket,
                       DefaultValuedAttr<I64Attr, "1">:$stream);
  let results = (outs Variadic<AnyRankedTensor>:$results);
}

def Exec_ViewOp : Exec_Op<"view", [Pure, Tcc_View]> {
  let summary = "a contiguous piece of a tensor's bytes, no copy";
  let description = [{
    The `result`'s elements are `source`'s elements `[offset, offset + n)`
    in memory order (n = the result's element count), of the same element
    type: a split or slice whose pieces are contiguous (every dim before the
    sliced one of extent 1, every dim after it whole), made by tcc-fuse when
    the source is a value the memory plan places in the arena and the
    piece starts at an aligned byte. Like `tcc.reshape` it launches
    nothing: the plan gives it the source's storage at the piece's offset
    (a merged projection's weight and bias gradients, split back into the
    parameters' own).
  }];
  let arguments = (ins AnyRankedTensor:$source, I64Attr:$offset);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$source `[` $offset `]` attr-dict `:` type($source) `->` type($result)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The byte of a source of `elementType` that element `offset` starts
    /// at (a byte at least per element, as the memory plan stores them).
    static int64_t byteOffset(mlir::Type elementType, int64_t offset);
    /// The byte of the source the piece starts at.
    int64_t getByteOffset() {
      return byteOffset(
          mlir::cast<mlir::RankedTensorType>(getSource().getType())
              .getElementType(),
          getOffset());
    }
  }];
}

def Exec_YieldOp : Exec_Op<"yield",
    [Pure, Terminator, ReturnLike, ParentOneOf<["FusionOp", "CallOp"]>]> {
  let summary = "the values an exec.fusion or exec.call computes";
  let arguments = (ins Variadic<AnyRankedTensor>:$values);
  let assemblyFormat = "$values attr-dict `:` type($values)";
}

#endif // EXEC_OPS_TD
