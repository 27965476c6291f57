"""Queues behave like torch.cuda.Stream, notifiers like torch.cuda.Event (simulated time)."""

import pytest
import torch

import torch_mlu


def test_queues_are_torch_streams_from_a_pool(dev):
    q = torch_mlu.Queue()
    assert isinstance(q, torch.Stream)
    assert q.device == dev and q.device_index == 0 and 1 <= q.queue_id <= 32
    assert q.cnrt_queue != 0
    others = [torch_mlu.Queue() for _ in range(32)]
    assert others[-1] == q  # 32 queues, round robin
    assert len({o.queue_id for o in others}) == 32
    assert torch_mlu.default_queue().queue_id == 0 and torch_mlu.default_queue().cnrt_queue == 0
    assert torch_mlu.current_queue() == torch_mlu.default_queue()
    assert "queue_id" in repr(q)


def test_queue_context_makes_it_current(dev):
    q = torch_mlu.Queue()
    with q:
        assert torch_mlu.current_queue() == q
        x = torch.ones(4, dtype=torch.int8).to(dev)
    assert torch_mlu.current_queue() == torch_mlu.default_queue()
    with torch_mlu.queue(q):
        assert torch_mlu.current_queue() == q
    with torch_mlu.queue(None):
        pass
    torch_mlu.set_queue(q)
    assert torch_mlu.current_queue() == q
    torch_mlu.set_queue(torch_mlu.default_queue())
    q.synchronize()
    assert q.query()
    assert torch.equal(x.cpu(), torch.ones(4, dtype=torch.int8))


def test_notifier_measures_simulated_time(dev):
    q = torch_mlu.Queue()
    start = torch_mlu.Notifier(enable_timing=True)
    end = torch_mlu.Notifier(enable_timing=True)
    x = torch.randn(1 << 18)  # 1 MiB
    d = torch.empty(1 << 18, device=dev)
    times = []
    for _ in range(3):  # the first round also creates the notifiers (host time inside the interval)
        with q:
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


def test_notifier_rules():
    a, b = torch_mlu.Notifier(), torch_mlu.Notifier()
    assert a.query()  # never recorded
    a.synchronize()
    with pytest.raises(RuntimeError, match="recorded first"):
        a.elapsed_time(b)
    a.record()
    b.record()
    b.synchronize()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        a.elapsed_time(b)
    assert "Notifier" in repr(a)


def test_waits_between_queues(dev):
    producer, consumer = torch_mlu.Queue(), torch_mlu.Queue()
    with producer:
        x = torch.randn(1 << 16).to(dev)
    consumer.wait_queue(producer)
    n = producer.record_notifier()
    consumer.wait_notifier(n)
    with consumer:
        y = x.clone()
    consumer.synchronize()
    assert torch.equal(y.cpu(), x.cpu())


def test_record_stream_through_torch(dev):
    q = torch_mlu.Queue()
    x = torch.empty(10, device=dev)
    x.record_stream(q)  # dispatches to the backend's record_stream
    del x
