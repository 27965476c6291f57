"""torchvision's detection ops registered for the device (src/ops/vision_ops.cpp) against
torchvision's CPU kernels: nms (ties in score, overlapping clusters, thresholds, empty, fp16), roi_align
and its backward (rois beyond the image, smaller than a pixel, adaptive grids, rois not grouped by image,
many rois on a 256-channel feature map)."""

import pytest
import torch

torchvision = pytest.importorskip("torchvision")

DEV = "mlu"


def random_boxes(n, seed):
    g = torch.Generator().manual_seed(seed)
    xy = torch.rand(n, 2, generator=g) * 20
    wh = torch.rand(n, 2, generator=g) * 8 + 0.5
    return torch.cat([xy, xy + wh], 1), torch.rand(n, generator=g)


@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.7])
def test_nms_matches_torchvision(dev, threshold):
    boxes, scores = random_boxes(60, 1)
    scores[5] = scores[9]  # a tie: the lower index comes first (stable sort)
    want = torchvision.ops.nms(boxes, scores, threshold)
    got = torchvision.ops.nms(boxes.to(DEV), scores.to(DEV), threshold)
    assert got.device.type == "mlu" and got.dtype == torch.int64
    assert torch.equal(got.cpu(), want)
    # batched_nms (per-class offsets, then nms) goes through the same op
    classes = torch.randint(0, 3, (60,), generator=torch.Generator().manual_seed(2))
    assert torch.equal(torchvision.ops.batched_nms(boxes.to(DEV), scores.to(DEV), classes.to(DEV), threshold).cpu(),
                       torchvision.ops.batched_nms(boxes, scores, classes, threshold))


def test_nms_edge_cases(dev):
    empty = torchvision.ops.nms(torch.empty(0, 4).to(DEV), torch.empty(0).to(DEV), 0.5)
    assert empty.shape == (0,) and empty.dtype == torch.int64
    boxes, scores = random_boxes(30, 3)
    got = torchvision.ops.nms(boxes.half().to(DEV), scores.half().to(DEV), 0.5).cpu()
    assert torch.equal(got, torchvision.ops.nms(boxes.half().float(), scores.half().float(), 0.5))
    with pytest.raises(RuntimeError, match="4 elements in dimension 1"):
        torchvision.ops.nms(torch.zeros(3, 5).to(DEV), torch.zeros(3).to(DEV), 0.5)


def roi_align_both_ways(x, rois, kw, g, grad_atol):
    """roi_align and its backward (a random upstream gradient from g) on the device vs the CPU."""
    cx, dx = x.clone().requires_grad_(), x.to(DEV).requires_grad_()
    want = torchvision.ops.roi_align(cx, rois, **kw)
    got = torchvision.ops.roi_align(dx, rois.to(DEV), **kw)
    torch.testing.assert_close(got.detach().cpu(), want.detach(), rtol=1e-4, atol=1e-5)
    up = torch.randn(want.shape, generator=g)
    want.backward(up)
    got.backward(up.to(DEV))
    torch.testing.assert_close(dx.grad.cpu(), cx.grad, rtol=1e-4, atol=grad_atol)


@pytest.mark.parametrize("sampling_ratio,aligned", [(2, False), (-1, True)])
def test_roi_align_matches_torchvision(dev, sampling_ratio, aligned):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 2, 9, 11, generator=g)
    boxes, _ = random_boxes(5, 4)
    boxes[0] = torch.tensor([-3.0, -2.5, 10.0, 20.0])  # beyond the image: samples past [-1, size] read 0
    boxes[1] = torch.tensor([4.0, 4.0, 4.2, 4.1])  # smaller than a pixel
    rois = torch.cat([torch.tensor([[0.0], [1.0], [1.0], [0.0], [1.0]]), boxes], 1)
    kw = dict(output_size=(3, 4), spatial_scale=0.5, sampling_ratio=sampling_ratio, aligned=aligned)
    roi_align_both_ways(x, rois, kw, g, grad_atol=1e-5)
    empty = torchvision.ops.roi_align(x.to(DEV), torch.zeros(0, 5).to(DEV), **kw)
    assert empty.shape == (0, 2, 3, 4)


def test_roi_align_many_rois_ungrouped_and_fp16(dev):
    # Rois of two images interleaved (the chunks read and write them by index), a detector-sized
    # feature map, the adaptive grid; and fp16 (computed in fp32, rounded once).
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 256, 20, 18, generator=g)
    boxes, _ = random_boxes(40, 6)
    boxes = boxes * 3
    rois = torch.cat([(torch.arange(40) % 2).float().view(-1, 1), boxes], 1)
    kw = dict(output_size=(7, 7), spatial_scale=0.25, sampling_ratio=-1, aligned=False)
    roi_align_both_ways(x, rois, kw, g, grad_atol=1e-4)
    h = torchvision.ops.roi_align(x.half().to(DEV), rois.half().to(DEV), **kw)
    assert h.dtype == torch.float16
    ref = torchvision.ops.roi_align(x.half().float(), rois.half().float(), **kw)
    torch.testing.assert_close(h.cpu().float(), ref, rtol=1e-3, atol=1e-3)
