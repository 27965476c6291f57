"""Queues (CNRT's in-order streams; torch.cuda.Stream's twin) and notifiers (CNRT's events;
torch.cuda.Event's twin). Times are simulated: Notifier.elapsed_time returns simulated
milliseconds."""

import contextlib

import torch

from . import _C


def _index(device):
    from . import _device_index

    return _device_index(device)


class Queue(torch._C.Stream):
    """An in-order queue of a simulated MLU, usable wherever torch takes a stream
    (tensor.record_stream, `with queue:`).

    Like torch.cuda.Stream, a new Queue comes from a per-device pool of 32 queues handed out
    round robin; the default queue (CNRT's NULL queue) is default_queue().
    """

    def __new__(cls, device=None, priority=0, **kwargs):
        if "_cdata" in kwargs:
            return super().__new__(cls, _cdata=kwargs["_cdata"])
        index = _index(device)
        queue_id = kwargs.get("_queue_id")
        if queue_id is None:
            queue_id = _C.next_pool_queue_id(index)
        return super().__new__(cls, _cdata=_C.pack_stream(index, queue_id))

    @property
    def _key(self):
        return _C.unpack_stream(self._cdata)

    @property
    def device_index(self):
        return self._key[0]

    @property
    def queue_id(self):
        """0 for the default queue, 1..32 for the pool queues."""
        return self._key[1]

    @property
    def cnrt_queue(self):
        """The CNRT handle (cnrtQueue_t) as an integer; 0 for the default queue."""
        return _C.queue_handle(*self._key)

    def query(self):
        """True when all work queued so far has finished (by the caller's simulated clock)."""
        return _C.query_queue(*self._key)

    def synchronize(self):
        """Waits until all work queued so far has finished."""
        _C.synchronize_queue(*self._key)

    def wait_notifier(self, notifier):
        """Work queued here from now on waits for the notifier's last record."""
        notifier.wait(self)

    def wait_queue(self, queue):
        """Work queued here from now on waits for the work queued on `queue` so far."""
        self.wait_notifier(queue.record_notifier())

    def record_notifier(self, notifier=None):
        """Records a notifier (a new one if None) on this queue and returns it."""
        if notifier is None:
            notifier = Notifier()
        notifier.record(self)
        return notifier

    def __enter__(self):
        index, _ = self._key
        self._saved = (_C.current_device(), _C.current_queue_id(index))
        _C.set_device(index)
        _C.set_current_queue_id(index, self.queue_id)
        return self

    def __exit__(self, *exc):
        device, queue_id = self._saved
        _C.set_current_queue_id(self.device_index, queue_id)
        _C.set_device(device)
        return False

    def __eq__(self, other):
        return isinstance(other, torch._C.Stream) and self._cdata == other._cdata

    def __hash__(self):
        return hash(self._cdata)

    def __repr__(self):
        return f"<torch_mlu.Queue device={self.device} queue_id={self.queue_id}>"


def current_queue(device=None):
    """The calling thread's current queue on the device (torch.cuda.current_stream)."""
    index = _index(device)
    return Queue(_cdata=_C.pack_stream(index, _C.current_queue_id(index)))


def default_queue(device=None):
    """The device's default queue (CNRT's NULL queue; torch.cuda.default_stream)."""
    return Queue(_cdata=_C.pack_stream(_index(device), 0))


def set_queue(queue):
    """Makes `queue` current on its device for the calling thread (torch.cuda.set_stream)."""
    _C.set_current_queue_id(queue.device_index, queue.queue_id)


@contextlib.contextmanager
def queue(q):
    """Context manager making queue `q` current (torch.cuda.stream); None does nothing."""
    if q is None:
        yield
        return
    with q:
        yield q


class Notifier:
    """A CNRT notifier (torch.cuda.Event's twin). It is created on the device of the queue it is
    first recorded on. elapsed_time() is in simulated milliseconds and needs enable_timing=True."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise ValueError("interprocess notifiers are not simulated")
        self.enable_timing = enable_timing
        self.blocking = blocking  # simulated waits always block the caller
        self._handle = 0
        self._device = None

    def record(self, queue=None):
        """Places the notifier on `queue` (default: the current queue)."""
        if queue is None:
            queue = current_queue()
        index, queue_id = queue._key
        if self._handle == 0:
            self._handle = _C.notifier_create(index, self.enable_timing)
            self._device = index
        elif self._device != index:
            raise RuntimeError(
                f"notifier of device {self._device} cannot be recorded on a queue of device {index}")
        _C.notifier_record(self._handle, index, queue_id)

    def wait(self, queue=None):
        """Work queued on `queue` (default: current) from now on waits for the last record."""
        if queue is None:
            queue = current_queue()
        if self._handle:
            _C.queue_wait_notifier(queue.device_index, queue.queue_id, self._handle)

    def query(self):
        """True if the last record has completed (or the notifier was never recorded)."""
        return True if not self._handle else _C.notifier_query(self._handle)

    def synchronize(self):
        """Blocks until the last record has completed."""
        if self._handle:
            _C.notifier_synchronize(self._handle)

    def elapsed_time(self, end):
        """Simulated milliseconds between this notifier's and `end`'s completion."""
        if not self._handle or not end._handle:
            raise RuntimeError("elapsed_time: both notifiers must be recorded first")
        return _C.notifier_elapsed_ms(self._handle, end._handle)

    @property
    def device(self):
        from . import DEVICE_TYPE

        return None if self._device is None else torch.device(DEVICE_TYPE, self._device)

    def __del__(self):
        handle = getattr(self, "_handle", 0)
        if handle and _C is not None:
            _C.notifier_destroy(handle)

    def __repr__(self):
        state = "unrecorded" if not self._handle else f"device={self._device}"
        return f"<torch_mlu.Notifier {state} enable_timing={self.enable_timing}>"
