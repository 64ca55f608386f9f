"""Serving many clients with :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator` (``mechanism='rrrr'``).

The server proposes subsets (:meth:`ServingMixin.propose_subset`, :meth:`ServingMixin.propose_subsets`)
from its posterior, refreshes the posterior sample (:meth:`ServingMixin.refresh`) and merges
the response stores of separate ingestion workers (:meth:`ServingMixin.merge`).  The
estimator's class docstring ("Serving many clients") describes the protocol.
"""

import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

import sklearn_bayes.privacy._ldp._input as inp
from sklearn_bayes.privacy._ldp._params import check_count, same_value
from sklearn_bayes.utils._validation import check_container
from sklearn_bayes.privacy._ldp._samplers import N_CHAINS
from sklearn_bayes.privacy._ldp._utilities import chosen_subset
from sklearn_bayes.utils import instance_lock, serialized, transactional

__all__ = ["ServingMixin", "proposal_masks", "same_domain"]


def same_domain(a, b):
    """Whether two ``categories_`` are the same labels in the same order (``n_categories=K`` is
    ``categories=range(K)``; ``[0, 1]`` equals ``[0.0, 1.0]``; strings never equal numbers)."""
    if a.shape != b.shape or (a.dtype.kind in "US") != (b.dtype.kind in "US"):
        return False
    try:
        return bool(np.array_equal(a, b))
    except TypeError:
        return False


def proposal_masks(draws, epsilon, kappa, utility, alpha, consts):
    """Boolean ``(n, K)`` masks of the subsets chosen for each posterior draw (row of ``draws``).

    Row ``i`` is the prefix chosen for ``draws[i]`` by the same kernel as the online loop
    (:func:`~._utilities.chosen_subset`), as :meth:`~ServingMixin.propose_subset` does for one draw.
    """
    draws = np.asarray(draws, dtype=float)
    masks = np.zeros(draws.shape, dtype=bool)
    for i, t in enumerate(draws):
        k, order = chosen_subset(t, epsilon, kappa, utility, alpha, consts)
        masks[i, order[:k]] = True
    return masks


