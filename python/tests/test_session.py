"""tcc.compile + tcc.Session train an nn.Module as eager PyTorch does."""

import copy

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import tcc
import tcc.torch
from conftest import assert_params_close, mlp_batches, numpy_params

STEPS = 5
ADAMW = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
ADAMW_SPEC = "adamw:lr=0.01,beta1=0.9,beta2=0.95,eps=1e-8,weight_decay=0.1"


def eager_mlp(model, batches):
    """PyTorch's own training: AdamW, F.mse_loss; the losses per step."""
    model = copy.deepcopy(model).train()
    opt = torch.optim.AdamW(model.parameters(), **ADAMW)
    losses = []
    for x, t in batches:
        opt.zero_grad()
        loss = F.mse_loss(model(x), t)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model, losses


def test_mlp_steps_match_pytorch(mlp, tmp_path):
    model, x = mlp
    batches = mlp_batches(STEPS)
    ref, ref_losses = eager_mlp(model, batches)
    artifact = tcc.compile(model, {"x": x}, loss="mse(output,target)",
                           optimizer=ADAMW_SPEC, out=tmp_path / "mlp.tcc")
    assert artifact.kind == "training"
    assert (tmp_path / "mlp.onnx").is_file()  # the exported model, beside it
    with tcc.Session(artifact) as s:
        assert list(s.inputs) == ["x", "target"]
        assert s.inputs["target"].shape == (4, 8)
        # numpy arrays and torch tensors both feed a step.
        losses = [s.step({"x": xb.numpy(), "target": tb}) for xb, tb in batches]
        assert s.steps_done == STEPS
        assert s.lr == pytest.approx(1e-2)
        sd = s.state_dict()
    np.testing.assert_allclose(losses, ref_losses, rtol=1e-5)
    assert all(isinstance(t, torch.Tensor) for t in sd.values())
    assert_params_close({n: t.numpy() for n, t in sd.items()}, numpy_params(ref))
    # The weights go back into the original module, which then computes
    # what the eagerly trained one does.
    tcc.torch.load_into(model, sd)
    torch.testing.assert_close(model(x), ref(x), rtol=1e-5, atol=1e-6)


def test_eval_forward_and_memory(mlp, tmp_path):
    model, x = mlp
    (xb, tb), = mlp_batches(1)
    train = tcc.compile(model, {"x": x}, loss="mse(output,target)",
                        optimizer=ADAMW_SPEC, out=tmp_path / "train.tcc")
    infer = tcc.compile(model, {"x": x}, out=tmp_path / "infer.tcc")
    assert infer.kind == "inference"
    with tcc.Session(train) as s, tcc.Session(infer) as f:
        # eval: the loss of the current parameters, no update.
        expected = F.mse_loss(model(xb), tb).item()
        assert s.eval({"x": xb, "target": tb}) == pytest.approx(expected, rel=1e-5)
        assert s.steps_done == 0
        out = f.forward({"x": xb})
        np.testing.assert_allclose(out["output"], model(xb).detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
        m = s.memory()
        assert m["param_bytes"] == 4 * sum(p.numel() for p in model.parameters())
        assert m["opt_state_bytes"] == 2 * m["param_bytes"]  # AdamW: exp_avg, exp_avg_sq
        assert m["total_bytes"] == sum(v for k, v in m.items() if k != "total_bytes")
        # The cpu backend's one possible note: the OpenBLAS kernels it chose
        # where OpenBLAS fell back to its generic ones (cuda says which
        # library runs the convolutions).
        assert len(s.backend_notes) <= 1
        assert all(n.startswith("OpenBLAS: ") for n in s.backend_notes)


def test_load_state_dict_then_step(mlp, tmp_path):
    """load_state_dict writes every parameter: a session given another
    session's weights steps to the same result."""
    model, x = mlp
    batches = mlp_batches(3)
    artifact = tcc.compile(model, {"x": x}, loss="mse(output,target)",
                           optimizer="sgd:lr=0.1", out=tmp_path / "m.tcc")
    with tcc.Session(artifact) as a, tcc.Session(artifact) as b:
        a.step(dict(zip(("x", "target"), batches[0])))
        b.load_state_dict(a.state_dict())  # SGD without momentum: no state
        la = a.step(dict(zip(("x", "target"), batches[1])))
        lb = b.step(dict(zip(("x", "target"), batches[1])))
        assert la == lb
        for n, t in a.state_dict().items():
            assert torch.equal(t, b.state_dict()[n]), n
