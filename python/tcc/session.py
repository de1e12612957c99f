"""tcc.Session: an artifact opened in the runtime (runtime/api/tcc_runtime.h).

Copies: an input given as a C-contiguous host array of the input's dtype (a
numpy array, or a CPU torch tensor, read through its buffer) is handed to the
runtime as it is: the runtime copies it once into the session's own input
buffer (on a "cuda" session, to the device), with no copy on the Python side.
Anything else (another dtype, a non-contiguous view, a CUDA tensor) is first
converted or copied to such an array. Parameters, optimizer state and outputs
are read into a new array each time (one copy out of the session); the torch
tensors of state_dict() share that array's memory.
"""

import atexit
import collections
import os

import numpy as np

from . import _native
from ._errors import TccError

_DTYPES = {0: np.dtype("float32"), 1: np.dtype("float64"), 2: np.dtype("int32"),
           3: np.dtype("int64"), 4: np.dtype("bool"), 6: np.dtype("float16")}


def _dtype(code):
    if code == 5:
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return _DTYPES[code]


class TensorInfo(collections.namedtuple("TensorInfo", "name dtype shape")):
    """A named tensor of the session: numpy dtype, shape tuple."""


def _infos(raw):
    return collections.OrderedDict(
        (name, TensorInfo(name, _dtype(code), tuple(shape))) for name, code, shape in raw)


def _as_array(value, info, what):
    """`value` (numpy array, torch tensor, or anything np.asarray takes) as a
    C-contiguous host array of info's dtype and shape. Another dtype of the
    same kind (float64 -> float32, int32 -> int64) is converted; a float for
    an integer input (or the reverse), or another shape, raises TccError."""
    if type(value).__module__.startswith("torch"):
        value = value.detach().cpu()  # no copy for a CPU tensor
        if str(value.dtype) == "torch.bfloat16":
            value = value.view(_torch().int16).numpy().view(_dtype(5))
        else:
            value = value.numpy()
    array = np.asarray(value)
    if array.shape != info.shape:
        raise TccError(f"{what} '{info.name}': shape {list(array.shape)}, "
                       f"expected {list(info.shape)}")
    if array.dtype != info.dtype:
        kinds = {array.dtype.kind, info.dtype.kind}
        if not (len(kinds) == 1 or kinds == {"i", "u"}) or \
                not np.can_cast(array.dtype, info.dtype, casting="same_kind"):
            raise TccError(f"{what} '{info.name}': dtype {array.dtype}, expected "
                           f"{info.dtype}")
        array = array.astype(info.dtype)
    return np.ascontiguousarray(array)


def _torch():
    import torch
    return torch


_world_joined = False


def _join_world():
    """Joins the MPI job mpirun started (once; left at interpreter exit)."""
    global _world_joined
    if not _world_joined:
        _native.join_world()
        atexit.register(_native.leave_world)
        _world_joined = True


