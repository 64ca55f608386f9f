"""Static LDP peers of the AdOBEst-LDP experiments: GRR, OUE, OLH and subset selection.

Each protocol privatises the users (:func:`privatize_peer`, with OLH's hash :func:`olh_hash`)
and its reports are turned into an estimate by IBU (:func:`ibu`), by the unbiased estimate
with norm-sub (:func:`unbiased_estimate`, :func:`norm_sub`), by the unbiased (matrix-inversion)
estimate clipped at 0 and renormalised (:func:`mi_clip`) or, optionally, by EM for the
maximum-likelihood estimate (:func:`mle_em`); :func:`peer_estimates` runs them all on the
same users.  Used by :mod:`sklearn_bayes.experiments.adaptive_ldp` and
``benchmarks/bench_adaptive_ldp.py``; the implementations follow multi-freq-ldpy (see the
tests of ``tests/experiments/test_ldp_peers.py``).
"""

import time

import numpy as np

#: The static protocols, in table order.
PROTOCOLS = ("GRR", "OUE", "OLH", "SS")
#: The three estimators applied to every protocol's reports: IBU, norm-sub, clipped matrix inversion.
PEER_ESTIMATORS = ("IBU", "NS", "MI")
#: Every peer column of the tables: protocol + estimator.
PEERS = tuple(f"{p}+{e}" for p in PROTOCOLS for e in PEER_ESTIMATORS)
#: Optional third estimator: EM for the maximum-likelihood estimate under the exact
#: likelihood of each report (``O(n K)`` per iteration; slower, see :func:`mle_em`).
ALL_PEER_ESTIMATORS = ("IBU", "NS", "MI", "MLE")
ALL_PEERS = tuple(f"{p}+{e}" for p in PROTOCOLS for e in ALL_PEER_ESTIMATORS)
#: IBU settings: multi-freq-ldpy's defaults (at most 10,000 iterations, stop when no
#: coordinate moves by more than 1e-12).
IBU_MAX_ITER = 10_000
IBU_TOL = 1e-12


def ss_subset_size(n_categories, epsilon):
    """Optimal subset size of subset selection, ``max(1, round(K / (e^eps + 1)))`` (Wang et al. 2016)."""
    return int(max(1, np.rint(n_categories / (np.exp(epsilon) + 1.0))))


def olh_range(epsilon):
    """Hash range ``g = round(e^eps) + 1`` of optimised local hashing (Wang et al. 2017)."""
    return int(round(np.exp(epsilon))) + 1


def support_probabilities(protocol, n_categories, epsilon):
    """``(p, q)``: probability that a user's report supports ``v`` when ``x = v`` and when ``x != v``.

    Every static protocol here reports a set of supported categories (GRR: one; OUE: the set
    bits; OLH: the preimage of the reported hash value; SS: the reported subset), and the
    expected support count of ``v`` over ``n`` users is ``n (q + (p - q) theta_v)``.
    """
    K, e = int(n_categories), float(np.exp(epsilon))
    if protocol == "GRR":
        return e / (e + K - 1), 1.0 / (e + K - 1)
    if protocol == "OUE":
        return 0.5, 1.0 / (e + 1.0)
    if protocol == "OLH":
        g = olh_range(epsilon)
        return e / (e + g - 1), 1.0 / g
    if protocol == "SS":
        k = ss_subset_size(K, epsilon)
        p = k * e / (k * e + K - k)
        q = ((k - 1) * k * e + (K - k) * k) / ((K - 1) * (k * e + K - k))
        return p, q
    raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")


_SM_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_SM_M1 = np.uint64(0xBF58476D1CE4E5B9)
_SM_M2 = np.uint64(0x94D049BB133111EB)


def olh_hash(seeds, values, g):
    """The users' hash functions: ``H_seed(v) = splitmix64(seed + (v + 1) * golden) mod g``.

    ``seeds`` and ``values`` broadcast against each other (vectorised over users and
    categories); each user's seed picks a hash function from ``[K]`` to ``[g]``.
    """
    with np.errstate(over="ignore"):
        z = np.asarray(seeds, dtype=np.uint64) + (np.asarray(values, dtype=np.uint64) + np.uint64(1)) * _SM_GAMMA
        z = (z ^ (z >> np.uint64(30))) * _SM_M1
        z = (z ^ (z >> np.uint64(27))) * _SM_M2
        z = z ^ (z >> np.uint64(31))
    return (z % np.uint64(g)).astype(np.int64)


def _grr(values, d, epsilon, rng):
    """Generalised randomised response over ``d`` values, vectorised."""
    values = np.asarray(values, dtype=np.int64)
    e = np.exp(epsilon)
    keep = rng.random(values.size) < e / (e + d - 1)
    other = (values + rng.integers(1, d, size=values.size)) % d  # uniform over the d - 1 others
    return np.where(keep, values, other)


