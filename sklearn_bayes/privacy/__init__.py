"""Differential privacy: noise, accounting, private sketches and local-DP frequency estimation."""

__all__ = []
