// RUN: split-file %s %t
// RUN: tcc-opt %t/model.mlir --tcc-build-train-step="loss=mse(y,target) optimizer=sgd:lr=0.1,momentum=0.9,weight_decay=0.01 grad-clip=1.0 freeze=^b$" | FileCheck %s --check-prefix=SGD
// RUN: tcc-opt %t/model.mlir --tcc-build-train-step="loss=cross_entropy(y,labels) optimizer=adamw:lr=6e-4,beta2=0.95,weight_decay=0.1 lr-schedule=cosine:warmup=10,total=100,min=6e-5 accum=2 no-decay=^b$" | FileCheck %s --check-prefix=ADAMW
// RUN: tcc-opt %t/model.mlir --tcc-build-train-step="loss=cross_entropy(y,labels,ignore_index=-1) optimizer=sgd:lr=0.5 lr-schedule=linear:total=50" | FileCheck %s --check-prefix=LINEAR
// RUN: tcc-opt %t/model.mlir --tcc-lower-precision=precision=bf16 --tcc-build-train-step="loss=mse(y,target) optimizer=sgd:lr=0.1,momentum=0.9 accum=2" | FileCheck %s --check-prefix=WORKING
// RUN: tcc-opt %t/scalar.mlir --tcc-build-train-step="loss=loss" | FileCheck %s --check-prefix=OUTPUT
// RUN: tcc-opt %t/model.mlir --tcc-build-train-step="loss=cross_entropy(y,labels,ignore_index=-1) optimizer=sgd:lr=0.5 data-parallel=1 bucket-size=0.00001" | FileCheck %s --check-prefix=DP
// RUN: tcc-opt %t/model.mlir --tcc-build-train-step="loss=mse(y,target) optimizer=sgd:lr=0.5 data-parallel=1 grad-clip=1.0" | FileCheck %s --check-prefix=DPCLIP
// RUN: tcc-opt %t/model.mlir --tcc-build-train-step="loss=cross_entropy(y,labels,ignore_index=-1) optimizer=sgd:lr=0.5 data-parallel=1 bucket-size=0.00001 accum=2" | FileCheck %s --check-prefix=DPACCUM
// RUN: tcc-opt %t/dropout.mlir --tcc-build-train-step="loss=mse(y,target) optimizer=sgd:lr=0.1 accum=2" | FileCheck %s --check-prefix=DROPOUT
// RUN: tcc-opt %t/errors-ce.mlir --split-input-file -verify-diagnostics --tcc-build-train-step="loss=cross_entropy(y,labels)"
// RUN: tcc-opt %t/errors-mse.mlir --split-input-file -verify-diagnostics --tcc-build-train-step="loss=mse(y,target)"
// RUN: tcc-opt %t/errors-output.mlir --split-input-file -verify-diagnostics --tcc-build-train-step="loss=y"
// RUN: tcc-opt %t/errors-regex.mlir -verify-diagnostics --tcc-build-train-step="loss=y freeze=("
// RUN: tcc-opt %t/errors-optimizer.mlir -verify-diagnostics --tcc-build-train-step="loss=y optimizer=adam:lr=1"
// RUN: tcc-opt %t/errors-no-loss.mlir -verify-diagnostics --tcc-build-train-step

// Data parallel: the label count is all-reduced (mean) before the loss
// divides by it; each gradient (buckets of 10 bytes: one each) is
// all-reduced right after backward computes it, b's (with the loss)
// before w's matmul; the updates read the reduced gradients; eval_step
// has no collective.
// DP-LABEL: func.func @train_step
// DP: %loss_sum, %count = tcc.cross_entropy
// DP-NEXT: %[[N:.*]] = exec.all_reduce %count {reduction = #exec<reduction mean>, stream = 0 : i64}
// DP-NEXT: %[[L:.*]] = tcc.div %loss_sum, %[[N]]
// DP: %[[B:.*]]:2 = exec.all_reduce %{{.*}}, %[[L]] {bucket = 1 : i64, gradients = 1 : i64, reduction = #exec<reduction mean>} : (tensor<5xf32>, tensor<f32>)
// DP-NEXT: %[[GW:.*]] = tcc.matmul %arg5, %{{.*}} {transpose_lhs = true}
// DP-NEXT: %[[W:.*]] = exec.all_reduce %[[GW]] {bucket = 2 : i64, gradients = 1 : i64, reduction = #exec<reduction mean>} : (tensor<3x5xf32>)
// DP: tcc.sgd_update %arg0, %[[W]]
// DP-NEXT: tcc.sgd_update %arg1, %[[B]]#0
// DP: return %[[B]]#1,
// DP-LABEL: func.func @eval_step
// DP-NOT: exec.all_reduce

