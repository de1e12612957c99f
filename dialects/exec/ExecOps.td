#ifndef EXEC_OPS_TD
#define EXEC_OPS_TD

include "ExecDialect.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class Exec_Op<string mnemonic, list<Trait> traits = []>
    : Op<Exec_Dialect, mnemonic, traits>;

def Exec_FusionOp : Exec_Op<"fusion", [IsolatedFromAbove, Pure, SingleBlock]> {
  let summary = "one generated kernel: a group of fused elementwise ops";
  let description = [{
    The region computes the kernel's single result over the iteration space
    of the result shape. Its block arguments are the operands, so codegen
    sees the kernel's parameters explicitly; splat constants live inside.
    Only `tcc` elementwise ops, `tcc.broadcast` and splat `tcc.constant`s
    may appear in the body. `name` identifies the kernel in reports and in
    generated code.
    ```mlir
    %r = exec.fusion "fused_0" (%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>):
      %0 = tcc.add %a, %c : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
      %1 = tcc.gelu %0 : (tensor<4x8xf32>) -> tensor<4x8xf32>
      exec.yield %1 : tensor<4x8xf32>
    }
    ```
  }];
  let arguments = (ins StrAttr:$name, Variadic<AnyRankedTensor>:$inputs);
  let results = (outs AnyRankedTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $name `(` $inputs `)` attr-dict `:` functional-type($inputs, $result) $body
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
