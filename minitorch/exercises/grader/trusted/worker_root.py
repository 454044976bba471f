"""What a sandboxed worker sees of the machine when the grader runs as root (`sandbox`, chapter 11).

A *tree*, built once per run, holds what Python needs to run a worker, at the same paths as on the machine and
nothing else: the interpreter, its standard library, NumPy and pytest, every shared library that ``ldd`` finds
they load, the loader's cache, and empty folders to mount on or write in. Its files are hard links to the
machine's own where the file system allows and no one but their owner may change them, else copies; its folders
are root's. bubblewrap binds it read-only as the worker's ``/``; the chroot mode gives each worker a root of its
own, a copy of it by hard links (``cp -al``) with the worker's library, a scratch home and a /tmp, removed when
the worker stops.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

LIBRARY, HOME = "grading/lib", "grading/home"  # inside a root: the worker's library (read-only), its scratch home
NOT_NEEDED = shutil.ignore_patterns("site-packages", "dist-packages", "test", "tests", "idlelib", "tkinter",
                                    "turtledemo", "ensurepip")  # (a student's function uses none of these)
_WHAT_PYTHON_NEEDS = """
import json, os, sys, sysconfig, numpy
try:
    import pytest  # (a student's own run has it: a function that calls pytest.exit is told what it did)
except ImportError:
    pass
paths = sysconfig.get_paths()
found = [paths["stdlib"], paths["platstdlib"], sysconfig.get_config_var("DESTSHARED") or "", sys.executable,
         os.path.join(sys.prefix, "pyvenv.cfg"), "/etc/ld.so.cache"]
for module in list(sys.modules.values()):  # the installed packages these imports loaded, and their libraries
    folder, packages, inside = (getattr(module, "__file__", None) or "").partition("-packages" + os.sep)
    found += [folder + packages + inside.split(os.sep)[0] + suffix for suffix in ("", ".libs")] if packages else []
print(json.dumps([path for path in dict.fromkeys(found) if path and os.path.exists(path)]))
"""
_trees: dict[str, str] = {}


def tree(python: str) -> str:
    """The run's tree for `python` (made once per process, removed when it exits)."""
    if python not in _trees:
        folder = Path(tempfile.mkdtemp(prefix="minitorch-worker-tree-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        needed = json.loads(subprocess.run([python, "-I", "-c", _WHAT_PYTHON_NEEDS], capture_output=True,
                                           text=True, timeout=300, check=True).stdout)
        objects = [os.path.realpath(python)]
        for top in needed:
            for inside, subfolders, files in os.walk(top):
                subfolders[:] = sorted(set(subfolders) - NOT_NEEDED(inside, subfolders))
                objects += [os.path.join(inside, name) for name in files if ".so" in name]
        shown = subprocess.run(["ldd", *objects], capture_output=True, text=True, timeout=300).stdout
        for path in [*needed, *sorted({os.path.normpath(path) for path in re.findall(r"(/\S+) \(0x", shown)})]:
            _place(path, folder)
        for empty in ("proc", "dev", "tmp", LIBRARY, HOME):
            (folder / empty).mkdir(parents=True, exist_ok=True)
        for inside, _, _ in os.walk(folder):  # every folder root's, passable, read-only to everyone else
            os.chmod(inside, 0o755)
        _trees[python] = str(folder)
    return _trees[python]


def _place(path: str, tree: Path) -> None:
    """Put the file or folder `path` into `tree` at the same path, with every symbolic link on the way to it."""
    current, parts = Path("/"), Path(path).parts[1:]
    for index, part in enumerate(parts):
        current = current / part
        if current.is_symlink():  # the link, then on from where it points
            link = tree / current.relative_to("/")
            if not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(os.readlink(current), link)
            return _place(os.path.normpath(current.parent / os.readlink(current) / Path(*parts[index + 1:])), tree)
    target = tree / current.relative_to("/")
    if current.is_dir():
        shutil.copytree(current, target, symlinks=True, ignore=NOT_NEEDED, copy_function=_link, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        _link(current, target)


def _link(source, target) -> None:
    """A hard link to `source` where the file system allows and no one but its owner may change it, else a copy
    (never set-user-ID)."""
    mode = os.lstat(source).st_mode
    if os.path.lexists(target):
        return
    if not mode & 0o6022:
        try:
            return os.link(source, target)
        except OSError:
            pass
    shutil.copyfile(source, target)
    os.chmod(target, mode & 0o755)


def own_root(tree: str, uid: int, library_root: Path | None, near: Path | None) -> Path:
    """A worker's own root (chroot) in a new folder of `near`: the tree and the worker's library, copied by hard
    links, and a scratch home and /tmp that only its user `uid` may enter."""
    root = Path(tempfile.mkdtemp(prefix="root-", dir=near))
    subprocess.run(["cp", "-a", "--link", f"{tree}/.", str(root)], check=True, capture_output=True)
    if library_root is not None:
        subprocess.run(["cp", "-a", "--link", f"{library_root}/.", str(root / LIBRARY)], check=True,
                       capture_output=True)
    for folder in (root / "tmp", root / HOME):
        os.chown(folder, uid, uid)
        os.chmod(folder, 0o700)
    os.chmod(root, 0o755)
    return root