// With clipping (one bucket: the gradients and the loss), the norm's sum
// of squares passes through a scattered_only all_reduce before its root:
// under ZeRO-1 each rank sums the squares of its gradient slices and the
// ranks add their parts; otherwise it is a copy.
// DPCLIP-LABEL: func.func @train_step
// DPCLIP: exec.all_reduce %{{.*}}, %{{.*}}, %{{.*}} {bucket = 1 : i64, gradients = 2 : i64, reduction = #exec<reduction mean>}
// DPCLIP: %[[SUM:.*]] = tcc.reduce_sum {{.*}} -> tensor<f32>
// DPCLIP-NEXT: %[[ALL:.*]] = exec.all_reduce %[[SUM]] {scattered_only, stream = 0 : i64} : (tensor<f32>) -> tensor<f32>
// DPCLIP-NEXT: tcc.sqrt %[[ALL]]
// DPCLIP-LABEL: func.func @eval_step
// Data parallel with two micro-batches: the label count is all-reduced up
// front, and each gradient's bucket follows its sum in the second
// micro-batch's backward pass (the first bucket before the second
// micro-batch's weight gradient), not after both backward passes.
// DPACCUM-LABEL: func.func @train_step
// DPACCUM: %[[CNT:.*]] = tcc.reduce_sum
// DPACCUM-NEXT: exec.all_reduce %[[CNT]] {reduction = #exec<reduction mean>, stream = 0 : i64}
// DPACCUM: tcc.slice %{{.*}} {limits = array<i64: 2, 4, 3>, starts = array<i64: 1, 0, 0>
// DPACCUM: %[[DB:.*]] = tcc.add %{{.*}}, %{{.*}} : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
// DPACCUM-NEXT: exec.all_reduce %[[DB]], %{{.*}} {bucket = 1 : i64, gradients = 1 : i64
// DPACCUM-NEXT: tcc.matmul %{{.*}}, %{{.*}} {transpose_lhs = true}
// DPACCUM-NEXT: %[[DW:.*]] = tcc.add
// DPACCUM-NEXT: exec.all_reduce %[[DW]] {bucket = 2 : i64, gradients = 1 : i64
// DPACCUM-LABEL: func.func @eval_step

//--- model.mlir
// w and b are trained; s is frozen in the IR; aux does not reach the loss
// (PyTorch would leave its .grad None and skip it).
module {
  tcc.param @w = dense<0.1> : tensor<3x5xf32>
  tcc.param @b = dense<0.0> : tensor<5xf32>
  tcc.param @s frozen = dense<1.0> : tensor<5xf32>
  tcc.param @aux = dense<0.0> : tensor<2xf32>
  func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}) -> (tensor<4x5xf32> {tcc.name = "y"}, tensor<2xf32> {tcc.name = "aux"}) {
    %w = tcc.get_param @w : tensor<3x5xf32>
    %b = tcc.get_param @b : tensor<5xf32>
    %s = tcc.get_param @s : tensor<5xf32>
    %aux = tcc.get_param @aux : tensor<2xf32>
    %0 = tcc.matmul %x, %w : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
    %1 = tcc.add %0, %b : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
    %2 = tcc.mul %1, %s : (tensor<4x5xf32>, tensor<5xf32>) -> tensor<4x5xf32>
    return %2, %aux : tensor<4x5xf32>, tensor<2xf32>
  }
}

