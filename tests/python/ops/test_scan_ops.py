"""Scans on the device (src/ops/scan_ops.cpp over libmlu scan: the doubling scan on the VFU) against
torch's CPU results: cumsum with inf and NaN (they reach only later positions), cumprod,
cummax/cummin values and indices (ties take the last position, NaN is taken and kept), any dim,
non-contiguous input, 0-dim, empty, fp16 accumulating in fp32, integers, a row longer than one
core's NRAM chunk, out=, and the dtypes that raise NotImplementedError."""

import pytest
import torch

DEV = "mlu"


def same(out, ref, **tol):
    assert out.dtype == ref.dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.dtype, ref.shape)
    torch.testing.assert_close(out.cpu(), ref, equal_nan=True, **({"rtol": 0, "atol": 0} | tol))


def ties_and_specials(*shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randint(-4, 5, shape, generator=g).float() / 2
    flat = x.view(-1)
    flat[4::17] = float("nan")
    flat[3::11] = float("inf")
    flat[5::13] = -float("inf")
    return x


def test_cumsum_inf_and_nan_reach_only_later_positions(dev):
    x = torch.tensor([[1.0, 2.0, float("inf"), 3.0, -float("inf"), 1.0],
                      [4.0, float("nan"), 5.0, 6.0, 7.0, 8.0]])
    same(torch.cumsum(x.to(DEV), 1), torch.cumsum(x, 1))  # was NaN at 1 + 2 (the GEMM scan's inf * 0)
    same(torch.cumsum(x.to(DEV), 0), torch.cumsum(x, 0))
    same(torch.cumprod(x.to(DEV), 1), torch.cumprod(x, 1))
    same(torch.logcumsumexp(x.to(DEV), 1), torch.logcumsumexp(x, 1), rtol=1.3e-6, atol=1e-5)


@pytest.mark.parametrize("fn", [torch.cummax, torch.cummin])
def test_cummax_cummin_values_and_indices(dev, fn):
    x = ties_and_specials(5, 9, 4)
    for dim in (0, 1, -1):
        v, i = fn(x.to(DEV), dim)
        rv, ri = fn(x, dim)
        same(v, rv)
        same(i, ri)
    xt = x.transpose(0, 2)  # non-contiguous
    same(fn(xt.to(DEV), 1)[1], fn(xt, 1)[1])
    h = x.half()
    same(fn(h.to(DEV), 1)[0], fn(h, 1)[0])
    n = torch.randint(-50, 50, (3, 20), generator=torch.Generator().manual_seed(2))
    same(fn(n.to(DEV), 1)[1], fn(n, 1)[1])
    same(fn(torch.tensor(2.5).to(DEV), 0)[0], fn(torch.tensor(2.5), 0)[0])
    values, indices = torch.empty(0).to(DEV), torch.empty(0, dtype=torch.long).to(DEV)
    fn(x.to(DEV), 2, out=(values, indices))
    same(indices, fn(x, 2)[1])


def test_long_row_crosses_nram_chunks_and_fp16_accumulates_in_fp32(dev):
    x = torch.randn(2, 5000, generator=torch.Generator().manual_seed(1))  # > the tiny preset's chunk
    x[1, 4500] = float("nan")
    v, i = torch.cummax(x.to(DEV), 1)
    same(i, torch.cummax(x, 1)[1])
    same(torch.cumsum(x.to(DEV), 1), torch.cumsum(x, 1), rtol=1e-5, atol=1e-4)
    h = torch.ones(1, 600, dtype=torch.half)
    h[0, 0] = 2048  # an fp16 accumulator would stop at 2048 (its ulp there is 2)
    same(torch.cumsum(h.to(DEV), 1), torch.cumsum(h, 1))
    p = (1 + torch.randn(3, 40, generator=torch.Generator().manual_seed(3)) / 50).half()
    same(torch.cumprod(p.to(DEV), 1), torch.cumprod(p, 1), rtol=1e-3, atol=1e-5)
    same(torch.cumprod(p.to(DEV), 0, dtype=torch.float32), torch.cumprod(p, 0, dtype=torch.float32), rtol=1e-6, atol=1e-6)


def test_scan_edge_cases_and_errors(dev):
    e = torch.empty(0, 3)
    same(torch.cumprod(e.to(DEV), 0), torch.cumprod(e, 0))
    same(torch.cummin(e.to(DEV), 1)[1], torch.cummin(e, 1)[1])
    same(torch.cumprod(torch.tensor(3.0).to(DEV), 0), torch.tensor(3.0))
    with pytest.raises(NotImplementedError, match="cumprod.*Long"):
        torch.cumprod(torch.arange(4).to(DEV), 0)
    with pytest.raises(IndexError):
        torch.cummax(torch.ones(2, 3).to(DEV), 2)
