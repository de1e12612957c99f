#!/usr/bin/python3
"""Checks an artifact written by `tcc compile -o OUT.tcc` (docs/artifact.md)
without the runtime, and prints one line per fact for FileCheck.

    check_artifact.py files OUT.tcc
        every file of manifest "files" exists, with the size and SHA-256 of
        its "integrity" entry; kernels.fatbin iff listed
    check_artifact.py plan OUT.tcc
        ids, storages, arena ranges, steps and results are consistent;
        prints per function the counts and the in-place results
    check_artifact.py weights OUT.tcc MODEL.onnx
        weights.safetensors holds exactly the ONNX initializers of the plan's
        params, bit for bit, in plan order
    check_artifact.py arena OUT.tcc PLANNED.mlir
        each function's arena_bytes equals exec.arena_bytes in the IR
    check_artifact.py symbols OUT.tcc
        every kernel symbol of the plan is exported by kernels/host.so
Exits 1 with a message on the first inconsistency.
"""

import ctypes
import hashlib
import json
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "models"))
import safetensors_np  # noqa: E402

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
          "i64": np.int64, "bool": np.bool_}
RUNTIME = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "runtime")


def _read(rel):
    with open(os.path.join(RUNTIME, rel)) as f:
        return f.read()


# The library ops and the format version, from their one definition each.
LIBRARY_OPS = set(re.findall(r'^TCC_LIBRARY_OP\(\w+, "(\w+)"\)$',
                             _read("plan/library_ops.inc"), re.M))
VERSION = int(re.search(r"#define TCC_ARTIFACT_VERSION (\d+)",
                        _read("api/tcc_runtime.h")).group(1))


def fail(msg):
    print("check_artifact: " + msg)
    sys.exit(1)


def load(art, name):
    with open(os.path.join(art, name)) as f:
        return json.load(f)


def nbytes(t):
    return int(np.prod(t["shape"], dtype=np.int64)) * np.dtype(DTYPES[t["dtype"]]).itemsize


def check_files(art):
    m = load(art, "manifest.json")
    files = m["files"]
    for key in ("plan", "weights", "kernel_source", "host_kernels"):
        if key not in files:
            fail("manifest lists no %s" % key)
    for key, rel in sorted(files.items()):
        if not os.path.isfile(os.path.join(art, rel)):
            fail("manifest file %s '%s' is missing" % (key, rel))
        print("file %s %s" % (key, rel))
    # Every listed file's size and SHA-256, by Python's hashlib.
    integrity = m.get("integrity", {})
    if set(integrity) != set(files.values()):
        fail("integrity lists %s, files %s" % (sorted(integrity), sorted(files.values())))
    for rel, rec in sorted(integrity.items()):
        with open(os.path.join(art, rel), "rb") as f:
            data = f.read()
        if rec != {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}:
            fail("integrity of %s is %s, the file has %d bytes, SHA-256 %s"
                 % (rel, rec, len(data), hashlib.sha256(data).hexdigest()))
    for key, rel in (("constants", "constants.safetensors"),
                     ("cuda_kernels", "kernels/kernels.fatbin")):
        if (key in files) != os.path.exists(os.path.join(art, rel)):
            fail("%s: listed %s, present %s" % (rel, key in files,
                                                  os.path.exists(os.path.join(art, rel))))
    extra = set()
    for root, _, names in os.walk(art):
        for n in names:
            extra.add(os.path.relpath(os.path.join(root, n), art))
    extra -= set(files.values()) | {"manifest.json"}
    if extra:
        fail("files not in the manifest: %s" % sorted(extra))
    print("files ok")


