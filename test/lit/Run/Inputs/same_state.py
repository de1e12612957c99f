"""Checks that two checkpoints hold the same training state: the parameters
and optimizer state files byte for byte (or, with --rtol R, every array to
max|a - b| <= R * max|a|), and the same step and data position in
state.json.

usage: same_state.py [--rtol R] STEP_DIR_A STEP_DIR_B
       same_state.py --best ROOT   (ROOT/best/step-K against ROOT/step-K)"""
import glob
import json
import os
import sys

args = sys.argv[1:]
rtol = None
if args[:1] == ["--rtol"]:
    rtol = float(args[1])
    args = args[2:]
if args[0] == "--best":
    root = args[1]
    best = glob.glob(os.path.join(root, "best", "step-*"))
    if len(best) != 1:
        sys.exit("expected one best checkpoint under %s, found %d" % (root, len(best)))
    a, b = best[0], os.path.join(root, os.path.basename(best[0]))
else:
    a, b = args[0], args[1]


def arrays_differ(pa, pb):
    """The arrays of pb that are not within rtol of pa's (normwise)."""
    import numpy as np
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "..", "models"))
    import safetensors_np
    xa, _ = safetensors_np.read(pa)
    xb, _ = safetensors_np.read(pb)
    if sorted(xa) != sorted(xb):
        return ["names (%s vs %s)" % (sorted(xa), sorted(xb))]
    bad = []
    for n in sorted(xa):
        r, g = xa[n].astype(np.float64), xb[n].astype(np.float64)
        scale = float(np.abs(r).max()) if r.size else 0.0
        err = float(np.abs(g - r).max()) if r.size else 0.0
        if r.shape != g.shape or not np.isfinite(g).all() or err > rtol * scale:
            bad.append("%s (max abs err %g, max|a| %g)" % (n, err, scale))
    return bad


bad = []
for name in ("params.safetensors", "optimizer.safetensors"):
    pa, pb = os.path.join(a, name), os.path.join(b, name)
    if rtol is not None:
        bad += ["%s: %s" % (name, d) for d in arrays_differ(pa, pb)]
        continue
    with open(pa, "rb") as fa, open(pb, "rb") as fb:
        if fa.read() != fb.read():
            bad.append(name)
sa = json.load(open(os.path.join(a, "state.json")))
sb = json.load(open(os.path.join(b, "state.json")))
for key in ("step", "data_position"):
    if sa[key] != sb[key]:
        bad.append("%s (%s vs %s)" % (key, sa[key], sb[key]))
if bad:
    sys.exit("%s and %s differ: %s" % (a, b, ", ".join(bad)))
print("same state%s: %s and %s (step %d)"
      % ("" if rtol is None else " (rtol %g)" % rtol, a, b, sa["step"]))
