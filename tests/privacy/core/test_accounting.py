"""Privacy accounting: subsampling amplification, the ledger, and forks (copies of running sketches)."""

import copy
import math
import pickle

import numpy as np
import pytest
from sklearn.base import clone

from sklearn_bayes.privacy import PrivacyLedger, PrivateCountSketch
from sklearn_bayes.privacy._core._accounting import amplify_by_subsampling, log1p_exp, subsampled_base_epsilon


def _sketch(seed=0, **params):
    return PrivateCountSketch(random_state=np.random.default_rng(seed), **params)


def test_subsampling_amplification_formula():
    for eps in (0.01, 0.5, 1.0, 5.0):
        for rate in (0.001, 0.1, 0.5, 1.0):
            amp = amplify_by_subsampling(eps, rate)
            assert math.isclose(amp, math.log(1 + rate * (math.exp(eps) - 1)), rel_tol=1e-9)
            assert amp <= eps + 1e-15
            assert math.isclose(amplify_by_subsampling(subsampled_base_epsilon(eps, rate), rate), eps, rel_tol=1e-12)
    # roughly rate * eps for small eps
    assert math.isclose(amplify_by_subsampling(0.01, 0.1), 0.1 * 0.01, rel_tol=0.01)
    with pytest.raises(ValueError):
        amplify_by_subsampling(1.0, 0.0)
    with pytest.raises(ValueError):
        subsampled_base_epsilon(-1.0, 0.5)


@pytest.mark.parametrize("eps", [1e-300, 1e-8, 1.0, 699.0, 710.0, 1e4, 1e300])
@pytest.mark.parametrize("rate", [1e-320, 1e-300, 1e-3, 0.5])
def test_subsampling_formulas_never_overflow(eps, rate):
    """ε₀ = ln(1 + (e^ε - 1)/ρ) and its inverse in log space: finite, and inverse to 1e-12."""
    e0 = subsampled_base_epsilon(eps, rate)
    assert math.isfinite(e0) and e0 >= eps
    assert math.isclose(amplify_by_subsampling(e0, rate), eps, rel_tol=1e-12)
    if eps >= 710:  # e^ε overflows a double: ε₀ = ε - ln ρ + log1p((ρ - 1) e^{-ε})
        assert math.isclose(e0, eps - math.log(rate), rel_tol=1e-15)


def test_large_epsilon_with_subsampling_runs():
    # was: OverflowError: math range error
    est = _sketch(epsilon=710, sampling_rate=0.5, width=64).fit([1] * 100)
    est.query([1])
    assert math.isclose(est.epsilon_spent_, 710.0, rel_tol=1e-12)


def test_ledger_records_and_is_shared_by_clone_but_copied_by_pickle():
    ledger = PrivacyLedger()
    est = PrivateCountSketch(ledger=ledger, random_state=np.random.default_rng(0))
    assert clone(est).ledger is ledger
    assert copy.deepcopy(ledger) is ledger
    est.fit([1, 2, 2, 3])
    est.query([2])
    other = clone(est).fit([1, 1])
    other.query([1])
    # two fits on the same individuals: the shared ledger adds both releases up
    assert ledger.n_releases == 2 and math.isclose(ledger.epsilon_spent, 2.0)
    assert est.ledger_.n_releases == 1 and math.isclose(est.epsilon_spent_, 1.0)
    # the same release carries one id in the stream's ledger and in the shared one
    assert est.ledger_.records[0]["id"] == ledger.records[0]["id"]
    assert len({r["id"] for r in ledger.records}) == 2
    restored = pickle.loads(pickle.dumps(ledger))
    assert restored is not ledger and restored.records == ledger.records
    with pytest.raises(ValueError):
        ledger.record("x", -0.1)