def privatize_peer(protocol, x, n_categories, epsilon, rng):
    """Each user's report under a static ``epsilon``-LDP protocol (vectorised clients).

    Parameters
    ----------
    protocol : {'GRR', 'OUE', 'OLH', 'SS'}
    x : ndarray of shape (n_users,)
        True categories in ``0..n_categories-1``.
    n_categories : int
    epsilon : float
    rng : numpy.random.Generator

    Returns
    -------
    reports
        GRR: ndarray (n,) of values; OUE: bool ndarray (n, K) of bits; OLH: tuple
        ``(y, seeds)`` of hashed-and-perturbed values and the users' hash seeds;
        SS: int ndarray (n, k) of the reported subsets.
    """
    x = np.asarray(x, dtype=np.int64).ravel()
    n, K = x.size, int(n_categories)
    if protocol == "GRR":
        return _grr(x, K, epsilon, rng)
    if protocol == "OUE":
        p, q = support_probabilities("OUE", K, epsilon)
        bits = rng.random((n, K)) < q
        bits[np.arange(n), x] = rng.random(n) < p
        return bits
    if protocol == "OLH":
        g = olh_range(epsilon)
        seeds = rng.integers(0, np.iinfo(np.int64).max, size=n, dtype=np.int64).astype(np.uint64)
        return _grr(olh_hash(seeds, x, g), g, epsilon, rng), seeds
    if protocol == "SS":
        k = ss_subset_size(K, epsilon)
        e = np.exp(epsilon)
        keys = rng.random((n, K))
        # x is in the subset w.p. k e / (k e + K - k); the other members are uniform
        keys[np.arange(n), x] = np.where(rng.random(n) < k * e / (k * e + K - k), -1.0, 2.0)
        return np.argpartition(keys, k - 1, axis=1)[:, :k]
    raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")


