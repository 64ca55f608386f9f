"""Round 9 of issue 29 (``bench_subsampled_prior.py --study predictive``): the logistic regression's
Laplace-moderated predictive (``predictive='moderated'``) against the MAP plug-in (``'map'``).

Per split: ``LogisticRegressionCV(Cs=20, cv=10, scoring='neg_log_loss')`` and the default
``SubsampledPriorLogisticRegression(random_state=split)``, each in a ``StandardScaler`` pipeline,
fitted once; the default's test log-loss with ``predictive='map'`` and, by ``set_params`` on the
same fitted estimator (``predictive`` does not enter the fit), with ``'moderated'`` -- exactly
paired.  Printed per cell: the peer's mean test log-loss, the ratios of the two predictives' mean
losses to it (± paired SE, delta method), the paired difference moderated - map relative to the
peer's mean loss (± SE), the share of test rows where the moderated probabilities' argmax differs
from ``predict`` (only possible with more than two classes), and the time of ``predict_proba``
with ``'moderated'`` over ``'map'`` on the test rows (median over the splits).

The cells were fixed before measuring (the brief of round 9): dev synthetic p/n = 0.3 and 0.7,
breast cancer, digits 3-vs-8, biopsy, Pima; held-out (run once, after the decision on dev) wine
(three classes, the multinomial model; a logistic cell new in this round), HMDA, spam7, crabs,
synthetic p/n = 1.5.  The rule, fixed before measuring: 'moderated' becomes the default only if
its mean paired difference over the dev cells is negative and no cell, dev or held-out, has a
difference above +1 SE.
"""

import time

import numpy as np
from sklearn.base import clone
from sklearn.datasets import load_wine
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

#: round 9's split of the cells (substrings of the benchmark's logistic cell names)
PREDICTIVE_DEV = ["synthetic p/n=0.3", "synthetic p/n=0.7", "breast_cancer", "digits", "biopsy", "Pima"]
PREDICTIVE_HELD_OUT = ["wine", "HMDA", "spam7", "crabs", "synthetic p/n=1.5"]
#: the multinomial held-out cell (the SVM's wine cell, as a logistic cell)
WINE_CELL = ("logistic", "wine n60 (3 classes)", lambda s: load_wine(return_X_y=True), 60, False)


def _cells(bench, names):
    cells = [c for c in bench.CELLS if c[0] == "logistic"] + [WINE_CELL]
    for t, name, loader, n_train, _ in cells:
        if any(c.lower() in name.lower() for c in names):
            yield name, loader, n_train, any(c.lower() in name.lower() for c in PREDICTIVE_DEV)


