"""Synthetic item streams for the frequency sketches."""

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["make_zipf_stream"]


def _h_integral(x, s):
    """∫ x^{-s}: ``(x^{1-s} - 1)/(1-s)``, computed stably (``ln x`` at ``s = 1``)."""
    log_x = np.log(x)
    t = (1.0 - s) * log_x
    helper = np.where(np.abs(t) > 1e-8, np.expm1(t) / np.where(t == 0, 1.0, t), 1.0 + t / 2.0)
    return helper * log_x


def _h_integral_inverse(x, s):
    t = np.maximum(x * (1.0 - s), -1.0)
    helper = np.where(np.abs(t) > 1e-8, np.log1p(t) / np.where(t == 0, 1.0, t), 1.0 - t / 2.0)
    return np.exp(helper * x)


def make_zipf_stream(n_samples, alpha=1.0, n_values=2**29, random_state=None, dtype=np.int64):
    """A stream of i.i.d. draws from the Zipf distribution on ``{1, ..., n_values}``.

    ``P(X = k) ∝ k^{-alpha}``, exactly (any ``alpha >= 0``, including the paper's
    ``alpha = 1``, which NumPy's unbounded ``zipf`` sampler does not support), by the
    rejection-inversion method of Hörmann and Derflinger (*Rejection-inversion to
    generate variates from monotone discrete distributions*, 1996), vectorised.  Item
    ``k`` is the ``k``-th most probable one.  This is the stream of Section 4.6 of
    *Differentially Private Frequency Sketches for Intermittent Queries on Large Data
    Streams* (``2^27`` draws, ``alpha = 1``, ``n_values = 2^29``).

    Parameters
    ----------
    n_samples : int
        Stream length.
    alpha : float, default=1.0
        Exponent ``>= 0``.
    n_values : int, default=2**29
        Size of the domain.
    random_state : None, int or numpy.random.Generator / RandomState, default=None
    dtype : numpy integer dtype, default=np.int64
        ``np.int32`` halves the memory of long streams (``n_values < 2^31``).

    Returns
    -------
    stream : ndarray of shape (n_samples,)

    Examples
    --------
    >>> from sklearn_bayes.datasets import make_zipf_stream
    >>> x = make_zipf_stream(100_000, alpha=1.0, n_values=1000, random_state=0)
    >>> int(x.min()) >= 1, int(x.max()) <= 1000
    (True, True)
    >>> # P(1) / P(2) = 2 for alpha = 1
    >>> bool(1.8 < (x == 1).sum() / (x == 2).sum() < 2.2)
    True
    """
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 0:
        raise ValueError(f"n_samples must be an int >= 0, got {n_samples!r}.")
    if isinstance(n_values, bool) or not isinstance(n_values, (int, np.integer)) or n_values < 1:
        raise ValueError(f"n_values must be an int >= 1, got {n_values!r}.")
    if not np.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be finite and >= 0, got {alpha!r}.")
    if isinstance(random_state, np.random.Generator):
        rng = random_state
    else:
        rng = np.random.default_rng(check_random_state(random_state).randint(0, 2**31 - 1))
    s = float(alpha)
    n_values = int(n_values)
    h_x1 = _h_integral(1.5, s) - 1.0
    h_n = _h_integral(n_values + 0.5, s)
    squeeze = 2.0 - _h_integral_inverse(_h_integral(2.5, s) - 2.0 ** (-s), s)
    out = np.empty(int(n_samples), dtype=dtype)
    chunk = 1 << 22
    for start in range(0, out.shape[0], chunk):
        todo = np.arange(start, min(start + chunk, out.shape[0]))
        while todo.size:
            u = h_n + rng.random(todo.size) * (h_x1 - h_n)
            x = np.exp(u) if s == 1.0 else _h_integral_inverse(u, s)
            k = np.clip(np.floor(x + 0.5), 1, n_values)
            accept = k - x <= squeeze
            rest = ~accept  # the exact test, only where the cheap squeeze fails
            kr, ur = k[rest], u[rest]
            if s == 1.0:
                accept[rest] = ur >= np.log(kr + 0.5) - 1.0 / kr
            else:
                accept[rest] = ur >= _h_integral(kr + 0.5, s) - np.exp(-s * np.log(kr))
            out[todo[accept]] = k[accept].astype(dtype)
            todo = todo[~accept]
    return out
