"""A guard against a cheap way to farm the world-modeling reward: one stock description.

A policy can learn to write the same generic belief every turn ("the player is near a
box") because it is partially right often enough. Such text is *frequent* and scores
*low*; a genuine description changes with the state, or scores well when it repeats
(a state that really recurs).
"""

from __future__ import annotations

import re
import threading
from collections import Counter, deque


def normalize_description(text: str, mask_digits: bool = False) -> str:
    """Lower-case, collapse whitespace, drop punctuation; optionally replace numbers by ``#``.

    Digits are kept by default: in structured/symbolic beliefs the numbers *are* the
    content, and masking them would make every correct structured answer the same text.
    """
    text = re.sub(r"[^\w\s]", " ", text.lower())
    if mask_digits:
        text = re.sub(r"\d+", "#", text)
    return " ".join(text.split())


class FrequencyTracker:
    """Penalise a description that is among the most repeated recently *and* scores low.

    Rule, applied by :meth:`update` to each ``(text, score)``:

    1. the normalised text joins a sliding window of the last ``window`` descriptions
       (empty texts are ignored);
    2. it is *frequent* when it occurs at least ``min_count`` times in the window and
       fewer than ``top_k`` distinct texts occur strictly more often (it is in the top-k);
    3. the penalty is ``penalty`` when it is frequent and ``score < low_score``, else 0.

    A repeated *accurate* description is never penalised. Thread-safe.
    """

    def __init__(self, window: int = 1024, top_k: int = 8, penalty: float = 0.1, low_score: float = 0.5,
                 min_count: int = 3, mask_digits: bool = False):
        if window < 1 or top_k < 1 or min_count < 1:
            raise ValueError("window, top_k and min_count must be >= 1")
        if penalty < 0:
            raise ValueError(f"penalty must be >= 0, got {penalty}")
        self.window, self.top_k, self.penalty = window, top_k, penalty
        self.low_score, self.min_count, self.mask_digits = low_score, min_count, mask_digits
        self._recent: deque[str] = deque()
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def update(self, text: str | None, score: float) -> float:
        """Record ``text`` and return the penalty (>= 0) it earns under the rule above."""
        key = normalize_description(text or "", self.mask_digits)
        if not key:
            return 0.0
        with self._lock:
            self._recent.append(key)
            self._counts[key] += 1
            if len(self._recent) > self.window:
                old = self._recent.popleft()
                self._counts[old] -= 1
                if not self._counts[old]:
                    del self._counts[old]
            return self.penalty if self._is_frequent(key) and score < self.low_score else 0.0

    def is_frequent(self, text: str) -> bool:
        """Whether ``text`` is currently frequent (rule step 2), without recording it."""
        with self._lock:
            return self._is_frequent(normalize_description(text, self.mask_digits))

    def _is_frequent(self, key: str) -> bool:
        n = self._counts.get(key, 0)
        if n < self.min_count:
            return False
        more_frequent = sum(1 for c in self._counts.values() if c > n)
        return more_frequent < self.top_k

    def most_common(self, k: int | None = None) -> list[tuple[str, int]]:
        """The most repeated normalised descriptions in the window (for logging)."""
        with self._lock:
            return self._counts.most_common(k or self.top_k)
