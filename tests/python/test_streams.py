"""Streams behave like torch.cuda.Stream, events like torch.cuda.Event (simulated time); both are
torch.Stream / torch.Event, so torch's generic stream API works on "mlu" too."""

import pytest
import torch

import torch_mlu


def test_streams_are_torch_streams_from_a_pool(dev):
    s = torch.mlu.Stream()
    assert isinstance(s, torch.Stream)
    assert s.device == dev and s.device_index == 0 and 1 <= s.stream_id <= 32
    assert s.cnrt_queue != 0
    others = [torch.mlu.Stream() for _ in range(32)]
    assert others[-1] == s  # 32 streams, round robin
    assert len({o.stream_id for o in others}) == 32
    assert torch.mlu.default_stream().stream_id == 0 and torch.mlu.default_stream().cnrt_queue == 0
    assert torch.mlu.current_stream() == torch.mlu.default_stream()
    assert "stream_id" in repr(s)
    generic = torch.Stream(device="mlu")  # DeviceGuardImpl::getNewStream: a pool stream too
    assert generic.device == dev and 1 <= generic.stream_id <= 32
    assert torch.accelerator.current_stream() == torch.mlu.current_stream()


def test_stream_context_makes_it_current(dev):
    s = torch.mlu.Stream()
    with s:
        assert torch.mlu.current_stream() == s
        x = torch.ones(4, dtype=torch.int8).to(dev)
    assert torch.mlu.current_stream() == torch.mlu.default_stream()
    with torch.mlu.stream(s):
        assert torch.mlu.current_stream() == s
    with torch.mlu.stream(None):
        pass
    torch.mlu.set_stream(s)
    assert torch.mlu.current_stream() == s
    torch.accelerator.set_stream(torch.mlu.default_stream())
    assert torch.mlu.current_stream() == torch.mlu.default_stream()
    s.synchronize()
    assert s.query()
    assert torch.equal(x.cpu(), torch.ones(4, dtype=torch.int8))


@pytest.mark.parametrize("make_event", [lambda: torch.mlu.Event(enable_timing=True),
                                        lambda: torch.Event(device="mlu", enable_timing=True)])
def test_events_measure_simulated_time(dev, make_event):
    s = torch.mlu.Stream()
    start, end = make_event(), make_event()
    x = torch.randn(1 << 18)  # 1 MiB
    d = torch.empty(1 << 18, device=dev)
    times = []
    for _ in range(3):  # the first round also creates the notifiers (host time inside the interval)
        with s:
            start.record()
            d.copy_(x)
            end.record()
        end.synchronize()
        assert start.query() and end.query()
        times.append(start.elapsed_time(end))
    assert 0 < times[1] < 10  # a 1 MiB upload takes microseconds of simulated time
    assert times[2] == pytest.approx(times[1], rel=1e-6)  # deterministic
    assert end.elapsed_time(start) == pytest.approx(-times[1])
    assert torch.equal(d.cpu(), x)


def test_event_rules():
    a, b = torch.mlu.Event(enable_timing=True), torch.mlu.Event(enable_timing=True)
    assert a.query()  # never recorded
    a.synchronize()
    with pytest.raises(ValueError, match="recorded"):
        a.elapsed_time(b)
    c, d = torch.mlu.Event(), torch.mlu.Event()
    c.record()
    d.record()
    d.synchronize()
    with pytest.raises(ValueError, match="enable_timing=True"):
        c.elapsed_time(d)
    assert isinstance(a, torch.mlu.Event) and isinstance(a, torch.Event)
    assert not isinstance(torch.Event(device="cpu"), torch.mlu.Event)
    with pytest.raises(ValueError, match="interprocess"):
        torch.mlu.Event(interprocess=True)


def test_waits_between_streams(dev):
    producer, consumer = torch.mlu.Stream(), torch.mlu.Stream()
    with producer:
        x = torch.randn(1 << 16).to(dev)
    consumer.wait_stream(producer)
    e = producer.record_event()
    consumer.wait_event(e)
    with consumer:
        y = x.clone()
    consumer.synchronize()
    assert torch.equal(y.cpu(), x.cpu())


def test_record_stream_through_torch(dev):
    s = torch.mlu.Stream()
    x = torch.empty(10, device=dev)
    x.record_stream(s)  # dispatches to the backend's record_stream
    del x
