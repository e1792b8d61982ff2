"""The container: a zip of ``.npy`` entries and ``manifest.json`` with a checksummed trailer."""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import struct
import uuid
import zipfile
from pathlib import Path

from ._spec import (
    CHUNK, FIXED_DATE, FORMAT_NAME, FORMAT_VERSION, MANIFEST, MIN_FORMAT_VERSION, TRAILER_PREFIX,
    TRAILER_RE, ModelFormatError,
)


def write_model(path, arrays, manifest):
    """Write a model file: the arrays, then the manifest, then the checksummed trailer.

    ``arrays`` maps entry names to arrays; their sha256 are stored in
    ``manifest["arrays"][name]["sha256"]`` as they are written.  The file is written to a
    temporary file beside ``path`` and moved into place, so a failure never leaves a
    partial model at ``path``.
    """
    path = Path(path)
    if path.is_dir():  # else found by os.replace, after the whole file was written, naming the temporary file
        raise IsADirectoryError(f"cannot save to {path}: a directory; give a file path, e.g. {path / 'model.sprokr'}")
    if not path.parent.is_dir():
        raise FileNotFoundError(f"cannot save to {path}: directory {path.parent} does not exist")
    # a fresh name beside the target (same file system: os.replace is atomic); "x" mode
    # creates it with the user's umask, unlike mkstemp's private 0600
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "x+b") as fh:
            with zipfile.ZipFile(fh, "w") as zf:
                # arrays are streamed into the archive (no second copy in memory) and hashed
                # on the way; the manifest, which holds their checksums, comes last
                for name, a in arrays.items():
                    manifest["arrays"][name]["sha256"] = write_array(zf, name, a)
                manifest_bytes = json.dumps(manifest, indent=1, allow_nan=False).encode()
                manifest_sha = hashlib.sha256(manifest_bytes).hexdigest()
                write_entry(zf, MANIFEST, manifest_bytes)
                zf.comment = (TRAILER_PREFIX + f"{manifest['format_version']} manifest-sha256={manifest_sha} "
                              f"file-sha256=".encode() + b"0" * 64)
            fh.flush()
            size = fh.tell()
            fh.seek(0)
            digest = sha256_of(fh, size - 64)  # of every byte before the last 64
            fh.seek(size - 64)
            fh.write(digest.encode())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


def zip_info(name, compression):
    info = zipfile.ZipInfo(name, date_time=FIXED_DATE)
    info.compress_type = compression
    info.external_attr = 0o644 << 16
    return info


def write_entry(zf, name, data):
    zf.writestr(zip_info(name, zipfile.ZIP_DEFLATED), data)


class HashingIO:
    """File-like wrapper hashing (sha256) and counting every byte read or written."""

    def __init__(self, raw):
        self.raw, self.sha, self.count = raw, hashlib.sha256(), 0

    def write(self, data):
        self.sha.update(data)
        self.count += len(data)
        return self.raw.write(data)

    def read(self, n=-1):
        data = self.raw.read(n)
        self.sha.update(data)
        self.count += len(data)
        return data

    def drain(self):
        while self.read(CHUNK):
            pass
        return self.sha.hexdigest()


#: array data in the file starts at a multiple of this (so it can be memory-mapped in place)
ALIGN = 64
#: zip extra-field id of the alignment padding (the id Android's zipalign uses)
PAD_EXTRA_ID = 0xD935


def write_array(zf, name, a):
    """Write ``a`` as a stored (uncompressed) ``.npy`` entry; return its sha256.

    The entry's local header carries a padding extra field so that its data starts at a
    multiple of :data:`ALIGN` bytes in the file; ``.npy`` headers are padded to a multiple
    of 64 bytes too, so the array data is aligned and can be memory-mapped in place
    (:func:`map_array`).  Readers that ignore extra fields (any zip reader) are unaffected.
    """
    from numpy.lib import format as npy

    zip64 = a.nbytes > 2**30
    info = zip_info(name, zipfile.ZIP_STORED)
    # local header: 30 fixed bytes, the name, the extra fields (+ 20 bytes of zip64 sizes)
    base = zf.fp.tell() + 30 + len(name.encode("utf-8")) + (20 if zip64 else 0)
    pad = (-(base + 4)) % ALIGN
    info.extra = struct.pack("<HH", PAD_EXTRA_ID, pad) + b"\0" * pad
    with zf.open(info, "w", force_zip64=zip64) as raw:
        out = HashingIO(raw)
        npy.write_array(out, a, allow_pickle=False)
    return out.sha.hexdigest()



