"""Parameters of :class:`~sklearn_bayes.AdaptiveLDPFrequencyEstimator` after fitting.

The first fitting call records the parameters that define the mechanism and the
posterior (:data:`FROZEN_PARAMS`, with the toolkit of :mod:`sklearn_bayes.utils._streaming`);
every later call compares them with the current values and refuses a changed one
(:meth:`FrozenParamsMixin._check_frozen`).  Also here: the checks that
``_parameter_constraints`` cannot express, the prior vector, the resolution of
``mechanism`` into a client object, and the bound on the arrays a reading method returns.
"""

import copy
import numbers

import numpy as np

from sklearn_bayes.privacy._ldp._count_posterior import COUNTS_MAX_CATEGORIES
from sklearn_bayes.privacy._ldp._input import check_categories, check_domain
from sklearn_bayes.privacy._ldp._mechanisms import SetResponseMechanism, best_subset_size
from sklearn_bayes.utils._streaming import first_changed_parameter, record_parameters
from sklearn_bayes.utils._validation import _OSSeededGenerator

__all__ = ["FINAL_KNOBS", "FROZEN_PARAMS", "MAX_RETURNED_CELLS", "PARAM_NAMES", "FrozenParamsMixin", "check_count",
           "same_labels", "same_value"]

# Parameters that shape the mechanism or the posterior: recorded at the first fitting
# call and compared with ``get_params()`` by every later call (see ``_check_frozen``).
# The others (sampler, n_steps, batch_size, step_size, n_final_steps, final_estimate)
# are compute knobs of the MCMC and may change between calls.
FROZEN_PARAMS = ("n_categories", "categories", "epsilon", "mechanism", "kappa", "utility", "alpha", "prior",
                 "random_state")
# Knobs the final estimate ``theta_`` depends on (its cache is keyed by them).
FINAL_KNOBS = ("final_estimate", "n_final_steps", "sampler", "batch_size", "step_size", "point_estimate", "decoder")
PARAM_NAMES = FROZEN_PARAMS + (
    "sampler", "n_steps", "batch_size", "step_size", "n_final_steps", "final_estimate", "point_estimate", "decoder",
)

#: A parameter not passed (distinct from None, a valid value).
class _Unset:
    def __repr__(self):
        return "<unset>"


_UNSET = _Unset()

#: Largest ``count * n_categories`` of an array a reading method returns (2^27: 128 MiB of
#: booleans, 1 GiB of float64): above, the call is refused instead of ending in a MemoryError.
MAX_RETURNED_CELLS = 1 << 27


def check_count(value, name, K, what):
    """``value`` as an int ``>= 1`` with ``value * K <= MAX_RETURNED_CELLS``, else a ValueError naming ``name``."""
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    value = int(value)
    K = max(int(K), 1)
    if value * K > MAX_RETURNED_CELLS:
        raise ValueError(
            f"{name}={value} is too large: {name} * n_categories must be at most 2^27 = {MAX_RETURNED_CELLS} "
            f"({what}; at most {max(MAX_RETURNED_CELLS // K, 1)} at n_categories={K}). Ask in several calls."
        )
    return value


def same_value(a, b):
    """Equal numbers or strings (``1 == 1.0``), else the same object (generators, callables)."""
    if a is b:
        return True
    scalar = (numbers.Number, str, type(None))
    if isinstance(a, scalar) and isinstance(b, scalar) and isinstance(a, str) == isinstance(b, str):
        return bool(a == b)
    return False


def _copy_labels(value):
    """A copy of the labels (the caller's list or array may change later): an array stays an array (compared
    in C, review HLR F9), anything else becomes a list; a string or None is ``value`` itself."""
    if value is None or isinstance(value, (str, range, tuple, set, frozenset, dict)) or not hasattr(value, "__len__"):
        return value  # immutable, or refused by check_categories (range(10**12) is refused by its length)
    return value.copy() if isinstance(value, np.ndarray) else list(value)


def same_labels(a, b):
    """Whether two values of ``categories`` are the same: equal strings / None, or equal label lists (the same
    labels in the same order; two arrays are compared by ``np.array_equal``, O(K) in C)."""
    if a is None or b is None or isinstance(a, str) or isinstance(b, str):
        return same_value(a, b)
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.ndim == b.ndim == 1:
        if a.shape != b.shape or (a.dtype.kind in "US") != (b.dtype.kind in "US"):
            return False
        if a.dtype.kind != "O" and b.dtype.kind != "O":
            return bool(np.array_equal(a, b))
    try:
        return list(a) == list(b)
    except Exception:  # an array-valued comparison: not the same labels
        return False


