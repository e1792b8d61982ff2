"""Bad inputs to the command line: one line on stderr naming the file or option, exit code 2,
never a traceback, and nothing done before the output paths are known to be writable."""
import csv
import io
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import numpy as np
import pytest

import sprokr
from sprokr.cli import main
from sprokr.io import OutputPathError, write_csv
from sprokr.registry import Registry

MULTI = '''estimator = "SISOKR"
random_state = 0

[params]
lam = 1e-3
input_sketch = "subsample"
m_x = 60

[input]
columns = ["f0", "f1", "f2", "f3"]

[output]
columns = ["sports", "music", "science"]
type = "labels"

[select]
lams = [1e-3, 1e-1]
'''

RIDGE = '''estimator = "KernelRidgeRegressor"
[params]
lam = 1e-3
[input]
columns = ["f0", "f1", "f2"]
[output]
column = "f3"
'''

HEADER = ["f0", "f1", "f2", "f3", "sports", "music", "science"]


@pytest.fixture(scope="module")
def d(tmp_path_factory):
    """Training / test files, configurations and two fitted models (labels, numeric targets)."""
    d = tmp_path_factory.mktemp("cli_errors")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 4))
    Y = (X[:, :3] + 0.3 * rng.normal(size=(120, 3)) > 0).astype(int)
    for name, sl in (("train.csv", slice(0, 100)), ("test.csv", slice(100, 120))):
        with open(d / name, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(HEADER)
            w.writerows([[*map(float, x), *y] for x, y in zip(X[sl], Y[sl])])
    (d / "header_only.csv").write_text(",".join(HEADER) + "\n")
    (d / "model.toml").write_text(MULTI)
    (d / "ridge.toml").write_text(RIDGE)
    assert main(["fit", "--config", str(d / "model.toml"), "--train", str(d / "train.csv"), "-o",
                 str(d / "m.sprokr")]) == 0
    assert main(["fit", "--config", str(d / "ridge.toml"), "--train", str(d / "train.csv"), "-o",
                 str(d / "r.sprokr")]) == 0
    return d


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def one_line_error(code, err, *fragments):
    """Exit code 2, exactly one line on stderr, holding every fragment, no traceback."""
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and "error:" in lines[0] and "Traceback" not in err, err
    for f in fragments:
        assert str(f) in lines[0], (f, err)
    return lines[0]


# -- files without samples --------------------------------------------------------------
@pytest.mark.parametrize("command", [
    ["fit", "--config", "{d}/model.toml", "--train", "{empty}", "-o", "{tmp}/m.sprokr"],
    ["predict", "{d}/m.sprokr", "--input", "{empty}", "-o", "{tmp}/p.csv"],
    ["evaluate", "{d}/m.sprokr", "--test", "{empty}"],
    ["evaluate", "{d}/r.sprokr", "--test", "{empty}"],  # numeric targets (printed nan or a reshape error)
    ["predict", "{d}/m.sprokr", "--input", "{d}/test.csv", "--candidates", "{empty}", "-o", "{tmp}/p.csv"],
    ["select", "--config", "{d}/model.toml", "--train", "{empty}", "-o", "{tmp}/c.toml"],
])
@pytest.mark.parametrize("empty", ["header_only.csv", "zero_rows.npz"])
def test_a_file_without_samples_is_one_line_naming_it(d, tmp_path, capsys, command, empty):
    if empty.endswith(".npz"):
        np.savez(tmp_path / empty, **{h: np.zeros(0) for h in HEADER})
        path = tmp_path / empty
    else:
        path = d / empty
    argv = [a.format(d=d, empty=path, tmp=tmp_path) for a in command]
    code, out, err = run(argv, capsys)
    one_line_error(code, err, path, "no samples")  # one line: no numpy RuntimeWarnings before it
    assert not list(tmp_path.glob("*.sprokr")) and not list(tmp_path.glob("*.csv"))


# -- options -----------------------------------------------------------------------------
@pytest.mark.parametrize("command", ["predict", "evaluate"])
@pytest.mark.parametrize("k", ["0", "-3", "two"])
def test_top_k_must_be_a_positive_integer(d, tmp_path, capsys, command, k):
    data = ["--input", d / "test.csv", "-o", tmp_path / "p.csv"] if command == "predict" else ["--test", d / "test.csv"]
    code, _, err = run([command, d / "m.sprokr", *data, "--top-k", k], capsys)
    one_line_error(code, err, f"sprokr {command}: error: argument --top-k:", k)
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("option", [["--top-k", "3"], ["--candidates", "{d}/test.csv"]])
def test_ranking_options_are_refused_for_a_model_that_predicts_values(d, tmp_path, capsys, option):
    option = [o.format(d=d) for o in option]
    code, _, err = run(["predict", d / "r.sprokr", "--input", d / "test.csv", "-o", tmp_path / "p.csv", *option],
                       capsys)
    one_line_error(code, err, option[0], "KernelRidgeRegressor predicts values")
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize("command, message", [
    # rc 0 before, the file never read
    (["evaluate", "{d}/r.sprokr", "--test", "{none}", "--candidates", "{none}"],
     "--candidates: KernelRidgeRegressor predicts values, it does not rank candidates"),
    (["evaluate", "{tmp}/s.sprokr", "--test", "{none}", "--candidates", "{d}/test.csv"],
     "--candidates: {tmp}/s.sprokr predicts 'numeric' outputs, evaluated by MSE and R^2 without a candidate pool"),
    (["evaluate", "{d}/m.sprokr", "--test", "{none}", "--top-k", "3"],
     "--top-k: top-k accuracy is reported for outputs ranked in a candidate pool (e.g. molecules); {d}/m.sprokr "
     "predicts 'labels' outputs, evaluated by f1_samples and exact_match"),
    (["evaluate", "{d}/r.sprokr", "--test", "{none}", "--top-k", "3"], "'numeric' outputs, evaluated by MSE and R^2"),
    (["evaluate", "{d}/m.sprokr", "--test", "{none}", "--candidate-column", "sports"],
     "--candidate-column sports: names the column of the candidate pool, and no --candidates file is given"),
    (["predict", "{d}/m.sprokr", "--input", "{none}", "--candidate-column", "sports"],
     "--candidate-column sports: names the column of the candidate pool, and no --candidates file is given"),
], ids=["evaluate --candidates, values", "evaluate --candidates, numeric outputs", "evaluate --top-k, labels",
        "evaluate --top-k, numeric", "evaluate --candidate-column alone", "predict --candidate-column alone"])
def test_options_a_command_cannot_use_are_refused_before_reading_data(d, tmp_path, capsys, command, message):
    if "{tmp}/s.sprokr" in command:  # SISOKR with numeric outputs
        (tmp_path / "s.toml").write_text(MULTI.replace('columns = ["sports", "music", "science"]\ntype = "labels"',
                                                       'column = "f3"').replace('"f2", "f3"]', '"f2"]'))
        assert run(["fit", "--config", tmp_path / "s.toml", "--train", d / "train.csv", "-o", tmp_path / "s.sprokr"],
                   capsys)[0] == 0
    argv = [a.format(d=d, tmp=tmp_path, none=tmp_path / "none.csv") for a in command]
    code, out, err = run(argv, capsys)
    one_line_error(code, err, message.format(d=d, tmp=tmp_path))  # the test / input file does not exist: not read
    assert out == ""


def test_predict_json_needs_an_output_file(d, capsys):
    code, out, err = run(["predict", d / "m.sprokr", "--input", d / "test.csv", "--json"], capsys)
    one_line_error(code, err, "--json", "-o FILE")
    assert out == ""  # no CSV passed off as the JSON document


@pytest.mark.parametrize("fraction", ["0", "1", "1.5", "-0.2", "x"])
def test_validation_fraction_is_checked_when_parsed(d, tmp_path, capsys, fraction):
    code, _, err = run(["select", "--config", d / "model.toml", "--train", d / "train.csv", "-o", tmp_path / "c.toml",
                        "--validation-fraction", fraction], capsys)
    one_line_error(code, err, "--validation-fraction", fraction)


def test_usage_errors_are_one_line_too(d, capsys):
    code, _, err = run(["predict", d / "m.sprokr"], capsys)  # --input missing
    one_line_error(code, err, "sprokr predict: error:", "--input", "sprokr predict --help")
    code, _, err = run(["fitt"], capsys)
    one_line_error(code, err, "sprokr: error:", "fitt")


# -- output paths, checked before any work -------------------------------------------------
WRITERS = {
    "fit": ["fit", "--config", "{d}/model.toml", "--train", "{train}", "-o", "{out}"],
    "predict": ["predict", "{d}/m.sprokr", "--input", "{train}", "-o", "{out}"],
    "select": ["select", "--config", "{d}/model.toml", "--train", "{train}", "-o", "{out}"],
    "select --figure": ["select", "--config", "{d}/model.toml", "--train", "{train}", "-o", "{tmp}/c.toml",
                        "--figure", "{out}"],
}


@pytest.mark.parametrize("command", list(WRITERS))
def test_a_missing_output_directory_is_reported_before_reading_any_data(d, tmp_path, capsys, command):
    # the data file does not exist either: the output path is checked first, so its error is the one
    # reported (before, predict failed with a raw "[Errno 2]" after predicting, fit after fitting)
    argv = [a.format(d=d, tmp=tmp_path, train=tmp_path / "no_such_data.csv", out=tmp_path / "missing_dir" / "x.png")
            for a in WRITERS[command]]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "missing_dir", "does not exist")
    assert "no_such_data" not in err


