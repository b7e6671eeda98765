"""Fit a logistic regression on scikit-learn's breast-cancer data and check its certificate.

Run: python examples/quickstart.py
"""

import numpy as np
from sklearn.datasets import load_breast_cancer

import daskdca

X, y = load_breast_cancer(return_X_y=True)
X = (X - X.mean(axis=0)) / X.std(axis=0)  # explicit preprocessing: daskdca does none

model = daskdca.fit(X, y, loss="logistic", lam=1e-3, tol=1e-8, verbose=1)
print(model)

# The certificate: P(w) - D(alpha) >= P(w) - min P, with w rebuilt from alpha.
n = X.shape[0]
w = X.T @ model.dual_coef_ / (model.lam * n)
assert np.allclose(w, model.coef_)
print(f"P(coef_) - min P <= gap = {model.gap_:.2e} (relative {model.gap_ / model.primal_:.2e})")
print(f"training accuracy: {np.mean(model.predict(X) == y):.4f}")
