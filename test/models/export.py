#!/usr/bin/python3
"""Export a reference model to ONNX together with its inputs and outputs.

    /usr/bin/python3 test/models/export.py --model {mlp,gpt,bert,mlp_loss,bert_sce} --out DIR [--eval-mode]

writes
    DIR/model.onnx     opset 17, static shapes, parameters as named initializers
    DIR/inputs.npz     one array per ONNX graph input, named after it
    DIR/expected.npz   PyTorch's forward outputs (float32), named after the graph outputs
    DIR/onnxruntime.npz  with --onnxruntime: onnxruntime's outputs on DIR/model.onnx,
                       checked against PyTorch's (a second oracle for `tcc eval --expected`)

Output is byte-for-byte reproducible: the seed is fixed, PyTorch runs on one
thread, and the .npz archives carry a fixed timestamp (numpy's own savez
stamps the current time into the zip headers).
"""

import argparse
import io
import os
import sys
import zipfile

import numpy as np
import onnx
import torch
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import MODELS  # noqa: E402

# torch 1.13 exports up to opset 17, the first with LayerNormalization, so each
# nn.LayerNorm becomes one node instead of a ReduceMean/Sub/Pow/... chain.
OPSET = 17


def save_npz(path, arrays):
    """np.savez with a fixed zip timestamp; members in the dict's order."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name in arrays:
            buf = io.BytesIO()
            a = np.asarray(arrays[name])
            # ascontiguousarray would turn a 0-d array (a scalar loss) into 1-d.
            a = np.ascontiguousarray(a) if a.ndim else a
            np.lib.format.write_array(buf, a, allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def check_contract(onnx_path, model, input_names, output_names):
    """Assert what tcc relies on: graph inputs/outputs are exactly the names in
    the .npz files, and the initializers are exactly the model's trainable
    parameters, under their PyTorch names, with unchanged values."""
    onnx.checker.check_model(onnx_path)
    graph = onnx.load(onnx_path).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    graph_inputs = [i.name for i in graph.input if i.name not in inits]
    assert graph_inputs == input_names, (graph_inputs, input_names)
    assert [o.name for o in graph.output] == output_names
    # named_parameters() lists a tied parameter once, under its first name.
    # Persistent buffers (nanoGPT's mask) are initializers too, not trained.
    # The dynamo exporter may name a tied weight by its second name
    # (lm_head.weight for wte.weight): onnx_names maps them.
    params = {onnx_names(model, inits).get(n, n): p
              for n, p in model.named_parameters()}
    # Buffers, persistent or not (the dynamo exporter keeps both).
    buffers = {n for n, _ in model.named_buffers()} | \
        {n for n in model.state_dict() if n not in params}
    assert sorted(inits) == sorted(set(params) | (buffers & set(inits))), \
        (sorted(inits), sorted(params))
    for n, p in params.items():
        assert np.array_equal(inits[n], p.detach().numpy()), n


def onnx_names(model, initializer_names):
    """{parameter name: the state_dict alias the ONNX graph uses for it},
    for the parameters whose first name is not an initializer (a tied
    weight the dynamo exporter names after its second user)."""
    out = {}
    sd = model.state_dict(keep_vars=True)
    for n, p in model.named_parameters():
        if n in initializer_names:
            continue
        for alias, t in sd.items():
            if t is p and alias in initializer_names:
                out[n] = alias
                break
    return out


# --exporter: which of torch.onnx.export's exporters, as a user calls it for
# training. "torchscript" (the only one of Debian's torch 1.13) at opset 17;
# with current torch (the project's .venv): "torchscript-current"
# (dynamo=False at torch's default opset, 20 for torch 2.15), "dynamo" (the
# default exporter with optimize=False, which keeps every parameter an
# initializer under its own name) and "dynamo-optimized" (the defaults: its
# optimizer folds weight transposes into new `val_N` initializers),
# "dynamo-opset23" (optimize=False at opset 23, where
# scaled_dot_product_attention becomes ONNX's Attention op).
EXPORTERS = ["torchscript", "torchscript-current", "dynamo", "dynamo-optimized",
             "dynamo-opset23"]


def export_dynamo(model, args, onnx_path, input_names, output_names, optimize,
                  opset=None):
    """The dynamo-based exporter (torch >= 2.5): static shapes, initializers
    in MODEL.onnx.data as it writes them by default."""
    model.train()
    extra = {"opset_version": opset} if opset else {}
    torch.onnx.export(model, args, onnx_path, dynamo=True, optimize=optimize,
                      input_names=input_names, output_names=output_names, **extra)


def export_onnx(model, inputs, output_names, onnx_path, eval_mode=False,
                exporter="torchscript"):
    """torch.onnx.export with tcc's export contract, then check_contract.

    `inputs` is the ordered {graph input name: example tensor} dict of a
    MODELS builder; its shapes become the graph's static shapes. Also used by
    train_ref.py, so a training reference exports exactly the same graph.
    `eval_mode` exports as torch.onnx.export's default does (EVAL: parameters
    equal by value merged into Identity copies), which breaks the contract
    on purpose, so the contract is not checked then.
    """
    input_names = list(inputs)
    args = tuple(inputs[n] for n in input_names)
    if exporter.startswith("dynamo"):
        export_dynamo(model, args, onnx_path, input_names, output_names,
                      optimize=exporter == "dynamo-optimized",
                      opset=23 if exporter == "dynamo-opset23" else None)
        if exporter in ("dynamo", "dynamo-opset23"):
            check_contract(onnx_path, model, input_names, output_names)
        return
    # torch >= 2.9 defaults to the dynamo-based exporter.
    extra = {"dynamo": False} if int(torch.__version__.split(".")[0]) >= 2 else {}
    torch.onnx.export(
        model,
        args,
        onnx_path,
        export_params=True,
        keep_initializers_as_inputs=False,  # parameters are initializers only
        # Constant folding treats parameters as constants: it replaces
        # Transpose(W) by a new initializer "onnx::MatMul_N" holding W^T, folds
        # Gather(wpe.weight, arange) into an anonymous [T, C] slice, and gives
        # the tied lm_head its own copy of wte^T. Fine for inference, wrong for
        # training, so it stays off; the importer folds the remaining
        # Constant-only shape arithmetic itself.
        do_constant_folding=False,
        # EVAL mode would also deduplicate initializers *by value*, turning
        # e.g. every freshly initialised LayerNorm weight (all ones) into an
        # Identity of the first one. TRAINING mode dedups only tensors that
        # really are shared (the tied wte/lm_head weight). The models have no
        # dropout or batch norm, so the traced ops are the same in both modes.
        training=(torch.onnx.TrainingMode.EVAL if eval_mode
                  else torch.onnx.TrainingMode.TRAINING),
        **({} if exporter == "torchscript-current" else {"opset_version": OPSET}),
        input_names=input_names,
        output_names=output_names,
        # No dynamic_axes: tcc compiles for static shapes.
        **extra,
    )
    if not eval_mode:
        check_contract(onnx_path, model, input_names, output_names)


def export_eval_mode(model, inputs, output_names, onnx_path):
    """torch.onnx.export's defaults (eval mode, constant folding): what a
    user who skips the export contract gets, and what tcc warns about."""
    torch.onnx.export(model, tuple(inputs.values()), onnx_path,
                      opset_version=OPSET, input_names=list(inputs),
                      output_names=output_names)


def batch_norm_buffers(model):
    """The batch norms' running statistics and step counters by name."""
    return {n: b for n, b in model.named_buffers()
            if n.rsplit(".", 1)[-1] in ("running_mean", "running_var", "num_batches_tracked")}


