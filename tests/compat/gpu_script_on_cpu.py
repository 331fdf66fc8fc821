"""The first lines of a GPU training script, and a few of its steps, on a machine without
a GPU: the preamble of nanoGPT's train.py, of pytorch/examples' word_language_model and
of the transformer tutorials (tf32 and cuDNN switches, the device picked from what is
available, `import torch.onnx` for an optional export, a GradScaler and an autocast
context), a transformer block built on `torch.nn.modules.activation.MultiheadAttention`,
an einsum under CPU autocast, and five AdamW steps.

Random values: torch's generator, seeded (torch.manual_seed(0)): the layers' default
initialisation, the data (torch.randn, torch.randint).
"""
import warnings
from contextlib import nullcontext

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.onnx
from torch.nn.modules.activation import MultiheadAttention
from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

torch.backends.cuda.matmul.allow_tf32 = True  # allow tf32 on matmul
torch.backends.cudnn.allow_tf32 = True  # allow tf32 on cudnn
torch.backends.cudnn.benchmark = True
torch.backends.cudnn.deterministic = False
print("matmul tf32", torch.backends.cuda.matmul.allow_tf32,
      "cudnn benchmark", torch.backends.cudnn.benchmark)
torch.backends.cuda.matmul.allow_tf32 = False

if torch.cuda.is_available():
    device = "cuda"
elif torch.backends.mps.is_available():
    device = "mps"
else:
    device = "cpu"
device_type = "cuda" if "cuda" in device else "cpu"
print("device", device, "cudnn available", torch.backends.cudnn.is_available(),
      "mps built", torch.backends.mps.is_built())

# nanoGPT: a scaler for float16 on the GPU; on a CPU-only machine PyTorch disables it
# with a warning, and scaler.scale(loss) hands the loss back.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    scaler = torch.cuda.amp.GradScaler(enabled=True)
ctx = nullcontext() if device_type == "cpu" else torch.amp.autocast(device_type=device_type,
                                                                     dtype=torch.float16)


class Block(nn.Module):
    def __init__(self, d_model, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = MultiheadAttention(d_model, n_head, batch_first=True)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x, mask):
        h = self.ln_1(x)
        a, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        x = x + a
        return x + self.mlp(self.ln_2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d_model=16, n_head=2, block_size=8):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(block_size, d_model)
        self.block = Block(d_model, n_head)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=idx.device), diagonal=1)
        x = self.tok(idx) + self.pos(torch.arange(t, device=idx.device))
        logits = self.head(self.block(x, mask))
        loss = None if targets is None else F.cross_entropy(logits.view(-1, logits.size(-1)),
                                                            targets.view(-1))
        return logits, loss


torch.manual_seed(0)
model = TinyLM(vocab=11).to(device)
out_proj = model.block.attn.out_proj
print("out_proj", type(out_proj).__name__, isinstance(out_proj, NonDynamicallyQuantizableLinear),
      isinstance(out_proj, nn.Linear))
print("parameters", sum(p.numel() for p in model.parameters()))
x = torch.randint(0, 11, (4, 8), device=device)
y = torch.randint(0, 11, (4, 8), device=device)
print("on", x.device.type, "is_cuda", x.is_cuda, "is_mps", x.is_mps, "is_xpu", x.is_xpu,
      "is_meta", x.is_meta)

optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
for step in range(5):
    with ctx:
        logits, loss = model(x, y)
    scaler.scale(loss).backward()
    scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
    optimizer.zero_grad(set_to_none=True)
    print(f"step {step} loss {loss.item():.4f}")

# Attention scores by einsum inside a CPU autocast region: the contraction runs in bfloat16.
q = torch.randn(2, 3, 4)
k = torch.randn(2, 5, 4)
with torch.autocast("cpu", dtype=torch.bfloat16):
    scores = torch.einsum("bqd,bkd->bqk", q, k)
    outer = torch.einsum("i,j->ij", q[0, 0], k[0, 0])
print("einsum", scores.dtype, tuple(scores.shape), f"{scores.float().sum().item():.2f}",
      "outer", outer.dtype)

export_onnx = False
if export_onnx or torch.onnx.is_in_onnx_export():
    torch.onnx.export(model, (x,), "tiny_lm.onnx")
print("exporting", torch.onnx.is_in_onnx_export())
