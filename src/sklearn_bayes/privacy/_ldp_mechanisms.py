"""Static epsilon-LDP frequency protocols with two-level likelihoods: subset selection, GRR, OUE.

Each protocol privatises a category ``x`` in ``[K]`` into a response that defines a set
``A(y)`` with ``P(y | x) ∝ e^eps`` if ``x in A(y)`` else ``1`` (exactly ``epsilon``-LDP:
the ratio of two likelihood values of a response is ``1`` or ``e^{±eps}``):

- subset selection ``SS(k)`` (Wang et al. 2016; Ye and Barg 2018): the response is a
  ``k``-subset ``Y``; ``P(Y | x) = e^eps / D`` if ``x in Y`` else ``1 / D`` with
  ``D = C(K-1, k-1) e^eps + C(K-1, k)``.  ``k = 1`` is generalised randomised response
  (GRR), ``A = {y}``;
- optimised unary encoding (OUE, Wang et al. 2017): bit ``x`` is 1 with probability
  1/2, every other bit with ``q = 1 / (e^eps + 1)``; ``A`` = the set bits.

:func:`best_subset_size` picks ``k`` minimising the summed variance of the unbiased
frequency estimate at the uniform distribution (``k ≈ K / (e^eps + 1)``; ``1`` (GRR)
when ``K < 3 e^eps + 2``).
"""

import numpy as np
from scipy.special import gammaln

from ._ldp_posterior import Groups

__all__ = ["MECHANISMS", "SetResponseMechanism", "best_subset_size", "ss_privatize", "oue_privatize",
           "groups_from_masks", "groups_from_unique",
           "ss_log_probabilities", "ss_variance"]


def ss_variance(K, epsilon, k):
    """Summed variance (times n) of the unbiased SS(k) estimate at the uniform distribution."""
    e = np.exp(min(epsilon, 700.0))
    p = k * e / (k * e + K - k)
    q = ((k - 1) * p + k * (1 - p)) / (K - 1) if K > 1 else 0.0
    f = p / K + (1 - 1 / K) * q
    return K * f * (1 - f) / (p - q) ** 2


def best_subset_size(K, epsilon):
    """``k`` in ``1..K-1`` minimising :func:`ss_variance` (first on ties)."""
    ks = np.arange(1, K)
    if K > 4096:  # the optimum is near K / (e^eps + 1): search a window around it
        c = int(round(K / (np.exp(min(epsilon, 700.0)) + 1)))
        ks = np.arange(max(1, c - 64), min(K - 1, c + 64) + 1)
    v = np.array([ss_variance(K, epsilon, int(k)) for k in ks])
    return int(ks[int(np.argmin(v))])


def ss_log_probabilities(K, epsilon, k):
    """``(ln P(Y | x) for x in Y, ln P(Y | x) for x not in Y)`` of SS(k), in log space."""
    lD = np.logaddexp(epsilon + gammaln(K) - gammaln(k) - gammaln(K - k + 1),
                      gammaln(K) - gammaln(k + 1) - gammaln(K - k))
    return epsilon - lD, -lD


def ss_privatize(x, K, epsilon, k, rng):
    """SS(k) responses of the categories ``x`` as a boolean ``(n, K)`` mask (``O(n K)``)."""
    x = np.asarray(x, dtype=np.intp)
    n = x.size
    # the rare event "x is left out" is drawn with its own probability, rounded up:
    # P(u < q) = ceil(q 2^53) / 2^53 >= q for numpy's 53-bit uniforms, so the realised
    # mechanism is never less random than SS(k) (drawing "kept" with p_in = 1 - q instead
    # rounds q down, to exactly 0 above eps ~ 37: an unbounded privacy loss)
    # (an underflow to 0 at eps > ~745 would make it impossible: keep the smallest double, so
    # u = 0, probability 2^-53 >= q, still leaves x out)
    q_out = np.exp(np.log(K - k) - np.logaddexp(np.log(k) + epsilon, np.log(K - k))) * (1.0 + 4 * np.finfo(float).eps)
    q_out = max(q_out, np.nextafter(0.0, 1.0))
    keep = ~(rng.random(n) < q_out)
    keys = rng.random((n, K))
    rows = np.arange(n)
    keys[rows, x] = np.where(keep, -1.0, 2.0)  # first when kept, never otherwise
    idx = np.argpartition(keys, k - 1, axis=1)[:, :k] if k < K else np.tile(np.arange(K), (n, 1))
    mask = np.zeros((n, K), dtype=bool)
    mask[rows[:, None], idx] = True
    return mask


def oue_privatize(x, K, epsilon, rng):
    """OUE responses (bit vectors) of the categories ``x`` as a boolean ``(n, K)`` mask."""
    x = np.asarray(x, dtype=np.intp)
    n = x.size
    q = 1.0 / (np.exp(min(epsilon, 700.0)) + 1.0)
    mask = rng.random((n, K)) < q
    mask[np.arange(n), x] = rng.random(n) < 0.5
    return mask


