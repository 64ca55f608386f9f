"""The spike/bulk hierarchical prior chosen per fit against the symmetric one (issue 28, round 12).

The estimator's ``prior='spike-bulk'`` (an explicit option; ``'auto'`` keeps ``'hierarchical'``): every route
that draws ``theta`` under a hierarchical prior ('posterior', 'counts', 'importance' and its exact fallback)
runs the chain of :class:`~._hybrid.HybridChain` with a fresh :class:`SpikeBulkChoice` as its ``prior``, which
runs the Python reference chain :func:`~._posterior.hybrid_chain` (the compiled kernel draws only the
symmetric prior); proposal and target of 'importance' share it, so its weights stay exact.  Measured in the
guide's "Round 12" (the benchmark's ``--sparse-choice`` and ``--general --prior spike-bulk``): not the default
(four held-out cells lose 1.3-4.4 % of TV; the data hardly move the probability of the symmetric model from 1/2).

Model.  ``theta ~ Dir(rho_v)`` with ``rho_v = rho`` if ``z_v = 1`` (the bulk) and ``rho_v = max(g_0,
rho / 30)`` if ``z_v = 0`` (the spike; ``g_0 = RHO_GRID[0]``), ``ln rho`` uniform on ``RHO_GRID`` as under
``'hierarchical'``.  The prior of ``z`` puts mass ``s`` (1/2) on ``z = 1_K`` -- the symmetric hierarchical
model -- and ``1 - s`` on the spike/bulk model ``z_v ~ Bernoulli(w)`` i.i.d., ``w ~ Beta(a, 1)``
(``a = 5``; 3 and 9 measured on the dev cells), collapsed over ``w``::

    P(z) = s [z = 1_K] + (1 - s) B(a + m, 1 + K - m) / B(a, 1),    m = sum_v z_v.

The chain's hyperparameter step given the latent counts ``n`` (``theta`` integrated out, the
Dirichlet-multinomial ``p(n | rho_v) = Gamma(A) / Gamma(A + N) prod_v Gamma(rho_v + n_v) / Gamma(rho_v)``,
``A = sum_v rho_v``) is a systematic scan of exact Gibbs updates: each ``z_j | z_-j, rho, n`` in turn, then
``rho | z, n`` on its grid; ``theta ~ Dir(rho_v + n)`` follows as for a fixed vector prior.  In the MALA
phase, :meth:`SpikeBulkChoice.jumps` moves each ``(z_j, ln phi_j)`` jointly (without it a tail category's
``theta_v`` changed regime only through the latent counts: ESS 46 against 615 under ``'hierarchical'``).  The
posterior probability of the symmetric model is ``P(z = 1_K | y) s / P(z = 1_K)`` (the share of the
all-ones mass that the symmetric component holds), estimated from the chain's visits of ``z = 1_K``.
"""

from math import exp, lgamma

import numpy as np
from scipy.special import betaln, gammaln

from sklearn_bayes.privacy._ldp._posterior import RHO_GRID

__all__ = ["SpikeBulkChoice", "symmetric_probability"]

#: The spike's concentration is the bulk's divided by this (at least ``RHO_GRID[0]``).
SPIKE_DIVISOR = 30.0
#: ``w ~ Beta(W_SHAPE, 1)``: the prior share of the bulk under the spike/bulk model.
W_SHAPE = 5.0
#: Prior mass of the symmetric model (``z = 1_K``).
SYMMETRIC_MASS = 0.5


