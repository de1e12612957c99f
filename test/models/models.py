"""Tiny PyTorch reference models for tcc's end-to-end tests.

Each model is exported to ONNX by export.py; tcc imports the ONNX file and must
reproduce PyTorch's forward outputs (and, in later milestones, its gradients).
Sizes are kept tiny so the whole suite runs in seconds on a CPU.

Module attribute names are chosen on purpose: they become the ONNX initializer
names (`wte.weight`, `h.0.ln_1.weight`, ...), which in turn are the parameter
names in tcc's checkpoints.

The models have no dropout or batch norm: export.py traces them in
TrainingMode.TRAINING (for reasons given there), which must not change what
they compute.

Run with Debian's system python (/usr/bin/python3): it ships torch 1.13 + onnx.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 0


def _perturb_layernorms(model, gen):
    """Give every LayerNorm a non-trivial affine (gamma != 1, beta != 0).

    PyTorch initialises gamma=1, beta=0, under which an importer that drops or
    swaps the affine parameters would still match the reference exactly.
    """
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(1.0 + 0.1 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
            elif type(m).__name__.endswith("RMSNorm"):  # transformers' (Llama's, Gemma's, ...)
                m.weight.add_(0.1 * torch.randn(m.weight.shape, generator=gen))


# --------------------------------------------------------------------------- MLP


class MLP(nn.Module):
    def __init__(self, d_in=16, d_hidden=32, d_out=8):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.ln = nn.LayerNorm(d_hidden)
        self.act = nn.GELU()  # exact (erf) GELU
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x):
        return self.fc2(self.act(self.ln(self.fc1(x))))


# ------------------------------------------------------------------ Activations


def _build_plain(cls, x_shape):
    """`cls()` from SEED, in eval mode (no dropout or batch norm to switch),
    with one input `x` ~ N(0, 1) of `x_shape` and one output `y`."""
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = cls()
    inputs = {"x": torch.randn(*x_shape, generator=gen)}
    return model.eval(), inputs, ["y"]


class Activations(nn.Module):
    """Every activation the exporters write as an ONNX op of its own
    (LeakyRelu, Elu, Selu, Celu, PRelu, Softplus, Softsign, Mish,
    HardSigmoid, HardSwish), chained through Linear layers. `wide` scales
    one Softplus and one ELU input so both sides of their thresholds (x > 20,
    x > 0) are reached."""

    def __init__(self, d_in=12, d=24, d_out=6):
        super().__init__()
        self.fc1 = nn.Linear(d_in, d)
        self.fc2 = nn.Linear(d, d)
        self.fc3 = nn.Linear(d, d)
        self.prelu = nn.PReLU(d, init=0.2)
        self.fc4 = nn.Linear(d, d)
        self.out = nn.Linear(d, d_out)
        self.wide = 30.0

    def forward(self, x):
        h = F.leaky_relu(self.fc1(x), 0.1)
        h = F.elu(self.fc2(h), alpha=0.7) + F.elu(self.wide * h)
        h = F.selu(self.fc3(h)) + F.celu(h, alpha=1.3)
        h = self.prelu(h)
        h = F.softplus(h) + F.softplus(self.wide * h) / self.wide + F.softsign(h) + F.mish(h)
        h = F.hardswish(self.fc4(h)) + F.hardsigmoid(3.0 * h)
        return self.out(h)


def build_acts():
    return _build_plain(Activations, (4, 12))


class EinsumNet(nn.Module):
    """torch.einsum in the forms ordinary code writes: a linear layer
    (bi,oi->bo), batched scores (bhd,bkd->bhk), an ellipsis (...hd,de->...he),
    a contraction over two labels to a vector (bhe,bhe->b), three operands
    (bi,ij,jk->bk) and an implicit output (bi,ij)."""

    def __init__(self, d_in=12, d_out=5):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(16, d_in) / d_in ** 0.5)
        self.w3 = nn.Parameter(torch.randn(8, 8) / 8 ** 0.5)
        self.w4 = nn.Parameter(torch.randn(d_in, 6) / d_in ** 0.5)
        self.w5 = nn.Parameter(torch.randn(6, 4) / 6 ** 0.5)
        self.fc = nn.Linear(16 + 4 + 1 + 4 + 6, d_out)

    def forward(self, x):
        B = x.shape[0]
        h = torch.tanh(torch.einsum("bi,oi->bo", x, self.w1)).view(B, 2, 8)
        s = torch.einsum("bhd,bkd->bhk", h, h)
        h2 = torch.einsum("...hd,de->...he", h, self.w3)
        t = torch.einsum("bhe,bhe->b", h2, h2)
        u = torch.einsum("bi,ij,jk->bk", x, self.w4, self.w5)
        v = torch.einsum("bi,ij", x, self.w4)
        return self.fc(torch.cat([h2.flatten(1), s.flatten(1), t[:, None], u, v], 1))


def build_einsum():
    return _build_plain(EinsumNet, (4, 12))


class CumSumNet(nn.Module):
    """torch.cumsum and torch.gather on values computed at run time:
    position ids counted from a mask made of the input (int64, the way
    transformers counts positions from an attention mask) and read through
    an embedding, running sums of activations along a middle and the last
    axis, and activations gathered at indices made of those positions
    (ONNX GatherElements; their gradients flow back through fc1)."""

    def __init__(self, d_in=12, d=8, d_out=5):
        super().__init__()
        self.fc1 = nn.Linear(d_in, 2 * d)
        self.pos = nn.Embedding(d_in + 1, d_out)
        self.fc = nn.Linear(5 * d, d_out)

    def forward(self, x):
        B = x.shape[0]
        h = torch.tanh(self.fc1(x))
        a = h.view(B, 2, -1).cumsum(dim=1).flatten(1)
        c = torch.cumsum(h, dim=-1) / 4.0
        pos = (x > 0).long().cumsum(-1)
        g = torch.gather(h.view(B, 2, -1), 2, pos[:, :8].clamp(max=7).view(B, 2, 4))
        return self.fc(torch.cat([a, c, g.flatten(1)], 1)) + self.pos(pos).sum(1)


def build_cumsum():
    return _build_plain(CumSumNet, (4, 12))


class SliceAssignNet(nn.Module):
    """In-place slice and index assignment on activations, as ordinary code
    writes it (exported as ONNX ScatterND at constant indices): a block of
    columns replaced by a function of itself, a column set to a constant,
    and every second row of a 3-D view overwritten by another tensor; the
    gradients reach fc1 through the kept and the written parts."""

    def __init__(self, d_in=12, d=8, d_out=5):
        super().__init__()
        self.fc1 = nn.Linear(d_in, 2 * d)
        self.fc2 = nn.Linear(2 * d, 2 * d)
        self.fc = nn.Linear(2 * d, d_out)

    def forward(self, x):
        B = x.shape[0]
        h = torch.tanh(self.fc1(x))
        y = h.clone()
        y[:, 2:6] = torch.sigmoid(h[:, 2:6]) * 2.0
        y[:, 0] = 0.5
        z = y.view(B, 4, -1).clone()
        z[:, ::2] = self.fc2(h).view(B, 4, -1)[:, 1::2]
        return self.fc(z.flatten(1))


def build_slice_assign():
    return _build_plain(SliceAssignNet, (4, 12))


class StatsNet(nn.Module):
    """Statistics as ordinary code writes them: a hand-written
    standardisation with torch.std, torch.var, F.normalize, masked_fill and a
    max over a dim (the dynamo exporter counts var's elements with a
    ReduceProd of the shape)."""

    def __init__(self, d_in=16, d_out=4):
        super().__init__()
        self.lin = nn.Linear(d_in, d_in)
        self.out = nn.Linear(d_in, d_out)

    def forward(self, x):
        h = self.lin(x)
        h = (h - h.mean(-1, keepdim=True)) / (h.std(-1, keepdim=True) + 1e-5)
        h = h.masked_fill(h > 1.5, 1.5)
        h = F.normalize(h, dim=-1) * h.var(-1, keepdim=True).sqrt()
        return self.out(h + h.max(dim=-1, keepdim=True).values)


def build_stats():
    return _build_plain(StatsNet, (4, 16))


# ---------------------------------------------------------------------- TinyGPT


class GPTConfig:
    vocab_size = 64
    block_size = 16
    n_layer = 2
    n_head = 2
    n_embd = 32
    # How attention builds its causal mask: "constant" (a non-persistent
    # buffer the exporter bakes into a Constant), "buffer" (nanoGPT's own
    # persistent buffer `bias`, exported as an initializer) or "tril"
    # (torch.tril(torch.ones(T, T, dtype=torch.bool)) computed in forward).
    mask = "constant"


class CausalSelfAttention(nn.Module):
    """nanoGPT's attention, written out op by op (no SDPA) so the exported
    graph has the plain MatMul/Mul/Where/Softmax/MatMul pattern tcc fuses."""

    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.n_embd = cfg.n_embd
        # A Python int, not derived from x.size(): under tracing that would be a
        # tensor and the scale would be baked in with a TracerWarning.
        self.head_dim = cfg.n_embd // cfg.n_head
        self.c_attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.c_proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        bs = cfg.block_size
        self.mask = cfg.mask
        if cfg.mask == "constant":
            # Non-persistent: not in state_dict, so the ONNX tracer bakes it
            # in as a Constant node instead of an initializer.
            self.register_buffer(
                "causal_mask", torch.tril(torch.ones(bs, bs)).view(1, 1, bs, bs),
                persistent=False,
            )
        elif cfg.mask == "buffer":
            # nanoGPT's: an initializer of the export that tcc must not train.
            self.register_buffer(
                "bias", torch.tril(torch.ones(bs, bs)).view(1, 1, bs, bs))

    def forward(self, x):
        B, T, C = x.size()
        hd = self.head_dim
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q = q.view(B, T, self.n_head, hd).transpose(1, 2)  # (B, nh, T, hd)
        k = k.view(B, T, self.n_head, hd).transpose(1, 2)
        v = v.view(B, T, self.n_head, hd).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hd))
        if self.mask == "constant":
            att = att.masked_fill(self.causal_mask[:, :, :T, :T] == 0, float("-inf"))
        elif self.mask == "buffer":
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        else:
            causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
            att = att.masked_fill(~causal, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v  # (B, nh, T, hd)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = nn.Linear(cfg.n_embd, 4 * cfg.n_embd)
        self.gelu = nn.GELU(approximate="tanh")  # GPT-2's GELU
        self.c_proj = nn.Linear(4 * cfg.n_embd, cfg.n_embd)

    def forward(self, x):
        return self.c_proj(self.gelu(self.c_fc(x)))


class GPTBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg.n_embd)
        self.attn = CausalSelfAttention(cfg)
        self.ln_2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = GPTMLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class TinyGPT(nn.Module):
    """GPT-2-style pre-LN decoder with lm_head tied to the token embedding.

    Submodules sit at the top level (not under `transformer.`) so initializer
    names are short: wte.weight, wpe.weight, h.0.attn.c_attn.weight, ...
    """

    def __init__(self, cfg=GPTConfig()):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.h = nn.ModuleList([GPTBlock(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)
        # Weight tying as in GPT-2: one Parameter object used twice. Its
        # gradient is the sum of the embedding and the lm_head contributions.
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


# --------------------------------------------------------------------- TinyBERT


class BertConfig:
    vocab_size = 64
    max_position = 16
    n_layer = 2
    n_head = 2
    hidden = 32
    intermediate = 64
    layer_norm_eps = 1e-12  # BERT's value, unlike PyTorch's default 1e-5


class BertSelfAttention(nn.Module):
    """Separate q/k/v projections (unlike the GPT's fused c_attn) and a
    Div by sqrt(hd) (unlike the GPT's Mul), so both spellings get exercised."""

    def __init__(self, cfg):
        super().__init__()
        self.n_head = cfg.n_head
        self.head_dim = cfg.hidden // cfg.n_head  # Python int: see CausalSelfAttention
        self.query = nn.Linear(cfg.hidden, cfg.hidden)
        self.key = nn.Linear(cfg.hidden, cfg.hidden)
        self.value = nn.Linear(cfg.hidden, cfg.hidden)
        self.output = nn.Linear(cfg.hidden, cfg.hidden)

    def forward(self, x, ext_mask):
        B, T, C = x.size()
        hd = self.head_dim

        def heads(t):
            return t.view(B, T, self.n_head, hd).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        scores = scores + ext_mask  # (B, 1, 1, T) broadcast over heads and queries
        probs = F.softmax(scores, dim=-1)
        y = (probs @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.output(y)


class BertLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.attn = BertSelfAttention(cfg)
        self.ln_attn = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.fc1 = nn.Linear(cfg.hidden, cfg.intermediate)
        self.act = nn.GELU()  # exact (erf) GELU, as BERT
        self.fc2 = nn.Linear(cfg.intermediate, cfg.hidden)
        self.ln_ffn = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)

    def forward(self, x, ext_mask):
        # Post-LN: the residual sum is normalised, not the sublayer input.
        x = self.ln_attn(x + self.attn(x, ext_mask))
        x = self.ln_ffn(x + self.fc2(self.act(self.fc1(x))))
        return x


class TinyBERT(nn.Module):
    """BERT-style post-LN encoder with key-padding mask and an MLM-style head."""

    def __init__(self, cfg=BertConfig()):
        super().__init__()
        self.cfg = cfg
        self.word_embeddings = nn.Embedding(cfg.vocab_size, cfg.hidden)
        self.position_embeddings = nn.Embedding(cfg.max_position, cfg.hidden)
        self.emb_ln = nn.LayerNorm(cfg.hidden, eps=cfg.layer_norm_eps)
        self.layer = nn.ModuleList([BertLayer(cfg) for _ in range(cfg.n_layer)])
        self.head = nn.Linear(cfg.hidden, cfg.vocab_size)

    def forward(self, input_ids, attention_mask):
        B, T = input_ids.size()
        pos = torch.arange(0, T, dtype=torch.long, device=input_ids.device)
        x = self.emb_ln(self.word_embeddings(input_ids) + self.position_embeddings(pos))
        # HF's extended attention mask: 0 where attended, -10000 at padded keys.
        # A finite value (not -inf) keeps fully padded rows free of NaNs.
        ext_mask = (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        for layer in self.layer:
            x = layer(x, ext_mask)
        return self.head(x)


# ------------------------------------------------------------------ registry


def build_mlp():
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = MLP()
    _perturb_layernorms(model, gen)
    inputs = {"x": torch.randn(4, 16, generator=gen)}
    return model.eval(), inputs, ["y"]


def build_gpt(mask="constant"):
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    cfg = GPTConfig()
    cfg.mask = mask
    model = TinyGPT(cfg)
    _perturb_layernorms(model, gen)
    B, T = 2, 8  # T < block_size, so the mask slice [:T, :T] is a real slice
    idx = torch.randint(0, model.cfg.vocab_size, (B, T), generator=gen)
    return model.eval(), {"idx": idx}, ["logits"]


def build_bert():
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = TinyBERT()
    _perturb_layernorms(model, gen)
    B, T = 2, 8
    input_ids = torch.randint(1, model.cfg.vocab_size, (B, T), generator=gen)
    # Row 0 is full; row 1 has its last 3 tokens padded (id 0, mask 0).
    attention_mask = torch.ones(B, T, dtype=torch.long)
    attention_mask[1, 5:] = 0
    input_ids[attention_mask == 0] = 0
    return model.eval(), {"input_ids": input_ids, "attention_mask": attention_mask}, ["logits"]


class SmallCNN(nn.Module):
    """conv -> BN -> relu -> maxpool -> conv -> BN -> relu -> global avg pool
    -> flatten -> linear, on 3x16x16 images (CIFAR-like, 10 classes). The
    convolutions have no bias, as in torchvision's ResNets: batch norm
    subtracts any per-channel shift, so a bias's gradient would be rounding
    noise that AdamW scales up to full steps of either sign."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def _perturb_batchnorms(model, gen):
    """A non-trivial BN affine, so a dropped or swapped one shows, and
    running statistics away from 0 and 1, so eval mode differs from
    normalising with none."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(1 + 0.1 * torch.randn(m.weight.shape, generator=gen))
                m.bias.copy_(0.1 * torch.randn(m.bias.shape, generator=gen))
                m.running_mean.copy_(0.1 * torch.randn(m.running_mean.shape, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(m.running_var.shape, generator=gen))


def build_cnn():
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = SmallCNN()
    _perturb_batchnorms(model, gen)
    inputs = {"x": torch.randn(4, 3, 16, 16, generator=gen)}
    # Training mode: batch norm normalises with the batch's statistics, as
    # the TRAINING export does.
    return model.train(), inputs, ["logits"]


class NormNet(nn.Module):
    """conv -> GroupNorm -> SiLU -> conv -> InstanceNorm2d(affine) -> ReLU ->
    flatten -> linear, on 3x8x8 images (not a global average pool: the mean
    of an instance-normalised map is its bias, so the weights before it
    would get rounding noise as gradients). The exporters write
    GroupNorm as InstanceNormalization on a [N, groups, rest] view below
    opset 21 and as GroupNormalization from it."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.gn = nn.GroupNorm(4, 8)
        # No bias: instance norm cancels a per-channel shift, so its gradient
        # would be rounding noise (AdamW scales noise up to lr-sized steps).
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.fc = nn.Linear(8 * 8 * 8, 10)

    def forward(self, x):
        h = F.silu(self.gn(self.conv1(x)))
        h = F.relu(self.inorm(self.conv2(h)))
        return self.fc(h.flatten(1))


def build_norms():
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = NormNet()
    with torch.no_grad():  # affines away from 1 and 0, so a dropped one shows
        for m in (model.gn, model.inorm):
            m.weight.copy_(1 + 0.5 * torch.randn(m.weight.shape, generator=gen))
            m.bias.copy_(0.5 * torch.randn(m.bias.shape, generator=gen))
    inputs = {"x": torch.randn(4, 3, 8, 8, generator=gen)}
    return model.train(), inputs, ["logits"]


class DeconvNet(nn.Module):
    """A decoder's upsampling path: ConvTranspose2d with stride 2, padding 1
    and output_padding 1, a grouped and dilated one, and a ConvTranspose1d,
    on 4x4 maps, then a linear head (mse)."""

    def __init__(self):
        super().__init__()
        self.up1 = nn.ConvTranspose2d(3, 6, 3, stride=2, padding=1, output_padding=1)
        self.up2 = nn.ConvTranspose2d(6, 4, 2, stride=1, groups=2, dilation=2)
        self.up3 = nn.ConvTranspose1d(4, 2, 3, stride=3)
        self.fc = nn.Linear(2 * 180, 8)

    def forward(self, x):
        h = torch.tanh(self.up1(x))          # [N, 6, 8, 8]
        h = torch.tanh(self.up2(h))          # [N, 4, 10, 10]
        h = self.up3(h.flatten(2)[:, :, :60])  # [N, 2, 180]
        return self.fc(h.flatten(1))


def build_deconv():
    return _build_plain(DeconvNet, (4, 3, 4, 4))


class RNNNet(nn.Module):
    """Recurrent layers as sequence models stack them: a 2-layer
    bidirectional LSTM, a GRU and an Elman RNN, all batch_first, then a
    linear head per time step (cross-entropy over the steps)."""

    def __init__(self, d_in=8, classes=20):
        super().__init__()
        self.lstm = nn.LSTM(d_in, 6, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(12, 5, batch_first=True)
        self.rnn = nn.RNN(5, 4, batch_first=True)
        self.head = nn.Linear(4, classes)

    def forward(self, x):
        h = self.lstm(x)[0]
        h = self.gru(h)[0]
        h = self.rnn(h)[0]
        return self.head(h)


def build_rnn():
    return _build_plain(RNNNet, (3, 5, 8))


def build_resnet18():
    """torchvision's ResNet-18 (11.2M parameters, 20 batch norms) with 10
    classes, on 2 images of 3x64x64, in training mode. Not 32x32: there
    layer4's maps are 1x1, and batch norms over 2 values a channel make
    float32 training too ill-conditioned to compare (resnet18.test)."""
    import torchvision
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = torchvision.models.resnet18(num_classes=10)
    _perturb_batchnorms(model, gen)
    inputs = {"x": torch.randn(2, 3, 64, 64, generator=gen)}
    return model.train(), inputs, ["logits"]


def _torchvision(name):
    """torchvision's `name` with 10 classes in eval mode (batch norms with
    perturbed affines and running statistics), on 2 images of 3x64x64."""
    def build():
        import torchvision
        torch.manual_seed(SEED)
        gen = torch.Generator().manual_seed(SEED + 1)
        model = getattr(torchvision.models, name)(num_classes=10)
        _perturb_batchnorms(model, gen)
        _perturb_layernorms(model, gen)
        return model.eval(), {"x": torch.randn(2, 3, 64, 64, generator=gen)}, ["logits"]
    return build


# Depthwise and grouped convolutions, hardswish and squeeze-excitation
# (MobileNetV3), channel shuffles (ShuffleNetV2), SiLU and stochastic depth
# (EfficientNet), shifted windows with their masks built by slice
# assignment (Swin: ScatterND of constants) and channels-last LayerNorms.
TORCHVISION = {"tv_" + n: _torchvision(n) for n in
               ("mobilenet_v3_small", "shufflenet_v2_x0_5", "efficientnet_b0", "swin_t")}


# ------------------------------------------------- variants that output a loss
#
# For `tcc train --loss loss`: the graph itself ends in a scalar loss. Same
# modules, parameter names and initial weights as the base models (the builders
# below draw exactly what build_mlp/build_bert draw, then draw the extra inputs
# from the same generator), so e.g. `mlp_loss` after training can be compared
# tensor by tensor with `mlp` trained under `--loss 'mse(y,target)'`.


class MLPLoss(MLP):
    """MLP whose graph ends in the mean squared error: forward(x, target) -> loss.

    Written out because torch 1.13 cannot export aten::mse_loss; the graph gets
    Sub, Mul(d, d), ReduceMean(keepdims=0) over all elements, which computes
    what F.mse_loss(y, target) (reduction="mean") computes.
    """

    def forward(self, x, target):
        d = super().forward(x) - target
        return torch.mean(d * d)


class TinyBERTSCE(TinyBERT):
    """TinyBERT whose graph ends in F.cross_entropy(ignore_index=-100, mean),
    which torch 1.13 exports at opset 17 as one
    SoftmaxCrossEntropyLoss(reduction="mean", ignore_index=-100) node."""

    def forward(self, input_ids, attention_mask, labels):
        logits = super().forward(input_ids, attention_mask)
        V = logits.size(-1)
        return F.cross_entropy(logits.view(-1, V), labels.view(-1), ignore_index=-100)


def mlm_labels(input_ids, attention_mask, gen, p=0.15):
    """MLM-style labels: -100 (ignored) except at ~p of the attended positions,
    where the label is the token id; every row gets at least one label."""
    labels = torch.full_like(input_ids, -100)
    pick = (torch.rand(input_ids.shape, generator=gen) < p) & (attention_mask != 0)
    first = torch.randint(0, 1 << 30, (input_ids.size(0),), generator=gen)
    for r in range(input_ids.size(0)):
        if not bool(pick[r].any()):
            n = int(attention_mask[r].sum())
            pick[r, int(first[r]) % n] = True
    labels[pick] = input_ids[pick]
    return labels


def build_mlp_loss():
    base, inputs, _ = build_mlp()  # leaves torch's global RNG as build_mlp does
    model = MLPLoss()
    model.load_state_dict(base.state_dict())
    gen = torch.Generator().manual_seed(SEED + 2)
    inputs["target"] = torch.randn(4, 8, generator=gen)
    return model.eval(), inputs, ["loss"]


def build_bert_sce():
    base, inputs, _ = build_bert()
    model = TinyBERTSCE()
    model.load_state_dict(base.state_dict())
    gen = torch.Generator().manual_seed(SEED + 2)
    inputs["labels"] = mlm_labels(inputs["input_ids"], inputs["attention_mask"], gen)
    return model.eval(), inputs, ["loss"]


class UpsampleNet(nn.Module):
    """F.interpolate as decoders and FPNs use it, between convolutions:
    nearest x2 (asymmetric, floor), bilinear to a size of non-integer ratio
    (half-pixel), bilinear x0.5 with align_corners. (1-D linear the dynamo
    exporter writes as index arithmetic and a GatherND of run-time data,
    which tcc does not import.)"""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 4 * 3, 5)

    def forward(self, x):
        x = F.interpolate(torch.tanh(self.conv1(x)), scale_factor=2, mode="nearest")
        x = F.interpolate(torch.tanh(self.conv2(x)), size=(9, 7), mode="bilinear",
                          align_corners=False)
        x = F.interpolate(x, scale_factor=0.5, mode="bilinear", align_corners=True)
        return self.fc(x.flatten(1))  # [B, 4, 4, 3]


def build_upsample():
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    model = UpsampleNet()
    inputs = {"x": torch.randn(2, 3, 6, 5, generator=gen)}
    return model.eval(), inputs, ["logits"]


# name -> builder returning (model in eval mode, ordered {input name: tensor},
# [output names]). Input order is the forward() argument order.
# ------------------------------------------- Hugging Face transformers models
#
# Built from small configs with random weights (no download), as an ordinary
# user's code builds them; transformers needs the project's venv. Dropout is
# 0 so PyTorch's training and tcc's agree step by step. The wrappers return
# the logits tensor (HF models return output objects).

class HFLogits(nn.Module):
    def __init__(self, model, names):
        super().__init__()
        self.m = model
        self.names = names

    def forward(self, *args):
        kw = dict(zip(self.names, args))
        if "input_ids" in kw and (hasattr(self.m.config, "n_layer")
                                  or self.m.config.model_type == "opt"):
            kw["use_cache"] = False
        return self.m(**kw).logits


def build_hf_gpt2(padded=False):
    """GPT2LMHeadModel; `padded`: on a right-padded batch, with its
    attention_mask as a second input."""
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    cfg = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=4,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=0, eos_token_id=0)
    names = ["input_ids", "attention_mask"] if padded else ["input_ids"]
    model = HFLogits(GPT2LMHeadModel(cfg), names)
    _perturb_layernorms(model, gen)
    if not padded:
        input_ids = torch.randint(0, cfg.vocab_size, (2, 8), generator=gen)
        return model.eval(), {"input_ids": input_ids}, ["logits"]
    input_ids = torch.randint(1, cfg.vocab_size, (2, 8), generator=gen)
    attention_mask = torch.ones(2, 8, dtype=torch.long)
    attention_mask[1, 5:] = 0
    input_ids[attention_mask == 0] = 0
    return model.eval(), {"input_ids": input_ids, "attention_mask": attention_mask}, ["logits"]


def build_hf_opt():
    """OPTForCausalLM on a right-padded batch with its attention_mask: OPT
    counts its learned positions from the mask at run time
    (cumsum(attention_mask) * attention_mask - 1, plus its offset of 2)."""
    return _hf_padded_decoder("OPTConfig", "OPTForCausalLM", hidden_size=32,
                              num_hidden_layers=2, ffn_dim=64, num_attention_heads=4,
                              max_position_embeddings=16, word_embed_proj_dim=32,
                              dropout=0.0, attention_dropout=0.0, layerdrop=0.0,
                              bos_token_id=0, eos_token_id=0)


def _hf_classifier(config_cls, model_cls, first_id, pad_padding):
    """A small HF sequence classifier (3 labels) on a batch of 2 x 8 whose
    second row is padding from position 5; `first_id` is the smallest
    token id drawn, and `pad_padding` writes the pad token id there."""
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    cfg = config_cls(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=64,
                     max_position_embeddings=16, hidden_dropout_prob=0.0,
                     attention_probs_dropout_prob=0.0, num_labels=3)
    model = HFLogits(model_cls(cfg), ["input_ids", "attention_mask"])
    _perturb_layernorms(model, gen)
    input_ids = torch.randint(first_id, cfg.vocab_size, (2, 8), generator=gen)
    attention_mask = torch.ones(2, 8, dtype=torch.long)
    attention_mask[1, 5:] = 0
    if pad_padding:
        input_ids[attention_mask == 0] = cfg.pad_token_id
    return model.eval(), {"input_ids": input_ids, "attention_mask": attention_mask}, ["logits"]


def build_hf_bert():
    from transformers import BertConfig, BertForSequenceClassification
    return _hf_classifier(BertConfig, BertForSequenceClassification, 1, False)


def build_hf_roberta():
    """RobertaForSequenceClassification on a right-padded batch: RoBERTa
    counts its positions from the non-padding input ids at run time
    (CumSum) and reads its token_type_ids buffer at them (GatherElements)."""
    from transformers import RobertaConfig, RobertaForSequenceClassification
    return _hf_classifier(RobertaConfig, RobertaForSequenceClassification, 2, True)


def _hf_padded_decoder(config_name, model_name, **config):
    """A small HF decoder (vocab 64, pad token 0) on a right-padded batch of
    2 x 8 with its attention_mask (row 2 padding from position 5), as
    AutoModelForCausalLM / AutoModelForSequenceClassification code builds
    it. The causal LMs below cover what today's decoders share beyond GPT-2
    and OPT (rotary positions, RMSNorm, grouped-query attention, parallel
    attention/MLP blocks, ALiBi); the sequence classifiers find each row's
    last real token at run time (argmax(arange * (input_ids != pad))) and
    read its logits there (logits[arange(B), last]: GatherND of run-time
    indices)."""
    import transformers
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    cfg = getattr(transformers, config_name)(vocab_size=64, pad_token_id=0, **config)
    model = HFLogits(getattr(transformers, model_name)(cfg), ["input_ids", "attention_mask"])
    _perturb_layernorms(model, gen)
    input_ids = torch.randint(1, cfg.vocab_size, (2, 8), generator=gen)
    attention_mask = torch.ones(2, 8, dtype=torch.long)
    attention_mask[1, 5:] = 0
    input_ids[attention_mask == 0] = 0
    return model.eval(), {"input_ids": input_ids, "attention_mask": attention_mask}, ["logits"]


_DECODER = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                intermediate_size=64, max_position_embeddings=16)
HF_DECODERS = {
    "hf_qwen2": lambda: _hf_padded_decoder("Qwen2Config", "Qwen2ForCausalLM",
                                      num_key_value_heads=2, **_DECODER),
    "hf_mistral": lambda: _hf_padded_decoder("MistralConfig", "MistralForCausalLM",
                                        num_key_value_heads=2, **_DECODER),
    "hf_gemma": lambda: _hf_padded_decoder("GemmaConfig", "GemmaForCausalLM",
                                      num_key_value_heads=2, head_dim=8, **_DECODER),
    "hf_phi": lambda: _hf_padded_decoder("PhiConfig", "PhiForCausalLM", resid_pdrop=0.0,
                                    embd_pdrop=0.0, attention_dropout=0.0, **_DECODER),
    "hf_neox": lambda: _hf_padded_decoder("GPTNeoXConfig", "GPTNeoXForCausalLM",
                                     hidden_dropout=0.0, attention_dropout=0.0, **_DECODER),
    "hf_bloom": lambda: _hf_padded_decoder("BloomConfig", "BloomForCausalLM", hidden_size=32,
                                      n_layer=2, n_head=4, hidden_dropout=0.0,
                                      attention_dropout=0.0),
    "hf_gpt2_cls": lambda: _hf_padded_decoder(
        "GPT2Config", "GPT2ForSequenceClassification", num_labels=3, n_embd=32,
        n_layer=2, n_head=4, n_positions=16, resid_pdrop=0.0, embd_pdrop=0.0,
        attn_pdrop=0.0),
    # Grouped-query attention (4 query heads over 2 key/value heads).
    "hf_llama_cls": lambda: _hf_padded_decoder(
        "LlamaConfig", "LlamaForSequenceClassification", num_labels=3,
        num_key_value_heads=2, **_DECODER),
}


def build_hf_vit():
    """ViTForImageClassification on 16x16 RGB images in 4x4 patches (16
    patches and the CLS token), 5 classes."""
    from transformers import ViTConfig, ViTForImageClassification
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    cfg = ViTConfig(image_size=16, patch_size=4, num_channels=3, hidden_size=32,
                    num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=64, hidden_dropout_prob=0.0,
                    attention_probs_dropout_prob=0.0, num_labels=5)
    model = HFLogits(ViTForImageClassification(cfg), ["pixel_values"])
    _perturb_layernorms(model, gen)
    pixel_values = torch.randn(2, 3, 16, 16, generator=gen)
    return model.eval(), {"pixel_values": pixel_values}, ["logits"]


MODELS = {
    "hf_gpt2": build_hf_gpt2,
    "hf_bert": build_hf_bert,
    "hf_vit": build_hf_vit,
    "upsample": build_upsample,
    "hf_gpt2_padded": lambda: build_hf_gpt2(padded=True),
    "hf_opt_padded": build_hf_opt,
    "hf_roberta": build_hf_roberta,
    **HF_DECODERS,
    "mlp": build_mlp,
    "acts": build_acts,
    "norms": build_norms,
    "einsum": build_einsum,
    "cumsum": build_cumsum,
    "slice_assign": build_slice_assign,
    "stats": build_stats,
    "deconv": build_deconv,
    "rnn": build_rnn,
    "gpt": build_gpt,
    "gpt_buffer": lambda: build_gpt(mask="buffer"),
    "gpt_tril": lambda: build_gpt(mask="tril"),
    "bert": build_bert,
    "mlp_loss": build_mlp_loss,
    "bert_sce": build_bert_sce,
    "cnn": build_cnn,
    "resnet18": build_resnet18,
    **TORCHVISION,
}
