#!/usr/bin/python3
"""Compare two loss curves (`tcc train --log` CSVs) window by window.

    compare_curves.py REF.csv RUN.csv --window W --rtol R

A low-precision run does not reproduce fp32 step by step: each step's loss
moves by rounding noise. What must hold is the curve: the mean loss over
every window of W steps within rtol (relative) of the reference's. Prints
the worst window; exit 1 when a window is off, the steps differ, or a loss
is not finite.
"""

import argparse
import csv
import math
import sys


def read(path):
    with open(path) as f:
        return [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("ref")
    p.add_argument("run")
    p.add_argument("--window", type=int, default=20)
    p.add_argument("--rtol", type=float, required=True)
    args = p.parse_args()
    ref, run = read(args.ref), read(args.run)
    if [s for s, _ in ref] != [s for s, _ in run] or not ref:
        print("compare_curves: steps differ")
        return 1
    if not all(math.isfinite(l) for _, l in ref + run):
        print("compare_curves: a loss is not finite")
        return 1
    worst, where = 0.0, 0
    for start in range(0, len(ref), args.window):
        a = [l for _, l in ref[start:start + args.window]]
        b = [l for _, l in run[start:start + args.window]]
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        diff = abs(ma - mb) / abs(ma)
        if diff > worst:
            worst, where = diff, ref[start][0]
    print("compare_curves: %d steps, windows of %d, worst window (from step %d) "
          "rel diff %.2e" % (len(ref), args.window, where, worst))
    return 0 if worst <= args.rtol else 1


if __name__ == "__main__":
    sys.exit(main())
