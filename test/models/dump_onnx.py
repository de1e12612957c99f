#!/usr/bin/python3
"""Print an ONNX model as a flat, readable listing.

    /usr/bin/python3 test/models/dump_onnx.py model.onnx [--values N]

Lists opset imports, graph inputs/outputs, initializers (shape, dtype) and the
nodes in file order with attributes. Small Constant values and small
initializers are printed inline (up to N elements, default 8) because the
importer has to fold exactly those into shapes and masks.
"""

import argparse

import numpy as np
import onnx
from onnx import helper, numpy_helper


def _type_str(vi):
    t = vi.type.tensor_type
    dims = [d.dim_value if d.HasField("dim_value") else d.dim_param for d in t.shape.dim]
    return "%s%s" % (onnx.TensorProto.DataType.Name(t.elem_type).lower(), dims)


def _tensor_str(t, max_values):
    a = numpy_helper.to_array(t)
    s = "%s%s" % (a.dtype, list(a.shape))
    if a.size <= max_values:
        s += " = " + np.array2string(a.reshape(-1) if a.ndim > 1 else a,
                                     separator=",", threshold=max_values)
    return s


def _attr_str(a, max_values):
    v = helper.get_attribute_value(a)
    if isinstance(v, onnx.TensorProto):
        return "%s=<%s>" % (a.name, _tensor_str(v, max_values))
    if isinstance(v, bytes):
        v = v.decode()
    return "%s=%s" % (a.name, v)


def dump(path, max_values=8):
    m = onnx.load(path)
    g = m.graph
    print("opset:", ", ".join("%s:%d" % (o.domain or "ai.onnx", o.version)
                              for o in m.opset_import))
    inits = {i.name: i for i in g.initializer}
    print("inputs:")
    for i in g.input:
        if i.name not in inits:
            print("  %s: %s" % (i.name, _type_str(i)))
    print("outputs:")
    for o in g.output:
        print("  %s: %s" % (o.name, _type_str(o)))
    print("initializers (%d):" % len(g.initializer))
    for t in g.initializer:
        print("  %s: %s" % (t.name, _tensor_str(t, max_values)))
    print("nodes (%d):" % len(g.node))
    for k, n in enumerate(g.node):
        attrs = " ".join(_attr_str(a, max_values) for a in n.attribute)
        print("  %3d %-20s %s -> %s %s" % (k, n.op_type, ", ".join(n.input),
                                         ", ".join(n.output), attrs))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("model")
    p.add_argument("--values", type=int, default=8,
                   help="print tensors with at most this many elements")
    a = p.parse_args()
    dump(a.model, a.values)


if __name__ == "__main__":
    main()