@pytest.mark.parametrize("command", list(WRITERS))
def test_an_output_path_that_is_a_directory_is_one_line(d, tmp_path, capsys, command):
    (tmp_path / "adir.png").mkdir()
    argv = [a.format(d=d, tmp=tmp_path, train=d / "train.csv", out=tmp_path / "adir.png") for a in WRITERS[command]]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, "adir.png", "is a directory")


def test_a_config_path_that_is_a_directory_is_one_line(d, tmp_path, capsys):
    code, _, err = run(["fit", "--config", str(tmp_path), "--train", str(d / "train.csv"),
                        "-o", str(tmp_path / "m.sprokr")], capsys)
    one_line_error(code, err, str(tmp_path), "a directory, not a configuration file")


def unwritable_directory(tmp_path):
    """A directory where creating a file fails: a read-only one, or for root (who may write
    anywhere on a normal file system) sysfs, which refuses new files to everyone."""
    if os.geteuid() != 0:
        ro = tmp_path / "read_only"
        ro.mkdir()
        ro.chmod(0o555)
        return ro
    if Path("/sys/fs").is_dir():
        return Path("/sys/fs")
    pytest.skip("running as root without sysfs: no directory refuses writes")


@pytest.mark.parametrize("command", list(WRITERS))
def test_an_output_path_in_an_unwritable_directory_is_reported_before_any_work(d, tmp_path, capsys, command):
    ro = unwritable_directory(tmp_path)
    argv = [a.format(d=d, tmp=tmp_path, train=tmp_path / "no_such_data.csv", out=ro / "x.png")
            for a in WRITERS[command]]
    code, _, err = run(argv, capsys)
    one_line_error(code, err, ro, "cannot create files")


