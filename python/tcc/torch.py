"""PyTorch on tcc: export an nn.Module for training, put weights back into
it, the whole-step API compile_train_step (model + loss + optimizer compiled
into one tcc training step, tcc's fastest path), and, once imported, the
torch.compile backend "tcc" (tcc/dynamo.py)."""

import inspect
import os
import shutil
import tempfile
import warnings
import weakref

import torch

from .compiler import compile as tcc_compile
from .session import Session
from ._errors import TccError


def _named_inputs(model, example_inputs):
    """(names, tensors) of example_inputs: a dict {name: tensor}, or a
    tensor / tuple in forward's order, named after forward's parameters."""
    if isinstance(example_inputs, dict):
        return list(example_inputs), tuple(example_inputs.values())
    if isinstance(example_inputs, torch.Tensor):
        example_inputs = (example_inputs,)
    if example_inputs is None:
        raise TypeError("exporting a torch.nn.Module needs example_inputs")
    params = list(inspect.signature(model.forward).parameters)
    if len(params) < len(example_inputs):
        raise TypeError(f"{len(example_inputs)} example inputs for forward"
                        f"({', '.join(params)})")
    return params[:len(example_inputs)], tuple(example_inputs)


def output_names(count):
    """The names export_onnx gives a model's outputs."""
    return ["output"] if count == 1 else [f"output{i}" for i in range(count)]


def export_onnx(model, example_inputs, path, training=True):
    """Exports `model` as tcc expects (README "Quick tour"): the dynamo-based
    exporter with optimize=False, so every parameter is an initializer under
    its PyTorch name; static shapes from `example_inputs`; in training mode
    (dropout on) for a training step, eval mode for inference. Returns
    `path`."""
    names, args = _named_inputs(model, example_inputs)
    was_training = model.training
    model.train(training)
    try:
        with torch.no_grad():
            outputs = model(*args)
        count = 1 if isinstance(outputs, torch.Tensor) else len(outputs)
        with warnings.catch_warnings():
            # Training mode is what a training step needs.
            warnings.filterwarnings("ignore", "Exporting a model while it is in "
                                    "training mode")
            torch.onnx.export(model, args, os.fspath(path), dynamo=True,
                              optimize=False, input_names=names,
                              output_names=output_names(count), verbose=False)
    finally:
        model.train(was_training)
    return path


def load_into(module, state_dict):
    """Copies `state_dict` (Session.state_dict(): the artifact's parameter
    names) into `module`'s parameters in place. A tied weight may come under
    any of its names (the exporter may pick the second). Raises TccError
    naming a name the module lacks or a parameter left unset."""
    own = module.state_dict(keep_vars=True)
    written = set()
    with torch.no_grad():
        for name, value in state_dict.items():
            if name not in own:
                raise TccError(f"load_into: the module has no parameter '{name}'")
            own[name].copy_(torch.as_tensor(value))
            written.add(id(own[name]))
    missing = [n for n, p in module.named_parameters() if id(p) not in written]
    if missing:
        raise TccError(f"load_into: no value for parameter '{missing[0]}'")


def optimizer_spec(optimizer):
    """A torch.optim.AdamW / SGD (or Adam without weight decay) as tcc's
    --optimizer string, from its one parameter group. TccError for options
    tcc does not have (amsgrad, dampening, ...)."""
    if isinstance(optimizer, str):
        return optimizer
    groups = optimizer.param_groups
    g = groups[0]
    if any({k: v for k, v in h.items() if k != "params"} !=
           {k: v for k, v in g.items() if k != "params"} for h in groups):
        raise TccError("optimizer_spec: parameter groups with different settings")

    def refuse(option):
        raise TccError(f"optimizer_spec: {type(optimizer).__name__}({option}) has "
                       "no tcc equivalent")
    if isinstance(optimizer, (torch.optim.AdamW, torch.optim.Adam)):
        adam = not isinstance(optimizer, torch.optim.AdamW)
        for option in ("amsgrad", "maximize"):
            if g.get(option):
                refuse(f"{option}=True")
        if adam and g["weight_decay"]:
            refuse("weight_decay != 0: Adam's L2 decay is not AdamW's")
        b1, b2 = g["betas"]
        return (f"adamw:lr={g['lr']!r},beta1={b1!r},beta2={b2!r},eps={g['eps']!r},"
                f"weight_decay={g['weight_decay']!r}")
    if isinstance(optimizer, torch.optim.SGD):
        if g.get("dampening"):
            refuse("dampening != 0")
        if g.get("maximize"):
            refuse("maximize=True")
        return (f"sgd:lr={g['lr']!r},momentum={g['momentum']!r},"
                f"weight_decay={g['weight_decay']!r},nesterov={int(g['nesterov'])}")
    raise TccError(f"optimizer_spec: {type(optimizer).__name__} is not supported "
                   "(tcc has SGD and AdamW)")


