"""Tables printed as text, shown as tables: a chapter that prints a fixed-width table (columns lined up with
spaces, as `python -m minitorch.exercises list` does) reads well in Jupyter, but on a page narrower than its
lines it wraps into broken columns. The book finds such tables in the printed text and shows each as an HTML
table, whose cells wrap on their own; the notebook keeps its text. Only a table too wide for the page
(a line longer than WIDE characters) is changed: a narrower one fits as it is printed.

A table starts with MIN_ROWS lines that share at least MIN_COLUMNS columns, a column being what lies between
two gaps: a gap is a stretch of at least two character positions that are blank (or a "|") on every line.
Each next line belongs to the table too if it has blanks between every two columns: two or more, or a single
one at one place if its cells line up with the columns (a name that fills its column, "sink_logit 1,025");
the first line that does not (a sentence after the table) ends it. The first line is the header when none
of its cells is a number and the rows below have some; a column of numbers is aligned right.
"""

from __future__ import annotations

import html
import re

MIN_ROWS = 3
MIN_COLUMNS = 3
WIDE = 90  # characters: a table with a longer line is shown as a table (a narrower one fits as it is printed)
NUMBER = re.compile(r"[-+]?(?:\d[\d,]*\.?\d*|\.\d+)(?:e[-+]?\d+)?%?(?:\s*/\s*\d+)?", re.I)  # 0.25, 1,024, 3 / 3


def columns(lines: list[str]) -> list[tuple[int, int]]:
    """The (start, end) of each column the ``lines`` share: the stretches between gaps, a gap being at least two
    positions that are blank or "|" on every line, with two blanks at least on each line (so "max |y|" is no
    gap) and outside brackets (so the spaces of a printed array are no gaps)."""
    width = max(len(line) for line in lines)
    padded = [line.ljust(width) for line in lines]
    inside = [_bracketed(line) for line in padded]
    blank = [all(line[position] in " |" and not depth[position] for line, depth in zip(padded, inside))
             for position in range(width)]
    spans, start, position = [], None, 0
    while position < width:
        if not blank[position]:
            start = position if start is None else start
            position += 1
            continue
        gap_end = position
        while gap_end < width and blank[gap_end]:
            gap_end += 1
        if all(line[position:gap_end].count(" ") >= 2 for line in padded) or gap_end == width:
            if start is not None:
                spans.append((start, position))
            start = None
        elif start is None:
            start = position
        position = gap_end
    if start is not None:
        spans.append((start, width))
    return spans


def _bracketed(line: str) -> list[int]:
    """For each position of ``line``, how many brackets ((, [, {) are open there."""
    depth, depths = 0, []
    for character in line:
        if character in ")]}":
            depth = max(depth - 1, 0)
        depths.append(depth)
        if character in "([{":
            depth += 1
    return depths


def _is_table(lines: list[str]) -> bool:
    """At least MIN_COLUMNS shared columns, and text in two of them at least on every line."""
    spans = columns(lines)
    return len(spans) >= MIN_COLUMNS and all(sum(1 for a, b in spans if line[a:b].strip(" |")) >= 2
                                             for line in lines)


def split_tables(text: str, wider_than: int = 0) -> list[tuple[str, object]]:
    """``text`` as pieces in order: ("text", str) for lines that are no table, ("table", rows) for each table
    with a line longer than ``wider_than`` characters (rows: lists of cell strings, one per column)."""
    lines = text.split("\n")
    pieces: list[tuple[str, object]] = []
    plain: list[str] = []
    start = 0
    while start < len(lines):
        end = start + MIN_ROWS
        if end <= len(lines) and all(line.strip() for line in lines[start:end]) and _is_table(lines[start:end]):
            spans = columns(lines[start:end])
            while end < len(lines) and _cells(lines[end], spans, aligned=True) is not None:
                end += 1
            if max(len(line) for line in lines[start:end]) > wider_than:
                if plain:
                    pieces.append(("text", "\n".join(plain)))
                    plain = []
                pieces.append(("table", [_cells(line, spans) for line in lines[start:end]]))
            else:
                plain += lines[start:end]
            start = end
            continue
        plain.append(lines[start])
        start += 1
    if plain:
        pieces.append(("text", "\n".join(plain)))
    return pieces


