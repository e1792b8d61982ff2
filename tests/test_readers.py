"""sprokr's file readers and column types on malformed files: a :class:`DataFileError`
naming the file and the line (or the column) of the problem, never another exception,
a crash or a silently wrong table."""
import numpy as np
import pytest

from sprokr.datasets import read_arff
from sprokr.io import DataFileError, read_table

ARFF_HEADER = "@relation r\n@attribute a numeric\n@attribute b numeric\n@data\n"


@pytest.mark.parametrize("data, message", [
    # an index past the attributes made scipy write outside its arrays (a segmentation fault);
    # a smaller one, or a negative one, was silently dropped
    ("{0 1, 100000000 7}\n", "line 5: attribute index 100000000 out of range [0, 2)"),
    ("{0 1, 2 2}\n", "line 5: attribute index 2 out of range [0, 2)"),
    ("{0 1}\n{-1 2}\n", "line 6: attribute index -1 out of range [0, 2)"),
    ("{0 1, 0 2}\n", "line 5: attribute index 0 given twice"),  # scipy added the two up
    ("{0 1, 1}\n", "line 5: sparse entry '1'; expected '<index> <value>'"),
    ("{x 1}\n", "line 5: sparse entry 'x 1': the attribute index 'x' is not an integer"),
    ("{0 1\n", "line 5: a sparse row starts with '{' and ends with '}'"),
    ("{0 1}\n1,2\n", "line 6: a dense row in a sparse ARFF file (the first data row, line 5, sets the format)"),
    ("1,2\n{0 1}\n", "line 6: a sparse row in a dense ARFF file"),
    ("{1 abc}\n", "line 5: attribute 'b' holds 'abc'; expected a number or ?"),
    ("1,2\n1,abc\n", "line 6: attribute 'b' holds 'abc'; expected a number or ?"),
    ("1,2\n1,2,3\n", "line 6: 3 values, but 2 attributes are declared"),
    ("1,2\n\n% a comment\n1\n", "line 8: 1 values, but 2 attributes are declared"),
])
def test_a_malformed_arff_row_names_the_file_and_line(tmp_path, data, message):
    path = tmp_path / "bad.arff"
    path.write_text(ARFF_HEADER + data)
    for read in (read_arff, read_table):
        with pytest.raises(DataFileError) as exc:
            read(path)
        assert str(exc.value).startswith(f"{path} {message}"), str(exc.value)


@pytest.mark.parametrize("text, message", [
    ("", "no @attribute declared (an empty file?)"),  # was IndexError: tuple index out of range
    ("% only a comment\n", "no @attribute declared"),
    ("garbage\n", "line 1: expected @relation, @attribute or @data before the data rows, got 'garbage'"),
    ("@relation r\n@attribute\n@data\n", "line 2: expected '@attribute <name> <type>', got '@attribute'"),
])
def test_an_arff_file_without_a_header_names_the_file(tmp_path, text, message):
    path = tmp_path / "bad.arff"
    path.write_text(text)
    for read in (read_arff, read_table):
        with pytest.raises(DataFileError) as exc:
            read(path)
        assert str(exc.value).startswith(str(path)) and message in str(exc.value), str(exc.value)


def test_arff_rows_keep_their_file_lines(tmp_path):
    path = tmp_path / "ok.arff"
    path.write_text("% comment\n" + ARFF_HEADER + "{0 1, 1 ?}\n\n{}\n{1 2.5}\n")
    X, names, lines = read_arff(path, return_lines=True)
    assert names == ["a", "b"] and lines == [6, 8, 9]
    np.testing.assert_array_equal(X.toarray(), [[1, np.nan], [0, 0], [0, 2.5]])
    table = read_table(path)
    assert table.lines == [6, 8, 9] and table.where(2) == f"{path} line 9"
    path.write_text(ARFF_HEADER + "1,2\n?,3\n")
    X, names = read_arff(path, missing=0.0)
    np.testing.assert_array_equal(X, [[1, 2], [0, 3]])
    path.write_text(ARFF_HEADER)  # no data rows: an empty table (the command line says it holds no samples)
    assert read_arff(path)[0].shape == (0, 2) and len(read_table(path)) == 0