// SGD with momentum, mse against a new input, b frozen by --freeze: only w
// is trained, with one momentum buffer.
// SGD-LABEL: func.func @forward
// SGD-LABEL: func.func @train_step(
// SGD-SAME: %[[W:[^:]*]]: tensor<3x5xf32> {tcc.param = "w"}, %[[B:[^:]*]]: tensor<5xf32> {tcc.param = "b"}, %[[S:[^:]*]]: tensor<5xf32> {tcc.param = "s"}, %{{[^:]*}}: tensor<2xf32> {tcc.param = "aux"},
// SGD-SAME: %[[BUF:[^:]*]]: tensor<3x5xf32> {tcc.opt_state = "w.momentum_buffer"}, %{{[^:]*}}: tensor<i64> {tcc.step},
// SGD-SAME: %[[X:[^:]*]]: tensor<4x3xf32> {tcc.name = "x"}, %[[T:[^:]*]]: tensor<4x5xf32> {tcc.name = "target"})
// SGD-SAME: -> (tensor<f32> {tcc.name = "loss"}, tensor<3x5xf32> {tcc.param = "w"}, tensor<3x5xf32> {tcc.opt_state = "w.momentum_buffer"}, tensor<f32> {tcc.name = "grad_norm"})
// SGD-SAME: attributes {tcc.accum = 1 : i64}
// SGD-NOT: tcc.get_param
// SGD: %[[MM:.*]] = tcc.matmul %[[X]], %[[W]]
// SGD: %[[Y:.*]] = tcc.mul %{{.*}}, %[[S]]
// SGD: %[[D:.*]] = tcc.sub %[[Y]], %[[T]]
// SGD: %[[SQ:.*]] = tcc.mul %[[D]], %[[D]]
// SGD: %[[LOSS:.*]] = tcc.reduce_mean %[[SQ]] {axes = array<i64: 0, 1>} : (tensor<4x5xf32>) -> tensor<f32>
// SGD: %[[GW:.*]] = tcc.matmul %[[X]], %{{.*}} {transpose_lhs = true}
// clip_grad_norm_'s total norm, sqrt of the sum of every gradient's
// squares: the squares of all gradients concatenated (here one, 15
// elements) and zero-padded to rows x columns (1 x 32), summed down the
// columns, then the column sums. coef = 1/(norm + 1e-6) * max_norm,
// clamped to 1. The step returns the norm as its grad_norm metric.
// SGD: %[[SQW:.*]] = tcc.mul %[[GW]], %[[GW]]
// SGD: %[[FLATW:.*]] = tcc.reshape %[[SQW]] : (tensor<3x5xf32>) -> tensor<15xf32>
// SGD: %[[PAD:.*]] = tcc.constant dense<0.000000e+00> : tensor<17xf32>
// SGD: %[[ALL:.*]] = tcc.concat %[[FLATW]], %[[PAD]] {axis = 0 : i64}
// SGD: %[[GRID:.*]] = tcc.reshape %[[ALL]] : (tensor<32xf32>) -> tensor<1x32xf32>
// SGD: %[[COLS:.*]] = tcc.reduce_sum %[[GRID]] {axes = array<i64: 0>} : (tensor<1x32xf32>) -> tensor<32xf32>
// SGD: %[[SUM:.*]] = tcc.reduce_sum %[[COLS]] {axes = array<i64: 0>} : (tensor<32xf32>) -> tensor<f32>
// SGD: %[[NORM:.*]] = tcc.sqrt %[[SUM]]
// SGD: %[[EPS:.*]] = tcc.constant dense<9.99999997E-7> : tensor<f32>
// SGD: %[[DEN:.*]] = tcc.add %[[NORM]], %[[EPS]]
// SGD: %[[REC:.*]] = tcc.div %{{.*}}, %[[DEN]]
// SGD: %[[COEF:.*]] = tcc.mul %[[REC]], %{{.*}}
// SGD: %[[CLAMP:.*]] = tcc.min %[[COEF]], %{{.*}}
// SGD: %[[GC:.*]] = tcc.mul %[[GW]], %[[CLAMP]]
// SGD: %[[LR:.*]] = tcc.constant dense<1.000000e-01> : tensor<f64>
// SGD: %[[NW:.*]], %[[NBUF:.*]] = tcc.sgd_update %[[W]], %[[GC]], %[[LR]], %[[BUF]] {momentum = 9.000000e-01 : f64, weight_decay = 1.000000e-02 : f64}
// SGD-NOT: tcc.sgd_update
// SGD: return %[[LOSS]], %[[NW]], %[[NBUF]], %[[NORM]] : tensor<f32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<f32>
// SGD-LABEL: func.func @eval_step(
// SGD-SAME: %{{[^:]*}}: tensor<3x5xf32> {tcc.param = "w"}, %{{[^:]*}}: tensor<5xf32> {tcc.param = "b"}, %{{[^:]*}}: tensor<5xf32> {tcc.param = "s"}, %{{[^:]*}}: tensor<2xf32> {tcc.param = "aux"},
// SGD-SAME: %{{[^:]*}}: tensor<4x3xf32> {tcc.name = "x"}, %{{[^:]*}}: tensor<4x5xf32> {tcc.name = "target"}) -> (tensor<f32> {tcc.name = "loss"})
// SGD-NOT: sgd_update
// SGD: tcc.reduce_mean
// SGD-NEXT: return

