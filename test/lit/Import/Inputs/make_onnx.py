#!/usr/bin/python3
"""Build the tiny ONNX models the Import lit tests feed to `tcc import`.

    %python %S/Inputs/make_onnx.py CASE OUT.onnx

Each case is a function below returning a ModelProto (or, for the broken-file
cases, writing OUT itself). Models are built with onnx.helper at opset 17
unless the case is about the opset, and are not run through the checker here:
some are invalid on purpose.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return helper.make_node("Constant", [], [name], name=name,
                            value=numpy_helper.from_array(np.asarray(array)))


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(nodes, inputs, outputs, inits=(), opset=17):
    # Constants first, so cases can list them wherever they read best.
    nodes = ([x for x in nodes if x.op_type == "Constant"] +
             [x for x in nodes if x.op_type != "Constant"])
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                             producer_name="make_onnx")


def rand(*shape):
    return np.random.RandomState(0).randn(*shape).astype(np.float32)


# ------------------------------------------------------------------ elementwise

def elementwise():
    n = helper.make_node
    nodes = [
        n("Add", ["x", "b"], ["add"], name="add"),          # [2,3] + [3]
        n("Mul", ["add", "s"], ["mul"], name="mul"),        # * scalar
        n("Sub", ["mul", "x"], ["sub"], name="sub"),
        n("Div", ["sub", "s"], ["div"], name="div"),
        n("Pow", ["div", "two"], ["pow"], name="pow"),
        n("Sqrt", ["pow"], ["sqrt"], name="sqrt"),
        n("Reciprocal", ["sqrt"], ["rec"], name="rec"),
        n("Tanh", ["rec"], ["tanh"], name="tanh"),
        n("Max", ["tanh", "x", "b"], ["max"], name="max"),  # variadic
        n("Less", ["max", "b"], ["lt"], name="lt"),
        n("Not", ["lt"], ["not"], name="not"),
        n("Where", ["not", "max", "x"], ["where"], name="where"),
        n("Cast", ["y"], ["yf"], name="cast", to=F),
        n("Add", ["where", "yf"], ["out"], name="add_out"),
    ]
    return model(nodes + [const("s", np.float32(2.0)), const("two", np.int64(2))],
                 [vi("x", F, [2, 3]), vi("y", I64, [2, 3])],
                 [vi("out", F, [2, 3])],
                 [init("b", rand(3))])


# ------------------------------------------------------------------ contractions

def gemm():
    node = helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="gemm",
                            alpha=0.5, beta=2.0, transB=1)
    return model([node], [vi("a", F, [4, 3])], [vi("y", F, [4, 5])],
                 [init("w", rand(5, 3)), init("c", rand(5))])


def matmul_1d():
    n = helper.make_node
    nodes = [n("MatMul", ["v", "w"], ["vw"], name="vec_mat"),      # [3] @ [3,5]
             n("MatMul", ["m", "v"], ["mv"], name="mat_vec"),      # [2,4,3] @ [3]
             n("MatMul", ["v", "v"], ["vv"], name="dot")]          # [3] @ [3]
    return model(nodes, [vi("v", F, [3]), vi("m", F, [2, 4, 3])],
                 [vi("vw", F, [5]), vi("mv", F, [2, 4]), vi("vv", F, [])],
                 [init("w", rand(3, 5))])


def constant_matmul():
    """A MatMul of two Constant nodes worth 2^30 FLOPs (1024x512 @ 512x1024),
    more than the import-time folder spends on a node (2^28): it stays a
    matmul; the small one beside it (2 x 4 x 8 x 8 FLOPs) folds."""
    r = np.random.RandomState(2)
    n = helper.make_node
    nodes = [const("a", r.randn(1024, 512).astype(np.float32)),
             const("b", r.randn(512, 1024).astype(np.float32)),
             const("c", r.randn(4, 8).astype(np.float32)),
             const("d", r.randn(8, 8).astype(np.float32)),
             n("MatMul", ["a", "b"], ["ab"], name="big"),
             n("MatMul", ["c", "d"], ["cd"], name="small"),
             n("Add", ["ab", "x"], ["y"], name="add_x"),
             n("Add", ["cd", "z"], ["w"], name="add_z")]
    return model(nodes, [vi("x", F, [1024, 1024]), vi("z", F, [4, 8])],
                 [vi("y", F, [1024, 1024]), vi("w", F, [4, 8])])


def matmul_transpose():
    """PyTorch's nn.Linear at opset 17 on 3-D input: MatMul(x, Transpose(W))."""
    n = helper.make_node
    nodes = [n("Transpose", ["w"], ["wt"], name="t", perm=[1, 0]),
             n("MatMul", ["x", "wt"], ["y"], name="mm")]
    return model(nodes, [vi("x", F, [2, 3, 4])], [vi("y", F, [2, 3, 5])],
                 [init("w", rand(5, 4))])


