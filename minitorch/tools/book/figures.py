"""The executed notebook made ready for the page: what the reader sees once, in order, and described.

- Cells tagged ``github-only`` are left out: they show, for a reader of the notebook on GitHub (where no
  output is stored), a static image from figures/ of what the next cells draw; the page has the live figure.
- Consecutive prints of one cell become one output box, and a carriage return ("\\r", a terminal redrawing
  its line) keeps only what the terminal would show last. A wide table in printed text becomes an HTML
  table (tables.py).
- Every figure (an image output) gets a number, "Figure 7.3" (chapter 07, third figure), an anchor
  ``figure-7.3``, and the caption and description written for it in its cell's metadata::

      "metadata": {"figures": [{"caption": "What the figure shows.", "alt": "What it looks like."}]}

  one entry per figure the cell draws, in order. The template (template/index.html.j2) writes them into
  ``<figure>``, ``<figcaption>`` and the image's ``alt``. What a caption says for the screen alone ("(click
  to enlarge)") is shown on screen only, after the caption.
- Paper cannot animate: an animated GIF gets a printed still beside it (`printed_frames`: PRINTED_FRAMES of
  its frames, first to last, in a grid), shown only when the page is printed; the GIF, only on screen.
"""

from __future__ import annotations

import base64
import io
import math
import re

from minitorch.tools.book.tables import tables_as_html

GITHUB_ONLY = "github-only"
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
PRINTED_FRAMES = 4  # frames of an animation on paper: the first, the last, and evenly spaced between
PRINTED_ROW_PIXELS = 1800  # a printed still's frames go side by side up to this width, then on a new row
SCREEN_ONLY = re.compile(r"\s*\((?:click|tap)\b[^)]*\)", re.I)  # "(click to enlarge)" in a caption


def prepare_notebook(notebook, chapter_number: str) -> list[dict]:
    """Change ``notebook`` (nbformat) in place as the module says; return its figures' metadata in order."""
    notebook.cells = [cell for cell in notebook.cells if GITHUB_ONLY not in cell.metadata.get("tags", [])]
    figures = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        cell.outputs = tables_as_html(merged_streams(cell.get("outputs", [])))
        written = cell.metadata.get("figures", [])
        images = [output for output in cell.outputs if any(kind in output.get("data", {}) for kind in IMAGE_TYPES)]
        for position, output in enumerate(images):
            number = f"{int(chapter_number)}.{len(figures) + 1}"
            entry = written[position] if position < len(written) else {}
            caption = entry.get("caption", "")
            screen_note = SCREEN_ONLY.search(caption)
            meta = {"number": number, "id": f"figure-{number}", "caption": SCREEN_ONLY.sub("", caption),
                    "screen_note": screen_note.group(0).strip() if screen_note else "",
                    "alt": entry.get("alt") or caption}
            if "image/gif" in output.get("data", {}):
                still, frames = printed_frames(base64.b64decode(output["data"]["image/gif"]))
                meta["printed_still"] = base64.b64encode(still).decode("ascii")
                shown = min(PRINTED_FRAMES, frames)
                meta["printed_note"] = (f"On paper: {shown} of the film's {frames} frames, first to last"
                                        f"{', in reading order' if shown > 1 else ''}." if frames > 1 else "")
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


def printed_frames(gif: bytes, count: int = PRINTED_FRAMES) -> tuple[bytes, int]:
    """A PNG of ``count`` frames of the animated GIF ``gif``, evenly spaced from the first to the last (the last
    alone if ``count`` is 1), in rows at most PRINTED_ROW_PIXELS wide; and how many frames the GIF has."""
    from PIL import Image

    with Image.open(io.BytesIO(gif)) as film:
        total = getattr(film, "n_frames", 1)
        picks = [total - 1] if count == 1 else sorted({round(k * (total - 1) / (count - 1)) for k in range(count)})
        frames = []
        for index in picks:
            film.seek(index)
            frames.append(film.convert("RGB"))  # this frame as shown, the earlier ones it draws over included
    width, height = frames[0].size
    columns = max(1, min(len(frames), PRINTED_ROW_PIXELS // width))
    sheet = Image.new("RGB", (columns * width, math.ceil(len(frames) / columns) * height), "white")
    for position, frame in enumerate(frames):
        sheet.paste(frame, ((position % columns) * width, (position // columns) * height))
    png = io.BytesIO()
    sheet.save(png, format="PNG", optimize=True)
    return png.getvalue(), total


def printed_stills(page: str, frames: int = PRINTED_FRAMES) -> str:
    """``page`` (HTML) with each animated GIF embedded in an <img> shown on screen only, beside a printed
    still of ``frames`` of its frames (for the README's film on the printed title page: its last frame)."""
    def with_still(match: re.Match) -> str:
        still, _ = printed_frames(base64.b64decode(match.group(2)), frames)
        attributes = match.group(1) + match.group(3)
        still_uri = "data:image/png;base64," + base64.b64encode(still).decode("ascii")
        return (f'<img class="book-screen-only"{attributes.rstrip("/")} src="data:image/gif;base64,{match.group(2)}">'
                f'<img class="book-print-only"{attributes.rstrip("/")} src="{still_uri}">')

    return re.sub(r'<img((?:\s+(?!src=)[\w-]+="[^"]*")*)\s+src="data:image/gif;base64,([^"]+)"([^>]*)>', with_still,
                  page)
