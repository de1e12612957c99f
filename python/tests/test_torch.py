"""tcc.torch.compile_train_step: model + loss + torch optimizer compiled into
one tcc step trains as the eager PyTorch loop does."""

import copy

import pytest
import torch
import torch.nn as nn

import tcc
import tcc.torch
from conftest import assert_params_close, mlp_batches, models, numpy_params


def eager(model, loss_fn, make_opt, batches, grad_clip=None):
    model = copy.deepcopy(model).train()
    opt = make_opt(model.parameters())
    losses = []
    for x, y in batches:
        opt.zero_grad()
        out = model(x)
        loss = loss_fn(out.reshape(-1, out.shape[-1]), y.reshape(-1)) \
            if isinstance(loss_fn, nn.CrossEntropyLoss) else loss_fn(out, y)
        loss.backward()
        if grad_clip:
            nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        opt.step()
        losses.append(loss.item())
    return model, losses


def check(model, loss_fn, make_opt, example, batches, **flags):
    ref, ref_losses = eager(model, loss_fn, make_opt, batches, flags.get("grad_clip"))
    opt = make_opt(model.parameters())
    step = tcc.torch.compile_train_step(model, loss_fn, opt, example, **flags)
    losses = [step(x, y) for x, y in batches]
    assert losses == pytest.approx(ref_losses, rel=1e-5)
    step.sync()
    step.close()
    assert_params_close(numpy_params(model), numpy_params(ref))


def test_mlp_adamw():
    model, inputs, _ = models.build_mlp()
    check(model, nn.MSELoss(),
          lambda p: torch.optim.AdamW(p, lr=1e-2, betas=(0.9, 0.95), weight_decay=0.1),
          inputs["x"], mlp_batches(3), grad_clip=1.0)


def test_grad_norm_is_clip_grad_norm_s():
    """grad_norm=True (tcc compile --grad-norm): each step's gradient norm is
    what clip_grad_norm_ returns in the eager loop; without clipping or the
    flag the step returns none."""
    model, inputs, _ = models.build_mlp()
    make_opt = lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9)
    ref = copy.deepcopy(model).train()
    ref_opt = make_opt(ref.parameters())
    step = tcc.torch.compile_train_step(model, nn.MSELoss(), make_opt(model.parameters()),
                                        inputs["x"], grad_norm=True)
    for x, y in mlp_batches(3):
        ref_opt.zero_grad()
        nn.MSELoss()(ref(x), y).backward()
        want = float(nn.utils.clip_grad_norm_(ref.parameters(), float("inf")))
        ref_opt.step()
        step(x, y)
        assert step.session.metrics()["grad_norm"] == pytest.approx(want, rel=1e-6)
    step.close()
    plain = tcc.torch.compile_train_step(model, nn.MSELoss(), make_opt(model.parameters()),
                                         inputs["x"])
    assert "grad_norm" not in plain.session.metrics()
    plain.close()


def test_gpt_sgd_momentum():
    model, inputs, _ = models.build_gpt()
    idx = inputs["idx"]
    g = torch.Generator().manual_seed(11)
    batches = [(torch.randint(0, 64, idx.shape, generator=g),
                torch.randint(0, 64, idx.shape, generator=g)) for _ in range(3)]
    check(model, nn.CrossEntropyLoss(),
          lambda p: torch.optim.SGD(p, lr=0.5, momentum=0.9, weight_decay=0.01),
          (idx,), batches)


def test_optimizer_spec():
    p = [nn.Parameter(torch.zeros(2))]
    assert tcc.torch.optimizer_spec(torch.optim.AdamW(p, lr=1e-3)) == \
        "adamw:lr=0.001,beta1=0.9,beta2=0.999,eps=1e-08,weight_decay=0.01"
    assert tcc.torch.optimizer_spec(torch.optim.SGD(p, lr=0.1, nesterov=True,
                                                    momentum=0.9)) == \
        "sgd:lr=0.1,momentum=0.9,weight_decay=0,nesterov=1"
    with pytest.raises(tcc.TccError, match=r"AdamW\(amsgrad=True\) has no tcc equivalent"):
        tcc.torch.optimizer_spec(torch.optim.AdamW(p, amsgrad=True))
    with pytest.raises(tcc.TccError, match="RMSprop is not supported"):
        tcc.torch.optimizer_spec(torch.optim.RMSprop(p))
    with pytest.raises(tcc.TccError, match="label_smoothing"):
        tcc.torch.compile_train_step(nn.Linear(2, 2), nn.CrossEntropyLoss(label_smoothing=0.1),
                                     "sgd:lr=0.1", torch.zeros(1, 2))
