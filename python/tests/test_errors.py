"""Bad input raises tcc.TccError (or TypeError for a bad keyword) with one
clear message, never crashes."""

import numpy as np
import pytest
import torch

import tcc


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    from conftest import models
    model, inputs, _ = models.build_mlp()
    return tcc.compile(model, inputs, loss="mse(output,target)",
                       out=tmp_path_factory.mktemp("e") / "mlp.tcc")


X = np.zeros((4, 16), np.float32)
T = np.zeros((4, 8), np.float32)


@pytest.mark.parametrize("batch,message", [
    ({"x": X}, "missing input 'target' (the artifact's inputs: x, target)"),
    ({"x": X, "target": T, "y": T}, "unknown input 'y' (the artifact's inputs: x, target)"),
    ({"x": X[:2], "target": T}, "input 'x': shape [2, 16], expected [4, 16]"),
    ({"x": X.astype(np.int64), "target": T}, "input 'x': dtype int64, expected float32"),
    ({"x": torch.zeros(4, 16, dtype=torch.bool), "target": T},
     "input 'x': dtype bool, expected float32"),
])
def test_bad_batch(artifact, batch, message):
    with tcc.Session(artifact) as s:
        with pytest.raises(tcc.TccError) as e:
            s.step(batch)
        assert str(e.value) == message
        assert s.steps_done == 0
        # The session still works.
        assert s.step({"x": X, "target": T}) >= 0


def test_convertible_dtypes_are_converted(artifact):
    with tcc.Session(artifact) as s:
        a = s.eval({"x": X.astype(np.float64), "target": torch.zeros(4, 8)})
        assert a == s.eval({"x": X, "target": T})


def test_closed_session(artifact):
    s = tcc.Session(artifact)
    s.close()
    s.close()  # twice is fine
    assert s.closed
    for call in (lambda: s.step({"x": X, "target": T}), s.state_dict, s.memory,
                 lambda: s.lr, lambda: s.save_checkpoint("unused")):
        with pytest.raises(tcc.TccError, match="^the session is closed$"):
            call()


def test_runtime_errors_carry_its_message(artifact, tmp_path):
    with pytest.raises(tcc.TccError) as e:
        tcc.Session(tmp_path)
    assert str(e.value) == f"{tmp_path}/manifest.json: no such file"
    assert e.value.status == "i/o error"
    with pytest.raises(tcc.TccError, match="backend 'tpu' is not available"):
        tcc.Session(artifact, backend="tpu")
    with pytest.raises(tcc.TccError, match="^backend 'cpu' has one device, 0: device 3 does not exist$"):
        tcc.Session(artifact, device=3)
    with tcc.Session(artifact) as s:
        with pytest.raises(tcc.TccError, match="is a training artifact: it has no forward"):
            s.forward({"x": X, "target": T})
        with pytest.raises(tcc.TccError, match="^unknown parameter 'nope'$"):
            s.read_param("nope")
        with pytest.raises(tcc.TccError, match=r"^parameter 'fc1.bias': shape \[3\], "
                                               r"expected \[32\]$"):
            s.write_param("fc1.bias", np.zeros(3, np.float32))
        with pytest.raises(tcc.TccError, match="^load_state_dict: missing parameter"):
            s.load_state_dict({})
        with pytest.raises(tcc.TccError, match="no checkpoint"):
            s.restore_checkpoint(tmp_path / "none")


def test_compile_errors(tmp_path):
    from conftest import ROOT
    mlp = f"{ROOT}/examples/mlp/model.onnx"
    with pytest.raises(TypeError, match="^tcc.compile\\(\\) got an unknown flag 'lr' "
                                        "\\(tcc compile's flags: accum, "):
        tcc.compile(mlp, lr=1e-3)
    with pytest.raises(TypeError, match="flag 'no_cuda' is a switch"):
        tcc.compile(mlp, no_cuda="yes")
    with pytest.raises(tcc.TccError, match="^tcc: .*nope.onnx"):
        tcc.compile(tmp_path / "nope.onnx")
    with pytest.raises(tcc.TccError, match="the loss reads output 'z', but @forward's outputs are 'y'$"):
        tcc.compile(mlp, loss="mse(z,t)", out=tmp_path / "x.tcc")
    with pytest.raises(TypeError, match="example_inputs is for a torch.nn.Module"):
        tcc.compile(mlp, {"x": X})


def test_compile_flags_reach_the_compiler(tmp_path):
    from conftest import ROOT
    a = tcc.compile(f"{ROOT}/examples/mlp/model.onnx", loss="mse(y,target)",
                    optimizer="sgd:lr=0.1", grad_clip=1.0, precision="bf16",
                    lr_schedule="cosine:warmup=2,total=10,min=0.01", no_cuda=True,
                    out=tmp_path / "m.tcc")
    assert "grad_clip=1" in a.train_config
    assert "precision=bf16" in a.train_config
    with tcc.Session(a) as s:
        # The warmup's first step: lr * (it + 1) / warmup at it = 0.
        assert s.lr == pytest.approx(0.1 / 2)
        assert s.memory()["working_bytes"] > 0  # bf16 working copies
