"""Graphs: capture and replay give the eager result, or, without graphs, the documented no-op."""

from __future__ import annotations

from typing import Any

import torch

from accelhal.contract.accelerator import Accelerator
from accelhal.contract.spec import Capability
from accelhal.testing.conformance.base import SuiteBase, expect, is_context_manager


class GraphTests(SuiteBase):
    """``create_graph``, ``capture_to_graph``, ``replay_graph`` and ``is_current_stream_capturing``."""

    def test_graph_objects(self, accelerator: Accelerator) -> None:
        self.require(accelerator, Capability.GRAPHS)
        graph = accelerator.create_graph()
        expect(graph is not None, "create_graph()", "a graph object (the backend declares 'graphs')", graph)
        context = accelerator.capture_to_graph(graph)
        expect(is_context_manager(context), "capture_to_graph(graph)", "a context manager", context)
        capturing = accelerator.is_current_stream_capturing()
        expect(capturing is False, "is_current_stream_capturing()", "False outside a capture", capturing)

    def test_replay_gives_the_eager_result(self, accelerator: Accelerator) -> None:
        self.require(accelerator, Capability.GRAPHS)
        self.require_tensors(accelerator)
        source = torch.arange(8, dtype=torch.float32, device=accelerator.device())
        target = torch.zeros_like(source)
        target.copy_(source * 2 + 1)  # eager warm-up, also the expected result for this input
        accelerator.synchronize()
        graph = accelerator.create_graph()
        inside: list[bool] = []
        with accelerator.capture_to_graph(graph):
            inside.append(accelerator.is_current_stream_capturing())
            target.copy_(source * 2 + 1)
        expect(inside == [True], "is_current_stream_capturing()", "True inside capture_to_graph()", inside)
        source.fill_(3.0)
        accelerator.replay_graph(graph)
        accelerator.synchronize()
        expected = (torch.full((8,), 3.0) * 2 + 1).tolist()
        expect(
            target.cpu().tolist() == expected,
            "replay_graph(graph)",
            f"the eager result {expected}",
            target.cpu().tolist(),
        )

    def test_graphs_absent_are_a_no_op(self, accelerator: Accelerator) -> None:
        self.require_absent(accelerator, Capability.GRAPHS)
        graph = accelerator.create_graph()
        expect(graph is None, "create_graph()", "None (the backend does not declare 'graphs')", graph)
        ran: list[Any] = []
        context = accelerator.capture_to_graph(graph)
        expect(is_context_manager(context), "capture_to_graph(None)", "a no-op context manager", context)
        with context:
            ran.append(accelerator.is_current_stream_capturing())
        expect(ran == [False], "capture_to_graph(None)", "to run its body eagerly, not capturing", ran)
        result = self.call(accelerator, "replay_graph", graph)
        expect(result is None, "replay_graph(None)", "a no-op returning None", result)