class Session:
    """An artifact opened for training (or inference) in the runtime.

        with tcc.Session(artifact, backend="cpu") as s:
            loss = s.step({"x": x, "target": y})

    `artifact` is a tcc.Artifact or an artifact directory. backend "cpu" or
    "cuda", device the CUDA ordinal. Every failure raises TccError carrying
    the runtime's message; a closed session raises too.

    Data parallel (`data_parallel=True`, an artifact compiled with
    `data_parallel=True`, the script started as `mpirun -np N python ...`):
    the session is rank `s.rank` of `s.world_size`; each rank steps on its
    own rows (rank r on the r-th block of the global batch, as tcc-run
    shards it) and the gradients are averaged over the ranks (MPI on
    "cpu"; NCCL on "cuda", local rank r on device + r). `zero=1` shards
    the optimizer state (ZeRO-1); a collective waiting more than
    `collective_timeout` seconds for another rank fails the step. Without
    mpirun it is a world of one. save_checkpoint is then collective: every
    rank calls it, rank 0 writes.
    """

    def __init__(self, artifact, backend="cpu", device=0, data_parallel=False, zero=0,
                 collective_timeout=300.0):
        self.artifact_path = os.fspath(artifact)
        if data_parallel:
            _join_world()
        self._s = _native.Session(self.artifact_path, backend, device, bool(data_parallel),
                                  int(zero), float(collective_timeout))
        self.rank = self._s.rank
        self.world_size = self._s.world_size
        self.inputs = _infos(self._s.inputs())
        self.params = _infos(self._s.params())
        self.opt_state = _infos(self._s.opt_state())
        self.outputs = _infos(self._s.outputs())

    # --- steps --------------------------------------------------------------

    def _bind(self, batch):
        unknown = [n for n in batch if n not in self.inputs]
        if unknown:
            raise TccError(f"unknown input '{unknown[0]}' (the artifact's inputs: "
                           f"{', '.join(self.inputs)})")
        missing = [n for n in self.inputs if n not in batch]
        if missing:
            raise TccError(f"missing input '{missing[0]}' (the artifact's inputs: "
                           f"{', '.join(self.inputs)})")
        for name, value in batch.items():
            self._s.bind_input(name, _as_array(value, self.inputs[name], "input"))

    def step(self, batch):
        """One optimizer step on `batch` ({input name: array or tensor}, every
        input of the artifact); the step's loss (before the update), a float."""
        self._bind(batch)
        return self._s.train_step()

    def eval(self, batch):
        """The evaluation loss on `batch` (no update)."""
        self._bind(batch)
        return self._s.eval_step()

    def forward(self, inputs):
        """An inference artifact's forward pass: {output name: numpy array}."""
        self._bind(inputs)
        self._s.forward()
        out = collections.OrderedDict()
        for name, info in self.outputs.items():
            out[name] = np.empty(info.shape, info.dtype)
            self._s.read_output(name, out[name])
        return out

    # --- state --------------------------------------------------------------

    def read_param(self, name):
        """Parameter `name` as a new numpy array."""
        info = self._info(self.params, name, "parameter")
        array = np.empty(info.shape, info.dtype)
        self._s.read_param(name, array)
        return array

    def write_param(self, name, value):
        info = self._info(self.params, name, "parameter")
        self._s.write_param(name, _as_array(value, info, "parameter"))

    def state_dict(self):
        """{parameter name: torch tensor}, every parameter under the name the
        artifact carries (for a PyTorch export the module's parameter names:
        model.load_state_dict(s.state_dict(), strict=False), or
        tcc.torch.load_into(model, ...) for a tied weight's other name)."""
        torch = _torch()
        return collections.OrderedDict(
            (name, torch.from_numpy(self.read_param(name))) for name in self.params)

    def load_state_dict(self, state_dict, strict=True):
        """Writes the parameters of `state_dict` (torch tensors or arrays).
        strict: every parameter of the artifact must be there (extra keys,
        such as buffers of the module, are ignored)."""
        if strict:
            missing = [n for n in self.params if n not in state_dict]
            if missing:
                raise TccError(f"load_state_dict: missing parameter '{missing[0]}'")
        for name in self.params:
            if name in state_dict:
                self.write_param(name, state_dict[name])

    def optimizer_state(self):
        """{optimizer state name (<param>.exp_avg, ...): numpy array}."""
        return collections.OrderedDict(
            (name, self.read_opt_state(name)) for name in self.opt_state)

    def opt_state_shard(self, name):
        """(first, count): the elements [first, first + count) of optimizer
        state `name` (flattened) this session holds: all of them, or under
        zero=1 this rank's slice (possibly none)."""
        self._info(self.opt_state, name, "optimizer state")
        return self._s.opt_state_shard(list(self.opt_state).index(name))

    def _held(self, name):
        """The info of state `name` as this session holds it: its shape, or
        under zero=1 the 1-D slice of opt_state_shard."""
        info = self._info(self.opt_state, name, "optimizer state")
        _, count = self.opt_state_shard(name)
        if count == int(np.prod(info.shape, dtype=np.int64)):
            return info
        return TensorInfo(info.name, info.dtype, (count,))

    def read_opt_state(self, name):
        """Optimizer state slot `name` (<param>.exp_avg, ...) as a new array;
        under zero=1 this rank's slice, flattened (opt_state_shard)."""
        info = self._held(name)
        array = np.empty(info.shape, info.dtype)
        self._s.read_opt_state(name, array)
        return array

    def write_opt_state(self, name, value):
        """Writes slot `name`: the whole tensor, or under zero=1 this rank's
        flattened slice."""
        info = self._held(name)
        self._s.write_opt_state(name, _as_array(value, info, "optimizer state"))

    def save_checkpoint(self, directory, data_position=0):
        """Writes DIRECTORY/step-<steps done>/ (the layout tcc run writes and
        tcc run --resume reads); returns that path."""
        return self._s.save_checkpoint(os.fspath(directory), data_position)

    def restore_checkpoint(self, path):
        """Restores a step directory, or the latest checkpoint under a
        checkpoint directory (one tcc run wrote, or save_checkpoint); returns
        the step directory used."""
        return self._s.restore_checkpoint(os.fspath(path))[0]

    @staticmethod
    def _info(table, name, what):
        if name not in table:
            raise TccError(f"unknown {what} '{name}'")
        return table[name]

    # --- facts --------------------------------------------------------------

    @property
    def steps_done(self):
        return self._s.steps_done()

    @property
    def lr(self):
        """The learning rate of the next step (the compiled schedule's)."""
        return self._s.learning_rate(self._s.steps_done())

    @property
    def train_config(self):
        return self._s.train_config()

    @property
    def label_input(self):
        return self._s.label_input()

    @property
    def backend_notes(self):
        """The backend's library choices made at open, a string each (on
        cuda, which library runs the convolutions: cuDNN or tcc's kernels);
        [] on the cpu backend."""
        return self._s.backend_notes().splitlines()

    def metrics(self):
        """{metric name: value of the last step} (grad_norm, ...)."""
        return {n: self._s.metric(n) for n in self._s.metrics()}

    def memory(self):
        """Bytes the session holds: {arena_bytes, param_bytes, working_bytes,
        opt_state_bytes, input_bytes, constant_bytes, total_bytes}."""
        return self._s.memory()

    # --- lifetime -----------------------------------------------------------

    def close(self):
        """Frees the session; any later call raises TccError."""
        self._s.close()

    @property
    def closed(self):
        return self._s.closed

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        state = "closed" if self.closed else f"{self.steps_done} steps done"
        return f"tcc.Session({self.artifact_path!r}, {state})"
