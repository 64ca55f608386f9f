"""Leverages ``x_i^T H^-1 x_i`` of every row of a tall design, in row blocks that stay in cache.

The approximate leave-one-out step of the GLMs (``linear_model._subsampled_prior._tuning.alo_risk``)
needs, at each candidate prior, ``J_i = x~_i^T H^-1 x~_i`` (``x~_i = (x_i, 1)`` with an intercept)
and, for a cross-fitted prior mean, ``s_i = x~_i^T H^-1 (P D_i, 0)``.  Formed as ``Z = X~ H^-1``
followed by row sums, that is three passes over ``N x d`` arrays in memory (the design with its
column of ones, ``Z``, the shifts); here ``X`` is read once, block by block, and the intercept is
handled in closed form: with ``H^-1 = [[A, b], [b^T, c]]`` (the intercept last),
``x~_i^T H^-1 = (x_i^T A + b^T, x_i^T b + c)``, so

.. math::

    J_i = (x_i^T A + b^T) x_i + x_i^T b + c, \\qquad s_i = (x_i^T A + b^T) (P D_i).
"""

import numpy as np

#: rows per block (a block of a 100-column design is about 3 MB)
_BLOCK_ROWS = 4096


def leverages(X, Hinv, fit_intercept, shifts=None, scale=1.0):
    """``(J, s)``: ``J_i = x~_i^T Hinv x~_i`` and ``s_i = scale * x~_i^T Hinv (S_i, 0)`` for the rows
    ``S_i`` of ``shifts`` (None: ``s`` is None).  ``Hinv`` has side ``d + 1`` with an intercept (its
    last row and column), else ``d``.  Mathematically the row sums of ``(X~ Hinv) * X~``; the same
    up to the order of the floating-point sums."""
    N, d = X.shape
    A = Hinv[:d, :d]
    J = np.empty(N)
    s = None if shifts is None else np.empty(N)
    if fit_intercept:
        b, c = Hinv[:d, d], float(Hinv[d, d])
    for lo in range(0, N, _BLOCK_ROWS):
        Xb = X[lo:lo + _BLOCK_ROWS]
        Z = Xb @ A
        if fit_intercept:
            Z += b
            J[lo:lo + _BLOCK_ROWS] = np.einsum("ij,ij->i", Z, Xb) + Xb @ b + c
        else:
            J[lo:lo + _BLOCK_ROWS] = np.einsum("ij,ij->i", Z, Xb)
        if s is not None:
            s[lo:lo + _BLOCK_ROWS] = np.einsum("ij,ij->i", Z, shifts[lo:lo + _BLOCK_ROWS])
    if s is not None and scale != 1.0:
        s *= scale
    return J, s
