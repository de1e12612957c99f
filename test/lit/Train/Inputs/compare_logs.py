#!/usr/bin/python3
"""Compare the losses of two `tcc train --log` CSVs step by step.

    compare_logs.py A.csv B.csv [--rtol R]

Both must have the same steps; every loss within rtol (relative to A's).
Prints the worst relative difference; exit 1 on mismatch.
"""

import argparse
import csv
import sys


def read(path):
    with open(path) as f:
        return [(int(r["step"]), float(r["loss"])) for r in csv.DictReader(f)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--rtol", type=float, default=1e-6)
    args = p.parse_args()
    a, b = read(args.a), read(args.b)
    if [s for s, _ in a] != [s for s, _ in b] or not a:
        print("compare_logs: steps differ: %s vs %s" % ([s for s, _ in a], [s for s, _ in b]))
        return 1
    worst = max(abs(x - y) / abs(x) for (_, x), (_, y) in zip(a, b))
    print("compare_logs: %d steps, max loss rel diff %.2e" % (len(a), worst))
    return 0 if worst <= args.rtol else 1


if __name__ == "__main__":
    sys.exit(main())
