"""Streams and events: ``stream()`` is a context manager, events record and time where declared."""

from __future__ import annotations

from typing import Any

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.spec import Capability
from accelhal.testing.conformance.base import SuiteBase, expect, is_context_manager


class StreamTests(SuiteBase):
    """Streams, events and event timing, each where the backend declares it."""

    def test_stream_is_a_context_manager(self, accelerator: Accelerator) -> None:
        current = accelerator.current_stream()
        context: Any = accelerator.stream(current)
        expect(
            is_context_manager(context), "stream(current_stream())", "a context manager (__enter__/__exit__)", context
        )
        with context:
            pass

    def test_user_stream_becomes_current(self, accelerator: Accelerator) -> None:
        stream = self.declared_class(accelerator, "Stream", Capability.STREAMS)()
        before = accelerator.current_stream()
        with accelerator.stream(stream):
            expect(
                accelerator.current_stream() == stream,
                "current_stream()",
                "the stream entered with stream(s)",
                accelerator.current_stream(),
            )
        expect(
            accelerator.current_stream() == before,
            "stream(s)",
            "to restore the previous stream on exit",
            accelerator.current_stream(),
        )
        expect(accelerator.default_stream() is not None, "default_stream()", "a stream", None)

    def test_streams_absent_are_none(self, accelerator: Accelerator) -> None:
        self.require_absent(accelerator, Capability.STREAMS)
        expect(
            accelerator.Stream is None, "Stream", "None (the backend does not declare 'streams')", accelerator.Stream
        )

    def test_event_records(self, accelerator: Accelerator) -> None:
        event = self.declared_class(accelerator, "Event", Capability.EVENTS)()
        event.record()
        event.synchronize()
        expect(event.query() is True, "Event().query()", "True after record() and synchronize()", event.query())

    def test_events_absent_are_none(self, accelerator: Accelerator) -> None:
        self.require_absent(accelerator, Capability.EVENTS)
        expect(accelerator.Event is None, "Event", "None (the backend does not declare 'events')", accelerator.Event)

    def test_event_timing(self, accelerator: Accelerator) -> None:
        event_class = self.declared_class(accelerator, "Event", Capability.EVENT_TIMING)
        start, end = event_class(enable_timing=True), event_class(enable_timing=True)
        start.record()
        end.record()
        end.synchronize()
        elapsed = start.elapsed_time(end)
        expect(
            isinstance(elapsed, float) and elapsed >= 0.0,
            "Event(enable_timing=True).elapsed_time()",
            "a float >= 0 (milliseconds)",
            elapsed,
        )
