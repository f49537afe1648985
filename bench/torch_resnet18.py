#!/usr/bin/env python3
"""The model of bench/pytorch.ts: a ResNet-18-shaped classifier written out
here (torchvision is not installed), random weights, eval mode, scripted.

  python3 bench/torch_resnet18.py save <dir>
      writes <dir>/1/model.pt (TorchScript) for the bench's repository
  python3 bench/torch_resnet18.py run <model.pt> <threads> <batch> <seconds>
      in-process torch on the same file: torch.set_num_threads(threads), then
      forward() on FP32 [batch, 3, 224, 224] (the same inference mode the
      server's backend uses) for <seconds> after a warm-up; prints JSON
      {"images_per_s": ..., "ms_per_batch": ...}
"""
import json
import os
import sys
import time

import torch
from torch import nn


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.down is None else self.down(x)
        return torch.relu(y + skip)


class ResNet18(nn.Module):
    def __init__(self, classes=1000):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        layers = []
        cin = 64
        for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
            cin = cout
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(512, classes)

    def forward(self, INPUT__0):
        x = self.layers(self.stem(INPUT__0))
        return self.fc(torch.flatten(torch.mean(x, dim=(2, 3), keepdim=True), 1))


def save(out):
    torch.manual_seed(18)
    os.makedirs(os.path.join(out, "1"), exist_ok=True)
    torch.jit.script(ResNet18().eval()).save(os.path.join(out, "1", "model.pt"))


def run(path, threads, batch, seconds):
    torch.set_num_threads(threads)
    model = torch.jit.load(path)
    x = torch.rand(batch, 3, 224, 224)
    with torch.inference_mode():
        for _ in range(3):  # the profiling executor optimizes over the first runs
            model.forward(x)
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            model.forward(x)
            n += 1
        dt = time.perf_counter() - t0
    print(json.dumps({"images_per_s": n * batch / dt, "ms_per_batch": 1000 * dt / n}))


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save(sys.argv[2])
    else:
        run(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