def _checked_npy_header(fh, name, meta):
    """``(shape, fortran_order, dtype)`` of the .npy header at ``fh`` (after its magic),
    refused when the version is unknown, the dtype holds objects (pickle) or the header
    disagrees with the manifest's ``meta``."""
    from numpy.lib import format as npy

    version = npy.read_magic(fh)
    if version not in ((1, 0), (2, 0)):
        raise ModelFormatError(f"{name}: unsupported .npy version {version}")
    reader = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
    shape, fortran, dtype = reader(fh)
    if dtype.hasobject:
        raise ModelFormatError(f"{name} is not a valid .npy array: object arrays are refused "
                               f"(they would need pickle)")
    if dtype.str != meta.get("dtype") or list(shape) != meta.get("shape"):
        raise ModelFormatError(f"{name} has dtype/shape {dtype.str} {list(shape)}, the manifest says "
                               f"{meta.get('dtype')} {meta.get('shape')}")
    return shape, fortran, dtype


def _check_npy_size(name, info, size, dtype, shape):
    """The entry's stored size must be exactly the header plus the array it declares."""
    if size != info.file_size:
        raise ModelFormatError(f"{name} has {info.file_size} bytes, not the size of a {dtype} array of "
                               f"shape {tuple(shape)}")

def map_array(path, zf, name, meta):
    """An ``.npy`` entry memory-mapped read-only in place, or None when it cannot be.

    The entry must be stored uncompressed, its header must match the manifest (dtype,
    shape, size) and its data must be aligned (files written before entries were aligned
    are read into memory instead).  The per-entry sha256 is not recomputed: the whole-file
    checksum verified by :func:`open_verified` covers these bytes.  The mapped array
    reflects the file: do not modify or replace the file while the array is in use.
    """
    info = zf.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED:
        raise ModelFormatError(f"{name} is compressed; array entries are stored uncompressed")
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise ModelFormatError(f"{name}: bad local header")
        n_name, n_extra = struct.unpack("<HH", local[26:30])
        start = info.header_offset + 30 + n_name + n_extra
        fh.seek(start)
        shape, fortran, dtype = _checked_npy_header(fh, name, meta)
        offset = fh.tell()
    nbytes = math.prod(shape) * dtype.itemsize
    _check_npy_size(name, info, offset - start + nbytes, dtype, shape)
    if offset % ALIGN or nbytes == 0:
        return None
    import numpy as np

    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=tuple(shape),
                     order="F" if fortran else "C")


def sha256_of(fh, n_bytes):
    h = hashlib.sha256()
    left = n_bytes
    while left > 0:
        block = fh.read(min(CHUNK, left))
        if not block:
            break
        h.update(block)
        left -= len(block)
    return h.hexdigest()


class VerifiedZipFile(zipfile.ZipFile):
    """A ZipFile over the one handle whose bytes were verified; closing it closes the handle."""

    def __init__(self, fh):
        self._verified_handle = fh
        super().__init__(fh)

    def close(self):
        try:
            super().close()
        finally:
            self._verified_handle.close()


def open_verified(path):
    """Verify trailer, checksums and version; return the open ZipFile and the manifest.

    The file is opened **once**: the checksums are computed and every entry is later read
    from that same handle, so a concurrent save to the same path (which writes a new file
    and renames it into place) can never mix the bytes of two files; this load sees the
    file as it was when it was opened.
    """
    path = Path(path)
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(f"model file not found: {path}") from None
    try:
        version, manifest_sha = _verify_file(fh, path)
        try:
            zf = VerifiedZipFile(fh)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
            raise ModelFormatError(f"{path} is corrupted: unreadable zip container ({exc})") from None
    except BaseException:
        fh.close()
        raise
    try:
        manifest = _verified_manifest(zf, path, version, manifest_sha)
    except BaseException:
        zf.close()
        raise
    return zf, manifest


def _verify_file(fh, path):
    """Trailer, whole-file checksum and version of an open model file: (version, manifest sha)."""
    fh.seek(0, 2)
    size = fh.tell()
    fh.seek(0)
    head = fh.read(4)
    tail_len = len(TRAILER_PREFIX) + 200
    fh.seek(max(0, size - tail_len))
    tail = fh.read()
    m = None
    start = tail.rfind(TRAILER_PREFIX)
    if start >= 0:
        m = TRAILER_RE.fullmatch(tail[start:])
    if m is None:
        if head[:1] == b"\x80":
            raise ModelFormatError(
                f"{path} looks like a pickle file; sprokr.load reads only the safe model format "
                f"and never unpickles (never load pickle files from untrusted sources)")
        if head[:2] != b"PK":
            raise ModelFormatError(f"{path} is not a sprokr model file (no zip container)")
        raise ModelFormatError(
            f"{path} is truncated, corrupted or not a sprokr model file: the sprokr trailer "
            f"(format version and checksums) is missing or damaged at its end")
    version, manifest_sha, file_sha = int(m.group(1)), m.group(2).decode(), m.group(3).decode()
    fh.seek(0)
    actual = sha256_of(fh, size - 64)
    if actual != file_sha:  # checked first: a damaged version digit is a corruption
        raise ModelFormatError(
            f"{path} is corrupted: its checksum does not match (sha256 {actual[:16]}... instead "
            f"of {file_sha[:16]}...); the file was modified or damaged after it was saved")
    check_version(version, path)
    fh.seek(0)
    return version, manifest_sha