def test_a_failed_write_names_the_output_path_and_leaves_no_partial_file(tmp_path):
    ro = unwritable_directory(tmp_path)
    with pytest.raises(OutputPathError, match=f"{ro}/p.csv: cannot be written"):
        write_csv(ro / "p.csv", ["a"], [[1]])
    (tmp_path / "p.csv").write_text("old")
    (tmp_path / "p.csv").chmod(0o640)
    write_csv(tmp_path / "p.csv", ["a"], [[1], [2]])
    assert (tmp_path / "p.csv").read_text().split() == ["a", "1", "2"]
    assert (tmp_path / "p.csv").stat().st_mode & 0o777 == 0o640  # a replaced file keeps its permissions
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_an_output_path_that_is_an_input_is_refused(d, tmp_path, capsys):
    train = tmp_path / "train.csv"
    train.write_bytes((d / "train.csv").read_bytes())
    code, _, err = run(["fit", "--config", d / "model.toml", "--train", train, "-o", train], capsys)
    one_line_error(code, err, "is also an input")
    assert train.read_bytes() == (d / "train.csv").read_bytes()


@pytest.mark.parametrize("figure", ["f.png", "sub/../f.png", "link.png"])
def test_two_outputs_of_one_command_must_be_different_files(d, tmp_path, capsys, figure):
    # the check compared existing files only: rc 0, and the figure replaced the chosen configuration
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.png").symlink_to(tmp_path / "f.png")  # dangling until f.png is written
    code, _, err = run(["select", "--config", d / "model.toml", "--train", d / "train.csv", "-o", tmp_path / "f.png",
                        "--figure", tmp_path / figure], capsys)
    one_line_error(code, err, f"--figure {tmp_path / figure}: is also the -o/--output file of this command")
    assert not (tmp_path / "f.png").exists()