// AdamW, cross-entropy over new int64 labels, two micro-batches, cosine
// schedule, b without weight decay. State is grouped per parameter.
// ADAMW-LABEL: func.func @train_step(
// ADAMW-SAME: %[[W:[^:]*]]: tensor<3x5xf32> {tcc.param = "w"}, %[[B:[^:]*]]: tensor<5xf32> {tcc.param = "b"}, %{{[^:]*}}: tensor<5xf32> {tcc.param = "s"}, %{{[^:]*}}: tensor<2xf32> {tcc.param = "aux"},
// ADAMW-SAME: %[[MW:[^:]*]]: tensor<3x5xf32> {tcc.opt_state = "w.exp_avg"}, %[[VW:[^:]*]]: tensor<3x5xf32> {tcc.opt_state = "w.exp_avg_sq"},
// ADAMW-SAME: %[[MB:[^:]*]]: tensor<5xf32> {tcc.opt_state = "b.exp_avg"}, %[[VB:[^:]*]]: tensor<5xf32> {tcc.opt_state = "b.exp_avg_sq"},
// ADAMW-SAME: %[[STEP:[^:]*]]: tensor<i64> {tcc.step}, %[[X:[^:]*]]: tensor<2x4x3xf32> {tcc.name = "x"}, %[[L:[^:]*]]: tensor<2x4xi64> {tcc.name = "labels"})
// ADAMW-SAME: -> (tensor<f32> {tcc.name = "loss"}, tensor<3x5xf32> {tcc.param = "w"}, tensor<5xf32> {tcc.param = "b"},
// ADAMW-SAME: tensor<3x5xf32> {tcc.opt_state = "w.exp_avg"}, tensor<3x5xf32> {tcc.opt_state = "w.exp_avg_sq"}, tensor<5xf32> {tcc.opt_state = "b.exp_avg"}, tensor<5xf32> {tcc.opt_state = "b.exp_avg_sq"})
// ADAMW-SAME: attributes {tcc.accum = 2 : i64}
// Two micro-batches: the mean's denominator counts the labels of both up
// front (so no backward pass waits for the other micro-batch's logits);
// micro-batch 0 runs its forward and backward pass before micro-batch 1's,
// whose gradient is summed into it.
// ADAMW: %[[IGN:.*]] = tcc.constant dense<-100> : tensor<i64>
// ADAMW-NEXT: %[[VALID:.*]] = tcc.cmp ne, %[[L]], %[[IGN]] : (tensor<2x4xi64>, tensor<i64>) -> tensor<2x4xi1>
// ADAMW-NEXT: %[[ONES:.*]] = tcc.cast %[[VALID]]
// ADAMW-NEXT: %[[CNT:.*]] = tcc.reduce_sum %[[ONES]] {axes = array<i64: 0, 1>}
// ADAMW: %[[SEED:.*]] = tcc.div %{{.*}}, %[[CNT]]
// ADAMW: %[[X0S:.*]] = tcc.slice %[[X]] {limits = array<i64: 1, 4, 3>, starts = array<i64: 0, 0, 0>, strides = array<i64: 1, 1, 1>} : (tensor<2x4x3xf32>) -> tensor<1x4x3xf32>
// ADAMW: %[[X0:.*]] = tcc.reshape %[[X0S]] : (tensor<1x4x3xf32>) -> tensor<4x3xf32>
// ADAMW: %[[L0S:.*]] = tcc.slice %[[L]] {limits = array<i64: 1, 4>, starts = array<i64: 0, 0>, strides = array<i64: 1, 1>} : (tensor<2x4xi64>) -> tensor<1x4xi64>
// ADAMW: %[[L0:.*]] = tcc.reshape %[[L0S]] : (tensor<1x4xi64>) -> tensor<4xi64>
// ADAMW: tcc.matmul %[[X0]], %[[W]]
// ADAMW: %[[SUM0:.*]], %{{.*}} = tcc.cross_entropy %[[Y0:.*]], %[[L0]] : (tensor<4x5xf32>, tensor<4xi64>) -> (tensor<f32>, tensor<f32>)
// ADAMW-NEXT: tcc.cross_entropy_grad %[[Y0]], %[[L0]], %[[SEED]]
// ADAMW: %[[DW0:.*]] = tcc.matmul %[[X0]], %{{.*}} {transpose_lhs = true}
// ADAMW-NEXT: tcc.slice %[[X]] {limits = array<i64: 2, 4, 3>, starts = array<i64: 1, 0, 0>
// ADAMW: tcc.slice %[[L]] {limits = array<i64: 2, 4>, starts = array<i64: 1, 0>
// ADAMW: %[[SUM1:.*]], %{{.*}} = tcc.cross_entropy
// ADAMW-NEXT: %[[SUM:.*]] = tcc.add %[[SUM0]], %[[SUM1]]
// ADAMW-NEXT: %[[LOSS:.*]] = tcc.div %[[SUM]], %[[CNT]]
// ADAMW-NEXT: tcc.cross_entropy_grad %{{.*}}, %{{.*}}, %[[SEED]]
// ADAMW: %[[DW1:.*]] = tcc.matmul %{{.*}}, %{{.*}} {transpose_lhs = true}
// ADAMW-NEXT: %[[DW:.*]] = tcc.add %[[DW0]], %[[DW1]]
// The cosine schedule, in f64 from the step counter.
// ADAMW: %[[IT:.*]] = tcc.cast %[[STEP]] : (tensor<i64>) -> tensor<f64>
// ADAMW: tcc.constant dense<9.000000e+01> : tensor<f64>
// ADAMW: tcc.constant dense<3.1415926535897931> : tensor<f64>
// ADAMW: tcc.cos
// ADAMW: tcc.constant dense<5.399999999999999E-4> : tensor<f64>
// ADAMW: tcc.cmp ge, %[[STEP]], %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i1>
// ADAMW: %[[DECAY:.*]] = tcc.where
// ADAMW: tcc.cmp lt, %[[STEP]], %{{.*}} : (tensor<i64>, tensor<i64>) -> tensor<i1>
// ADAMW: %[[LR:.*]] = tcc.where %{{.*}}, %{{.*}}, %[[DECAY]] : (tensor<i1>, tensor<f64>, tensor<f64>) -> tensor<f64>
// AdamW's t is the step counter + 1.
// ADAMW: %[[ONE:.*]] = tcc.constant dense<1> : tensor<i64>
// ADAMW: %[[T:.*]] = tcc.add %[[STEP]], %[[ONE]]
// ADAMW: %[[NW:.*]], %[[NMW:.*]], %[[NVW:.*]] = tcc.adamw_update %[[W]], %[[DW]], %[[MW]], %[[VW]], %[[LR]], %[[T]] {beta2 = 0.94999999999999996 : f64, weight_decay = 1.000000e-01 : f64}
// ADAMW: %[[NB:.*]], %[[NMB:.*]], %[[NVB:.*]] = tcc.adamw_update %[[B]], %{{.*}}, %[[MB]], %[[VB]], %[[LR]], %[[T]] {beta2 = 0.94999999999999996 : f64, weight_decay = 0.000000e+00 : f64}
// ADAMW: return %[[LOSS]], %[[NW]], %[[NB]], %[[NMW]], %[[NVW]], %[[NMB]], %[[NVB]]
// ADAMW-LABEL: func.func @eval_step(
// ADAMW-SAME: tensor<2x4x3xf32> {tcc.name = "x"}, %{{[^:]*}}: tensor<2x4xi64> {tcc.name = "labels"}) -> (tensor<f32> {tcc.name = "loss"}, tensor<f32> {tcc.name = "correct"}, tensor<f32> {tcc.name = "counted"})
// ADAMW-SAME: attributes {tcc.accum = 2 : i64}
// A cross-entropy eval_step also counts, per micro-batch, the labels whose
// logit is the row's largest among those not ignore_index (-100), and sums
// them and the cross-entropy's counts over the micro-batches.
// ADAMW: %[[LS0:[^,]*]], %[[N0:.*]] = tcc.cross_entropy %[[Y0:[^,]*]], %[[L0:[^ ]*]] :
// ADAMW: %[[IDS:.*]] = tcc.constant dense<[0, 1, 2, 3, 4]> : tensor<5xi64>
// ADAMW: %[[COL:.*]] = tcc.reshape %[[L0]] : (tensor<4xi64>) -> tensor<4x1xi64>
// ADAMW: %[[HOT:.*]] = tcc.cmp  eq, %[[IDS]], %[[COL]]
// ADAMW: %[[PICK:.*]] = tcc.where %[[HOT]], %[[Y0]], %{{.*}}
// ADAMW: %[[LABEL:.*]] = tcc.reduce_sum %[[PICK]] {axes = array<i64: 1>}
// ADAMW: %[[MAX:.*]] = tcc.reduce_max %[[Y0]] {axes = array<i64: 1>}
// ADAMW: %[[IGN:.*]] = tcc.constant dense<-100> : tensor<i64>
// ADAMW: %[[KEPT:.*]] = tcc.cmp  ne, %[[L0]], %[[IGN]]
// ADAMW: %[[TOP:.*]] = tcc.cmp  ge, %[[LABEL]], %[[MAX]]
// ADAMW: %[[RIGHT:.*]] = tcc.and %[[TOP]], %[[KEPT]]
// ADAMW: %[[ONES:.*]] = tcc.cast %[[RIGHT]] : (tensor<4xi1>) -> tensor<4xf32>
// ADAMW: %[[C0:.*]] = tcc.reduce_sum %[[ONES]] {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
// ADAMW: %{{[^,]*}}, %[[N1:.*]] = tcc.cross_entropy %
// ADAMW: %[[C1:.*]] = tcc.reduce_sum %{{.*}} {axes = array<i64: 0>} : (tensor<4xf32>) -> tensor<f32>
// ADAMW: %[[CORRECT:.*]] = tcc.add %[[C0]], %[[C1]]
// ADAMW: %[[COUNTED:.*]] = tcc.add %[[N0]], %[[N1]]
// ADAMW: return %{{.*}}, %[[CORRECT]], %[[COUNTED]] : tensor<f32>, tensor<f32>, tensor<f32>
// ADAMW-NOT: adamw_update

