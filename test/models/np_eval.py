#!/usr/bin/python3
"""Evaluate an exported model.onnx with a tiny numpy interpreter and compare
against expected.npz.

    /usr/bin/python3 test/models/np_eval.py DIR [--dtype float64|float32]

An independent check that the exported graph (not just PyTorch) produces the
reference outputs, and a debugging aid for tcc's importer: `--dump NAME`
prints any intermediate value by its ONNX name. Only the ops the reference
models export are implemented; onnxruntime is not available on the system
python.
"""

import argparse
import math
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

_erf = np.vectorize(math.erf)


def _attrs(node):
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}


def _layer_norm(x, w, b, axis=-1, epsilon=1e-5, **_):
    axes = tuple(range(axis % x.ndim, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + epsilon) * w + b


def _softmax(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _slice(x, starts, ends, axes=None, steps=None):
    axes = range(len(starts)) if axes is None else axes
    steps = [1] * len(starts) if steps is None else steps
    idx = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        idx[a] = slice(int(s), int(e), int(st))
    return x[tuple(idx)]


def _gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    y = alpha * ((a.T if transA else a) @ (b.T if transB else b))
    return y if c is None else y + beta * c


def _cast(x, to, fdtype):
    np_type = onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[to]  # onnx 1.12 API
    return x.astype(fdtype if np_type == np.float32 else np_type)


def run(model_path, feeds, fdtype=np.float64):
    g = onnx.load(model_path).graph
    env = dict(feeds)
    for t in g.initializer:
        env[t.name] = numpy_helper.to_array(t)

    def f(a):  # compute all float math in fdtype
        return a.astype(fdtype) if a.dtype.kind == "f" else a

    env = {k: f(v) for k, v in env.items()}
    for n in g.node:
        x = [env[i] if i else None for i in n.input]
        at = _attrs(n)
        op = n.op_type
        if op == "Constant":
            out = [f(numpy_helper.to_array(at["value"]))]
        elif op == "Identity":
            out = [x[0]]
        elif op in ("Add", "Sub", "Mul", "Div"):
            fn = {"Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
                  "Div": np.divide}[op]
            out = [fn(x[0], x[1])]
        elif op == "MatMul":
            out = [np.matmul(x[0], x[1])]
        elif op == "Gemm":
            out = [_gemm(*x, **at)]
        elif op == "Erf":
            out = [_erf(x[0]).astype(x[0].dtype)]
        elif op == "Tanh":
            out = [np.tanh(x[0])]
        elif op == "Softmax":
            out = [_softmax(x[0], at.get("axis", -1))]
        elif op == "LayerNormalization":
            out = [_layer_norm(*x, **at)]
        elif op == "Gather":
            out = [np.take(x[0], x[1], axis=at.get("axis", 0))]
        elif op == "Transpose":
            out = [np.transpose(x[0], at.get("perm"))]
        elif op == "Reshape":
            out = [x[0].reshape([int(d) for d in x[1]])]
        elif op == "Unsqueeze":
            out = [np.expand_dims(x[0], tuple(int(a) for a in x[1]))]
        elif op == "Concat":
            out = [np.concatenate(x, axis=at["axis"])]
        elif op == "Split":
            cuts = np.cumsum(x[1])[:-1]
            out = np.split(x[0], cuts, axis=at.get("axis", 0))
        elif op == "Slice":
            out = [_slice(*x)]
        elif op == "Equal":
            out = [np.equal(x[0], x[1])]
        elif op == "Cast":
            out = [_cast(x[0], at["to"], fdtype)]
        elif op == "Where":
            out = [np.where(x[0], x[1], x[2])]
        else:
            raise NotImplementedError("np_eval: unsupported op %s" % op)
        for name, v in zip(n.output, out):
            env[name] = v
    return env, [o.name for o in g.output]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("dir", help="directory written by export.py")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    p.add_argument("--dump", action="append", default=[],
                   help="print this intermediate value (repeatable)")
    a = p.parse_args()

    feeds = dict(np.load(os.path.join(a.dir, "inputs.npz")))
    expected = dict(np.load(os.path.join(a.dir, "expected.npz")))
    env, outputs = run(os.path.join(a.dir, "model.onnx"), feeds, np.dtype(a.dtype))
    for name in a.dump:
        print(name, env[name].dtype, env[name].shape)
        print(env[name])
    worst = 0.0
    for name in outputs:
        got, ref = env[name].astype(np.float64), expected[name].astype(np.float64)
        assert got.shape == ref.shape, (name, got.shape, ref.shape)
        # Error relative to the output's scale: elementwise relative error is
        # meaningless where a logit happens to cross zero.
        rel = np.abs(got - ref).max() / max(np.abs(ref).max(), 1e-30)
        worst = max(worst, rel)
        print("%s: shape %s max|ref| %.4g max abs err %.3g rel err %.3g"
              % (name, list(ref.shape), np.abs(ref).max(), np.abs(got - ref).max(), rel))
    raise SystemExit(0 if worst <= 1e-5 else 1)


if __name__ == "__main__":
    main()
