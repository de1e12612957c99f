#!/usr/bin/python3
"""Compare the last evaluation of a `tcc train --eval-data ... --log` CSV
with train_ref.py's eval.npz (model.eval()'s loss after training).

    check_eval_loss.py LOG.csv EVAL.npz [--rtol R]

Prints the relative error; exit 1 when it is above rtol or the log has no
evaluation.
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
    a = p.parse_args()
    with open(a.log) as f:
        evals = [r["eval_loss"] for r in csv.DictReader(f) if r.get("eval_loss")]
    if not evals:
        print("check_eval_loss: %s has no eval_loss" % a.log)
        return 1
    got = float(evals[-1])
    with np.load(a.reference) as z:
        ref = float(z["loss"])
    rel = abs(got - ref) / abs(ref)
    ok = rel <= a.rtol
    print("check_eval_loss: %.9g vs %.9g, rel err %.3g %s" % (got, ref, rel, "ok" if ok else "MISMATCH"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
