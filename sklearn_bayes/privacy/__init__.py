"""Differential privacy: noise, accounting, private sketches and local-DP frequency estimation."""

from ._count_sketch import PrivateCountSketch

__all__ = ["PrivateCountSketch"]