# ------------------------------------------------------------------ shapes

def reshape():
    n = helper.make_node
    nodes = [n("Reshape", ["x", "s1"], ["r1"], name="copy_and_infer"),  # [0,-1]
             n("Reshape", ["r1", "s2"], ["r2"], name="infer_first"),    # [-1,3,4]
             n("Flatten", ["r2"], ["f"], name="flat", axis=2)]
    return model(nodes + [const("s1", np.array([0, -1])),
                          const("s2", np.array([-1, 3, 4]))],
                 [vi("x", F, [2, 3, 4])], [vi("f", F, [6, 4])])


def reshape_allowzero():
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="r", allowzero=1)
    return model([node, const("s", np.array([0, 4]))], [vi("x", F, [0, 2, 2])],
                 [vi("y", F, [0, 4])])


def slice_negative():
    n = helper.make_node
    big = np.iinfo(np.int64).max
    nodes = [n("Slice", ["x", "st1", "en1", "ax1", "sp1"], ["rev"], name="reverse"),
             n("Slice", ["rev", "st2", "en2"], ["tail"], name="clamped")]
    return model(nodes + [const("st1", [-1]), const("en1", [-big]),
                          const("ax1", [-1]), const("sp1", [-2]),
                          const("st2", [1, -4]), const("en2", [big, 100])],
                 [vi("x", F, [4, 6])], [vi("tail", F, [3, 3])])


