"""Two sketches seeded by one caller-owned ``Generator``, one of them refused mid-release (task HQH).

``transactional`` (``sklearn_bayes/utils/_transaction.py``) rewound every ``Generator`` the
failing object held to its state on entry.  When another sketch drew from the same generator in
between (another thread) and released that noise, the rewind handed the same state out again: the
other sketch's next query set replayed its released noise.  Now a generator is rewound only when no
other object's call on it ran meanwhile.  Deterministic
reproduction: sketch A's shared-ledger record runs B's query in a thread, then refuses; A retries
(drawing again exactly its unreleased values); B's next query set then draws the noise of its first
one again.  With ``depth=1`` and use-and-keep, ``2 a1 - a2`` is then the exact count of every item.
"""

import threading
import warnings

import numpy as np
import pytest

from sklearn_bayes.exceptions import BudgetExceededError
from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch

ITEMS = list(range(20))


class _RefusesOnceAfterB(PrivacyLedger):
    """A ledger whose first record runs ``other.query`` in another thread, then refuses."""

    def __init__(self):
        super().__init__()
        self.other, self.answers, self.armed = None, [], True

    def record_shared(self, *args, **kwargs):
        if self.armed:
            self.armed = False
            t = threading.Thread(target=lambda: self.answers.append(self.other.query(ITEMS)))
            t.start()
            t.join()
            raise BudgetExceededError("refused (test)")
        return super().record_shared(*args, **kwargs)


def test_a_refused_release_does_not_rewind_noise_another_sketch_released():
    gen = np.random.default_rng(0)
    ledger = _RefusesOnceAfterB()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded noise (and the shared generator's replay warning)
        a = PrivateCountSketch(depth=1, width=65536, random_state=gen, ledger=ledger).fit([100, 101])
        b = PrivateCountSketch(depth=1, width=65536, random_state=gen).fit(np.repeat(ITEMS, 3))
        ledger.other = b
        with pytest.raises(BudgetExceededError):
            a.query([100, 101, 102])
        a.query([100, 101, 102])  # the retry draws again what the refused call drew (never released)
        first = ledger.answers[0]
        second = b.query(ITEMS)
    exact = 2 * first - second  # use-and-keep, one row: a1 = c + N1, a2 = c + N1 + N2
    assert np.sum(exact == 3.0) < len(ITEMS)  # replayed N2 == N1 reveals every count
