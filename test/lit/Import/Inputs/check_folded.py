"""Checks the one f32 constant of `tcc import`'s output against onnxruntime.

    %venv-python %S/Inputs/check_folded.py MODEL.onnx IMPORTED.mlir

MODEL computes y = x + c where c is a sub-graph of constants that the
importer folds; onnxruntime's y for x = 0 is c. The constant printed in the
IR must equal it to float32 rounding of the library functions (rtol 1e-6).
"""

import re
import sys

import numpy as np
import onnxruntime as ort

model, mlir = sys.argv[1], open(sys.argv[2]).read()
found = re.findall(r"tcc\.constant dense<(.*)> : tensor<([0-9x]+)xf32>", mlir)
if len(found) != 1:
    sys.exit("expected one f32 constant in the IR, found %d" % len(found))
text, shape = found[0]
shape = [int(d) for d in shape.split("x")]
values = np.array([float(v) for v in re.findall(r"[-+0-9.eE]+(?:inf)?", text)],
                  np.float32).reshape(shape)

session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
x = session.get_inputs()[0]
(y,) = session.run(None, {x.name: np.zeros(x.shape, np.float32)})
expected = y[:1].reshape(shape)
np.testing.assert_allclose(values, expected, rtol=1e-6, atol=0)
print("folded constant matches onnxruntime:", np.array2string(values.ravel(), precision=6))
