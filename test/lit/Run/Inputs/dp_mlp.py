"""Writes the data-parallel tests' model and data: a two-layer MLP (tcc
dialect, batch B given) with a classifier head, and 24 samples of x [3],
class labels in [0, 4) (some -1 = ignored) and regression targets [4].

With --eval: 26 evaluation samples (a last partial batch at 2 and 3 ranks
of batch 4), rows 8-11 all ignored (one rank's block of a batch counts no
label).

usage: dp_mlp.py B OUT.mlir | dp_mlp.py --data OUT.npz | dp_mlp.py --eval OUT.npz"""
import sys

import numpy as np

if sys.argv[1] == "--data":
    r = np.random.RandomState(0)
    labels = r.randint(0, 4, size=24).astype(np.int64)
    labels[[1, 5, 6, 17]] = -1  # uneven per rank: the count must be global
    np.savez(sys.argv[2], x=r.randn(24, 3).astype(np.float32), labels=labels,
             target=r.randn(24, 4).astype(np.float32))
    sys.exit(0)
if sys.argv[1] == "--eval":
    r = np.random.RandomState(3)
    labels = r.randint(0, 4, size=26).astype(np.int64)
    labels[[2, 8, 9, 10, 11, 19]] = -1
    np.savez(sys.argv[2], x=r.randn(26, 3).astype(np.float32), labels=labels,
             target=r.randn(26, 4).astype(np.float32))
    sys.exit(0)
B = int(sys.argv[1])
w1 = np.random.RandomState(1).randn(3, 8) * 0.5
w2 = np.random.RandomState(2).randn(8, 4) * 0.5
dense = lambda a: "[" + ", ".join("[" + ", ".join("%.6f" % v for v in row) + "]" for row in a) + "]"
open(sys.argv[2], "w").write(f"""tcc.param @w1 = dense<{dense(w1)}> : tensor<3x8xf32>
tcc.param @b1 = dense<0.1> : tensor<8xf32>
tcc.param @w2 = dense<{dense(w2)}> : tensor<8x4xf32>
func.func @forward(%x: tensor<{B}x3xf32> {{tcc.name = "x"}}) -> (tensor<{B}x4xf32> {{tcc.name = "y"}}) {{
  %w1 = tcc.get_param @w1 : tensor<3x8xf32>
  %b1 = tcc.get_param @b1 : tensor<8xf32>
  %w2 = tcc.get_param @w2 : tensor<8x4xf32>
  %h = tcc.matmul %x, %w1 : (tensor<{B}x3xf32>, tensor<3x8xf32>) -> tensor<{B}x8xf32>
  %hb = tcc.add %h, %b1 : (tensor<{B}x8xf32>, tensor<8xf32>) -> tensor<{B}x8xf32>
  %t = tcc.tanh %hb : (tensor<{B}x8xf32>) -> tensor<{B}x8xf32>
  %y = tcc.matmul %t, %w2 : (tensor<{B}x8xf32>, tensor<8x4xf32>) -> tensor<{B}x4xf32>
  return %y : tensor<{B}x4xf32>
}}
""")
