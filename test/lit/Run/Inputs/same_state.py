"""Checks that two checkpoints hold the same training state bit for bit: the
parameters and optimizer state files byte for byte, and the same step and
data position in state.json.

usage: same_state.py STEP_DIR_A STEP_DIR_B
       same_state.py --best ROOT   (ROOT/best/step-K against ROOT/step-K)"""
import glob
import json
import os
import sys

if sys.argv[1] == "--best":
    root = sys.argv[2]
    best = glob.glob(os.path.join(root, "best", "step-*"))
    if len(best) != 1:
        sys.exit("expected one best checkpoint under %s, found %d" % (root, len(best)))
    a, b = best[0], os.path.join(root, os.path.basename(best[0]))
else:
    a, b = sys.argv[1], sys.argv[2]
bad = []
for name in ("params.safetensors", "optimizer.safetensors"):
    with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
        if fa.read() != fb.read():
            bad.append(name)
sa = json.load(open(os.path.join(a, "state.json")))
sb = json.load(open(os.path.join(b, "state.json")))
for key in ("step", "data_position"):
    if sa[key] != sb[key]:
        bad.append("%s (%s vs %s)" % (key, sa[key], sb[key]))
if bad:
    sys.exit("%s and %s differ: %s" % (a, b, ", ".join(bad)))
print("same state: %s and %s (step %d)" % (a, b, sa["step"]))