// bf16 (tcc-lower-precision first, as tcc-train-pipeline runs them): each
// parameter the forward reads in bf16 gets a working copy
// argument (the frozen s too; aux is read in fp32 only). Both micro-batches
// read the copies, not casts of the fp32 parameters; the gradients still
// come back to fp32 through the casts' rules. Each trained parameter's
// update rewrites its copy, which train_step returns after the parameters.
// WORKING-LABEL: func.func @train_step(
// WORKING-SAME: %[[W:[^:]*]]: tensor<3x5xf32> {tcc.param = "w"}, %[[B:[^:]*]]: tensor<5xf32> {tcc.param = "b"}, %{{[^:]*}}: tensor<5xf32> {tcc.param = "s"}, %{{[^:]*}}: tensor<2xf32> {tcc.param = "aux"},
// WORKING-SAME: %[[W16:[^:]*]]: tensor<3x5xbf16> {tcc.working = "w"}, %[[B16:[^:]*]]: tensor<5xbf16> {tcc.working = "b"}, %[[S16:[^:]*]]: tensor<5xbf16> {tcc.working = "s"},
// WORKING-SAME: %[[BUFW:[^:]*]]: tensor<3x5xf32> {tcc.opt_state = "w.momentum_buffer"}, %[[BUFB:[^:]*]]: tensor<5xf32> {tcc.opt_state = "b.momentum_buffer"},
// WORKING-SAME: -> (tensor<f32> {tcc.name = "loss"}, tensor<3x5xf32> {tcc.param = "w"}, tensor<5xf32> {tcc.param = "b"}, tensor<3x5xbf16> {tcc.working = "w"}, tensor<5xbf16> {tcc.working = "b"},
// WORKING-SAME: tensor<3x5xf32> {tcc.opt_state = "w.momentum_buffer"}, tensor<5xf32> {tcc.opt_state = "b.momentum_buffer"})
// WORKING-NOT: tcc.cast %[[W]]
// WORKING-NOT: tcc.cast %[[B]]
// WORKING: tcc.matmul %{{.*}}, %[[W16]] : (tensor<4x3xbf16>, tensor<3x5xbf16>) -> tensor<4x5xbf16>
// WORKING: tcc.add %{{.*}}, %[[B16]]
// WORKING: tcc.mul %{{.*}}, %[[S16]]
// WORKING: tcc.matmul %{{.*}}, %[[W16]] : (tensor<4x3xbf16>, tensor<3x5xbf16>) -> tensor<4x5xbf16>
// WORKING: %[[GW:.*]] = tcc.cast %{{.*}} : (tensor<3x5xbf16>) -> tensor<3x5xf32>
// WORKING: %[[NW:.*]], %[[NBUFW:.*]], %[[NW16:.*]] = tcc.sgd_update %[[W]], %{{.*}}, %{{.*}}, %[[BUFW]] working %[[W16]] {momentum = 9.000000e-01 : f64} : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<f64>, tensor<3x5xf32>, tensor<3x5xbf16>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xbf16>)
// WORKING: %[[NB:.*]], %[[NBUFB:.*]], %[[NB16:.*]] = tcc.sgd_update %[[B]], %{{.*}}, %{{.*}}, %[[BUFB]] working %[[B16]]
// WORKING: return %{{.*}}, %[[NW]], %[[NB]], %[[NW16]], %[[NB16]], %[[NBUFW]], %[[NBUFB]]
// eval_step reads the same copies.
// WORKING-LABEL: func.func @eval_step(
// WORKING-SAME: %[[EW16:[^:]*]]: tensor<3x5xbf16> {tcc.working = "w"}, %{{[^:]*}}: tensor<5xbf16> {tcc.working = "b"}, %{{[^:]*}}: tensor<5xbf16> {tcc.working = "s"},
// WORKING-NOT: tcc.cast %arg0
// WORKING: tcc.matmul %{{.*}}, %[[EW16]]

