"""ONNX models with one Resize each, for resize.test (opset 19).

    .venv/bin/python make_resize.py CASE OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT


def resize_model(x_shape, y_shape, inits=(), **attrs):
    """Y = Resize(X, roi, scales, sizes); `inits` are (input slot, array):
    Constant nodes (as the exporters write them; a float initializer would
    be a parameter), or None for a graph input of that slot."""
    names, graph_inputs, nodes = ["X", "", "", ""], [
        helper.make_tensor_value_info("X", F, x_shape)], []
    for slot, array in inits:
        name = ["", "roi", "scales", "sizes"][slot]
        names[slot] = name
        if array is None:
            graph_inputs.append(helper.make_tensor_value_info(name, F, [len(x_shape)]))
        else:
            nodes.append(helper.make_node("Constant", [], [name],
                                          value=numpy_helper.from_array(array, name)))
    while names[-1] == "":
        names.pop()
    nodes.append(helper.make_node("Resize", names, ["Y"], name="r", **attrs))
    graph = helper.make_graph(nodes, "g", graph_inputs,
                              [helper.make_tensor_value_info("Y", F, y_shape)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])


def sizes(*v):
    return 3, np.array(v, np.int64)


def scales(*v):
    return 2, np.array(v, np.float32)


CASES = {
    # align_corners, sizes: 2 -> 3 rows and 4 -> 6 columns.
    "linear": lambda: resize_model([1, 1, 2, 4], [1, 1, 3, 6], inits=[sizes(1, 1, 3, 6)],
                                   mode="linear",
                                   coordinate_transformation_mode="align_corners"),
    # nn.Upsample(scale_factor=2) as exported: asymmetric, floor.
    "nearest": lambda: resize_model([1, 1, 2, 2], [1, 1, 4, 4], inits=[scales(1, 1, 2, 2)],
                                    mode="nearest", coordinate_transformation_mode="asymmetric",
                                    nearest_mode="floor"),
    "cubic": lambda: resize_model([1, 1, 2, 2], [1, 1, 4, 4], inits=[scales(1, 1, 2, 2)],
                                  mode="cubic"),
    "crop": lambda: resize_model([1, 1, 4, 4], [1, 1, 3, 3],
                                 inits=[(1, np.array([0, 0, .4, .4, 1, 1, .6, .6], np.float32)),
                                        sizes(1, 1, 3, 3)],
                                 mode="linear",
                                 coordinate_transformation_mode="tf_crop_and_resize"),
    "antialias": lambda: resize_model([1, 1, 4, 4], [1, 1, 2, 2], inits=[scales(1, 1, .5, .5)],
                                      mode="linear", antialias=1),
    "runtime_scales": lambda: resize_model([1, 1, 2, 2], [1, 1, 4, 4], inits=[(2, None)],
                                           mode="nearest"),
}

if __name__ == "__main__":
    onnx.save(CASES[sys.argv[1]](), sys.argv[2])
