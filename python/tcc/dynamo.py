"""torch.compile(model, backend="tcc") for training.

Dynamo hands the backend each captured graph (an fx.GraphModule whose inputs
are the model's parameters and the batch). The backend compiles two tcc
artifacts per graph, both with tcc's own autodiff doing the backward pass:

- forward: an inference artifact of the graph, every input that requires a
  gradient made a parameter (written into the session each call, so a
  PyTorch optimizer's updates are seen);
- vjp: a training artifact whose loss is sum_i <output_i, cotangent_i>, the
  cotangents batch inputs. Its optimizer is AdamW with beta1 = 0 and lr = 0
  over a zeroed first moment, so after one step each parameter's exp_avg is
  exactly the gradient of that loss: the vector-Jacobian product autograd
  asks for (and the parameters stay as written).

The callable returned runs the forward artifact inside a
torch.autograd.Function whose backward runs the vjp artifact, so an ordinary
PyTorch loop (loss.backward(), any torch optimizer) trains through tcc's
kernels. A graph tcc cannot compile (an op it lacks, an export failure,
tensors not on the CPU) runs eagerly, with one warning naming the reason.
Each call copies the parameters into the sessions (and the outputs and
gradients out); compile_train_step, which keeps the optimizer inside the
compiled step, avoids those copies.
"""

import os
import shutil
import tempfile
import warnings
import weakref

import numpy as np
import torch
import torch.nn as nn

from ._errors import TccError
from .compiler import compile as tcc_compile
from .session import Session

# AdamW that leaves parameters alone and stores the gradient as exp_avg.
VJP_OPTIMIZER = "adamw:lr=0,beta1=0,beta2=0,eps=1,weight_decay=0"


class _Graph(nn.Module):
    """The captured graph with its grad-requiring inputs as parameters
    params.0, params.1, ... and the other inputs as forward's arguments."""

    def __init__(self, gm, inputs, trainable):
        super().__init__()
        self.gm = gm
        self.trainable = trainable
        self.others = [i for i in range(len(inputs)) if i not in trainable]
        self.params = nn.ParameterList(
            [nn.Parameter(inputs[i].detach().clone()) for i in trainable])

    def outputs(self, others):
        args = [None] * (len(self.trainable) + len(self.others))
        for i, p in zip(self.trainable, self.params):
            args[i] = p
        for i, t in zip(self.others, others):
            args[i] = t
        out = self.gm(*args)
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    def forward(self, *others):
        return self.outputs(others)


class _Vjp(_Graph):
    """sum_i <output_i, cotangent_i>: its parameter gradients are the VJP."""

    def forward(self, *args):
        n = len(self.others)
        outs = self.outputs(args[:n])
        return sum((o * c).sum() for o, c in zip(outs, args[n:]))


class CompiledGraph:
    """The two sessions of one captured graph (see the module)."""

    def __init__(self, gm, inputs, directory):
        self.trainable = [i for i, t in enumerate(inputs)
                          if t.requires_grad and t.is_floating_point()]
        graph = _Graph(gm, inputs, self.trainable)
        others = tuple(inputs[i] for i in graph.others)
        self.others = graph.others
        self.n_inputs = len(inputs)
        with torch.no_grad():
            outputs = graph(*others)
        if not all(o.is_floating_point() for o in outputs):
            raise TccError("a graph output is not a float tensor")
        named = {f"input{k}": t for k, t in enumerate(others)}
        cotangents = {f"cotangent{k}": torch.zeros_like(o) for k, o in enumerate(outputs)}
        self.forward = Session(tcc_compile(graph, named,
                                           out=os.path.join(directory, "forward.tcc")))
        self.params = [f"params.{k}" for k in range(len(self.trainable))]
        vjp = _Vjp(gm, inputs, self.trainable)
        self.vjp = Session(tcc_compile(vjp, {**named, **cotangents}, loss="output",
                                       optimizer=VJP_OPTIMIZER,
                                       out=os.path.join(directory, "vjp.tcc")))
        self.input_names = list(named)
        self.cotangent_names = list(cotangents)

    def _write_params(self, session, inputs):
        for name, i in zip(self.params, self.trainable):
            session.write_param(name, inputs[i])

    def run_forward(self, inputs):
        self._write_params(self.forward, inputs)
        out = self.forward.forward(
            dict(zip(self.input_names, (inputs[i] for i in self.others))))
        return tuple(torch.from_numpy(a) for a in out.values())

    def run_vjp(self, inputs, cotangents):
        s = self.vjp
        self._write_params(s, inputs)
        for name in self.params:
            key = name + ".exp_avg"
            if key in s.opt_state:
                s.write_opt_state(key, np.zeros(s.opt_state[key].shape, np.float32))
        batch = dict(zip(self.input_names, (inputs[i] for i in self.others)))
        for name, c in zip(self.cotangent_names, cotangents):
            batch[name] = c if c is not None else np.zeros(s.inputs[name].shape,
                                                           s.inputs[name].dtype)
        s.step(batch)
        grads = [None] * self.n_inputs
        for name, i in zip(self.params, self.trainable):
            key = name + ".exp_avg"
            if key in s.opt_state:  # none: the outputs do not depend on it
                grads[i] = torch.from_numpy(s.read_opt_state(key))
        return grads


class _Run(torch.autograd.Function):
    @staticmethod
    def forward(ctx, compiled, *inputs):
        ctx.compiled = compiled
        ctx.save_for_backward(*inputs)
        return compiled.run_forward(inputs)

    @staticmethod
    def backward(ctx, *cotangents):
        return (None, *ctx.compiled.run_vjp(ctx.saved_tensors, cotangents))


def backend(gm, example_inputs):
    """The torch.compile backend "tcc": registered by `import tcc.torch`,
    and an entry point of the installed package (pyproject.toml; this
    module registers nothing, so the two never collide)."""
    directory = tempfile.mkdtemp(prefix="tcc-dynamo-")
    try:
        if any(not isinstance(t, torch.Tensor) or t.device.type != "cpu"
               for t in example_inputs):
            raise TccError("the tcc backend takes CPU tensors only (no symbolic "
                           "shapes: torch.compile(..., dynamic=False))")
        compiled = CompiledGraph(gm, example_inputs, directory)
        weakref.finalize(compiled, shutil.rmtree, directory, ignore_errors=True)
    except (TccError, torch.onnx.errors.OnnxExporterError) as e:
        shutil.rmtree(directory, ignore_errors=True)
        lines = str(e).strip().splitlines() or [type(e).__name__]
        message = lines[-1].removeprefix("tcc: ")
        warnings.warn(f"tcc: this graph runs eagerly: {message}", stacklevel=2)
        return gm.forward

    def run(*inputs):
        outs = _Run.apply(compiled, *inputs)
        return list(outs)
    return run