def check_plan(art):
    plan = load(art, "plan.json")
    if plan["version"] != VERSION:
        fail("plan version %r" % plan["version"])
    params, state = plan["params"], plan["opt_state"]
    consts = {}
    if os.path.exists(os.path.join(art, "constants.safetensors")):
        consts, _ = safetensors_np.read(os.path.join(art, "constants.safetensors"))
    for name, fn in plan["functions"].items():
        arena = fn["arena_bytes"]
        values = fn["values"]
        written = set()
        for i, v in enumerate(values):
            if v["id"] != i:
                fail("%s: value %d has id %r" % (name, i, v["id"]))
            s = v["storage"]
            if s == "arena":
                if v["offset"] % 64 or v["offset"] + nbytes(v) > arena:
                    fail("%s: value %d at %d+%d outside the arena of %d" %
                         (name, i, v["offset"], nbytes(v), arena))
            elif s in ("param", "opt_state", "input"):
                slots = {"param": params, "opt_state": state, "input": fn["inputs"]}[s]
                t = slots[v["index"]]
                if t["dtype"] != v["dtype"] or nbytes(t) != nbytes(v):
                    fail("%s: value %d does not fit %s %d" % (name, i, s, v["index"]))
                written.add(i)
            elif s == "constant":
                c = consts.get(v["name"])
                if c is None or c.dtype != DTYPES[v["dtype"]] or list(c.shape) != v["shape"]:
                    fail("%s: value %d: constant '%s' missing or of another type" %
                         (name, i, v["name"]))
                written.add(i)
            elif s == "step":
                if v["dtype"] != "i64" or v["shape"] != []:
                    fail("%s: step value %d is not an i64 scalar" % (name, i))
                written.add(i)
            else:
                fail("%s: value %d has storage %r" % (name, i, s))

        def root(i):  # a reshape alias: same storage, not written by a step
            return (values[i]["storage"], values[i].get("offset"), values[i].get("index"))
        written_roots = {root(i) for i in written}
        kernels = calls = 0
        for k, st in enumerate(fn["steps"]):
            for i in st["inputs"]:
                if i == -1 and st["kind"] == "call":
                    continue
                if not (0 <= i < len(values)) or (i not in written and root(i) not in written_roots):
                    fail("%s: step %d reads value %d before it is written" % (name, k, i))
            for o in st["outputs"]:
                if o == -1:
                    continue
                written.add(o)
                written_roots.add(root(o))
            if st["kind"] == "kernel":
                kernels += 1
                out = values[st["outputs"][0]]
                # Its output, then one value per store of its kernel.
                entry = [e for e in plan["kernels"] if e["symbol"] == st["symbol"]]
                stores = len(entry[0].get("stores", [])) if entry else 0
                if len(st["outputs"]) != 1 + stores or st["elements"] != int(np.prod(out["shape"], dtype=np.int64)):
                    fail("%s: kernel step %d: bad outputs/elements" % (name, k))
                if not re.fullmatch(r"tcc_[A-Za-z0-9_]+", st["symbol"]):
                    fail("%s: kernel step %d: symbol %r" % (name, k, st["symbol"]))
            elif st["kind"] == "call":
                calls += 1
                if st["op"] not in LIBRARY_OPS:
                    fail("%s: step %d calls %r, not a library op" % (name, k, st["op"]))
                if not isinstance(st["attrs"], dict):
                    fail("%s: step %d: attrs is not an object" % (name, k))
            else:
                fail("%s: step %d has kind %r" % (name, k, st["kind"]))
        inplace = {"param": 0, "opt_state": 0}
        copied = {"param": 0, "opt_state": 0}
        losses = 0
        for r in fn["results"]:
            v = values[r["value"]]
            if r["value"] not in written and root(r["value"]) not in written_roots:
                fail("%s: result value %d is never written" % (name, r["value"]))
            if r["role"] == "loss":
                losses += 1
                if v["shape"] != [] or v["dtype"] not in ("f32", "f64"):
                    fail("%s: the loss is not a float scalar" % name)
                continue
            if r["role"] == "metric":
                if v["shape"] != [] or v["dtype"] not in ("f32", "f64") or not r.get("name"):
                    fail("%s: metric result %r is not a named float scalar" % (name, r.get("name")))
                continue
            slots = params if r["role"] == "param" else state
            t = slots[r["index"]]
            if t["dtype"] != v["dtype"] or t["shape"] != v["shape"]:
                fail("%s: %s result %d does not fit" % (name, r["role"], r["index"]))
            if v["storage"] == r["role"] and v["index"] == r["index"]:
                inplace[r["role"]] += 1
            else:
                copied[r["role"]] += 1
        if losses != 1:
            fail("%s: %d loss results" % (name, losses))
        print("%s: %d values, %d kernel steps, %d call steps, arena %d bytes" %
              (name, len(values), kernels, calls, arena))
        print("%s: results in place: %d params, %d opt_state; copied: %d params, %d opt_state" %
              (name, inplace["param"], inplace["opt_state"], copied["param"], copied["opt_state"]))
    print("plan ok")


def check_weights(art, model_path):
    import onnx
    from onnx import numpy_helper
    plan = load(art, "plan.json")
    model = onnx.load(model_path)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    weights, _ = safetensors_np.read(os.path.join(art, "weights.safetensors"))
    names = [p["name"] for p in plan["params"]]
    if sorted(weights) != sorted(names):
        fail("weights %s != params %s" % (sorted(weights), sorted(names)))
    for p in plan["params"]:
        w = weights[p["name"]]
        ref = inits.get(p["name"])
        if ref is None:
            fail("param '%s' is no initializer of %s" % (p["name"], model_path))
        if list(w.shape) != p["shape"] or w.dtype != DTYPES[p["dtype"]]:
            fail("weight '%s' is %s%s, the plan says %s%s" %
                 (p["name"], w.dtype, list(w.shape), p["dtype"], p["shape"]))
        if w.dtype != ref.dtype or w.shape != ref.shape or w.tobytes() != ref.tobytes():
            fail("weight '%s' differs from the ONNX initializer" % p["name"])
    print("weights: %d tensors equal the ONNX initializers" % len(names))


def check_arena(art, planned):
    plan = load(art, "plan.json")
    text = open(planned).read()
    for name, fn in plan["functions"].items():
        m = re.search(r"func\.func @%s\(.*?exec\.arena_bytes = (\d+)" % name, text)
        if not m:
            fail("no exec.arena_bytes on @%s in %s" % (name, planned))
        if int(m.group(1)) != fn["arena_bytes"]:
            fail("%s: arena_bytes %d, the IR has %s" % (name, fn["arena_bytes"], m.group(1)))
        print("%s: arena_bytes %d = exec.arena_bytes" % (name, fn["arena_bytes"]))


def check_symbols(art):
    plan = load(art, "plan.json")
    lib = ctypes.CDLL(os.path.abspath(os.path.join(art, "kernels", "host.so")))
    symbols = sorted({st["symbol"] for fn in plan["functions"].values()
                      for st in fn["steps"] if st["kind"] == "kernel"})
    for s in symbols:
        try:
            getattr(lib, s)
        except AttributeError:
            fail("host.so does not export %s" % s)
    print("symbols: host.so exports all %d kernels of the plan" % len(symbols))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    {"files": check_files, "plan": check_plan, "weights": check_weights,
     "arena": check_arena, "symbols": check_symbols}[cmd](*args)


if __name__ == "__main__":
    main()
