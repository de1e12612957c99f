#!/usr/bin/python3
"""Whether two checkpoints hold bit-identical tensors.

    same_state.py CKPT_A CKPT_B [--except REGEX]

Compares params.safetensors and optimizer.safetensors of the two checkpoint
directories tensor by tensor, bit for bit, skipping tensors whose name
matches REGEX (re.search). Prints how many were compared; exit 1 on the
first difference, naming the tensor.
"""

import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "models"))
import safetensors_np  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--except", dest="skip", default=None)
    args = p.parse_args()
    compared = 0
    for f in ("params.safetensors", "optimizer.safetensors"):
        a = safetensors_np.read(os.path.join(args.a, f))[0]
        b = safetensors_np.read(os.path.join(args.b, f))[0]
        if sorted(a) != sorted(b):
            print("same_state: %s: the tensor names differ" % f)
            return 1
        for name in sorted(a):
            if args.skip and re.search(args.skip, name):
                continue
            if a[name].dtype != b[name].dtype or a[name].tobytes() != b[name].tobytes():
                print("same_state: %s differs" % name)
                return 1
            compared += 1
    print("same_state: %d tensors bit-identical" % compared)
    return 0


if __name__ == "__main__":
    sys.exit(main())
