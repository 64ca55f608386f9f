"""Inputs a scikit-learn user may pass to the sketch (task HQH): errors name the argument, never an item."""

import pytest

from sklearn_bayes.privacy import PrivateCountSketch


@pytest.mark.parametrize("container", [set, frozenset, lambda v: dict.fromkeys(v)])
def test_sets_and_dicts_are_refused_as_containers_not_called_scalars(container):
    """``query({"secret", "x"})`` said "got a scalar" (numpy reads a set as one object); now a TypeError
    naming items and the container type, with no item in the message."""
    sk = PrivateCountSketch(width=32).fit(["secret", "x"])
    with pytest.raises(TypeError, match="items must be an array-like") as exc:
        sk.query(container(["secret", "x"]))
    assert "secret" not in str(exc.value) and sk.n_query_sets_ == 0
    with pytest.raises(TypeError, match="X must be an array-like"):
        PrivateCountSketch(width=32).fit(container(["secret"]))
