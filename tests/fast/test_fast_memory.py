"""Specification of minitorch.fast.memory: asking glibc to keep freed memory is safe to call, and says if it took."""

from __future__ import annotations

import platform

from minitorch.fast.memory import keep_freed_memory


def test_keep_freed_memory_is_idempotent_and_reports_whether_it_applied():
    first = keep_freed_memory()
    assert keep_freed_memory() == first, "a second call must report the same outcome"
    if platform.libc_ver()[0] == "glibc":
        assert first is True, "with glibc the mallopt calls should succeed"
