"""Vectorised helpers for serving AdaptiveLDPFrequencyEstimator to many clients.

Interning of subset masks by packed keys (no Python loop per response) and the
subsets proposed for posterior draws.  Used by
:meth:`AdaptiveLDPFrequencyEstimator.partial_fit_responses`,
:meth:`~AdaptiveLDPFrequencyEstimator.propose_subsets` and
:meth:`~AdaptiveLDPFrequencyEstimator.merge`.
"""

import uuid

import numpy as np

from ._utilities import choose_subset_size


def distinct_masks(masks):
    """Distinct rows of a boolean ``(n, K)`` mask in lexicographic order, and the inverse.

    Same result as ``np.unique(masks, axis=0, return_inverse=True)`` (``False < True``,
    first column most significant), computed on the rows packed into bits: for
    ``K <= 64`` one ``uint64`` key per row (a 1-d sort), otherwise byte rows.
    """
    n, K = masks.shape
    packed = np.packbits(masks, axis=1)  # big-endian bit order: column 0 is the MSB
    nb = packed.shape[1]
    if nb <= 8:
        keys = np.zeros((n, 8), dtype=np.uint8)
        keys[:, :nb] = packed
        keys = keys.view(">u8").ravel()  # big-endian: numeric order = lexicographic row order
        _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
    else:
        _, first, inv = np.unique(packed, axis=0, return_index=True, return_inverse=True)
    return np.ascontiguousarray(masks[first]), inv.ravel()


def new_store_id():
    """A fresh identifier of a response store (128 random bits from the operating system).

    It is not drawn from the estimator's generator, so it changes neither the privacy
    noise of a simulation nor the MCMC; it only lets :meth:`merge` refuse to count a
    store twice.
    """
    return uuid.uuid4().hex


def subsets_for_draws(draws, epsilon, kappa, utility, alpha, consts):
    """Boolean ``(n, K)`` masks of the subsets chosen for each posterior draw (row of ``draws``).

    Row ``i`` is the prefix of size ``choose_subset_size(draws[i])`` of the categories
    sorted by decreasing ``draws[i]`` (ties by index), as :meth:`propose_subset` does
    for one draw.
    """
    draws = np.asarray(draws, dtype=float)
    n, K = draws.shape
    ks = np.fromiter(
        (choose_subset_size(t, epsilon, kappa, utility, alpha=alpha, consts=consts) for t in draws),
        dtype=np.int64, count=n,
    )
    order = np.argsort(-draws, axis=1, kind="stable")  # decreasing, ties by increasing index
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.arange(K)[None, :].repeat(n, axis=0), axis=1)
    return rank < ks[:, None]