def test_compose_counts_common_history_once():
    a = PrivacyLedger()
    a.record("q", 1.0)
    b = pickle.loads(pickle.dumps(a))
    a.record("q", 0.25)
    b.record("q", 0.5)
    c = PrivacyLedger()
    c.record("q", 2.0)
    assert PrivacyLedger.compose(a, b).epsilon_spent == 1.75
    assert PrivacyLedger.compose(a, b, c, a).epsilon_spent == 3.75
    assert PrivacyLedger.compose().epsilon_spent == 0.0
    composed = PrivacyLedger.compose(a, b)
    composed.record("q", 1.0)
    assert a.n_releases == 2  # a new ledger, the inputs are unchanged
    with pytest.raises(TypeError, match="PrivacyLedger"):
        PrivacyLedger.compose(a, [1.0])


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
@pytest.mark.parametrize("queried_before", [False, True])
def test_forks_that_both_query_are_charged_twice(how, queried_before):
    """A copy of a running use-and-keep sketch and its original both answer: 2ε, never ε.

    Both are forks: each charges its history afresh at its next release.  With a release
    before the copy, the composed ledgers hold the common history once plus one ε per
    fork: 3ε, conservative (each fork's own history is ε-DP, so 2ε would do).
    """
    shared = PrivacyLedger()
    a = _sketch(width=64, ledger=shared).fit([1, 2, 2, 3])
    if queried_before:
        a.query([2])
    b = copy.deepcopy(a) if how == "deepcopy" else pickle.loads(pickle.dumps(a))
    assert b.stream_id_ == a.stream_id_ and b._fork_id != a._fork_id
    a.query([1])
    b.query([1])
    a.query([3])
    b.query([3])
    history = 1.0 if queried_before else 0.0
    assert PrivacyLedger.compose(a.ledger_, b.ledger_).epsilon_spent == history + 2.0
    if how == "deepcopy":
        # in-process copies share the stream's ledger_ (and the ledger parameter): each reports the total
        assert b.ledger_ is a.ledger_ and b.ledger is shared
        assert a.epsilon_spent_ == b.epsilon_spent_ == shared.epsilon_spent == history + 2.0
    else:
        # a pickled copy loaded while its original is alive in this process shares the original's
        # ledger_ (review HQW: 400 such copies averaged the noise away while each reported eps), so
        # each reports the total; its ledger parameter is a snapshot, whose records reach the original
        assert b.ledger_ is a.ledger_
        assert a.epsilon_spent_ == b.epsilon_spent_ == history + 2.0
        assert shared.epsilon_spent == history + 2.0 and b.ledger is not shared
    # pickling marks a fork once: pickling twice in a row gives the same bytes
    assert pickle.dumps(a) == pickle.dumps(a)


def test_fork_of_a_fork_and_other_mechanisms():
    # three forks of one use-and-keep stream that all answer: 3ε after the common history
    a = _sketch(width=64).fit([1, 2])
    a.query([1])
    b = pickle.loads(pickle.dumps(a))
    c = pickle.loads(pickle.dumps(b))
    for est in (a, b, c):
        est.query([2])
        est.query([1])
    assert PrivacyLedger.compose(a.ledger_, b.ledger_, c.ledger_).epsilon_spent == 4.0
    # loaded while the original is alive, the copies share its ledger_: each reports the total
    assert b.ledger_ is a.ledger_ and c.ledger_ is a.ledger_
    assert a.epsilon_spent_ == b.epsilon_spent_ == c.epsilon_spent_ == 4.0
    # median perturbation: every fork is charged its whole history again (basic composition
    # of the forks' histories, which counts the common history once more per fork)
    m = _sketch(width=64, mechanism="median_perturbation", decay=0.5).fit([1, 2])
    m.query([1])  # ε (1 - η) = 0.5
    f = copy.deepcopy(m)
    m.query([1])  # m's history: 0.75, charged afresh
    f.query([1])  # f's history: 0.75, charged afresh
    assert math.isclose(m.epsilon_spent_, 0.5 + 0.75 + 0.75)
    # no copy, no fork: a stream that is never copied is charged once
    s = _sketch(width=64).fit([1])
    for _ in range(3):
        s.query([1])
    assert s.epsilon_spent_ == 1.0


def test_pickling_without_loading_is_not_a_fork():
    """``pickle.dumps`` (e.g. to compare states) makes no copy: the stream is charged once."""
    a = _sketch(width=64).fit([1, 2])
    a.query([1])
    for _ in range(3):
        pickle.dumps(a)
        a.query([2])
    assert a.epsilon_spent_ == 1.0
    # loading those bytes makes a copy: from now on the original is a fork as well
    b = pickle.loads(pickle.dumps(a))
    a.query([1])
    assert a.epsilon_spent_ == 2.0
    del b
    # a copy whose original is gone (a restored checkpoint) is charged afresh too
    data = pickle.dumps(a)
    del a
    restored = pickle.loads(data)
    restored.query([1])
    assert restored.epsilon_spent_ == 3.0


def test_releases_into_a_detached_shared_ledger_are_refused_before_noise():
    """A copy of a shared in-memory ledger that cannot reach its original refuses, naming ``path=``.

    In-process pickle round trips forward to the original; a copy whose original is not in
    this process (here: gone, as for a joblib process worker) refuses the release, and the
    sketch is left exactly as it was (its noise was never bound).
    """
    from sklearn_bayes.exceptions import DetachedLedgerError

    ledger = PrivacyLedger()
    stream = np.arange(200) % 7
    sketch = PrivateCountSketch(epsilon=1.0, depth=2, width=16, ledger=ledger, random_state=None)
    sketch.partial_fit(stream).query([1, 2])
    n = ledger.n_releases
    data = pickle.dumps(sketch)
    same_process_copy = pickle.loads(data)
    same_process_copy.query([3])  # the original ledger is alive here: the record reaches it
    assert ledger.n_releases == n + 1 and ledger.records[-1]["id"] == same_process_copy.ledger_.records[-1]["id"]
    del same_process_copy, sketch, ledger  # the original ledger is gone (as in another process)
    import gc

    gc.collect()
    worker_copy = pickle.loads(data)
    before = pickle.dumps(worker_copy)
    with pytest.raises(DetachedLedgerError, match=r"path=\.\.\.") as info:
        worker_copy.query([3])
    assert "PrivateCountSketch" in str(info.value)
    assert pickle.dumps(worker_copy) == before  # nothing recorded, nothing bound
    assert worker_copy.ledger.n_releases == n  # the snapshot did not record it either
    worker_copy.ledger_.record("own ledger", 0.0)  # an estimator's own ledger_ records as always


