"""ASTRA-sim 1.0's endpoint bus (MemBus.cc, LogGP.cc, MemMovRequest.cc), replayed for node 0. Times in ns.

Every packet of a ring, direct or halving-doubling phase crosses the NPU's memory bus twice: once before it
is sent (NPU to MA, the memory agent) and once after it is received (MA to NPU). Without
``model-shared-bus`` that crossing is a fixed wait of ``endpoint-delay`` cycles (what the semantics note
calls the endpoint visit). With ``model-shared-bus: 1`` it is ASTRA's LogGP model of a shared bus:

- two LogGP sides, NPU and MA, partners of each other; a side sends one request at a time: the send
  starts ``o`` cycles after the side is free (or waits out the gap ``g`` after its previous send), takes
  ``G`` cycles per byte after the first, and the partner receives it ``L + o`` cycles after the send ends;
- a received request that carries data to reduce waits for the side's one reduction unit,
  ``(bytes // 100) * local-reduction-delay + 50`` cycles a request, in arrival order;
- a request marked "send back" is sent again by the side that received it;
- the NPU side reaches its own memory through a second, inner LogGP bus (NPU2/MEM2, ``G`` = 0.0038
  cycles per byte, same ``L``, ``o``, ``g``): every request the NPU side sends, and every one it receives,
  crosses that inner bus first;
- a side that has sent more than 8 requests in a row lets its partner send first when the partner has
  requests waiting (the THRESHOLD of LogGP.cc).

Every NPU runs the same packets at the same ticks, so node 0's bus stands for every NPU's. All events are
Sys events (``SystemLayer.register``), in ASTRA's order, and the quirks of LogGP.cc are kept on purpose:
a Rec_Finished event always completes the oldest request being received, the receiving side's state is
overwritten by its partner's send, and delays are truncated to whole cycles as ASTRA's ``Tick`` does.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, Protocol

FREE, SENDING, RECEIVING = 0, 1, 2
GENERAL, SEND_FINISHED, REC_FINISHED, PROCESSING_FINISHED = 0, 1, 2, 3
CONSIDER_RETIRE, CONSIDER_PROCESS, CONSIDER_SEND_BACK = 4, 5, 6
THRESHOLD = 8
INNER_G = 0.0038       # MemBus.cc attaches the NPU side's inner bus with this G, whatever the file says


class Host(Protocol):
    def tick(self) -> int: ...
    def register(self, delay: int, fn: Callable[[Any], None], arg: Any = None) -> None: ...


class Request:
    """MemMovRequest: one bus transfer; ``deliver`` is what runs when it completes."""

    __slots__ = ("size", "deliver", "processed", "send_back", "loggp", "event")

    def __init__(self, size: int, deliver: Callable[[], None], processed: bool, send_back: bool,
                 loggp: LogGP) -> None:
        self.size = size
        self.deliver = deliver
        self.processed = processed
        self.send_back = send_back
        self.loggp = loggp
        self.event = GENERAL

    def finished(self) -> None:
        """MemMovRequest::call: the inner bus delivered this request back to its side."""
        self.loggp.call(self.event, self)


class LogGP:
    """One side of a LogGP bus (LogGP.cc)."""

    def __init__(self, host: Host, L: int, o: int, g: int, G: float, reduction_delay: int) -> None:
        self.host = host
        self.L, self.o, self.g, self.G = L, o, g, G
        self.reduction_delay = reduction_delay
        self.last_trans = 0
        self.cur = FREE
        self.prev = FREE
        self.processing_busy = False
        self.subsequent_reads = 0
        self.sends: deque[Request] = deque()
        self.receives: deque[Request] = deque()
        self.processing: deque[Request] = deque()
        self.pre_send: list[Request] = []
        self.pre_process: list[Request] = []
        self.retirements: list[Request] = []
        self.partner: LogGP = self
        self.inner: MemBus | None = None

    def _register(self, delay: float, event: int) -> None:
        self.host.register(int(delay), self.call, event)

    def request_read(self, size: int, processed: bool, send_back: bool, deliver: Callable[[], None]) -> None:
        mr = Request(size, deliver, processed, send_back, self)
        if self.inner is not None:
            mr.event = CONSIDER_SEND_BACK
            self.pre_send.append(mr)
            self.inner.to_npu(size, False, False, mr.finished)
            return
        self.sends.append(mr)
        if self.cur == FREE:
            self._next_read()

    def _next_read(self) -> None:
        """The tail of request_read and of call: send the next request, unless the partner goes first."""
        partner = self.partner
        if self.subsequent_reads > THRESHOLD and partner.sends and partner.subsequent_reads <= THRESHOLD:
            if partner.cur == FREE:
                partner.call(GENERAL)
            return
        now = self.host.tick()
        if self.prev == SENDING:
            since = now - self.last_trans
            offset = self.o if self.o + since > self.g else self.g - since
        else:
            offset = self.o
        mr = self.sends.popleft()
        partner._switch_to_receiver(mr, offset)
        self.cur = SENDING
        self._register(offset + self.G * (mr.size - 1), SEND_FINISHED)

    def _switch_to_receiver(self, mr: Request, offset: int) -> None:
        self.receives.append(mr)
        self.prev = self.cur
        self.cur = RECEIVING
        self._register(offset + (mr.size - 1) * self.G + self.L + self.o, REC_FINISHED)
        self.subsequent_reads = 0

    def _start_processing(self) -> None:
        self.processing_busy = True
        self._register((self.processing[0].size // 100) * self.reduction_delay + 50, PROCESSING_FINISHED)

    def _via_inner(self, mr: Request, event: int, queue: list[Request], send_back: bool) -> None:
        mr.loggp, mr.event = self, event
        queue.append(mr)
        assert self.inner is not None
        self.inner.to_ma(mr.size, False, send_back, mr.finished)

    def _receive_finished(self) -> None:
        """The front receive is in: on to processing, back out, or retired (through the inner bus if any)."""
        front = self.receives[0]
        self.last_trans = self.host.tick()
        self.prev = self.cur
        if len(self.receives) < 2:
            self.cur = FREE
        if front.processed:
            front.processed = False
            self.receives.popleft()
            if self.inner is not None:
                self._via_inner(front, CONSIDER_PROCESS, self.pre_process, True)
            else:
                self.processing.append(front)
            if not self.processing_busy and self.processing:
                self._start_processing()
        else:
            self._onward(front, self.receives)

    def _onward(self, front: Request, queue: deque[Request]) -> None:
        """``front``, done at the head of ``queue``: sent back out, or retired (through the inner bus if any;
        the order of the pop and the hand-over is ASTRA's)."""
        if front.send_back:
            front.send_back = False
            queue.popleft()
            if self.inner is not None:
                self._via_inner(front, CONSIDER_SEND_BACK, self.pre_send, True)
            else:
                self.sends.append(front)
        elif self.inner is not None:
            self._via_inner(front, CONSIDER_RETIRE, self.retirements, False)
            queue.popleft()
        else:
            front.deliver()
            queue.popleft()

    def _processing_finished(self) -> None:
        """The front request is processed: back out or retired; the next one starts."""
        front = self.processing[0]
        self.processing_busy = False
        self._onward(front, self.processing)
        if self.processing:
            self._start_processing()

    def call(self, event: int, req: Request | None = None) -> None:
        if event == SEND_FINISHED:
            self.last_trans = self.host.tick()
            self.prev, self.cur = self.cur, FREE
            self.subsequent_reads += 1
        elif event == REC_FINISHED:
            self._receive_finished()
        elif event == PROCESSING_FINISHED:
            self._processing_finished()
        elif event == CONSIDER_RETIRE:
            assert req is not None
            req.deliver()
            self.retirements.remove(req)
        elif event == CONSIDER_PROCESS:
            assert req is not None
            self.processing.append(req)
            self.pre_process.remove(req)
            if not self.processing_busy and self.processing:
                self._start_processing()
        elif event == CONSIDER_SEND_BACK:
            assert req is not None
            self.sends.append(req)
            self.pre_send.remove(req)
        if self.cur == FREE and self.sends:
            self._next_read()


class MemBus:
    """MemBus.cc: the two sides of one bus, or the fixed endpoint wait when the bus is not modelled."""

    def __init__(self, host: Host, shared: bool, endpoint_delay: int, L: int = 0, o: int = 0, g: int = 0,
                 G: float = 0.0, reduction_delay: int = 1, attach: bool = True) -> None:
        self.host = host
        self.shared = shared
        self.endpoint_delay = endpoint_delay
        self.npu = LogGP(host, L, o, g, G, reduction_delay)
        self.ma = LogGP(host, L, o, g, G, reduction_delay)
        self.npu.partner, self.ma.partner = self.ma, self.npu
        if attach:
            self.npu.inner = MemBus(host, shared, endpoint_delay, L, o, g, INNER_G, reduction_delay,
                                    attach=False)

    def _fixed(self, deliver: Callable[[], None]) -> None:
        self.host.register(self.endpoint_delay, _run, deliver)

    def to_ma(self, size: int, processed: bool, send_back: bool, deliver: Callable[[], None]) -> None:
        """send_from_NPU_to_MA (a packet about to be sent)."""
        if self.shared:
            self.npu.request_read(size, processed, send_back, deliver)
        else:
            self._fixed(deliver)

    def to_npu(self, size: int, processed: bool, send_back: bool, deliver: Callable[[], None]) -> None:
        """send_from_MA_to_NPU (a packet just received)."""
        if self.shared:
            self.ma.request_read(size, processed, send_back, deliver)
        else:
            self._fixed(deliver)


def _run(fn: Callable[[], None]) -> None:
    fn()
