"""Linear models: subsampled-prior GLMs, closed-form ridge and robust mixtures of M-estimators."""

__all__ = []
