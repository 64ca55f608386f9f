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

import functools
import math
import numbers
from fractions import Fraction

import numpy as np
from scipy.special import gammaln

from sklearn_bayes.privacy._ldp._posterior import Groups
from sklearn_bayes.privacy._ldp._rrrr_grid import _exp_lower

__all__ = ["MECHANISMS", "SetResponseMechanism", "best_subset_size", "ss_privatize", "oue_privatize",
           "ss_privatize_packed", "oue_privatize_packed", "groups_from_masks", "groups_from_unique",
           "groups_from_packed", "ss_log_probabilities", "ss_support_probabilities", "ss_variance", "popcount_rows",
           "ss_left_out_threshold", "oue_bit_threshold",
           "MAX_CSR_MEMBERS"]

#: Uniforms drawn per chunk of users by the privatisers (32 MiB of float64): the users x K
#: keys are never held at once, only ``ceil(K / 8)`` bytes of packed bits per user.
_CHUNK_CELLS = 1 << 22
#: Largest total set size kept as CSR member lists (int32, 64 MiB); above, the posterior
#: kernels read the sets from their bit rows (``K / 8`` bytes per distinct set).
MAX_CSR_MEMBERS = 1 << 24
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.int64)
#: byte with its bits reversed: big-endian packed rows (``np.packbits``) to the little-endian
#: bit rows of the sampler kernels
_REVERSE = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.uint8)


