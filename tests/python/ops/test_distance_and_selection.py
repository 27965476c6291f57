"""Pairwise distances and selection ops on the device against torch's CPU results:
distance_ops.cpp (cdist for every p and compute mode, pdist), sort_ops.cpp (mode: the smallest of
the most frequent values, the last index of it), index_ops.cpp (nonzero_static), and what the
float64 narrowing rule made reachable (quantile / nanquantile through lerp.Tensor, a 0-dim
float64 operand beside float32), plus multinomial without replacement (the exponential race)."""

import pytest
import torch

DEV = "mlu"


def gen(seed):
    return torch.Generator().manual_seed(seed)


def close(actual, expected, **tol):
    assert actual.device.type == "mlu"
    torch.testing.assert_close(actual.cpu(), expected, **(tol or dict(atol=1e-4, rtol=1.3e-4)))


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 0.5, 3.0, float("inf")])
def test_cdist_and_pdist_match_the_cpu(p):
    a, b = torch.randn(2, 5, 4, generator=gen(1)), torch.randn(2, 6, 4, generator=gen(2))
    a[0, 1] = b[0, 2]  # a zero distance (p = 0 counts the differing coordinates)
    close(torch.cdist(a.to(DEV), b.to(DEV), p=p), torch.cdist(a, b, p=p))
    x = torch.randn(7, 3, generator=gen(3))
    close(torch.nn.functional.pdist(x.to(DEV), p=p), torch.nn.functional.pdist(x, p=p))


def test_cdist_euclidean_through_the_gemm_and_broadcast_batches():
    a, b = torch.randn(3, 30, 8, generator=gen(4)), torch.randn(1, 27, 8, generator=gen(5))
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        close(torch.cdist(a.to(DEV), b.to(DEV), compute_mode=mode), torch.cdist(a, b, compute_mode=mode), atol=1e-4,
              rtol=1e-4)
    with pytest.raises(RuntimeError, match="same number of columns"):
        torch.cdist(a.to(DEV), torch.randn(2, 3).to(DEV))


def test_mode_picks_the_smallest_most_frequent_value_and_its_last_index():
    x = torch.tensor([[3.0, 1, 2, 2, 1, 3], [5, 5, 1, 7, 7, 0]])
    for dim, keepdim in ((1, False), (0, True), (-1, True)):
        v, i = torch.mode(x.to(DEV), dim, keepdim)
        rv, ri = torch.mode(x, dim, keepdim)
        assert torch.equal(v.cpu(), rv) and torch.equal(i.cpu(), ri)
    r = torch.randint(0, 4, (3, 9), generator=gen(6))
    v, i = torch.mode(r.to(DEV))
    rv, ri = torch.mode(r)
    assert torch.equal(v.cpu(), rv) and torch.equal(i.cpu(), ri)


def test_nonzero_static_cuts_or_pads():
    x = torch.tensor([[0, 1, 0], [2, 0, 3]])
    for size in (0, 2, 3, 6):
        got = torch.nonzero_static(x.to(DEV), size=size, fill_value=-7)
        assert torch.equal(got.cpu(), torch.nonzero_static(x, size=size, fill_value=-7))


def test_quantile_lerp_and_float64_operands():
    x = torch.randn(4, 9, generator=gen(7))
    x[1, 3] = float("nan")
    q = torch.tensor([0.1, 0.5, 0.93])
    for interpolation in ("linear", "lower", "higher", "midpoint", "nearest"):
        close(torch.quantile(x[0].to(DEV), q.to(DEV), interpolation=interpolation),
              torch.quantile(x[0], q, interpolation=interpolation))
        close(torch.nanquantile(x.to(DEV), q.to(DEV), dim=1, interpolation=interpolation),
              torch.nanquantile(x, q, dim=1, interpolation=interpolation))
    w = torch.rand(4, 9, generator=gen(8)) * 1.4 - 0.2  # both branches of torch's two-sided lerp
    e = torch.randn(4, 9, generator=gen(9))
    close(torch.lerp(x.to(DEV), e.to(DEV), w.to(DEV)), torch.lerp(x, e, w), atol=1e-4, rtol=1.3e-4, equal_nan=True)
    with pytest.raises(RuntimeError, match="expected dtype float for `end`"):
        torch.lerp(x.to(DEV), e.double().to(DEV), w.to(DEV))


def test_multinomial_without_replacement_draws_distinct_positive_categories():
    p = torch.tensor([[0.0, 1.0, 2.0, 3.0, 0.0, 4.0], [1.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
    torch.manual_seed(0)
    draws = torch.multinomial(p.to(DEV), 4).cpu()
    assert draws.shape == (2, 4)
    for row, probs in zip(draws, p):
        assert len(set(row.tolist())) == 4 and all(probs[i] > 0 for i in row)
    # the heaviest category comes first most often (frequencies follow the weights)
    counts = torch.zeros(6)
    for _ in range(40):
        counts[torch.multinomial(p[0].to(DEV), 2).cpu()[0]] += 1
    assert counts[5] > counts[1] and counts[0] == 0 and counts[4] == 0
    with pytest.raises(RuntimeError, match="not enough non-negative category"):
        torch.multinomial(p[0].to(DEV), 5)


@pytest.mark.parametrize("p", [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, float("inf")])
def test_cdist_and_pdist_backward(dev, p):
    """_cdist_backward / _pdist_backward: torch's per-difference gradient for every branch of p,
    a broadcast batch, identical rows (distance 0: zero gradient) and both inputs of cdist."""
    g = torch.Generator().manual_seed(int(p * 10) if p != float("inf") else 99)
    x1 = torch.randn(3, 1, 4, 5, generator=g)
    x2 = torch.randn(2, 6, 5, generator=g)
    x2[1, 2] = x1[0, 0, 1]  # a zero distance
    cot = torch.randn(3, 2, 4, 6, generator=g)
    a, b = x1.clone().requires_grad_(), x2.clone().requires_grad_()
    ad, bd = x1.to(dev).requires_grad_(), x2.to(dev).requires_grad_()
    (torch.cdist(a, b, p=p) * cot).sum().backward()
    (torch.cdist(ad, bd, p=p) * cot.to(dev)).sum().backward()
    torch.testing.assert_close(ad.grad.cpu(), a.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(bd.grad.cpu(), b.grad, atol=1e-4, rtol=1e-4)
    x = torch.randn(6, 4, generator=g)
    x[4] = x[1]
    xc, xd = x.clone().requires_grad_(), x.to(dev).requires_grad_()
    w = torch.randn(15, generator=g)
    (torch.pdist(xc, p=p) * w).sum().backward()
    (torch.pdist(xd, p=p) * w.to(dev)).sum().backward()
    torch.testing.assert_close(xd.grad.cpu(), xc.grad, atol=1e-4, rtol=1e-4)
