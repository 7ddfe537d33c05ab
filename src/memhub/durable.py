"""Durable file writes: what makes a rename or an unlink survive a power cut."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def fsync_directory(path: Path) -> None:
    """Make a directory's entries (a rename, an unlink) durable. Windows cannot open a directory as a file; its
    file system journals the rename itself."""
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
