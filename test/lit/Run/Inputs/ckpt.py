#!/usr/bin/python3
"""Checkpoint directories as the runtime sees them, for the Run tests.

    ckpt.py ls DIR                  every entry of DIR, sorted, one a line
    ckpt.py check DIR [--step N]    the newest complete step-<N> of DIR (all
                                    three files; the highest "run", then the
                                    highest N, as latestCheckpoint picks it)
                                    must load: state.json parses with its
                                    "step" = N, both safetensors files are
                                    complete (header, every tensor's bytes,
                                    nothing missing at the end); prints
                                    "latest step-N"; with --step, N must be it

Exit 1 with one line on any problem.
"""

import argparse
import json
import os
import re
import struct
import sys

FILES = ("params.safetensors", "optimizer.safetensors", "state.json")
SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2,
         "I8": 1, "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1}


class Bad(Exception):
    pass


def run_of(path):
    """The "run" of step directory `path`'s state.json (0 without one)."""
    state_path = os.path.join(path, "state.json")
    try:
        with open(state_path) as f:
            return json.load(f).get("run", 0)
    except ValueError as e:
        raise Bad("%s: not JSON: %s" % (state_path, e))


def complete_steps(root):
    """[(N, path)] of the complete step-<N> directories, newest first: the
    highest run first, then the highest step (as listCheckpoints orders)."""
    out = []
    for name in os.listdir(root):
        m = re.fullmatch(r"step-(0|[1-9][0-9]*)", name)
        path = os.path.join(root, name)
        if m and os.path.isdir(path) and all(
                os.path.isfile(os.path.join(path, f)) for f in FILES):
            out.append((run_of(path), int(m.group(1)), path))
    return [(n, path) for _, n, path in sorted(out, reverse=True)]


def check_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    if len(blob) < 8:
        raise Bad("%s: %d bytes, shorter than the header length" % (path, len(blob)))
    (n,) = struct.unpack("<Q", blob[:8])
    if 8 + n > len(blob):
        raise Bad("%s: header of %d bytes runs past the end (%d bytes)" % (path, n, len(blob)))
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except ValueError as e:
        raise Bad("%s: header is not JSON: %s" % (path, e))
    header.pop("__metadata__", None)
    data = len(blob) - 8 - n
    end = 0
    for name, t in header.items():
        b, e = t["data_offsets"]
        count = 1
        for d in t["shape"]:
            count *= d
        if e - b != count * SIZES[t["dtype"]] or e > data:
            raise Bad("%s: tensor '%s' [%d, %d) does not fit (%d data bytes)" % (path, name, b, e, data))
        end = max(end, e)
    if end != data:
        raise Bad("%s: %d data bytes, the tensors cover %d" % (path, data, end))


def check(root):
    """Checks the newest complete checkpoint of root; returns its N (None if none)."""
    steps = complete_steps(root) if os.path.isdir(root) else []
    if not steps:
        return None
    n, path = steps[0]
    state_path = os.path.join(path, "state.json")
    try:
        with open(state_path) as f:
            state = json.load(f)
    except ValueError as e:
        raise Bad("%s: not JSON: %s" % (state_path, e))
    if state.get("format_version") != 1 or state.get("step") != n:
        raise Bad("%s: format_version %r, step %r in step-%d" % (
            state_path, state.get("format_version"), state.get("step"), n))
    for f in FILES[:2]:
        check_safetensors(os.path.join(path, f))
    return n


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["ls", "check"])
    p.add_argument("dir")
    p.add_argument("--step", type=int)
    a = p.parse_args()
    if a.command == "ls":
        for name in sorted(os.listdir(a.dir)):
            print(name)
        return 0
    try:
        n = check(a.dir)
    except Bad as e:
        print("ckpt.py: %s" % e)
        return 1
    if n is None:
        print("ckpt.py: no complete checkpoint in %s" % a.dir)
        return 1
    print("latest step-%d" % n)
    if a.step is not None and n != a.step:
        print("ckpt.py: expected step-%d" % a.step)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
