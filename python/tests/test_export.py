"""tcc export: a checkpoint's weights as ONNX (run by onnxruntime), safetensors
and .pt, and back into the PyTorch module."""

import subprocess

import numpy as np
import onnxruntime as ort
import pytest
import torch

import tcc
import tcc.torch
from conftest import bin_path, models


@pytest.fixture(scope="module")
def trained_gpt(tmp_path_factory):
    """The tiny GPT (lm_head tied to wte) trained 3 SGD steps in a Session,
    checkpointed: (model, idx, artifact, checkpoint dir)."""
    tmp = tmp_path_factory.mktemp("gpt")
    model, inputs, _ = models.build_gpt()
    idx = inputs["idx"]
    artifact = tcc.compile(model, {"idx": idx}, loss="cross_entropy(output,labels)",
                           optimizer="sgd:lr=0.5,momentum=0.9", out=tmp / "gpt.tcc")
    g = torch.Generator().manual_seed(5)
    with tcc.Session(artifact) as s:
        for _ in range(3):
            s.step({"idx": torch.randint(0, 64, idx.shape, generator=g),
                    "labels": torch.randint(0, 64, idx.shape, generator=g)})
        s.save_checkpoint(tmp / "ckpt")
    return model, idx, artifact, tmp / "ckpt"


def tcc_export(*args):
    return subprocess.run([bin_path("tcc"), "export", *map(str, args)],
                          capture_output=True, text=True)


def test_onnx_export_runs_in_onnxruntime(trained_gpt, tmp_path):
    model, idx, artifact, ckpt = trained_gpt
    r = tcc_export(ckpt, "--to", tmp_path / "trained.onnx", "--model", artifact.source)
    assert r.returncode == 0, r.stderr
    ort_logits, = ort.InferenceSession(str(tmp_path / "trained.onnx")).run(
        None, {"idx": idx.numpy()})
    # tcc's own forward pass with the trained weights.
    infer = tcc.compile(artifact.source, out=tmp_path / "infer.tcc")
    with tcc.Session(infer) as f, tcc.Session(artifact) as s:
        s.restore_checkpoint(ckpt)
        f.load_state_dict(s.state_dict())
        logits = f.forward({"idx": idx})["output"]
    np.testing.assert_allclose(ort_logits, logits, rtol=1e-4, atol=1e-5)
    # ... and not the untrained model's.
    assert not np.allclose(logits, model(idx).detach().numpy(), atol=1e-3)


@pytest.mark.parametrize("ext", [".safetensors", ".pt"])
def test_state_dict_files_load_into_the_module(trained_gpt, tmp_path, ext):
    model, idx, artifact, ckpt = trained_gpt
    out = tmp_path / ("weights" + ext)
    r = tcc_export(ckpt, "--to", out)
    assert r.returncode == 0, r.stderr
    if ext == ".pt":
        sd = torch.load(out)
    else:
        from safetensors.torch import load_file
        sd = load_file(out)
    with tcc.Session(artifact) as s:
        s.restore_checkpoint(ckpt)
        expected = s.state_dict()
    assert sorted(sd) == sorted(expected)
    for name in sd:
        assert torch.equal(sd[name], expected[name]), name
    trained = models.build_gpt()[0]
    tcc.torch.load_into(trained, sd)
    assert torch.equal(trained.lm_head.weight, trained.wte.weight)  # still tied
    for name, p in trained.named_parameters():
        key = name if name in sd else "lm_head.weight"  # the tied weight's ONNX name
        assert torch.equal(p, sd[key]), name


def test_export_errors(trained_gpt, tmp_path):
    _, _, artifact, ckpt = trained_gpt
    r = tcc_export(ckpt, "--to", tmp_path / "x.onnx")
    assert r.returncode == 1
    assert r.stderr == ("tcc: export: export to .onnx needs the model the artifact "
                        "was compiled from (--model MODEL.onnx; the checkpoint does "
                        "not hold the graph)\n")
    r = tcc_export(ckpt, "--to", tmp_path / "x.bin")
    assert r.returncode == 1
    assert "the extension must be one of .onnx, .safetensors, .pt" in r.stderr
    r = tcc_export(tmp_path / "none", "--to", tmp_path / "x.pt")
    assert r.returncode == 1
    assert r.stderr.startswith("tcc: export: ") and "no checkpoint there" in r.stderr
    mlp = tcc.compile(models.build_mlp()[0], (models.build_mlp()[1]["x"],),
                      out=tmp_path / "mlp.tcc")
    r = tcc_export(ckpt, "--to", tmp_path / "x.onnx", "--model", mlp.source)
    assert r.returncode == 1
    assert "has no initializer" in r.stderr and "not the model it was trained from" \
        in r.stderr