def _cells(line: str, spans: list[tuple[int, int]], aligned: bool = False) -> list[str] | None:
    """``line`` cut into the cells of the table whose columns are ``spans``, or None if it is no row of it.
    Between two columns the line must have a blank (or "|") outside brackets; it is cut at the last one, so
    that a cell may reach into the gap (a longer name, a minus sign). One cut at most may fall on a single
    blank, the others on two or more; with ``aligned``, a line with such a cut must also start each cell after
    the first where its column starts or end it where the column ends: a sentence, whose words fall
    anywhere, is no row."""
    padded = line.ljust(spans[-1][0] + 1)
    depth = _bracketed(padded)
    cuts, narrow = [0], 0
    for (_, previous_end), (column_start, _) in zip(spans, spans[1:]):
        blanks = [position for position in range(max(previous_end, cuts[-1] + 1), column_start + 1)
                  if padded[position] in " |" and not depth[position]]
        if not blanks:
            return None
        cuts.append(blanks[-1])
        narrow += _blanks_around(padded, blanks[-1], blanks[-1] + 1) < 2
    cells = [padded[a:b].strip(" |") for a, b in zip(cuts, cuts[1:] + [None])]
    if narrow > 1 or narrow == len(cuts) - 1 or sum(1 for cell in cells if cell) < 2:
        return None
    for (column_start, column_end), cut, cell in list(zip(spans, cuts, cells))[1:]:
        text_start = padded.index(cell, cut) if cell else column_start
        if aligned and narrow and cell and text_start != column_start and text_start + len(cell) != column_end:
            return None
    return cells


def _blanks_around(line: str, start: int, end: int) -> int:
    """How many spaces the line has in its own blank stretch that holds positions start..end - 1."""
    while start > 0 and line[start - 1] in " |":
        start -= 1
    while end < len(line) and line[end] in " |":
        end += 1
    return line[start:end].count(" ")


def is_number(cell: str) -> bool:
    return bool(NUMBER.fullmatch(cell.strip()))


def table_html(rows: list[list[str]]) -> str:
    """One table as HTML: a header row if the first line is one, numeric columns aligned right."""
    has_header = not any(is_number(cell) for cell in rows[0]) and any(is_number(cell) for row in rows[1:]
                                                                       for cell in row)
    body = rows[1:] if has_header else rows
    numeric = [all(is_number(row[column]) or not row[column] for row in body) and any(row[column] for row in body)
               for column in range(len(rows[0]))]

    def cells(row: list[str], tag: str) -> str:
        right = ' class="book-number-cell"'
        return "".join(f"<{tag}{right if numeric[column] else ''}>{html.escape(cell)}</{tag}>"
                       for column, cell in enumerate(row))

    head = f"<thead><tr>{cells(rows[0], 'th')}</tr></thead>" if has_header else ""
    rows_html = "".join(f"<tr>{cells(row, 'td')}</tr>" for row in body)
    return f'<table class="book-output-table">{head}<tbody>{rows_html}</tbody></table>'


def tables_as_html(outputs: list) -> list:
    """``outputs`` (a code cell's, nbformat) with each stdout text that holds a table wider than WIDE split
    into its text and its tables, each table an HTML output; other outputs are left as they are."""
    from nbformat.v4 import new_output

    result = []
    for output in outputs:
        if output.get("output_type") != "stream" or output.get("name") != "stdout":
            result.append(output)
            continue
        pieces = split_tables(output["text"], wider_than=WIDE)
        if all(kind == "text" for kind, _ in pieces):
            result.append(output)
            continue
        for kind, piece in pieces:
            if kind == "text":
                if piece.strip():
                    result.append(new_output("stream", name="stdout", text=piece.strip("\n") + "\n"))
            else:
                result.append(new_output("display_data", data={"text/html": table_html(piece)}))
    return result