def shape_fold():
    """The shape sub-graph PyTorch emits for x.view(B, T, nh, hd) and for
    x.expand(...) / ones(T, T).tril-style masks, all to be folded away."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["shape"], name="shape"),
        n("Gather", ["shape", "i0"], ["B"], name="get_b", axis=0),
        n("Gather", ["shape", "i1"], ["T"], name="get_t", axis=0),
        n("Unsqueeze", ["B", "ax0"], ["B1"], name="unsq_b"),
        n("Unsqueeze", ["T", "ax0"], ["T1"], name="unsq_t"),
        n("Div", ["C", "nh"], ["hd"], name="head_dim"),
        n("Unsqueeze", ["hd", "ax0"], ["hd1"], name="unsq_hd"),
        n("Concat", ["B1", "T1", "nh1", "hd1"], ["newshape"], name="concat", axis=0),
        n("Reshape", ["x", "newshape"], ["heads"], name="view"),
        # Range + ConstantOfShape + Equal/Where on shapes + Expand.
        n("Range", ["zero", "T", "one"], ["pos"], name="arange"),
        n("ConstantOfShape", ["len1"], ["ones"], name="ones",
          value=numpy_helper.from_array(np.array([1], dtype=np.int64))),
        n("Mul", ["ones", "minus1"], ["neg"], name="neg"),
        n("Equal", ["neg", "minus1"], ["is_neg"], name="eq"),
        n("Where", ["is_neg", "ones", "neg"], ["expshape"], name="where"),
        n("Concat", ["B1", "expshape"], ["full"], name="concat2", axis=0),
        n("Cast", ["pos"], ["posf"], name="cast", to=F),
        n("Expand", ["posf", "full"], ["grid"], name="expand"),
        n("Unsqueeze", ["grid", "ax23"], ["grid4"], name="unsq_grid"),
        n("Add", ["heads", "grid4"], ["y"], name="add"),
    ]
    consts = [const("i0", np.int64(0)), const("i1", np.int64(1)),
              const("ax0", [0]), const("ax23", [2, 3]), const("C", np.int64(32)),
              const("nh", np.int64(2)), const("nh1", [2]), const("zero", np.int64(0)),
              const("one", np.int64(1)), const("minus1", np.int64(-1)),
              const("len1", [1])]
    return model(consts + nodes, [vi("x", F, [2, 8, 32])],
                 [vi("y", F, [2, 8, 2, 16])])


def ops_misc():
    """Squeeze/Unsqueeze/Split/Concat/Transpose/Expand/Gather/reductions/
    softmax/layer norm in one graph."""
    n = helper.make_node
    nodes = [
        n("Split", ["x"], ["a", "b"], name="split", axis=1),                # [2,8,4] -> 2x[2,4,4]
        n("Concat", ["b", "a"], ["ba"], name="concat", axis=-2),
        n("Transpose", ["ba"], ["t"], name="transpose", perm=[0, 2, 1]),
        n("Unsqueeze", ["t", "ax1"], ["u"], name="unsq"),                    # [2,1,4,8]
        n("Squeeze", ["u", "ax1"], ["sq"], name="sq"),
        n("ReduceSum", ["sq", "ax1"], ["sum"], name="rsum", keepdims=1),     # [2,1,8]
        n("ReduceMean", ["sq"], ["mean"], name="rmean", axes=[-1], keepdims=0),  # [2,4]
        n("ReduceMax", ["sq"], ["max"], name="rmax", axes=[0, 2]),           # [1,4,1]
        n("Expand", ["sum", "eshape"], ["e"], name="expand"),                # [2,4,8]
        n("Gather", ["e", "idx"], ["g"], name="gather", axis=2),             # [2,4,3]
        n("Softmax", ["g"], ["sm"], name="softmax", axis=1),
        n("LogSoftmax", ["sm"], ["lsm"], name="log_softmax"),
        n("LayerNormalization", ["lsm", "gamma", "beta"], ["ln"], name="ln",
          axis=-1, epsilon=1e-5),
    ]
    return model(nodes + [const("ax1", [1]), const("eshape", [1, 4, 1]),
                          const("idx", [0, -1, 2])],
                 [vi("x", F, [2, 8, 4])], [vi("ln", F, [2, 4, 3]), vi("mean", F, [2, 4]),
                                          vi("max", F, [1, 4, 1])],
                 [init("gamma", rand(3)), init("beta", rand(3))])


def dropout():
    n = helper.make_node
    nodes = [n("Dropout", ["x", "ratio", "train"], ["y", "mask"], name="drop_train", seed=7),
             n("Dropout", ["y", "ratio"], ["z"], name="drop_eval")]
    return model(nodes + [const("ratio", np.float32(0.25)), const("train", np.bool_(True))],
                 [vi("x", F, [2, 3])], [vi("z", F, [2, 3]), vi("mask", BOOL, [2, 3])])


# ------------------------------------------------------------------ GELU

def _gelu_exact_nodes(x, out, p):
    n = helper.make_node
    return [n("Div", [x, p + "sqrt2"], [p + "d"]), n("Erf", [p + "d"], [p + "e"]),
            n("Add", [p + "e", p + "one"], [p + "a"]), n("Mul", [x, p + "a"], [p + "m"]),
            n("Mul", [p + "m", p + "half"], [out]),
            const(p + "sqrt2", np.float32(np.sqrt(2))), const(p + "one", np.float32(1)),
            const(p + "half", np.float32(0.5))]


def _gelu_tanh_nodes(x, out, p, use_pow):
    n = helper.make_node
    cube = ([n("Pow", [x, p + "three"], [p + "x3"]), const(p + "three", np.float32(3))]
            if use_pow else
            [n("Mul", [x, x], [p + "x2"]), n("Mul", [x, p + "x2"], [p + "x3"])])
    return cube + [
        n("Mul", [p + "c", p + "x3"], [p + "cx3"]), n("Add", [x, p + "cx3"], [p + "in"]),
        n("Mul", [p + "k", p + "in"], [p + "arg"]), n("Tanh", [p + "arg"], [p + "t"]),
        n("Add", [p + "one", p + "t"], [p + "a"]), n("Mul", [x, p + "a"], [p + "m"]),
        n("Mul", [p + "half", p + "m"], [out]),
        const(p + "c", np.float32(0.044715)), const(p + "k", np.float32(np.sqrt(2 / np.pi))),
        const(p + "one", np.float32(1)), const(p + "half", np.float32(0.5))]


def gelu():
    nodes = (_gelu_exact_nodes("x", "g1", "e_") + _gelu_tanh_nodes("g1", "g2", "t_", True)
             + _gelu_tanh_nodes("g2", "g3", "m_", False)
             # Not a GELU: the Erf argument is scaled by 0.5, not 1/sqrt(2).
             + [helper.make_node("Mul", ["g3", "half"], ["h"]),
                helper.make_node("Erf", ["h"], ["e"]),
                helper.make_node("Add", ["e", "one"], ["a"]),
                helper.make_node("Mul", ["g3", "a"], ["m"]),
                helper.make_node("Mul", ["m", "half"], ["y"]),
                const("half", np.float32(0.5)), const("one", np.float32(1))])
    return model(nodes, [vi("x", F, [2, 4])], [vi("y", F, [2, 4])])


# ------------------------------------------------------------------ initializers

def initializers():
    """w (used in MatMul) and bias (Add) are trainable; mask_values (float,
    read only by Equal) and the int shape are data; `emb` is gathered and,
    through the anonymous transposed copy PyTorch's constant folding makes,
    also used as the output projection: both must be one parameter."""
    n = helper.make_node
    emb = rand(6, 4)
    nodes = [
        n("Gather", ["emb", "ids"], ["h"], name="embed"),
        n("MatMul", ["h", "w"], ["hw"], name="proj"),
        n("Add", ["hw", "bias"], ["hb"], name="add_bias"),
        n("Equal", ["mask_values", "zero"], ["masked"], name="eq"),
        n("Where", ["masked", "ninf", "hb"], ["hm"], name="mask"),
        n("Reshape", ["hm", "shape"], ["flat"], name="reshape"),
        n("MatMul", ["flat", "onnx::MatMul_9"], ["logits"], name="lm_head"),
    ]
    return model(nodes + [const("zero", np.float32(0)), const("ninf", np.float32(-np.inf))],
                 [vi("ids", I64, [2, 3])], [vi("logits", F, [6, 6])],
                 [init("emb", emb), init("w", rand(4, 4)), init("bias", np.zeros(4, np.float32)),
                  init("mask_values", np.array([1, 1, 0, 1], np.float32)),
                  init("shape", np.array([6, 4])),
                  init("onnx::MatMul_9", emb.T.copy())])


def large_constant():
    """`mask` (128 KiB, read only by Equal) is data, but too large to fold:
    it stays a constant (a dense resource, like the parameter `w`)."""
    n = helper.make_node
    mask = (np.random.RandomState(1).rand(128, 256) > 0.5).astype(np.float32)
    nodes = [
        n("Equal", ["mask", "zero"], ["masked"], name="eq"),
        n("Where", ["masked", "zero", "x"], ["kept"], name="keep"),
        n("Add", ["kept", "w"], ["y"], name="add_w"),
    ]
    return model(nodes + [const("zero", np.float32(0))],
                 [vi("x", F, [128, 256])], [vi("y", F, [128, 256])],
                 [init("mask", mask), init("w", rand(256))])


# ------------------------------------------------------------------ errors

def unsupported_op():
    node = helper.make_node("Hardmax", ["x"], ["y"], name="Foo_12")
    return model([node], [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])


def several_unsupported():
    """Three ops tcc does not import, among supported ones."""
    nodes = [helper.make_node("Hardmax", ["x"], ["a"], name="/h.0/Hardmax"),
             helper.make_node("Relu", ["a"], ["b"], name="/h.0/Relu"),
             helper.make_node("Det", ["b"], ["c"], name="/h.1/Det"),
             helper.make_node("Hardmax", ["c"], ["y"])]
    return model(nodes, [vi("x", F, [3, 3])], [vi("y", F, [])])


def mod_fmod():
    """An attribute value tcc does not implement."""
    node = helper.make_node("Mod", ["x", "y"], ["z"], name="rem", fmod=1)
    return model([node], [vi("x", F, [2]), vi("y", F, [2])], [vi("z", F, [2])])


def layernorm_axis_below_rank():
    """axis < -rank: ONNX's own shape inference indexed before the first dim."""
    node = helper.make_node("LayerNormalization", ["x", "w"], ["y", "mean"],
                            name="ln", axis=-5)
    return model([node], [vi("x", F, [2, 3, 4, 5]), vi("w", F, [5])],
                 [vi("y", F, [2, 3, 4, 5]), vi("mean", F, [2, 3, 4, 5])])


