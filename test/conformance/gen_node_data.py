#!/usr/bin/env python3
"""Write the ONNX node tests of the installed onnx package (the pinned venv's)
in the layout of ONNX's test data, for tcc-conformance:

    .venv/bin/python test/conformance/gen_node_data.py OUT_DIR

OUT_DIR/test_NAME/{model.onnx, test_data_set_N/{input,output}_K.pb}. The
wheel ships the generators (onnx.backend.test.case.node), not the data.
Idempotent: a stamp with the onnx version skips a second run.
"""
import os
import shutil
import sys
import warnings

import onnx
from onnx import numpy_helper
from onnx.backend.test.case import node


def proto(value, vi):
    if isinstance(value, onnx.TensorProto):
        return value
    t = vi.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(value, vi.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(value, vi.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(value, vi.name)
    return numpy_helper.from_array(value, vi.name)


def main():
    out = sys.argv[1]
    stamp = os.path.join(out, ".onnx-version")
    if os.path.exists(stamp) and open(stamp).read() == onnx.__version__:
        return
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    for case in cases:
        d = os.path.join(out, case.name)
        os.makedirs(d)
        with open(os.path.join(d, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(d, "test_data_set_%d" % i)
            os.makedirs(ds)
            for kind, values, infos in (("input", inputs, case.model.graph.input),
                                        ("output", outputs, case.model.graph.output)):
                for j, v in enumerate(values):
                    with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                        f.write(proto(v, infos[j]).SerializeToString())
    with open(stamp, "w") as f:
        f.write(onnx.__version__)
    print("gen_node_data: %d node tests of onnx %s in %s" % (len(cases), onnx.__version__, out))


if __name__ == "__main__":
    main()
