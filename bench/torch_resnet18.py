#!/usr/bin/env python3
"""torch_mlu benchmark: torchvision resnet18 on the simulated MLU vs the same model on the CPU.

Figures (all measured in this one run, reported as ratios; nothing here is asserted):
  - host seconds per batch-1 224x224 inference on the simulated device / on the CPU
    (the simulator's slowdown), functional and timing-only;
  - simulated milliseconds per inference (what the modelled chip would take);
  - driver mallocs (cnrtMalloc) per training step after warm-up (the caching allocator's job: 0).

Run from a build tree:
  MLUSIM_CONFIG_DIR=configs .venv/bin/python bench/torch_resnet18.py \
      [--config mlu370-x4] [--iterations 3] [--image 224] [--train-image 64]
"""

import argparse
import time

import torch
import torch.nn.functional as F
import torch_mlu
import torchvision


def timed(fn, iterations):
    fn()  # warm-up: first-use costs (allocator segments, handles, queues) are not the figure
    start = time.perf_counter()
    for _ in range(iterations):
        fn()
    return (time.perf_counter() - start) / iterations


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default="mlu370-x4", help="hardware preset or YAML path (default mlu370-x4)")
    ap.add_argument("--iterations", type=int, default=3, help="timed iterations per figure (default 3)")
    ap.add_argument("--image", type=int, default=224, help="inference image size (default 224)")
    ap.add_argument("--train-image", type=int, default=64, help="training-step image size (default 64)")
    args = ap.parse_args()
    if args.iterations < 1:
        ap.error("--iterations must be >= 1")

    torch_mlu.load_config(args.config)
    dev = torch.device("mlu", 0)
    torch.manual_seed(0)
    cpu_model = torchvision.models.resnet18().eval()
    dev_model = torchvision.models.resnet18().eval()
    dev_model.load_state_dict(cpu_model.state_dict())
    dev_model.to(dev)
    x_cpu = torch.randn(1, 3, args.image, args.image)
    x_dev = x_cpu.to(dev)

    def infer_cpu():
        with torch.no_grad():
            cpu_model(x_cpu)

    def infer_dev():
        with torch.no_grad():
            dev_model(x_dev)
        torch_mlu.synchronize()

    cpu_s = timed(infer_cpu, args.iterations)
    torch_mlu.synchronize()
    torch_mlu.reset_stats()
    dev_s = timed(infer_dev, args.iterations)
    sim_ms = dict(torch_mlu.device_stats())["elapsed_ns"] / 1e6 / (args.iterations + 1)
    torch_mlu.set_timing_only(True)
    dev_timing_s = timed(infer_dev, args.iterations)
    torch_mlu.set_timing_only(False)

    print(f"resnet18 batch 1, {args.image}x{args.image}, fp32, config {torch_mlu.config_name()}")
    print(f"  CPU forward                      {cpu_s * 1e3:10.1f} ms host")
    print(f"  simulated device forward         {dev_s * 1e3:10.1f} ms host   ratio {dev_s / cpu_s:8.1f}x CPU")
    print(f"  simulated device, timing-only    {dev_timing_s * 1e3:10.1f} ms host   ratio {dev_timing_s / cpu_s:8.1f}x CPU")
    print(f"  simulated time per inference     {sim_ms:10.3f} ms (device)")

    # Training: forward + backward + SGD step; driver mallocs per step once the cache is warm.
    train_model = torchvision.models.resnet18().train().to(dev)
    opt = torch.optim.SGD(train_model.parameters(), lr=0.01, momentum=0.9)
    xt = torch.randn(2, 3, args.train_image, args.train_image).to(dev)
    yt = torch.tensor([1, 2]).to(dev)

    def step():
        opt.zero_grad()
        F.cross_entropy(train_model(xt), yt).backward()
        opt.step()
        torch_mlu.synchronize()

    step()
    step()
    before = torch_mlu.memory_stats()["num_device_alloc"]
    step_s = timed(step, args.iterations)
    after = torch_mlu.memory_stats()["num_device_alloc"]
    print(f"resnet18 training step, batch 2, {args.train_image}x{args.train_image}")
    print(f"  host time per step               {step_s * 1e3:10.1f} ms host")
    print(f"  driver mallocs per step (warm)   {(after - before) / (args.iterations + 1):10.2f}")


if __name__ == "__main__":
    main()
