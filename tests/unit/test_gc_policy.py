"""The collector's bulk settings (substrate/gc_policy.py)."""

from __future__ import annotations

import gc

import pytest

from substrate.gc_policy import BULK_THRESHOLDS, bulk_work


def test_bulk_work_freezes_what_is_alive_and_restores_the_process_settings() -> None:
    before = gc.get_threshold()
    assert gc.get_freeze_count() == 0
    with bulk_work():
        assert gc.get_threshold() == BULK_THRESHOLDS
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_nested_bulk_work_keeps_the_outer_settings_until_the_outermost_ends() -> None:
    before = gc.get_threshold()
    with bulk_work():
        frozen = gc.get_freeze_count()
        with bulk_work():
            assert gc.get_threshold() == BULK_THRESHOLDS
        assert gc.get_threshold() == BULK_THRESHOLDS
        assert gc.get_freeze_count() == frozen
    assert gc.get_threshold() == before


def test_settings_come_back_when_the_work_fails_and_as_a_decorator() -> None:
    before = gc.get_threshold()

    @bulk_work()
    def importing() -> tuple[int, int, int]:
        return gc.get_threshold()

    assert importing() == BULK_THRESHOLDS
    with pytest.raises(RuntimeError), bulk_work():
        raise RuntimeError("the import failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
