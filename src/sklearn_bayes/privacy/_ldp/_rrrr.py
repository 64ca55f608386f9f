"""The randomly restricted randomized response (RRRR) mechanism and its closed form."""

import numbers

import numpy as np

from sklearn_bayes.privacy._ldp._rrrr_grid import EXACT_SIMULATION_MAX, grid_thresholds
from sklearn_bayes.utils import check_epsilon, check_privacy_random_state

__all__ = ["RRRRMechanism"]

_MAX_CATEGORIES = 2**31 - 1  # categories are int32 in _fast/_ldp.pyx

#: Columns of the RRRR constants table (row ``k``: subset size ``k``), in order; the
#: kernels of ``_fast/_ldp.pyx`` name them with the same enum (``CONST_COLUMNS`` there,
#: checked equal by the tests).  ``a1 = e^{e1}/A`` (y in S, x = y), ``a0 = 1/A`` (y in S,
#: x != y), ``b_self = e^{e1+e2}/(A B)`` (y not in S, x = y), ``b_in = 1/((K-k) A)`` (y not
#: in S, x in S), ``b_out = e^{e1}/(A B)`` (y, x not in S, x != y), ``r = e^{e2}/B``.
CONST_FIELDS = ("a1", "a0", "b_self", "b_in", "b_out", "r")
A1, A0, B_SELF, B_IN, B_OUT, R_KEEP = range(len(CONST_FIELDS))


def _check_kappa(kappa):
    if isinstance(kappa, (bool, np.bool_)) or not isinstance(kappa, numbers.Real):
        raise TypeError(f"kappa must be a real number in (0, 1], got {kappa!r}.")
    kappa = float(kappa)
    if not (0.0 < kappa <= 1.0):
        raise ValueError(f"kappa must be in (0, 1], got {kappa!r}.")
    return kappa


