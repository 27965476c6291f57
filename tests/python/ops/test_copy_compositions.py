"""Copies composed from device kernels (src/ops/copy_compositions.cpp): uint8 / int16 to and from
other dtypes with torch's CPU wrap-around (truncation toward zero, low bits kept; NaN / inf / huge
give 0), and copies of self-overlapping views (as_strided, unfold). Also nonzero of a 0-d tensor and
layer_norm with a negative eps (torch accepts any eps)."""

import torch
import torch.nn.functional as F

DEV = "mlu"

SPECIAL = [-3.5, 300.0, 255.9, -0.5, 1e10, -1e10, float("nan"), float("inf"), 70000.0, -40000.0, 128.5, -129.7,
           32767.9, -32768.5, 65535.0, 2147483520.0, -2147483648.0, 0.0]


def test_float_to_uint8_and_int16_wrap_like_the_cpu():
    x = torch.tensor(SPECIAL)
    for dtype in (torch.uint8, torch.int16):
        assert torch.equal(x.to(DEV).to(dtype).cpu(), x.to(dtype)), dtype
        h = x.half()  # 70000 is inf in fp16
        assert torch.equal(h.to(DEV).to(dtype).cpu(), h.to(dtype)), dtype
        # strided source and destination
        m = torch.randn(4, 6, generator=torch.Generator().manual_seed(1)) * 400
        dst = torch.zeros(6, 4, dtype=dtype).to(DEV).t()
        dst.copy_(m.to(DEV))
        assert torch.equal(dst.cpu(), m.to(dtype))


def test_integers_to_and_from_uint8_and_int16():
    i = torch.tensor([300, -3, 70000, -70000, 2**31 - 1, -(2**31), 0, 255, 256], dtype=torch.int32)
    for dtype in (torch.uint8, torch.int16):
        assert torch.equal(i.to(DEV).to(dtype).cpu(), i.to(dtype))
        assert torch.equal(i.long().to(DEV).to(dtype).cpu(), i.long().to(dtype))
        assert torch.equal(torch.tensor([True, False]).to(DEV).to(dtype).cpu(), torch.tensor([1, 0], dtype=dtype))
    u = torch.arange(256, dtype=torch.int32).to(torch.uint8)
    s = torch.tensor([-32768, -200, -1, 0, 1, 255, 256, 3000, 32767], dtype=torch.int16)
    for src in (u, s, s[::2]):
        d = src.to(DEV)
        for dtype in (torch.float32, torch.float16, torch.int32, torch.int64, torch.bool, torch.int8):
            assert torch.equal(d.to(dtype).cpu(), src.to(dtype)), (src.dtype, dtype)
    assert torch.equal(u.to(DEV).to(torch.int16).cpu(), u.to(torch.int16))
    assert torch.equal(s.to(DEV).to(torch.uint8).cpu(), s.to(torch.uint8))


def test_copy_of_overlapping_views():
    base = torch.randn(20, generator=torch.Generator().manual_seed(2))
    d = base.to(DEV)
    v = torch.as_strided(base, (2, 2, 2, 2), (1, 1, 1, 1), 1)
    torch.testing.assert_close(torch.as_strided(d, (2, 2, 2, 2), (1, 1, 1, 1), 1).contiguous().cpu(), v.contiguous())
    u = base.view(4, 5).unfold(1, 3, 1)  # windows share elements
    torch.testing.assert_close(d.view(4, 5).unfold(1, 3, 1).to(torch.float16).cpu(), u.half())


def test_nonzero_of_zero_dim_and_negative_layer_norm_eps():
    for v in (0.0, 2.0):
        t = torch.tensor(v)
        assert torch.equal(torch.nonzero(t.to(DEV)).cpu(), torch.nonzero(t))
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(3)) * 2
    ref = F.layer_norm(x, (4,), eps=-0.5)
    torch.testing.assert_close(F.layer_norm(x.to(DEV), (4,), eps=-0.5).cpu(), ref, equal_nan=True)