class SpikeBulkChoice:
    """State and exact Gibbs step of the spike/bulk-or-symmetric hyperparameters ``(z, rho)``.

    Parameters
    ----------
    n_categories : int
    grid : ndarray, default=RHO_GRID
        The grid of ``rho`` (log-uniform prior on it).
    w_shape, symmetric_mass, spike_divisor : float
        ``a``, ``s`` and the divisor of the module docstring.

    Attributes
    ----------
    z : ndarray of bool of shape (n_categories,)
        The bulk indicators (start: all ones, the symmetric model).
    rho : float
        The bulk concentration (start: 1).
    """

    def __init__(self, n_categories, grid=RHO_GRID, *, w_shape=W_SHAPE, symmetric_mass=SYMMETRIC_MASS,
                 spike_divisor=SPIKE_DIVISOR):
        K = int(n_categories)
        self.K, self.grid = K, np.asarray(grid, dtype=float)
        self.w_shape, self.symmetric_mass = float(w_shape), float(symmetric_mass)
        self.spike_divisor = float(spike_divisor)
        if not (K >= 1 and self.w_shape > 0 and 0 <= self.symmetric_mass < 1 and self.spike_divisor >= 1):
            raise ValueError("SpikeBulkChoice needs n_categories >= 1, w_shape > 0, 0 <= symmetric_mass < 1 and "
                             "spike_divisor >= 1.")
        m = np.arange(K + 1)
        lz = np.log1p(-self.symmetric_mass) + betaln(self.w_shape + m, 1 + K - m) - betaln(self.w_shape, 1)
        if self.symmetric_mass > 0:
            lz[K] = np.logaddexp(np.log(self.symmetric_mass), lz[K])
        #: log P(z) of one configuration with m ones, m = 0..K
        self.log_prior_z = lz
        self._log_prior_z = lz.tolist()  # as Python floats, for the scalar updates of the sweep
        self.z = np.ones(K, dtype=bool)
        self.rho = 1.0

    def spike(self, rho):
        """The spike's concentration for bulk concentration(s) ``rho``."""
        return np.maximum(self.grid[0], np.asarray(rho, dtype=float) / self.spike_divisor)

    def concentrations(self, z=None, rho=None):
        """``rho_v`` of the state (or of ``z``, ``rho``): ``rho`` on the bulk, the spike elsewhere."""
        z = self.z if z is None else np.asarray(z, dtype=bool)
        rho = self.rho if rho is None else float(rho)
        return np.where(z, rho, float(self.spike(rho)))

    def log_joint(self, z, rho, counts):
        """``log P(z) + log p(n | rho_v(z, rho))`` up to a constant (the grid prior is uniform): the
        unnormalised log posterior of ``(z, rho)`` given the latent ``counts``, for references."""
        z = np.asarray(z, dtype=bool)
        a = self.concentrations(z, rho)
        n = np.asarray(counts, dtype=float)
        return float(self.log_prior_z[int(z.sum())] + gammaln(a.sum()) - gammaln(a.sum() + n.sum())
                     + np.sum(gammaln(a + n) - gammaln(a)))

    def z_conditional(self, j, counts, z=None, rho=None):
        """``P(z_j = 1 | z_-j, rho, n)`` (the state's ``z``, ``rho`` unless given)."""
        z = self.z if z is None else np.asarray(z, dtype=bool)
        rho = self.rho if rho is None else float(rho)
        n = np.asarray(counts, dtype=float)
        return self._z_probability(float(n[j]), int(z.sum()) - int(z[j]), rho, float(self.spike(rho)), float(n.sum()))

    def _z_probability(self, n_j, m_other, rho, r0, N):
        """``P(z_j = 1 | ...)`` from the count ``n_j`` of category ``j``, the number ``m_other`` of the other
        categories in the bulk and ``N = sum n``: the others' total concentration is ``m_other rho + (K - 1 -
        m_other) r0`` (closed form: ``O(1)`` per category, so a sweep costs ``O(K)``, not ``O(K^2)``)."""
        a_other = m_other * rho + (self.K - 1 - m_other) * r0
        l1 = (lgamma(a_other + rho) - lgamma(a_other + rho + N) + lgamma(rho + n_j) - lgamma(rho)
              + self._log_prior_z[m_other + 1])
        l0 = (lgamma(a_other + r0) - lgamma(a_other + r0 + N) + lgamma(r0 + n_j) - lgamma(r0)
              + self._log_prior_z[m_other])
        d = l0 - l1
        return 1.0 / (1.0 + exp(d)) if d < 700.0 else 0.0

    def rho_conditional(self, counts, z=None):
        """``p(rho | z, n)`` on the grid (a probability vector)."""
        z = self.z if z is None else np.asarray(z, dtype=bool)
        n = np.asarray(counts, dtype=float)
        G, S = self.grid, self.spike(self.grid)
        m = int(z.sum())
        A = m * G + (self.K - m) * S
        lp = (gammaln(A) - gammaln(A + n.sum()) + (gammaln(G[None, :] + n[z][:, None]) - gammaln(G)[None, :]).sum(0)
              + (gammaln(S[None, :] + n[~z][:, None]) - gammaln(S)[None, :]).sum(0))
        p = np.exp(lp - lp.max())
        return p / p.sum()

    def step(self, rng, counts):
        """One sweep given the latent ``counts``: ``z_1, ..., z_K`` in turn, then ``rho``; returns ``rho_v``.

        Random numbers: one uniform per category (``z_j = 1`` when it is below the conditional), then
        one for ``rho`` (the normalised cumulative sum, ``searchsorted(side='right')``).
        """
        n = np.asarray(counts, dtype=float)
        N, rho, r0 = float(n.sum()), self.rho, float(self.spike(self.rho))
        nj, z = n.tolist(), self.z
        m = int(z.sum())
        for j in range(self.K):
            m_other = m - bool(z[j])
            z[j] = zj = rng.random() < self._z_probability(nj[j], m_other, rho, r0, N)
            m = m_other + zj
        cdf = self.rho_conditional(counts).cumsum()
        cdf /= cdf[-1]
        self.rho = float(self.grid[int(cdf.searchsorted(rng.random(), side="right"))])
        return self.concentrations()

    def jumps(self, rng, Z, form):
        """Joint independence Metropolis-Hastings moves of ``(z_j, ln phi_j)``, ``j = 1..K`` in turn (in place).

        ``Z = ln phi`` is the MALA state (``phi_v ~ Gamma(rho_v)`` a priori, ``theta = phi / sum phi``) and
        ``form`` the MALA target's groups (``mala_logpost``).  The proposal draws ``z_j'`` from its prior
        conditional ``P(z_j' | z_-j)`` and ``ln phi_j'`` from ``ln Gamma(rho_v(z'))`` (as
        :func:`~._posterior._log_gamma`), so the acceptance ratio is the likelihood ratio alone; each move
        leaves ``p(phi, z | rho, y)`` invariant.  A tail category changes regime (spike or bulk) in one move,
        which the Gibbs step of ``z`` given the latent counts makes only slowly.  Random numbers per
        category: one uniform (``z_j'``), one Gamma and one uniform (``ln phi_j'``), one uniform (accept).
        """
        from sklearn_bayes._fast._ldp_mala import mala_logpost

        p = self.concentrations()
        lp = mala_logpost(Z, *form, p)[0]
        r0 = float(self.spike(self.rho))
        for j in range(self.K):
            m_other = int(self.z.sum()) - int(self.z[j])
            l1, l0 = self.log_prior_z[m_other + 1], self.log_prior_z[m_other]
            zj = bool(rng.random() < 1.0 / (1.0 + np.exp(l0 - l1)))
            a = self.rho if zj else r0
            u = float(np.log(rng.gamma(a + 1.0)) + np.log(rng.random()) / a)
            old = Z[j]
            Z[j] = u
            lp_new = mala_logpost(Z, *form, p)[0]
            # the likelihood ratio: the target's ratio less the (unchanged p_j) prior term of coordinate j
            log_ratio = (lp_new - (p[j] * u - np.exp(u))) - (lp - (p[j] * old - np.exp(old)))
            if np.log(rng.random()) < log_ratio:
                lp = lp_new
                self.z[j] = zj
            else:
                Z[j] = old

    def symmetric_share(self):
        """``P(symmetric model | z = 1_K)``: multiplies the chain's share of visits of ``z = 1_K`` to give
        the posterior probability of the symmetric model."""
        if self.symmetric_mass == 0:
            return 0.0
        return float(np.exp(np.log(self.symmetric_mass) - self.log_prior_z[self.K]))


def symmetric_probability(diag, index=None, log_weights=None):
    """``diag`` with ``p_symmetric``, the posterior probability of the symmetric model, in place of the private
    ``symmetric_visits`` and ``symmetric_share`` of :func:`~._samplers.adaptive_exact_draws` (``diag`` as it is
    when they are absent: another prior).  The visits of ``z = 1_K`` of the kept draws (those at ``index``),
    averaged (weighted by ``exp(log_weights)`` for the importance decoder's draws), times the share."""
    if "symmetric_visits" not in diag:
        return diag
    diag = dict(diag)
    visits, share = diag.pop("symmetric_visits"), diag.pop("symmetric_share")
    if index is not None:
        visits = visits[index]
    if visits.size == 0:
        return dict(diag, p_symmetric=float("nan"))
    if log_weights is None:
        return dict(diag, p_symmetric=float(visits.mean() * share))
    w = np.exp(np.asarray(log_weights, dtype=float) - np.max(log_weights))
    return dict(diag, p_symmetric=float(np.sum(w * visits) / np.sum(w) * share))
