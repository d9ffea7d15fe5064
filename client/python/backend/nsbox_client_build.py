"""nsbox_client's PEP 517 build backend: the standard library only.

pyproject.toml names it (build-backend, backend-path = ["backend"]) with
`requires = []`, so `pip install client/python` builds the package offline
on any CPython >= 3.8, with or without build isolation, on a Python that has
no setuptools or wheel (pyenv's, conda's): pip needs nothing it would have to
fetch. It writes a pure-Python wheel (zipfile), an sdist (tarfile) and, for
`pip install -e`, an editable wheel (PEP 660: a .pth naming this folder).

The metadata is pyproject.toml's [project] table, read with tomllib where
there is one (3.11+) and otherwise with read_project() below, which reads
the subset of TOML that table uses (strings, lists of strings, inline
tables of strings): tests/install/test_client_package.py checks the two agree.
Archives are reproducible: sorted entries, fixed timestamps
(SOURCE_DATE_EPOCH when set), fixed permissions.
"""
import base64
import gzip
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "nsbox_client"
# what an sdist holds besides the package (all that building it again needs)
SDIST_EXTRA = ["pyproject.toml", "README.md", "LICENSE", "backend/nsbox_client_build.py"]
TAG = "py3-none-any"


# -- pyproject.toml ---------------------------------------------------------------
def _toml_value(text, where):
    """One value of the subset: "string", [values, ...], {key = value, ...}."""
    text = text.strip()
    if text.startswith('"'):
        m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', text)
        if not m:
            raise ValueError("%s: unreadable string %s" % (where, text))
        return m.group(1).encode("latin-1", "backslashreplace").decode("unicode_escape")
    if text.startswith("[") and text.endswith("]"):
        return [_toml_value(item, where) for item in _split(text[1:-1]) if item.strip()]
    if text.startswith("{") and text.endswith("}"):
        out = {}
        for item in _split(text[1:-1]):
            key, _, value = item.partition("=")
            out[key.strip()] = _toml_value(value, where)
        return out
    raise ValueError("%s: this backend reads strings, lists and inline tables only, not %s" % (where, text))


def _split(text):
    """@text's items at top-level commas (none inside strings or brackets)."""
    items, depth, quoted, start, i = [], 0, False, 0, 0
    while i < len(text):
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
        i += 1
    items.append(text[start:])
    return items


def read_project(text):
    """The [project] table of @text (pyproject.toml), by the subset reader."""
    table, out, pending = None, {}, ""
    for n, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if pending:
            pending += " " + stripped
        elif not stripped or stripped.startswith("#"):
            continue
        elif stripped.startswith("["):
            table = stripped.strip("[]").strip()
            continue
        else:
            pending = stripped
        if pending.count("[") + pending.count("{") > pending.count("]") + pending.count("}"):
            continue   # a list over several lines: read on
        if table == "project":
            key, _, value = pending.partition("=")
            out[key.strip()] = _toml_value(re.sub(r"\s#[^\"]*$", "", value), "pyproject.toml:%d" % n)
        pending = ""
    return out


def project():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    try:
        import tomllib
    except ImportError:   # before 3.11
        return read_project(text)
    return tomllib.loads(text)["project"]


def metadata():
    """The core metadata (version 2.1) for METADATA and PKG-INFO."""
    p = project()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p["description"]]
    lic = p.get("license")
    if isinstance(lic, dict) and "text" in lic:
        lines.append("License: " + lic["text"])
    if "requires-python" in p:
        lines.append("Requires-Python: " + p["requires-python"])
    lines += ["Classifier: " + c for c in p.get("classifiers", [])]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(ROOT, p.get("readme", "README.md")), encoding="utf-8") as f:
        readme = f.read()
    return "\n".join(lines) + "\n\n" + readme


def _dist_name():
    p = project()
    return re.sub(r"[-_.]+", "_", p["name"]).lower(), p["version"]


# -- archives ------------------------------------------------------------------------
def _epoch():
    return max(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")), 315532800)   # zip starts at 1980


def _package_files():
    """(path in the archive, path on disk) of the package, subpackages
    included: .py, .pyi and py.typed, never __pycache__. The whole folder,
    as meson installs it (dist/meson.build): a module or subpackage added
    later is in the wheel without a list to keep up."""
    src = os.path.join(ROOT, PACKAGE)
    out = []
    for d, dirs, files in os.walk(src):
        dirs[:] = sorted(x for x in dirs if x != "__pycache__")
        rel = os.path.relpath(d, ROOT).replace(os.sep, "/")
        out += [(rel + "/" + n, os.path.join(d, n)) for n in files
                if n.endswith((".py", ".pyi")) or n == "py.typed"]
    return sorted(out)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def _write_wheel(wheel_directory, files, tag=TAG):
    """A wheel of @files ((archive path, bytes)) plus its .dist-info."""
    name, version = _dist_name()
    info = "%s-%s.dist-info" % (name, version)
    wheel_meta = "Wheel-Version: 1.0\nGenerator: nsbox_client_build\nRoot-Is-Purelib: true\nTag: %s\n" % tag
    files = list(files) + [(info + "/METADATA", metadata().encode("utf-8")),
                           (info + "/WHEEL", wheel_meta.encode()),
                           (info + "/top_level.txt", (PACKAGE + "\n").encode())]
    lic = os.path.join(ROOT, "LICENSE")
    if os.path.isfile(lic):
        files.append((info + "/LICENSE", _read(lic)))
    record = []
    for arcname, data in files:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append("%s,sha256=%s,%d" % (arcname, digest, len(data)))
    record.append(info + "/RECORD,,")
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = "%s-%s-%s.whl" % (name, version, tag)
    stamp = time.gmtime(_epoch())[:6]
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for arcname, data in files:
            zi = zipfile.ZipInfo(arcname, stamp)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return filename


# -- PEP 517 hooks ---------------------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    name, version = _dist_name()
    info = "%s-%s.dist-info" % (name, version)
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(metadata())
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(arc, _read(path)) for arc, path in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """PEP 660: a wheel whose .pth puts this folder on sys.path, so the
    installed nsbox_client is the source being edited."""
    return _write_wheel(wheel_directory, [("__editable__.%s.pth" % PACKAGE, (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    name, version = _dist_name()
    base = "%s-%s" % (name, version)
    members = [(arc, _read(path)) for arc, path in _package_files()]
    members += [(rel, _read(os.path.join(ROOT, rel))) for rel in SDIST_EXTRA if os.path.isfile(os.path.join(ROOT, rel))]
    members.append(("PKG-INFO", metadata().encode("utf-8")))
    filename = base + ".tar.gz"
    with open(os.path.join(sdist_directory, filename), "wb") as raw:
        # gzip's own header time fixed too (tarfile's gz mode stamps now)
        with gzip.GzipFile(fileobj=raw, mode="wb", mtime=_epoch()) as gz:
            with tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
                for arcname, data in sorted(members):
                    ti = tarfile.TarInfo(base + "/" + arcname)
                    ti.size, ti.mtime, ti.mode = len(data), _epoch(), 0o644
                    ti.uname = ti.gname = ""
                    tar.addfile(ti, io.BytesIO(data))
    return filename