def _verified_manifest(zf, path, version, manifest_sha):
    """The manifest of a verified container, checked: a JSON object of this format whose
    root is a saved object node (a model file holds one estimator, index or component)."""
    names = zf.namelist()
    bad = [n for n in names if n != MANIFEST and not re.fullmatch(r"arrays/\d+\.npy", n)]
    if bad or MANIFEST not in names or len(set(names)) != len(names):
        raise ModelFormatError(f"{path}: unexpected entries in the model container: {bad[:5]}")
    data = read_entry(zf, MANIFEST, path)
    if hashlib.sha256(data).hexdigest() != manifest_sha:
        raise ModelFormatError(f"{path} is corrupted: the manifest checksum does not match")
    try:
        manifest = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ModelFormatError(f"{path} is corrupted: the manifest is not valid JSON ({exc})") from None
    except RecursionError:  # json's parser recurses once per nesting level
        raise ModelFormatError(f"{path}: malformed model manifest: nested too deeply") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
        raise ModelFormatError(f"{path} is not a sprokr model (format {manifest.get('format')!r})"
                               if isinstance(manifest, dict) else f"{path}: malformed manifest")
    fv = manifest.get("format_version")
    if not isinstance(fv, int) or isinstance(fv, bool) or fv != version:
        raise ModelFormatError(f"{path}: the manifest's format version {fv!r} differs from the "
                               f"trailer's ({version})")
    check_version(fv, path)
    for key in ("root", "arrays"):
        if key not in manifest:
            raise ModelFormatError(f"{path}: the manifest has no {key!r}")
    root = manifest["root"]
    # save writes one object (an estimator, an index) or one registered component as the
    # root; anything else (a string, a list, a plain dict) is a file that holds no model
    if not isinstance(root, dict) or root.get("@") not in ("object", "component"):
        kind = root.get("@") if isinstance(root, dict) and isinstance(root.get("@"), str) else type(root).__name__
        raise ModelFormatError(f"{path}: malformed model manifest: its root is a {kind!r} node, not a saved "
                               f"estimator, candidate index or component; the file holds no model")
    return manifest


def check_version(version, path):
    if version > FORMAT_VERSION:
        raise ModelFormatError(
            f"{path} was written in sprokr model format {version}, newer than the formats this "
            f"sprokr reads ({MIN_FORMAT_VERSION}..{FORMAT_VERSION}); upgrade sprokr to load it")
    if version < MIN_FORMAT_VERSION:
        raise ModelFormatError(
            f"{path} was written in sprokr model format {version}, which this sprokr no longer "
            f"reads ({MIN_FORMAT_VERSION}..{FORMAT_VERSION}); load it with an older sprokr and save again")


def read_entry(zf, name, path):
    try:
        return zf.read(name)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, KeyError, RuntimeError) as exc:
        raise ModelFormatError(f"{path} is corrupted: entry {name} is unreadable ({exc})") from None
    except Exception as exc:  # zlib.error and friends
        raise ModelFormatError(f"{path} is corrupted: entry {name} is unreadable ({exc})") from None


def read_array(zf, name, meta):
    """An ``.npy`` entry, checked against the manifest before any allocation, then hashed.

    The header's dtype and shape must match the manifest, the entry must be stored
    uncompressed with exactly the size they imply (so nothing larger than the file is ever
    allocated), and the sha256 of the entry must match.  Object dtypes are refused
    (``allow_pickle=False``).
    """
    from numpy.lib import format as npy

    info = zf.getinfo(name)
    if info.compress_type != zipfile.ZIP_STORED:
        raise ModelFormatError(f"{name} is compressed; array entries are stored uncompressed")
    with zf.open(info) as raw:
        head = HashingIO(raw)
        shape, fortran, dtype = _checked_npy_header(head, name, meta)
    _check_npy_size(name, info, head.count + math.prod(shape) * dtype.itemsize, dtype, shape)
    try:
        with zf.open(info) as raw:
            src = HashingIO(raw)
            a = npy.read_array(src, allow_pickle=False)
            digest = src.drain()
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ModelFormatError(f"{name} is corrupted: {exc}") from None
    if digest != meta.get("sha256"):
        raise ModelFormatError(f"corrupted: checksum mismatch of {name}")
    return a
