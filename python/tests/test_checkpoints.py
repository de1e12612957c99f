"""Session state and checkpoints are the CLI's: what `tcc run` trains and
saves, Python trains and saves, and each resumes the other's checkpoints."""

import subprocess

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

import tcc
from conftest import bin_path

B, STEPS = 4, 4


@pytest.fixture
def setup(mlp, tmp_path):
    """(artifact, data.npz path, the batches in the order tcc run reads them)."""
    model, x = mlp
    artifact = tcc.compile(model, {"x": x}, loss="mse(output,target)",
                           optimizer="adamw:lr=0.01", out=tmp_path / "mlp.tcc")
    g = torch.Generator().manual_seed(3)
    data = {"x": torch.randn(B * STEPS, 16, generator=g).numpy(),
            "target": torch.randn(B * STEPS, 8, generator=g).numpy()}
    np.savez(tmp_path / "data.npz", **data)
    batches = [{n: a[i * B:(i + 1) * B] for n, a in data.items()} for i in range(STEPS)]
    return artifact, tmp_path / "data.npz", batches


def cli_run(binary, artifact, data, steps, ckpt, *extra):
    subprocess.run([bin_path(binary), "run" if binary == "tcc" else artifact.path,
                    *([artifact.path] if binary == "tcc" else []),
                    "--data", str(data), "--steps", str(steps),
                    "--checkpoint-dir", str(ckpt), *extra],
                   check=True, capture_output=True)


def assert_state_equals_checkpoint(session, step_dir):
    params = load_file(f"{step_dir}/params.safetensors")
    assert sorted(params) == sorted(session.params)
    for name, value in session.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), params[name], err_msg=name)
    opt = load_file(f"{step_dir}/optimizer.safetensors")
    got = session.optimizer_state()
    assert sorted(opt) == sorted(got)
    for name in opt:
        np.testing.assert_array_equal(got[name], opt[name], err_msg=name)


def test_state_dict_equals_tcc_run(setup, tmp_path):
    artifact, data, batches = setup
    cli_run("tcc", artifact, data, STEPS, tmp_path / "cli")
    with tcc.Session(artifact) as s:
        for b in batches:
            s.step(b)
        assert_state_equals_checkpoint(s, tmp_path / "cli" / f"step-{STEPS}")


def test_python_checkpoint_resumes_in_tcc_run(setup, tmp_path):
    artifact, data, batches = setup
    cli_run("tcc", artifact, data, STEPS, tmp_path / "whole")
    with tcc.Session(artifact) as s:
        for b in batches[:2]:
            s.step(b)
        path = s.save_checkpoint(tmp_path / "py", data_position=2 * B)
    assert path.endswith("step-2")
    cli_run("tcc-run", artifact, data, STEPS, tmp_path / "py", "--resume")
    whole = load_file(f"{tmp_path}/whole/step-{STEPS}/params.safetensors")
    resumed = load_file(f"{tmp_path}/py/step-{STEPS}/params.safetensors")
    for name in whole:
        np.testing.assert_array_equal(resumed[name], whole[name], err_msg=name)


def test_tcc_run_checkpoint_restores_in_python(setup, tmp_path):
    artifact, data, batches = setup
    cli_run("tcc-run", artifact, data, 2, tmp_path / "cli")
    with tcc.Session(artifact) as s:
        assert s.restore_checkpoint(tmp_path / "cli").endswith("step-2")
        assert s.steps_done == 2
        for b in batches[2:]:
            s.step(b)
        cli_run("tcc", artifact, data, STEPS, tmp_path / "whole")
        assert_state_equals_checkpoint(s, tmp_path / "whole" / f"step-{STEPS}")


def test_checkpoint_of_another_model_is_refused(setup, mlp, tmp_path):
    artifact, _, batches = setup
    model, x = mlp
    sgd = tcc.compile(model, {"x": x}, loss="mse(output,target)",
                      optimizer="sgd:lr=0.1", out=tmp_path / "sgd.tcc")
    with tcc.Session(artifact) as s:
        s.step(batches[0])
        s.save_checkpoint(tmp_path / "adamw")
    with tcc.Session(sgd) as s, pytest.raises(tcc.TccError, match="configuration") as e:
        s.restore_checkpoint(tmp_path / "adamw")
    assert e.value.status == "checkpoint of another model or configuration"


def test_load_state_dict_then_step_equals_tcc_run(mlp, tmp_path):
    """Parameters loaded from a tcc-run checkpoint (SGD: no optimizer state)
    and stepped in Python end where the uninterrupted CLI run ends."""
    model, x = mlp
    artifact = tcc.compile(model, {"x": x}, loss="mse(output,target)",
                           optimizer="sgd:lr=0.1", out=tmp_path / "sgd.tcc")
    g = torch.Generator().manual_seed(4)
    data = {"x": torch.randn(B * STEPS, 16, generator=g).numpy(),
            "target": torch.randn(B * STEPS, 8, generator=g).numpy()}
    np.savez(tmp_path / "data.npz", **data)
    cli_run("tcc-run", artifact, tmp_path / "data.npz", 2, tmp_path / "two")
    cli_run("tcc-run", artifact, tmp_path / "data.npz", STEPS, tmp_path / "all")
    with tcc.Session(artifact) as s:
        s.load_state_dict(load_file(f"{tmp_path}/two/step-2/params.safetensors"))
        for i in range(2, STEPS):
            s.step({n: a[i * B:(i + 1) * B] for n, a in data.items()})
        end = load_file(f"{tmp_path}/all/step-{STEPS}/params.safetensors")
        for name, value in s.state_dict().items():
            np.testing.assert_array_equal(value.numpy(), end[name], err_msg=name)

