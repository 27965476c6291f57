"""Streams (CNRT queues; torch.cuda.Stream's twin) and events (CNRT notifiers; torch.cuda.Event's
twin). Both are torch.Stream / torch.Event subclasses: PyTorch 2 drives them through the
backend's DeviceGuardImpl, so torch.Stream(device="mlu") and torch.Event(device="mlu") behave the
same. Times are simulated: Event.elapsed_time returns simulated milliseconds.

Like torch.cuda.Stream, a new Stream comes from a per-device pool of 32 queues handed out round
robin; the default stream (stream_id 0) is CNRT's NULL queue.
"""

import torch

from . import _C

# c10::DeviceType::PrivateUse1: the device_type torch.Stream stores for "mlu" streams.
_DEVICE_TYPE_ID = 20


def _index(device):
    from . import _device_index

    return _device_index(device)


class Stream(torch.Stream):
    """An in-order queue of a simulated MLU, usable wherever torch takes a stream
    (tensor.record_stream, `with stream:`, torch.mlu.stream(s))."""

    def __new__(cls, device=None, priority=0, **kwargs):
        if {"stream_id", "device_index", "device_type"} <= kwargs.keys():
            return super().__new__(cls, stream_id=kwargs["stream_id"], device_index=kwargs["device_index"],
                                   device_type=kwargs["device_type"])
        index = _index(device)
        return super().__new__(cls, stream_id=_C.next_pool_queue_id(index), device_index=index,
                               device_type=_DEVICE_TYPE_ID)

    @classmethod
    def _of(cls, index, queue_id):
        return cls(stream_id=queue_id, device_index=index, device_type=_DEVICE_TYPE_ID)

    @property
    def queue_id(self):
        """0 for the default stream, 1..32 for the pool streams."""
        return self.stream_id

    @property
    def cnrt_queue(self):
        """The CNRT handle (cnrtQueue_t) as an integer; 0 for the default stream."""
        return _C.queue_handle(self.device_index, self.stream_id)

    def wait_stream(self, stream):
        """Work queued here from now on waits for the work queued on `stream` so far."""
        self.wait_event(stream.record_event())

    def record_event(self, event=None):
        """Records an event (a new one if None) on this stream and returns it."""
        if event is None:
            event = Event()
        event.record(self)
        return event

    def __repr__(self):
        return f"<torch.mlu.Stream device=mlu:{self.device_index} stream_id={self.stream_id}>"


class _EventMeta(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Event) and obj.device.type == "mlu"


class Event(metaclass=_EventMeta):
    """A CNRT notifier: torch.mlu.Event(...) makes a torch.Event of device "mlu" (torch's Event
    methods check for that exact type, so no subclass is made; isinstance(e, torch.mlu.Event) is
    true for every "mlu" event). elapsed_time() is in simulated milliseconds and needs
    enable_timing=True; simulated waits always block the calling thread (blocking is accepted
    for compatibility). record()/wait() default to the current stream."""

    def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise ValueError("torch.mlu.Event: interprocess events are not simulated")
        return torch.Event(device="mlu", enable_timing=enable_timing, blocking=blocking)


def current_stream(device=None):
    """The calling thread's current stream on the device (torch.cuda.current_stream)."""
    index = _index(device)
    return Stream._of(index, _C.current_queue_id(index))


def default_stream(device=None):
    """The device's default stream (CNRT's NULL queue; torch.cuda.default_stream)."""
    return Stream._of(_index(device), 0)


def set_stream(stream):
    """Makes `stream` current on its device for the calling thread (torch.cuda.set_stream)."""
    if stream is None:
        return
    _C.set_current_queue_id(stream.device_index, stream.stream_id)


class StreamContext:
    """Context manager making a stream current on its device, and its device current
    (torch.cuda.StreamContext); None does nothing."""

    def __init__(self, stream):
        self.stream = stream
        self._saved = None

    def __enter__(self):
        if self.stream is None:
            return None
        index = self.stream.device_index
        self._saved = (_C.current_device(), index, _C.current_queue_id(index))
        _C.set_device(index)
        _C.set_current_queue_id(index, self.stream.stream_id)
        return self.stream

    def __exit__(self, *exc):
        if self._saved is not None:
            device, index, queue_id = self._saved
            _C.set_current_queue_id(index, queue_id)
            _C.set_device(device)
        return False


def stream(stream):
    """torch.cuda.stream: `with torch.mlu.stream(s): ...` runs the block's work on `s`."""
    return StreamContext(stream)


# The names mlusim used before torch 2 (CNRT's words).
Queue = Stream
Notifier = Event
current_queue = current_stream
default_queue = default_stream
set_queue = set_stream
queue = stream
