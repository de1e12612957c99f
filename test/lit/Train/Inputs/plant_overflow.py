#!/usr/bin/python3
"""Training data for the MLP of test/models with one planted overflow.

    plant_overflow.py OUT.npz --steps N --batch B --at K

x ~ N(0, 1) and target ~ N(0, 1), seeded; the B samples of step K (1-based;
`tcc run` reads the samples in order) get x * 3e4, so fc1's outputs exceed
fp16's largest finite value (65504) and that step's loss and gradients are
inf/NaN under --precision fp16. Every other step is ordinary.
"""

import argparse

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--at", type=int, required=True)
    a = p.parse_args()
    rng = np.random.default_rng(0)
    n = a.steps * a.batch
    x = rng.standard_normal((n, 16)).astype(np.float32)
    target = rng.standard_normal((n, 8)).astype(np.float32)
    x[(a.at - 1) * a.batch:a.at * a.batch] *= np.float32(3e4)
    np.savez(a.out, x=x, target=target)


if __name__ == "__main__":
    main()
