"""Trained weights out of a checkpoint: `tcc export CKPT --to OUT` (the
driver runs `python -m tcc export`, main below) and tcc.export().

    OUT.onnx          the source ONNX model (--model) with its initializers
                      replaced by the checkpoint's parameters
    OUT.safetensors   the parameters, by name (a state_dict for
                      safetensors.torch.load_file)
    OUT.pt            the same as a torch.save'd state_dict
"""

import argparse
import os
import sys

import numpy as np

from . import _native
from ._errors import TccError

FORMATS = (".onnx", ".safetensors", ".pt")


def checkpoint_params(checkpoint):
    """{name: numpy array} of a checkpoint's parameters: a step directory or
    the latest checkpoint under a checkpoint directory."""
    from safetensors.numpy import load_file
    step_dir = _native.checkpoint_step_dir(os.fspath(checkpoint))
    return load_file(os.path.join(step_dir, "params.safetensors"))


def _onnx_with(model, params, to):
    import onnx
    from onnx import numpy_helper
    if model is None:
        raise TccError("export to .onnx needs the model the artifact was compiled "
                       "from (--model MODEL.onnx; the checkpoint does not hold the graph)")
    proto = onnx.load(os.fspath(model))
    inits = {i.name: i for i in proto.graph.initializer}
    # A batch norm's step counter, which exporters drop and tcc's importer
    # adds, has no initializer to go to.
    params = {n: v for n, v in params.items()
              if n in inits or n.rsplit(".", 1)[-1] != "num_batches_tracked"}
    missing = [n for n in params if n not in inits]
    if missing:
        raise TccError(f"'{model}' has no initializer '{missing[0]}' of the "
                       "checkpoint: not the model it was trained from")
    for name, value in params.items():
        old = inits[name]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(old.data_type)
        if tuple(old.dims) != value.shape:
            raise TccError(f"initializer '{name}' of '{model}' has shape "
                           f"{list(old.dims)}, the checkpoint {list(value.shape)}")
        old.CopyFrom(numpy_helper.from_array(value.astype(dtype), name))
    big = sum(v.nbytes for v in params.values()) > (1 << 30)
    onnx.save_model(proto, os.fspath(to), save_as_external_data=big,
                    location=os.path.basename(to) + ".data")


def export(checkpoint, to, model=None):
    """Writes the parameters of `checkpoint` to `to`, whose extension picks
    the format (.onnx, .safetensors, .pt; see the module). `model`: the
    source ONNX file, for .onnx."""
    ext = os.path.splitext(os.fspath(to))[1]
    if ext not in FORMATS:
        raise TccError(f"cannot export to '{to}': the extension must be one of "
                       f"{', '.join(FORMATS)}")
    params = checkpoint_params(checkpoint)
    if ext == ".onnx":
        _onnx_with(model, params, to)
    elif ext == ".safetensors":
        from safetensors.numpy import save_file
        save_file({n: np.ascontiguousarray(v) for n, v in params.items()}, os.fspath(to))
    else:
        import torch
        torch.save({n: torch.from_numpy(v) for n, v in params.items()}, os.fspath(to))


def main(argv=None):
    p = argparse.ArgumentParser(
        prog="tcc export",
        usage="tcc export CKPT_DIR --to OUT.onnx|OUT.safetensors|OUT.pt "
              "[--model M.onnx] [flags]",
        description="write a checkpoint's trained parameters "
        "as an ONNX model, a safetensors file or a PyTorch state_dict")
    p.add_argument("checkpoint", help="a step directory or a checkpoint directory "
                   "(its latest checkpoint)")
    p.add_argument("--to", required=True, help="OUT.onnx | OUT.safetensors | OUT.pt")
    p.add_argument("--model", help="the ONNX model the artifact was compiled from "
                   "(for --to OUT.onnx)")
    a = p.parse_args(argv)
    try:
        export(a.checkpoint, a.to, a.model)
    except (TccError, OSError) as e:
        print(f"tcc: export: {e}", file=sys.stderr)
        return 1
    print(f"wrote {a.to}")
    return 0