def study_predictive(bench, cells, n_splits):
    """Prints the table of round 9 (see the module docstring); returns the per-cell rows."""
    from sklearn.metrics import log_loss

    from sklearn_bayes import SubsampledPriorLogisticRegression

    rows = []
    for name, loader, n_train, dev in _cells(bench, cells):
        peer, lm, lmod, changed, tr_ratio = [], [], [], [], []
        for s in range(n_splits):
            X, y = loader(s)
            tr, te = (np.arange(n_train), np.arange(n_train, len(y))) if name.startswith("synthetic") \
                else bench.split(X, y, n_train, s, "logistic")
            p = make_pipeline(StandardScaler(), clone(bench.peers("logistic")["LogisticRegressionCV"]))
            peer.append(bench.test_loss("logistic", p.fit(X[tr], y[tr]), X[te], y[te]))
            model = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=s))
            model.fit(X[tr], y[tr])
            est = model[-1]
            t0 = time.perf_counter()
            pm = model.predict_proba(X[te])
            t_map = time.perf_counter() - t0
            pred = model.predict(X[te])
            est.set_params(predictive="moderated")
            t0 = time.perf_counter()
            pmod = model.predict_proba(X[te])
            t_mod = time.perf_counter() - t0
            assert np.array_equal(model.predict(X[te]), pred)
            lm.append(log_loss(y[te], pm, labels=est.classes_))
            lmod.append(log_loss(y[te], pmod, labels=est.classes_))
            changed.append(np.mean(est.classes_[pmod.argmax(1)] != pred))
            tr_ratio.append(t_mod / t_map)
        peer, lm, lmod = map(np.array, (peer, lm, lmod))
        d = (lmod - lm) / peer.mean()
        row = dict(cell=name, half="dev" if dev else "held-out", peer=peer.mean(), map=bench._ratio(lm, peer),
                   moderated=bench._ratio(lmod, peer), diff=(d.mean(), d.std(ddof=1) / np.sqrt(d.size)),
                   changed=float(np.mean(changed)), time=float(np.median(tr_ratio)))
        rows.append(row)
        print(f"  done {name}", flush=True)
    print(f"\nlogistic: the Laplace-moderated predictive against the MAP plug-in, {n_splits} paired splits; ratio = "
          f"mean test log-loss / LogisticRegressionCV's (± paired SE); diff = (moderated - map) / peer's mean "
          f"loss (± SE)\n")
    head = (f"{'cell':34s} {'half':8s} {'peer':>7s} {'map ratio':>14s} {'moderated ratio':>16s} "
            f"{'diff':>18s} {'argmax moved':>12s} {'t_mod/t_map':>11s}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['cell']:34s} {r['half']:8s} {r['peer']:7.4f} {r['map'][0]:7.3f} ± {r['map'][1]:.3f} "
              f"{r['moderated'][0]:9.3f} ± {r['moderated'][1]:.3f} {r['diff'][0]:+9.4f} ± {r['diff'][1]:.4f} "
              f"{r['changed']:12.4f} {r['time']:11.1f}")
    for half in ("dev", "held-out"):
        sel = [r for r in rows if r["half"] == half]
        if sel:
            worse = [r["cell"] for r in sel if r["diff"][0] > r["diff"][1]]
            print(f"{half}: mean diff {np.mean([r['diff'][0] for r in sel]):+.4f}; worse by more than 1 SE: "
                  f"{', '.join(worse) if worse else 'none'}")
    return rows


def study_predictive_why(bench, cells, n_splits, draws=20000):
    """Where does the moderated predictive lose: the probit approximation, the Laplace Gaussian, or
    the posterior itself?  Per split, the default's fit (binary cells): the test log-loss of the MAP
    plug-in, of the probit approximation (``predictive='moderated'``), of the exact expectation of
    the sigmoid over the Laplace Gaussian (Monte Carlo, ``draws`` draws), and of the posterior
    predictive of the same model (likelihood times the fitted prior ``N(prior_mean_,
    prior_precision_^-1)``, flat intercept) by importance sampling from a multivariate t (4 degrees
    of freedom) at the MAP with the Laplace covariance as its scale; and the effective sample size.
    Prints the means over the splits, relative to the peer's mean loss."""
    from scipy import special, stats
    from sklearn.metrics import log_loss

    from sklearn_bayes import SubsampledPriorLogisticRegression

    multiclass_accuracy()
    rng = np.random.default_rng(0)
    print(f"\nwhy the moderated predictive loses ({n_splits} splits, {draws} draws; mean test log-loss / "
          f"LogisticRegressionCV's; ESS: median effective sample size of the importance sampling)\n")
    head = (f"{'cell':34s} {'MAP':>7s} {'probit':>7s} {'Laplace MC':>10s} {'posterior IS':>12s} {'ESS':>7s} "
            f"{'log10 scale':>11s}")
    print(head)
    print("-" * len(head))
    for name, loader, n_train, dev in _cells(bench, cells):
        L, ess, scale = [], [], []
        for s in range(n_splits):
            X, y = loader(s)
            tr, te = (np.arange(n_train), np.arange(n_train, len(y))) if name.startswith("synthetic") \
                else bench.split(X, y, n_train, s, "logistic")
            p = make_pipeline(StandardScaler(), clone(bench.peers("logistic")["LogisticRegressionCV"]))
            peer = bench.test_loss("logistic", p.fit(X[tr], y[tr]), X[te], y[te])
            model = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=s))
            model.fit(X[tr], y[tr])
            est = model[-1]
            Xs, Xt, yt = model[0].transform(X[tr]), model[0].transform(X[te]), y[tr].astype(float)
            k = Xs.shape[1]
            th = np.append(est.coef_.ravel(), est.intercept_[0])
            C = est._theta_covariance
            C = 0.5 * (C + C.T)
            pm = model.predict_proba(X[te])[:, 1]
            est.set_params(predictive="moderated")
            pmod = model.predict_proba(X[te])[:, 1]
            G = rng.multivariate_normal(th, C, size=draws, method="cholesky")
            p_mc = special.expit(G[:, :k] @ Xt.T + G[:, k:]).mean(0)
            prop = stats.multivariate_t(loc=th, shape=C, df=4, seed=rng)
            Z = prop.rvs(size=draws)
            E = Z[:, :k] @ Xs.T + Z[:, k:]
            dev_ = Z[:, :k] - est.prior_mean_
            lw = (-np.sum(np.logaddexp(0, E) - yt * E, axis=1)
                  - 0.5 * np.einsum("ij,jk,ik->i", dev_, est.prior_precision_, dev_) - prop.logpdf(Z))
            w = np.exp(lw - lw.max())
            w /= w.sum()
            p_is = w @ special.expit(Z[:, :k] @ Xt.T + Z[:, k:])
            ess.append(1.0 / np.sum(w ** 2))
            scale.append(np.log10(est.prior_choice_["scale"]))
            L.append([log_loss(y[te], np.column_stack([1 - q, q]), labels=[0, 1]) / peer
                      for q in (pm, pmod, p_mc, p_is)] + [peer])
        L = np.array(L)
        r = L[:, :4].T @ L[:, 4] / L[:, 4].sum()  # ratios of mean losses
        print(f"{name:34s} {r[0]:7.3f} {r[1]:7.3f} {r[2]:10.3f} {r[3]:12.3f} {np.median(ess):7.0f} "
              f"{np.median(scale):11.2f}", flush=True)