@pytest.mark.parametrize("text, message", [
    # the quote on line 3 swallows the rest of the file: reported at its end before ("line 5: 2 fields")
    ("1,2,3\n4,\"5,6\n7,8,9\n10,11,12\n",
     "line 3: 2 fields, the header has 3 (the record runs from line 3 to the end of the file, line 5: a quoted "
     "field opened on line 3 is never closed)"),
    # in the last column the field count is right: the rest of the file was read as one value
    ("1,2,3\n4,5,\"6\n7,8,9\n", "line 3: a quoted field opened on this line is never closed (an unterminated "
                                "quote: the field runs to the end of the file, line 4)"),
    # closed by a quote further down: the fields of several lines run together
    ("1,2,3\n4,\"5,6\n7,8\",9,1\n10,11,12\n",
     "line 3: 4 fields, the header has 3 (the record runs from line 3 to line 4 inside a quoted field: an "
     "unterminated quote on line 3 is likely)"),
    ("1," + "1" * 200_000 + ",3\n", "line 2: field larger than field limit"),
], ids=["mid-file", "last column", "closed later", "huge field"])
def test_an_unterminated_csv_quote_is_reported_where_it_opens(tmp_path, text, message):
    path = tmp_path / "q.csv"
    path.write_text("a,b,c\n" + text)
    with pytest.raises(DataFileError) as exc:
        read_table(path)
    assert str(exc.value).startswith(f"{path} {message}"), str(exc.value)


def test_quoted_line_breaks_are_read_and_rows_keep_their_first_line(tmp_path):
    path = tmp_path / "q.csv"
    path.write_text('a,b,c\n1,"x\ny",3\n4,5,6\n7,8,"last\nfield"\n\n')
    table = read_table(path)
    assert table.lines == [2, 4, 5] and table.columns["b"] == ["x\ny", "5", "8"]
    assert table.columns["c"][-1] == "last\nfield"


# -- column types --------------------------------------------------------------------------
def npz_table(tmp_path, **arrays):
    np.savez(tmp_path / "t.npz", **arrays)
    return read_table(tmp_path / "t.npz")


@pytest.mark.parametrize("column, what", [
    (np.arange(3) + 1j, "complex numbers (dtype complex128)"),  # was accepted, the imaginary part dropped
    (np.array(["2020-01-01"] * 3, dtype="M8[D]"), "dates (dtype datetime64[D])"),
    (np.arange(3).astype("m8[s]"), "time spans (dtype timedelta64[s])"),
    (np.zeros(3, dtype=[("a", "f8"), ("b", "f8")]), "records (dtype [('a', '<f8'), ('b', '<f8')])"),
], ids=["complex", "datetime", "timedelta", "structured"])
def test_a_numeric_column_of_another_kind_of_array_is_refused(tmp_path, column, what):
    from sprokr.io import ColumnSpec

    table = npz_table(tmp_path, x=column, y=np.zeros(3))
    with pytest.raises(DataFileError) as exc:
        ColumnSpec(["y", "x"]).read(table)
    assert str(exc.value) == f"{table.path}: column 'x' holds {what}; expected real numbers"


def test_messages_quote_values_not_numpy_reprs(tmp_path):
    from sprokr.io import ColumnSpec

    table = npz_table(tmp_path, s=np.array(["1", "a"]), lab=np.array([0.0, 2.0]))
    with pytest.raises(DataFileError, match=r"line 2: column 's' holds 'a'; expected a number$"):  # np.str_('a')
        ColumnSpec(["s"]).read(table)
    with pytest.raises(DataFileError, match=r"line 2: label column 'lab' holds 2\.0; expected 0 or 1$"):
        ColumnSpec(["lab"], "labels").read(table)  # np.float64(2.0)


