"""Torch surrogate regressors: SMILES / text encoders, residual MLP, early stopping, save/load.

Skipped without torch (the ``torch`` extra); they run and must pass with it installed.
"""
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

torch = pytest.importorskip("torch")

import sprokr  # noqa: E402
from sprokr import DSOKR  # noqa: E402
from sprokr.kernels import KernelFeatures  # noqa: E402
from sprokr.models.torch_regressors import SmilesRegressor, TextRegressor, TorchRegressor  # noqa: E402

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

FAST = {"max_epochs": 60, "n_iter_no_change": 4, "learning_rate": 3e-3, "batch_size": 16, "num_threads": 1,
        "hidden_layer_sizes": (32,)}


@pytest.fixture(scope="module")
def smiles_data(qm9_smiles_graphs):
    smiles, graphs = qm9_smiles_graphs
    return smiles[:120], graphs[:120], smiles[120:160], graphs[120:160]


def _texts(graphs):
    """A description of each molecule from its atoms and bonds (a learnable text task)."""
    out = []
    for G in graphs:
        atoms = sorted(d["label"] for _, d in G.nodes(data=True))
        out.append(f"a molecule with {len(atoms)} heavy atoms: " + " ".join(atoms) + f" and {G.number_of_edges()} bonds.")
    return out


@pytest.mark.parametrize("architecture", ["cnn", "transformer"])
def test_smiles_encoder_learns_and_stops_on_validation_loss(smiles_data, architecture):
    Xtr, Ytr, Xv, Yv = smiles_data
    params = {**FAST, "architecture": architecture, "embed_dim": 16, "channels": 16, "n_layers": 1, "ff_dim": 32}
    ds = DSOKR(output_kernel="wl", output_sketch="subsample", m_y=30, regressor="torch_smiles",
               regressor_params=params, random_state=0).fit(Xtr, Ytr, validation_data=(Xv, Yv))
    reg = ds.regressor_
    assert isinstance(reg, SmilesRegressor) and reg.tokenizer_.vocabulary_size_ > 5
    vals = [v for _, v in reg.history_]
    # the validation kernel loss went down; the best weights (to the relative tolerance) are kept
    assert min(vals) <= reg.best_loss_ <= min(vals) * (1 + reg.tol) and reg.best_loss_ < 0.95 * vals[0]
    np.testing.assert_allclose(ds.validation_loss_, reg.best_loss_, rtol=1e-4)
    # trained to convergence: stopped on a plateau before max_epochs
    assert reg.converged_ and reg.n_epochs_ < params["max_epochs"]
    # seeded: the same fit gives the same network
    again = DSOKR(**ds.get_params()).fit(Xtr, Ytr, validation_data=(Xv, Yv))
    np.testing.assert_array_equal(again.predict_coordinates(Xv), ds.predict_coordinates(Xv))
    # the global torch generator is left as it was
    state = torch.random.get_rng_state()
    DSOKR(**ds.get_params()).fit(Xtr[:40], Ytr[:40])
    assert torch.equal(state, torch.random.get_rng_state())


def test_text_encoder_learns(smiles_data):
    _, Ytr, _, Yv = smiles_data
    Ttr, Tv = _texts(Ytr), _texts(Yv)
    ds = DSOKR(output_kernel="wl", output_sketch="subsample", m_y=30, regressor="torch_text",
               regressor_params={**FAST, "embed_dim": 16, "channels": 16, "min_count": 1}, random_state=0)
    ds.fit(Ttr, Ytr, validation_data=(Tv, Yv))
    vals = [v for _, v in ds.regressor_.history_]
    assert isinstance(ds.regressor_, TextRegressor) and min(vals) < 0.96 * vals[0]
    assert ds.predict(Tv[:3])[0] is not None


def test_convergence_warning_when_epochs_run_out(smiles_data):
    Xtr, Ytr, Xv, Yv = smiles_data
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning, match="max_epochs=2"):
            SmilesRegressor(**{**FAST, "max_epochs": 2, "channels": 8}, random_state=0).fit(
                Xtr, np.random.default_rng(0).standard_normal((len(Xtr), 3)))


