"""Writes OUT/model.mlir, a 3-layer MLP with GELU and dropout after each
hidden layer (x f32[64,16] -> y f32[64,4]), and OUT/data.npz (x, target: 256
samples), for the rematerialisation tests: dropout recomputed in the
backward pass must draw the mask it drew in the forward pass.
Deterministic (fixed seed)."""
import os
import sys

import numpy as np


def literal(a):
    if a.ndim == 1:
        return "[" + ", ".join(f"{v:.6e}" for v in a) + "]"
    return "[" + ", ".join(literal(r) for r in a) + "]"


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    dims = [16, 64, 64, 4]
    lines = ["module {"]
    for i in range(3):
        w = (rng.standard_normal((dims[i], dims[i + 1])) / np.sqrt(dims[i])).astype(np.float32)
        b = (0.1 * rng.standard_normal(dims[i + 1])).astype(np.float32)
        lines.append(f"  tcc.param @w{i} = dense<{literal(w)}> : tensor<{dims[i]}x{dims[i + 1]}xf32>")
        lines.append(f"  tcc.param @b{i} = dense<{literal(b)}> : tensor<{dims[i + 1]}xf32>")
    lines.append('  func.func @forward(%x: tensor<64x16xf32> {tcc.name = "x"}) -> (tensor<64x4xf32> {tcc.name = "y"}) {')
    h = "%x"
    for i in range(3):
        a, n = dims[i], dims[i + 1]
        lines += [
            f"    %w{i} = tcc.get_param @w{i} : tensor<{a}x{n}xf32>",
            f"    %b{i} = tcc.get_param @b{i} : tensor<{n}xf32>",
            f"    %m{i} = tcc.matmul {h}, %w{i} : (tensor<64x{a}xf32>, tensor<{a}x{n}xf32>) -> tensor<64x{n}xf32>",
            f"    %z{i} = tcc.add %m{i}, %b{i} : (tensor<64x{n}xf32>, tensor<{n}xf32>) -> tensor<64x{n}xf32>",
        ]
        h = f"%z{i}"
        if i < 2:
            lines += [
                f"    %g{i} = tcc.gelu %z{i} : (tensor<64x{n}xf32>) -> tensor<64x{n}xf32>",
                f"    %d{i}:2 = tcc.dropout %g{i} {{ratio = 0.25 : f64, seed = {11 + i} : i64}} : "
                f"(tensor<64x{n}xf32>) -> (tensor<64x{n}xf32>, tensor<64x{n}xi1>)",
            ]
            h = f"%d{i}#0"
    lines += [f"    return {h} : tensor<64x4xf32>", "  }", "}"]
    with open(os.path.join(out, "model.mlir"), "w") as f:
        f.write("\n".join(lines) + "\n")
    x = rng.standard_normal((256, 16)).astype(np.float32)
    target = rng.standard_normal((256, 4)).astype(np.float32)
    np.savez(os.path.join(out, "data.npz"), x=x, target=target)


if __name__ == "__main__":
    main()
