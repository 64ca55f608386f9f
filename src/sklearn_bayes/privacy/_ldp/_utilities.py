"""Utility functions for choosing the RRRR subset (Section 5.4.3 of the AdOBEst-LDP paper).

For a probability vector ``theta`` the candidates are the prefixes
``S_k = {sigma(1), ..., sigma(k)}``, ``k = 0, ..., K - 1``, of the categories sorted by
decreasing ``theta`` (ties broken by index); ``k = 0`` is plain SRR.  The chosen size is
``k* = argmax_k U(theta, S_k, eps)`` under one explicit tie rule (:func:`tie_argmax`):
utilities within ``TIE_ULPS * K * eps_mach * max(1, max_k |U_k|)`` of the largest are
ties and the smallest ``k`` among them wins; non-finite utilities are never chosen.
Utilities that are equal in exact arithmetic (at the uniform start ``U4`` is 0 for
``k = 0`` and for other sizes) then give the same choice whatever the rounding of the
code path (compiled kernel, numpy reference, SIMD width).
"""

import numbers

import numpy as np

from sklearn_bayes.privacy._ldp._rrrr import A0, A1, B_IN, B_OUT, B_SELF, R_KEEP, _rrrr_constants

__all__ = [
    "UTILITIES",
    "UTILITY_MODES",
    "choose_subset_size",
    "chosen_subset",
    "sorted_order",
    "tie_argmax",
    "utility_value",
    "utility_values",
]

#: Names of the built-in utilities (``'honest'`` is the recommended default).
UTILITIES = (
    "fisher",
    "entropy",
    "tv_posterior",
    "tv_marginal",
    "mse",
    "honest",
    "semi_adaptive",
    "non_adaptive",
)


#: Mode numbers of the utilities the compiled kernels evaluate (``run_online`` and
#: ``choose_prefix`` in ``_fast/_ldp.pyx``; 5-9 are ``_utility_k``).
UTILITY_MODES = {
    "honest": 1,
    "semi_adaptive": 2,
    "non_adaptive": 3,
    "fisher": 5,
    "entropy": 6,
    "tv_posterior": 7,
    "tv_marginal": 8,
    "mse": 9,
}
_COMPILED_MODES = {name: m for name, m in UTILITY_MODES.items() if m >= 5}


def sorted_order(theta):
    """Permutation sorting ``theta`` by decreasing value, ties by increasing index."""
    theta = np.asarray(theta, dtype=float)
    return np.lexsort((np.arange(theta.shape[0]), -theta))


def _prefix_matrices(K, consts):
    """G[k, y, x] = g(y | x) for S = {0, ..., k-1} (sorted coordinates), k = 0..K-1."""
    idx = np.arange(K)
    ks = np.arange(K)[:, None, None]
    in_y = idx[None, :, None] < ks
    in_x = idx[None, None, :] < ks
    c = consts[:, :, None, None]
    G = np.where(in_y, c[:, A0], np.where(in_x, c[:, B_IN], c[:, B_OUT]))
    diag = np.where(idx[None, :] < ks[:, :, 0], consts[:, [A1]], consts[:, [B_SELF]])
    G[:, idx, idx] = diag
    return G


def _utilities_from_G(G, theta, name, elim=None):
    """Utility of each matrix G[k] (rows y, columns x) at theta (same coordinates)."""
    h = G @ theta  # (n, K)
    if name == "entropy":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.sum(np.where(h > 0, h * np.log(h), 0.0), axis=1)
    if name == "tv_posterior":
        return 0.5 * np.sum(np.abs(G - h[:, :, None]) * theta[None, None, :], axis=(1, 2))
    if name == "tv_marginal":
        return -0.5 * np.sum(np.abs(h - theta[None, :]), axis=1)
    if name == "mse":
        with np.errstate(divide="ignore", invalid="ignore"):
            num = np.sum((G * theta[None, None, :]) ** 2, axis=2)
            return np.sum(np.where(h > 0, num / h, 0.0), axis=1) - 1.0
    if name == "fisher":
        K = theta.shape[0]
        keep = np.delete(np.arange(K), elim)
        A = G[:, :, keep] - G[:, :, elim : elim + 1]  # (n, K, K-1)
        with np.errstate(divide="ignore", invalid="ignore"):
            W = A / np.sqrt(h)[:, :, None]
        F = np.swapaxes(W, 1, 2) @ W
        out = np.full(G.shape[0], -np.inf)
        for i in range(G.shape[0]):
            if not np.all(np.isfinite(F[i])):
                continue
            try:
                L = np.linalg.cholesky(F[i])
            except np.linalg.LinAlgError:
                continue
            Linv = np.linalg.solve(L, np.eye(K - 1))
            out[i] = -np.sum(Linv * Linv)  # trace of F^{-1} = ||L^{-1}||_F^2
        return out
    raise ValueError(f"unknown utility {name!r}")


