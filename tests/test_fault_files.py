"""Model files under concurrency and crafted content.

* ``sprokr.load`` while another *process* saves the same path: every load returns one of
  the two saved models, never a checksum error (the file is opened once and every byte
  read from that handle; a save writes a new file and renames it into place).
* crafted manifests with recomputed checksums -- deep nesting, a root that is not a saved
  object, random nodes replaced by random values -- are refused with ``ModelFormatError``
  (never ``RecursionError`` or another internal error), or load as a model.
"""
import hashlib
import io
import json
import random
import os
import subprocess
import sys
import textwrap
import warnings
import zipfile

import numpy as np
import pytest

import sprokr
from sprokr import SIOKR, SISOKR
from sprokr.persistence import ModelFormatError, read_manifest

pytestmark = pytest.mark.faults


def _data(seed, n=80):
    r = np.random.default_rng(seed)
    X = r.standard_normal((n, 5))
    Y = (X @ r.standard_normal((5, 6)) > 0.5).astype(np.int8)
    return X, Y


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    X, Y = _data(1)
    model = SISOKR(lam=1e-3, input_sketch="subsample", m_x=20, output_sketch="psg", m_y=12,
                   output_sketch_params={"p": 0.2}, random_state=0).fit(X, Y)
    return model, model.save(tmp_path_factory.mktemp("crafted") / "m.sprokr")


def _entries(path):
    with zipfile.ZipFile(path) as zf:
        return {n: zf.read(n) for n in zf.namelist()}