// Plain SGD has no state; the linear schedule without warmup floors at 0.
// LINEAR-LABEL: func.func @train_step(
// LINEAR-SAME: {tcc.param = "aux"}, %[[STEP:[^:]*]]: tensor<i64> {tcc.step}, %{{[^:]*}}: tensor<4x3xf32> {tcc.name = "x"}, %{{[^:]*}}: tensor<4xi64> {tcc.name = "labels"})
// LINEAR-SAME: -> (tensor<f32> {tcc.name = "loss"}, tensor<3x5xf32> {tcc.param = "w"}, tensor<5xf32> {tcc.param = "b"})
// LINEAR: tcc.cross_entropy %{{.*}}, %{{.*}} {ignore_index = -1 : i64}
// LINEAR: tcc.constant dense<5.000000e+01> : tensor<f64>
// LINEAR: tcc.max
// LINEAR: tcc.cmp ge, %[[STEP]]
// LINEAR: %[[LR:.*]] = tcc.where
// LINEAR-NOT: tcc.cmp lt
// LINEAR: tcc.sgd_update %{{.*}}, %{{.*}}, %[[LR]] : (tensor<3x5xf32>, tensor<3x5xf32>, tensor<f64>) -> tensor<3x5xf32>
// LINEAR: tcc.sgd_update %{{.*}}, %{{.*}}, %[[LR]] : (tensor<5xf32>, tensor<5xf32>, tensor<f64>) -> tensor<5xf32>

