#!/usr/bin/python3
"""Inputs and PyTorch's value for make_onnx.py's weighted_sce case:

    weighted_loss_ref.py IN.npz WANT.npz

x [3, 4] random, labels y = [1, 2, 3] (2 is ignore_index), weights
[1, 2, 0.5, 4]: torch.nn.functional.cross_entropy(x, y, weight, ignore_index=2),
the mean over the counted labels' weights (2 + 4).
"""
import sys

import numpy as np
import torch

x = torch.from_numpy(np.random.default_rng(7).standard_normal((3, 4)).astype(np.float32))
y = torch.tensor([1, 2, 3])
w = torch.tensor([1.0, 2.0, 0.5, 4.0])
loss = torch.nn.functional.cross_entropy(x, y, weight=w, ignore_index=2)
np.savez(sys.argv[1], x=x.numpy(), y=y.numpy())
np.savez(sys.argv[2], loss=loss.numpy())
