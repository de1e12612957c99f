#!/usr/bin/python3
"""Compare a `tcc train --log` CSV with a train_ref.py reference.npz.

    check_log.py LOG.csv REF.npz [--rtol R] [--first K] [--trace TRACE.npz]

Checks that the log has one row per reference step (or the first K), steps
numbered 1.., every loss within rtol of the reference's `loss` (relative,
elementwise) and every lr within 1e-12 of its `lr`. With --trace (the
reference's trace.npz), also every grad_norm within rtol of its `grad_norm`:
what torch.nn.utils.clip_grad_norm_ returned for that step. Prints the worst
errors; exit 1 on mismatch.
"""

import argparse
import csv
import sys

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("log")
    p.add_argument("reference")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--first", type=int, default=0, help="compare only the first K steps")
    p.add_argument("--trace", default="", help="trace.npz: also compare grad_norm")
    a = p.parse_args()
    with open(a.log) as f:
        rows = list(csv.DictReader(f))
    with np.load(a.reference) as z:
        ref_loss, ref_lr = z["loss"].astype(np.float64), z["lr"]
    n = a.first or len(ref_loss)
    if len(rows) != n:
        print("check_log: %d rows, expected %d" % (len(rows), n))
        return 1
    steps = [int(r["step"]) for r in rows]
    if steps != list(range(1, n + 1)):
        print("check_log: steps are %s, expected 1..%d" % (steps[:5], n))
        return 1
    loss = np.array([float(r["loss"]) for r in rows])
    lr = np.array([float(r["lr"]) for r in rows])
    rel = np.abs(loss - ref_loss[:n]) / np.abs(ref_loss[:n])
    worst = int(np.argmax(rel))
    print("check_log: %d steps, max loss rel err %.3g (step %d: %.9g vs %.9g)"
          % (n, rel[worst], worst + 1, loss[worst], ref_loss[worst]))
    ok = True
    if not (rel <= a.rtol).all():
        print("check_log: loss MISMATCH at steps %s (rtol %g)"
              % ((np.nonzero(rel > a.rtol)[0] + 1).tolist()[:10], a.rtol))
        ok = False
    if not (np.abs(lr - ref_lr[:n]) <= 1e-12 * np.abs(ref_lr[:n]) + 1e-300).all():
        print("check_log: lr MISMATCH: %s vs %s" % (lr[:5], ref_lr[:5]))
        ok = False
    if a.trace:
        with np.load(a.trace) as z:
            ref_gn = z["grad_norm"].astype(np.float64)[:n]
        gn = np.array([float(r["grad_norm"]) for r in rows])
        grel = np.abs(gn - ref_gn) / np.abs(ref_gn)
        gw = int(np.argmax(grel))
        print("check_log: max grad_norm rel err %.3g (step %d: %.9g vs %.9g)"
              % (grel[gw], gw + 1, gn[gw], ref_gn[gw]))
        if not (grel <= a.rtol).all():
            print("check_log: grad_norm MISMATCH at steps %s (rtol %g)"
                  % ((np.nonzero(grel > a.rtol)[0] + 1).tolist()[:10], a.rtol))
            ok = False
    print("check_log: ok" if ok else "check_log: FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