//--- scalar.mlir
// The graph already outputs its loss (e.g. an ONNX SoftmaxCrossEntropyLoss).
module {
  tcc.param @w = dense<1.0> : tensor<3xf32>
  func.func @forward(%x: tensor<3xf32> {tcc.name = "x"}) -> (tensor<f32> {tcc.name = "loss"}, tensor<3xf32> {tcc.name = "pred"}) {
    %w = tcc.get_param @w : tensor<3xf32>
    %0 = tcc.mul %x, %w : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %1 = tcc.reduce_sum %0 {axes = array<i64: 0>} : (tensor<3xf32>) -> tensor<f32>
    return %1, %0 : tensor<f32>, tensor<3xf32>
  }
}
// The default optimizer is AdamW with torch's defaults (weight_decay 0.01).
// OUTPUT-LABEL: func.func @train_step(
// OUTPUT-SAME: %[[W:[^:]*]]: tensor<3xf32> {tcc.param = "w"}, %{{[^:]*}}: tensor<3xf32> {tcc.opt_state = "w.exp_avg"}, %{{[^:]*}}: tensor<3xf32> {tcc.opt_state = "w.exp_avg_sq"}, %{{[^:]*}}: tensor<i64> {tcc.step}, %[[X:[^:]*]]: tensor<3xf32> {tcc.name = "x"})
// OUTPUT: %[[P:.*]] = tcc.mul %[[X]], %[[W]]
// OUTPUT: %[[LOSS:.*]] = tcc.reduce_sum %[[P]]
// OUTPUT: %[[LR:.*]] = tcc.constant dense<1.000000e-03> : tensor<f64>
// OUTPUT: tcc.adamw_update %[[W]], %{{.*}}, %{{.*}}, %{{.*}}, %[[LR]], %{{.*}} : (
// OUTPUT: return %[[LOSS]]

//--- errors-ce.mlir
module {
  // expected-error @+1 {{the loss reads output 'y', but @forward's outputs are 'logits', 'output1'}}
  func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}) -> (tensor<4x3xf32> {tcc.name = "logits"}, tensor<4x3xf32>) {
    return %x, %x : tensor<4x3xf32>, tensor<4x3xf32>
  }
}

// -----

module {
  // expected-error @+1 {{cross_entropy needs logits shaped [..., classes], but 'y' is tensor<f32>}}
  func.func @forward(%x: tensor<f32> {tcc.name = "x"}) -> (tensor<f32> {tcc.name = "y"}) {
    return %x : tensor<f32>
  }
}

// -----

module {
  // expected-error @+1 {{cross_entropy labels 'labels' is an existing input of type tensor<4xf32>, but 'y' (tensor<4x3xf32>) needs integers shaped tensor<4xi64>}}
  func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}, %l: tensor<4xf32> {tcc.name = "labels"}) -> (tensor<4x3xf32> {tcc.name = "y"}) {
    return %x : tensor<4x3xf32>
  }
}

// -----

