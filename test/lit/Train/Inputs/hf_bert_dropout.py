"""Writes OUT/model.onnx, Hugging Face's BertForSequenceClassification
(test/models' hf_bert config) with hidden-state dropout 0.1, exported in
training mode by the dynamo exporter so that its Dropout nodes stay, and
OUT/data.npz: 6 right-padded batches of 2 (input_ids, attention_mask,
labels). Deterministic. For pad-skipping's dropout: the packed step must
draw the masks the unpacked one draws."""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "models"))
from export import export_onnx  # noqa: E402
from transformers import BertConfig, BertForSequenceClassification  # noqa: E402
import models  # noqa: E402

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
torch.manual_seed(0)
cfg = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                 intermediate_size=64, max_position_embeddings=16, hidden_dropout_prob=0.1,
                 attention_probs_dropout_prob=0.0, num_labels=3)
model = models.HFLogits(BertForSequenceClassification(cfg), ["input_ids", "attention_mask"])
example = {"input_ids": torch.ones(2, 8, dtype=torch.long),
           "attention_mask": torch.ones(2, 8, dtype=torch.long)}
export_onnx(model.train(), example, ["logits"], os.path.join(out, "model.onnx"),
            exporter="dynamo")
rng = np.random.default_rng(3)
lengths = np.array([8, 3, 5, 8, 1, 6, 2, 7, 8, 8, 4, 5])
mask = (np.arange(8)[None, :] < lengths[:, None]).astype(np.int64)
ids = rng.integers(1, 64, (12, 8)) * mask
labels = rng.integers(0, 3, 12)
np.savez(os.path.join(out, "data.npz"), input_ids=ids, attention_mask=mask, labels=labels)
