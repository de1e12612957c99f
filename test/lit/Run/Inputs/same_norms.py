"""Checks that two `tcc run --log` files logged the same gradient norms (the
grad_norm column, step by step) to a relative 1e-6.

usage: same_norms.py A.csv B.csv"""
import csv
import sys


def norms(path):
    with open(path) as f:
        return [(int(r["step"]), float(r["grad_norm"])) for r in csv.DictReader(f)]


a, b = norms(sys.argv[1]), norms(sys.argv[2])
if [s for s, _ in a] != [s for s, _ in b] or not a:
    sys.exit("%s and %s log different steps" % (sys.argv[1], sys.argv[2]))
for (step, x), (_, y) in zip(a, b):
    if abs(x - y) > 1e-6 * abs(x):
        sys.exit("step %d: grad_norm %.9g in %s but %.9g in %s"
                 % (step, x, sys.argv[1], y, sys.argv[2]))
print("same gradient norms over %d steps" % len(a))
