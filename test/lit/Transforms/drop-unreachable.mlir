// RUN: split-file %s %t
// RUN: tcc-opt %t/steps.mlir --tcc-drop-unreachable=roots=train_step,eval_step | FileCheck %s
// RUN: tcc-opt %t/steps.mlir --tcc-drop-unreachable=roots=forward | FileCheck %s --check-prefix=FORWARD
// RUN: tcc-opt %t/no-eval.mlir --tcc-drop-unreachable=roots=train_step,eval_step | FileCheck %s --check-prefix=NOEVAL
// RUN: tcc-opt %t/none.mlir -verify-diagnostics --tcc-drop-unreachable=roots=train_step,eval_step -o /dev/null

// The roots stay, with what they call (transitively); @forward and @unused
// go. Parameters stay whatever reads them: a parameter read is a symbol use,
// but only functions are dropped.
// CHECK-LABEL: module
// CHECK: tcc.param @w
// CHECK: tcc.param @unread
// CHECK-NOT: func.func @forward
// CHECK-NOT: func.func @unused
// CHECK: func.func @scale
// CHECK: func.func @twice
// CHECK: func.func @train_step
// CHECK: call @twice
// CHECK: func.func @eval_step
// CHECK-NOT: func.func

// An inference root keeps @forward and what it calls only.
// FORWARD-LABEL: module
// FORWARD: tcc.param @w
// FORWARD: tcc.param @unread
// FORWARD: func.func @scale
// FORWARD-NOT: func.func @twice
// FORWARD: func.func @forward
// FORWARD-NOT: func.func

// A root the module lacks is skipped: a hand-built step may come without
// @eval_step.
// NOEVAL-LABEL: module
// NOEVAL-NOT: func.func @helper
// NOEVAL: func.func @train_step
// NOEVAL-NOT: func.func

//--- steps.mlir
module {
  tcc.param @w = dense<1.0> : tensor<2xf32>
  tcc.param @unread = dense<0.0> : tensor<2xf32>
  func.func @scale(%x: tensor<2xf32>) -> tensor<2xf32> {
    %w = tcc.get_param @w : tensor<2xf32>
    %y = tcc.mul %x, %w : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
  func.func @twice(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = func.call @scale(%x) : (tensor<2xf32>) -> tensor<2xf32>
    %z = func.call @scale(%y) : (tensor<2xf32>) -> tensor<2xf32>
    return %z : tensor<2xf32>
  }
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = func.call @scale(%x) : (tensor<2xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
  func.func @unused(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
  func.func @train_step(%x: tensor<2xf32>) -> tensor<2xf32> {
    %y = func.call @twice(%x) : (tensor<2xf32>) -> tensor<2xf32>
    return %y : tensor<2xf32>
  }
  func.func @eval_step(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

//--- no-eval.mlir
module {
  func.func @helper(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
  func.func @train_step(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}

//--- none.mlir
// Nothing would be left: a forward model is not a training module.
// expected-error @below {{tcc-drop-unreachable: the module has none of the root functions (train_step, eval_step)}}
module {
  func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {
    return %x : tensor<2xf32>
  }
}
