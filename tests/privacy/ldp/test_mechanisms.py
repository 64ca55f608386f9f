"""Subset selection's client: the k = 1 path (GRR) against the general one (issue 28 round 6)."""

import numpy as np
import pytest

from sklearn_bayes.privacy._ldp._mechanisms import ss_privatize_packed


def _reference_packed(x, K, epsilon, k, rng):
    """The general path of ``ss_privatize_packed`` (argpartition of the keys), written out."""
    n = x.size
    q_out = np.exp(np.log(K - k) - np.logaddexp(np.log(k) + epsilon, np.log(K - k))) * (1.0 + 4 * np.finfo(float).eps)
    keep = ~(rng.random(n) < max(q_out, np.nextafter(0.0, 1.0)))
    keys = rng.random((n, K))
    keys[np.arange(n), x] = np.where(keep, -1.0, 2.0)
    idx = np.argpartition(keys, k - 1, axis=1)[:, :k]
    mask = np.zeros((n, K), dtype=bool)
    mask[np.arange(n)[:, None], idx] = True
    return np.packbits(mask, axis=1)


@pytest.mark.parametrize("K, eps", [(2, 0.5), (3, 8.0), (10, 8.0), (17, 4.0), (64, 6.0)])
def test_grr_path_equals_argpartition_path(K, eps):
    # the same uniforms, the same smallest key: identical responses (exact ties of two 53-bit
    # uniforms, where the two could differ, do not occur among these 20,000 users)
    x = np.random.default_rng(K).integers(0, K, size=20_000)
    got = ss_privatize_packed(x, K, eps, 1, np.random.default_rng(5))
    ref = _reference_packed(x, K, eps, 1, np.random.default_rng(5))
    np.testing.assert_array_equal(got, ref)
    assert np.all(np.unpackbits(got, axis=1, count=K).sum(axis=1) == 1)


def test_set_response_privatize_warns_on_seeded_noise_like_rrrr():
    """Regression (HQL): ``SetResponseMechanism.privatize(random_state=int)`` gave no
    ``SeededNoiseWarning`` while ``RRRRMechanism.privatize`` did; a bad ``x`` is refused
    before the generator is looked at, and ``None`` stays silent."""
    import warnings

    from sklearn_bayes import AdaptiveLDPFrequencyEstimator
    from sklearn_bayes.exceptions import SeededNoiseWarning

    mech = AdaptiveLDPFrequencyEstimator(n_categories=10, epsilon=1.0).client_mechanism()
    with pytest.warns(SeededNoiseWarning, match="SetResponseMechanism.privatize"):
        out = mech.privatize([1, 2, 3], random_state=0)
    assert out.shape == (3, 10) and out.dtype == bool
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert mech.privatize([1, 2, 3]).shape == (3, 10)
        with pytest.raises(ValueError, match="x must hold integer category positions"):
            mech.privatize([10], random_state=0)