def einsum_stray_dash():
    """'-' without '>': ONNX's Einsum inference looped forever on it."""
    node = helper.make_node("Einsum", ["x"], ["y"], name="es", equation="ij-")
    return model([node], [vi("x", F, [3, 4])], [vi("y", F, [3])])


def einsum_opset12_bad_label():
    """A label that is not a letter at opset 12: ONNX's version converter ran
    the looping inference with ONNX's own schemas (found by fuzz_import)."""
    node = helper.make_node("Einsum", ["x"], ["y"], name="es", equation="i~->i")
    return model([node], [vi("x", F, [3, 4])], [vi("y", F, [3])], opset=12)


def einsum_two_ellipses():
    """'...' twice in one term: the same loop, at the second."""
    node = helper.make_node("Einsum", ["x"], ["y"], name="es", equation="...i...->i")
    return model([node], [vi("x", F, [2, 3, 4])], [vi("y", F, [3])])


def attention_2d():
    """Opset 23's Attention takes 3-D or 4-D q, k, v only."""
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn")
    return model([node], [vi(n, F, [4, 8]) for n in "qkv"], [vi("y", F, [4, 8])],
                 opset=23)


def unnamed_custom_op():
    node = helper.make_node("FusedGelu", ["x"], ["y"], domain="com.microsoft")
    m = model([helper.make_node("Relu", ["x"], ["r"]), node],
              [vi("x", F, [2, 3])], [vi("y", F, [2, 3])])
    m.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return m


def f16_input():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    return model([node], [vi("x", TensorProto.FLOAT16, [2])],
                 [vi("y", TensorProto.FLOAT16, [2])])


def f16_cast():
    node = helper.make_node("Cast", ["x"], ["y"], name="to_half", to=TensorProto.FLOAT16)
    return model([node], [vi("x", F, [2])], [vi("y", TensorProto.FLOAT16, [2])])


def dynamic_input():
    node = helper.make_node("Relu", ["input_ids"], ["y"], name="relu")
    return model([node], [vi("input_ids", F, ["batch", 128])], [vi("y", F, ["batch", 128])])


def dynamic_reshape():
    """The target shape is a graph input: nothing can fold it."""
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="view")
    return model([node], [vi("x", F, [2, 6]), vi("s", I64, [2])], [vi("y", F, [3, 4])])


