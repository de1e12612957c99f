#!/usr/bin/python3
"""The eval accuracy of a tcc checkpoint of a models.py classifier, in PyTorch.

    check_accuracy.py STEP_DIR EVAL.npz LOG.csv [--model NAME]

Loads STEP_DIR/params.safetensors into models.py's model NAME (default
mlp), classifies EVAL.npz (every array but `labels` is passed to forward by
name; argmax of the logits' last dim, as torch.argmax) and counts the
labels that are not -100 (cross_entropy's ignore_index) predicted right.
The log's eval_accuracy at the checkpoint's step must equal correct /
counted (to 1e-7). Prints "accuracy ok: C/N"; exit 1 otherwise.
"""

import csv
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402
import safetensors_np  # noqa: E402


def main():
    step_dir, eval_npz, log = sys.argv[1:4]
    name = sys.argv[5] if len(sys.argv) == 6 and sys.argv[4] == "--model" else "mlp"
    step = int(os.path.basename(os.path.normpath(step_dir)).split("-")[1])
    model, _, _ = models.MODELS[name]()
    params, _ = safetensors_np.read(os.path.join(step_dir, "params.safetensors"))
    model.load_state_dict({n: torch.from_numpy(np.array(a)) for n, a in params.items()})
    data = np.load(eval_npz)
    with torch.no_grad():
        inputs = {k: torch.from_numpy(data[k]) for k in data.files if k != "labels"}
        predicted = torch.argmax(model(**inputs), dim=-1).numpy()
    labels = data["labels"]
    counted = labels != -100
    correct = int(((predicted == labels) & counted).sum())
    n = int(counted.sum())
    rows = {int(r["step"]): r for r in csv.DictReader(open(log))}
    got = float(rows[step]["eval_accuracy"])
    if abs(got - correct / n) > 1e-7:
        print("accuracy MISMATCH at step %d: log %r, PyTorch %d/%d" % (step, got, correct, n))
        return 1
    print("accuracy ok: %d/%d" % (correct, n))
    return 0


if __name__ == "__main__":
    sys.exit(main())
