"""The "precomputed" kernel: Gram blocks give the same models as the named kernel."""
import numpy as np
import pytest

from sprokr import IOKR, ISOKR, SIOKR, SISOKR, SketchedKernelMachine
from sprokr.kernels import GaussianKernel, GramBlock, LinearKernel
from sprokr.kernels.precomputed import PrecomputedKernel, required_columns
from sprokr.utils import take, take_slice

GX, GY = 0.2, 0.5
KX, KY = GaussianKernel(gamma=GX), GaussianKernel(gamma=GY)

SISOKR_CASES = {
    "IOKR": (IOKR, {}),  # no random_state: exact
    "SIOKR": (SIOKR, {"input_sketch": "subsample", "m_x": 50}),
    "ISOKR": (ISOKR, {"output_sketch": "psg", "m_y": 40, "output_sketch_params": {"p": 0.1}}),
    "SISOKR": (SISOKR, {"input_sketch": "psr", "m_x": 50, "input_sketch_params": {"p": 0.05},
                        "output_sketch": "subsample", "m_y": 40}),
}


def pair(cls, kw, out_named="gaussian", out_params=None):
    kw = dict(kw) if cls is IOKR else {"random_state": 0, **kw}
    named = cls(lam=1e-3, input_kernel="gaussian", input_kernel_params={"gamma": GX}, output_kernel=out_named,
                output_kernel_params=out_params if out_params is not None else {"gamma": GY}, **kw)
    pre = cls(lam=1e-3, input_kernel="precomputed", output_kernel="precomputed",
              output_kernel_params={"normalized": out_named == "gaussian"}, **kw)
    return named, pre


@pytest.mark.parametrize("name", list(SISOKR_CASES))
def test_output_kernel_models_equal_named_kernel(multilabel_data, name):
    Xtr, Ytr, Xte, Yte = multilabel_data
    cls, kw = SISOKR_CASES[name]
    named, pre = pair(cls, kw)
    Kx, Ky, Kq = KX(Xtr), KY(Ytr), KX(Xte, Xtr)
    saved = Kx.copy(), Ky.copy(), Kq.copy()
    named.fit(Xtr, Ytr)
    pre.fit(Kx, Ky)
    a, b = named.predict_topk(Xte, k=5), pre.predict_topk(Kq, k=5)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-9, atol=1e-10)
    # default decoding: the precomputed model returns the predicted outputs' Gram rows
    idx = b.indices[:, 0]
    np.testing.assert_array_equal(pre.predict(Kq), take(pre.default_index_.candidates, idx))
    np.testing.assert_array_equal(named.predict(Xte), take(named.default_index_.candidates, idx))
    # candidates given as a block against the training outputs (+ their diagonal)
    C = np.unique(np.vstack([Ytr, Yte]), axis=0)
    a = named.predict_topk(Xte, k=3, candidates=C)
    b = pre.predict_topk(Kq, k=3, candidates=GramBlock(KY(C, Ytr), diag=np.ones(len(C))))
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-9, atol=1e-10)
    for before, after in zip(saved, (Kx, Ky, Kq)):
        np.testing.assert_array_equal(before, after)  # nothing the user passed is modified


def test_non_normalised_output_kernel_reads_the_diagonal(multilabel_data):
    Xtr, Ytr, Xte, Yte = multilabel_data
    kw = {"output_sketch": "subsample", "m_y": 30}
    named, pre = pair(ISOKR, kw, out_named="linear", out_params={})
    lin = LinearKernel()
    named.fit(Xtr, Ytr)
    pre.fit(KX(Xtr), lin(Ytr))
    C = np.unique(np.vstack([Ytr, Yte]), axis=0)
    a = named.predict_topk(Xte, k=3, candidates=C)
    Cb = GramBlock(lin(C, Ytr), diag=lin.diag(lin.prepare(C)))
    b = pre.predict_topk(KX(Xte, Xtr), k=3, candidates=Cb)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_allclose(a.scores, b.scores, rtol=1e-9, atol=1e-10)
    with pytest.raises(ValueError, match=r"k\(x, x\).*diag="):
        pre.predict(KX(Xte, Xtr), candidates=lin(C, Ytr))


