#!/usr/bin/python3
"""PyTorch's greedy decoding of test/models' TinyGPT with a tcc checkpoint's
parameters, as nanoGPT's generate does it with temperature -> 0: the context
cropped to the last T tokens, the argmax of the logits at its last position.

    greedy_ref.py STEP_DIR T N PROMPT   (PROMPT: comma-separated token ids)

Prints the prompt and the N new tokens, comma-separated.
"""

import os
import sys

import numpy as np
import torch

models_dir = os.path.join(os.path.dirname(__file__), "..", "..", "..", "models")
sys.path.insert(0, models_dir)
import models  # noqa: E402
import safetensors_np  # noqa: E402

step_dir, T, N, prompt = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
model, _, _ = models.build_gpt()
params, _ = safetensors_np.read(os.path.join(step_dir, "params.safetensors"))
state = {k: torch.from_numpy(np.array(v)) for k, v in params.items()}
missing, unexpected = model.load_state_dict(state, strict=False)
assert not unexpected and set(missing) <= {"lm_head.weight"}, (missing, unexpected)
assert model.lm_head.weight is model.wte.weight
tokens = [int(t) for t in prompt.split(",")]
with torch.no_grad():
    for _ in range(N):
        ctx = torch.tensor([tokens[-T:]])
        tokens.append(int(torch.argmax(model(ctx)[0, -1])))
print(",".join(map(str, tokens)))