class FrozenParamsMixin:
    """Validation of the estimator's parameters and their freezing after the first fitting call.

    Holds no state of its own: it reads the estimator's parameters, ``_fitted_params``
    (recorded by :meth:`_record_params`), ``_validated_params`` and the chain's prior.
    A privacy parameter (``epsilon``, ``mechanism``, ``kappa``) changed after fitting is
    never mixed into a running stream: every user of one stream faces the mechanism the
    stream was built with, so the stream's ``epsilon``-LDP guarantee is the recorded one.

    Copies: a copy (``copy.deepcopy``, pickle, hence ``copy.copy`` of a fitted estimator)
    of a stream whose generator came from the operating system (``random_state=None``)
    gets fresh OS entropy in :meth:`__setstate__`.  With the original's state it would
    privatise other users with the original's noise, and two simulation-mode fits on
    data sets that differ in one user would differ by that user's response alone.  A
    seeded stream (an int or a caller's generator) replays, as documented.
    """

    def __setstate__(self, state):
        if "categories" not in state and "n_categories" in state:  # a pickle from before ``categories`` (HLR F4)
            state = upgrade_state(state)
        super().__setstate__(state)
        rng = self.__dict__.get("_rng")
        if isinstance(rng, _OSSeededGenerator):  # the chain shares this object: reseed it in place
            rng.bit_generator.state = type(rng.bit_generator)().state

    def _check_params(self, categories=_UNSET):
        """What ``_parameter_constraints`` cannot say: exactly one of ``n_categories`` / ``categories`` gives
        the public domain; alpha is needed for 'semi_adaptive'; the empirical-Bayes and count decoders need
        a static mechanism.  ``categories``: the value this call read (a snapshot, review HLR F8)."""
        if categories is _UNSET:
            categories = getattr(self, "categories", None)
        check_domain(self.n_categories, categories)
        if self.utility == "semi_adaptive" and self.alpha is None:
            raise ValueError("alpha must be a float in (0, 1) when utility='semi_adaptive', got None.")
        decoder = getattr(self, "decoder", "auto")
        if decoder in ("eb", "eb-rescale", "eb-stack", "eb-gmodel", "counts", "importance") and self.mechanism == "rrrr":
            raise ValueError(f"decoder={decoder!r} needs a static mechanism (its responses' support counts are "
                             "binomial); mechanism='rrrr' uses decoder='posterior' (or 'auto').")
        self._check_decoder_size(vars(self).get("n_categories_", self._public_size(categories)))

    def _public_size(self, cats=_UNSET):
        """``K`` from the public domain (``n_categories`` or the labels of ``categories``), else None."""
        if cats is _UNSET:
            cats = getattr(self, "categories", None)
        if self.n_categories is not None or cats is None or isinstance(cats, str):
            return self.n_categories
        return len(check_categories(cats))

    def _check_decoder_size(self, K):
        """decoder="counts" / "importance" above COUNTS_MAX_CATEGORIES: refused when fitting (review HQV)."""
        decoder = getattr(self, "decoder", "auto")
        if decoder in ("counts", "importance") and K is not None and int(K) > COUNTS_MAX_CATEGORIES:
            raise ValueError(f"decoder={decoder!r} runs up to {COUNTS_MAX_CATEGORIES} categories (its chain costs "
                             f"O(K^2) per iteration), got {int(K)}: use decoder='eb' or 'posterior'.")

    def _check_frozen(self):
        """A fitted estimator continues only with the parameters it was built with.

        Validates the current parameters (a value set mid-stream, such as
        ``epsilon=-1``, raises the usual error), then compares those of
        ``FROZEN_PARAMS`` with the values recorded at the first fitting call.
        Validation is skipped when every parameter is still the very object that
        the last fitting call validated (it costs about 0.1 ms, as much as
        recording one response; a changed value is a new object).
        """
        if any(a is not b for a, b in zip(self._params_now(), self._validated_params)):
            self._validate_params()
            self._check_params()
        changed = first_changed_parameter(self, self._fitted_params, self._same_param)
        if changed is not None:
            name, old, new = changed
            # fit restarts the stream, but not the devices: once a client was handed out its parameters stay frozen
            restart = ("call fit to restart" if vars(self).get("_client_params") is None else
                       "start a new estimator (sklearn.base.clone) and hand out its client (a client was handed out)")
            raise ValueError(
                f"{name} was {old!r} when this {type(self).__name__} was fitted and is now {new!r} "
                f"(set_params or assignment after fitting). The recorded responses and the posterior "
                f"were built with {name}={old!r}: continuing with {new!r} would mix the two. "
                f"Set {name} back to {old!r}, or {restart}."
            )

    def _same_param(self, name, old, new):
        """Whether the frozen parameter ``name`` is unchanged: :func:`same_value`, except that
        two non-string priors are compared as vectors (``1.0`` and ``[1.0] * K`` are the same)."""
        if name == "prior" and not (isinstance(old, str) or isinstance(new, str)):
            return (new is old and np.ndim(new) == 0) or np.array_equal(
                self._chain.prior, self._prior_vector(self.n_categories_)
            )
        if name == "categories":
            return same_labels(old, new)
        return same_value(old, new)

    def _check_unfitted_params(self, what, categories=_UNSET):
        """Validate the parameters of an unfitted estimator; the domain must be public for ``what``."""
        if categories is _UNSET:
            categories = self.categories
        self._validate_params()
        self._check_params(categories)
        K = self._public_size(categories)
        if K is None:
            raise ValueError(f"n_categories or the labels of categories must be set {what}, got "
                             f"categories={categories!r}.")
        return int(K)

    def _prior_vector(self, K):
        """The Dirichlet concentration vector (``'hierarchical'``: ones, for the online SGLD chain of RRRR)."""
        if isinstance(self.prior, str):
            return np.ones(K)
        prior = np.asarray(self.prior, dtype=float)
        if prior.ndim == 0:
            prior = np.full(K, float(prior))
        if prior.shape != (K,):
            raise ValueError(f"prior must be a scalar or have shape ({K},), got shape {prior.shape}.")
        if not np.all(np.isfinite(prior)) or np.any(prior <= 0):
            raise ValueError(f"prior must hold finite values > 0, got {self.prior!r}.")
        return prior

    def _resolve_mechanism(self, K):
        """``(mechanism_, client)``: the resolved name and, for a static protocol, its client object."""
        name, eps = self.mechanism, float(self.epsilon)
        if name == "rrrr":
            return "rrrr", None
        if name == "oue":
            return "oue", SetResponseMechanism(K, eps, "oue")
        k = 1 if name == "grr" else best_subset_size(K, eps)
        return ("grr" if k == 1 else "subset_selection"), SetResponseMechanism(K, eps, "subset_selection", k)

    #: the parameters a handed-out client is built from (see ``_hand_out``)
    _CLIENT_PARAMS = ("n_categories", "categories", "epsilon", "mechanism", "kappa")

    def _hand_out(self, client):
        """A copy of the server's ``client`` for the devices; the first one handed out freezes
        :data:`_CLIENT_PARAMS` (``_check_handed_out``): responses privatised by a client are never
        recorded under other parameters, even when it was handed out before any data."""
        self._check_handed_out("client_mechanism")
        self._freeze_client_params()
        return copy.copy(client)

    def _freeze_client_params(self):
        """Record :data:`_CLIENT_PARAMS` at the first hand-out (a client, or proposed subsets: HLR F12)."""
        if "_client_params" not in vars(self):
            self._client_params = {name: _copy_labels(getattr(self, name)) for name in self._CLIENT_PARAMS}

    def _check_handed_out(self, call):
        """ValueError naming the first of :data:`_CLIENT_PARAMS` changed since a client was handed out."""
        handed = vars(self).get("_client_params")
        if handed is None:
            return
        for name, old in handed.items():
            new = getattr(self, name)
            if not (same_labels(old, new) if name == "categories" else same_value(old, new)):
                why = (f"a client handed out now would privatise with {name}={new!r}, and the server could not "
                       f"tell its responses from those of the first client (privatised with {name}={old!r})"
                       if call == "client_mechanism" else
                       f"{call} would record that client's responses (privatised with {name}={old!r}) under {new!r}")
                raise ValueError(
                    f"{name} was {old!r} when client_mechanism() handed out a client (or propose_subsets() "
                    f"proposed subsets) and is now {new!r}: {why}. "
                    f"Set {name} back to {old!r}, or start a new estimator (sklearn.base.clone) and hand out its "
                    "client."
                )

    def _check_adaptive(self, client):
        if client is not None:
            raise ValueError(
                f"mechanism={self.mechanism!r} is a static protocol ({client!r}): there is no subset to propose. "
                "Users privatise with client_mechanism().privatize; use mechanism='rrrr' for the adaptive "
                "RRRR mechanism."
            )

    def _params_now(self):
        return tuple(self.__dict__.get(name) for name in PARAM_NAMES)

    def _record_params(self, categories=_UNSET):
        """The frozen parameters' values now (an array ``prior`` copied: the user's list may change);
        ``categories``: the snapshot the fitting call read (review HLR F8)."""
        recorded = record_parameters(self, FROZEN_PARAMS)
        if not isinstance(self.prior, str) and np.ndim(self.prior) > 0:
            recorded["prior"] = np.array(self.prior, dtype=float)
        recorded["categories"] = _copy_labels(recorded["categories"] if categories is _UNSET else categories)
        return recorded


def upgrade_state(state):
    """The state of a pickle made before the parameter ``categories`` (af3c366, review HLR F4), completed: the
    domain such an estimator had is ``'from_data'`` when ``n_categories`` was None and it was fitted (the labels
    were inferred from ``X``), else None (``n_categories`` gave it)."""
    state = dict(state)
    inferred = state.get("n_categories") is None and "categories_" in state
    state["categories"] = "from_data" if inferred else None
    for key in ("_fitted_params", "_client_params"):
        if isinstance(state.get(key), dict) and "categories" not in state[key]:
            state[key] = dict(state[key], categories=state["categories"])
    if isinstance(state.get("_validated_params"), tuple) and len(state["_validated_params"]) != len(PARAM_NAMES):
        state["_validated_params"] = (_UNSET,) * len(PARAM_NAMES)  # validate again at the next call
    return state