def test_residual_mlp_starts_at_the_ridge_solution(rng):
    from sklearn.linear_model import Ridge

    X = rng.standard_normal((150, 8))
    T = np.tanh(X @ rng.standard_normal((8, 4))) + 0.1 * rng.standard_normal((150, 4))
    Xv, Tv = X[100:], T[100:]
    ridge = Ridge(alpha=0.5).fit(X[:100], T[:100])
    reg = TorchRegressor(residual=True, ridge_init=0.5, max_epochs=0 + 1, learning_rate=1e-12, hidden_layer_sizes=(16,),
                         num_threads=1, random_state=0).fit(X[:100], T[:100], eval_set=(Xv, Tv))
    # with a negligible step, the network is the ridge model
    np.testing.assert_allclose(reg.predict(Xv), ridge.predict(Xv), atol=1e-4)
    np.testing.assert_allclose(reg.initial_loss_, np.mean(np.sum((ridge.predict(Xv) - Tv) ** 2, axis=1)), rtol=1e-4)
    # training from there never ends worse than the linear model on the validation loss
    long = TorchRegressor(residual=True, ridge_init=0.5, max_epochs=200, n_iter_no_change=5, learning_rate=1e-2,
                          hidden_layer_sizes=(16,), num_threads=1, random_state=0)
    long.fit(X[:100], T[:100], eval_set=(Xv, Tv))
    assert long.best_loss_ <= long.initial_loss_ and long.converged_
    with pytest.raises(ValueError, match="ridge_init needs residual=True"):
        TorchRegressor(ridge_init=1.0, max_epochs=1).fit(X, T)


def test_encoders_save_and_load(smiles_data, tmp_path):
    Xtr, Ytr, Xv, Yv = smiles_data
    for architecture in ("cnn", "transformer"):
        ds = DSOKR(output_kernel="wl", output_sketch="subsample", m_y=20, regressor="torch_smiles",
                   regressor_params={**FAST, "max_epochs": 2, "architecture": architecture, "embed_dim": 8,
                                     "channels": 8, "n_layers": 1, "ff_dim": 16}, random_state=0).fit(Xtr, Ytr)
        path = ds.save(tmp_path / f"{architecture}.sprokr")
        loaded = sprokr.load(path)
        assert type(loaded.regressor_.module_) is type(ds.regressor_.module_)
        assert loaded.regressor_.tokenizer_.vocabulary_ == ds.regressor_.tokenizer_.vocabulary_
        np.testing.assert_array_equal(loaded.predict_coordinates(Xv), ds.predict_coordinates(Xv))
    # vectors: the residual MLP on kernel features
    kf = KernelFeatures("smiles_spectrum", m_x=30, random_state=0).fit(Xtr)
    ds = DSOKR(output_kernel="wl", output_sketch="subsample", m_y=20, regressor="torch_mlp",
               regressor_params={"residual": True, "ridge_init": 1.0, "max_epochs": 2, "num_threads": 1},
               random_state=0).fit(kf.transform(Xtr), Ytr)
    loaded = sprokr.load(ds.save(tmp_path / "residual.sprokr"))
    np.testing.assert_array_equal(loaded.predict_coordinates(kf.transform(Xv)), ds.predict_coordinates(kf.transform(Xv)))


def test_tampered_network_state_is_refused(smiles_data, tmp_path):
    """A saved network whose arrays do not fit its configuration is a format error."""
    from sprokr.models._torch_nets import TokenCNN
    from sprokr.persistence import ModelFormatError

    Xtr, Ytr, _, _ = smiles_data
    ds = DSOKR(output_kernel="wl", output_sketch="subsample", m_y=20, regressor="torch_smiles",
               regressor_params={**FAST, "max_epochs": 1, "embed_dim": 8, "channels": 8}, random_state=0).fit(Xtr, Ytr)
    net = ds.regressor_.module_
    assert isinstance(net, TokenCNN)
    net.config = {**net.config, "channels": 9}  # configuration no longer matches the weights
    with pytest.raises(ModelFormatError, match="does not match its saved state"):
        sprokr.load(ds.save(tmp_path / "bad.sprokr"))


