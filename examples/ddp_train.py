"""Data-parallel training on simulated chips: one rank per process, backend "cncl".

    MLUSIM_CONFIG=mlu370-x8-server torchrun --nproc_per_node 4 examples/ddp_train.py \
        --model resnet50 --mode ddp --steps 2 --check --out /tmp/ddp

Each rank simulates the config's system and trains on chip LOCAL_RANK of it (rank r stands for
chip r; see torch_mlu/distributed.py). Every rank builds the same model from seed 0 and takes its
slice of a fixed global batch (--batch-per-rank samples each). Modes:
  ddp    DistributedDataParallel
  fsdp2  fully_shard on every block (resnet: every residual block; gpt2: every transformer block) and
         on the root
BatchNorm layers become SyncBatchNorm (statistics over the whole global batch, so a step is the
step of one device on the whole batch) unless --local-bn keeps them per rank, the usual choice
for throughput (then --check is refused: the step is a different computation).
Models: resnet18 and resnet50 (torchvision, 10 classes, 32x32 images) and gpt2 (transformers GPT2LMHeadModel,
a small configuration: --gpt2-layers, 128 wide, 4 heads, vocabulary 1000, dropout off; the
language-model loss on random tokens).

--check then trains a copy of the model on the whole batch on this rank's chip alone (plain
BatchNorm, plain module) for the first step and records the parameters' difference: the largest
element, and relative = ||data-parallel - single|| / ||single - initial|| over all parameters
(BatchNorm over a few samples amplifies rounding, so elementwise maxima of deep models are noisy
at fp32; the relative norm is not), and both runs' losses (the ranks' mean vs the whole batch).
Per rank it writes <out>/rank<r>.json: the simulated time of every step (ms, from events on the
training stream, so the exposed part of the gradient all-reduce is in it), the loss, the
parameter difference and the process group's communication report (calls, bytes, time, algbw,
busbw, overlap per collective; torch_mlu.distributed). Rank 0 prints a summary line. --trace
records the last step's timeline per rank: the collectives appear as "cncl <op> <bytes> B" spans
on the group's queue, beside the kernels on the training queue.
"""

import argparse
import contextlib
import json
import os
import pathlib
import sys

import torch
import torch.distributed as dist

import torch_mlu  # noqa: F401  (device "mlu", backend "cncl")


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=("resnet18", "resnet50", "gpt2"), default="resnet50")
    p.add_argument("--mode", choices=("ddp", "fsdp2"), default="ddp")
    p.add_argument("--steps", type=int, default=1, help="training steps (>= 1; default 1)")
    p.add_argument("--batch-per-rank", type=int, default=2, help="samples per rank per step (>= 1; default 2)")
    p.add_argument("--image-size", type=int, default=32, help="resnet input size (>= 32; default 32)")
    p.add_argument("--seq-len", type=int, default=32, help="gpt2 tokens per sample (2..64; default 32)")
    p.add_argument("--gpt2-layers", type=int, default=2, help="gpt2 transformer blocks (>= 1; default 2)")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--local-bn", action="store_true", help="keep BatchNorm per rank (no SyncBatchNorm)")
    p.add_argument("--check", action="store_true", help="compare the first step with one device on the whole batch")
    p.add_argument("--out", type=pathlib.Path, required=True, help="folder for rank<r>.json")
    p.add_argument("--trace", action="store_true",
                   help="also record the last step's timeline to <out>/trace_rank<r>.json (Perfetto)")
    args = p.parse_args(argv)
    for name, low in (("steps", 1), ("batch_per_rank", 1), ("image_size", 32), ("gpt2_layers", 1)):
        if getattr(args, name) < low:
            p.error(f"--{name.replace('_', '-')} must be >= {low}, got {getattr(args, name)}")
    if not 2 <= args.seq_len <= 64:
        p.error(f"--seq-len must be in 2..64, got {args.seq_len}")
    if args.check and args.local_bn and args.model != "gpt2":
        p.error("--check compares with single-device training, which --local-bn does not compute")
    return args


def build_model(args):
    torch.manual_seed(0)
    if args.model != "gpt2":
        import torchvision
        return getattr(torchvision.models, args.model)(num_classes=10)
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=args.gpt2_layers, n_embd=128, n_head=4, vocab_size=1000, n_positions=64,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return GPT2LMHeadModel(cfg)


def global_batch(args, world):
    g = torch.Generator().manual_seed(1)
    n = args.batch_per_rank * world
    if args.model != "gpt2":
        return torch.randn(n, 3, args.image_size, args.image_size, generator=g), torch.randint(0, 10, (n,), generator=g)
    tokens = torch.randint(0, 1000, (n, args.seq_len), generator=g)
    return tokens, tokens


