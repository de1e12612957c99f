"""Shared pieces of the Python package's tests (run by ctest: python/CMakeLists.txt)."""

import os
import sys

import numpy as np
import pytest
import torch

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import models  # noqa: E402  (test/models/models.py: the reference models)

torch.set_num_threads(1)


def assert_params_close(got, ref, rtol=1e-5):
    """Every tensor of `ref` in `got`, normwise: max|got - ref| <= rtol *
    max|ref| (test/models/compare_params.py's default criterion)."""
    assert sorted(got) == sorted(ref)
    for name, r in ref.items():
        r = np.asarray(r, np.float64)
        g = np.asarray(got[name], np.float64)
        assert g.shape == r.shape, name
        err = np.abs(g - r).max()
        assert err <= rtol * np.abs(r).max(), f"{name}: max error {err:.3g}, " \
            f"max|ref| {np.abs(r).max():.3g}"


def numpy_params(module):
    return {n: p.detach().numpy().copy() for n, p in module.named_parameters()}


@pytest.fixture
def mlp():
    """models.MLP (fc1, ln, gelu, fc2) with its example input x [4, 16]."""
    model, inputs, _ = models.build_mlp()
    return model, inputs["x"]


def mlp_batches(steps, seed=7):
    """`steps` (x [4, 16], target [4, 8]) float32 batches."""
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(4, 16, generator=g), torch.randn(4, 8, generator=g))
            for _ in range(steps)]


def bin_path(name):
    from tcc import _tools
    return _tools.binary(name)