def _chunks(n, K):
    step = max(1, _CHUNK_CELLS // max(int(K), 1))
    return [(lo, min(n, lo + step)) for lo in range(0, n, step)]


def popcount_rows(packed):
    """Number of set bits of every packed row (``O(1)`` extra memory per chunk of rows)."""
    packed = np.asarray(packed, dtype=np.uint8)
    out = np.zeros(packed.shape[0], dtype=np.int64)
    for lo, hi in _chunks(packed.shape[0], max(packed.shape[1], 1) * 8):
        out[lo:hi] = _POPCOUNT[packed[lo:hi]].sum(axis=1)
    return out


def ss_support_probabilities(K, epsilon, k):
    """``(p, q)`` of SS(k): the probability that a response supports the user's category, and another one."""
    e = float(np.exp(min(epsilon, 700.0)))
    p = k * e / (k * e + K - k)
    return p, ((k - 1) * p + k * (1 - p)) / (K - 1)


def _ss_log_variance(K, epsilon, k):
    """``ln`` of :func:`ss_variance`, with ``p - q = k (K - k) (e^eps - 1) / ((K - 1)(k e^eps + K - k))`` in logs:
    no cancellation of ``p`` and ``q`` (below eps ~ 1e-8 their difference was rounding noise, which the argmin
    over ``k`` followed) and no underflow of its square at any budget; ``inf`` at eps = 0."""
    eps = min(float(epsilon), 700.0)
    if K < 2 or not 1 <= k < K or eps <= 0:
        return np.inf
    r = (K - k) * np.exp(-eps)  # k e^eps + K - k = e^eps (k + r): no overflow for any k
    p = k / (k + r)
    q = ((k - 1) * p + k * (1 - p)) / (K - 1)
    f = p / K + (1 - 1 / K) * q
    if not 0 < f < 1:
        return np.inf
    log_d = np.log(k * (K - k) / (K - 1)) + np.log(-np.expm1(-eps)) - np.log(k + r)  # ln (e^eps - 1) - eps
    return np.log(K * f * (1 - f)) - 2 * log_d


def ss_variance(K, epsilon, k):
    """Summed variance (times n) of the unbiased SS(k) estimate at the uniform distribution."""
    with np.errstate(over="ignore"):  # inf where the variance overflows (eps below ~1e-150)
        return float(np.exp(_ss_log_variance(K, epsilon, k)))


#: Round S2 (cost, the same ``k``): :func:`best_subset_size` remembers its answers per ``(K, epsilon)`` (up to
#: ``SUBSET_SIZE_CACHE`` pairs; 0: no memory).  At ``K = 1000`` the search is 999 Python calls, 2.4 ms, at every fit.
SUBSET_SIZE_CACHE = 1024
_SUBSET_SIZES = {}


def best_subset_size(K, epsilon):
    """``k`` in ``1..K-1`` minimising :func:`ss_variance` (first on ties; compared in logs).

    A pure function of ``(K, epsilon)``: its answers are remembered (``SUBSET_SIZE_CACHE``; round S2).
    """
    key = (int(K), float(epsilon))
    k = _SUBSET_SIZES.get(key) if SUBSET_SIZE_CACHE else None
    if k is None:
        k = _best_subset_size(key[0], key[1])
        if SUBSET_SIZE_CACHE:
            try:  # oldest out first (threads may race here: the memory is only a cache)
                while len(_SUBSET_SIZES) >= SUBSET_SIZE_CACHE:
                    _SUBSET_SIZES.pop(next(iter(_SUBSET_SIZES)))
            except (KeyError, StopIteration, RuntimeError):
                pass
            _SUBSET_SIZES[key] = k
    return k


def _best_subset_size(K, epsilon):
    ks = np.arange(1, K)
    if K > 4096:  # the optimum is near K / (e^eps + 1): search a window around it
        c = int(round(K / (np.exp(min(epsilon, 700.0)) + 1)))
        ks = np.arange(max(1, c - 64), min(K - 1, c + 64) + 1)
    v = np.array([_ss_log_variance(K, epsilon, int(k)) for k in ks])
    return int(ks[int(np.argmin(v))])


def ss_log_probabilities(K, epsilon, k):
    """``(ln P(Y | x) for x in Y, ln P(Y | x) for x not in Y)`` of SS(k), in log space."""
    lD = np.logaddexp(epsilon + gammaln(K) - gammaln(k) - gammaln(K - k + 1),
                      gammaln(K) - gammaln(k + 1) - gammaln(K - k))
    return epsilon - lD, -lD


#: Relative margin of the samplers' rare-event thresholds: above their few roundings (at most ~3 ulps), so that
#: ``P(u < t) = ceil(t 2^53) / 2^53`` is at least the exact probability (tests/privacy/ldp/test_client_exact_ldp.py).
_ROUND_UP = 1.0 + 8 * np.finfo(float).eps


#: Numpy's uniforms are ``j / 2^53``: a threshold ``n / 2^53`` is met by exactly ``n`` of them.
_GRID = 2**53


@functools.lru_cache(maxsize=256)
def ss_left_out_threshold(K, epsilon, k):
    """The SS(k) sampler's threshold ``t = n / 2^53``: a user's category is left out of her report when ``u < t``.

    ``n`` is chosen exactly (integer and rational arithmetic) so that the realised left-out probability
    ``P = n / 2^53`` gives every response a likelihood ratio at most ``e^eps`` in both directions::

        (1 - P) (K - k) <= L P k    and    P k <= L (1 - P) (K - k),    L = a rational lower bound of e^eps,

    ``n`` the smallest integer meeting the first (the most random mechanism on the grid; at least 1, so leaving
    out stays possible at any budget).  The former threshold (the exact probability times ``1 + 8 ulps``, capped
    at ``(K - k) / K`` then rounded up by the grid) broke the second inequality at tiny budgets and large ``K``
    (the cap is not on the grid): an excess of 2.9e-11 nats at K = 10^6, eps <= 1e-12.

    Raises
    ------
    ValueError
        If no ``n`` meets both: ``epsilon`` is below what a 53-bit comparison can honour for this ``K`` and
        ``k`` (about ``K^2 / (k (K - k) 2^53)``).
    """
    K, k = int(K), int(k)
    L = _exp_lower(epsilon)
    a, b = K - k, k  # (N - n) a <= L n b  <=>  n >= N a / (a + L b)
    num = _GRID * a
    den = a + L * b
    n = max(1, -(-num // den) if isinstance(den, int) else math.ceil(Fraction(num) / den))
    if not (n * b <= L * (_GRID - n) * a and (_GRID - n) * a <= L * n * b):
        bound = K * K / (k * (K - k) * float(_GRID))
        raise ValueError(
            f"epsilon={float(epsilon)!r} is below the smallest budget that numpy's 53-bit uniforms can honour "
            f"exactly for subset selection with n_categories={K}, subset_size={k} (about {bound:.1e}): no "
            "left-out probability on the 2^-53 grid keeps every likelihood ratio within e^epsilon."
        )
    return n / _GRID


def oue_bit_threshold(epsilon):
    """The OUE sampler's threshold ``t``: another category's bit is set when ``u < t``.

    ``q = 1 / (e^eps + 1)`` times :data:`_ROUND_UP` (``1 / (e^eps + 1)`` rounded onto the 2^-53 grid from below
    realised a ratio ``(1 - q') / q'`` above ``e^eps``, relative 2e-16 at eps = 0.002, 0.5, 1), at most 1/2 (the
    own bit's probability: a larger ``q'`` would invert the ratio); ``eps`` above 700 as 700 (``q`` then floors
    to ``2^-53``, more than the exact value).
    """
    return min(1.0 / (float(np.exp(min(float(epsilon), 700.0))) + 1.0) * _ROUND_UP, 0.5)


def ss_privatize(x, K, epsilon, k, rng):
    """SS(k) responses of the categories ``x`` as a boolean ``(n, K)`` mask (``O(n K)``)."""
    return np.unpackbits(ss_privatize_packed(x, K, epsilon, k, rng), axis=1, count=K).astype(bool)


def _repeated(a, idx):
    """Rows of ``a`` whose value at column ``idx`` occurs more than once."""
    return np.flatnonzero(np.count_nonzero(a == np.take_along_axis(a, idx[:, None], 1), axis=1) > 1)


def _grr_others(keys, x, rng):
    """The other category GRR releases for each row: the argmin of i.i.d. uniform keys (``x``'s set to 2),
    each row with a tied minimum redrawn until its minimum is unique (see :func:`ss_privatize_packed`)."""
    keys[np.arange(x.size), x] = 2.0
    idx = np.argmin(keys, axis=1)
    tied = _repeated(keys, idx)
    while tied.size:
        new = rng.random((tied.size, keys.shape[1]))
        new[np.arange(tied.size), x[tied]] = 2.0
        sub = np.argmin(new, axis=1)
        idx[tied] = sub
        tied = tied[_repeated(new, sub)]
    return idx


def _smallest_k(keys, k, x, fill, rng):
    """The ``k`` smallest keys' positions per row (``x``'s key set to ``fill``), each row whose ``k``-th smallest
    key occurs more than once redrawn until it does not (see :func:`ss_privatize_packed`)."""
    m, K = keys.shape
    keys[np.arange(m), x] = fill
    idx = np.argpartition(keys, k - 1, axis=1)
    tied = _repeated(keys, idx[:, k - 1])
    while tied.size:
        new = rng.random((tied.size, K))
        new[np.arange(tied.size), x[tied]] = fill[tied]
        sub = np.argpartition(new, k - 1, axis=1)
        idx[tied] = sub
        tied = tied[_repeated(new, sub[:, k - 1])]
    return idx[:, :k]


#: Issue 28, round T (cost, the same responses and generator state): GRR's client (``k = 1``) reads the uniform keys of
#: the users whose own category was left out only (a fraction ``(K - 1) / (K - 1 + e^eps)``: 0.6 % at ``K = 20, eps =
#: 8``); with a PCG64 or PCG64DXSM generator the other rows' ``K`` uniforms each are skipped by
#: ``bit_generator.advance`` (one 64-bit output per uniform, as ``Generator.random`` draws them) instead of drawn, when
#: few rows are read (``rows * SKIP_ROW_WORK <= m K``).  False: every key drawn (round S2's path).
SKIP_UNUSED_KEYS = True
#: The cost of reading one row through ``advance`` in units of a drawn uniform (measured: about 1.2 us against 2.4 ns).
SKIP_ROW_WORK = 512


def _left_rows_keys(rng, m, K, left):
    """The ``(len(left), K)`` uniform keys that ``rng.random((m, K))[left]`` would give, drawn by advancing the bit
    generator past the rows not read (its state afterwards is the same as after the full draw); None where that is
    not exact or not cheaper (another bit generator, a buffered 32-bit value, or many rows): draw them all."""
    bg = getattr(rng, "bit_generator", None) if type(rng) is np.random.Generator else None  # (duck-typed rngs draw)
    if (not SKIP_UNUSED_KEYS or type(bg) not in (np.random.PCG64, np.random.PCG64DXSM)
            or left.size * SKIP_ROW_WORK > m * K or bg.state.get("has_uint32")):
        return None
    out = np.empty((left.size, K))
    pos = 0
    for i, r in enumerate(left.tolist()):
        if r * K > pos:
            bg.advance(r * K - pos)
        out[i] = rng.random(K)
        pos = (r + 1) * K
    if m * K > pos:
        bg.advance(m * K - pos)
    return out


def ss_privatize_packed(x, K, epsilon, k, rng):
    """SS(k) responses of the categories ``x`` as packed bit rows ``(n, ceil(K / 8))`` (``np.packbits``).

    The uniforms are drawn in chunks of users (at most ``2^22`` at a time): the same stream,
    in the same order, as one ``(n, K)`` draw, so the responses do not depend on the chunking.

    Notes
    -----
    Every category gets an i.i.d. uniform key on numpy's ``2^-53`` grid; a kept ``x`` gets ``-1`` (always in),
    a left-out one ``2`` (never in), and the response is the ``k`` smallest keys.  Two keys can be equal on the
    grid, and ``argmin`` / ``argpartition`` break a tie by position, so the last category was under-drawn (GRR:
    ``1 / (K - 1) - 2^-54``, a ratio above ``e^eps`` by about ``(K - 1) 2^-54``).  A row whose decisive keys tie
    (the ``k``-th smallest key occurs twice or more) is therefore redrawn, with fresh keys appended to the stream,
    until it occurs once.  The event "the ``k``-th smallest key is unique" is symmetric in the keys, and i.i.d. keys
    conditioned on a symmetric event are exchangeable, so the argmin (the set of the ``k`` smallest) is then
    exactly uniform over the other categories (their ``k``-subsets).  A tie has probability below
    ``K^2 2^-54``: seeded outputs without one are unchanged.
    """
    x = np.asarray(x, dtype=np.intp)
    n = x.size
    # the rare event "x is left out" is drawn with its own probability n / 2^53, chosen exactly on numpy's
    # 53-bit grid (ss_left_out_threshold): every ratio within e^eps, and n >= 1 so that leaving x out stays
    # possible at any budget (drawing "kept" with p_in = 1 - q instead rounded q down, to exactly 0 above
    # eps ~ 37: an unbounded privacy loss)
    q_out = ss_left_out_threshold(K, epsilon, k)
    keep = ~(rng.random(n) < q_out)
    out = np.zeros((n, (K + 7) // 8), dtype=np.uint8)
    for lo, hi in _chunks(n, K):
        m = hi - lo
        rows = np.arange(m)
        if k == 1:  # x when kept, else the smallest of the other keys, searched only there
            idx = x[lo:hi].copy()
            left = np.flatnonzero(~keep[lo:hi])
            left_keys = _left_rows_keys(rng, m, K, left)  # round T: only the rows read, the same stream
            if left_keys is None:
                left_keys = rng.random((m, K))[left]
            idx[left] = _grr_others(left_keys, idx[left], rng)
            out[lo + rows, idx >> 3] = np.left_shift(1, 7 - (idx & 7)).astype(np.uint8)
            continue
        keys = rng.random((m, K))
        if k < K:  # x first when kept, never otherwise
            idx = _smallest_k(keys, k, x[lo:hi], np.where(keep[lo:hi], -1.0, 2.0), rng)
        else:
            idx = np.tile(np.arange(K), (m, 1))
        del keys
        mask = np.zeros((m, K), dtype=bool)
        mask[rows[:, None], idx] = True
        out[lo:hi] = np.packbits(mask, axis=1)
    return out


def oue_privatize(x, K, epsilon, rng):
    """OUE responses (bit vectors) of the categories ``x`` as a boolean ``(n, K)`` mask."""
    return np.unpackbits(oue_privatize_packed(x, K, epsilon, rng), axis=1, count=K).astype(bool)


def oue_privatize_packed(x, K, epsilon, rng):
    """OUE responses as packed bit rows ``(n, ceil(K / 8))``; the uniforms are drawn in chunks of
    users (the same stream as one ``(n, K)`` draw followed by ``n`` more)."""
    x = np.asarray(x, dtype=np.intp)
    n = x.size
    q = oue_bit_threshold(epsilon)
    out = np.zeros((n, (K + 7) // 8), dtype=np.uint8)
    for lo, hi in _chunks(n, K):
        out[lo:hi] = np.packbits(rng.random((hi - lo, K)) < q, axis=1)
    own = rng.random(n) < 0.5
    rows = np.arange(n)
    byte, bit = x >> 3, (7 - (x & 7)).astype(np.uint8)
    out[rows, byte] = np.where(own, out[rows, byte] | (np.uint8(1) << bit), out[rows, byte] & ~(np.uint8(1) << bit))
    return out


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
    f_in, f_out = _likelihood_values(epsilon, sizes)
    return Groups(K, a_ptr, a_idx, np.full(G, -1, dtype=np.int32), f_in, np.zeros(G), f_out,
                  count.astype(np.int64))


def _likelihood_values(epsilon, sizes):
    """``(f_in, f_out)`` of sets with ``sizes`` members: the likelihood ratio e^eps, kept finite.  For eps > 700
    the out-of-set value is e^-eps, 0 in double precision, except for an empty set (an OUE response with no bit
    set, probability about 1/2 at any budget): its likelihood is the same for every category, 1 (a 0 made it 0 for
    every category, NaN weights in the chains)."""
    G = np.size(sizes)
    f_in = np.full(G, np.exp(min(epsilon, 700.0)) if epsilon <= 700 else 1.0)
    f_out = np.full(G, 1.0) if epsilon <= 700 else np.where(np.asarray(sizes) == 0, 1.0, 0.0)
    return f_in, f_out


def groups_from_unique(masks, counts, epsilon):
    """:class:`Groups` of distinct sets ``masks`` (boolean ``(G, K)``) with their counts."""
    masks = np.asarray(masks, dtype=bool)
    G, K = masks.shape
    sizes = masks.sum(axis=1)
    a_ptr = np.zeros(G + 1, dtype=np.int32)
    np.cumsum(sizes, out=a_ptr[1:])
    a_idx = np.nonzero(masks)[1].astype(np.int32)
    f_in, f_out = _likelihood_values(epsilon, sizes)
    return Groups(K, a_ptr, a_idx, np.full(G, -1, dtype=np.int32), f_in, np.zeros(G), f_out,
                  np.asarray(counts, dtype=np.int64))


def groups_from_packed(packed, counts, epsilon, K):
    """:class:`Groups` of distinct sets given as packed bit rows (``np.packbits``, ``(G, ceil(K / 8))``).

    The same groups as :func:`groups_from_unique` on the unpacked rows while the sets hold at
    most :data:`MAX_CSR_MEMBERS` members in all (CSR member lists); above, the groups keep
    the sets as bit rows only (``bits``, ``K / 8`` bytes per set instead of 4 bytes per
    member: 250 MB for 2000 subset-selection responses at ``K = 10^6`` instead of 2.2 GB),
    which the kernels read directly, with the same draws.
    """
    packed = np.ascontiguousarray(packed, dtype=np.uint8)
    G = packed.shape[0]
    sizes = popcount_rows(packed)
    a_ptr = np.zeros(G + 1, dtype=np.int64)
    np.cumsum(sizes, out=a_ptr[1:])
    if a_ptr[-1] >= np.iinfo(np.int32).max:
        raise ValueError(f"the responses hold {int(a_ptr[-1])} set members in all: more than the kernels index.")
    a_ptr = a_ptr.astype(np.int32)
    f_in, f_out = _likelihood_values(epsilon, sizes)
    if a_ptr[-1] <= MAX_CSR_MEMBERS:
        parts = [np.nonzero(np.unpackbits(packed[lo:hi], axis=1, count=K))[1].astype(np.int32)
                 for lo, hi in _chunks(G, K)]
        a_idx = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
        return Groups(K, a_ptr, a_idx, np.full(G, -1, dtype=np.int32), f_in, np.zeros(G), f_out,
                      np.asarray(counts, dtype=np.int64))
    return Groups(K, a_ptr, np.zeros(0, dtype=np.int32), np.full(G, -1, dtype=np.int32), f_in, np.zeros(G), f_out,
                  np.asarray(counts, dtype=np.int64), bits=_REVERSE[packed])


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
        ``K >= 2``.
    epsilon : float
        The budget, validated by :func:`sklearn_bayes.utils.check_epsilon` (finite, > 0, exactly a float).
    kind : {'subset_selection', 'oue'}
    subset_size : int or None
        ``k`` of subset selection (``1 <= k <= K - 1``); ignored for OUE.

    Notes
    -----
    The parameters are validated at construction and read-only afterwards (assigning one raises
    :class:`AttributeError`; build a new mechanism): the object a server hands out
    (``AdaptiveLDPFrequencyEstimator.client_mechanism``, a copy) always runs, and its repr always
    describes, the mechanism the server records under.
    """

    __slots__ = ("_n_categories", "_epsilon", "_kind", "_subset_size")
    _KINDS = ("subset_selection", "oue")

    def __init__(self, n_categories, epsilon, kind, subset_size=None):
        from sklearn_bayes.privacy._ldp._rrrr import _check_n_categories
        from sklearn_bayes.utils import check_epsilon

        K = _check_n_categories(n_categories)
        eps = check_epsilon(epsilon)
        if not isinstance(kind, str) or kind not in self._KINDS:
            raise ValueError(f"kind must be one of {self._KINDS}, got {kind!r}.")
        k = None
        if kind != "oue":
            if isinstance(subset_size, (bool, np.bool_)) or not isinstance(subset_size, numbers.Integral):
                raise TypeError(f"subset_size must be an integer in [1, {K - 1}] for subset selection, "
                                f"got {subset_size!r}.")
            k = int(subset_size)
            if not 1 <= k <= K - 1:
                raise ValueError(f"subset_size must be in [1, {K - 1}] (n_categories - 1), got {k}.")
            ss_left_out_threshold(K, eps, k)  # a budget too small for the 2^-53 grid: ValueError naming epsilon
        object.__setattr__(self, "_n_categories", K)
        object.__setattr__(self, "_epsilon", eps)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_subset_size", k)

    def __setattr__(self, name, value):
        raise AttributeError(
            f"SetResponseMechanism.{name.lstrip('_')} is read-only (the mechanism is fixed at construction); "
            "build a new SetResponseMechanism."
        )

    def __delattr__(self, name):
        raise AttributeError(f"SetResponseMechanism.{name.lstrip('_')} is read-only.")

    def __reduce__(self):  # copies and pickles re-run the constructor's validation
        return (type(self), (self._n_categories, self._epsilon, self._kind, self._subset_size))

    def __setstate__(self, state):
        """Pickles written before the parameters were read-only (a ``__dict__``): validated anew."""
        state = state[1] if isinstance(state, tuple) else state
        new = type(self)(state["n_categories"], state["epsilon"], state["kind"], state.get("subset_size"))
        for name in self.__slots__:
            object.__setattr__(self, name, getattr(new, name))

    @property
    def n_categories(self):
        """Number of categories ``K`` (read-only)."""
        return self._n_categories

    @property
    def epsilon(self):
        """The local privacy budget (read-only)."""
        return self._epsilon

    @property
    def kind(self):
        """``'subset_selection'`` or ``'oue'`` (read-only)."""
        return self._kind

    @property
    def subset_size(self):
        """``k`` of subset selection, ``None`` for OUE (read-only)."""
        return self._subset_size

    def __eq__(self, other):
        return type(other) is type(self) and self.__reduce__()[1] == other.__reduce__()[1]

    def __hash__(self):
        return hash(self.__reduce__()[1])

    def __repr__(self):
        k = "" if self.kind == "oue" else f", subset_size={self.subset_size}"
        return f"SetResponseMechanism(n_categories={self.n_categories}, epsilon={self.epsilon}, kind={self.kind!r}{k})"

    def privatize(self, x, random_state=None):
        """Responses (boolean ``(n, K)`` masks) of the categories ``x`` (positions ``0..K-1``).

        ``random_state``: ``None`` (recommended outside tests) draws fresh operating-system
        entropy; an int, or a generator state that already drew privacy noise for another
        object, emits :class:`sklearn_bayes.exceptions.SeededNoiseWarning`, as
        :meth:`RRRRMechanism.privatize` does.
        """
        from sklearn_bayes.utils import check_privacy_random_state

        x = np.atleast_1d(np.asarray(x))
        if x.ndim != 1 or not np.issubdtype(x.dtype, np.integer) or np.any((x < 0) | (x >= self.n_categories)):
            # the users' true categories: never quoted in a message
            raise ValueError(f"x must hold integer category positions in [0, {self.n_categories}).")
        # instance=None: x is validated before any draw and a client never retries, so any second use of a
        # generator state (a copied Generator, even on this same object) is a replay and warns
        rng = check_privacy_random_state(random_state, owner="SetResponseMechanism.privatize", instance=None,
                                         warn_small_seed=True)
        return np.unpackbits(self._privatize_packed(x, rng), axis=1, count=self.n_categories).astype(bool)

    def _privatize_packed(self, x, rng):
        """The responses as packed bit rows (``np.packbits``): ``K / 8`` bytes per user."""
        if self.kind == "oue":
            return oue_privatize_packed(x, self.n_categories, self.epsilon, rng)
        return ss_privatize_packed(x, self.n_categories, self.epsilon, self.subset_size, rng)

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
