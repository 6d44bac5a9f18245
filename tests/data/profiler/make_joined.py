"""Makes joined_cudnn.log and joined_trace.json (tests/test_torch_profiler_join.py): one run
of a small conv net's training step on an NVIDIA GPU, logged by cuDNN and traced by
torch.profiler at once (a warm-up step, then one traced step).  Made 2026-11-26 on an H100
with PyTorch 2.11.0+cu130, cuDNN 9.19.0, both then ``gzip -9``:

    CUDNN_LOGLEVEL_DBG=3 CUDNN_LOGDEST_DBG=OUTDIR/joined_cudnn.log python make_joined.py OUTDIR
"""

import os
import sys

import torch
from torch import nn

out = sys.argv[1] if len(sys.argv) > 1 else "."
torch.manual_seed(0)
net = nn.Sequential(
    nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True), nn.MaxPool2d(2),
    nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
    nn.Conv2d(64, 64, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
    nn.Conv2d(64, 128, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(128), nn.ReLU(inplace=True),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 10),
).cuda()
opt = torch.optim.SGD(net.parameters(), lr=0.01)
x = torch.randn(8, 3, 64, 64, device="cuda")


def step():
    opt.zero_grad()
    loss = net(x).square().mean()
    loss.backward()
    opt.step()


step()   # warm-up outside the trace (plans built); the log holds it too
torch.cuda.synchronize()
acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
with torch.profiler.profile(activities=acts, record_shapes=True) as prof:
    step()
    torch.cuda.synchronize()
prof.export_chrome_trace(os.path.join(out, "joined_trace.json"))
print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version(), torch.cuda.get_device_name())
