"""Kept memory: ask glibc to reuse freed memory instead of returning it to the system.

Every operation allocates a fresh result array, many about 1 MB (batch 128 x 4 heads x 16 x 16
float64). By default glibc hands blocks that large back to the operating system as soon as they
are freed, and the kernel must zero and map every page again the next time. `keep_freed_memory`
raises glibc's two thresholds, once per process; where glibc is not the allocator (macOS, Windows,
musl) it does nothing. Nothing here changes a number.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_TRIM_THRESHOLD = -1  # mallopt parameters, from glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
BLOCK_LIMIT = 64 * 2**20  # blocks up to 64 MB come from the reusable heap, not fresh mappings
KEEP_LIMIT = 512 * 2**20  # the heap may keep up to 512 MB of free memory before returning it

_memory_kept = False


def keep_freed_memory() -> bool:
    """Ask glibc to keep and reuse freed memory. True if the setting took effect."""
    global _memory_kept
    if _memory_kept:
        return True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # no glibc here: nothing to tune
        return False
    _memory_kept = bool(mallopt(M_MMAP_THRESHOLD, BLOCK_LIMIT)) and bool(mallopt(M_TRIM_THRESHOLD, KEEP_LIMIT))
    return _memory_kept
