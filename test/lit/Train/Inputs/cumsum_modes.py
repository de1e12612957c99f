"""cumsum_modes.py OUT: ONNX models for test/lit/Train/cumsum.test.

OUT/modes.onnx runs CumSum on run-time inputs in all four modes
(exclusive x reverse), along a middle axis of a float tensor and the last
axis of an int64 one, and GatherElements of run-time data at run-time
indices; OUT/inputs.npz holds the inputs and OUT/expected.npz numpy's
results. OUT/long.onnx sums along 5000 elements, past what
tcc composes at run time.
"""
import sys, numpy as np, onnx, onnx.helper as h
out = sys.argv[1]
nodes, outs = [], []
X = h.make_tensor_value_info('x', onnx.TensorProto.FLOAT, [2, 5, 3])
M = h.make_tensor_value_info('m', onnx.TensorProto.INT64, [2, 5])
inits = [h.make_tensor('ax1', onnx.TensorProto.INT64, [], [1]), h.make_tensor('axm1', onnx.TensorProto.INT64, [], [-1])]
rng = np.random.default_rng(0)
x = rng.standard_normal((2, 5, 3)).astype(np.float32)
m = rng.integers(-3, 4, (2, 5)).astype(np.int64)
exp = {}
def cum(a, axis, excl, rev):
    b = np.flip(a, axis) if rev else a
    c = np.cumsum(b, axis=axis, dtype=np.float64 if a.dtype.kind == 'f' else np.int64)
    if excl:
        c = np.concatenate([np.zeros_like(np.take(c, [0], axis)), np.take(c, range(c.shape[axis] - 1), axis)], axis)
    c = np.flip(c, axis) if rev else c
    return c.astype(a.dtype)
for excl in (0, 1):
    for rev in (0, 1):
        nx, nm = f'x_{excl}{rev}', f'm_{excl}{rev}'
        nodes.append(h.make_node('CumSum', ['x', 'ax1'], [nx], exclusive=excl, reverse=rev))
        nodes.append(h.make_node('CumSum', ['m', 'axm1'], [nm], exclusive=excl, reverse=rev))
        outs += [h.make_tensor_value_info(nx, onnx.TensorProto.FLOAT, [2, 5, 3]), h.make_tensor_value_info(nm, onnx.TensorProto.INT64, [2, 5])]
        exp[nx], exp[nm] = cum(x, 1, excl, rev), cum(m, 1, excl, rev)
# GatherElements of run-time data at run-time indices: along the middle
# axis of x with indices from m (negative ones count from the end), and
# along the last axis of m with fewer rows than it has.
I = h.make_tensor_value_info('i', onnx.TensorProto.INT64, [2, 3, 3])
idx = rng.integers(-5, 5, (2, 3, 3)).astype(np.int64)
nodes.append(h.make_node('GatherElements', ['x', 'i'], ['ge_x'], axis=1))
nodes.append(h.make_node('Slice', ['m', 'sl_start', 'sl_end', 'sl_axes'], ['m1']))
nodes.append(h.make_node('Abs', ['m1'], ['m1a']))
nodes.append(h.make_node('GatherElements', ['m', 'm1a'], ['ge_m'], axis=1))
inits += [h.make_tensor('sl_start', onnx.TensorProto.INT64, [2], [0, 0]),
          h.make_tensor('sl_end', onnx.TensorProto.INT64, [2], [1, 3]),
          h.make_tensor('sl_axes', onnx.TensorProto.INT64, [2], [0, 1])]
outs += [h.make_tensor_value_info('ge_x', onnx.TensorProto.FLOAT, [2, 3, 3]),
         h.make_tensor_value_info('ge_m', onnx.TensorProto.INT64, [1, 3])]
exp['ge_x'] = np.take_along_axis(x, np.where(idx < 0, idx + 5, idx), 1)
exp['ge_m'] = np.take_along_axis(m[:1], np.abs(m[:1, :3]), 1)
g = h.make_graph(nodes, 'g', [X, M, I], outs, inits)
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), out + '/modes.onnx')
np.savez(out + '/inputs.npz', x=x, m=m, i=idx)
np.savez(out + '/expected.npz', **exp)
L = h.make_tensor_value_info('l', onnx.TensorProto.FLOAT, [1, 5000])
g = h.make_graph([h.make_node('CumSum', ['l', 'axm1'], ['y'])], 'g', [L], [h.make_tensor_value_info('y', onnx.TensorProto.FLOAT, [1, 5000])], [inits[1]])
onnx.save(h.make_model(g, opset_imports=[h.make_opsetid('', 17)]), out + '/long.onnx')
