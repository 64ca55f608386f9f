"""Exact (enumerated) information for K = 10, eps = 5: SS(2), SS(3), OUE vs GRR (the delta method is not trusted there)."""
import sys; sys.path.insert(0, __import__("os").path.dirname(__import__("os").path.abspath(__file__)))
from common import *
from sklearn_bayes.privacy._ldp._adaptive_rule import fisher_information_exact, tangent_covariance, expected_tv
for rho in (1.0, 0.1):
    s = setting(10, 5.0, rho); n = s["T"]; L = []
    for run in range(20):
        _, theta = simulate_users(s, run); th = np.maximum(theta, 1e-300); th /= th.sum()
        g = expected_tv(th, tangent_covariance(fisher_information_exact(th, 5.0, "subset_selection", 1)), n)
        L.append([np.log(expected_tv(th, tangent_covariance(fisher_information_exact(th, 5.0, *c)), n) / g)
                  for c in (("subset_selection", 2), ("subset_selection", 3), ("oue", None))])
    L = np.array(L); m = np.exp(L.mean(0)); print(f"K=10 eps=5 rho={rho}: exact predicted TV / GRR: SS(2) {m[0]:.3f}, SS(3) {m[1]:.3f}, OUE {m[2]:.3f}; min over runs SS(2) {np.exp(L[:,0].min()):.3f}")