def test_a_model_is_never_moved_over_a_pipe_or_device(d, tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, _, err = run(["fit", "--config", d / "model.toml", "--train", d / "train.csv", "-o", fifo], capsys)
    one_line_error(code, err, "fifo", "not a regular file")
    assert fifo.is_fifo()


def test_predictions_are_written_into_a_pipe_and_through_a_symbolic_link(d, tmp_path, capsys):
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    code, _, _ = run(["predict", d / "m.sprokr", "--input", d / "test.csv", "-o", fifo], capsys)
    reader.join(timeout=60)
    assert code == 0 and received and len(received[0].splitlines()) == 21 and fifo.is_fifo()
    (tmp_path / "real.csv").write_text("old")
    (tmp_path / "link.csv").symlink_to(tmp_path / "real.csv")
    code, _, _ = run(["predict", d / "m.sprokr", "--input", d / "test.csv", "-o", tmp_path / "link.csv"], capsys)
    assert code == 0 and (tmp_path / "link.csv").is_symlink()
    assert len((tmp_path / "real.csv").read_text().splitlines()) == 21


def test_predictions_to_dev_stdout_go_to_standard_output_whatever_it_is(d, tmp_path):
    # stdout an anonymous pipe: /dev/stdout -> /proc/self/fd/1 -> 'pipe:[...]', which realpath cannot
    # name ("cannot be written: No such file or directory"); stdout a file opened by `>> log`: replaced
    # by a new file (the log lost), and --json's summary would share standard output with the predictions
    argv = [sys.executable, "-m", "sprokr", "predict", str(d / "m.sprokr"), "--input", str(d / "test.csv"),
            "-o", "/dev/stdout"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    res = subprocess.run(argv, capture_output=True, text=True, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines()[0] == "query,prediction" and len(res.stdout.splitlines()) == 22, res.stdout
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    with open(log, "a") as fh:
        res = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE, text=True, env=env)
    assert res.returncode == 0, res.stderr
    lines = log.read_text().splitlines()
    assert lines[0] == "earlier line" and lines[1] == "query,prediction" and len(lines) == 23, lines
    with open(tmp_path / "out.txt", "w") as fh:
        res = subprocess.run(argv + ["--json"], stdout=fh, stderr=subprocess.PIPE, text=True, env=env)
    one_line_error(res.returncode, res.stderr, "--json", "-o /dev/stdout is standard output too")


def test_samples_export_to_an_existing_file_is_one_line(tmp_path, capsys):
    (tmp_path / "afile").write_text("keep me")
    code, _, err = run(["samples", "--export", tmp_path / "afile"], capsys)
    one_line_error(code, err, "afile", "not a directory")
    assert (tmp_path / "afile").read_text() == "keep me"


# -- unreadable data files -----------------------------------------------------------------
def npz_claiming(shape, data=b"\0" * 32):
    """An NPZ archive whose one array's .npy header claims ``shape`` over ``data``."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": shape})
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        z.writestr("f0.npy", buf.getvalue() + data)
    return out.getvalue()


def bad_npz(kind, tmp_path):
    good = io.BytesIO()
    np.savez(good, **{h: np.zeros(5) for h in HEADER})
    if kind == "header claims 2**40 elements":
        return npz_claiming((2 ** 40,))
    if kind == "header claims more rows than stored":
        return npz_claiming((5, 4))
    if kind == "cut in half":
        return good.getvalue()[: len(good.getvalue()) // 2]
    if kind == "a .npy file, not an archive":
        b = io.BytesIO()
        np.save(b, np.zeros(3))
        return b.getvalue()
    if kind == "random bytes":
        return np.random.default_rng(0).bytes(300)
    if kind == "0-d array as a column":
        b = io.BytesIO()
        np.savez(b, **{h: np.zeros(5) for h in HEADER[1:]}, f0=np.float64(1.0))
        return b.getvalue()
    if kind == "object array":
        b = io.BytesIO()
        np.savez(b, f0=np.array([{"a": 1}, None], dtype=object))
        return b.getvalue()
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["header claims 2**40 elements", "header claims more rows than stored",
                                  "cut in half", "a .npy file, not an archive", "random bytes", "object array",
                                  "0-d array as a column"])
def test_a_corrupt_npz_is_one_line_naming_it(d, tmp_path, capsys, kind):
    path = tmp_path / "bad.npz"
    path.write_bytes(bad_npz(kind, tmp_path))
    code, _, err = run(["predict", d / "m.sprokr", "--input", path, "-o", tmp_path / "p.csv"], capsys)
    one_line_error(code, err, path)
    if kind.startswith("header claims"):
        assert "its header says shape" in err  # refused from the header, nothing allocated
    if kind == "0-d array as a column":
        assert "column 'f0' is a single value" in err


def test_an_arff_sparse_index_out_of_range_is_one_line_not_a_crash(tmp_path, capsys):
    # the index was given to scipy unchecked: a segmentation fault (exit code 139)
    (tmp_path / "sp.arff").write_text("@relation r\n@attribute a numeric\n@attribute b numeric\n@data\n"
                                      "{0 1, 1 2}\n{0 1, 100000000 7}\n")
    (tmp_path / "r.toml").write_text('estimator = "KernelRidgeRegressor"\n[input]\ncolumns = ["a"]\n'
                                     '[output]\ncolumn = "b"\n')
    code, _, err = run(["fit", "--config", tmp_path / "r.toml", "--train", tmp_path / "sp.arff", "-o",
                        tmp_path / "m.sprokr"], capsys)
    one_line_error(code, err, f"{tmp_path / 'sp.arff'} line 6: attribute index 100000000 out of range [0, 2)")
    assert not (tmp_path / "m.sprokr").exists()


@pytest.mark.parametrize("change, message", [
    # 4 label columns under 3 names: the predictions were written with the wrong names
    ({"sports": np.ones((100, 2))}, "train.npz: label column 'sports' has shape (100, 2); a labels column holds one "
                                    "0/1 value per row"),
    # accepted with numpy's ComplexWarning only: the imaginary part dropped
    ({"f0": np.ones(100) + 1j}, "train.npz: column 'f0' holds complex numbers (dtype complex128); expected real "
                                "numbers"),
], ids=["2-D labels", "complex"])
def test_an_npz_column_of_the_wrong_shape_or_kind_is_one_line(d, tmp_path, capsys, change, message):
    rng = np.random.default_rng(0)
    arrays = {h: rng.normal(size=100) for h in HEADER[:4]}
    arrays.update({h: rng.integers(0, 2, 100) for h in HEADER[4:]}, **change)
    np.savez(tmp_path / "train.npz", **arrays)
    code, _, err = run(["fit", "--config", d / "model.toml", "--train", tmp_path / "train.npz", "-o",
                        tmp_path / "m.sprokr"], capsys)
    one_line_error(code, err, message)
    assert not (tmp_path / "m.sprokr").exists()


def test_numeric_cells_must_be_finite_and_are_named_by_line(d, tmp_path, capsys):
    lines = (d / "test.csv").read_text().splitlines()
    lines[2] = "nan" + lines[2][lines[2].index(","):]
    lines[4] = lines[4][: lines[4].rindex(",")] + ",inf"
    (tmp_path / "nan.csv").write_text("\n".join(lines) + "\n")
    code, _, err = run(["evaluate", d / "m.sprokr", "--test", tmp_path / "nan.csv"], capsys)
    one_line_error(code, err, "nan.csv line 3: column 'f0' holds nan; expected a finite number")


def test_csv_header_byte_order_mark_and_duplicate_columns(d, tmp_path, capsys):
    text = (d / "test.csv").read_text()
    (tmp_path / "bom.csv").write_bytes(b"\xef\xbb\xbf" + text.encode())
    code, _, _ = run(["predict", d / "m.sprokr", "--input", tmp_path / "bom.csv", "-o", tmp_path / "p.csv"], capsys)
    assert code == 0 and len((tmp_path / "p.csv").read_text().splitlines()) == 21
    (tmp_path / "dup.csv").write_text(text.replace("f0,f1", "f0,f0", 1))
    code, _, err = run(["predict", d / "m.sprokr", "--input", tmp_path / "dup.csv"], capsys)
    one_line_error(code, err, "dup.csv line 1", "'f0' more than once")


def test_blank_lines_before_the_header_and_a_configuration_byte_order_mark(d, tmp_path, capsys):
    # were "empty file (expected a header line)" for a file of 20 rows (blank lines between rows are
    # skipped), and "not valid TOML: Invalid statement (at line 1, column 1)" for a model file that
    # Notepad saved with a byte-order mark (accepted in CSV files)
    text = (d / "test.csv").read_text()
    (tmp_path / "blank.csv").write_text("\n \n" + text)
    code, _, err = run(["predict", d / "m.sprokr", "--input", tmp_path / "blank.csv", "-o", tmp_path / "p.csv"],
                       capsys)
    assert code == 0 and len((tmp_path / "p.csv").read_text().splitlines()) == 21, err
    (tmp_path / "blank_only.csv").write_text("\n\n")
    code, _, err = run(["predict", d / "m.sprokr", "--input", tmp_path / "blank_only.csv"], capsys)
    one_line_error(code, err, "blank_only.csv: only blank lines (expected a header line)")
    (tmp_path / "bom.toml").write_bytes(b"\xef\xbb\xbf" + MULTI.encode())
    code, _, err = run(["fit", "--config", tmp_path / "bom.toml", "--train", d / "train.csv", "-o",
                        tmp_path / "m.sprokr"], capsys)
    assert code == 0 and (tmp_path / "m.sprokr").is_file(), err


def test_a_model_error_names_the_step_and_the_file(tmp_path, capsys):
    # an array column: the query file's X has 3 features, the training file's 4
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "train.npz", X=rng.normal(size=(40, 4)), y=rng.normal(size=40))
    np.savez(tmp_path / "q.npz", X=rng.normal(size=(5, 3)))
    (tmp_path / "r.toml").write_text(RIDGE.replace('["f0", "f1", "f2"]', '["X"]').replace('"f3"', '"y"'))
    assert run(["fit", "--config", tmp_path / "r.toml", "--train", tmp_path / "train.npz", "-o",
                tmp_path / "r.sprokr"], capsys)[0] == 0
    code, _, err = run(["predict", tmp_path / "r.sprokr", "--input", tmp_path / "q.npz", "-o", tmp_path / "p.csv"],
                       capsys)
    one_line_error(code, err, "predicting", "q.npz", "3 features")


def test_a_query_file_that_does_not_fit_the_stored_scaling_is_named(d, tmp_path, capsys):
    # f0 of 2 columns: "[input] the stored scaling has 2 columns, the data 3", naming neither file nor model
    (tmp_path / "std.toml").write_text(RIDGE.replace('["f0", "f1", "f2"]', '["f0", "f1"]\nstandardize = true'))
    assert run(["fit", "--config", tmp_path / "std.toml", "--train", d / "train.csv", "-o", tmp_path / "std.sprokr"],
               capsys)[0] == 0
    np.savez(tmp_path / "q.npz", f0=np.ones((3, 2)), f1=np.ones(3))
    code, _, err = run(["predict", tmp_path / "std.sprokr", "--input", tmp_path / "q.npz", "-o", tmp_path / "p.csv"],
                       capsys)
    one_line_error(code, err, f"{tmp_path / 'q.npz'}: column(s) 'f0', 'f1': [input] standardize = true: the model's "
                              "stored scaling (its training file's means and deviations) has 2 columns, the data 3")


@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_model_file_holding_another_object_says_what_it_holds(d, tmp_path, capsys, command):
    # "AttributeError: 'CandidateIndex' object has no attribute 'predict'"
    from sprokr.persistence import read_manifest

    model = sprokr.load(d / "m.sprokr")
    index = model.make_candidate_index(np.eye(3))
    index.save(tmp_path / "index.sprokr", metadata=read_manifest(d / "m.sprokr")["metadata"])
    data = ["--input", d / "test.csv", "-o", tmp_path / "p.csv"] if command == "predict" else ["--test", d / "test.csv"]
    code, _, err = run([command, tmp_path / "index.sprokr", *data], capsys)
    one_line_error(code, err, f"{tmp_path / 'index.sprokr'}: holds an object of type CandidateIndex, not a model")
    assert not (tmp_path / "p.csv").exists()


def test_a_directory_as_data_or_model_file_is_one_line(d, tmp_path, capsys):
    code, _, err = run(["predict", tmp_path, "--input", d / "test.csv"], capsys)
    one_line_error(code, err, f"error: {tmp_path}: is a directory, not a model file")
    # the path and the reason, as for data files (was "error: FileNotFoundError: <path>: ...")
    code, _, err = run(["evaluate", tmp_path / "nope.sprokr", "--test", d / "test.csv"], capsys)
    one_line_error(code, err, f"error: {tmp_path / 'nope.sprokr'}: no such model file")
    (tmp_path / "x.csv").mkdir()
    code, _, err = run(["predict", d / "m.sprokr", "--input", tmp_path / "x.csv"], capsys)
    one_line_error(code, err, "x.csv", "is a directory")


# -- the model configuration ---------------------------------------------------------------
@pytest.mark.parametrize("change, message", [
    (("[params]\nlam = 1e-3", "params = 3\n[xparams]\nlam = 1e-3"), "unknown keys ['xparams']"),
    (("[params]\nlam = 1e-3\ninput_sketch = \"subsample\"\nm_x = 60\n", "params = 3\n"),
     "'params' must be a table ([params] followed by its keys), got an integer (3)"),
    (("[params]\nlam = 1e-3\ninput_sketch = \"subsample\"\nm_x = 60\n", "params = [1, 2]\n"),
     "'params' must be a table"),
    (("m_x = 60", "m_x = 60\ninput_kernel_params = 5"),
     "[params] input_kernel_params must be a table of the component's parameters (e.g. input_kernel_params = "
     "{sigma2 = 1.0}), got an integer (5)"),
    (('estimator = "SISOKR"', "estimator = 3"), "'estimator' must be an estimator name (a string), got an integer"),
    (("random_state = 0", 'random_state = "zero"'), "'random_state' must be an integer"),
    (("random_state = 0", "random_state = true"), "'random_state' must be an integer"),
    (("random_state = 0", "random_state = -1"), "'random_state' must be an integer"),
    (("random_state = 0\n", "random_state = 0\nselect = 5\n", "[select]\nlams = [1e-3, 1e-1]\n", ""),
     "'select' must be a table"),
    (("lams = [1e-3, 1e-1]", 'lams = "small"'), "[select] lams must be a list of numbers > 0, got a string"),
    (("lams = [1e-3, 1e-1]", "lams = [1e-3, -1.0]"), "[select] lams must be a list of numbers > 0"),
    (("lams = [1e-3, 1e-1]", "m_x_grid = [0, 10]"), "[select] m_x_grid must be a list of integers >= 1"),
    (("lams = [1e-3, 1e-1]", "param_grid = 3"), "[select] param_grid must be a table of lists"),
    (("lams = [1e-3, 1e-1]", "nope = 1"), "[select] has unknown keys ['nope']"),
    # were accepted: 'columns' read, 'column' ignored; a feature or label read twice
    (('columns = ["f0", "f1", "f2", "f3"]', 'columns = ["f0", "f1", "f2", "f3"]\ncolumn = "f3"'),
     "[input] has both 'column' ('f3') and 'columns' (['f0', 'f1', 'f2', 'f3']); give one of them"),
    (('columns = ["f0", "f1", "f2", "f3"]', 'columns = ["f0", "f1", "f1", "f2"]'),
     "[input] names the column(s) ['f1'] more than once"),
    (('columns = ["sports", "music", "science"]', 'columns = ["sports", "music", "sports"]'),
     "[output] names the column(s) ['sports'] more than once"),
])
def test_configuration_structure_errors_name_the_key(d, tmp_path, capsys, change, message):
    text = MULTI
    for old, new in zip(change[::2], change[1::2]):
        assert old in text
        text = text.replace(old, new)
    (tmp_path / "bad.toml").write_text(text)
    # the training file does not exist: the configuration is checked before any data is read
    code, _, err = run(["fit", "--config", tmp_path / "bad.toml", "--train", tmp_path / "none.csv",
                        "-o", tmp_path / "m.sprokr"], capsys)
    one_line_error(code, err, "bad.toml", message)


@pytest.mark.parametrize("estimator, message", [
    # was "TypeError: DSOKREnsemble.__init__() missing 1 required positional argument: 'estimator' (run again
    # with --traceback ...)", not naming the configuration
    ("DSOKREnsemble", "DSOKREnsemble cannot be built from a configuration file (DSOKREnsemble.__init__() missing 1 "
                      "required positional argument: 'estimator'); use it from Python"),
    # was "NotImplementedError: NotImplementedError (run again with --traceback ...)"
    ("SequenceRegressor", "SequenceRegressor is the base class of SmilesRegressor and TextRegressor, without a "
                          "tokenizer: use one of them"),
])
def test_an_estimator_a_configuration_cannot_build_is_named_before_reading_data(d, tmp_path, capsys, estimator,
                                                                                  message):
    (tmp_path / "e.toml").write_text(RIDGE.replace("KernelRidgeRegressor", estimator).replace("lam = 1e-3", ""))
    code, _, err = run(["fit", "--config", tmp_path / "e.toml", "--train", tmp_path / "none.csv", "-o",
                        tmp_path / "m.sprokr"], capsys)
    one_line_error(code, err, "e.toml: ", message)


def test_standardize_in_output_is_a_configuration_error_before_reading_data(d, tmp_path, capsys):
    # it passed the check, then fit failed with "[input] standardize = true but no training statistics"
    (tmp_path / "r.toml").write_text(RIDGE.replace('column = "f3"', 'column = "f3"\nstandardize = true'))
    code, _, err = run(["fit", "--config", tmp_path / "r.toml", "--train", tmp_path / "none.csv", "-o",
                        tmp_path / "m.sprokr"], capsys)
    one_line_error(code, err, "r.toml: [output] standardize applies to inputs only")
    assert "none.csv" not in err


def test_select_refuses_an_estimator_without_lam_before_reading_data(d, tmp_path, capsys):
    # DSOKR's ridge is its regressor's (MLPSurrogate and the other regressors now take lam)
    (tmp_path / "dsokr.toml").write_text('estimator = "DSOKR"\n[input]\ncolumns = ["f0"]\n'
                                         '[output]\ncolumn = "f3"\n')
    code, _, err = run(["select", "--config", tmp_path / "dsokr.toml", "--train", tmp_path / "none.csv",
                        "-o", tmp_path / "c.toml"], capsys)
    one_line_error(code, err, "dsokr.toml", "no lam parameter")


# -- any other exception: one line, or the traceback on request -----------------------------
class FailingReader:
    suffixes = (".boom",)
    description = "a reader that fails"

    def guess_can_open(self, path):
        return True

    def read(self, path):
        raise RuntimeError("the boom library crashed")


class FailingColumnType:
    n_columns = 1

    def parse(self, values, table):
        return {}["missing"]  # a plugin's bug: KeyError

    def format(self, value, columns):
        return str(value)


class FailingPlugin:
    @sprokr.hookimpl
    def sprokr_readers(self):
        return {"boom": FailingReader}

    @sprokr.hookimpl
    def sprokr_column_types(self):
        return {"boomtype": FailingColumnType}


@pytest.fixture
def failing_reader(monkeypatch):
    import sprokr.registry as registry

    reg = Registry(entry_points=False)  # sprokr's built-ins and the plugin below
    reg.register(FailingPlugin(), name="boom")
    monkeypatch.setattr(registry, "_REGISTRY", reg)


def test_a_plugin_reader_failure_is_one_line_naming_the_file(d, tmp_path, capsys, failing_reader):
    (tmp_path / "q.boom").write_text("x")
    code, _, err = run(["predict", d / "m.sprokr", "--input", tmp_path / "q.boom", "-o", tmp_path / "p.csv"], capsys)
    one_line_error(code, err, "q.boom: cannot be read as a reader that fails", "RuntimeError: the boom library")


def test_a_plugin_column_type_failure_is_one_line_naming_the_file(d, tmp_path, capsys, failing_reader):
    (tmp_path / "c.toml").write_text(MULTI.replace('columns = ["f0", "f1", "f2", "f3"]',
                                                   'column = "f0"\ntype = "boomtype"'))
    code, _, err = run(["fit", "--config", tmp_path / "c.toml", "--train", d / "train.csv", "-o",
                        tmp_path / "m.sprokr"], capsys)
    one_line_error(code, err, "train.csv: column(s) 'f0' cannot be read as 'boomtype': KeyError")


class ExitingKernelPlugin:
    """A plugin kernel that calls sys.exit while the model computes a Gram block."""

    @sprokr.hookimpl
    def sprokr_input_kernels(self):
        from sprokr.kernels import Kernel

        class Exiting(Kernel):
            def pairwise(self, A, B):
                sys.exit(3)

        return {"exiting": Exiting}


def test_a_component_calling_sys_exit_during_a_command_is_one_line(d, tmp_path, capsys, monkeypatch):
    """The commands return their exit codes, so a SystemExit reaching main came from a
    component's code: it ended `sprokr fit` silently with the plugin's code (3)."""
    import sprokr.registry as registry

    reg = Registry(entry_points=False)
    reg.register(ExitingKernelPlugin(), name="exiter")
    monkeypatch.setattr(registry, "_REGISTRY", reg)
    (tmp_path / "r.toml").write_text(RIDGE.replace("[params]", '[params]\nkernel = "exiting"'))
    code, _, err = run(["fit", "--config", tmp_path / "r.toml", "--train", d / "train.csv", "-o",
                        tmp_path / "m.sprokr"], capsys)
    one_line_error(code, err, "sprokr fit: error: a component called sys.exit(3)")
    assert not (tmp_path / "m.sprokr").exists()


def test_traceback_flag_shows_the_traceback(d, tmp_path, failing_reader):
    (tmp_path / "q.boom").write_text("x")
    for argv in (["--traceback", "predict"], ["predict", "--traceback"]):
        with pytest.raises(sprokr.io.DataFileError, match="boom library") as exc:
            main(argv + [str(d / "m.sprokr"), "--input", str(tmp_path / "q.boom")])
        assert isinstance(exc.value.__cause__, RuntimeError)


# -- plugin warnings ------------------------------------------------------------------------
BROKEN_PLUGIN = '''
import sprokr

@sprokr.hookimpl
def sprokr_input_kernels():
    return {"a": 1, "b": 2, "c:d": len}

@sprokr.hookimpl
def sprokr_sketchs():  # a misspelt hook
    return {}
'''


def test_plugin_warnings_are_printed_once_one_line_each(d, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / "badplug.py").write_text(textwrap.dedent(BROKEN_PLUGIN))
    info = site / "sprokr_badplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: sprokr-badplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[sprokr]\nbadplug = badplug\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    for argv in (["fit", "--config", str(d / "model.toml"), "--train", str(d / "train.csv"), "-o",
                  str(tmp_path / "m.sprokr")],
                 ["predict", str(d / "m.sprokr"), "--input", str(d / "test.csv"), "-o", str(tmp_path / "p.csv")],
                 ["plugins"]):
        res = subprocess.run([sys.executable, "-m", "sprokr", *argv], capture_output=True, text=True, env=env)
        assert res.returncode == 0, res.stderr
        warnings_ = [line for line in res.stderr.splitlines() if "badplug" in line]
        assert len(warnings_) == 4 and len(set(warnings_)) == 4, res.stderr  # 4 warnings, each once
        assert all(line.startswith("warning: sprokr plugin 'badplug'") for line in warnings_), res.stderr
        assert "registry.py" not in res.stderr and "PluginWarning" not in res.stderr, res.stderr


@pytest.mark.parametrize("command", [
    ["fit", "--config", "{d}/model.toml", "--train", "{d}/train.csv", "-o", "-"],
    ["select", "--config", "{d}/model.toml", "--train", "{d}/train.csv", "-o", "-"],
])
def test_dash_is_not_a_file_name_for_fit_and_select(d, tmp_path, capsys, monkeypatch, command):
    """``-o -`` wrote a file named '-' (predict's '-' is standard output): refused, naming it."""
    monkeypatch.chdir(tmp_path)
    code, _, err = run([c.format(d=d) for c in command], capsys)
    one_line_error(code, err, "-o -")
    assert not (tmp_path / "-").exists()
