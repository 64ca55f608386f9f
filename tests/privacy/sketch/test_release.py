"""The release mechanisms of the private count sketch (privacy/_sketch/_release.py).

Scales and spends against the closed forms of spec/private_count_sketch.md (Section 2), merge
rules, and the noise step of each class on a real sketch with the noise draw intercepted.
"""

import math
import warnings

import numpy as np
import pytest

from sklearn_bayes.privacy import PrivateCountSketch
from sklearn_bayes.privacy._sketch import _format
from sklearn_bayes.privacy._sketch._release import (
    MECHANISMS,
    CellPerturbation,
    MedianPerturbation,
    UseAndForget,
    UseAndKeep,
    _median_sensitivity_bound,
    make_release,
)

EPS, D, ETA = 0.7, 5, 0.6


def _fitted(mechanism, depth=D, epsilon=EPS, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return PrivateCountSketch(
            epsilon=epsilon, depth=depth, width=32, mechanism=mechanism, decay=ETA, random_state=0, **params
        ).fit(np.arange(200) % 40)


def _recording(sketch):
    """Intercept the sketch's noise draws: record each scale, return zero noise."""
    scales = []

    def draw(scale, size):
        scales.append(np.broadcast_to(np.asarray(scale, dtype=float), (size,)).copy())
        return np.zeros(size, dtype=sketch.table_.dtype)

    sketch._draw_noise = draw
    return scales


def test_lookup_by_name_covers_the_parameter_and_the_byte_format():
    assert set(MECHANISMS) == {"use_and_keep", "use_and_forget", "median_perturbation", "cell_perturbation"}
    assert tuple(MECHANISMS) == _format._MECHANISMS  # the byte format's codes are this order
    for name, cls in MECHANISMS.items():
        release = make_release(name, EPS, D, ETA)
        assert type(release) is cls and release.name == name
        assert (release.eps0, release.depth, release.decay) == (EPS, D, ETA)


def test_flags():
    assert [n for n, c in MECHANISMS.items() if c.pan_private] == ["use_and_keep", "cell_perturbation"]
    assert all(c.has_error_bound for c in MECHANISMS.values())
    assert [n for n, c in MECHANISMS.items() if c.keeps_noise] == ["use_and_keep", "cell_perturbation"]
    assert [n for n, c in MECHANISMS.items() if c.releases_rows] == ["use_and_keep", "use_and_forget", "cell_perturbation"]
    assert [n for n, c in MECHANISMS.items() if c.static] == ["cell_perturbation"]


def test_first_scales_are_the_closed_forms():
    # use-and-keep / cell perturbation: Lap(d/ε) per cell
    assert UseAndKeep(EPS, D, ETA).first_scale() == pytest.approx(D / EPS, rel=1e-15)
    assert CellPerturbation(EPS, D, ETA).first_scale() == pytest.approx(D / EPS, rel=1e-15)
    # use-and-forget: the first use of a cell gets 1/ε'_1, ε'_1 = (ε/d)(1-η)
    assert UseAndForget(EPS, D, ETA).first_scale() == pytest.approx(1 / ((EPS / D) * (1 - ETA)), rel=1e-15)
    # median perturbation: the first query set gets m_Q/ε_1, ε_1 = ε(1-η), per unit of m_Q
    assert MedianPerturbation(EPS, D, ETA).first_scale() == pytest.approx(1 / (EPS * (1 - ETA)), rel=1e-15)


def test_use_and_forget_spend_is_the_geometric_schedule():
    release = UseAndForget(EPS, 3, ETA)
    row_max = np.array([0, 1, 4])
    # each row's most used cell spent Σ_{u=1..U} (ε/d)(1-η)η^{u-1} = (ε/d)(1 - η^U)
    expected = sum(sum((EPS / 3) * (1 - ETA) * ETA ** (u - 1) for u in range(1, U + 1)) for U in row_max)
    assert release.spend(row_max) == pytest.approx(expected, rel=1e-13)
    assert release.spend(np.zeros(3, dtype=np.int64)) == 0.0
    assert release.spend(np.full(3, 10_000)) == pytest.approx(EPS, rel=1e-15)  # never more than ε


def test_merge_rules():
    a = np.array([[0, 2, 1], [3, 0, 1]])
    b = np.array([[1, 1, 0], [0, 4, 1]])
    for cls in (UseAndKeep, CellPerturbation, MedianPerturbation):  # noise counts add up
        np.testing.assert_array_equal(cls(EPS, 2, ETA).merge_uses(a, b), a + b)
    np.testing.assert_array_equal(UseAndForget(EPS, 2, ETA).merge_uses(a, b), np.maximum(a, b))
    # use-and-forget's schedules continue from max(U_a, U_b): the spend of the merged use counts
    forget = UseAndForget(EPS, 2, ETA)
    merged = forget.merge_uses(a, b)
    assert forget.merged_spend(0.1, merged) == pytest.approx(forget.spend(merged.max(axis=1)))
    assert forget.merged_spend(0.0, merged) == 0.0  # nothing released yet: nothing to continue
    assert forget.merged_spend(10.0, merged) == 10.0
    for cls in (UseAndKeep, MedianPerturbation, CellPerturbation):
        assert cls(EPS, 2, ETA).merged_spend(0.3, merged) == 0.3
    CellPerturbation(EPS, 2, ETA).check_merge(0, 0)
    with pytest.raises(ValueError, match="cannot merge cell_perturbation sketches after a release"):
        CellPerturbation(EPS, 2, ETA).check_merge(0, 1)
    UseAndKeep(EPS, 2, ETA).check_merge(3, 1)


def test_noise_draws_of_the_error_bound():
    draws = np.array([[0, 2], [1, 1]])
    np.testing.assert_array_equal(UseAndKeep(EPS, 2, ETA).noise_draws(draws, 0), draws + 1)  # this query's
    # cell perturbation: one draw per cell (plus the pan-private start), however often it was used
    np.testing.assert_array_equal(CellPerturbation(EPS, 2, ETA).noise_draws(draws, 0), [[1, 2], [1, 1]])
    np.testing.assert_array_equal(CellPerturbation(EPS, 2, ETA).noise_draws(draws + 1, 1), [[2, 3], [2, 2]])


def test_row_noise_of_a_query_now_and_of_a_release():
    """``error_bound``'s noise per row (a query now) and the bounds' noise law (a release just bound)."""
    sk = _fitted("use_and_forget")
    cols = np.array([[0, 1]] * D)
    sk.uses_[:, 0] = 2
    forget = make_release("use_and_forget", EPS, D, ETA)
    var = forget.row_noise_variance(sk, cols, lambda b: 2 * b * b)  # Laplace
    scale = lambda u: D / (EPS * (1 - ETA) * ETA**u)  # 1/ε'_{u+1}: the (u+1)-th use of a cell
    np.testing.assert_allclose(var[:, 0], 2 * scale(2) ** 2, rtol=1e-12)
    np.testing.assert_allclose(var[:, 1], 2 * scale(0) ** 2, rtol=1e-12)
    assert forget.answer_noise_scale(sk, cols) is None
    np.testing.assert_array_equal(forget.table_noise_draws(sk), 0)  # its table is exact
    sk.uses_[:, 0] = 3  # as after the release of the third use
    scales, draws = forget.released_noise(sk, cols)
    np.testing.assert_allclose(scales[:, 0], scale(2), rtol=1e-12)
    np.testing.assert_array_equal(draws, 1)
    keep = _fitted("use_and_keep")
    keep.uses_[:, 1] = 4
    np.testing.assert_array_equal(keep.uses_, make_release("use_and_keep", EPS, D, ETA).table_noise_draws(keep))
    np.testing.assert_allclose(make_release("use_and_keep", EPS, D, ETA).row_noise_variance(keep, cols, lambda b: b)[:, 1],
                               5 * D / EPS)  # four kept draws and this query's
    med = _fitted("median_perturbation")
    np.testing.assert_array_equal(make_release("median_perturbation", EPS, D, ETA).row_noise_variance(med, cols, abs), 0)


@pytest.mark.parametrize("mechanism", ["use_and_keep", "cell_perturbation"])
def test_keep_noises_each_touched_cell_once_and_binds_only_on_commit(mechanism):
    sk = _fitted(mechanism)
    scales = _recording(sk)
    table, uses = sk.table_.copy(), sk.uses_.copy()
    cols, signs = sk._locate(np.array([1, 2, 3], dtype=np.uint64))
    release = sk._release
    chain0, bind = release.answer(sk, cols, signs, 0)
    assert chain0 == EPS  # ε from the first query set on
    n_cells = len({(i, int(c)) for i in range(D) for c in cols[i]})
    # d/ε rounded up to the smallest double with d/b <= ε exactly (review HQU F3): 5/0.7 is one ulp above
    assert scales[0].shape == (n_cells,) and np.all(scales[0] == np.nextafter(D / EPS, np.inf))
    np.testing.assert_array_equal(sk.table_, table)  # nothing bound before the commit
    np.testing.assert_array_equal(sk.uses_, uses)
    bind()
    assert int(sk.uses_.sum()) == n_cells and int(sk.uses_.max()) == 1
    if mechanism == "cell_perturbation":  # a noised cell is never noised again
        chain0, _ = release.answer(sk, cols, signs, 1)
        assert scales[1].shape == (0,)


def test_forget_scale_follows_each_cells_uses():
    sk = _fitted("use_and_forget")
    scales = _recording(sk)
    cols, signs = sk._locate(np.array([7], dtype=np.uint64))
    release = sk._release
    spends = []
    for k in range(3):
        chain0, bind = release.answer(sk, cols, signs, k)
        bind()
        spends.append(chain0)
    for u in range(3):  # the (u+1)-th use: 1/ε'_{u+1}, ε'_{u+1} = (ε/d)(1-η)η^u
        np.testing.assert_allclose(scales[u], 1 / ((EPS / D) * (1 - ETA) * ETA**u), rtol=1e-12)
    # one cell per row, used u times: Σ_i (ε/d)(1 - η^u) = ε(1 - η^u)
    np.testing.assert_allclose(spends, [EPS * (1 - ETA**u) for u in (1, 2, 3)], rtol=1e-12)


@pytest.mark.parametrize("depth", [3, 4])
def test_median_scale_is_m_q_over_the_schedule(depth):
    sk = _fitted("median_perturbation", depth=depth)
    scales = _recording(sk)
    keys = np.arange(10, dtype=np.uint64)
    cols, signs = sk._locate(keys)
    m_q = _median_sensitivity_bound(cols, sk.table_.shape[1])
    half = depth % 2 == 0  # discrete noise on 2 f̂ for an even depth: sensitivity 2 m_Q
    for k in range(3):
        chain0, bind = sk._release.answer(sk, cols, signs, k)
        assert scales[k].shape == (10,)
        expected = (2 if half else 1) * m_q / (EPS * (1 - ETA) * ETA**k)
        assert scales[k][0] == pytest.approx(expected, rel=1e-12)
        assert chain0 == pytest.approx(EPS * (1 - ETA ** (k + 1)), rel=1e-12)  # Σ_{j<=k} ε(1-η)η^j
        np.testing.assert_array_equal(bind(), sk._estimate(sk.table_, cols, signs))  # zero noise
    np.testing.assert_array_equal(sk.uses_, 0)  # the table and its use counts stay exact


def test_median_schedule_exhaustion_is_refused():
    release = MedianPerturbation(1.0, 3, 0.01)
    sk = _fitted("median_perturbation", depth=3, epsilon=1.0)
    cols, signs = sk._locate(np.arange(4, dtype=np.uint64))
    with pytest.raises(ValueError, match="exhausted at query set 21"):
        release.answer(sk, cols, signs, 20)
    assert math.isfinite(release.answer(sk, cols, signs, 0)[0])
