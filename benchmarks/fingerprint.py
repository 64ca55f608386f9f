"""Seeded fingerprints of every public estimator, to check that a refactor changes no output.

Run it before and after a change of layout and compare::

    python benchmarks/fingerprint.py --out before.json
    ... (the refactor) ...
    python benchmarks/fingerprint.py --out after.json --compare before.json

Each row is one seeded output (predictions, coefficients, ``theta_``, query answers, ledgers,
credible intervals, serialized sketch bytes, the demo's CSV) reduced to a SHA-256 of its exact
bytes, so "equal" means bit-identical.  Only the public API is used, so the script runs on any
layout.  It takes about a minute.
"""

import argparse
import hashlib
import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np


def _digest(value):
    """SHA-256 of a value's exact bytes (arrays by dtype, shape and buffer)."""
    h = hashlib.sha256()

    def feed(v):
        if isinstance(v, np.ndarray):
            h.update(str((v.dtype.str, v.shape)).encode())
            h.update(np.ascontiguousarray(v).tobytes())
        elif isinstance(v, (list, tuple)):
            h.update(b"[")
            for x in v:
                feed(x)
            h.update(b"]")
        elif isinstance(v, dict):
            for k in sorted(v):
                h.update(repr(k).encode())
                feed(v[k])
        elif isinstance(v, (bytes, bytearray)):
            h.update(bytes(v))
        elif isinstance(v, (float, np.floating)):
            h.update(np.float64(v).tobytes())
        else:
            h.update(repr(v).encode())

    feed(value)
    return h.hexdigest()[:20]


def _regression(n=300, p=4, seed=0, heavy=False):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, size=(n, p))
    noise = rng.standard_t(2, size=n) if heavy else rng.standard_normal(n)
    y = X @ np.linspace(1, -1, p) + 0.3 * noise
    return X, y


def _ledger_rows(ledger):
    """The ledger's records without their random ids (record, stream and fork ids are uuids)."""
    return [{k: v for k, v in r.items() if k not in ("id", "stream", "fork")} for r in ledger.records]


