"""PyTorch eager reference of grid-trainer's GPT training step, for bench/step_throughput.sh.

The same model as trainer/src/model/gpt.rs (token + position embeddings, pre-norm blocks of
causal self-attention written out with an explicit mask and softmax, a 4x tanh-GELU MLP, biases
everywhere except the untied head, final layer norm), the same loss (mean cross-entropy), the
same gradient clipping (global norm 1.0) and the same AdamW (betas 0.9/0.95, eps 1e-8, weight
decay 0.1 on matrices only). Prints one JSON line like the Candle binary.

With `--compile 1` the model runs through `torch.compile`. With `--device cuda` it runs on the GPU in bf16 autocast (f32 master weights and AdamW state,
layer norm, softmax and the loss in f32), the counterpart of the Candle trainer's GPU mode, for
bench/gpu_step.sh.
"""

import argparse
import contextlib
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.mlp_proj = nn.Linear(4 * width, width)

    def attention(self, x, mask):
        b, t, w = x.shape
        h, d = self.heads, w // self.heads
        q, k, v = self.qkv(x).view(b, t, 3, h, d).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d)) + mask
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).reshape(b, t, w))

    def forward(self, x, mask):
        x = x + self.attention(self.ln1(x), mask)
        return x + self.mlp_proj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class Gpt(nn.Module):
    def __init__(self, vocab, context, layers, heads, width):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, width)
        self.pos_emb = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        mask = torch.full((context, context), -1e9).triu(1)
        self.register_buffer("mask", mask)
        for p in self.parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok_emb(ids) + self.pos_emb.weight[:t]
        mask = self.mask[:t, :t]
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x))


def main():
    p = argparse.ArgumentParser()
    for name, default in [("layers", 4), ("heads", 4), ("width", 128), ("context", 64),
                          ("vocab", 256), ("batch", 12), ("steps", 30), ("warmup", 5),
                          ("threads", 2), ("compile", 0)]:
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    device = torch.device(a.device)
    model = Gpt(a.vocab, a.context, a.layers, a.heads, a.width).to(device)
    params = sum(p.numel() for p in model.parameters())
    # torch.compile of the model (forward and its backward); the optimizer stays eager.
    forward_model = torch.compile(model) if a.compile else model
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-3, betas=(0.9, 0.95), eps=1e-8)
    x = torch.randint(0, a.vocab, (a.batch, a.context), device=device)
    y = torch.randint(0, a.vocab, (a.batch, a.context), device=device)
    gpu = device.type == "cuda"

    def autocast():
        if gpu:
            return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def step():
        with autocast():
            logits = forward_model(x)
            loss = F.cross_entropy(logits.view(-1, a.vocab).float(), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    times = []
    loss = 0.0
    for _ in range(a.steps):
        start = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - start) * 1e3)
    def sync():
        if gpu:
            torch.cuda.synchronize()

    def timed(f, runs=5):
        out = []
        for _ in range(runs):
            start = time.perf_counter()
            f()
            sync()
            out.append((time.perf_counter() - start) * 1e3)
        return statistics.median(out)

    def forward():
        with autocast():
            return F.cross_entropy(forward_model(x).view(-1, a.vocab).float(), y.view(-1))

    fwd = timed(lambda: forward().item())
    fwd_bwd = timed(lambda: forward().backward())
    opt.zero_grad(set_to_none=True)
    print(json.dumps({"impl": "pytorch-compiled" if a.compile else "pytorch", "version": torch.__version__, "params": params,
                      "threads": torch.get_num_threads(), "device": a.device,
                      "precision": "Bf16" if gpu else "F32", "batch": a.batch, "context": a.context,
                      "median_ms": round(statistics.median(times), 2),
                      "mean_ms": round(statistics.fmean(times), 2), "forward_ms": round(fwd, 2),
                      "backward_ms": round(fwd_bwd - fwd, 2), "final_loss": round(loss, 4)}))


if __name__ == "__main__":
    main()
