"""Tokenizers of the sequence encoders: known SMILES tokenizations, round trips, vocabularies."""
import numpy as np
import pytest

from sprokr.models.tokenizers import PAD_INDEX, UNKNOWN_INDEX, SmilesTokenizer, WordTokenizer

SMILES = ["CC(=O)Oc1ccccc1C(=O)O", "C[C@@H](N)C(=O)O", "c1cc[nH]c1", "ClCBr", "C1CC2CC1C%10CC2%10",
          "[NH4+].[Cl-]", "N#CC(F)(F)F", "C/C=C/C"]


@pytest.mark.parametrize("smiles, tokens", [
    ("CC(=O)O", ["C", "C", "(", "=", "O", ")", "O"]),
    ("ClCBr", ["Cl", "C", "Br"]),
    ("c1cc[nH]c1", ["c", "1", "c", "c", "[nH]", "c", "1"]),
    ("C[C@@H](N)C(=O)O", ["C", "[C@@H]", "(", "N", ")", "C", "(", "=", "O", ")", "O"]),
    ("C1CC%10CC1%10", ["C", "1", "C", "C", "%10", "C", "C", "1", "%10"]),
    ("[NH4+].[Cl-]", ["[NH4+]", ".", "[Cl-]"]),
    ("C/C=C\\C", ["C", "/", "C", "=", "C", "\\", "C"]),
    ("N#C", ["N", "#", "C"]),
])
def test_known_smiles_tokenizations(smiles, tokens):
    assert SmilesTokenizer().tokenize(smiles) == tokens


def test_smiles_round_trip_and_padding():
    tok = SmilesTokenizer().fit(SMILES)
    for s in SMILES + ["C{weird}C"]:  # unknown characters are tokens of their own
        assert "".join(tok.tokenize(s)) == s
    ids = tok.transform(SMILES)
    assert ids.dtype == np.int64 and ids.shape == (len(SMILES), tok.max_length_)
    assert tok.max_length_ == max(len(tok.tokenize(s)) for s in SMILES)
    back = tok.inverse_transform(ids)
    assert ["".join(t) for t in back] == SMILES  # every training token is in the vocabulary
    lengths = (ids != PAD_INDEX).sum(axis=1)
    assert list(lengths) == [len(tok.tokenize(s)) for s in SMILES]
    # tokens never seen in training map to <unk>; longer strings are truncated
    new = tok.transform(["[Se]CC" + "C" * 40])
    assert new[0, 0] == UNKNOWN_INDEX and new.shape == (1, tok.max_length_) and (new != PAD_INDEX).all()


def test_vocabulary_order_and_limits():
    tok = SmilesTokenizer(min_count=2).fit(["CCO", "CCN", "CO"])
    # reserved ids first, then by decreasing count (C: 5, O: 2); N (once) is unknown
    assert tok.vocabulary_ == {"<pad>": 0, "<unk>": 1, "C": 2, "O": 3}
    assert tok.transform(["NC"]).tolist() == [[UNKNOWN_INDEX, 2, PAD_INDEX]]
    assert SmilesTokenizer(max_vocabulary=1).fit(["CCO"]).vocabulary_size_ == 3
    assert SmilesTokenizer(max_length=2).fit(["CCO"]).transform(["CCO"]).shape == (1, 2)


def test_word_tokenizer():
    text = "The molecule is a (2S)-2-hydroxy acid; it is a conjugate acid."
    tok = WordTokenizer(min_count=1).fit([text])
    assert tok.tokenize(text)[:8] == ["the", "molecule", "is", "a", "(", "2s", ")", "-"]
    assert WordTokenizer(split_names=False).tokenize(text)[4:7] == ["(2s)-2-hydroxy", "acid", ";"]
    assert WordTokenizer(split_names=False).tokenize("a 2,3-diol.") == ["a", "2,3-diol", "."]
    assert tok.vocabulary_["is"] < tok.vocabulary_["molecule"]  # "is" is seen twice, "molecule" once
    ids = tok.transform(["An acid", ""])
    assert ids[0, 0] == UNKNOWN_INDEX and ids[0, 1] == tok.vocabulary_["acid"] and (ids[1] == PAD_INDEX).all()
    default = WordTokenizer().fit([text, "a second text about an acid"])  # min_count=2
    assert set(default.vocabulary_) == {"<pad>", "<unk>", "a", "acid", "is", "-"}  # seen twice or more


def test_tokenizer_errors():
    with pytest.raises(TypeError, match="sequence of SMILES strings"):
        SmilesTokenizer().fit("CCO")
    with pytest.raises(TypeError, match=r"X\[1\] must be a SMILES string"):
        SmilesTokenizer().fit(["CCO", 3])
    with pytest.raises(ValueError, match="empty"):
        WordTokenizer().fit([])
    with pytest.raises(ValueError, match="min_count"):
        WordTokenizer(min_count=0).fit(["a"])
    with pytest.raises(ValueError, match="max_length"):
        SmilesTokenizer(max_length=0).fit(["C"])
