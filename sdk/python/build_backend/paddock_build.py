"""A PEP 517 build backend for the SDK, in the standard library only.

The SDK has no dependencies, and building it needs none either: pip
builds the wheel with this module (pyproject.toml names it, with no build
requirements), so a machine that cannot reach a package index can still
build and install it. The version is paddock/__init__.py's __version__,
which a test keeps equal to the server's release.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "paddock_sdk"  # the distribution "paddock-sdk", normalized


def _version():
    with open(os.path.join(ROOT, "paddock", "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m:
        raise RuntimeError("paddock/__init__.py has no __version__")
    return m.group(1)


def _project_field(key):
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        m = re.search(r'^%s = "([^"]*)"$' % re.escape(key), f.read(), re.M)
    return m.group(1) if m else ""


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (
        "Metadata-Version: 2.1\n"
        "Name: paddock-sdk\n"
        f"Version: {_version()}\n"
        f"Summary: {_project_field('description')}\n"
        "License: MIT\n"
        f"Requires-Python: {_project_field('requires-python')}\n"
        "Description-Content-Type: text/markdown\n\n" + readme
    )


def _sources():
    out = []
    for name in sorted(os.listdir(os.path.join(ROOT, "paddock"))):
        if name.endswith(".py"):
            out.append("paddock/" + name)
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    version = _version()
    info = f"{NAME}-{version}.dist-info"
    files = {}
    for rel in _sources():
        with open(os.path.join(ROOT, rel), "rb") as f:
            files[rel] = f.read()
    files[f"{info}/METADATA"] = _metadata().encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: paddock_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = []
    for rel, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    name = f"{NAME}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for rel, data in files.items():
            z.writestr(zipfile.ZipInfo(rel, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return name


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = f"{NAME}-{version}"
    name = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "build_backend/paddock_build.py"] + _sources():
            t.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        pkg = _metadata().encode()
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg)
        t.addfile(ti, io.BytesIO(pkg))
    return name