def test_a_snapshot_takes_the_place_of_its_dead_original_only_if_it_holds_all_its_records():
    from sklearn_bayes.exceptions import DetachedLedgerError

    import gc

    original = PrivacyLedger(budget=(2.0, 0.0))
    original.record("q", 0.5)
    data = pickle.dumps(original)
    del original
    gc.collect()
    first, second = pickle.loads(data), pickle.loads(data)
    first.record_shared("Est", "Est/q", 0.5)  # the original held exactly these records: takes its place
    second.record_shared("Est", "Est/q", 0.5)  # ... and the second copy forwards to it
    # the second copy keeps what it forwarded (0.5 pickled + 0.5 through it)
    assert first.epsilon_spent == 1.5 and second.epsilon_spent == 1.0 and first.budget == (2.0, 0.0)
    # an original that recorded after it was pickled: its snapshot would miss that record, so it refuses
    other = PrivacyLedger()
    data = pickle.dumps(other)
    other.record("q", 1.0)
    del other
    gc.collect()
    late = pickle.loads(data)
    with pytest.raises(DetachedLedgerError, match=r"path="):
        late.record_shared("Est", "Est/q", 0.5)
    assert late.n_releases == 0


def test_a_pickle_of_a_forwarding_snapshot_can_take_the_place_of_the_dead_original():
    """A snapshot forwards its records to its live original *and keeps them*: a pickle of it made
    before the original died holds exactly the original's records at death and takes its place.

    (Without the kept records this depended on when the collector ran: the original dying after
    the forwarded release made the later copy refuse -- a flaky property test on the sketch.)"""
    import gc

    original = PrivacyLedger()
    first = pickle.loads(pickle.dumps(original))
    target, (rid,) = first._reserve("Est", [("Est/fit", 1.0, 0.0)])
    assert target is original  # forwarded while the original lives ...
    target._settle(rid, 0.5, 0.0, "settled")
    assert [r["epsilon"] for r in first.records] == [0.5]  # ... kept by the snapshot, settled in both
    assert [r["epsilon"] for r in original.records] == [0.5]
    second = pickle.loads(pickle.dumps(first))  # a copy of the copy carries that record
    assert [r["id"] for r in second.records] == [rid]
    del original, target
    gc.collect()
    second.record_shared("Est", "Est/q", 0.25)  # takes the dead original's place
    assert second.epsilon_spent == 0.75 and second.n_releases == 2
    first.record_shared("Est", "Est/q", 0.25)  # ... and the first copy now forwards to it
    assert second.epsilon_spent == 1.0 and first.epsilon_spent == 0.75


def test_a_snapshot_keeps_nothing_of_a_refused_record():
    from sklearn_bayes.exceptions import BudgetExceededError

    original = PrivacyLedger(budget=(1.0, 0.0))
    snap = pickle.loads(pickle.dumps(original))
    with pytest.raises(BudgetExceededError):
        snap.record_shared("Est", "Est/q", 1.5)
    assert snap.n_releases == 0 and original.n_releases == 0


def test_copies_of_a_ledger_are_the_ledger_and_pickles_keep_its_budget():
    ledger = PrivacyLedger(budget=(1.0, 1e-6))
    assert copy.copy(ledger) is ledger and copy.deepcopy(ledger) is ledger
    ledger.record("q", 0.5, delta=1e-7)
    snap = pickle.loads(pickle.dumps(ledger))
    assert snap is not ledger and snap.budget == (1.0, 1e-6) and snap.records == ledger.records
    # the snapshot's shared records go to the original (alive in this process), checked against its budget
    snap.record_shared("Est", "Est/q", 0.25, delta=1e-7)
    # ... and the snapshot keeps the record it forwarded (the same record: one id)
    assert ledger.epsilon_spent == 0.75 and snap.epsilon_spent == 0.75
    assert snap.records[-1]["id"] == ledger.records[-1]["id"]
    from sklearn_bayes.exceptions import BudgetExceededError

    with pytest.raises(BudgetExceededError):
        snap.record_shared("Est", "Est/q", 0.5)
    assert ledger.n_releases == 2


def test_log1p_exp_is_softplus_without_overflow():
    """log(1 + e^x) to a few ulps on both sides of the switch at x = 30, and finite where e^x overflows."""
    for x in (-50.0, -1.0, 0.0, 1.0, 29.9, 30.0, 30.1, 100.0, 709.0):
        assert log1p_exp(x) == pytest.approx(float(np.logaddexp(0.0, x)), rel=1e-15, abs=1e-300)
    assert log1p_exp(1e4) == 1e4 and log1p_exp(0.0) == math.log(2.0)
