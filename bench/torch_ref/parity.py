"""PyTorch's side of the step-by-step comparison with Grid (bench/gpu_parity.sh).

Loads the start that `gpt_parity` wrote (Grid's initial weights, linear weights stored
[in, out], and each step's batch) into the reference GPT of gpt.py, trains it `--steps` steps
(one batch each) with the
same loss, clip (global norm 1.0) and AdamW (constant lr, betas 0.9/0.95, eps 1e-8, weight
decay 0.1 on matrices), in f32 or in bf16 autocast, and writes the trace as JSON in the shape of
grid_trainer::parity::Trace: every step's loss and gradient norm, and each parameter's gradient
norm at the first step under Grid's name. `--perturb E` multiplies every initial weight by
(1 + E x N(0, 1)) first (seeded): how far a run drifts from such a tiny change measures how much
the trajectory amplifies rounding, the yardstick for the differences between implementations.
"""

import argparse
import contextlib
import json
import math

import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from gpt import Gpt


def torch_name(grid_name):
    """The reference module's parameter for one of Grid's, and whether it is transposed."""
    name = grid_name.replace(".attn.", ".").replace(".mlp.proj.", ".mlp_proj.").replace(".mlp.fc.", ".fc.")
    transposed = name.endswith(".weight") and not name.startswith(("tok_emb", "pos_emb"))
    return name, transposed


def main():
    p = argparse.ArgumentParser()
    for name in ["layers", "heads", "width", "context", "vocab", "steps"]:
        p.add_argument(f"--{name}", type=int, required=True)
    p.add_argument("--start", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--precision", choices=["f32", "bf16"], required=True)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--perturb", type=float, default=0.0)
    p.add_argument("--device", default="cuda")
    a = p.parse_args()
    # Strict f32 products, as Candle's cuBLAS calls.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    device = torch.device(a.device)
    tensors = load_file(a.start)
    inputs = tensors.pop("batch.inputs").long().to(device)
    targets = tensors.pop("batch.targets").long().to(device)
    model = Gpt(a.vocab, a.context, a.layers, a.heads, a.width)
    state, grid_of = {}, {}
    for grid_name, t in tensors.items():
        name, transposed = torch_name(grid_name)
        state[name] = t.t().contiguous() if transposed and t.dim() == 2 else t
        grid_of[name] = grid_name
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing != ["mask"] or unexpected:
        raise SystemExit(f"start does not fit the reference: missing {missing}, unexpected {unexpected}")
    if a.perturb:
        gen = torch.Generator().manual_seed(1)
        with torch.no_grad():
            for p in model.parameters():
                p.mul_(1 + a.perturb * torch.randn(p.shape, generator=gen))
    model.to(device)
    params = dict(model.named_parameters())
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.95), eps=1e-8)

    def autocast():
        if a.precision == "bf16":
            return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    losses, norms, first = [], [], {}
    for step in range(a.steps):
        with autocast():
            logits = model(inputs[step])
            loss = F.cross_entropy(logits.view(-1, a.vocab).float(), targets[step].reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if step == 0:
            first = {grid_of[n]: p.grad.double().norm().item() for n, p in params.items()}
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        norms.append(norm.item())
        if not math.isfinite(losses[-1]):
            break
    with open(a.out, "w") as f:
        json.dump({"implementation": "pytorch", "precision": a.precision, "losses": losses,
                   "grad_norms": norms, "first_grad_norms": first}, f)


if __name__ == "__main__":
    main()
