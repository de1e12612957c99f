"""Compares the evaluations of two `tcc run --log` CSVs: the same steps
evaluated, eval_loss within --rtol of the reference's and eval_accuracy (when
logged) equal. Prints one line per evaluation; exit 1 on a mismatch.

usage: compare_eval.py REFERENCE.csv OTHER.csv --rtol R"""
import argparse
import csv
import sys

p = argparse.ArgumentParser()
p.add_argument("reference")
p.add_argument("other")
p.add_argument("--rtol", type=float, required=True)
a = p.parse_args()


def evals(path):
    with open(path) as f:
        return [r for r in csv.DictReader(f) if r.get("eval_loss")]


ref, other = evals(a.reference), evals(a.other)
if not ref or [r["step"] for r in ref] != [r["step"] for r in other]:
    print("compare_eval: evaluated steps differ: %s vs %s"
          % ([r["step"] for r in ref], [r["step"] for r in other]))
    sys.exit(1)
ok = True
for r, o in zip(ref, other):
    want, got = float(r["eval_loss"]), float(o["eval_loss"])
    rel = abs(got - want) / abs(want)
    same_acc = r.get("eval_accuracy") == o.get("eval_accuracy")
    ok = ok and rel <= a.rtol and same_acc
    print("step %s: eval_loss %.9g vs %.9g (rel %.1e), accuracy %s vs %s"
          % (r["step"], want, got, rel, r.get("eval_accuracy"),
             o.get("eval_accuracy")))
print("compare_eval: %s" % ("ok" if ok else "MISMATCH"))
sys.exit(0 if ok else 1)
