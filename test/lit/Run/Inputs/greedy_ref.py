#!/usr/bin/python3
"""PyTorch's greedy decoding of test/models' TinyGPT with a tcc checkpoint's
parameters, as nanoGPT's generate does it with temperature -> 0: the context
cropped to the last T tokens, the argmax of the logits at its last position.

    greedy_ref.py STEP_DIR T N PROMPT   (PROMPT: comma-separated token ids)

Prints the prompt and the N new tokens, comma-separated.

    greedy_ref.py --logits STEP_DIR IN.npz TCC_OUT.npz

Compares the logits `tcc run GEN.tcc --inputs IN.npz --outputs TCC_OUT.npz
--checkpoint STEP_DIR` wrote with PyTorch's (rtol 1e-4, atol 1e-5); prints
"logits ok" or exits 1.
"""

import os
import sys

import numpy as np
import torch

models_dir = os.path.join(os.path.dirname(__file__), "..", "..", "..", "models")
sys.path.insert(0, models_dir)
import models  # noqa: E402
import safetensors_np  # noqa: E402

logits_mode = sys.argv[1] == "--logits"
args = sys.argv[2:] if logits_mode else sys.argv[1:]
step_dir = args[0]
model, _, _ = models.build_gpt()
params, _ = safetensors_np.read(os.path.join(step_dir, "params.safetensors"))
state = {k: torch.from_numpy(np.array(v)) for k, v in params.items()}
missing, unexpected = model.load_state_dict(state, strict=False)
assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
assert model.lm_head.weight is model.wte.weight
if logits_mode:
    idx = np.load(args[1])["idx"]
    got = np.load(args[2])["logits"]
    with torch.no_grad():
        want = model(torch.from_numpy(idx)).numpy()
    err = np.abs(got - want) - (1e-5 + 1e-4 * np.abs(want))
    if want.shape != got.shape or (err > 0).any():
        print("logits differ: max abs err %g" % np.abs(got - want).max())
        sys.exit(1)
    print("logits ok")
    sys.exit(0)
T, N, prompt = int(args[1]), int(args[2]), args[3]
tokens = [int(t) for t in prompt.split(",")]
with torch.no_grad():
    for _ in range(N):
        ctx = torch.tensor([tokens[-T:]])
        tokens.append(int(torch.argmax(model(ctx)[0, -1])))
print(",".join(map(str, tokens)))