def loss_of(model, args, inputs, targets):
    if args.model != "gpt2":
        return torch.nn.functional.cross_entropy(model(inputs), targets)
    return model(input_ids=inputs, labels=targets).loss


def blocks(model, args):
    if args.model != "gpt2":
        return [b for layer in (model.layer1, model.layer2, model.layer3, model.layer4) for b in layer]
    return list(model.transformer.h)


def full(p):
    return p.full_tensor() if hasattr(p, "full_tensor") else p


def main(argv):
    args = parse_args(argv)
    dist.init_process_group(backend="cncl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.mlu.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dev = torch.device("mlu", torch.mlu.current_device())

    model = build_model(args)
    if not args.local_bn:
        model = torch.nn.SyncBatchNorm.convert_sync_batchnorm(model)
    model = model.to(dev)
    if args.mode == "ddp":
        trained = torch.nn.parallel.DistributedDataParallel(model)
    else:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        mesh = init_device_mesh("mlu", (world,))
        for block in blocks(model, args):
            fully_shard(block, mesh=mesh)
        trained = fully_shard(model, mesh=mesh)
    opt = torch.optim.SGD(trained.parameters(), lr=args.lr)

    args.out.mkdir(parents=True, exist_ok=True)
    inputs, targets = global_batch(args, world)
    mine = slice(rank * args.batch_per_rank, (rank + 1) * args.batch_per_rank)
    x, y = inputs[mine].to(dev), targets[mine].to(dev)
    backend = torch_mlu.distributed.backend_of()
    found = {"rank": rank, "world": world, "model": args.model, "mode": args.mode,
             "config": torch_mlu.sim.config_name(), "step_ms": [], "loss": []}
    after_first = None
    for step in range(args.steps):
        torch.mlu.synchronize()
        torch_mlu.reset_stats()
        backend.clear_collectives()
        start, end = torch.mlu.Event(enable_timing=True), torch.mlu.Event(enable_timing=True)
        last = step == args.steps - 1
        with (torch_mlu.sim.trace(args.out / f"trace_rank{rank}.json") if args.trace and last
              else contextlib.nullcontext()):
            start.record()
            loss = loss_of(trained, args, x, y)
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            end.record()
            end.synchronize()
        found["step_ms"].append(start.elapsed_time(end))
        found["loss"].append(loss.item())
        if step == 0:
            after_first = [full(p).detach().cpu() for p in model.parameters()]
    found["comm"] = torch_mlu.distributed.comm_report()
    # The cycle report of the last step carries the same numbers in its communication section.
    found["cycle_report_communication"] = torch_mlu.sim.cycle_report(format="json").get("communication")
    text = torch_mlu.sim.cycle_report()
    found["cycle_report_text"] = text[text.find("communication (cncl"):]

    if args.check:  # one device, the whole batch, the first step
        reference = build_model(args).to(dev)
        ref_opt = torch.optim.SGD(reference.parameters(), lr=args.lr)
        ref_loss = loss_of(reference, args, inputs.to(dev), targets.to(dev))
        ref_loss.backward()
        ref_opt.step()
        ref_after = [p.detach().cpu() for p in reference.parameters()]
        initial = [p.detach() for p in build_model(args).parameters()]
        found["max_param_diff"] = max((a - b).abs().max().item() for a, b in zip(after_first, ref_after))
        diff = sum(((a - b).double() ** 2).sum().item() for a, b in zip(after_first, ref_after)) ** 0.5
        step = sum(((b - c).double() ** 2).sum().item() for b, c in zip(ref_after, initial)) ** 0.5
        found["rel_param_diff"] = diff / step
        found["reference_loss"] = ref_loss.item()
        mean_loss = torch.tensor([found["loss"][0]], device=dev)
        dist.all_reduce(mean_loss, op=dist.ReduceOp.AVG)
        found["mean_rank_loss"] = mean_loss.item()

    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"rank{rank}.json").write_text(json.dumps(found))
    if rank == 0:
        ar = found["comm"].get("all_reduce") or found["comm"].get("reduce_scatter") or {}
        print(f"{args.model} {args.mode} x{world}: step {found['step_ms'][-1]:.3f} ms simulated, "
              f"loss {found['loss'][0]:.4f}, comm {ar.get('time_us', 0.0):.1f} us, "
              f"overlap {ar.get('overlap', 0.0):.2f}"
              + (f", param diff {found['rel_param_diff']:.2e} of the step (max {found['max_param_diff']:.2e})"
                 if args.check else ""), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1:])