class ServingMixin:
    """The serving methods of the estimator: subset proposals, refresh and merge.

    Privacy: a proposal depends only on the recorded responses (already ``epsilon``-LDP
    releases) and on the server's generator, never on a user's category, so every user
    faces an RRRR mechanism with the exact ``epsilon``-LDP guarantee of
    :class:`~sklearn_bayes.RRRRMechanism` (transition matrix checked in ``_rrrr``);
    proposing, refreshing and merging are post-processing and spend no privacy budget.
    """

    @serialized
    def propose_subset(self):
        """The subset for the next user (category positions, sorted), from the current sample.

        Before any response (with ``n_categories`` set) the uniform distribution is used.
        A fitted estimator uses the parameters it was built with and raises a
        ``ValueError`` if one of them has changed since (see Notes).

        Returns
        -------
        subset : ndarray of int
            Pass it to :meth:`sklearn_bayes.RRRRMechanism.privatize` on the
            client, then record the response with :meth:`partial_fit_responses`.
        """
        if "n_responses_" in vars(self):
            self._check_frozen()
            self._check_adaptive(self._client)
            params = self._fitted_params
            phi, consts = self._chain.phi, self._chain.consts
        else:
            K = self._check_unfitted_params("to propose subsets before any data")
            self._check_adaptive(self._resolve_mechanism(K)[1])
            params = self.get_params()
            phi, consts = np.ones(K), None
        self._check_handed_out("propose_subset")
        k, order = chosen_subset(phi, params["epsilon"], params["kappa"], params["utility"], params["alpha"],
                                 consts)
        # a proposal is handed to a device: its positions refer to these labels from now on (review HLR F12)
        self._freeze_client_params()
        return np.sort(order[:k].astype(np.intp))

    @transactional
    def propose_subsets(self, n, *, draws="batch"):
        """Subsets for the next ``n`` users, from posterior draws given the recorded responses.

        The server hands these to a batch of users and records their responses later
        (in any order, from any ingestion worker) with :meth:`partial_fit_responses`.
        The proposals depend only on the responses recorded so far and on the
        server's generator, never on the users' categories, so each user faces an
        RRRR mechanism with the exact ``epsilon``-LDP guarantee of
        :class:`sklearn_bayes.RRRRMechanism` (see Notes, "Serving many clients").

        Parameters
        ----------
        n : int
            Number of users, ``>= 1``, with ``n * n_categories <= 2^27`` (the masks take
            ``n * n_categories`` bytes, and ``draws='user'`` holds ``n`` float64 draws:
            at most 1 GiB); a larger ``n`` is a ``ValueError`` naming the largest allowed:
            propose in several calls.
        draws : {'batch', 'user', 'mean'}, default='batch'
            ``'batch'``: one posterior draw for the batch, every user gets its subset
            (Algorithm 7 with the posterior frozen during the batch).  ``'user'``: one
            draw per user (draws of 8 Metropolis-adjusted Langevin chains, thinned by
            5), so the subsets of a batch vary as the posterior's uncertainty does.
            ``'mean'``: the subset for an estimate of the posterior mean (the chains'
            average over 200 iterations), the same for the batch: less exploration
            than a draw, which pays off early on sparse ``theta`` (see the development log).

        Returns
        -------
        subsets : ndarray of bool of shape (n, n_categories)
            ``subsets[i]`` is user ``i``'s subset as a mask: pass
            ``np.flatnonzero(subsets[i])`` to :meth:`sklearn_bayes.RRRRMechanism.privatize`
            on the device, and the rows of the users who answered, with their
            responses, to :meth:`partial_fit_responses`.

        Notes
        -----
        Each call draws from the exact posterior of the recorded responses (MALA on
        the grouped likelihood, burn-in of ``max(1000, n_final_steps // 2)``
        iterations from the current sample, as :meth:`sample_posterior`) with the
        estimator's generator, then moves the current posterior sample to the last
        draw: it refreshes the posterior (see :meth:`refresh`), and two calls give
        independent proposals.  Before any response (``n_categories`` set) every
        user gets :meth:`propose_subset`'s subset for the uniform distribution.
        """
        if draws not in ("batch", "user", "mean"):
            raise ValueError(f"draws must be 'batch', 'user' or 'mean', got {draws!r}.")
        K = self.n_categories_ if "n_responses_" in vars(self) else self._public_size()  # labels count too (HLC)
        n = check_count(n, "n", K if isinstance(K, numbers.Integral) else 1, "subset masks (bytes)")
        if "n_responses_" not in vars(self):
            subset = self.propose_subset()
            masks = np.zeros((n, int(K)), dtype=bool)
            masks[:, subset] = True
            return masks
        self._check_adaptive(self._client)
        self._check_frozen()
        self._check_handed_out("propose_subsets")
        self._freeze_client_params()  # the proposals go to devices (review HLR F12)
        fitted = self._fitted_params
        theta = self._move_sample(n if draws == "user" else 1, mean=draws == "mean")
        masks = proposal_masks(theta, fitted["epsilon"], fitted["kappa"], fitted["utility"], fitted["alpha"],
                                self._chain.consts)
        if draws != "user":
            masks = np.repeat(masks, n, axis=0)
        return masks

    @transactional
    def refresh(self):
        """Move the current posterior sample to a draw from the posterior of all recorded responses.

        Needed after :meth:`partial_fit_responses` with ``update='defer'`` or
        :meth:`merge` before :meth:`propose_subset` (:meth:`propose_subsets` refreshes
        by itself; ``theta_`` and :meth:`sample_posterior` always use every recorded
        response).  Runs MALA on the grouped likelihood (cost independent of the
        number of responses, see Notes) with the estimator's generator.

        Returns
        -------
        self : object
        """
        check_is_fitted(self)
        self._check_frozen()
        if self._client is None:  # static protocols keep no online sample: theta_ is exact on read
            self._move_sample(1)
        return self

    def _move_sample(self, n_draws, mean=False):
        """``n_draws`` posterior draws of theta (MALA, ``self._rng``); the sample moves to the last one.

        With ``mean=True`` returns instead the chains' average over 200 iterations
        (an estimate of the posterior mean, shape ``(1, K)``).
        """
        burn = max(1000, self.n_final_steps // 2)
        thin = 5
        per_chain = -(-n_draws // N_CHAINS)
        avg, theta = self._chain.mala(burn, max(thin * per_chain, 200 if mean else 0), self._rng, thin=thin)
        theta = theta[:n_draws]
        self._chain = self._chain.moved_to(theta[-1])
        self._stale = False
        self._end_update()
        return avg[None, :] if mean else theta

    def encode_categories(self, labels):
        """Positions of the public ``labels`` in the category domain (deployment: what a device privatises).

        Responses, subsets and ``theta_`` are indexed by positions: position ``j`` is ``categories_[j]``, the
        ``j``-th label in the order ``categories`` gave them (``n_categories=K``: the codes ``0..K-1``;
        ``categories='from_data'``: the sorted labels seen in the first fitting call).  Before any data the
        domain comes from ``n_categories`` or ``categories``.

        Parameters
        ----------
        labels : array-like of shape (n,)
            Labels of the domain (a device's own category, or labels to look up in ``theta_``).

        Returns
        -------
        positions : ndarray of int32 of shape (n,)
            ``categories_[positions[i]] == labels[i]``: pass them to ``client_mechanism().privatize``.

        Raises
        ------
        ValueError
            For a label outside the domain (located by its row: a device's label is private, it is not quoted),
            or, before any data, with ``categories='from_data'`` (no public domain yet).

        Notes
        -----
        With labels ``c_0, ..., c_{K-1}`` (in the order given) the map is ``c_j -> j``, a bijection fixed by the
        public labels: privatising ``j`` with an ``epsilon``-LDP mechanism on ``{0, ..., K-1}`` is an
        ``epsilon``-LDP mechanism on the labels.  Looked up by binary search in the sorted labels,
        ``O(n log K)`` after an ``O(K log K)`` sort when the labels are not sorted.
        """
        if "n_responses_" in vars(self):
            self._check_frozen()
            domain = self.categories_
        else:
            labels_now = self.categories
            self._check_unfitted_params("to encode labels before any data", labels_now)
            domain = inp.categories_from(None, self.n_categories, labels_now)
        check_container(labels, "labels")
        inp.refuse_masked(labels, "labels")
        # a list as objects: numpy's string arrays would drop a trailing NUL ('a\x00' is not 'a')
        arr = labels if isinstance(labels, np.ndarray) else np.asarray(list(labels) if hasattr(labels, "__iter__")
                                                                         else labels, dtype=object)
        if arr.ndim != 1:
            raise ValueError(f"labels must be a 1-d array-like of labels, got shape {arr.shape}.")
        if arr.size == 0:
            return np.zeros(0, dtype=np.int32)
        if arr.dtype.kind == "c" or (arr.dtype == object and any(inp.missing(v) for v in arr)) or (
                arr.dtype.kind == "f" and np.isnan(arr).any()):
            raise ValueError("labels holds missing values or complex numbers, which are not labels.")
        return inp.encode(arr, domain, arg="labels")

    def merge(self, other):
        """Add the responses recorded by ``other`` (another ingestion worker's store).

        Both estimators must be fitted with the same frozen parameters (``epsilon``, ``kappa``, ``utility``,
        ``alpha``, ``prior``; their ``random_state`` may differ: the merged estimator keeps its own
        generator) and the same domain: ``categories_`` the same labels in the same order (review HLR:
        ``n_categories=K`` and ``categories=range(K)`` are the same domain; ``[0, 1]`` and ``[0.0, 1.0]`` too;
        ``['a', 'b']`` and ``['b', 'a']`` are not, their positions differ).
        Refused: merging an estimator with itself, and stores that already share
        responses (a store merged twice, a copy or pickle of a store, or two stores
        that both absorbed a third), which would be counted twice.  ``other`` is not
        changed.  The responses were privatised on the users' devices, so merging is
        post-processing: it spends no privacy budget.

        After a merge the posterior sample is stale until :meth:`refresh` or the next
        :meth:`propose_subsets`; ``theta_`` uses every response at once.

        Parameters
        ----------
        other : AdaptiveLDPFrequencyEstimator
            A fitted estimator (typically unpickled from an ingestion worker).  This
            estimator may be unfitted (a hub that only merges): it then starts a store
            with its own parameters, which must match ``other``'s.

        Returns
        -------
        self : object
        """
        if other is self:
            raise ValueError("other is this estimator: merging a response store with itself would count it twice.")
        if not isinstance(other, ServingMixin):  # the estimator is this mixin's only user
            raise TypeError(f"other must be a fitted AdaptiveLDPFrequencyEstimator, got {type(other).__name__}.")
        # both instances' locks, always taken in the same order (by id), so two threads merging
        # a into b and b into a cannot deadlock; other's lock keeps it from changing (or rolling
        # back a rejected call) while its responses are read
        first, second = sorted((self, other), key=id)
        with instance_lock(first), instance_lock(second):
            return self._merge(other)

    @transactional
    def _merge(self, other):
        if "n_responses_" not in vars(other):
            raise ValueError("other is not fitted: it holds no responses to merge.")
        if "n_responses_" not in vars(self):  # an empty hub: its own parameters, no responses yet
            self._validate_params()
            self._check_params()
            # the hub's own public domain (n_categories or labels); only categories='from_data' adopts other's
            self._init_state(other.categories_ if isinstance(self.categories, str)
                             else inp.categories_from(None, self.n_categories, self.categories))
            self.n_features_in_ = 1
            self._validated_params = self._params_now()
        self._check_frozen()
        other._check_frozen()
        for name in ("epsilon", "mechanism", "kappa", "utility", "alpha"):
            a, b = self._fitted_params[name], other._fitted_params[name]
            if not same_value(a, b):
                raise ValueError(f"other was fitted with {name}={b!r} and this estimator with {name}={a!r}: "
                                 f"responses of different mechanisms or posteriors cannot be merged.")
        # the domain (before the prior: a prior vector's shape follows it): the same labels in the same order,
        # whether given by n_categories or categories (review HLR F2, F3b); labels of categories='from_data'
        # come from X, so none is quoted
        if not same_domain(self.categories_, other.categories_):
            a, b = self._fitted_params["n_categories"], other._fitted_params["n_categories"]
            if a is not None and b is not None:
                raise ValueError(f"other was fitted with n_categories={b!r} and this estimator with n_categories={a!r}: "
                                 "responses of different mechanisms or posteriors cannot be merged.")
            raise ValueError(
                f"other has other categories than this estimator ({other.n_categories_} and {self.n_categories_} "
                "labels, not the same labels in the same order): a response is a position in its store's "
                "categories_, so its responses cannot be merged. Give both the same n_categories or the same "
                "categories list.")
        mine, theirs = self._fitted_params["prior"], other._fitted_params["prior"]
        if not (np.array_equal(self._chain.prior, other._chain.prior)
                and isinstance(mine, str) == isinstance(theirs, str) and (not isinstance(mine, str) or mine == theirs)):
            raise ValueError(f"other was fitted with prior={other._fitted_params['prior']!r} and this estimator "
                             f"with prior={self._fitted_params['prior']!r}: the posteriors differ.")
        shared = self._chain.store.store_ids & other._chain.store.store_ids
        if shared:
            raise ValueError(
                f"other and this estimator share the responses of {len(shared)} store(s) (a store merged twice, "
                "or a copy or pickle of the same store): merging would count them twice."
            )
        self._begin_update()
        self._chain.store.merge_from(other._chain.store)
        self._stale = True
        self._end_update()
        return self
