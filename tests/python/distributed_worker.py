"""One rank of tests/python/test_distributed.py, started by torchrun (2 processes, backend "cncl",
each process simulating its own mlu370-x8 system and using device LOCAL_RANK of it). Runs the
seed's all_reduce snippet, every collective against values computed here, checks of the C++
backend behind the group and of its errors for bad input, and DDP and FSDP2 steps of a small MLP
against single-device training on the concatenated batch; writes its findings to
<out>/rank<r>.json."""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch_mlu  # noqa: F401  (registers device "mlu" and backend "cncl")
from torch_mlu import distributed as cncl

out_dir = sys.argv[1]

# ---- the seed's snippet, verbatim in substance ------------------------------------------------
dist.init_process_group(backend="cncl")
rank = dist.get_rank()
world = dist.get_world_size()
torch.mlu.set_device(int(os.environ["LOCAL_RANK"]))
tensor = torch.ones(1).to("mlu") * (rank + 1)
dist.all_reduce(tensor)
print(f"rank {rank}: all_reduce result (should be 3.0): {tensor.item()}", flush=True)
found = {"all_reduce": tensor.item()}

dev = torch.device("mlu", torch.mlu.current_device())

# ---- every collective ----------------------------------------------------------------------------
x = torch.arange(6, dtype=torch.float32, device=dev) + 10 * rank
dist.broadcast(x, src=1)
found["broadcast"] = x.cpu().tolist()

parts = [torch.empty(3, device=dev) for _ in range(world)]
dist.all_gather(parts, torch.full((3,), float(rank), device=dev))
found["all_gather"] = [p.cpu().tolist() for p in parts]

big = torch.empty(4 * world, device=dev)
dist.all_gather_into_tensor(big, torch.full((4,), rank + 0.5, device=dev))
found["all_gather_into_tensor"] = big.cpu().tolist()

scattered = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(scattered, torch.arange(2 * world, dtype=torch.float32, device=dev) * (rank + 1))
found["reduce_scatter_tensor"] = scattered.cpu().tolist()

m = torch.tensor([float(rank), -float(rank)], device=dev)
dist.all_reduce(m, op=dist.ReduceOp.MAX)
found["all_reduce_max"] = m.cpu().tolist()

a2a_out = torch.empty(world, device=dev)
dist.all_to_all_single(a2a_out, torch.arange(world, dtype=torch.float32, device=dev) + 100 * rank)
found["all_to_all_single"] = a2a_out.cpu().tolist()

if rank == 0:
    dist.send(torch.tensor([42.0, 43.0], device=dev), dst=1)
    found["recv"] = None
else:
    got = torch.empty(2, device=dev)
    dist.recv(got, src=0)
    found["recv"] = got.cpu().tolist()

objs = [None] * world
dist.all_gather_object(objs, {"rank": rank})
found["all_gather_object"] = objs
dist.barrier()

# ---- the backend behind the group: the C++ ProcessGroupCNCL -----------------------------------
backend = dist.group.WORLD._get_backend(torch.device("mlu"))
found["backend_type"] = f"{type(backend).__module__}.{type(backend).__qualname__}"
found["backend_is_c10d_backend"] = isinstance(backend, torch._C._distributed_c10d.Backend)
found["backend_name"] = backend.name()

# CPU tensors given to the backend itself go to its inner Gloo backend (no simulated time).
host = torch.full((2,), float(rank + 1))
backend.allreduce([host]).wait()
found["cpu_all_reduce"] = host.tolist()

# ---- the other collectives: reduce, avg, the list reduce-scatter, the coalesced forms ------------
red = torch.full((3,), float(rank + 1), device=dev)
dist.reduce(red, dst=0)
found["reduce"] = red.cpu().tolist()
avg = torch.full((2,), float(rank), device=dev)
dist.all_reduce(avg, op=dist.ReduceOp.AVG)
found["all_reduce_avg"] = avg.cpu().tolist()
rs = torch.empty(2, device=dev)
dist.reduce_scatter(rs, [torch.full((2,), rank + 10.0 * k, device=dev) for k in range(world)])
found["reduce_scatter"] = rs.cpu().tolist()
gathered = [torch.empty(2 * world, device=dev), torch.empty(world, device=dev)]
backend.all_gather_single_coalesced(
    gathered, [torch.full((2,), float(rank), device=dev), torch.full((1,), 10.0 + rank, device=dev)]).wait()
found["all_gather_single_coalesced"] = [t.cpu().tolist() for t in gathered]
scattered_c = [torch.empty(1, device=dev), torch.empty(2, device=dev)]
backend.reduce_scatter_single_coalesced(
    scattered_c, [torch.arange(world, dtype=torch.float32, device=dev), torch.ones(2 * world, device=dev)]).wait()