module {
  // expected-error @+1 {{the loss needs a float output, but 'y' is tensor<4x3xi64>}}
  func.func @forward(%x: tensor<4x3xi64> {tcc.name = "x"}) -> (tensor<4x3xi64> {tcc.name = "y"}) {
    return %x : tensor<4x3xi64>
  }
}

// -----

// expected-error @+1 {{building the training step needs a @forward function}}
module {
  func.func @main(%x: tensor<4x3xf32>) -> tensor<4x3xf32> {
    return %x : tensor<4x3xf32>
  }
}

//--- errors-mse.mlir
// An autoencoder may use an input as the target, but shapes must match.
module {
  // expected-error @+1 {{mse target 'target' is an existing input of type tensor<4x2xf32>, but 'y' (tensor<4x3xf32>) needs tensor<4x3xf32>}}
  func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}, %t: tensor<4x2xf32> {tcc.name = "target"}) -> (tensor<4x3xf32> {tcc.name = "y"}) {
    return %x : tensor<4x3xf32>
  }
}

//--- errors-output.mlir
module {
  // expected-error @+1 {{output 'y' is used as the loss, so it must be a scalar, but it is tensor<4x3xf32> (use cross_entropy(...) or mse(...) to reduce it)}}
  func.func @forward(%x: tensor<4x3xf32> {tcc.name = "x"}) -> (tensor<4x3xf32> {tcc.name = "y"}) {
    return %x : tensor<4x3xf32>
  }
}

//--- errors-regex.mlir
// expected-error @+1 {{--freeze '(': invalid regex: parentheses not balanced}}
module {
  func.func @forward(%x: tensor<f32> {tcc.name = "x"}) -> (tensor<f32> {tcc.name = "y"}) {
    return %x : tensor<f32>
  }
}

//--- errors-optimizer.mlir
// expected-error @+1 {{--optimizer 'adam:lr=1': unknown optimizer 'adam' (expected sgd:KEY=VALUE,... or adamw:KEY=VALUE,...)}}
module {
  func.func @forward(%x: tensor<f32> {tcc.name = "x"}) -> (tensor<f32> {tcc.name = "y"}) {
    return %x : tensor<f32>
  }
}

//--- errors-no-loss.mlir
// expected-error @+1 {{tcc-build-train-step needs the loss option}}
module {
  func.func @forward(%x: tensor<f32> {tcc.name = "x"}) -> (tensor<f32> {tcc.name = "y"}) {
    return %x : tensor<f32>
  }
}

//--- dropout.mlir
// Training draws a fresh mask per step and micro-batch (offset = step *
// accum + k); eval_step runs without dropout, as PyTorch's eval mode.
module {
  tcc.param @w = dense<0.1> : tensor<3x3xf32>
  func.func @forward(%x: tensor<2x3xf32> {tcc.name = "x"}) -> (tensor<2x3xf32> {tcc.name = "y"}) {
    %w = tcc.get_param @w : tensor<3x3xf32>
    %0 = tcc.matmul %x, %w : (tensor<2x3xf32>, tensor<3x3xf32>) -> tensor<2x3xf32>
    %1:2 = tcc.dropout %0 {ratio = 0.5 : f64, seed = 7 : i64} : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
    return %1#0 : tensor<2x3xf32>
  }
}
// DROPOUT-LABEL: func.func @train_step
// DROPOUT-SAME: %[[STEP:arg[0-9]+]]: tensor<i64> {tcc.step}
// DROPOUT: %[[K0:.*]] = tcc.constant dense<0> : tensor<i64>
// DROPOUT: %[[A0:.*]] = tcc.constant dense<2> : tensor<i64>
// DROPOUT: %[[M0:.*]] = tcc.mul %[[STEP]], %[[A0]]
// DROPOUT: %[[O0:.*]] = tcc.add %[[M0]], %[[K0]]
// DROPOUT: tcc.dropout %{{.*}} offset %[[O0]] {ratio = 5.000000e-01 : f64, seed = 7 : i64}
// DROPOUT: %[[K1:.*]] = tcc.constant dense<1> : tensor<i64>
// DROPOUT: %[[A1:.*]] = tcc.constant dense<2> : tensor<i64>
// DROPOUT: %[[M1:.*]] = tcc.mul %[[STEP]], %[[A1]]
// DROPOUT: %[[O1:.*]] = tcc.add %[[M1]], %[[K1]]
// DROPOUT: tcc.dropout %{{.*}} offset %[[O1]] {ratio = 5.000000e-01 : f64, seed = 7 : i64}
// DROPOUT-LABEL: func.func @eval_step
// DROPOUT-NOT: tcc.dropout
// DROPOUT: return