def opset11():
    """Squeeze's axes and Split's sizes are attributes before opset 13."""
    nodes = [helper.make_node("Squeeze", ["x"], ["s"], name="squeeze", axes=[1]),
             helper.make_node("Split", ["s"], ["a", "b"], name="split", axis=1,
                              split=[1, 2]),
             helper.make_node("Softmax", ["b"], ["y"], name="softmax", axis=0)]
    return model(nodes, [vi("x", F, [4, 1, 3])],
                 [vi("a", F, [4, 1]), vi("y", F, [4, 2])], opset=11)


def opset_future():
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    return model([node], [vi("x", F, [2])], [vi("y", F, [2])], opset=29)


def opset20_forms():
    """What changed after opset 17 for ops tcc imports: Gelu (20), ReduceMean's
    axes as an input and Split's num_outputs with a smaller last piece (18)."""
    nodes = [helper.make_node("Gelu", ["x"], ["g"], name="gelu"),
             helper.make_node("Gelu", ["g"], ["t"], name="gelu_tanh", approximate="tanh"),
             const("axes", np.array([1], dtype=np.int64)),
             helper.make_node("ReduceMean", ["t", "axes"], ["m"], name="mean"),
             helper.make_node("Split", ["x"], ["a", "b", "c"], name="split", axis=1,
                              num_outputs=3)]
    return model(nodes, [vi("x", F, [2, 7])],
                 [vi("m", F, [2, 1]), vi("a", F, [2, 3]), vi("b", F, [2, 3]),
                  vi("c", F, [2, 1])], opset=20)


def gelu_bad_approx():
    node = helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="sigmoid")
    return model([node], [vi("x", F, [2])], [vi("y", F, [2])], opset=20)


def sequences():
    """torch.split as the dynamo exporter writes it without its optimizer."""
    nodes = [const("two", np.array(2, dtype=np.int64)),
             const("last", np.array(-1, dtype=np.int64)),
             const("zero", np.array(0, dtype=np.int64)),
             helper.make_node("SplitToSequence", ["x", "two"], ["seq"], name="split"),
             helper.make_node("SequenceAt", ["seq", "last"], ["tail"], name="at_last"),
             helper.make_node("SequenceLength", ["seq"], ["n"], name="length"),
             helper.make_node("SplitToSequence", ["x"], ["rows"], name="rows", keepdims=0),
             helper.make_node("SequenceAt", ["rows", "zero"], ["row0"], name="at_zero")]
    return model(nodes, [vi("x", F, [5, 3])],
                 [vi("tail", F, [1, 3]), vi("n", I64, []), vi("row0", F, [3])], opset=20)


def sequence_misuse():
    nodes = [helper.make_node("SplitToSequence", ["x"], ["seq"], name="split"),
             helper.make_node("Relu", ["seq"], ["y"], name="relu")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], opset=20)


def sequence_position():
    nodes = [const("five", np.array(5, dtype=np.int64)),
             helper.make_node("SplitToSequence", ["x"], ["seq"], name="split"),
             helper.make_node("SequenceAt", ["seq", "five"], ["y"], name="at")]
    return model(nodes, [vi("x", F, [2, 3])], [vi("y", F, [1, 3])], opset=20)


def const_only():
    """Index arithmetic evaluated at import time (constants in, constant out):
    CumSum of [1..6] as 2x3 along axis 1, exclusive and reversed;
    GatherElements picking [[3, 1], [6, 4]]; GatherND with batch_dims=1."""
    a = np.arange(1, 7, dtype=np.int64).reshape(2, 3)
    nodes = [const("a", a), const("ax", np.array(1, dtype=np.int64)),
             const("ge_idx", np.array([[2, 0], [2, 0]], dtype=np.int64)),
             const("nd_idx", np.array([[1], [0]], dtype=np.int64)),
             helper.make_node("CumSum", ["a", "ax"], ["cs"], name="cs"),
             helper.make_node("CumSum", ["a", "ax"], ["cs_ex_rev"], name="cs_ex_rev",
                              exclusive=1, reverse=1),
             helper.make_node("GatherElements", ["a", "ge_idx"], ["ge"], name="ge", axis=1),
             helper.make_node("GatherND", ["a", "nd_idx"], ["nd"], name="nd", batch_dims=1),
             helper.make_node("IsNaN", ["x"], ["nan"], name="isnan")]
    return model(nodes, [vi("x", F, [3])],
                 [vi("cs", I64, [2, 3]), vi("cs_ex_rev", I64, [2, 3]), vi("ge", I64, [2, 2]),
                  vi("nd", I64, [2]), vi("nan", BOOL, [3])], opset=20)


