"""Specification of minitorch.allocator: tuning glibc must be safe to call, anywhere."""

from __future__ import annotations

import platform

from minitorch.allocator import keep_freed_memory


def test_keep_freed_memory_is_idempotent_and_reports_whether_it_applied():
    first = keep_freed_memory()
    assert keep_freed_memory() == first, "a second call must report the same outcome"
    if platform.libc_ver()[0] == "glibc":
        assert first is True, "with glibc the mallopt calls should succeed"