def support_counts(protocol, reports, n_categories, epsilon):
    """How many reports support each category (length ``n_categories``)."""
    K = int(n_categories)
    if protocol == "GRR":
        return np.bincount(reports, minlength=K).astype(float)
    if protocol == "OUE":
        return reports.sum(axis=0, dtype=float)
    if protocol == "SS":
        return np.bincount(reports.ravel(), minlength=K).astype(float)
    if protocol == "OLH":
        y, seeds = reports
        g = olh_range(epsilon)
        counts = np.zeros(K)
        values = np.arange(K)
        step = max(1, 2_000_000 // K)
        for s in range(0, y.size, step):
            counts += (olh_hash(seeds[s : s + step, None], values[None, :], g) == y[s : s + step, None]).sum(axis=0)
        return counts
    raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")


def support_matrix(protocol, reports, n_categories, epsilon):
    """Boolean ``(n_users, K)``: which categories each report supports."""
    K = int(n_categories)
    if protocol == "OUE":
        return np.asarray(reports, dtype=bool)
    if protocol == "OLH":
        y, seeds = reports
        return olh_hash(seeds[:, None], np.arange(K)[None, :], olh_range(epsilon)) == y[:, None]
    rows = np.asarray(reports).reshape(len(reports), -1)
    if protocol not in ("GRR", "SS"):
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
    S = np.zeros((rows.shape[0], K), dtype=bool)
    S[np.arange(rows.shape[0])[:, None], rows] = True
    return S


def mle_em(support, epsilon, max_iter=IBU_MAX_ITER, tol=IBU_TOL):
    """EM for the maximum-likelihood estimate under the exact likelihood of every report.

    For all four protocols ``P(report_t | x = i)`` is proportional to ``e^eps`` when the
    report supports ``i`` and to 1 otherwise, so with ``c = e^eps - 1`` the update is
    ``theta_i <- theta_i / n * sum_t (1 + c S_ti) / (1 + c sum_j S_tj theta_j)`` (``O(n K)`` per
    iteration, from the uniform start, stopped as :func:`ibu`).  For GRR it is the same
    iteration as :func:`ibu`; for OUE, OLH and SS it uses the whole report, not only the
    support counts.
    """
    S = np.asarray(support, dtype=float)
    n, K = S.shape
    c = float(np.expm1(epsilon))
    theta = np.full(K, 1.0 / K)
    for _ in range(int(max_iter)):
        w = 1.0 / (1.0 + c * (S @ theta))
        new = theta * (w.sum() + c * (S.T @ w)) / n
        if np.abs(new - theta).max() < tol:
            return new
        theta = new
    return theta


def unbiased_estimate(counts, n_users, p, q):
    """The standard unbiased frequency estimate ``(c_v / n - q) / (p - q)`` (may leave the simplex)."""
    return (np.asarray(counts, dtype=float) / n_users - q) / (p - q)


def norm_sub(f):
    """Norm-sub post-processing (Wang et al. 2020): ``max(f - delta, 0)`` with ``delta`` making it sum to 1.

    Subtracting one constant and clipping at 0 is the Euclidean projection onto the
    probability simplex (sort-based, ``O(K log K)``).
    """
    f = np.asarray(f, dtype=float)
    u = np.sort(f)[::-1]
    css = np.cumsum(u) - 1.0
    j = np.arange(1, f.size + 1)
    r = j[u - css / j > 0][-1]
    return np.maximum(f - css[r - 1] / r, 0.0)


def mi_clip(f):
    """Matrix inversion clipped: ``max(f, 0)`` renormalised to sum to 1 (uniform if nothing is positive)."""
    f = np.maximum(np.asarray(f, dtype=float), 0.0)
    s = f.sum()
    return f / s if s > 0 else np.full(f.size, 1.0 / f.size)


def ibu(counts, p, q, max_iter=IBU_MAX_ITER, tol=IBU_TOL):
    """Iterative Bayesian update on the support counts (multi-freq-ldpy's ``IBU``, in ``O(K)`` per iteration).

    ``theta <- theta * A (f / (A theta))`` from the uniform start, with ``A = q 1 1^T + (p - q) I``
    and ``f`` the normalised support counts, stopped as multi-freq-ldpy stops by default: after
    ``max_iter = 10,000`` iterations or when no coordinate moves by ``tol = 1e-12`` or more.
    For GRR this is EM for the maximum-likelihood estimate; for OUE, OLH and SS it is the EM of
    the support-count likelihood that multi-freq-ldpy (and the IBU literature) uses.  The
    structure of ``A`` makes each iteration ``O(K)`` instead of multi-freq-ldpy's dense
    ``O(K^2)`` product (10,000 iterations at K = 1000 take a fraction of a second, not
    minutes); the iterates are the same (tested).
    """
    counts = np.asarray(counts, dtype=float)
    f = counts / counts.sum()
    d = float(p) - float(q)
    q = float(q)
    theta = np.full(counts.size, 1.0 / counts.size)
    for _ in range(int(max_iter)):
        r = f / (q * theta.sum() + d * theta)
        new = theta * (q * r.sum() + d * r)
        if np.abs(theta - new).max() < tol:
            return new
        theta = new
    return theta


#: Report spaces larger than this are not enumerated by :func:`transition_matrix`.
MAX_REPORTS = 200_000


def _n_reports(protocol, n_categories, epsilon):
    from math import comb

    K = int(n_categories)
    if protocol == "GRR":
        return K
    if protocol == "SS":
        return comb(K, ss_subset_size(K, epsilon))
    raise ValueError(f"transition_matrix covers 'GRR' and 'SS' (reports that are sets of categories), "
                     f"got protocol={protocol!r}.")


def transition_matrix(protocol, n_categories, epsilon):
    """Exact ``P(report | x)``: one row per true category, one column per possible report.

    GRR (:func:`_grr`): the report is one category ``y``, ``P(y | x) = e^eps / (e^eps + K - 1)``
    if ``y = x``, else ``1 / (e^eps + K - 1)``.  SS(``k``) (``privatize_peer``): the report is a
    ``k``-subset ``Y`` (columns in :func:`itertools.combinations` order), ``P(Y | x) = e^eps / D``
    if ``x`` is in ``Y``, else ``1 / D``, with ``D = C(K-1, k-1) e^eps + C(K-1, k)`` (the subset
    holds ``x`` with probability ``k e^eps / (k e^eps + K - k)``, the other members uniform).
    A GRR report ``y`` and the SS(1) report ``{y}`` share a column index.  Report spaces above
    :data:`MAX_REPORTS` are refused (``ValueError``).
    """
    from itertools import combinations
    from math import comb

    K, e = int(n_categories), float(np.exp(epsilon))
    n = _n_reports(protocol, K, epsilon)
    if n > MAX_REPORTS:
        raise ValueError(f"{protocol} has {n} possible reports at K={K}, epsilon={epsilon}: more than "
                         f"MAX_REPORTS={MAX_REPORTS}.")
    if protocol == "GRR":
        P = np.full((K, K), 1.0 / (e + K - 1))
        np.fill_diagonal(P, e / (e + K - 1))
        return P
    k = ss_subset_size(K, epsilon)
    D = comb(K - 1, k - 1) * e + comb(K - 1, k)
    member = np.zeros((K, n), dtype=bool)
    for j, Y in enumerate(combinations(range(K), k)):
        member[list(Y), j] = True
    return np.where(member, e / D, 1.0 / D)


def same_mechanism(source, target, n_categories, epsilon):
    """Whether two protocols are one mechanism: equal report spaces and transition matrices.

    The matrices of :func:`transition_matrix` are compared entry by entry within 16 units in the
    last place (each entry is two or three rounded operations apart).  Protocols it does not
    cover (OUE, OLH) are never the same mechanism as another.
    """
    try:
        shapes = [_n_reports(p, n_categories, epsilon) for p in (source, target)]
    except ValueError:
        return False
    if shapes[0] != shapes[1] or shapes[0] > MAX_REPORTS:
        return False
    a, b = (transition_matrix(p, n_categories, epsilon) for p in (source, target))
    return bool(np.allclose(a, b, rtol=16 * np.finfo(float).eps, atol=0.0))


def share_reports(source, target, reports, n_categories, epsilon):
    """``source``'s reports in the form of ``target``'s (common random numbers), if they are one mechanism.

    Raises ``ValueError`` unless :func:`same_mechanism` (equal transition matrices).  Only GRR
    and SS(``k = 1``) are ever the same here: a GRR report ``y`` becomes the subset ``[y]``.
    """
    if not same_mechanism(source, target, n_categories, epsilon):
        raise ValueError(f"{source} and {target} are different mechanisms at K={n_categories}, "
                         f"epsilon={epsilon} (their transition matrices differ): their reports are not shared.")
    r = np.asarray(reports)
    if source == target:
        return r.copy()
    return r.reshape(-1, 1).copy() if target == "SS" else r[:, 0].copy()


#: Common random numbers among the peers: ``(source, target)``, the target reuses the source's reports
#: when :func:`same_mechanism` (``peer_estimates(share=True)``); SS at ``k = 1`` is GRR.
SHARED_PEERS = (("GRR", "SS"),)


def peer_responses(protocol, x, n_categories, epsilon, rng):
    """One static protocol on the users ``x``: ``(p, q, reports, support counts)``."""
    p, q = support_probabilities(protocol, n_categories, epsilon)
    reports = privatize_peer(protocol, x, n_categories, epsilon, rng)
    return p, q, reports, support_counts(protocol, reports, n_categories, epsilon)


def peer_estimates(x, n_categories, epsilon, rng, protocols=PROTOCOLS, estimators=PEER_ESTIMATORS, share=False,
                   return_reports=False):
    """Every protocol in ``protocols`` on the users ``x`` with every estimator in ``estimators``.

    ``estimators`` from ``('IBU', 'NS', 'MI', 'MLE')``.  Returns a dict ``{"GRR+IBU": theta_hat,
    "GRR+NS": theta_hat, ...}`` and the seconds each protocol took (client + its estimators);
    with ``return_reports=True`` also ``{protocol: reports}``.  Each protocol draws its noise
    from its own child of ``rng`` (the same users, independent mechanisms).  ``share=True``:
    a protocol that is the same mechanism as an earlier one (:data:`SHARED_PEERS`, checked by
    :func:`same_mechanism`) decodes that protocol's reports instead (its own child is spawned
    and unused, so the other protocols' reports do not change).
    """
    x = np.asarray(x, dtype=np.int64).ravel()
    out, secs, all_reports = {}, {}, {}
    for protocol, child in zip(protocols, rng.spawn(len(protocols))):
        t0 = time.perf_counter()
        source = next((s for s, t in SHARED_PEERS if share and t == protocol and s in all_reports
                       and same_mechanism(s, t, n_categories, epsilon)), None)
        if source is None:
            p, q, reports, counts = peer_responses(protocol, x, n_categories, epsilon, child)
        else:
            p, q = support_probabilities(protocol, n_categories, epsilon)
            reports = share_reports(source, protocol, all_reports[source], n_categories, epsilon)
            counts = support_counts(protocol, reports, n_categories, epsilon)
        all_reports[protocol] = reports
        if "IBU" in estimators:
            out[f"{protocol}+IBU"] = ibu(counts, p, q)
        if "NS" in estimators:
            out[f"{protocol}+NS"] = norm_sub(unbiased_estimate(counts, x.size, p, q))
        if "MI" in estimators:
            out[f"{protocol}+MI"] = mi_clip(unbiased_estimate(counts, x.size, p, q))
        if "MLE" in estimators:
            out[f"{protocol}+MLE"] = mle_em(support_matrix(protocol, reports, n_categories, epsilon), epsilon)
        secs[protocol] = time.perf_counter() - t0
    return (out, secs, all_reports) if return_reports else (out, secs)
