"""The state of the LDP posterior chain as one object: :class:`ChainState`.

The online driver (``_driver``), the samplers (``_samplers``) and the estimator all read
the same six things: the response store, the online sample ``phi`` and its sort order
``sigma``, the generator, the RRRR constants table and the Dirichlet prior of the online
chain.  They travel together as one :class:`ChainState` instead of six arguments.

Transactions: a :class:`ChainState` is replaced, never changed behind the estimator's
back.  Before a fitting call changes ``phi`` / ``sigma`` in place (the compiled kernels
do) or appends to the store, the estimator binds :meth:`ChainState.for_update`, a new
state with copies of what will change (the store's copy shares its append-only buffers);
a move of the sample (:meth:`ChainState.moved_to`) is a new state too.  A rejected call
restores the estimator's old binding, so the old state is intact.  The generator is
shared by every state of one estimator (it is the stream); the estimator also binds it
as ``_rng``, which is how :func:`~sklearn_bayes.utils.transactional` rewinds it.
"""

import numpy as np

from sklearn_bayes.privacy._ldp._mechanisms import groups_from_packed
from sklearn_bayes.privacy._ldp._posterior import Groups, rrrr_groups
from sklearn_bayes.privacy._ldp._samplers import gibbs_grouped, mala, sgld_chain
from sklearn_bayes.privacy._ldp._store import ResponseStore
from sklearn_bayes.privacy._ldp._utilities import sorted_order

__all__ = ["ChainState"]


class ChainState:
    """The posterior chain of :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator`.

    Holds what the online loop and the posterior samplers read and move; it computes
    nothing about privacy: the responses it stores were released by an
    ``epsilon``-LDP mechanism (on the users' devices, or by the estimator in
    simulation), and everything computed from them here is post-processing.

    Parameters
    ----------
    store : ResponseStore
        The recorded responses ``(y, subset)``.
    phi : ndarray of shape (K,)
        The online sample on the Gamma scale (``theta = phi / sum(phi)``).
    sigma : ndarray of int32 of shape (K,)
        The sort order of ``phi`` kept between users (by decreasing ``theta``).
    rng : numpy.random.Generator
        The estimator's stream: privacy noise in simulation, and the MCMC.
    consts : ndarray of shape (K, 6) or None
        The RRRR constants table (``None`` for a static mechanism, which never reads it).
    prior : ndarray of shape (K,)
        The Dirichlet concentration of the online chain.
    """

    def __init__(self, store, phi, sigma, rng, consts, prior):
        self.store = store
        self.phi = phi
        self.sigma = sigma
        self.rng = rng
        self.consts = consts
        self.prior = prior

    def __reduce__(self):
        # the six fields by position (copies and pickles): no attribute names in the pickle,
        # so a loaded estimator pickles to the same bytes as the original
        return type(self), (self.store, self.phi, self.sigma, self.rng, self.consts, self.prior)

    @classmethod
    def start(cls, n_categories, rng, consts, prior, *, members):
        """A fresh chain: no responses, ``phi = 1`` (uniform), ``sigma`` the identity.

        ``members``: keep the member lists of the subsets (the RRRR kernels read them).
        """
        K = int(n_categories)
        return cls(ResponseStore(K, members=members), np.ones(K), np.arange(K, dtype=np.int32), rng, consts, prior)

    def _replace(self, **changes):
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new

    def for_update(self, *, copy_sample):
        """A new state for a call that records responses: the store copied (append-only
        buffers shared) and, if ``copy_sample``, ``phi`` and ``sigma`` copied (the online
        loop moves them in place)."""
        if copy_sample:
            return self._replace(store=self.store.copy(), phi=self.phi.copy(), sigma=self.sigma.copy())
        return self._replace(store=self.store.copy())

    def trimmed(self):
        """A state for pickling: the same, with only the used part of the store
        (see ``ResponseStore.__getstate__``)."""
        store = object.__new__(ResponseStore)
        store.__dict__.update(self.store.__getstate__())
        return self._replace(store=store)

    def moved_to(self, theta):
        """A new state with the sample moved to ``theta`` (on the Gamma scale, with the
        state's generator: ``sum(phi)`` is independent of the data)."""
        phi = theta * self.rng.gamma(float(self.prior.sum()))
        return self._replace(phi=phi, sigma=sorted_order(phi).astype(np.int32))

    @property
    def theta(self):
        """The online sample as probabilities, ``phi / sum(phi)``."""
        return self.phi / self.phi.sum()

    # ------------------------------------------------------------------ samplers
    def exact_groups(self, epsilon=None):
        """The responses as :class:`~._posterior.Groups` for the exact Gibbs sampler
        (memoised in the store per recording call).  ``epsilon``: the static mechanism's
        budget (its responses are packed sets); ``None`` for RRRR."""
        store = self.store
        K = store.n_categories

        def compute():
            if epsilon is None:
                g = rrrr_groups(K, *store.rrrr_structure(self.consts))
            else:
                packed, counts = store.set_counts()
                g = groups_from_packed(packed, counts, float(epsilon), K)
            bits = np.zeros((0, 0), dtype=np.uint8) if g.bits is None else g.bits
            return (g.a_ptr, g.a_idx, g.y, g.f_in, g.f_y, g.f_out, g.count, bits)

        *arrays, bits = store.cached("gibbs_groups", compute)
        return Groups(K, *arrays, bits=bits if bits.size else None)

    def mala(self, burn, keep, rng, thin=0):
        """:func:`~._samplers.mala` on the grouped likelihood, from ``phi``."""
        store = self.store
        L, counts = store.likelihood_rows(self.consts)
        return mala(store.rrrr_structure(self.consts), L, counts, self.prior, self.phi, burn, keep, rng, thin=thin)

    def gibbs_grouped(self, burn, keep, rng, thin=0):
        """:func:`~._samplers.gibbs_grouped` on the grouped likelihood, from ``theta``."""
        L, counts = self.store.likelihood_rows(self.consts)
        return gibbs_grouped(L, counts, self.prior, self.theta, burn, keep, rng, thin=thin)

    def continued(self, n_iter, thin, rng, *, sampler, batch_size, gamma):
        """The online chain continued from a copy of ``phi`` (:func:`~._samplers.sgld_chain`)."""
        return sgld_chain(self, rng, n_iter=n_iter, thin=thin, sampler=sampler, batch_size=batch_size, gamma=gamma)
