"""``accelhal.plain_record``: the dataclass-like records of the selection path behave like dataclasses."""

from __future__ import annotations

import copy
import pickle
import sys

import pytest

from accelhal.contract.spec import BackendSpec, Status, Verdict
from accelhal.discovery.records import Decision
from accelhal.plain_record import FrozenRecordError, field, record, record_fields


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list, compare=False, repr=False)


@record
class Counter:
    name: str
    hits: int = 0
    seen: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.hits < 0:
            raise ValueError(f"hits must be >= 0, got {self.hits}")


def test_positional_keyword_and_defaults() -> None:
    assert record_fields(Point(1)) == {"x": 1, "y": 0, "tags": []}
    assert record_fields(Point(1, 2)) == record_fields(Point(y=2, x=1))


def test_factories_build_a_fresh_value_per_instance() -> None:
    first, second = Counter("a"), Counter("b")
    first.seen.append("x")
    assert second.seen == []
    assert "seen" not in vars(Counter), "the class must not keep a shared default"


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, r"Point\(\) missing required argument: 'x'"),
        ((1, 2, [], 4), {}, r"Point\(\) takes 3 positional arguments but 4 were given"),
        ((1,), {"z": 3}, r"Point\(\) got an unexpected keyword argument 'z'"),
        ((1,), {"x": 3}, r"Point\(\) got multiple values for argument 'x'"),
    ],
)
def test_bad_arguments_read_like_python(args: tuple[object, ...], kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        Point(*args, **kwargs)  # type: ignore[misc]


def test_frozen_refuses_assignment_and_deletion() -> None:
    point = Point(1)
    with pytest.raises(FrozenRecordError, match="cannot assign to field 'x' of frozen Point"):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(FrozenRecordError, match="cannot delete field 'y'"):
        del point.y
    assert isinstance(FrozenRecordError("x"), AttributeError)
    assert point.x == 1


def test_mutable_records_assign_and_are_unhashable() -> None:
    counter = Counter("a")
    counter.hits += 1
    assert counter.hits == 1
    with pytest.raises(TypeError, match="unhashable"):
        hash(counter)


def test_equality_hash_and_repr_honour_compare_and_repr() -> None:
    assert Point(1, tags=["a"]) == Point(1, tags=["b"])
    assert hash(Point(1, tags=["a"])) == hash(Point(1))
    assert Point(1) != Point(2)
    assert Point(1) != (1, 0)
    assert repr(Point(1, 2, ["hidden"])) == "Point(x=1, y=2)"
    assert repr(Counter("a")) == "Counter(name='a', hits=0, seen=[])"


def test_post_init_runs() -> None:
    with pytest.raises(ValueError, match="hits must be >= 0, got -1"):
        Counter("a", -1)


def test_a_field_without_default_after_one_with_default_is_refused() -> None:
    with pytest.raises(TypeError, match="field 'b' without a default follows a field with one"):

        @record
        class Bad:
            a: int = 0
            b: int


def test_methods_the_class_defines_are_kept() -> None:
    @record
    class Named:
        name: str

        def __repr__(self) -> str:
            return f"<{self.name}>"

    assert repr(Named("n")) == "<n>"


def test_pickle_and_copy_round_trip() -> None:
    point = Point(3, 4, ["t"])
    for clone in (pickle.loads(pickle.dumps(point)), copy.deepcopy(point), copy.copy(point)):
        assert clone == point and clone.tags == ["t"]


def test_the_selection_records_are_records() -> None:
    verdict = Verdict.no_device("none here", hint="plug one in")
    assert (verdict.status, verdict.reason, verdict.hint) == (Status.NO_DEVICE, "none here", "plug one in")
    assert verdict == Verdict(Status.NO_DEVICE, "none here", "plug one in")
    with pytest.raises(ValueError, match="invalid BackendSpec 'Bad!'"):
        BackendSpec(name="Bad!", device_type="cpu", priority=1, accelerator="m:C", probe=Verdict.available)
    decision = Decision(None, "fallback", "why", [], [], [], {})
    assert (decision.error, decision.seconds) == (None, 0.0)


def test_replace_copies_public_fields_and_starts_private_state_afresh() -> None:
    from accelhal.plain_record import replace

    spec = BackendSpec(name="acme", device_type="cpu", priority=1, accelerator="m:C", probe=Verdict.available)
    spec._class_cache.append(int)  # type: ignore[arg-type]
    moved = replace(spec, priority=7, accelerator="n:D")
    assert (moved.name, moved.priority, moved.accelerator) == ("acme", 7, "n:D")
    assert moved._class_cache == [] and spec._class_cache == [int]
    with pytest.raises(ValueError, match="priority must be an int"):
        replace(spec, priority="high")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        replace(Point(1), colour="red")


@pytest.mark.skipif(sys.version_info < (3, 13), reason="copy.replace is Python 3.13+")
def test_copy_replace_uses_the_record_protocol() -> None:
    assert copy.replace(Point(1, 2), y=5) == Point(1, 5)  # type: ignore[attr-defined]


def test_a_record_cannot_derive_from_another() -> None:
    with pytest.raises(TypeError, match="cannot derive from another record"):

        @record
        class Point3(Point):  # type: ignore[misc]
            z: int = 0
