"""The files every page shares, written once into the book's _static/: the stylesheet (ours, plus the code
colours of Pygments), the script (MathJax's settings and the narrow-screen menu) and MathJax itself.

MathJax comes from the package jupyter-server-mathjax (the Jupyter project's copy of MathJax 2.7, in
requirements.txt), so math is typeset from the book folder with no network. The book copies all of it but
the SVG output's fonts (its code is not in the package) and the translations of MathJax's menu.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from minitorch.tools.book.chapters import BookError

STATIC_DIR = Path(__file__).resolve().parent / "static"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full"  # the package's combined configuration: it holds the TeX input and
# the HTML-CSS output (the package ships no separate jax.js for them), which uses the STIX web fonts
MATHJAX_NOT_COPIED = {"jax/output/SVG"}  # the SVG output's fonts, without its code (the menu hides the choice)


def mathjax_folder() -> Path:
    """The folder holding MathJax.js in the installed jupyter-server-mathjax, or a BookError saying how to get it."""
    try:
        import jupyter_server_mathjax
    except ImportError:
        raise BookError("the book typesets math with MathJax from the package jupyter-server-mathjax, which is "
                        "not installed: pip install -r requirements.txt") from None
    folder = Path(jupyter_server_mathjax.__file__).resolve().parent / "static"
    if not (folder / "MathJax.js").is_file():
        raise BookError(f"jupyter-server-mathjax has no MathJax.js in {folder}; reinstall it")
    return folder


def write_assets(static: Path) -> None:
    """Fill the new folder ``static`` (the book's _static/) with book.css, book.js and mathjax/."""
    from pygments.formatters import HtmlFormatter

    mathjax = mathjax_folder()
    static.mkdir(parents=True)
    code_colours = HtmlFormatter(style="default").get_style_defs(".highlight")
    (static / "book.css").write_text((STATIC_DIR / "book.css").read_text(encoding="utf-8")
                                     + "\n/* Code colours: Pygments' default style */\n" + code_colours + "\n",
                                     encoding="utf-8")
    shutil.copyfile(STATIC_DIR / "book.js", static / "book.js")

    def not_needed(folder: str, names: list[str]) -> list[str]:  # copytree's ``ignore``
        relative = Path(folder).relative_to(mathjax).as_posix()
        if relative == "localization":
            return [name for name in names if name != "en"]
        return [name for name in names if (Path(relative) / name).as_posix() in MATHJAX_NOT_COPIED]

    shutil.copytree(mathjax, static / "mathjax", ignore=not_needed)
