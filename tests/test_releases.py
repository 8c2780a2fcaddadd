"""The adapters' release ranges and shape tables (accelhal.compat._releases): ordering and refusals."""

from __future__ import annotations

import pytest

from accelhal import UnsupportedReleaseError
from accelhal.compat._releases import ReleaseRange, ShapeTable, release_key

RANGE = ReleaseRange("deepspeed", floor="0.15.0", newest="0.19.8", below="0.20")


@pytest.mark.parametrize(
    ("older", "newer"),
    [("0.15.0rc1", "0.15.0"), ("0.15", "0.15.1"), ("0.9.9", "0.10.0"), ("2.6.0.dev1", "2.6.0"), ("1.0", "1.0.1")],
)
def test_release_order(older: str, newer: str) -> None:
    assert release_key(older) < release_key(newer)


def test_local_and_padded_releases_equal() -> None:
    assert release_key("2.4.1+cpu") == release_key("2.4.1") and release_key("2.0") == release_key("2")


@pytest.mark.parametrize("version", ["0.15.0", "0.17.6", "0.19.8", "0.19.99"])
def test_range_admits(version: str) -> None:
    assert RANGE.check(version) == version


@pytest.mark.parametrize("version", ["0.14.5", "0.15.0rc1", "0.20.0", "0.20.0rc1", "0.20.0.dev3", "1.0.0"])
def test_range_refuses_with_the_range_named(version: str) -> None:
    with pytest.raises(UnsupportedReleaseError) as caught:
        RANGE.check(version)
    message = str(caught.value)
    assert f"deepspeed {version}" in message and ">=0.15.0,<0.20" in message and "0.19.8" in message
    assert caught.value.installed == version


def test_garbage_version_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not a release number"):
        release_key("main")


def test_shape_table_picks_the_newest_row_at_or_below() -> None:
    table = ShapeTable([("0.15.0", "old"), ("0.19.0", "new")])
    assert table.shape_for("0.15.0") == "old" and table.shape_for("0.18.9") == "old"
    assert table.shape_for("0.19.0") == "new" and table.shape_for("0.19.8") == "new"
    with pytest.raises(ValueError, match="older than the first row"):
        table.shape_for("0.14.0")


def test_shape_table_rows_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="oldest first"):
        ShapeTable([("0.19.0", "new"), ("0.15.0", "old")])
