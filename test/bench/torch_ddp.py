"""One rank of the benchmark's data-parallel PyTorch baseline (gpt_bench.py
--ranks N): launched as `mpirun -np N python torch_ddp.py JOB.json`, each
rank trains the GPT wrapped in DistributedDataParallel (gloo on the CPU,
NCCL on GPUs, one per rank by its local rank) on its block of --batch rows
of the global batch, the rows tcc-run's rank of the same number reads.
Rank 0 writes JOB.json's "out": the step seconds and the global mean loss
of each step."""
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_model  # noqa: E402
import torch_side  # noqa: E402


class Args:
    def __init__(self, d):
        self.__dict__.update(d)


def main():
    job = json.load(open(sys.argv[1]))
    a, c, kind = Args(job["args"]), job["config"], job["kind"]
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK", "0")))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", os.environ.get("WORLD_SIZE", "1")))
    local = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", os.environ.get("LOCAL_RANK", "0")))
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(job["port"]))
    if a.device == "cuda":
        torch.cuda.set_device(local)
        dev = torch.device("cuda", local)
    else:
        torch.set_num_threads(job["threads"])
        dev = torch.device("cpu")
    dist.init_process_group("nccl" if a.device == "cuda" else "gloo", rank=rank,
                            world_size=world)
    torch_side.setup_precision(a)
    model = gpt_model.build(c, a.seed, attention=a.torch_attention).to(dev)
    model.train()
    ddp = DDP(model, device_ids=[local] if a.device == "cuda" else None)
    opt, impl = torch_side.make_optimizer(a, ddp)
    fwd = ddp
    note = "DDP (%s), AdamW %s, attention %s" % (
        "nccl" if a.device == "cuda" else "gloo", impl, a.torch_attention)
    if kind == "compile":
        fwd = torch.compile(ddp, mode=a.compile_mode) if a.compile_mode else torch.compile(ddp)
        note += ", torch.compile mode=%s" % (a.compile_mode or "default")
    if kind == "eager-ftz":
        torch.set_flush_denormal(True)
    if a.precision == "bf16":
        note += ", autocast bf16"
    tok = gpt_model.read_tokens(job["tokens"])
    g = gpt_model.global_batch(c, world)
    b = c["batch"]
    n = min(a.warmup + a.steps, (len(tok) - 1) // (g["batch"] * g["seq"]))
    batches = []
    for i in range(n):
        x, y = gpt_model.batch(tok, g, i)
        batches.append((torch.from_numpy(x[rank * b:(rank + 1) * b]).to(dev),
                        torch.from_numpy(y[rank * b:(rank + 1) * b]).to(dev)))
    times, losses = [], []
    for i in range(a.warmup + a.steps):
        xb, yb = batches[i % len(batches)]
        torch_side.sync(a)
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        with torch_side.autocast(a):
            logits = fwd(xb)
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), yb.reshape(-1))
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)  # waits for the step, as .item() does alone
        losses.append(mean.item() / world)
        times.append(time.perf_counter() - t0)
    if rank == 0:
        with open(job["out"], "w") as f:
            json.dump(dict(seconds=times, loss=losses, note=note), f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
