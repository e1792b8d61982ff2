"""The ``text`` input kernel: values against scikit-learn's TfidfVectorizer and a direct
BM25 computation, PSD, registration, errors."""
import re

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

from sprokr.kernels import TextKernel
from sprokr.registry import get_registry

DOCS = ["Magnesium dichloride dihydrate is a hydrate of magnesium dichloride.",
        "Calcium chloride dihydrate is a hydrate that is the dihydrate form of calcium chloride.",
        "Benzoic acid is a compound comprising a benzene ring core carrying a carboxylic acid substituent.",
        "Benzoate is a monocarboxylic acid anion that is the conjugate base of benzoic acid.",
        "Ethanol is a primary alcohol that is ethane in which one hydrogen is replaced by a hydroxy group.",
        "an acid"]


@pytest.mark.parametrize("weighting,sublinear", [("tf", False), ("sublinear", True)])
def test_word_block_equals_tfidf_vectorizer(weighting, sublinear):
    k = TextKernel(word_ngrams=(1, 2), char_ngrams=None, char_weight=0.0, weighting=weighting).fit(DOCS[:4])
    vec = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=sublinear, token_pattern=r"(?u)\b\w\w+\b").fit(DOCS[:4])
    ref = (vec.transform(DOCS) @ vec.transform(DOCS).T).toarray()
    # n-grams unseen in fit get the largest idf here (hashed buckets), none in TfidfVectorizer:
    # compare on the fitted documents, where the two feature spaces agree
    assert np.allclose(k(DOCS[:4]), ref[:4, :4], atol=1e-12)


def test_bm25_weights_by_hand():
    docs = ["aa bb bb cc", "bb cc cc cc dd", "ee"]
    k = TextKernel(word_ngrams=(1, 1), char_ngrams=None, char_weight=0.0, weighting="bm25",
                   k1=1.2, b=0.75).fit(docs)
    C = CountVectorizer().fit_transform(docs).toarray().astype(float)
    n = len(docs)
    df = (C > 0).sum(0)
    idf = np.log((1 + n) / (1 + df)) + 1
    lens = C.sum(1)
    w = C * 2.2 / (C + 1.2 * (0.25 + 0.75 * lens[:, None] / lens.mean()))
    w[C == 0] = 0
    w *= idf
    w /= np.linalg.norm(w, axis=1, keepdims=True)
    assert np.allclose(k(docs), w @ w.T, atol=1e-12)


def test_text_kernel_is_normalised_psd_and_registered():
    assert get_registry().get("input_kernel", "text").plugin == "sprokr"
    for k in (get_registry().create("input_kernel", "text"), TextKernel().fit(DOCS)):
        K = k(DOCS)
        assert np.allclose(np.diag(K), 1.0) and np.allclose(K, K.T)
        assert np.linalg.eigvalsh(K).min() > -1e-10
        # the two benzoic descriptions are closer to each other than to ethanol
        assert K[2, 3] > K[2, 4]
    # character n-grams relate word forms that share no word: "chloride" / "dichloride"
    words = TextKernel(char_ngrams=None, char_weight=0.0)(["dichloride", "chloride"])[0, 1]
    chars = TextKernel()(["dichloride", "chloride"])[0, 1]
    assert words == 0.0 and chars > 0.3
    # prepared batches share one feature space
    k = TextKernel().fit(DOCS)
    assert np.allclose(k.pairwise(k.prepare(DOCS[:2]), k.prepare(DOCS[2:])), k(DOCS)[:2, 2:])


def test_text_kernel_errors():
    with pytest.raises(TypeError, match="not a single string"):
        TextKernel().prepare("one text")
    with pytest.raises(TypeError, match=r"the samples\[1\] must be a text string, got int"):
        TextKernel().prepare(["a text", 3])
    with pytest.raises(ValueError, match="weighting must be one of"):
        TextKernel(weighting="bm15").prepare(DOCS)
    with pytest.raises(ValueError, match="char_weight"):
        TextKernel(char_weight=1.5).check_params()
    with pytest.raises(ValueError, match="word_ngrams"):
        TextKernel(word_ngrams=(2, 1)).check_params()
    # bools are not numbers here (k1=True was k1 = 1, word_ngrams=(True, True) was (1, 1))
    for params, what in [({"k1": True}, "k1 must be a finite number >= 0, got True"),
                         ({"b": np.True_}, "b must be a finite number >= 0, got np.True_"),
                         ({"char_weight": np.True_}, "char_weight must be a number in [0, 1], got np.True_"),
                         ({"lowercase": "no"}, "lowercase must be True or False, got 'no'"),
                         ({"word_ngrams": (True, True)}, "word_ngrams must be a pair of ints with 1 <= min_n "
                                                         "<= max_n, got (True, True)")]:
        with pytest.raises(ValueError, match=f"^{re.escape(what)}$"):
            TextKernel(**params).check_params()
    with pytest.raises(ValueError, match="refit"):
        k = TextKernel(n_features=2**10).fit(DOCS)
        k.set_params(n_features=2**11).prepare(DOCS)


def test_models_fit_a_copy_of_an_unfitted_text_kernel_on_their_training_texts(tmp_path):
    import numpy as np

    import sprokr
    from sprokr import SISOKR
    from sprokr.kernels.text import TextKernel

    texts = ["a red apple", "green apple pie", "the red car", "a fast car", "apple and car"] * 8
    Y = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1]] * 8, dtype=float)
    mine = TextKernel()
    model = SISOKR(input_kernel=mine, random_state=0).fit(texts, Y)
    assert not hasattr(mine, "idf_")  # the user's kernel is not modified
    assert np.all(np.isfinite(model.input_kernel_.idf_))
    fitted = TextKernel().fit(texts[:3])  # a kernel fitted by the user is used as is
    assert SISOKR(input_kernel=fitted).fit(texts, Y).input_kernel_ is fitted
    by_name = SISOKR(input_kernel="text", random_state=0).fit(texts, Y)
    np.testing.assert_array_equal(by_name.input_kernel_.idf_, model.input_kernel_.idf_)
    by_name.save(tmp_path / "m.sprokr")
    again = sprokr.load(tmp_path / "m.sprokr")
    np.testing.assert_array_equal(again.predict(texts[:5]), by_name.predict(texts[:5]))