def _honest_values(theta_sorted, consts):
    """U6 for every prefix size in O(K): (e^{e1}/A)[P(S) + (e^{e2}/B)(1 - P(S))]."""
    cum = np.concatenate([[0.0], np.cumsum(theta_sorted)[:-1]])
    return consts[:, A1] * (cum + consts[:, R_KEEP] * (1.0 - cum))


def utility_values(theta, epsilon, kappa, utility="honest", consts=None):
    """Utility of every candidate prefix subset ``S_k``, ``k = 0, ..., K - 1``.

    Parameters
    ----------
    theta : array-like of shape (K,)
        A probability vector (the current posterior sample).
    epsilon, kappa : float
        Privacy budget and the share ``eps1 = kappa * epsilon`` used inside ``S``.
    utility : str or callable, default='honest'
        One of ``'fisher'`` (U1), ``'entropy'`` (U2), ``'tv_posterior'`` (U3),
        ``'tv_marginal'`` (U4), ``'mse'`` (U5), ``'honest'`` (U6), or a callable
        ``utility(theta, P, subset) -> float`` where ``P[x, y] = P(Y = y | X = x)``
        is the RRRR transition matrix of the candidate ``subset`` (an int array).

    Returns
    -------
    values : ndarray of shape (K,)
        ``values[k]`` is the utility of the ``k`` most probable categories.
    """
    theta = np.asarray(theta, dtype=float)
    K = theta.shape[0]
    if consts is None:
        consts = _rrrr_constants(K, epsilon, kappa)
    order = sorted_order(theta)
    ts = theta[order]
    if callable(utility):
        G = _prefix_matrices(K, consts)
        inv = np.empty(K, dtype=np.int64)
        inv[order] = np.arange(K)
        out = np.empty(K)
        for k in range(K):
            # back to original coordinates: P[x, y] = G[k][inv[y], inv[x]]
            P = G[k][np.ix_(inv, inv)].T
            out[k] = float(utility(theta, P, np.sort(order[:k])))
        return out
    if utility == "honest":
        return _honest_values(ts, consts)
    if utility in _COMPILED_MODES:
        # the compiled kernel of the online loop: O(K) time and memory per candidate
        # (g is diagonal plus rank two), so O(K^2) time and O(K) memory in all; the
        # Fisher utility eliminates category K - 1, as the paper does
        from sklearn_bayes._fast._ldp import prefix_utilities

        return prefix_utilities(_COMPILED_MODES[utility], np.ascontiguousarray(theta, dtype=float),
                                order.astype(np.int32), np.ascontiguousarray(consts[:K], dtype=float))
    raise ValueError(f"utility {utility!r} has no per-subset values; use choose_subset_size.")


#: Tie tolerance of the subset choice in units of ``K * eps_mach * max(1, max_k |U_k|)``
#: (the same constant as ``TIE_ULPS`` of ``_fast/_ldp.pyx``).
TIE_ULPS = 8


def tie_argmax(values):
    """The chosen prefix size: the smallest ``k`` whose utility is tied with the largest.

    A utility is a sum of ``O(K)`` terms of magnitude at most ``max(1, |U|)``
    (probabilities times likelihood values <= 1; the Fisher trace), so two evaluations in
    different orders differ by at most a few ``K`` ulps of that.  Values within
    ``tol = TIE_ULPS * K * eps_mach * max(1, max_k |U_k|)`` (finite ``U_k`` only) of the
    largest are ties, and the smallest ``k`` among them wins: the choice never depends on
    rounding.  Non-finite values are never chosen; if none is finite the answer is 0.
    The compiled kernel (``_tie_argmax`` in ``_fast/_ldp.pyx``) does the same arithmetic.

    Examples
    --------
    >>> from sklearn_bayes.privacy._ldp._utilities import tie_argmax
    >>> tie_argmax([-8.33e-17, -0.1, -0.2, -0.1, -0.05, -5.55e-17])
    0
    >>> tie_argmax([0.1, 0.3, 0.2])
    1
    """
    v = np.asarray(values, dtype=float)
    K = v.shape[0]
    fin = np.isfinite(v)
    if not fin.any():
        return 0
    best = float(v[fin].max())
    scale = max(1.0, float(np.abs(v[fin]).max()))
    tol = (float(TIE_ULPS) * K) * np.finfo(float).eps * scale
    return int(np.flatnonzero(fin & (v >= best - tol))[0])