def argmax_runtime():
    """ArgMax / ArgMin of a run-time float input along axis 1: first and
    last index of the extreme, NaN counting as the extreme (numpy's rule)."""
    nodes = [helper.make_node("ArgMax", ["x"], ["max_first"], name="max_first", axis=1,
                              keepdims=0),
             helper.make_node("ArgMax", ["x"], ["max_last"], name="max_last", axis=1,
                              keepdims=0, select_last_index=1),
             helper.make_node("ArgMin", ["x"], ["min_first"], name="min_first", axis=-1,
                              keepdims=1)]
    return model(nodes, [vi("x", F, [2, 4])],
                 [vi("max_first", I64, [2]), vi("max_last", I64, [2]),
                  vi("min_first", I64, [2, 1])], opset=20)


def scatter_runtime_indices():
    """ScatterND whose indices are a graph input (known at run time only)."""
    nodes = [helper.make_node("ScatterND", ["x", "idx", "u"], ["y"], name="scatter")]
    return model(nodes, [vi("x", F, [4, 3]), vi("idx", I64, [2, 1]), vi("u", F, [2, 3])],
                 [vi("y", F, [4, 3])], opset=20)


def reduce_prod_runtime():
    nodes = [helper.make_node("ReduceProd", ["x"], ["y"], name="prod", keepdims=0)]
    return model(nodes, [vi("x", F, [3])], [vi("y", F, [])], opset=20)


def _external(path, location, offset=0, length=None, write=True):
    """y = x + w, with w in an external data file (as the dynamo exporter
    writes initializers); also writes the inputs and PyTorch-free expected
    outputs (numpy) next to OUT for tcc eval."""
    import os
    w = rand(2, 3)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = numpy_helper.from_array(w, "w")
    t.ClearField("raw_data")
    t.data_location = TensorProto.EXTERNAL
    entries = {"location": location, "offset": str(offset),
               "length": str(w.nbytes if length is None else length)}
    for k, v in entries.items():
        e = t.external_data.add()
        e.key, e.value = k, v
    folder = os.path.dirname(os.path.abspath(path))
    if write:
        with open(os.path.join(folder, "weights.bin"), "wb") as f:
            f.write(b"\0" * offset + w.tobytes())
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"], name="add")],
                              "g", [vi("x", F, [2, 3])], [vi("y", F, [2, 3])], [t])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    np.savez(path + ".inputs.npz", x=x)
    np.savez(path + ".expected.npz", y=x + w)


def external_ok(path):
    _external(path, "weights.bin", offset=16)


def external_missing(path):
    _external(path, "absent.bin", write=False)


def external_past_end(path):
    _external(path, "weights.bin", length=4096)


def external_absolute(path):
    _external(path, "/etc/passwd")


def external_parent(path):
    _external(path, "../weights.bin")


def dropout6_training():
    """Dropout-6 in training mode (is_test=0): no adapter upgrades it."""
    node = helper.make_node("Dropout", ["x"], ["y"], name="drop", is_test=0)
    return model([node], [vi("x", F, [2])], [vi("y", F, [2])], opset=6)


def reshape1_shape_attr():
    """Reshape-1's shape attribute: ONNX 1.12's converter turns it into a
    Constant whose dims do not match its values, which tcc then reports."""
    node = helper.make_node("Reshape", ["x"], ["y"], name="view", shape=[3, 2])
    return model([node], [vi("x", F, [2, 3])], [vi("y", F, [3, 2])], opset=1)


def bad_model():
    """Refers to a value nothing defines: ONNX's checker rejects it."""
    node = helper.make_node("Add", ["x", "nowhere"], ["y"], name="add")
    return model([node], [vi("x", F, [2])], [vi("y", F, [2])])


def mask_buffer():
    """nanoGPT's causal mask: a float buffer tril(ones(4, 4)) of shape
    [1, 1, 4, 4], sliced to T=3, compared with 0 and used by Where (its
    masked_fill); x is the attention scores [1, 1, 3, 3]."""
    bias = np.tril(np.ones((4, 4), np.float32)).reshape(1, 1, 4, 4)
    nodes = [const("starts", np.array([0, 0], np.int64)),
             const("ends", np.array([3, 3], np.int64)),
             const("axes", np.array([2, 3], np.int64)),
             const("zero", np.array(0.0, np.float32)),
             const("ninf", np.array(-np.inf, np.float32)),
             helper.make_node("Slice", ["attn.bias", "starts", "ends", "axes"],
                              ["/attn/Slice_output_0"], name="/attn/Slice"),
             helper.make_node("Equal", ["/attn/Slice_output_0", "zero"],
                              ["/attn/Equal_output_0"], name="/attn/Equal"),
             helper.make_node("Where", ["/attn/Equal_output_0", "ninf", "x"],
                              ["y"], name="/attn/Where")]
    return model(nodes, [vi("x", F, [1, 1, 3, 3])], [vi("y", F, [1, 1, 3, 3])],
                 [init("attn.bias", bias)])