def test_a_labels_column_must_be_one_dimensional(tmp_path):
    from sprokr.column_types import LabelColumns
    from sprokr.io import ColumnSpec

    # 4 label columns under 3 names: the predictions' names were paired with the wrong labels
    table = npz_table(tmp_path, sports=np.ones((3, 2)), music=np.zeros(3), science=np.ones(3))
    with pytest.raises(DataFileError) as exc:
        ColumnSpec(["sports", "music", "science"], "labels").read(table)
    assert str(exc.value).startswith(f"{table.path}: label column 'sports' has shape (3, 2); a labels column holds "
                                     "one 0/1 value per row")
    assert LabelColumns().format(np.array([1, 0, 1]), ["a", "b", "c"]) == "a;c"
    with pytest.raises(ValueError, match="a prediction holds 4 labels but the .output. table names 3"):
        LabelColumns().format(np.array([1, 1, 1, 1]), ["a", "b", "c"])


def test_a_text_column_of_bytes_is_decoded_as_utf8(tmp_path):
    from sprokr.io import ColumnSpec

    table = npz_table(tmp_path, t=np.array(["héllo".encode(), b"world"]))
    assert ColumnSpec(["t"], "text").read(table) == ["héllo", "world"]  # was "b'h\\xc3\\xa9llo'"
    table = npz_table(tmp_path, t=np.array([b"ok", b"\xff\xfe"]))
    with pytest.raises(DataFileError, match=r"t\.npz line 2: column 't' holds bytes that are not UTF-8 text "
                                            r"\(invalid start byte at byte 0\)"):
        ColumnSpec(["t"], "text").read(table)


def test_a_smiles_column_of_bytes_is_decoded_as_utf8(tmp_path):
    """The chemistry plugin's smiles column reads strings as the text column does (str()
    made b"CCO" the SMILES "b'CCO'", an invalid molecule)."""
    pytest.importorskip("rdkit")
    from sprokr.io import ColumnSpec

    table = npz_table(tmp_path, s=np.array([b"CCO", b"c1ccccc1"]))
    mols = ColumnSpec(["s"], "smiles").read(table)
    assert len(mols) == 2


@pytest.mark.parametrize("name, text", [
    ("t.csv", '\ufeffx,y\n1,"a\nb"\n\n3,4\n'),
    ("t.tsv", "x\ty\n1\t2\n\n3\t4\n"),
])
def test_gzip_compressed_csv_and_tsv_read_as_the_plain_files(tmp_path, name, text):
    """MOSES ships ``train.csv.gz``: a ``.gz`` CSV / TSV is the table of the plain file (the
    same columns and lines); a file that is not gzip is named, one line."""
    import gzip

    (tmp_path / name).write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / (name + ".gz"), "wt", encoding="utf-8", newline="") as fh:
        fh.write(text)
    plain, packed = read_table(tmp_path / name), read_table(tmp_path / (name + ".gz"))
    assert packed.columns == plain.columns and list(packed.lines) == list(plain.lines) and len(plain) == 2
    (tmp_path / "bad.csv.gz").write_text("x,y\n1,2\n")
    with pytest.raises(DataFileError, match=r"bad\.csv\.gz: cannot be read as CSV .*Not a gzipped file"):
        read_table(tmp_path / "bad.csv.gz")


def test_gzip_compressed_smiles_list_reads_as_the_plain_file(tmp_path):
    pytest.importorskip("sprokr_chem")
    import gzip

    text = "CCO ethanol\n# a comment\n\nc1ccccc1 benzene ring\n"
    (tmp_path / "p.smi").write_text(text)
    with gzip.open(tmp_path / "p.smi.gz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    plain, packed = read_table(tmp_path / "p.smi"), read_table(tmp_path / "p.smi.gz")
    assert packed.columns == plain.columns == {"smiles": ["CCO", "c1ccccc1"], "name": ["ethanol", "benzene ring"]}
    assert list(packed.lines) == list(plain.lines) == [1, 4]