def fingerprints():
    """Return ``{name: digest}`` over every public estimator at fixed seeds."""
    import sklearn_bayes as sb
    from sklearn_bayes.datasets import make_zipf_stream
    from sklearn_bayes.privacy import PrivacyLedger

    rows = {}
    X, y = _regression()
    Xt, _ = _regression(seed=1)
    labels = (X @ [1.0, -1.0, 0.5, 0.0] > 0).astype(int)
    counts = np.random.default_rng(2).poisson(np.exp(0.3 * X[:, 0]))

    for name, est, target in [
        ("SubsampledPriorRidge", sb.SubsampledPriorRidge(random_state=0), y),
        ("SubsampledPriorRidge(diag)", sb.SubsampledPriorRidge(covariance="diag", random_state=0), y),
        ("SubsampledPriorLogisticRegression", sb.SubsampledPriorLogisticRegression(random_state=0), labels),
        ("SubsampledPriorLinearSVC", sb.SubsampledPriorLinearSVC(random_state=0), labels),
        ("SubsampledPriorPoissonRegressor", sb.SubsampledPriorPoissonRegressor(random_state=0), counts),
        ("ClosedFormRidge", sb.ClosedFormRidge(), y),
    ]:
        est.fit(X, target)
        rows[name] = _digest([est.coef_, est.intercept_, est.predict(Xt)])

    Xh, yh = _regression(n=120, p=3, heavy=True)
    for variant in ("default", "paper"):
        kw = {} if variant == "default" else {"variant": "paper"}
        est = sb.MixtureMEstimatorRegressor(random_state=0, **kw).fit(Xh, yh)
        rows[f"MixtureMEstimatorRegressor({variant})"] = _digest(
            [est.coef_, est.intercept_, est.mixture_weights_, est.flag_outliers(Xh, yh)])

    stream = make_zipf_stream(20_000, n_values=500, random_state=0)
    sketch = sb.PrivateCountSketch(epsilon=1.0, depth=3, width=256, random_state=0, ledger=PrivacyLedger())
    answers = []
    for chunk in np.array_split(stream, 4):
        sketch.partial_fit(chunk)
        answers.append(sketch.query([1, 2, 3, 77]))
    rows["PrivateCountSketch"] = _digest([answers, sketch.epsilon_spent_, sketch.n_query_sets_,
                                          _ledger_rows(sketch.ledger)])
    loaded = sb.PrivateCountSketch.from_bytes(sketch.to_bytes(), random_state=5, ledger=sketch.ledger)  # bytes hold uuids
    rows["PrivateCountSketch.bytes"] = _digest([loaded.table_, loaded.query([1, 2, 3, 77]), loaded.n_query_sets_])
    for mech in _sketch_mechanisms(sb.PrivateCountSketch):
        sk = sb.PrivateCountSketch(epsilon=2.0, depth=3, width=128, mechanism=mech, random_state=1)
        sk.fit(stream[:5000])
        rows[f"PrivateCountSketch({mech})"] = _digest([sk.query([1, 5, 9]), sk.query([2]), sk.epsilon_spent_])

    cats = np.random.default_rng(3).choice(8, size=3000, p=[.3, .2, .15, .1, .1, .08, .05, .02]).reshape(-1, 1)
    ldp = sb.AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0, random_state=0).fit(cats)
    rows["AdaptiveLDPFrequencyEstimator"] = _digest([ldp.theta_, ldp.credible_interval(0.9)])
    for mech in ("grr", "oue", "rrrr"):
        kw = {"prior": 1.0} if mech == "rrrr" else {}
        e = sb.AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0, mechanism=mech, random_state=0, **kw)
        e.fit(cats[:800])
        rows[f"AdaptiveLDPFrequencyEstimator({mech})"] = _digest([e.theta_])
    server = sb.AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0, random_state=0)
    responses = server.client_mechanism().privatize(cats[:500, 0], random_state=1)
    server.partial_fit_responses(responses[:250])
    server.partial_fit_responses(responses[250:], update="defer")
    rows["AdaptiveLDPFrequencyEstimator.responses"] = _digest([responses, server.theta_])
    paper = sb.AdaptiveLDPFrequencyEstimator(n_categories=8, epsilon=1.0, mechanism="rrrr", prior=1.0, random_state=0)
    device = sb.RRRRMechanism(8, epsilon=1.0, kappa=paper.kappa)
    for i, x in enumerate(cats[:60, 0]):
        S = paper.propose_subset()
        paper.partial_fit_responses([device.privatize(x, S, random_state=i)], [S])
    rows["AdaptiveLDPFrequencyEstimator(rrrr).online"] = _digest([paper.theta_])
    rrrr = sb.RRRRMechanism(8, epsilon=1.0)
    rows["RRRRMechanism"] = _digest([rrrr.privatize(list(range(8)), [0, 1, 2], random_state=0)])

    Xp, yp = _regression(n=2000, p=3, seed=4)
    for name, est in [
        ("OnePosteriorSampleRidge", sb.OnePosteriorSampleRidge(epsilon=1.0, x_bound=1.0, y_bound=3.0, random_state=0)),
        ("AdaOPSRegressor", sb.AdaOPSRegressor(epsilon=1.0, delta=1e-6, x_bound=2.0, y_bound=3.0, random_state=0)),
        ("AdaOPSRegressor(released_norm)", sb.AdaOPSRegressor(epsilon=1.0, delta=1e-6, x_bound=2.0, y_bound=3.0,
                                                               calibration="released_norm", random_state=0)),
        ("AdaOPSRegressor(thesis)", sb.AdaOPSRegressor(epsilon=1.0, delta=1e-6, x_bound=2.0, y_bound=3.0,
                                                        calibration="thesis", random_state=0)),
    ]:
        est.fit(Xp, yp)
        rows[name] = _digest([est.coef_, est.predict(Xt[:, :3]), est.epsilon_spent_, est.delta_spent_])
    lab = (Xp @ [1.5, -1.0, 0.5] > 0).astype(int)
    clf = sb.DPSGLDLogisticRegression(epsilon=1.0, x_bound=2.0, n_iter=200, random_state=0).fit(Xp, lab)
    rows["DPSGLDLogisticRegression"] = _digest([clf.coef_, clf.predict_proba(Xt[:, :3]), clf.epsilon_spent_])
    rows["RowNormClipper"] = _digest(sb.RowNormClipper(max_norm=1.0).fit(Xp).transform(3 * Xp))
    return rows


def _sketch_mechanisms(cls):
    from sklearn.utils._param_validation import StrOptions

    for c in cls._parameter_constraints.get("mechanism", []):
        if isinstance(c, StrOptions):
            return sorted(c.options)
    return []


def demo_fingerprint():
    """Digest of the demo's CSV (every part) without its timings, run in a temporary folder.

    The ``fit_time_s`` column and the time ratios quoted in notes ("CV/method time 30.7x")
    are measurements of the machine, not outputs of the estimators.
    """
    import csv
    import re

    from sklearn_bayes._cli import main

    with tempfile.TemporaryDirectory() as tmp:
        main(["demo", "--output", tmp, "--quiet"])
        with open(Path(tmp, "demo_results.csv"), newline="") as fh:
            rows = [{k: re.sub(r"time [0-9.]+x", "time (t)x", v) for k, v in r.items() if k != "fit_time_s"}
                    for r in csv.DictReader(fh)]
    return {"demo_results.csv (without fit_time_s)": _digest(rows)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="write the table as JSON here")
    parser.add_argument("--compare", help="a JSON table written before: print the rows that differ")
    parser.add_argument("--no-demo", action="store_true", help="skip the demo (about a minute)")
    args = parser.parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = fingerprints()
        if not args.no_demo:
            rows.update(demo_fingerprint())
    width = max(map(len, rows))
    old = json.loads(Path(args.compare).read_text()) if args.compare else {}
    for k, v in rows.items():
        mark = "" if not old else ("equal" if old.get(k) == v else f"DIFFERENT (was {old.get(k)})")
        print(f"{k:<{width}}  {v}  {mark}")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))
    if old:
        keys = set(rows) if args.no_demo else set(old) | set(rows)
        differ = sorted(k for k in keys if old.get(k) != rows.get(k))
        print(f"\n{len(keys) - len(differ)} of {len(keys)} fingerprints equal" + (f"; differ: {differ}" if differ else ""))
        return 1 if differ else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
