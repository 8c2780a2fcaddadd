"""The host-staged gloo that accelhal sets up on mps, on real device tensors: two ranks on the test device.

``init_process_group("gloo")`` on a device gloo does not carry sets up ``hostgloo``
(:mod:`accelhal.distributed.host_staging`), as the default does on mps
(``tests/test_distributed_mps.py``, where this torch can make no mps tensor). Here the
tensors are the test device's: collectives, DDP, async work, send/recv and a parameter broadcast in
place must give the exact results, in the device tensors, and print nothing of torch's.
"""

from __future__ import annotations

from tests.distributed_forked_ranks import run


def test_gloo_on_a_device_gloo_cannot_carry_runs_through_host_copies() -> None:
    stderr: list[str] = []
    for rank, record in enumerate(run("testdev", stderr)):
        assert record["setup"] == ["hostgloo", "hostgloo", f"testdev:{rank}", "testdev"], rank
        assert record["checks"] == dict.fromkeys(record["checks"], True) and "ddp" in record["checks"], record
        completed, values, device, future_holds_the_tensor = record["async"]
        assert completed and values == [3.0, 3.0, 3.0] and device == f"testdev:{rank}" and future_holds_the_tensor
        gathered, scattered = record["into_tensor"]
        assert gathered == [0.0, 0.0, 1.0, 1.0]
        assert scattered == [[0.0, 2.0], [4.0, 6.0]][rank]
        assert record["sent"] == [7.0], rank
        parameter, requires_grad, future_holds_the_tensors = record["parameter_and_gather"]
        assert parameter == [1.0, 1.0] and requires_grad and future_holds_the_tensors == [True, True], record
    assert "Work::result" not in stderr[0]  # torch's deprecation warning, printed once a process reads it