def _check_n_categories(n_categories, name="n_categories"):
    if isinstance(n_categories, (bool, np.bool_)) or not isinstance(n_categories, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 2, got {n_categories!r}.")
    n_categories = int(n_categories)
    if n_categories < 2:
        raise ValueError(f"{name} must be >= 2, got {n_categories!r}.")
    if n_categories > _MAX_CATEGORIES:
        raise ValueError(
            f"{name} must be <= {_MAX_CATEGORIES} (the kernels index categories with 32-bit integers), "
            f"got {n_categories!r}."
        )
    return n_categories


def _epsilon2(n_categories, subset_size, epsilon, kappa):
    """eps2 of Theorem 6 (eq. 5.3) for |S| = subset_size (int or int array), with eps1 = kappa * epsilon.

    ``exp(eps1 - epsilon) <= 1`` is the only exponential, and the correction branch
    needs ``epsilon - eps1 < ln |S^c|``, so nothing overflows for any finite
    ``epsilon``.  Returns a float for an int ``subset_size``, else an array.
    """
    k = np.asarray(subset_size, dtype=float)
    eps1 = kappa * epsilon
    sc = n_categories - k
    with np.errstate(divide="ignore", invalid="ignore"):
        corrected = np.log((sc - 1.0) / (np.exp(eps1 - epsilon) * sc - 1.0))
        use = (k > 0) & ((epsilon - eps1) < np.log(sc))
    eps2 = np.where(use, np.minimum(epsilon, corrected), epsilon)
    return float(eps2) if eps2.ndim == 0 else eps2


def _log1pexp(u):
    """``ln(1 + e^u)`` without overflow (``u`` may be ``-inf``)."""
    return np.logaddexp(0.0, u)


def _log_rrrr_constants(n_categories, epsilon, kappa, sizes):
    """Natural logarithms of the RRRR constants for the subset sizes ``sizes`` (int array).

    Returns an array of shape ``(len(sizes), 6)`` with the logarithms of the columns
    a1, a0, b_self, b_in, b_out, r of :func:`_rrrr_constants`; ``ln b_in = -inf``
    for size 0.  Computed in log space from ``ln A = ln(e^{e1} + k)`` and
    ``ln B = ln(e^{e2} + K - k - 1)`` written as ``e1 + ln(1 + k e^{-e1})`` and
    ``e2 + ln(1 + (K-k-1) e^{-e2})``, so no term overflows for any finite
    ``epsilon > 0`` (``epsilon = 1e6`` included) and each log constant has a
    relative error of a few units in the last place.  O(len(sizes)) time and memory.
    """
    K = n_categories
    k = np.asarray(sizes, dtype=np.int64)
    kf = k.astype(float)
    srr = k == 0
    eps1 = np.where(srr, epsilon, kappa * epsilon)  # size 0: SRR(X; [K], epsilon), A = e^eps + K - 1
    eps2 = np.where(srr, 0.0, _epsilon2(K, k, epsilon, kappa))
    with np.errstate(divide="ignore"):
        log_k = np.log(np.where(srr, K - 1.0, kf))  # the k "other" outputs of the outer SRR
        log_sc = np.log(K - kf)
        log_sc1 = np.log(K - kf - 1.0)  # -inf when |S^c| = 1
    log_a1 = -_log1pexp(log_k - eps1)  # e^{e1} / A
    log_a0 = -eps1 + log_a1  # 1 / A
    log_r = np.where(srr, 0.0, -_log1pexp(log_sc1 - eps2))  # e^{e2} / B
    log_b_self = np.where(srr, log_a1, log_a1 + log_r)  # e^{e1 + e2} / (A B)
    log_b_in = np.where(srr, -np.inf, log_a0 - log_sc)  # 1 / ((K - k) A)
    log_b_out = np.where(srr, log_a0, log_a1 + log_r - eps2)  # e^{e1} / (A B)
    cols = {A1: log_a1, A0: log_a0, B_SELF: log_b_self, B_IN: log_b_in, B_OUT: log_b_out, R_KEEP: log_r}
    return np.stack([cols[c] for c in range(len(CONST_FIELDS))], axis=-1)


def _rrrr_constants(n_categories, epsilon, kappa, sizes=None):
    """Per subset size k, the distinct values of g(y | x) (see ``_fast/_ldp.pyx``).

    Returns an array of shape (len(sizes), 6) (``sizes`` defaults to ``0..K-1``, so
    that row ``k`` is size ``k``) with the columns :data:`CONST_FIELDS` (indices
    ``A1, A0, B_SELF, B_IN, B_OUT, R_KEEP``), a1, a0, b_self, b_in, b_out, r:
    ``a1 = e^{e1}/A`` (y in S, x = y), ``a0 = 1/A`` (y in S, x != y), ``b_self =
    e^{e1+e2}/(A B)`` (y not in S, x = y), ``b_in = 1/((K-k) A)`` (y not in S, x in S),
    ``b_out = e^{e1}/(A B)`` (y, x not in S, x != y) and ``r = e^{e2}/B``, where
    ``A = e^{e1} + k`` and ``B = e^{e2} + K - k - 1``.  For k = 0 (plain SRR with
    ``epsilon``) the same layout holds with ``e1 = epsilon``, ``e2 = 0`` and
    ``A = e^eps + K - 1``: a1 = b_self, a0 = b_out, b_in = 0, r = 1.

    The values are ``exp`` of :func:`_log_rrrr_constants`: finite for every finite
    ``epsilon``; below about ``e^{-745}`` they underflow to 0 (``epsilon1 > 745``),
    and the privacy guarantee is then checked on the logarithms.
    """
    if sizes is None:
        sizes = np.arange(n_categories)
    return np.exp(_log_rrrr_constants(n_categories, epsilon, kappa, sizes))


def simulation_table(K, epsilon, kappa):
    """The estimator's RRRR constants table ``(K, 6)``, with two more columns (``t1, t2``, the exact
    thresholds of :func:`grid_thresholds` per size; ``-1`` where no grid point honours the budget) when
    ``K <= EXACT_SIMULATION_MAX``: the simulation-mode kernel then draws exactly like the device."""
    consts = _rrrr_constants(K, epsilon, kappa)
    if K > EXACT_SIMULATION_MAX:
        return consts
    t = np.full((K, 2), -1.0)
    for k in range(K):
        try:
            t[k] = grid_thresholds(K, epsilon, kappa, k, lambda eps, k=k: _epsilon2(K, k, eps, kappa))
        except ValueError:
            pass  # this size keeps the 8-ulp rounding
    return np.ascontiguousarray(np.hstack([consts, t]))


def _transition_matrix_from_mask(mask, consts_k):
    """P[x, y] = P(Y = y | X = x) for a boolean membership mask of S (K,).

    ``consts_k`` are the six constants of ``|S|`` (or their logarithms, giving ``ln P``).
    """
    a1, a0, b_self, b_in, b_out = (consts_k[c] for c in (A1, A0, B_SELF, B_IN, B_OUT))
    K = mask.shape[0]
    in_y = mask[None, :]
    in_x = mask[:, None]
    P = np.where(in_y, a0, np.where(in_x, b_in, b_out))
    diag = np.where(mask, a1, b_self)
    P[np.arange(K), np.arange(K)] = diag
    return P


class RRRRMechanism:
    """Randomly restricted randomized response (RRRR), an epsilon-LDP mechanism.

    Stateless client-side mechanism: it only needs ``(n_categories, epsilon, kappa)``
    and the subset ``S`` proposed by the server (for example by
    :meth:`sklearn_bayes.AdaptiveLDPFrequencyEstimator.propose_subset`), so it can run
    on a user's device without the server's state.  Categories are the integers
    ``0, ..., n_categories - 1``.

    Parameters
    ----------
    n_categories : int
        Number of categories ``K >= 2``.
    epsilon : float
        Local differential privacy budget, ``> 0``.
    kappa : float, default=0.9
        Share of the budget used inside the subset: ``eps1 = kappa * epsilon``,
        ``0 < kappa <= 1``.  ``kappa = 1`` forces ``eps2 = 0`` (responses outside
        ``S`` then carry no information).

    Notes
    -----
    With ``S`` a proper subset of ``[K]`` (``S = [K]`` is not allowed) and
    ``S^c`` its complement, a user holding ``X``:

    - if ``X`` is in ``S``: draws ``R ~ Uniform(S^c)`` and releases
      ``Y = SRR(X; S + {R}, eps1)``;
    - otherwise: ``R = SRR(X; S^c, eps2)`` then ``Y = SRR(R; S + {R}, eps1)``;

    where ``SRR(X; Omega, e)`` keeps ``X`` with probability
    ``e^e / (e^e + |Omega| - 1)`` and otherwise returns a uniform element of
    ``Omega`` without ``X``.  The empty subset is plain SRR on ``[K]`` with ``epsilon``.
    With ``k = |S|``, ``A = e^{eps1} + k`` and ``B = e^{eps2} + K - k - 1`` the
    transition probabilities are ``e^{eps1}/A`` (x in S, y = x), ``1/A`` (y in S,
    y != x), ``1/((K-k) A)`` (x in S, y not in S), ``e^{eps1+eps2}/(A B)`` (x not in
    S, y = x) and ``e^{eps1}/(A B)`` (x, y not in S, y != x).

    ``eps2`` follows Theorem 6 of "Bayesian frequency estimation under local
    differential privacy with an adaptive randomized response mechanism":
    ``eps2 = min(eps, ln((|S^c| - 1) / (e^{eps1 - eps} |S^c| - 1)))`` when
    ``S`` is not empty and ``eps - eps1 < ln |S^c|``, else ``eps2 = eps``.  Every
    column of the transition matrix then has max/min ratio at most ``e^eps``
    (checked exactly in the test suite, on :meth:`log_transition_matrix`).

    The parameters are read-only: assigning ``epsilon``, ``kappa`` or
    ``n_categories`` raises :class:`AttributeError` (build a new mechanism), so the
    repr always describes the mechanism that runs.  The constants are computed in log
    space (``ln(e^a + b)`` as ``a + ln(1 + b e^{-a})``), so any finite ``epsilon > 0``
    works, and lazily, per subset size actually used: construction is O(1) and a
    release costs O(K + n) time and memory (``n_categories = 10**7`` is fine).

    Floating point: :meth:`privatize` draws each rare branch (``x`` left by the outer SRR,
    ``x`` left by the SRR on ``S^c``) with a threshold chosen exactly on numpy's ``2**-53``
    grid per subset size (``_rrrr_grid``): every column's realised max/min ratio is verified
    in integer arithmetic to be at most ``e^epsilon``, and every output of the exact
    mechanism stays possible (probability at least ``2**-53``; for ``epsilon1`` above about
    36 the release is the true category except with about that probability).  A budget no
    grid point can honour for a subset size (a tiny ``epsilon`` at a large ``K``) raises
    ``ValueError`` naming ``epsilon`` when that size is used.  (An earlier version of this
    note said outputs below ``2**-53`` are "never drawn, as epsilon-LDP already allows":
    wrong -- an impossible output is an infinite likelihood ratio -- and the former
    thresholds, the float probability times ``1 + 8 ulps``, exceeded ``e^epsilon`` by up to
    9.3e-13 nats at ``K = 1000`` and about 1e-6 at ``K = 2**31 - 1``; the estimator's
    simulation mode uses the exact thresholds up to ``K = 1024`` and still draws with the
    former ones above.)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_bayes.privacy import RRRRMechanism
    >>> mech = RRRRMechanism(n_categories=4, epsilon=1.0, kappa=0.8)
    >>> round(mech.epsilon2(1), 6)
    0.317322
    >>> P = mech.transition_matrix([0])
    >>> np.allclose(P.sum(axis=1), 1.0)
    True
    >>> y = mech.privatize([0, 1, 2, 3], subset=[0], random_state=np.random.default_rng(0))
    >>> y.shape
    (4,)
    """

    def __init__(self, n_categories, epsilon, kappa=0.9):
        self._n_categories = _check_n_categories(n_categories)
        self._epsilon = check_epsilon(epsilon)
        self._kappa = _check_kappa(kappa)
        self._log_consts = {}  # subset size -> log constants, filled on first use (O(1) each)

    def __repr__(self):
        return f"RRRRMechanism(n_categories={self.n_categories}, epsilon={self.epsilon!r}, kappa={self.kappa!r})"

    def __setattr__(self, name, value):
        if name in ("n_categories", "epsilon", "kappa"):
            raise AttributeError(
                f"RRRRMechanism.{name} is read-only (the mechanism is fixed at construction); "
                f"build a new RRRRMechanism to use {name}={value!r}."
            )
        super().__setattr__(name, value)

    @property
    def n_categories(self):
        """Number of categories ``K`` (read-only)."""
        return self._n_categories

    @property
    def epsilon(self):
        """The local privacy budget (read-only)."""
        return self._epsilon

    @property
    def kappa(self):
        """Share of the budget used inside the subset (read-only)."""
        return self._kappa

    @property
    def epsilon1(self):
        """Budget used inside the subset, ``kappa * epsilon``."""
        return self.kappa * self.epsilon

    def epsilon2(self, subset_size):
        """The budget ``eps2`` used on the complement for a subset of size ``subset_size``.

        Parameters
        ----------
        subset_size : int
            ``|S|`` in ``0, ..., n_categories - 1``; ``0`` returns ``epsilon`` (SRR).

        Returns
        -------
        eps2 : float
        """
        k = self._check_size(subset_size)
        return _epsilon2(self.n_categories, k, self.epsilon, self.kappa)

    def _cached(self, subset_size):
        """``(log constants, constants)`` for ``|S| = subset_size``, computed on first use (O(1))."""
        pair = self._log_consts.get(subset_size)
        if pair is None:
            log_c = _log_rrrr_constants(self.n_categories, self.epsilon, self.kappa, [subset_size])[0]
            c = np.exp(log_c)
            log_c.setflags(write=False)
            c.setflags(write=False)
            pair = self._log_consts[subset_size] = (log_c, c)
        return pair

    def _thresholds(self, subset_size):
        """``(t1, t2)``: the sampler's rare-branch thresholds on the 2^-53 grid for ``|S| = subset_size``,
        every realised ratio verified exactly against ``e^epsilon`` (``_rrrr_grid``; cached)."""
        cache = vars(self).setdefault("_grid_thresholds", {})  # (a pickle from before has none)
        pair = cache.get(subset_size)
        if pair is None:
            pair = cache[subset_size] = grid_thresholds(
                self.n_categories, self.epsilon, self.kappa, subset_size,
                lambda eps: _epsilon2(self.n_categories, subset_size, eps, self.kappa))
        return pair

    def _log_constants(self, subset_size):
        """Log constants (a1, a0, b_self, b_in, b_out, r) for ``|S| = subset_size``."""
        return self._cached(subset_size)[0]

    def _constants(self, subset_size):
        """The constants (a1, a0, b_self, b_in, b_out, r) for ``|S| = subset_size`` (see ``_rrrr_constants``)."""
        return self._cached(subset_size)[1]

    def _check_size(self, subset_size):
        if isinstance(subset_size, (bool, np.bool_)) or not isinstance(subset_size, numbers.Integral):
            raise TypeError(f"subset_size must be an integer, got {subset_size!r}.")
        if not 0 <= subset_size < self.n_categories:
            raise ValueError(
                f"subset_size must be in [0, {self.n_categories - 1}] (S = all categories is not "
                f"allowed), got {subset_size!r}."
            )
        return int(subset_size)

    def _check_subset(self, subset):
        """Return the subset as a sorted int array (validated)."""
        arr = np.asarray(subset)
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if arr.ndim != 1:
            raise ValueError(f"subset must be a 1-d array of category indices, got shape {arr.shape}.")
        if arr.dtype == bool:
            raise TypeError("subset must hold category indices, not a boolean mask.")
        if not np.issubdtype(arr.dtype, np.integer):
            if not np.issubdtype(arr.dtype, np.floating) or not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ValueError(f"subset must hold integer category indices, got {subset!r}.")
            arr = arr.astype(np.int64)
        bad = arr[(arr < 0) | (arr >= self.n_categories)]
        if bad.size:
            raise ValueError(f"subset holds categories outside [0, {self.n_categories}): {bad[:5].tolist()}.")
        uniq = np.unique(arr)
        if uniq.size != arr.size:
            raise ValueError(f"subset has repeated categories: {arr.tolist()}.")
        if uniq.size == self.n_categories:
            raise ValueError("subset must not contain all categories (S = [K] is not allowed).")
        return uniq.astype(np.int64)

    def transition_matrix(self, subset=()):
        """The matrix ``P[x, y] = P(Y = y | X = x)`` of RRRR with subset ``subset``.

        Parameters
        ----------
        subset : array-like of int, default=()
            Category indices in ``S``; empty for plain SRR.

        Returns
        -------
        P : ndarray of shape (n_categories, n_categories)
            Rows sum to one.  Entries below about ``e^{-745}`` (``epsilon`` in the
            hundreds) underflow to 0; :meth:`log_transition_matrix` keeps them.
        """
        return np.exp(self.log_transition_matrix(subset))

    def log_transition_matrix(self, subset=()):
        """``ln P[x, y]``, computed in log space (exact for any finite ``epsilon``).

        Parameters
        ----------
        subset : array-like of int, default=()
            Category indices in ``S``; empty for plain SRR.

        Returns
        -------
        log_P : ndarray of shape (n_categories, n_categories)
            ``max_y max_{x, x'} (log_P[x, y] - log_P[x', y]) <= epsilon`` (up to
            rounding): the mechanism is ``epsilon``-LDP.
        """
        s = self._check_subset(subset)
        mask = np.zeros(self.n_categories, dtype=bool)
        mask[s] = True
        return _transition_matrix_from_mask(mask, self._log_constants(s.size))

    def privatize(self, x, subset=(), random_state=None):
        """Release RRRR responses for the true categories ``x``.

        Parameters
        ----------
        x : int or array-like of int
            True categories in ``[0, n_categories)``.
        subset : array-like of int, default=()
            The subset ``S`` (the same for every element of ``x``); empty for SRR.
        random_state : None, int or numpy.random.Generator, default=None
            Source of the privacy noise.  ``None`` (recommended outside tests) uses
            fresh operating-system entropy; an int emits
            :class:`sklearn_bayes.utils.SeededNoiseWarning`.

        Returns
        -------
        y : int or ndarray of int
            Released categories, same shape as ``x``.
        """
        from sklearn_bayes._fast._ldp import rrrr_sample_thresholds

        s = self._check_subset(subset)
        scalar = np.ndim(x) == 0
        xa = np.asarray(x)
        if xa.dtype == bool or not (np.issubdtype(xa.dtype, np.integer) or np.issubdtype(xa.dtype, np.floating)):
            raise TypeError(f"x must hold integer categories, got dtype {xa.dtype}.")
        if np.issubdtype(xa.dtype, np.floating):
            if not np.all(np.isfinite(xa)) or np.any(xa != np.round(xa)):
                raise ValueError("x must hold integer categories (got non-integer or NaN values).")
        xa = xa.astype(np.int64).ravel()
        bad = np.flatnonzero((xa < 0) | (xa >= self.n_categories))
        if bad.size:  # the users' true categories: never quoted in a message (rows only)
            raise ValueError(f"x holds categories outside [0, {self.n_categories}): {bad.size} "
                             f"value{'s' if bad.size != 1 else ''}, first at position {int(bad[0])}.")
        # instance=None: x is validated before any draw and a client never retries, so any second use of a
        # generator state (a copied Generator, even on this same object) is a replay and warns
        rng = check_privacy_random_state(random_state, owner="RRRRMechanism.privatize", instance=None,
                                         warn_small_seed=True)
        K = self.n_categories
        mask = np.zeros(K, dtype=bool)
        mask[s] = True
        sigma = np.concatenate([s, np.flatnonzero(~mask)]).astype(np.int32)
        t1, t2 = self._thresholds(s.size)
        out = np.empty(xa.size, dtype=np.int32)
        rrrr_sample_thresholds(rng, xa.astype(np.int32), sigma, int(s.size), t1, t2, out)
        out = out.astype(np.int64)
        if scalar:
            return int(out[0])
        return out.reshape(np.shape(x))
