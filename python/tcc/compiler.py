"""tcc.compile: `tcc compile` from Python, flags as keyword arguments."""

import functools
import json
import os
import re
import tempfile
import warnings

from . import _tools
from ._errors import TccError

# Flags compile() sets itself from its own arguments.
_OWN_FLAGS = {"o", "loss", "optimizer", "input-shape"}


@functools.lru_cache(maxsize=None)
def compile_flags():
    """{flag name: whether it takes a value}, as `tcc compile --help` lists
    them (the driver is the one place the flags are defined)."""
    help_text = _tools.run("tcc", ["compile", "--help"]).stdout
    return {m.group(1): m.group(2) is not None
            for m in re.finditer(r"^\s+--?([\w-]+)(=<|\s<)?", help_text, re.M)}


def flag_arguments(flags):
    """Keyword arguments -> `tcc compile` arguments: precision="bf16" ->
    --precision bf16, grad_clip=1.0 -> --grad-clip 1.0, no_cuda=True ->
    --no-cuda (False leaves a switch off). TypeError names an unknown one."""
    known = compile_flags()
    args = []
    for key, value in flags.items():
        name = key.replace("_", "-")
        if name not in known or name in _OWN_FLAGS:
            names = sorted(k.replace("-", "_") for k in known if k not in _OWN_FLAGS)
            raise TypeError(f"tcc.compile() got an unknown flag '{key}' "
                            f"(tcc compile's flags: {', '.join(names)})")
        if not known[name]:
            if not isinstance(value, bool):
                raise TypeError(f"tcc.compile() flag '{key}' is a switch: "
                                f"True or False, not {value!r}")
            if value:
                args.append(f"--{name}")
        elif value is not None:
            args += [f"--{name}", str(value)]
    return args


class Artifact:
    """A compiled artifact directory (OUT.tcc/: docs/artifact.md)."""

    def __init__(self, path, source=None):
        self.path = os.fspath(path)
        # The model it was compiled from, when known (tcc.compile sets it):
        # what tcc.export(..., model=) needs for an ONNX file.
        self.source = source
        manifest = os.path.join(self.path, "manifest.json")
        if not os.path.isfile(manifest):
            raise TccError(f"'{self.path}' is not a tcc artifact (no manifest.json)")
        with open(manifest) as f:
            self.manifest = json.load(f)

    @property
    def kind(self):
        """"training" or "inference"."""
        return self.manifest["kind"]

    @property
    def train_config(self):
        return self.manifest.get("train_config", "")

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return f"tcc.Artifact({self.path!r}, kind={self.kind!r})"


def compile(model, example_inputs=None, loss=None, optimizer=None, out=None,
            input_shapes=None, **flags):
    """Compiles `model` (an ONNX or .mlir path, or a torch.nn.Module) to an
    artifact; returns its Artifact.

    - A torch.nn.Module is exported to ONNX first (tcc.torch.export_onnx,
      with tcc's export settings) with `example_inputs`: a dict {input name:
      tensor} or a tuple in forward's order; its outputs are named "output"
      (one) or "output0", "output1", ...; the ONNX file is written beside
      the artifact (OUT without its extension, plus .onnx).
    - `loss`: the --loss string ("mse(output,target)",
      "cross_entropy(output,labels)", or a scalar output's name); None
      compiles the forward pass for inference.
    - `optimizer`: the --optimizer string ("adamw:lr=1e-3,weight_decay=0").
    - `out`: the artifact directory (default: a new temporary directory).
    - `input_shapes`: {ONNX input: shape tuple} (--input-shape).
    - `**flags`: any other `tcc compile` flag, dashes as underscores:
      precision="bf16", grad_clip=1.0, accum=4, lr_schedule="cosine:...".
    Raises TypeError for an unknown flag and TccError with the compiler's
    message when the compile fails. Compiler warnings become Python warnings.
    """
    args = flag_arguments(flags)
    if loss is not None:
        args += ["--loss", loss]
    if optimizer is not None:
        args += ["--optimizer", optimizer]
    for name, shape in (input_shapes or {}).items():
        args += ["--input-shape", f"{name}={'x'.join(map(str, shape))}"]
    if out is None:
        out = os.path.join(tempfile.mkdtemp(prefix="tcc-"), "model.tcc")
    out = os.fspath(out)
    if not isinstance(model, (str, os.PathLike)):
        from . import torch as tcc_torch
        model = tcc_torch.export_onnx(model, example_inputs,
                                      os.path.splitext(out)[0] + ".onnx",
                                      training=loss is not None)
    elif example_inputs is not None:
        raise TypeError("tcc.compile(): example_inputs is for a torch.nn.Module; "
                        "for a file use input_shapes")
    result = _tools.run("tcc", ["compile", os.fspath(model), *args, "-o", out])
    for line in result.stderr.splitlines():
        if line.startswith("tcc: warning: "):
            warnings.warn(line[len("tcc: warning: "):], stacklevel=2)
    return Artifact(out, source=os.fspath(model))
