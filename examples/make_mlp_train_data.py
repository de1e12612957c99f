"""Training data for the bundled MLP example: 64 samples of x (16 features)
and a target the MLP can fit (a fixed random linear map of x through tanh).

Run from the repository root with Debian's python: it rewrites
examples/mlp/train.npz deterministically.
"""
import numpy as np

rng = np.random.default_rng(0)
x = rng.standard_normal((64, 16)).astype(np.float32)
teacher = rng.standard_normal((16, 8)).astype(np.float32) / 4.0
target = np.tanh(x @ teacher).astype(np.float32)
np.savez("examples/mlp/train.npz", x=x, target=target)
