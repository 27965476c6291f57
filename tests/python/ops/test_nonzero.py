"""nonzero on the device (libmlu index.h: count launch, one host read, fill launch) and what is
built on it: boolean-mask indexing (x[mask], x[mask2d] over the leading dims) and masked_select,
against torch's CPU results. The CPU fallback is off (conftest)."""

import pytest
import torch


@pytest.mark.parametrize("make", [
    lambda g: torch.tensor([0.0, 1.0, float("nan"), -0.0, -2.0]),
    lambda g: torch.randint(-1, 2, (3, 4, 5), generator=g),
    lambda g: torch.rand(100_000, generator=g) > 0.7,     # many parts, many chunks
    lambda g: torch.randint(0, 2, (300,), generator=g) * (1 << 40),  # int64 beyond 32 bits
    lambda g: torch.randn(7, 9, generator=g).half().masked_fill(torch.rand(7, 9, generator=g) > 0.5, 0),
    lambda g: torch.tensor(3.0),                          # 0-d: [1, 0]
    lambda g: torch.zeros(0, 3),                          # empty: [0, 2]
    lambda g: torch.randn(6, 4, generator=g).t(),         # non-contiguous
], ids=["nan-and-negzero", "int64-3d", "bool-100k", "int64-high-bits", "fp16", "0-d", "empty", "transposed"])
def test_nonzero_matches_cpu(dev, make):
    x = make(torch.Generator().manual_seed(0))
    got = torch.nonzero(x.to(dev))
    assert got.dtype == torch.int64 and got.device == dev
    assert torch.equal(got.cpu(), torch.nonzero(x))
    assert torch.equal(torch.argwhere(x.to(dev)).cpu(), torch.argwhere(x))


def test_nonzero_out_and_as_tuple(dev):
    x = torch.tensor([[0, 1], [2, 0]])
    out = torch.empty(0, 2, dtype=torch.int64, device=dev)
    torch.nonzero(x.to(dev), out=out)
    assert torch.equal(out.cpu(), torch.tensor([[0, 1], [1, 0]]))
    rows, cols = torch.nonzero(x.to(dev), as_tuple=True)
    assert rows.cpu().tolist() == [0, 1] and cols.cpu().tolist() == [1, 0]
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype"):
        torch.nonzero(x.to(dev), out=torch.empty(0, 2, dtype=torch.int32, device=dev))


def test_boolean_mask_indexing(dev):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(4, 5, 6, generator=g)
    m1, m2 = x[:, 0, 0] > 0, torch.rand(4, 5, generator=g) > 0.5
    xd = x.to(dev)
    assert torch.equal(xd[m1.to(dev)].cpu(), x[m1])
    assert torch.equal(xd[m2.to(dev)].cpu(), x[m2])
    full = x > 0.3
    assert torch.equal(xd[full.to(dev)].cpu(), x[full])
    assert xd[torch.zeros(4, dtype=torch.bool, device=dev)].shape == (0, 5, 6)
    with pytest.raises(IndexError, match="shape of the mask"):
        xd[torch.ones(3, dtype=torch.bool, device=dev)]


def test_masked_select_broadcasts(dev):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(3, 4, generator=g)
    row_mask = torch.tensor([True, False, True, True])
    assert torch.equal(torch.masked_select(x.to(dev), row_mask.to(dev)).cpu(), torch.masked_select(x, row_mask))
    out = torch.empty(0, device=dev)
    torch.masked_select(x.to(dev), (x > 0).to(dev), out=out)
    assert torch.equal(out.cpu(), x[x > 0])
    with pytest.raises(RuntimeError, match="expected mask of dtype bool"):
        torch.masked_select(x.to(dev), torch.ones(4, dtype=torch.int64, device=dev))


def test_float64_is_refused_by_name(dev):
    x = torch.ones(3, dtype=torch.float64).to(dev)
    with pytest.raises(NotImplementedError, match="nonzero.*float64"):
        torch.nonzero(x)
