"""Compiled Cython kernels (typed memoryviews, nogil). Private: use the estimators instead."""
