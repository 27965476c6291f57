"""Complex tensors and discrete Fourier transforms on the device (torch_bridge/src/ops/fft_ops.cpp:
each 1-d transform one GEMM against the plan's DFT matrix; complex_ops.cpp and tensor_ops.cpp:
complex storage as interleaved pairs, view_as_real / view_as_complex, copies, fills, conj views)
against torch's CPU (pocketfft): every torch.fft entry point, norm modes, n= padding and
trimming, multi-dim transforms, stft, the DFT matrix's values, and the refusals."""

import math

import pytest
import torch

import torch_mlu

TOL = dict(atol=1e-4, rtol=1.3e-4)


def rand(*shape, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(tuple(shape), generator=g, dtype=dtype)


def close(actual, expected, **tol):
    assert actual.device.type == "mlu"
    assert actual.dtype == expected.dtype, (actual.dtype, expected.dtype)
    torch.testing.assert_close(actual.cpu(), expected, **(tol or TOL))


def test_complex_tensors_move_view_fill_and_conjugate():
    z = torch.complex(rand(3, 4, seed=1), rand(3, 4, seed=2))
    d = z.to("mlu")
    close(d, z)
    close(torch.view_as_real(d), torch.view_as_real(z))
    close(torch.view_as_complex(torch.view_as_real(d).contiguous()), z)
    close(d.real, z.real)
    close(d.imag, z.imag)
    close(d.conj().resolve_conj(), z.conj().resolve_conj())
    close(torch.conj_physical(d), torch.conj_physical(z))
    close(d.t().contiguous(), z.t().contiguous())  # a strided complex copy on the device
    close(d[:, 1:3].clone(), z[:, 1:3].clone())
    close(d.to(torch.complex128), z.to(torch.complex128))
    close(rand(5, seed=3).to("mlu").to(torch.complex64), rand(5, seed=3).to(torch.complex64))
    close(torch.full((2, 3), 1.5 - 2j, device="mlu"), torch.full((2, 3), 1.5 - 2j))
    close(torch.zeros(2, 3, dtype=torch.complex64, device="mlu"), torch.zeros(2, 3, dtype=torch.complex64))
    assert d[1, 2].item() == z[1, 2].item()
    close(torch.complex(rand(3, 1, seed=4).to("mlu"), rand(1, 4, seed=5).to("mlu")),
          torch.complex(rand(3, 1, seed=4), rand(1, 4, seed=5)))
    r, theta = rand(6, seed=6).abs(), rand(6, seed=7)
    close(torch.polar(r.to("mlu"), theta.to("mlu")), torch.polar(r, theta))
    # the conjugate bit of a destination: copy_ into a conjugate view writes conj(src) into memory
    dst = torch.zeros(3, 4, dtype=torch.complex64, device="mlu")
    dst.conj().copy_(d)
    close(dst, z.conj().resolve_conj())
    with pytest.raises(RuntimeError, match="Expected object of scalar type Float but got scalar type Double"):
        torch.complex(rand(2).to("mlu"), rand(2, dtype=torch.float64).to("mlu"))


def test_dft_matrix_matches_the_definition():
    # The length-8 transform of the unit impulse at j is the row exp(-2 pi i j k / 8) of the DFT matrix.
    n = 8
    eye = torch.eye(n)
    got = torch.fft.fft(eye.to("mlu"))
    k = torch.arange(n, dtype=torch.float64)
    want = torch.exp(-2j * math.pi * torch.outer(k, k) / n).to(torch.complex64)
    close(got, want, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("norm", [None, "ortho", "forward", "backward"])
def test_one_dimensional_transforms_match_the_cpu(norm):
    x = rand(3, 10, seed=8)
    z = torch.complex(rand(3, 10, seed=9), rand(3, 10, seed=10))
    xd, zd = x.to("mlu"), z.to("mlu")
    for fn in (torch.fft.fft, torch.fft.ifft, torch.fft.rfft, torch.fft.ihfft):
        close(fn(xd, norm=norm), fn(x, norm=norm))
    for fn in (torch.fft.fft, torch.fft.ifft, torch.fft.irfft, torch.fft.hfft):
        close(fn(zd, norm=norm), fn(z, norm=norm))
    # n= pads with zeros or trims, along any dim
    close(torch.fft.rfft(xd, n=13, dim=0, norm=norm), torch.fft.rfft(x, n=13, dim=0, norm=norm))
    close(torch.fft.irfft(zd, n=7, norm=norm), torch.fft.irfft(z, n=7, norm=norm))
    close(torch.fft.fft(zd, n=4, norm=norm), torch.fft.fft(z, n=4, norm=norm))


def test_multi_dimensional_transforms_match_the_cpu():
    x = rand(2, 6, 5, seed=11)
    z = torch.complex(rand(2, 6, 5, seed=12), rand(2, 6, 5, seed=13))
    xd, zd = x.to("mlu"), z.to("mlu")
    for fn in (torch.fft.fft2, torch.fft.ifft2, torch.fft.fftn, torch.fft.ifftn, torch.fft.rfft2, torch.fft.rfftn,
               torch.fft.ihfft2, torch.fft.ihfftn):
        close(fn(xd), fn(x))
    for fn in (torch.fft.fft2, torch.fft.ifftn, torch.fft.irfft2, torch.fft.irfftn, torch.fft.hfft2, torch.fft.hfftn):
        close(fn(zd), fn(z))
    close(torch.fft.fftn(zd, s=(4, 7), dim=(0, 2), norm="ortho"), torch.fft.fftn(z, s=(4, 7), dim=(0, 2), norm="ortho"))
    # a round trip
    close(torch.fft.irfftn(torch.fft.rfftn(xd), s=x.shape), x)


def test_stft_and_istft_match_the_cpu():
    signal = rand(2, 64, seed=14)
    window = torch.hann_window(16)
    got = torch.stft(signal.to("mlu"), 16, hop_length=4, window=window.to("mlu"), return_complex=True)
    want = torch.stft(signal, 16, hop_length=4, window=window, return_complex=True)
    close(got, want)
    close(torch.istft(got, 16, hop_length=4, window=window.to("mlu"), length=64), signal, atol=1e-4, rtol=1e-3)


def test_half_and_double_inputs_compute_in_float32():
    x = rand(4, 8, seed=15)
    close(torch.fft.rfft(x.double().to("mlu")), torch.fft.rfft(x.double()), atol=1e-4, rtol=1e-4)
    with pytest.raises(ValueError, match="float32's range"):
        torch.fft.fft(torch.full((4,), 1e300, dtype=torch.float64, device="mlu"))


def test_refusals_name_the_op_and_the_reason():
    with pytest.raises(NotImplementedError, match=r"aten::_fft_r2c: a length-8192 transform is beyond"):
        torch.fft.rfft(torch.zeros(8192, device="mlu"))
    with pytest.raises(NotImplementedError, match=r"aten::_fft_r2c: dtype Int"):
        torch.ops.aten._fft_r2c(torch.zeros(8, dtype=torch.int32, device="mlu"), [0], 0, True)