def test_a_failed_refit_keeps_the_previous_network(rng):
    X, T = rng.normal(size=(60, 5)), rng.normal(size=(60, 3))
    model = TorchRegressor(**FAST, random_state=0).fit(X, T)
    before = model.predict(X[:5])
    with pytest.raises(ValueError, match="ridge_init"):  # found only once training has started
        model.set_params(ridge_init=1.0).fit(X, T)
    np.testing.assert_array_equal(model.predict(X[:5]), before)


def test_transformer_predicts_an_empty_text_without_nan():
    texts = ["a molecule with two carbons", "an acid", "a base with rings", "one oxygen atom"] * 6
    T = np.random.default_rng(0).normal(size=(len(texts), 2))
    model = TextRegressor(architecture="transformer", max_epochs=2, num_threads=1, random_state=0).fit(texts, T)
    assert np.isfinite(model.predict(["", "an acid"])).all()


_SMILES = ["CCO", "CCN", "c1ccccc1", "CC(=O)O", "CCCl", "OCCO", "CNC", "C#N", "CC(C)C", "O=C=O"] * 4
_TEXTS = ["a red apple", "green leaf tree", "blue sky above", "red car fast", "the tree is green", "sky is blue",
          "apple pie", "fast blue car"] * 5
_TINY = {"max_epochs": 2, "batch_size": 16, "num_threads": 1, "random_state": 0, "hidden_layer_sizes": (8,)}
_TINY_SEQ = {**_TINY, "embed_dim": 8, "channels": 8, "kernel_sizes": (3,), "n_heads": 2, "n_layers": 1, "ff_dim": 16,
             "min_count": 1}
#: one fast instance of each torch regressor and inputs of its kind
_SMALL = {
    "mlp": (lambda: TorchRegressor(**_TINY), None),
    "mlp_dropout": (lambda: TorchRegressor(dropout=0.2, **_TINY), None),
    "residual_ridge": (lambda: TorchRegressor(residual=True, ridge_init=1.0, **_TINY), None),
    "smiles_cnn": (lambda: SmilesRegressor(**_TINY_SEQ), _SMILES),
    "smiles_transformer": (lambda: SmilesRegressor(architecture="transformer", **_TINY_SEQ), _SMILES),
    "text_cnn": (lambda: TextRegressor(**_TINY_SEQ), _TEXTS),
}


@pytest.mark.parametrize("kind", list(_SMALL))
def test_nonfinite_training_data_is_refused_before_training(kind, rng):
    """NaN / inf targets or offsets trained silently to a NaN network (best_loss_ = nan, every
    prediction NaN; with ridge_init, scipy's bare "array must not contain infs or NaNs")."""
    make, X = _SMALL[kind]
    X = rng.normal(size=(40, 4)) if X is None else X
    T = rng.normal(size=(len(X), 3))
    model = make().fit(X, T)
    before = model.predict(X[:5])
    Tnan, Tinf = T.copy(), T.copy()
    Tnan[3, 1], Tinf[0, 2] = np.nan, -np.inf
    n = len(X)
    refused = [
        ((X, Tnan), {}, "T contains 1 NaN or infinite value"),
        ((X, Tinf), {}, "T contains 1 NaN or infinite value"),
        ((X, Tnan.tolist()), {}, "T contains 1 NaN or infinite value"),
        ((X, T), {"sample_offsets": np.r_[np.nan, np.zeros(n - 1)]}, "sample_offsets contain 1 NaN or infinite"),
        ((X, T), {"sample_offsets": -np.ones(n)}, r"sample_offsets must be >= 0"),
        ((X, T), {"sample_offsets": np.ones(3)}, "sample_offsets must hold one value per sample: got 3 for 40"),
        ((X, T), {"eval_set": (X[:5], Tnan[:5])}, "eval_set targets contain 1 NaN or infinite value"),
        ((X, T), {"eval_set": (X[:5], T[:5], [np.inf, 0, 0, 0, 0])}, "eval_set offsets contain 1 NaN or infinite"),
    ]
    for args, kwargs, match in refused:
        with pytest.raises(ValueError, match=match):
            model.fit(*args, **kwargs)
        # refused before anything was trained: the previous model is intact
        np.testing.assert_array_equal(model.predict(X[:5]), before)