def multiclass_accuracy(n=200, draws=20000, seed=0):
    """The multinomial approximation against a Monte Carlo of the softmax over the Gaussian scores
    (``draws`` draws; its own error about 0.003 at most): random problems, ``K`` = 3 and 5 classes,
    scores ``N(0, 2^2)``, covariances ``A A^T`` scaled to a score sd of about 0.3, 1 and 3.  Prints
    the mean and the largest absolute error of the probabilities: the pairwise formula
    (``predictive='moderated'``), each score moderated against the reference class alone, the MAP's
    softmax."""
    from scipy.special import softmax

    from sklearn_bayes.linear_model._subsampled_prior._predictive import moderated_log_proba

    rng = np.random.default_rng(seed)
    print("\nmultinomial: |approximation - Monte Carlo| of the probabilities, mean / max")
    print(f"{'K':>3s} {'score sd':>8s} {'pairwise (ours)':>16s} {'per class vs ref.':>18s} {'MAP softmax':>14s}")
    for K in (3, 5):
        for sd in (0.3, 1.0, 3.0):
            mu = rng.normal(scale=2.0, size=(n, K))
            mu[:, 0] = 0.0
            A = rng.normal(size=(n, K - 1, K - 1))
            V = A @ A.transpose(0, 2, 1) * sd ** 2 / (K - 1)
            a = mu[:, None, 1:] + np.einsum("nkl,sl->nsk", np.linalg.cholesky(V), rng.standard_normal((draws, K - 1)))
            p_mc = softmax(np.concatenate([np.zeros(a.shape[:2] + (1,)), a], axis=2), axis=2).mean(axis=1)
            var = np.column_stack([np.zeros(n), np.diagonal(V, axis1=1, axis2=2)])
            rows = [np.exp(moderated_log_proba(mu, V)), softmax(mu / np.sqrt(1 + np.pi * var / 8), axis=1),
                    softmax(mu, axis=1)]
            print(f"{K:3d} {sd:8.1f} " + " ".join(f"{np.abs(q - p_mc).mean():7.4f} / {np.abs(q - p_mc).max():.3f}".rjust(w)
                                                   for q, w in zip(rows, (16, 18, 14))))
