"""The papers' route for IOKR and SISOKR, timed in the same run as sprokr (a baseline).

The SISOKR paper's formulas evaluated the way its authors' public code evaluates them
(https://github.com/tamim-el/sisokr, ``Methods/SketchedIOKR.py``; read, not copied):
dense standardised inputs copied on entry, scikit-learn's ``rbf_kernel``, float64
throughout, the sketches' scale factors applied to the kernel blocks, the plain normal
equations of the sketched ridge formed by a GEMM and inverted explicitly, with the code's
jitter ``mu_in = 1e-8`` on the input side:

    IOKR:    M = (K + n lam I)^-1                                    scores = K_te,X M K_y(Y, Yc)
    SISOKR:  Omega = (A^T A + n lam K~ + mu I)^-1 A^T,  A = K R_in^T,  K~ = R_in A
             M = Omega (K_y R_out^T) (R_out K_y R_out^T)^-1           scores = K_te,X R_in^T M (R_out K_y(Y, Yc))

The sketches are drawn by sprokr (sub-sampling, p-SG with the same ``p``), so only the
algebra differs from sprokr's.  Used by
``benchmarks/bibtex.py --papers-route``: the ratios of sprokr's fit and decode times to
these, measured in one process on the same data, are issue 19's Bibtex targets.
"""
from __future__ import annotations

import time

import numpy as np
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.preprocessing import StandardScaler

from sprokr.sketches import PSG, SubSample

__all__ = ["dense_standardised", "papers_iokr", "papers_sisokr"]


def dense_standardised(Xtr, Xte):
    """The authors' inputs: dense arrays, centred and scaled (``StandardScaler``)."""
    Xtr = np.asarray(Xtr.toarray() if hasattr(Xtr, "toarray") else Xtr, dtype=np.float64)
    Xte = np.asarray(Xte.toarray() if hasattr(Xte, "toarray") else Xte, dtype=np.float64)
    scaler = StandardScaler().fit(Xtr)
    return scaler.transform(Xtr), scaler.transform(Xte)


def _candidates(Ytr):
    """Distinct training label vectors in first-seen order and their first row numbers."""
    _, first = np.unique(Ytr, axis=0, return_index=True)
    first = np.sort(first)
    return Ytr[first], first


def papers_iokr(Xtr, Ytr, Xte, lam, sx2, sy2):
    """``(predictions, fit_s, decode_s)`` of IOKR by the papers' route."""
    t0 = time.perf_counter()
    Xtr, Ytr = Xtr.copy(), Ytr.copy()
    K = rbf_kernel(Xtr, Xtr, gamma=1.0 / (2 * sx2))
    n = K.shape[0]
    M = np.linalg.inv(K + n * lam * np.eye(n))
    t1 = time.perf_counter()
    Yc, _ = _candidates(Ytr)
    scores = rbf_kernel(Xte, Xtr, gamma=1.0 / (2 * sx2)).dot(M).dot(rbf_kernel(Ytr, Yc, gamma=1.0 / (2 * sy2)))
    pred = Yc[np.argmax(scores, axis=1)]
    return pred, t1 - t0, time.perf_counter() - t1


def _sketch_dense(R):
    """``(support indices, W)``: ``R = W E_support`` with ``W`` dense (m x m')."""
    S = np.asarray(R.indices)
    return S, R.toarray()[:, S]


def papers_sisokr(Xtr, Ytr, Xte, lam, sx2, sy2, m_in, m_out, p, seed, mu_in=1e-8):
    """``(predictions, fit_s, decode_s)`` of SISOKR by the papers' route (sub-sampled inputs,
    p-SG outputs), sketches drawn from ``seed``."""
    n = Xtr.shape[0]
    rng = np.random.default_rng(seed)
    R_in = SubSample(m_in).draw(n, rng)
    R_out = PSG(m_out, p=p).draw(n, rng)
    gx, gy = 1.0 / (2 * sx2), 1.0 / (2 * sy2)
    t0 = time.perf_counter()
    Xtr, Ytr = Xtr.copy(), Ytr.copy()
    S = np.asarray(R_in.indices)
    scale = np.sqrt(n / S.size)  # sub-sampling: R = sqrt(n / m) E_S
    A = scale * rbf_kernel(Xtr, Xtr[S], gamma=gx)  # K R_in^T
    Kt = scale * A[S]
    B = A.T.dot(A) + n * lam * Kt
    Omega = np.linalg.inv(B + mu_in * np.eye(S.size)).dot(A.T)
    Sy, Wy = _sketch_dense(R_out)
    KyRT = rbf_kernel(Ytr, Ytr[Sy], gamma=gy).dot(Wy.T)  # K_y R_out^T (n x m_out)
    RKyRT = Wy.dot(KyRT[Sy])
    M = Omega.dot(KyRT).dot(np.linalg.inv(RKyRT))
    t1 = time.perf_counter()
    Yc, first = _candidates(Ytr)
    RKy = KyRT.T[:, first]
    scores = (scale * rbf_kernel(Xte, Xtr[S], gamma=gx)).dot(M).dot(RKy)
    pred = Yc[np.argmax(scores, axis=1)]
    return pred, t1 - t0, time.perf_counter() - t1
