"""Mixed precision on the device: torch.autocast("mlu") with CUDA's op lists, the torch.mlu.amp
names, and torch.amp.GradScaler("mlu") against the same training on the CPU."""

import pytest
import torch
import torch.nn.functional as F

import torch_mlu  # noqa: F401


def test_autocast_casts_by_cuda_op_lists(dev):
    a, b = torch.randn(8, 16), torch.randn(16, 4)
    assert torch.amp.is_autocast_available("mlu")
    assert torch.get_autocast_dtype("mlu") == torch.float16  # CUDA's default, not PrivateUse1's bf16
    with torch.autocast("mlu", dtype=torch.float16):
        y = a.to(dev) @ b.to(dev)  # lower-precision list
        s = torch.softmax(y, dim=-1)  # fp32 list
        lin = F.linear(a.to(dev), b.t().to(dev))
    assert y.dtype == torch.float16 and s.dtype == torch.float32 and lin.dtype == torch.float16
    with torch.autocast("cpu", dtype=torch.float16):
        ref = a @ b
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-3, atol=1e-3)
    with torch.mlu.amp.autocast():
        assert (a.to(dev) @ b.to(dev)).dtype == torch.float16
    with torch.mlu.amp.autocast(enabled=False):
        assert (a.to(dev) @ b.to(dev)).dtype == torch.float32
    assert (a.to(dev) @ b.to(dev)).dtype == torch.float32  # outside: untouched


def _train(device, steps, poison_step=None):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    scaler = torch.amp.GradScaler(device, init_scale=2.0 ** 10, growth_interval=2)
    x, t = torch.randn(8, 16).to(device), torch.randint(0, 4, (8,)).to(device)
    scales = []
    for step in range(steps):
        opt.zero_grad()
        with torch.autocast(device, dtype=torch.float16):
            loss = F.cross_entropy(model(x), t)
        scaler.scale(loss).backward()
        if step == poison_step:
            model[0].weight.grad[0, 0] = float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return [p.detach().cpu() for p in model.parameters()], scales


def test_grad_scaler_training_matches_the_cpu(dev):
    params, scales = _train("mlu", 5, poison_step=3)
    ref_params, ref_scales = _train("cpu", 5, poison_step=3)
    # growth every 2 clean steps, backoff (and a skipped step) at the inf
    assert scales == ref_scales == [1024.0, 2048.0, 2048.0, 1024.0, 1024.0]
    for p, r in zip(params, ref_params):
        torch.testing.assert_close(p, r, rtol=2e-3, atol=2e-3)  # fp16 matmuls on both sides


def test_grad_scaler_ops_directly(dev):
    grads = [torch.tensor([1.0, 2.0]).to(dev), torch.tensor([4.0, float("nan")]).to(dev)]
    found = torch.zeros(1).to(dev)
    torch._amp_foreach_non_finite_check_and_unscale_(grads, found, torch.tensor([0.5]).to(dev))
    assert found.item() == 1.0 and torch.equal(grads[0].cpu(), torch.tensor([0.5, 1.0]))
    scale, tracker = torch.tensor([8.0]).to(dev), torch.tensor([1], dtype=torch.int32).to(dev)
    torch._amp_update_scale_(scale, tracker, torch.zeros(1).to(dev), 2.0, 0.5, 2)
    assert scale.item() == 16.0 and tracker.item() == 0  # second clean step: growth
    torch._amp_update_scale_(scale, tracker, torch.ones(1).to(dev), 2.0, 0.5, 2)
    assert scale.item() == 8.0 and tracker.item() == 0  # inf: backoff
    with pytest.raises(RuntimeError, match="growth_tracker must be a one-element Int"):
        torch._amp_update_scale_(scale, tracker.float(), torch.zeros(1).to(dev), 2.0, 0.5, 2)