def _write_signed(path, entries):
    """A well-formed container with correct checksums around the given (crafted) entries."""
    manifest = entries["manifest.json"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        zf.comment = (f"sprokr-model 1 manifest-sha256={hashlib.sha256(manifest).hexdigest()} "
                      f"file-sha256=").encode() + b"0" * 64
    data = buf.getvalue()
    path.write_bytes(data[:-64] + hashlib.sha256(data[:-64]).hexdigest().encode())
    return path


def _with_manifest_text(src, dst, text):
    entries = _entries(src)
    entries["manifest.json"] = text.encode()
    return _write_signed(dst, entries)


# ----------------------------------------------------------------------------- concurrent save
_SAVER = textwrap.dedent("""
    import sys, time
    import sprokr
    a, b, target, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    models = [sprokr.load(a), sprokr.load(b)]
    print("ready", flush=True)
    end, i = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        models[i % 2].save(target)
        i += 1
    print(i, flush=True)
""")


def test_load_while_another_process_saves_the_same_path(tmp_path):
    """Loads racing a saving process: each returns model A or model B, bit for bit."""
    Xa, Ya = _data(1)
    Xb, Yb = _data(2)
    kw = dict(lam=1e-3, m_x=25, random_state=0)
    A, B = SIOKR(**kw).fit(Xa, Ya), SIOKR(**kw).fit(Xb, Yb)
    pa, pb, target = A.save(tmp_path / "a.sprokr"), B.save(tmp_path / "b.sprokr"), tmp_path / "t.sprokr"
    A.save(target)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen([sys.executable, "-c", _SAVER, str(pa), str(pb), str(target), "6"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        seen, loads = set(), 0
        while proc.poll() is None and loads < 400:
            m = sprokr.load(target)  # raised "the manifest checksum does not match" before
            loads += 1
            if np.array_equal(m.coef_, A.coef_):
                seen.add("A")
            elif np.array_equal(m.coef_, B.coef_):
                seen.add("B")
            else:
                pytest.fail("a load returned a model that is neither of the saved ones")
            read_manifest(target)
    finally:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    saves = int(out.split()[-1]) if out.split() else 0
    assert loads >= 20 and saves >= 20, (loads, saves)  # they really did overlap
    assert seen == {"A", "B"}


# ----------------------------------------------------------------------------- crafted manifests
def _deep_list(depth):
    return "[" * depth + "1" + "]" * depth


@pytest.mark.parametrize("depth", [200, 900, 5000, 200_000])
def test_deeply_nested_manifest_is_a_format_error(model_file, tmp_path, depth):
    _, path = model_file
    m = json.loads(_entries(path)["manifest.json"])
    m["root"]["params"]["input_kernel_params"] = "@@"
    text = json.dumps(m).replace('"@@"', _deep_list(depth))
    p = _with_manifest_text(path, tmp_path / "deep.sprokr", text)
    for reader in (sprokr.load, read_manifest):
        try:  # a RecursionError escaped before
            reader(p)
        except ModelFormatError as exc:
            assert "nested too deeply" in str(exc) or "malformed" in str(exc)
        else:  # nesting that Python can parse and rebuild is just a (strange) parameter value
            assert depth < 10_000


@pytest.mark.parametrize("root", ['"SISOKR"', "[1, 2, 3]", '{"coef_": [1, 2]}', '{"@": "dict", "items": []}',
                                  "7", "null", '{"@": "ref", "id": 0}', '{"@": "list"}'])
def test_a_file_that_holds_no_model_is_refused(model_file, tmp_path, root):
    _, path = model_file
    m = json.loads(_entries(path)["manifest.json"])
    m["root"] = "@@"
    p = _with_manifest_text(path, tmp_path / "root.sprokr", json.dumps(m).replace('"@@"', root))
    with pytest.raises(ModelFormatError, match="holds no model"):
        sprokr.load(p)
    with pytest.raises(ModelFormatError, match="holds no model"):
        read_manifest(p)


_VALUES = [None, "x", -1, 2 ** 70, 1e308, True, [], {}, [1, [2]], {"a": 1}, "@DEEP",
           {"@": "dict", "items": [[1]]}, {"@": "ref", "id": 10 ** 6}, {"@": "ref", "id": "a"},
           {"@": "ndarray", "entry": "arrays/0.npy"}, {"@": "objarray", "shape": [1e300], "items": []},
           {"@": "objarray", "shape": [-1, -1], "items": [1]}, {"@": "float", "v": "x"},
           {"@": "bytes", "hex": "zz"}, {"@": "dtype", "v": "O"}, {"@": "set", "items": [[1]]},
           {"@": "networkx", "class": "Graph", "data": {"x": 1}},
           {"@": "sparse", "class": "csr_matrix", "shape": [2, 2], "parts": {}},
           {"@": "generator", "bit_generator": "PCG64", "state": {"x": 1}}, {"@": "randomstate", "state": 5},
           {"@": "npscalar", "dtype": "<f8", "v": "x"}, {"@": "tuple", "items": 5},
           {"@": "object", "class": "sprokr.decoders:CandidateIndex", "id": 5000, "params": 1, "state": {}},
           {"@": "component", "kind": "input_kernel", "name": "gaussian", "plugin": "sprokr",
            "params": {"gamma": "x"}, "state": 3, "id": 7777}]


def _node_slots(obj, out):
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((obj, k))
            _node_slots(v, out)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((obj, i))
            _node_slots(v, out)
    return out


@pytest.mark.parametrize("seed", range(3))
def test_fuzzed_manifests_load_or_raise_model_format_error(model_file, tmp_path, seed):
    """One random node of the manifest replaced by a random value (checksums recomputed):
    the load gives a SISOKR or a ModelFormatError, nothing else (RecursionError,
    OverflowError, KeyError ... escaped before)."""
    _, path = model_file
    text = _entries(path)["manifest.json"].decode()
    rnd = random.Random(seed)
    outcomes = {"loaded": 0, "refused": 0}
    for trial in range(60):
        m = json.loads(text)
        parent, key = rnd.choice(_node_slots(m, []))
        value = rnd.choice(_VALUES)
        parent[key] = "@@"
        raw = _deep_list(100_000) if value == "@DEEP" else json.dumps(value)
        p = _with_manifest_text(path, tmp_path / f"f{trial}.sprokr", json.dumps(m).replace('"@@"', raw))
        try:
            with warnings.catch_warnings():  # e.g. a component saved as another class: not tested here
                warnings.simplefilter("ignore")
                obj = sprokr.load(p)
        except ModelFormatError:
            outcomes["refused"] += 1
        else:
            assert isinstance(obj, SISOKR), type(obj)
            outcomes["loaded"] += 1
    assert outcomes["refused"] > 0
