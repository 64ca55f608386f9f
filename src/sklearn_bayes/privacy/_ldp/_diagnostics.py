"""Convergence diagnostics of the posterior draws behind ``theta_`` (``convergence_``).

:func:`chain_diagnostics` splits the kept draws of one chain into ``n_segments`` consecutive
segments and treats them as chains: the split potential scale reduction factor R-hat
(Gelman et al., Bayesian Data Analysis, 3rd ed., eq. 11.4) and the effective sample size of
every category from the autocorrelations of the whole chain (Geyer's initial positive
sequence, summed in pairs until the first non-positive pair).  ``convergence_`` reports the
worst category (largest R-hat, smallest ESS); :data:`RHAT_MAX` and :data:`ESS_MIN` are the
thresholds of the ``ConvergenceWarning``.
"""

import numpy as np

from sklearn_bayes._fast._ldp_diag import ess_centre, geyer_tau, split_rhat

__all__ = ["ESS_MIN", "RHAT_MAX", "chain_diagnostics", "min_ess"]

#: ``ConvergenceWarning`` when the worst category's split R-hat exceeds this ...
RHAT_MAX = 1.05
#: ... or its effective sample size is below this.
ESS_MIN = 100.0


def _ess(x):
    """Effective sample size of every column of ``x`` (draws x categories)."""
    n, K = x.shape
    # centred, one contiguous row per category (the FFTs run along rows: the same 1-d transforms
    # as along axis 0 of the draws, at half the cost); the centring, the variances and Geyer's
    # sum are compiled (the same operations in the same order as numpy's over the rows of two or
    # more columns: equal bit for bit; numpy sums a lone column pairwise, not so the draws of a chain)
    xc, var = ess_centre(np.ascontiguousarray(x, dtype=float))
    out = np.full(K, float(n))
    live = var > 0
    if n < 4 or not np.any(live):
        return out
    m = 1 << int(np.ceil(np.log2(2 * n)))
    f = np.fft.rfft(xc[live] if not live.all() else xc, n=m, axis=1)
    tau = geyer_tau(np.fft.irfft(f * np.conj(f), n=m, axis=1), n)
    out[live] = n / np.maximum(tau, 1.0 / np.log10(max(n, 10)))
    return out


def min_ess(draws):
    """The smallest ESS over the columns of ``draws`` (the ``'ess'`` of :func:`chain_diagnostics`)."""
    draws = np.asarray(draws, dtype=float)
    return float(_ess(draws).min()) if draws.shape[0] else 0.0


def chain_diagnostics(draws, n_segments=4, ess=None):
    """``{'rhat': worst split R-hat, 'ess': smallest ESS, 'n_draws', 'n_segments', 'method'}`` of ``draws``
    (``ess``: :func:`min_ess` of these draws if already computed)."""
    draws = np.asarray(draws, dtype=float)
    n, K = draws.shape
    seg = n // n_segments
    rhat = float("nan")
    if seg >= 2 and K >= 2:  # compiled: numpy's arithmetic in numpy's order (split_rhat)
        rhat = float(split_rhat(np.ascontiguousarray(draws), n_segments))
    elif seg >= 2:
        chains = draws[: seg * n_segments].reshape(n_segments, seg, K)
        W = chains.var(axis=1, ddof=1).mean(axis=0)
        B = seg * chains.mean(axis=1).var(axis=0, ddof=1)
        live = W > 0
        if np.any(live):
            var = (seg - 1) / seg * W[live] + B[live] / seg
            rhat = float(np.sqrt(var / W[live]).max())
    if ess is None:
        ess = min_ess(draws)
    return dict(method="mcmc", rhat=rhat, ess=ess, n_draws=int(n), n_segments=int(n_segments))
