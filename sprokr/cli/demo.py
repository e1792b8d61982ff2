"""sprokr's own ``sprokr demo`` section: IOKR and SISOKR on the shipped Bibtex sample.

Registered through the ``sprokr_demos`` hook (:mod:`sprokr._builtins`) like a plugin's
demo (sprokr-chem adds the molecule section).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict

__all__ = ["MultilabelDemo"]


class MultilabelDemo:
    """SISOKR vs IOKR on the shipped Bibtex sample (800 train / 400 test documents).

    ``MultilabelDemo()(out=print)`` prints one line per model (F1, fit and decode times)
    and the first test document's top-3 label sets, and returns
    ``{model name: {"f1", "fit_s", "decode_s"}}``.
    """

    def __call__(self, out: Callable[..., None] = print) -> Dict[str, Any]:
        """Run the demo, printing through ``out``; returns the results per model."""
        import numpy as np
        from sklearn.preprocessing import StandardScaler

        from ..datasets import load_bibtex_sample
        from ..metrics import f1_samples
        from ..models import IOKR, SISOKR

        Xtr, Ytr, Xte, Yte = load_bibtex_sample()
        sc = StandardScaler(with_mean=False).fit(Xtr)
        Xtr, Xte = sc.transform(Xtr), sc.transform(Xte)
        n = Xtr.shape[0]
        out(f"Bibtex sample: {n} train / {Xte.shape[0]} test documents, {Xtr.shape[1]} features, "
            f"{Ytr.shape[1]} labels; candidates = distinct training label sets")
        models = {
            "IOKR (exact)": IOKR(lam=1e-4, input_kernel_params={"sigma2": 1e4}, output_kernel_params={"sigma2": 1.0}),
            "SISOKR (m_x=400, m_y=100)": SISOKR(
                lam=1e-4, input_kernel_params={"sigma2": 1e4}, output_kernel_params={"sigma2": 1e4},
                input_sketch="subsample", m_x=400, output_sketch="psg", m_y=100,
                output_sketch_params={"p": 20.0 / n}, random_state=0),
        }
        res = {}
        for name, model in models.items():
            t0 = time.perf_counter()
            model.fit(Xtr, Ytr)
            t1 = time.perf_counter()
            pred = model.predict(Xte)
            t2 = time.perf_counter()
            res[name] = {"f1": f1_samples(Yte, pred), "fit_s": t1 - t0, "decode_s": t2 - t1}
            out(f"  {name:28s} F1 {res[name]['f1']:.3f}   fit {t1 - t0:6.3f} s   decode {t2 - t1:6.3f} s")
        top = models["SISOKR (m_x=400, m_y=100)"].predict_topk(Xte[:1], k=3)
        # a wide Gaussian output kernel (sigma2 = 1e4 on 159-bit label vectors) is nearly flat:
        # scores agree to ~5 digits and only their order matters, so show the gaps to the best
        index = models["SISOKR (m_x=400, m_y=100)"].default_index_
        assert index is not None  # the demo's models keep their default index
        labels = [np.flatnonzero(np.asarray(index.take([i])[0])).tolist() for i in top.indices[0]]
        gaps = (top.scores[0] - top.scores[0][0]).tolist()
        out(f"  first test document: true labels {np.flatnonzero(Yte[0]).tolist()}; SISOKR top-3 label sets "
            f"{labels}\n  (score minus the best: {', '.join(f'{g:.2g}' for g in gaps)}: with the wide Gaussian "
            "output kernel the scores of all candidates are close, only their order matters)")
        return res