def test_vector_inputs_are_checked_and_their_width_recorded(rng):
    from sprokr.models.torch_regressors import token_cnn

    X, T = rng.normal(size=(40, 4)), rng.normal(size=(40, 2))
    model = TorchRegressor(**_TINY).fit(X, T)
    assert model.n_features_in_ == 4
    before = model.predict(X[:5])
    # was torch's "mat1 and mat2 shapes cannot be multiplied (5x3 and 4x8)"
    with pytest.raises(ValueError, match=r"X has 3 features, but TorchRegressor is expecting 4 features as input"):
        model.predict(X[:5, :3])
    # one sample as a 1-D array was read as 4 samples of one feature (4 rows of predictions)
    with pytest.raises(ValueError, match=r"X must be a \(n_samples, n_features\) array, got shape \(4,\)"):
        model.predict(X[0])
    Xnan = X.copy()
    Xnan[2, 1] = np.nan
    refused = [((Xnan, T), {}, "X contains 1 NaN or infinite value"),
               ((X, T), {"eval_set": (Xnan[:5], T[:5])}, "eval_set inputs contain 1 NaN or infinite value"),
               ((X, T), {"eval_set": (X[:5, :3], T[:5])}, r"eval_set inputs have shape \(5, 3\), but TorchRegressor "
                                                           r"is fitted on X of shape \(40, 4\)"),
               ((X[:, 0], T), {}, r"X must be a \(n_samples, n_features\) array")]
    for args, kwargs, match in refused:
        with pytest.raises(ValueError, match=match):
            model.fit(*args, **kwargs)
        np.testing.assert_array_equal(model.predict(X[:5]), before)
    # integer features are numbers to the default networks (were passed as token ids: a torch dtype error)
    assert TorchRegressor(**_TINY).fit(np.round(X * 3).astype(np.int64), T).n_features_in_ == 4
    # token ids for a module= have no feature count (the sequence length may vary): a refit forgets it
    ids = rng.integers(1, 10, size=(40, 7))
    model.set_params(module=token_cnn(10, embed_dim=4, channels=4, hidden=4)).fit(ids, T)
    assert not hasattr(model, "n_features_in_") and model.predict(ids[:3, :6]).shape == (3, 2)
    # strings: no feature count either (the convention of the estimators on non-vector inputs)
    for kind in ("smiles_cnn", "text_cnn"):
        make, strings = _SMALL[kind]
        assert not hasattr(make().fit(strings, rng.normal(size=(len(strings), 2))), "n_features_in_")


def test_loading_a_torch_model_without_torch_names_the_missing_extra(rng, tmp_path, request):
    """Was MissingPluginError "... provided by sprokr itself (saved with sprokr 0.1.0); this sprokr
    does not provide it", which reads like a version problem."""
    from sprokr.persistence import MissingPluginError

    X, T = rng.normal(size=(40, 4)), rng.normal(size=(40, 2))
    paths = [TorchRegressor(**_TINY).fit(X, T).save(tmp_path / "reg.sprokr"),
             DSOKR(m_y=10, regressor="torch_mlp", regressor_params=_TINY, random_state=0).fit(X, X > 0).save(
                 tmp_path / "dsokr.sprokr")]
    request.getfixturevalue("without_torch")  # from here on, torch is not installed
    for path, where in zip(paths, ("TorchRegressor", "DSOKR.regressor_")):
        with pytest.raises(MissingPluginError, match=rf"the model needs the regressor 'torch_mlp' \(.*{where}\) of "
                                                     r"sprokr; it needs torch, which is not installed \(the torch "
                                                     r"extra\): pip install .*\[torch\]"):
            sprokr.load(path)
