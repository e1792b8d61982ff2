"""Multi-label tag recommendation with SISOKR on the Bibtex sample shipped with sprokr.

Shows: components by name, input and output sketches, top-k decoding, a reusable
candidate index, and a grid search with a per-sample F1 scorer.

    python examples/multilabel_bibtex.py
"""
import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn.preprocessing import StandardScaler

from sprokr import SISOKR
from sprokr.datasets import load_bibtex_sample
from sprokr.metrics import f1_samples, f1_samples_scorer

X_train, Y_train, X_test, Y_test = load_bibtex_sample()
scaler = StandardScaler(with_mean=False).fit(X_train)  # keeps the sparse inputs sparse
X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
n = X_train.shape[0]

model = SISOKR(
    input_kernel="gaussian", input_kernel_params={"sigma2": 1e4},
    output_kernel="gaussian", output_kernel_params={"sigma2": 1e4},
    input_sketch="subsample", m_x=400,
    output_sketch="psg", m_y=100, output_sketch_params={"p": 20.0 / n},
    lam=1e-4, random_state=0,
).fit(X_train, Y_train)
print(f"SISOKR F1 on the test sample: {f1_samples(Y_test, model.predict(X_test)):.3f}")

# top-5 candidate label sets for the first document, best first
top = model.predict_topk(X_test[:1], k=5)
for rank, (i, s) in enumerate(zip(top.indices[0], top.scores[0]), 1):
    labels = np.flatnonzero(model.default_index_.candidates[i])
    print(f"  {rank}. score {s:.5f}  labels {labels.tolist()}")

# a candidate set embedded once, reused for every later query
candidates = np.unique(np.vstack([Y_train, Y_test]), axis=0)
index = model.make_candidate_index(candidates)
print(f"F1 with train+test label sets as candidates: {f1_samples(Y_test, model.predict(X_test, candidates=index)):.3f}")

# hyper-parameter search with the per-sample F1
search = GridSearchCV(model, {"lam": [1e-5, 1e-4, 1e-3]}, scoring=f1_samples_scorer(), cv=3)
search.fit(X_train, Y_train)
print(f"best lam {search.best_params_['lam']:g}  (CV F1 {search.best_score_:.3f})")