def weighted_sce():
    """Class-weighted SoftmaxCrossEntropyLoss: the weights initializer is a
    constant (PyTorch gives it no gradient), the loss the picked form."""
    node = helper.make_node("SoftmaxCrossEntropyLoss", ["x", "y", "w"], ["loss"],
                            name="sce", ignore_index=2)
    return model([node], [vi("x", F, [3, 4]), vi("y", I64, [3])], [vi("loss", F, [])],
                 [init("w", np.array([1.0, 2.0, 0.5, 4.0], np.float32))])


def tril_mask():
    """A causal mask built in forward, torch.tril(torch.ones(3, 3,
    dtype=torch.bool)): a Trilu of a constant, which folds, then a Trilu of
    the computed scores x (upper, k=1), which becomes a where."""
    nodes = [const("ones", np.ones((3, 3), np.bool_)),
             const("one", np.array(1, np.int64)),
             const("ninf", np.array(-np.inf, np.float32)),
             helper.make_node("Trilu", ["ones"], ["/Trilu_output_0"],
                              name="/Trilu", upper=0),
             helper.make_node("Where", ["/Trilu_output_0", "x", "ninf"],
                              ["/Where_output_0"], name="/Where"),
             helper.make_node("Trilu", ["/Where_output_0", "one"], ["y"],
                              name="/Trilu_1", upper=1)]
    return model(nodes, [vi("x", F, [2, 3, 3])], [vi("y", F, [2, 3, 3])])


def fold_all():
    """Ops on no hand-written fold list, all of constants (Constant nodes,
    not initializers, which could be parameters): MatMul, Softmax, Erf,
    LayerNormalization, Trilu, ReduceMean and Exp fold, through the
    interpreter, to one constant c; y = x + c keeps x's add."""
    r = np.random.RandomState(1)
    n = helper.make_node
    nodes = [const("a", r.randn(4, 4).astype(np.float32)),
             const("w", r.randn(4, 4).astype(np.float32)),
             const("scale", r.randn(4).astype(np.float32)),
             const("bias", r.randn(4).astype(np.float32)),
             n("MatMul", ["a", "w"], ["mm"], name="mm"),
             n("Softmax", ["mm"], ["sm"], name="sm", axis=-1),
             n("Erf", ["sm"], ["erf"], name="erf"),
             n("LayerNormalization", ["erf", "scale", "bias"], ["ln"], name="ln",
               axis=-1, epsilon=1e-5),
             n("Trilu", ["ln"], ["tril"], name="tril", upper=0),
             n("ReduceMean", ["tril"], ["mean"], name="mean", axes=[0],
               keepdims=1),
             n("Exp", ["mean"], ["c"], name="exp"),
             n("Add", ["x", "c"], ["y"], name="add")]
    return model(nodes, [vi("x", F, [3, 4])], [vi("y", F, [3, 4])])


def eval_mode_copies():
    """torch.onnx.export in eval mode merges initializers of equal value:
    the second LayerNorm's fresh weight and bias are Identity copies of the
    first's. A tied weight (w read by both MatMuls) is never an Identity."""
    nodes = [helper.make_node("Identity", ["ln1.weight"], ["ln2.weight"],
                              name="Identity_0"),
             helper.make_node("Identity", ["ln1.bias"], ["ln2.bias"],
                              name="Identity_1"),
             helper.make_node("LayerNormalization", ["x", "ln1.weight", "ln1.bias"],
                              ["/ln1/out"], name="/ln1/LayerNormalization", axis=-1),
             helper.make_node("MatMul", ["/ln1/out", "w"], ["/mm1"], name="/mm1/MatMul"),
             helper.make_node("LayerNormalization", ["/mm1", "ln2.weight", "ln2.bias"],
                              ["/ln2/out"], name="/ln2/LayerNormalization", axis=-1),
             helper.make_node("MatMul", ["/ln2/out", "w"], ["y"], name="/mm2/MatMul")]
    return model(nodes, [vi("x", F, [2, 4])], [vi("y", F, [2, 4])],
                 [init("ln1.weight", np.ones(4, np.float32)),
                  init("ln1.bias", np.zeros(4, np.float32)),
                  init("w", np.arange(16, dtype=np.float32).reshape(4, 4) / 16)])


def _short_int64(name):
    """An int64 tensor of dims [1] whose raw_data holds 1 byte, not 8."""
    t = numpy_helper.from_array(np.asarray([0], np.int64), name)
    t.raw_data = b"\x00"
    return t


def short_raw_constant():
    """A Constant whose raw_data is shorter than its dims, as Unsqueeze's
    axes: ONNX's shape inference would read past its end."""
    n = helper.make_node
    nodes = [n("Constant", [], ["axes"], name="axes", value=_short_int64("axes")),
             n("Unsqueeze", ["x", "axes"], ["y"], name="unsq")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [1, 2])])


def short_raw_initializer():
    """The same as an initializer, as Reshape's shape."""
    n = helper.make_node
    nodes = [n("Reshape", ["x", "shape"], ["y"], name="view")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [2])],
                 [_short_int64("shape")])


