"""Runs an inference artifact's forward pass through the C API (ctypes):
forward.py ARTIFACT INPUTS.npz OUTPUTS.npz binds every array of INPUTS by
name, runs tcc_forward and writes every output to OUTPUTS.npz. Prints the
runtime's message and exits 1 when a call fails."""
import ctypes as C
import os
import shutil
import sys

import numpy as np

art, inputs, outputs = sys.argv[1:4]
lib = C.CDLL(os.path.join(os.path.dirname(shutil.which("tcc")), "..",
                          "runtime", "exec", "libtcc_runtime.so"))
lib.tcc_last_error.restype = C.c_char_p


class Info(C.Structure):
    _fields_ = [("name", C.c_char_p), ("dtype", C.c_int), ("rank", C.c_int32),
                ("shape", C.POINTER(C.c_int64)), ("bytes", C.c_size_t)]


DTYPES = {0: np.float32, 1: np.float64, 2: np.int32, 3: np.int64, 4: np.bool_}


def check(status):
    if status != 0:
        print(lib.tcc_last_error().decode())
        sys.exit(1)


s = C.c_void_p()
check(lib.tcc_session_open(art.encode(), None, C.byref(s)))
for name, x in np.load(inputs).items():
    x = np.ascontiguousarray(x)
    check(lib.tcc_bind_input(s, name.encode(), x.ctypes.data_as(C.c_void_p),
                             C.c_size_t(x.nbytes)))
check(lib.tcc_forward(s))
out = {}
for i in range(lib.tcc_num_outputs(s)):
    info = Info()
    check(lib.tcc_output_info(s, i, C.byref(info)))
    y = np.empty([info.shape[d] for d in range(info.rank)], DTYPES[info.dtype])
    check(lib.tcc_read_output(s, info.name, y.ctypes.data_as(C.c_void_p),
                              C.c_size_t(y.nbytes)))
    out[info.name.decode()] = y
lib.tcc_session_close(s)
np.savez(outputs, **out)
print("forward: " + ", ".join(sorted(out)))
