"""What the tests of bad input share: the project's folder, a fingerprint of a folder's files, a small model."""

from __future__ import annotations

import hashlib
from pathlib import Path

from minitorch.paper.models import build_model

ROOT = Path(__file__).resolve().parent.parent


def file_hashes(folder: Path) -> dict:
    """{relative path: sha256} of every file under `folder`."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def tiny_model(**changes):
    config = dict(width=16, heads=1, layers=1, normaliser="softmax", residual=False)
    config.update(changes)
    return build_model(**config)
