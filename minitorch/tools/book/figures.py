"""The executed notebook made ready for the page: what the reader sees once, in order, and described.

- Cells tagged ``github-only`` are left out: they show, for a reader of the notebook on GitHub (where no
  output is stored), a static image from figures/ of what the next cells draw; the page has the live figure.
- Consecutive prints of one cell become one output box, and a carriage return ("\\r", a terminal redrawing
  its line) keeps only what the terminal would show last.
- Every figure (an image output) gets a number, "Figure 7.3" (chapter 07, third figure), an anchor
  ``figure-7.3``, and the caption and description written for it in its cell's metadata::

      "metadata": {"figures": [{"caption": "What the figure shows.", "alt": "What it looks like."}]}

  one entry per figure the cell draws, in order. The template (template/index.html.j2) writes them into
  ``<figure>``, ``<figcaption>`` and the image's ``alt``.
"""

from __future__ import annotations

import re

GITHUB_ONLY = "github-only"
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")


def prepare_notebook(notebook, chapter_number: str) -> list[dict]:
    """Change ``notebook`` (nbformat) in place as the module says; return its figures' metadata in order."""
    notebook.cells = [cell for cell in notebook.cells if GITHUB_ONLY not in cell.metadata.get("tags", [])]
    figures = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = merged_streams(cell.get("outputs", []))
        written = cell.metadata.get("figures", [])
        images = [output for output in cell.outputs if any(kind in output.get("data", {}) for kind in IMAGE_TYPES)]
        for position, output in enumerate(images):
            number = f"{int(chapter_number)}.{len(figures) + 1}"
            entry = written[position] if position < len(written) else {}
            meta = {"number": number, "id": f"figure-{number}", "caption": entry.get("caption", ""),
                    "alt": entry.get("alt") or entry.get("caption", "")}
            output.setdefault("metadata", {})["book_figure"] = meta
            figures.append(meta)
    return figures


def merged_streams(outputs: list) -> list:
    """``outputs`` with each run of stream outputs of one name (stdout, stderr) joined into one, and every
    line's carriage returns resolved as a terminal would show them."""
    merged = []
    for output in outputs:
        if output.get("output_type") == "stream" and merged and merged[-1].get("output_type") == "stream" \
                and merged[-1].get("name") == output.get("name"):
            merged[-1]["text"] += output["text"]
        else:
            merged.append(output)
    for output in merged:
        if output.get("output_type") == "stream":
            output["text"] = resolve_carriage_returns(output["text"])
    return merged


def resolve_carriage_returns(text: str) -> str:
    """Each line as a terminal leaves it: what follows the last "\\r" of the line (ANSI erase codes dropped)."""
    text = re.sub(r"\x1b\[K", "", text)
    lines = text.split("\n")
    return "\n".join(line.rstrip("\r").rsplit("\r", 1)[-1] for line in lines)
