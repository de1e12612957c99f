"""Writes the data-parallel overlap benchmark (docs/benchmarks.md): m.mlir, a
3-layer fp32 MLP of 6.3M parameters at batch 64, and d.npz (256 samples)."""
import numpy as np, sys
B=64
open("m.mlir","w").write(f"""tcc.param @w1 = dense<0.01> : tensor<512x2048xf32>
tcc.param @w2 = dense<0.001> : tensor<2048x2048xf32>
tcc.param @w3 = dense<0.01> : tensor<2048x512xf32>
func.func @forward(%x: tensor<{B}x512xf32> {{tcc.name = "x"}}) -> (tensor<{B}x512xf32> {{tcc.name = "y"}}) {{
  %w1 = tcc.get_param @w1 : tensor<512x2048xf32>
  %w2 = tcc.get_param @w2 : tensor<2048x2048xf32>
  %w3 = tcc.get_param @w3 : tensor<2048x512xf32>
  %a = tcc.matmul %x, %w1 : (tensor<{B}x512xf32>, tensor<512x2048xf32>) -> tensor<{B}x2048xf32>
  %b = tcc.tanh %a : (tensor<{B}x2048xf32>) -> tensor<{B}x2048xf32>
  %c = tcc.matmul %b, %w2 : (tensor<{B}x2048xf32>, tensor<2048x2048xf32>) -> tensor<{B}x2048xf32>
  %d = tcc.tanh %c : (tensor<{B}x2048xf32>) -> tensor<{B}x2048xf32>
  %y = tcc.matmul %d, %w3 : (tensor<{B}x2048xf32>, tensor<2048x512xf32>) -> tensor<{B}x512xf32>
  return %y : tensor<{B}x512xf32>
}}
""")
r=np.random.RandomState(0)
np.savez("d.npz", x=r.randn(256,512).astype(np.float32), target=r.randn(256,512).astype(np.float32))
