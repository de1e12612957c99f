"""Checks a `tcc run --profile-json` file against the artifact's plan: one
record per train_step plan step, in plan order, named after its kernel
symbol or library op, with non-negative times whose sum is `steps_ms` and at
most the step's wall time; families that count every step once, the most
time first.

usage: check_profile.py PROFILE.json ARTIFACT.tcc BACKEND STEP
"""
import json
import math
import sys


def fail(msg):
    sys.exit("check_profile: " + msg)


def main():
    path, artifact, backend, step = sys.argv[1:]
    prof = json.load(open(path))
    plan = json.load(open(artifact + "/plan.json"))["functions"]["train_step"]["steps"]
    if (prof["backend"], prof["function"], prof["step"]) != (backend, "train_step", int(step)):
        fail("header %s" % {k: prof[k] for k in ("backend", "function", "step")})
    steps = prof["steps"]
    if len(steps) != len(plan):
        fail("%d records for %d plan steps" % (len(steps), len(plan)))
    for i, (r, p) in enumerate(zip(steps, plan)):
        name = p["symbol"] if p["kind"] == "kernel" else p["op"]
        if (r["step"], r["kind"], r["name"]) != (i, p["kind"], name):
            fail("record %d is %s, plan step %d is %s %s" % (i, r, i, p["kind"], name))
        if not r["ms"] >= 0:
            fail("record %d: ms %r" % (i, r["ms"]))
    total = sum(r["ms"] for r in steps)
    if not math.isclose(total, prof["steps_ms"], rel_tol=1e-9, abs_tol=1e-12):
        fail("steps_ms %r, the records sum to %r" % (prof["steps_ms"], total))
    if not total <= prof["wall_ms"]:
        fail("the steps take %r ms, more than the step's wall time %r" % (total, prof["wall_ms"]))
    fams = prof["families"]
    if sum(f["count"] for f in fams) != len(steps):
        fail("families count %d steps" % sum(f["count"] for f in fams))
    if [f["ms"] for f in fams] != sorted((f["ms"] for f in fams), reverse=True):
        fail("families not sorted by time")
    for f in fams:
        mine = [r for r in steps if r["family"] == f["family"]]
        if len(mine) != f["count"] or not math.isclose(sum(r["ms"] for r in mine), f["ms"],
                                                       rel_tol=1e-9, abs_tol=1e-12):
            fail("family %s does not add up" % f["family"])
    print("profile ok: %d steps, %d families" % (len(steps), len(fams)))


main()
