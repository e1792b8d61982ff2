"""KernelFeatures: the Nystrom feature map of a registered kernel against a dense computation."""
import numpy as np
import pytest
import scipy.sparse as sp

from sprokr import DSOKR, SISOKR
from sprokr.kernels import BUILTIN_KERNELS, Kernel, KernelFeatures


def dense_nystrom(K_query_support, K_support):
    """``K_qS U D^-1/2`` from a dense eigendecomposition of ``K_SS``."""
    d, U = np.linalg.eigh(K_support)
    keep = d > 1e-10 * d.max()
    return K_query_support @ U[:, keep] / np.sqrt(d[keep])


def test_equals_dense_nystrom(rng):
    X = rng.standard_normal((150, 4))
    Xq = rng.standard_normal((40, 4))
    kf = KernelFeatures("gaussian", {"gamma": 0.4}, m_x=30, chunk_size=7, random_state=0).fit(X)
    k = BUILTIN_KERNELS["gaussian"](gamma=0.4)
    S = X[kf.features_.R.indices]
    Z, Zd = kf.transform(Xq), dense_nystrom(k(Xq, S), k(S))
    assert Z.shape == (40, kf.n_components_) == Zd.shape
    # the basis is unique up to signs/rotations within eigenspaces: compare inner products
    np.testing.assert_allclose(Z @ Z.T, Zd @ Zd.T, atol=1e-10)
    # the Nystrom approximation of the kernel, exact on the support points
    Zs = kf.transform(S)
    np.testing.assert_allclose(Zs @ Zs.T, k(S), atol=1e-8)
    assert kf.get_feature_names_out()[0] == "kernelfeatures0"


def test_standardize_sparse_inputs_and_dtype(rng):
    X = sp.random(120, 50, density=0.2, format="csr", random_state=1)
    kf = KernelFeatures("cosine", m_x=40, standardize=True, dtype="float32", random_state=0).fit(X)
    Z = kf.transform(X)
    assert Z.dtype == np.float32
    np.testing.assert_allclose(Z.std(axis=0), 1.0, rtol=1e-4)
    raw = KernelFeatures("cosine", m_x=40, random_state=0).fit(X).transform(X)
    np.testing.assert_allclose(Z * kf.scale_, raw, rtol=1e-4, atol=1e-5)


def test_ridge_on_kernel_features_is_sisokr(multilabel_data):
    """A ridge on the features (DSOKR regressor) is SISOKR with the same input sketch."""
    from sklearn.linear_model import Ridge

    Xtr, Ytr, Xte, _ = multilabel_data
    n, lam = len(Xtr), 1e-3
    sis = SISOKR(input_kernel="gaussian", output_kernel="gaussian", lam=lam, input_sketch="subsample", m_x=40,
                 output_sketch="subsample", m_y=30, random_state=5).fit(Xtr, Ytr)
    kf = KernelFeatures("gaussian", m_x=40, random_state=np.random.default_rng(5)).fit(Xtr)
    np.testing.assert_array_equal(kf.features_.R.indices, sis.input_sketch_matrix_.indices)
    from sprokr.sketches import SubSample

    rng = np.random.default_rng(5)  # SISOKR's generator: the input sketch first, then the output sketch
    SubSample(m=40).draw(n, rng)
    ds = DSOKR(output_kernel="gaussian", output_sketch="subsample", m_y=30, random_state=rng,
               regressor=Ridge(alpha=n * lam, fit_intercept=False)).fit(kf.transform(Xtr), Ytr)
    np.testing.assert_allclose(ds.predict_coordinates(kf.transform(Xte)), sis.predict_coordinates(Xte), atol=1e-6)


def test_errors_and_unfitted(rng):
    X = rng.standard_normal((20, 3))
    with pytest.raises(ValueError, match="larger than"):
        KernelFeatures(m_x=50).fit(X)
    with pytest.raises(ValueError, match="unknown input_kernel|unknown"):
        KernelFeatures("nope").fit(X)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        KernelFeatures().transform(X)
    X0 = X.copy()
    KernelFeatures(m_x=5, random_state=0).fit(X).transform(X)
    np.testing.assert_array_equal(X, X0)


def test_save_and_load(rng, tmp_path):
    import sprokr

    X = rng.standard_normal((60, 3))
    kf = KernelFeatures("laplacian", {"gamma": 0.5}, m_x=20, standardize=True, random_state=0).fit(X)
    loaded = sprokr.load(kf.save(tmp_path / "features.sprokr"))
    assert isinstance(loaded, KernelFeatures) and loaded.get_params() == kf.get_params()
    np.testing.assert_array_equal(loaded.transform(X), kf.transform(X))


def test_standardized_fit_transform_and_a_failed_refit():
    X = np.random.default_rng(0).normal(size=(300, 4))
    f = KernelFeatures(m_x=50, standardize=True, random_state=0)
    Z = f.fit_transform(X)
    np.testing.assert_allclose(Z, f.transform(X), rtol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1.0, rtol=1e-6)
    with pytest.raises(ValueError, match="rcond"):
        f.set_params(rcond=-1.0).fit(X)
    np.testing.assert_array_equal(f.transform(X), Z)  # the previous feature map is intact


@pytest.mark.parametrize("bad", ["no", 0, None])
def test_standardize_must_be_a_bool(bad):
    """``standardize="no"`` was true (the features were standardised); a refused value
    leaves a fitted feature map as it was."""
    X = np.random.default_rng(0).normal(size=(60, 3))
    f = KernelFeatures(m_x=20, random_state=0).fit(X)
    Z = f.transform(X)
    with pytest.raises(ValueError, match=rf"^standardize must be True or False, got {bad!r}$"):
        f.set_params(standardize=bad).fit(X)
    assert f.scale_ is None
    np.testing.assert_array_equal(f.transform(X), Z)
    assert KernelFeatures(m_x=20, standardize=np.True_, random_state=0).fit(X).scale_ is not None


class _LengthKernel(Kernel):
    """``exp(-|len(a) - len(b)|)`` on strings, prepared as a list: no feature count."""

    def prepare(self, X):
        return [str(x) for x in X]

    def pairwise(self, A, B):
        return np.exp(-np.abs(np.array([len(a) for a in A])[:, None] - np.array([len(b) for b in B])[None, :]))


def test_n_features_in_is_set_for_vector_inputs_only(rng):
    """As every estimator: ``n_features_in_`` after fit when the prepared inputs are an array or
    a sparse matrix (none for a kernel on strings), and the clear error on a wrong number of
    features stays."""
    X = rng.standard_normal((30, 4))
    kf = KernelFeatures(m_x=10, random_state=0).fit(X)
    assert kf.n_features_in_ == 4
    assert KernelFeatures(m_x=10, random_state=0).fit(sp.csr_matrix(X)).n_features_in_ == 4
    with pytest.raises(ValueError, match=r"same number of features: got shapes \(30, 3\) and \(10, 4\)"):
        kf.transform(X[:, :3])
    words = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff"]
    kf.set_params(kernel=_LengthKernel(), m_x=3).fit(words)  # a refit on strings drops the count
    assert not hasattr(kf, "n_features_in_")
    assert kf.transform(["gg"]).shape == (1, kf.n_components_)