@pytest.mark.parametrize("sketch", [None, "subsample", "psr"])
@pytest.mark.parametrize("loss", ["square", "huber"])
def test_kernel_machine_equals_named_kernel(rng, sketch, loss):
    X = rng.standard_normal((150, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(150)
    Xq = rng.standard_normal((20, 3))
    kw = dict(lam=1e-3, loss=loss, input_sketch=sketch, m_x=40 if sketch else None, random_state=0,
              input_sketch_params={"p": 0.05} if sketch == "psr" else None)
    named = SketchedKernelMachine(kernel="gaussian", kernel_params={"gamma": GX}, **kw).fit(X, y)
    pre = SketchedKernelMachine(kernel="precomputed", **kw).fit(KX(X), y)
    np.testing.assert_allclose(pre.predict(KX(Xq, X)), named.predict(Xq), rtol=1e-7, atol=1e-9)


def test_sketched_models_need_only_the_support_columns(multilabel_data):
    Xtr, Ytr, Xte, _ = multilabel_data
    model = SISOKR(lam=1e-3, input_kernel="precomputed", output_kernel="precomputed",
                   output_kernel_params={"normalized": True}, input_sketch="subsample", m_x=40,
                   output_sketch="subsample", m_y=30, random_state=0).fit(KX(Xtr), KY(Ytr))
    cols = required_columns(model)
    S, T = cols["input"], cols["output"]
    assert S.size == 40 and T.size <= 30 and S.max() < len(Xtr)
    full = model.predict_topk(KX(Xte, Xtr), k=3)
    part = model.predict_topk(GramBlock(KX(Xte, Xtr[S]), columns=S), k=3)
    np.testing.assert_array_equal(full.indices, part.indices)
    np.testing.assert_allclose(full.scores, part.scores, rtol=1e-12)
    # candidates against the output sketch's samples only
    C = Ytr[:25]
    a = model.predict_topk(KX(Xte, Xtr), k=2, candidates=GramBlock(KY(C, Ytr), diag=np.ones(25)))
    b = model.predict_topk(KX(Xte, Xtr), k=2, candidates=GramBlock(KY(C, Ytr[T]), columns=T, diag=np.ones(25)))
    np.testing.assert_array_equal(a.indices, b.indices)
    # the fitted model keeps an m' x m' block, not the n x n training Gram
    assert model.X_support_.values.shape == (40, 40)
    # a block missing a support column is rejected, naming it
    with pytest.raises(ValueError, match=rf"lacks the columns of 1 training sample.*\[{S[0]}\]"):
        model.predict(GramBlock(KX(Xte, Xtr[S[1:]]), columns=S[1:]))
    with pytest.raises(ValueError, match=r"one column per training sample, shape \(n_samples, 180\)"):
        model.predict(KX(Xte, Xtr[:100]))


def test_gram_block_collection_and_validation():
    K = KX(np.random.default_rng(0).standard_normal((10, 2)))
    k = PrecomputedKernel()
    B = k.prepare(K)
    assert len(B) == 10 and B.rows.tolist() == list(range(10))
    sub = take(B, [7, 2])  # support points: rows know their training index
    assert sub.rows.tolist() == [7, 2] and sub[0].index == 7
    np.testing.assert_array_equal(k.pairwise(B, sub), K[:, [7, 2]])
    np.testing.assert_array_equal(k.pairwise(take_slice(B, slice(3, 6)), sub), K[3:6][:, [7, 2]])
    np.testing.assert_array_equal(k.diag(sub), [1.0, 1.0])
    assert take(B, [1, 1])[0] == take(B, [1, 1])[1]  # rows compare by value
    Q = k.prepare(K[:4])  # not square: queries
    assert Q.rows is None
    with pytest.raises(ValueError, match="must be training samples.*not a square training Gram"):
        k.pairwise(B, Q)
    A = K.copy()
    A[0, 1] += 0.5  # square but not symmetric: not taken for a training Gram
    with pytest.raises(ValueError, match="not symmetric"):
        IOKR(input_kernel="precomputed").fit(A, np.arange(10.0)[:, None])
    with pytest.raises(ValueError, match="2-D"):
        k.prepare(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match="dense"):
        import scipy.sparse as sp

        k.prepare(sp.eye(3, format="csr"))
    with pytest.raises(ValueError, match="NaN"):
        k.prepare(np.full((3, 3), np.nan))
    with pytest.raises(TypeError, match="not raw samples"):
        k.prepare(["CCO", "CCC"])
    with pytest.raises(ValueError, match="columns has 2 entries for 3"):
        GramBlock(np.ones((2, 3)), columns=[0, 1])


def test_dsokr_precomputed_output_kernel(multilabel_data):
    from sprokr import DSOKR

    Xtr, Ytr, Xte, _ = multilabel_data
    common = dict(m_y=40, regressor="kernel_ridge", random_state=0)
    a = DSOKR(output_kernel="gaussian", output_kernel_params={"gamma": GY}, **common).fit(Xtr, Ytr)
    b = DSOKR(output_kernel="precomputed", output_kernel_params={"normalized": True}, **common).fit(Xtr, KY(Ytr))
    pa, pb = a.predict_topk(Xte, k=3), b.predict_topk(Xte, k=3)
    np.testing.assert_array_equal(pa.indices, pb.indices)
    np.testing.assert_allclose(pa.scores, pb.scores, rtol=1e-9, atol=1e-10)


def test_a_prepared_support_is_prepared_once():
    """Preparing a support keeps its own square block; preparing that again (a loaded
    model's expansion does) returns it as it is, without a copy."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((30, 4))
    K = GaussianKernel(gamma=0.2).pairwise(X, X)
    rows = np.array([3, 7, 11, 20])
    kernel = PrecomputedKernel()
    S = kernel.prepare_support(GramBlock(K[rows], rows=rows))
    np.testing.assert_array_equal(S.values, K[np.ix_(rows, rows)])
    assert kernel.prepare_support(S) is S


def test_normalized_must_be_a_bool(multilabel_data):
    """normalized="no" was true: decoding then skipped the candidates' k(c, c) of a kernel
    that is not normalised; refused naming it, when the model resolves the kernel."""
    X = multilabel_data[0][:20]
    K = GaussianKernel(gamma=0.1)(X)
    with pytest.raises(ValueError, match="^normalized must be True or False, got 'no'$"):
        PrecomputedKernel(normalized="no").check_params()
    with pytest.raises(ValueError, match="output_kernel 'precomputed': normalized must be True or False, got 'no'"):
        IOKR(output_kernel="precomputed", output_kernel_params={"normalized": "no"}).fit(X, K)
    assert PrecomputedKernel(normalized=np.True_).check_params().normalized