def choose_subset_size(theta, epsilon, kappa, utility="honest", alpha=None, consts=None):
    """The size ``k*`` of the chosen prefix subset for ``theta``.

    Parameters
    ----------
    theta : array-like of shape (K,)
    epsilon, kappa : float
    utility : str or callable, default='honest'
        Any name of :data:`UTILITIES` or a callable (see :func:`utility_values`).
    alpha : float, optional
        Coverage for ``'semi_adaptive'``: the smallest ``k`` with
        ``sum_{j <= k} theta_sigma(j) >= alpha`` (at most ``K - 1``).

    Returns
    -------
    k : int
        The chosen subset is ``sorted_order(theta)[:k]``.

    Examples
    --------
    >>> from sklearn_bayes.privacy._ldp._utilities import choose_subset_size
    >>> choose_subset_size([0.7, 0.1, 0.1, 0.05, 0.05], epsilon=1.0, kappa=0.9)
    1
    >>> choose_subset_size([0.2] * 5, epsilon=1.0, kappa=0.9)
    0
    """
    theta = np.asarray(theta, dtype=float)
    K = theta.shape[0]
    if utility == "non_adaptive":
        return 0
    if utility == "semi_adaptive":
        if alpha is None or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1:
            raise ValueError(f"alpha must be a float in (0, 1) for utility='semi_adaptive', got {alpha!r}.")
        cum = np.cumsum(theta[sorted_order(theta)])[: K - 1]
        hit = np.flatnonzero(cum >= alpha)
        return int(hit[0]) + 1 if hit.size else K - 1
    return tie_argmax(utility_values(theta, epsilon, kappa, utility, consts=consts))


def chosen_subset(phi, epsilon, kappa, utility, alpha, consts, order=None):
    """``(k, order)``: the chosen prefix size for ``theta = phi / sum(phi)`` and the sort order.

    The subset is ``np.sort(order[:k])``.  A built-in utility is chosen by the compiled
    kernel the online loop of ``partial_fit`` uses (``choose_prefix`` in
    ``_fast/_ldp.pyx``: the same normalisation, sort and utility arithmetic), so a
    proposal and the online pass agree to the last bit; a callable is evaluated from
    Python (:func:`choose_subset_size`).  ``order`` (optional) is a starting
    permutation for the insertion sort (the online loop's current order).
    """
    phi = np.ascontiguousarray(phi, dtype=float)
    K = phi.shape[0]
    if callable(utility):
        theta = phi / phi.sum()
        return choose_subset_size(theta, epsilon, kappa, utility, alpha=alpha, consts=consts), sorted_order(theta)
    from sklearn_bayes._fast._ldp import choose_prefix

    if utility == "semi_adaptive" and (alpha is None or not isinstance(alpha, numbers.Real) or not 0 < alpha < 1):
        raise ValueError(f"alpha must be a float in (0, 1) for utility='semi_adaptive', got {alpha!r}.")
    if consts is None:
        consts = _rrrr_constants(K, epsilon, kappa)
    sigma = np.arange(K, dtype=np.int32) if order is None else np.array(order, dtype=np.int32)
    k = choose_prefix(UTILITY_MODES[utility], phi, sigma, np.ascontiguousarray(consts[:K], dtype=float),
                      float(alpha) if alpha is not None else 0.0)
    return int(k), sigma


def utility_value(theta, subset, epsilon, kappa, utility):
    """Utility ``U(theta, S, eps)`` of one arbitrary subset (not necessarily a prefix).

    Parameters
    ----------
    theta : array-like of shape (K,)
    subset : array-like of int
        Category indices of ``S`` (a proper subset of ``[K]``, possibly empty).
    epsilon, kappa : float
    utility : {'fisher', 'entropy', 'tv_posterior', 'tv_marginal', 'mse', 'honest'}

    Returns
    -------
    value : float

    Examples
    --------
    >>> from sklearn_bayes.privacy._ldp._utilities import utility_value
    >>> round(utility_value([.5, .3, .15, .05], [0], 1.0, 0.8, "honest"), 6)
    0.485443
    """
    from sklearn_bayes.privacy._ldp._rrrr import RRRRMechanism

    theta = np.asarray(theta, dtype=float)
    K = theta.shape[0]
    mech = RRRRMechanism(K, epsilon, kappa)
    s = mech._check_subset(subset)
    if utility == "honest":
        c = mech._constants(s.size)
        ps = theta[s].sum()
        return float(c[A1] * (ps + c[R_KEEP] * (1.0 - ps)))
    G = mech.transition_matrix(s).T[None]  # rows y, columns x
    return float(_utilities_from_G(G, theta, utility, elim=K - 1)[0])