found["reduce_scatter_single_coalesced"] = [t.cpu().tolist() for t in scattered_c]
summed = [torch.ones(1, device=dev), torch.full((2,), 2.0, device=dev)]
backend.allreduce_coalesced(summed).wait()
found["allreduce_coalesced"] = [t.cpu().tolist() for t in summed]


# ---- bad input: a ValueError naming the collective, raised before any rank sends a byte ---------
def error_of(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001  (the type is part of what is checked)
        return f"{type(e).__name__}: {e}"
    return None


ones = torch.ones(4, device=dev)
found["errors"] = {
    "band": error_of(lambda: dist.all_reduce(ones, op=dist.ReduceOp.BAND)),
    "premul_sum": error_of(lambda: dist.all_reduce(ones, op=dist._make_nccl_premul_sum(2.0))),
    "reduce_avg": error_of(lambda: dist.reduce(ones, dst=0, op=dist.ReduceOp.AVG)),
    "non_contiguous": error_of(lambda: dist.all_reduce(torch.ones(4, 4, device=dev).t())),
    "mixed_devices": error_of(lambda: backend.allreduce([torch.ones(1), torch.ones(1, device=dev)])),
    "all_gather_mixed": error_of(lambda: dist.all_gather([torch.empty(1) for _ in range(world)],
                                                         torch.ones(1, device=dev))),
    "all_gather_into_tensor_size": error_of(lambda: dist.all_gather_into_tensor(
        torch.empty(3, device=dev), torch.ones(2, device=dev))),
}
dist.barrier()

# ---- a DDP step against single-device training on the whole batch -------------------------------
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
reference.load_state_dict(model.state_dict())
g = torch.Generator().manual_seed(1)
batch = torch.randn(2 * world, 8, generator=g)
target = torch.randn(2 * world, 4, generator=g)

ddp = torch.nn.parallel.DistributedDataParallel(model.to(dev), device_ids=None)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
mine = slice(2 * rank, 2 * rank + 2)
loss = torch.nn.functional.mse_loss(ddp(batch[mine].to(dev)), target[mine].to(dev))
loss.backward()
opt.step()

ref_dev = reference.to(dev)  # the single-device run: the same step on the concatenated batch
ref_opt = torch.optim.SGD(ref_dev.parameters(), lr=0.1)
torch.nn.functional.mse_loss(ref_dev(batch.to(dev)), target.to(dev)).backward()
ref_opt.step()
found["ddp_max_param_diff"] = max(
    (p.detach().cpu() - q.detach().cpu()).abs().max().item() for p, q in zip(ddp.module.parameters(), ref_dev.parameters()))

# ---- FSDP2 (fully_shard over a 1-d DeviceMesh of "mlu") against the same single-device step ------
from torch.distributed.device_mesh import init_device_mesh  # noqa: E402
from torch.distributed.fsdp import fully_shard  # noqa: E402

mesh = init_device_mesh("mlu", (world,))
torch.manual_seed(0)
sharded = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).to(dev)
for layer in sharded:
    if isinstance(layer, torch.nn.Linear):
        fully_shard(layer, mesh=mesh)
fully_shard(sharded, mesh=mesh)
fsdp_opt = torch.optim.SGD(sharded.parameters(), lr=0.1)
torch.nn.functional.mse_loss(sharded(batch[mine].to(dev)), target[mine].to(dev)).backward()
fsdp_opt.step()
found["fsdp2_max_param_diff"] = max(
    (p.full_tensor().detach().cpu() - q.detach().cpu()).abs().max().item()
    for p, q in zip(sharded.parameters(), ref_dev.parameters()))

found["collectives"] = [list(c) for c in backend.collectives]
found["comm_ns"] = backend.comm_ns

# ---- DDP with small buckets: gradients of late layers are all-reduced while backward goes on ----
# (DDP puts every gradient in one bucket in its first iteration and rebuilds its buckets in the
# order gradients arrived; the second iteration is measured.)
torch.manual_seed(0)
deep = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU()) for _ in range(6)]).to(dev)
deep_ddp = torch.nn.parallel.DistributedDataParallel(deep, bucket_cap_mb=1)  # ~one 1 MiB layer per bucket
x = torch.randn(64, 512, generator=g).to(dev)
deep_ddp(x).sum().backward()
torch.mlu.synchronize()
torch_mlu.reset_stats()
backend.clear_collectives()
deep_ddp(x).sum().backward()
torch.mlu.synchronize()
found["overlap_report"] = cncl.comm_report(dist.group.WORLD)

with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
    json.dump(found, f)
dist.destroy_process_group()