def _loss_spec(loss_fn, output):
    """(--loss string, the name of its new input) for loss_fn."""
    import torch.nn.functional as F
    if loss_fn in ("cross_entropy", F.cross_entropy) or \
            isinstance(loss_fn, torch.nn.CrossEntropyLoss):
        if isinstance(loss_fn, torch.nn.CrossEntropyLoss) and (
                loss_fn.weight is not None or loss_fn.label_smoothing or
                loss_fn.reduction != "mean"):
            raise TccError("compile_train_step: CrossEntropyLoss with weight, "
                           "label_smoothing or reduction != 'mean' is not supported")
        ignore = getattr(loss_fn, "ignore_index", -100)
        return f"cross_entropy({output},labels,ignore_index={ignore})", "labels"
    if loss_fn in ("mse", F.mse_loss) or isinstance(loss_fn, torch.nn.MSELoss):
        if getattr(loss_fn, "reduction", "mean") != "mean":
            raise TccError("compile_train_step: MSELoss(reduction != 'mean') is not "
                           "supported")
        return f"mse({output},target)", "target"
    raise TccError(f"compile_train_step: loss {loss_fn!r} is not supported "
                   "(cross_entropy or mse)")


class TrainStep:
    """A compiled training step of one model: call it with the model's
    inputs and the target (in forward's order, then the target) to run one
    optimizer step; returns the loss. The module's own parameters are not
    touched until sync()."""

    def __init__(self, model, artifact, input_names, target_name, backend, device,
                 temporary=None):
        self.model = model
        # The temporary directory holding the artifact, removed with the step.
        self._cleanup = temporary and weakref.finalize(
            self, shutil.rmtree, temporary, ignore_errors=True)
        self.artifact = artifact
        self.input_names = input_names + [target_name]
        self.session = Session(artifact, backend, device)
        # Start from the module's current weights.
        self.session.load_state_dict(
            {n: t for n, t in model.state_dict().items() if n in self.session.params})

    def __call__(self, *args):
        if len(args) != len(self.input_names):
            raise TccError(f"the train step takes {len(self.input_names)} arguments "
                           f"({', '.join(self.input_names)}), got {len(args)}")
        return self.session.step(dict(zip(self.input_names, args)))

    def sync(self):
        """Copies the trained parameters into the module (in place)."""
        load_into(self.model, self.session.state_dict())
        return self.model

    def close(self):
        self.session.close()
        if self._cleanup:
            self._cleanup()


def compile_train_step(model, loss_fn, optimizer, example_inputs, backend="cpu",
                       device=0, out=None, **flags):
    """Compiles model + loss_fn + optimizer into one tcc training step.

    - loss_fn: torch.nn.CrossEntropyLoss() / MSELoss() (or F.cross_entropy,
      F.mse_loss, "cross_entropy", "mse") applied to the model's one output.
    - optimizer: a torch.optim.AdamW / SGD over the model's parameters (its
      hyper-parameters are compiled in: optimizer_spec) or an --optimizer
      string.
    - example_inputs: the model's inputs (a tensor, tuple or dict): their
      shapes are the compiled batch shapes (the target's follows from the
      loss).
    - out: the artifact directory; by default a temporary one, removed by
      close() (or when the TrainStep is garbage-collected).
    - flags: any other tcc.compile flag (grad_clip=1.0, lr_schedule=...).
    Returns a TrainStep; step(x, y) trains, step.sync() puts the weights
    back into `model`.
    """
    names, _ = _named_inputs(model, example_inputs)
    loss, target = _loss_spec(loss_fn, output_names(1)[0])
    temporary = tempfile.mkdtemp(prefix="tcc-") if out is None else None
    artifact = tcc_compile(model, example_inputs, loss=loss,
                           optimizer=optimizer_spec(optimizer),
                           out=out or os.path.join(temporary, "model.tcc"), **flags)
    return TrainStep(model, artifact, names, target, backend, device, temporary)


from .dynamo import backend  # noqa: E402  (torch.compile(backend="tcc"))

torch._dynamo.register_backend(backend, name="tcc")
