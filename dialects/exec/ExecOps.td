#ifndef EXEC_OPS_TD
#define EXEC_OPS_TD

include "ExecDialect.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_FusionOp : Exec_Op<"fusion", [IsolatedFromAbove, Pure, SingleBlock]> {
  let summary = "one generated kernel: fused elementwise ops around at most one layout or reduction op";
  let description = [{
    One generated kernel computing the single result. Its block arguments
    are the operands, so codegen sees the kernel's parameters explicitly;
    splat constants live inside. `name` identifies the kernel in reports and
    in generated code. The kernel computes each element of the result once
    (one loop iteration or GPU thread per output element), so the body is
    a DAG read backwards from the `exec.yield`: every value is evaluated at
    the elements its users need, and only block arguments touch memory.

    The body holds `tcc` elementwise ops (`isFusibleOp`: arithmetic, math,
    compare/select, `cast`, `broadcast`), splat `tcc.constant`s, and **at
    most one structured op** (`isStructuredOp`): `transpose`, `slice`,
    `slice_grad`, `concat`, `gather`, `gather_grad` with `axis` != 0, or
    `reduce_sum/mean/max/min`. With a structured op the body has three parts:

    * the **prologue**: the elementwise ops the structured op reads, each
      evaluated at the elements of its own shape that the structured op
      reads (a reduction's input, a transpose's source), never stored.
      `reduce_sum(mul(g, g))` is one kernel: one pass over `g`.
    * the **structured op**: its result must have the kernel's result shape,
      so it is computed exactly once per output element (a reduction loops
      over its reduced elements, in row-major order, inside that element).
    * the **epilogue**: elementwise ops that read the structured op's
      result. Each of them has the kernel's result shape, so the structured
      op is never recomputed; other operands broadcast as usual
      (`sqrt(reduce_sum(...))`, a mean's scaling).

    A body without a structured op is a plain elementwise kernel over the
    result shape. `tcc.split` (several results) is never a body op: tcc-fuse
    rewrites it into one `tcc.slice` per result first.
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
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<AnyRankedTensor>:$inputs);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, $result) $body
  }];
  let extraClassDeclaration = [{
    /// The body's structured op (layout or reduction), or null for a purely
    /// elementwise kernel.
    ::mlir::Operation *getStructuredOp();
  }];
  let hasVerifier = 1;
}

def Exec_YieldOp : Exec_Op<"yield",
    [Pure, Terminator, ReturnLike, HasParent<"FusionOp">]> {
  let summary = "the value an exec.fusion computes";
  let arguments = (ins AnyRankedTensor:$value);
  let assemblyFormat = "$value attr-dict `:` type($value)";
}

#endif // EXEC_OPS_TD