def sync_batch_norm_buffers(model, onnx_path):
    """Sets the batch norms' buffers to the ONNX file's values: a forward
    pass in training mode (the builders' example run, an exporter's trace)
    moves them, and the exporters drop the unused step counter, which tcc
    then starts at 0."""
    inits = {t.name: t for t in onnx.load(onnx_path).graph.initializer}
    with torch.no_grad():
        for n, b in batch_norm_buffers(model).items():
            if n in inits:
                b.copy_(torch.from_numpy(numpy_helper.to_array(inits[n]).copy()))
            elif n.endswith("num_batches_tracked"):
                b.zero_()


def onnxruntime_outputs(onnx_path, inputs, output_names):
    """The model's outputs computed by onnxruntime (CPU), a second oracle."""
    import onnxruntime
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # not its constant-folding warnings
    sess = onnxruntime.InferenceSession(onnx_path, options, providers=["CPUExecutionProvider"])
    outs = sess.run(output_names, {n: t.numpy() for n, t in inputs.items()})
    return dict(zip(output_names, outs))


def export(name, out_dir, eval_mode=False, exporter="torchscript", ort=False):
    torch.set_num_threads(1)  # fixed reduction order -> identical expected.npz
    model, inputs, output_names = MODELS[name]()
    input_names = list(inputs)
    args = tuple(inputs[n] for n in input_names)

    with torch.no_grad():
        outputs = model(*args)
    os.makedirs(out_dir, exist_ok=True)
    onnx_path = os.path.join(out_dir, "model.onnx")
    if eval_mode:
        export_eval_mode(model, inputs, output_names, onnx_path)
    else:
        export_onnx(model, inputs, output_names, onnx_path, exporter=exporter)
    if exporter.startswith("dynamo") and batch_norm_buffers(model):
        # The dynamo exporter writes every BatchNormalization in inference
        # mode (onnxscript's torch_lib sets training=False), whatever the
        # module's mode: the graph computes model.eval()'s forward, on the
        # running statistics the file holds.
        sync_batch_norm_buffers(model, onnx_path)
        with torch.no_grad():
            outputs = model.eval()(*args)
    if isinstance(outputs, torch.Tensor):
        outputs = (outputs,)

    expected = {n: t.detach().float().numpy() for n, t in zip(output_names, outputs)}
    save_npz(os.path.join(out_dir, "inputs.npz"),
             {n: t.numpy() for n, t in inputs.items()})
    save_npz(os.path.join(out_dir, "expected.npz"), expected)
    if ort:
        got = onnxruntime_outputs(onnx_path, inputs, output_names)
        for n in output_names:
            err = np.abs(got[n] - expected[n]).max() / np.abs(expected[n]).max()
            print("onnxruntime vs PyTorch: %s max error / max|ref| %.2e" % (n, err))
            assert err <= 1e-5, n
        save_npz(os.path.join(out_dir, "onnxruntime.npz"), got)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=sorted(MODELS))
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--eval-mode", action="store_true",
                   help="export with torch.onnx.export's defaults (eval mode, "
                        "constant folding) instead of the export contract")
    p.add_argument("--exporter", default="torchscript", choices=EXPORTERS,
                   help="which torch.onnx.export path (see EXPORTERS)")
    p.add_argument("--onnxruntime", action="store_true",
                   help="also run model.onnx with onnxruntime, check it against "
                        "PyTorch (1e-5 of max|ref|) and write DIR/onnxruntime.npz")
    a = p.parse_args()
    export(a.model, a.out, a.eval_mode, a.exporter, a.onnxruntime)


if __name__ == "__main__":
    main()
