#!/usr/bin/python3
"""Compare tcc's optimizer.safetensors with train_ref.py's optim_state.npz.

    check_optim.py OPTIM_STATE.npz STEPDIR [--rtol R]

train_ref.py names the state `exp_avg.P`, `exp_avg_sq.P`, `momentum_buffer.P`;
tcc names it `P.exp_avg`, ... (the tcc.opt_state attributes). Both must hold
the same set of tensors; each passes if max|d| <= rtol * max|ref| (torch's
`step` counter is implied by tcc's step and skipped). Exit 1 on mismatch.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "models"))
import safetensors_np  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("reference")
    p.add_argument("stepdir")
    p.add_argument("--rtol", type=float, default=1e-5)
    a = p.parse_args()
    with np.load(a.reference) as z:
        ref = {}
        for k in z.files:
            if k == "step":
                continue
            slot, param = k.split(".", 1)
            ref[param + "." + slot] = z[k]
    got, _ = safetensors_np.read(os.path.join(a.stepdir, "optimizer.safetensors"))
    if sorted(ref) != sorted(got):
        print("check_optim: names differ: reference %s, tcc %s" % (sorted(ref), sorted(got)))
        return 1
    worst, bad = 0.0, []
    for name, r in ref.items():
        d = float(np.abs(got[name].astype(np.float64) - r).max())
        scale = float(np.abs(r).max())
        rel = d / scale if scale else (0.0 if d == 0 else float("inf"))
        worst = max(worst, rel)
        if rel > a.rtol:
            bad.append("%s (%.3g)" % (name, rel))
    print("check_optim: %d tensors, worst rel err %.3g" % (len(ref), worst))
    if bad:
        print("check_optim: MISMATCH: " + ", ".join(bad))
        return 1
    print("check_optim: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