def short_typed_reducesum():
    """int64_data with 2 values for dims [3], as ReduceSum's axes."""
    t = helper.make_tensor("axes", I64, [2], [0, 0])
    t.dims[0] = 3
    nodes = [helper.make_node("ReduceSum", ["x", "axes"], ["y"], name="sum")]
    return model(nodes, [vi("x", F, [2])], [vi("y", F, [1])], [t])


def no_nodes():
    """The output is the input: nothing to compute."""
    return model([], [vi("x", F, [2])], [vi("x", F, [2])])


def no_outputs():
    n = helper.make_node
    return model([n("Relu", ["x"], ["y"], name="relu")], [vi("x", F, [2])], [])


def huge_input():
    """A [2^40, 64] f32 input: its plan needs an arena of 256 TiB."""
    n = helper.make_node
    nodes = [n("Relu", ["x"], ["r"], name="relu"),
             n("Mul", ["r", "r"], ["y"], name="sq")]
    return model(nodes, [vi("x", F, [1 << 40, 64])], [vi("y", F, [1 << 40, 64])])


# ------------------------------------------------------------------ vision

def vision():
    """Conv (2-D with SAME_UPPER padding, 1-D grouped), BatchNormalization in
    training mode, MaxPool with ceil_mode, AveragePool, GlobalAveragePool."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w", "b"], ["c"], name="conv", auto_pad="SAME_UPPER",
          strides=[2, 2], kernel_shape=[3, 3]),
        n("BatchNormalization", ["c", "g", "beta", "rm", "rv"], ["bn", "rm_out", "rv_out"],
          name="bn", training_mode=1, momentum=0.8),
        n("MaxPool", ["bn"], ["mp"], name="mp", kernel_shape=[2, 2], strides=[2, 2],
          ceil_mode=1),
        n("AveragePool", ["bn"], ["ap"], name="ap", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          count_include_pad=1),
        n("GlobalAveragePool", ["ap"], ["gap"], name="gap"),
        n("Conv", ["s", "w1"], ["c1"], name="conv1d", group=2, pads=[1, 0], dilations=[2]),
    ]
    inits = [init("w", rand(4, 3, 3, 3)), init("b", rand(4)), init("g", rand(4)),
             init("beta", rand(4)), init("rm", rand(4)), init("rv", np.ones(4, np.float32)),
             init("w1", rand(6, 2, 3))]
    return model(nodes, [vi("x", F, [2, 3, 9, 9]), vi("s", F, [1, 4, 10])],
                 [vi("mp", F, [2, 4, 3, 3]), vi("gap", F, [2, 4, 1, 1]), vi("rm_out", F, [4]),
                  vi("c1", F, [1, 6, 7])], inits)


def pad_modes():
    """Pad: constant (value 1.5) on both dims, reflect with a negative pad
    that crops, edge."""
    n = helper.make_node
    nodes = [const("p1", np.array([0, 1, 0, 2], np.int64)), const("v", np.float32(1.5)),
             const("p2", np.array([1, -1, 2, 0], np.int64)),
             const("p3", np.array([0, 2, 0, 0], np.int64)),
             n("Pad", ["x", "p1", "v"], ["c"], name="pc"),
             n("Pad", ["x", "p2"], ["r"], name="pr", mode="reflect"),
             n("Pad", ["x", "p3"], ["e"], name="pe", mode="edge")]
    return model(nodes, [vi("x", F, [3, 4])],
                 [vi("c", F, [3, 7]), vi("r", F, [6, 3]), vi("e", F, [3, 6])])


def conv3d():
    return model([helper.make_node("Conv", ["x", "w"], ["y"], name="c3")],
                 [vi("x", F, [1, 1, 4, 4, 4])], [vi("y", F, [1, 1, 3, 3, 3])],
                 [init("w", rand(1, 1, 2, 2, 2))])


def maxpool_indices():
    return model([helper.make_node("MaxPool", ["x"], ["y", "i"], name="mpi",
                                   kernel_shape=[2, 2])],
                 [vi("x", F, [1, 1, 4, 4])], [vi("y", F, [1, 1, 3, 3]), vi("i", I64, [1, 1, 3, 3])])


def truncated(path):
    data = elementwise().SerializeToString()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])


def garbage(path):
    with open(path, "wb") as f:
        f.write(b"this is not a protobuf \xff\xff\xff\xff")


CASES = {name: fn for name, fn in globals().items()
         if callable(fn) and not name.startswith("_") and fn.__module__ == __name__
         and name not in ("vi", "const", "init", "model", "rand", "main")
         and not name.startswith("_")}
WRITERS = {"truncated", "garbage", "external_ok", "external_missing",
           "external_past_end", "external_absolute", "external_parent"}


def main():
    case, out = sys.argv[1], sys.argv[2]
    if case in WRITERS:
        CASES[case](out)
    else:
        onnx.save(CASES[case](), out)


if __name__ == "__main__":
    main()
