"""The repeated-description guard."""

from __future__ import annotations

import pytest

from vagen.rewards.frequency import FrequencyTracker, normalize_description


def test_repeated_low_score_description_is_penalised():
    t = FrequencyTracker(window=50, top_k=2, penalty=0.2, low_score=0.5, min_count=3)
    stock = "The player is near a box."
    assert [t.update(stock, 0.1) for _ in range(4)] == [0.0, 0.0, 0.2, 0.2]
    # Normalisation: case, spacing and punctuation do not dodge the guard.
    assert t.update("  the PLAYER is near a box ", 0.1) == 0.2


def test_repeated_high_score_description_is_not_penalised():
    t = FrequencyTracker(window=50, top_k=2, penalty=0.2, low_score=0.5, min_count=3)
    assert [t.update("player at 2 3", 1.0) for _ in range(10)] == [0.0] * 10
    assert t.is_frequent("player at 2 3")


def test_only_the_top_k_are_penalised():
    t = FrequencyTracker(window=100, top_k=1, penalty=0.2, low_score=0.5, min_count=2)
    for _ in range(5):
        t.update("most common", 0.0)
    assert t.update("runner up", 0.0) == 0.0
    assert t.update("runner up", 0.0) == 0.0  # count 2 >= min_count, but 1 text is more frequent
    assert t.update("most common", 0.0) == 0.2
    assert t.most_common(1) == [("most common", 6)]


def test_window_forgets():
    t = FrequencyTracker(window=4, top_k=5, penalty=0.3, low_score=0.5, min_count=3)
    for _ in range(3):
        t.update("old", 0.0)
    for i in range(4):
        t.update(f"fresh {i}", 0.0)
    assert not t.is_frequent("old")
    assert t.update("old", 0.0) == 0.0


def test_empty_text_and_digits():
    t = FrequencyTracker(min_count=1, top_k=1, penalty=0.1)
    assert t.update("", 0.0) == 0.0 and t.update(None, 0.0) == 0.0
    assert normalize_description("Box at (1, 2)!") == "box at 1 2"
    assert normalize_description("Box at (1, 2)!", mask_digits=True) == "box at # #"


def test_rejects_bad_settings():
    with pytest.raises(ValueError):
        FrequencyTracker(window=0)
    with pytest.raises(ValueError):
        FrequencyTracker(penalty=-1)