def groups_from_masks(masks, epsilon):
    """:class:`Groups` of responses given as sets ``A(y)`` (boolean ``(n, K)``), ratio ``e^eps``.

    Equal sets are grouped (lexicographic order of the packed masks, so the groups do
    not depend on the order of the responses).
    """
    masks = np.asarray(masks, dtype=bool)
    n, K = masks.shape
    packed = np.packbits(masks, axis=1)
    void = np.ascontiguousarray(packed).view(np.dtype((np.void, packed.shape[1])))[:, 0]
    _, first, count = np.unique(void, return_index=True, return_counts=True)
    uniq = masks[first]
    sizes = uniq.sum(axis=1)
    a_ptr = np.zeros(uniq.shape[0] + 1, dtype=np.int32)
    np.cumsum(sizes, out=a_ptr[1:])
    a_idx = np.nonzero(uniq)[1].astype(np.int32)
    G = uniq.shape[0]
    # likelihood ratio e^eps, kept finite: for eps > 700 the out-of-set value is e^-eps
    f_in = np.full(G, np.exp(min(epsilon, 700.0)) if epsilon <= 700 else 1.0)
    f_out = np.full(G, 1.0 if epsilon <= 700 else 0.0)
    return Groups(K, a_ptr, a_idx, np.full(G, -1, dtype=np.int32), f_in, np.zeros(G), f_out,
                  count.astype(np.int64))


def groups_from_unique(masks, counts, epsilon):
    """:class:`Groups` of distinct sets ``masks`` (boolean ``(G, K)``) with their counts."""
    masks = np.asarray(masks, dtype=bool)
    G, K = masks.shape
    sizes = masks.sum(axis=1)
    a_ptr = np.zeros(G + 1, dtype=np.int32)
    np.cumsum(sizes, out=a_ptr[1:])
    a_idx = np.nonzero(masks)[1].astype(np.int32)
    f_in = np.full(G, np.exp(min(epsilon, 700.0)) if epsilon <= 700 else 1.0)
    f_out = np.full(G, 1.0 if epsilon <= 700 else 0.0)
    return Groups(K, a_ptr, a_idx, np.full(G, -1, dtype=np.int32), f_in, np.zeros(G), f_out,
                  np.asarray(counts, dtype=np.int64))


#: Names accepted by ``AdaptiveLDPFrequencyEstimator(mechanism=...)``.
MECHANISMS = ("auto", "rrrr", "subset_selection", "grr", "oue")


class SetResponseMechanism:
    """Client side of a static two-level protocol: subset selection (GRR for ``k = 1``) or OUE.

    A response is a set of categories, returned as a boolean mask of length ``K``; its
    likelihood is ``P(y | x) ∝ e^epsilon`` if ``x`` is in the set, else ``1``, so the
    mechanism is exactly ``epsilon``-LDP.

    Parameters
    ----------
    n_categories : int
    epsilon : float
    kind : {'subset_selection', 'oue'}
    subset_size : int or None
        ``k`` of subset selection (``1 <= k <= K - 1``); ignored for OUE.
    """

    def __init__(self, n_categories, epsilon, kind, subset_size=None):
        self.n_categories = int(n_categories)
        self.epsilon = float(epsilon)
        self.kind = kind
        self.subset_size = None if kind == "oue" else int(subset_size)

    def __repr__(self):
        k = "" if self.kind == "oue" else f", subset_size={self.subset_size}"
        return f"SetResponseMechanism(n_categories={self.n_categories}, epsilon={self.epsilon}, kind={self.kind!r}{k})"

    def privatize(self, x, random_state=None):
        """Responses (boolean ``(n, K)`` masks) of the categories ``x`` (positions ``0..K-1``)."""
        from ..utils import check_generator

        rng = check_generator(random_state)
        x = np.atleast_1d(np.asarray(x))
        if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer) or np.any((x < 0) | (x >= self.n_categories)):
            # the users' true categories: never quoted in a message
            raise ValueError(f"x must hold integer category positions in [0, {self.n_categories}).")
        if self.kind == "oue":
            return oue_privatize(x, self.n_categories, self.epsilon, rng)
        return ss_privatize(x, self.n_categories, self.epsilon, self.subset_size, rng)

    def log_probability(self, response, x):
        """Exact ``ln P(Y = response | X = x)`` (log space; any ``epsilon``)."""
        r = np.asarray(response, dtype=bool)
        K = self.n_categories
        if self.kind == "oue":
            lq = -np.logaddexp(0.0, self.epsilon)  # ln q, q = 1 / (e^eps + 1)
            l1q = self.epsilon + lq  # ln (1 - q)
            others = np.delete(r, x)
            return float(np.log(0.5) + others.sum() * lq + (~others).sum() * l1q)
        if r.sum() != self.subset_size:
            return -np.inf
        l_in, l_out = ss_log_probabilities(K, self.epsilon, self.subset_size)
        return float(l_in if r[x] else l_out)
