"""Anchors and links: theorems, lemmas, exercises, sections and equations get an anchor where the book
states them, and the prose's references to them ("Theorem 1", "exercise 4.4", "chapter 05, section 6.2",
"inequality (2)") become links; so do the works the book cites (Gu et al., Miller, arXiv numbers).

The anchors are found in the chapters' markdown before they run (`find_labels`), so a reference in chapter
03 can link to a theorem of chapter 05. Anchor names: ``theorem-1``, ``lemma-2``, ``exercise-4.4``,
``section-6.2``, ``equation-2`` (sections and equations are numbered per chapter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# The works cited: how the prose names them, and where each can be read.
CITED_WORKS = {
    r"Gu et al\.": "https://arxiv.org/abs/2410.10781",  # When attention sink emerges in language models (ICLR 2025)
    r"E\. Miller": "https://www.evanmiller.org/attention-is-off-by-one.html",  # "Attention is off by one"
}
ARXIV_NUMBER = re.compile(r"\barXiv[: ](\d{4}\.\d{4,5})\b")
NOT_LINKED_INSIDE = ("a", "code", "pre", "script", "style", "strong", "h1", "h2", "h3", "h4")
SEPARATOR = r"(?:,\s*|\s+and\s+|\s+or\s+|\s+to\s+|\s*(?:-|–|&ndash;)\s*)"
STATED = {  # how the markdown states a numbered thing, **in bold**
    "theorem": re.compile(r"\*\*Theorem (\d+)\b"),
    "lemma": re.compile(r"\*\*Lemma (\d+)\b|; Lemma (\d+)\)\.\*"),  # or in a step's title: "*Step D (...; Lemma 4).*"
    "exercise": re.compile(r"\*\*Exercise (\d+\.\d+)\b"),
}
SECTION_HEADING = re.compile(r"^#{2,3}\s+(\d+(?:\.\d+)?)\.?\s", re.M)
EQUATION_TAG = re.compile(r"\\tag\{(\d+)\}")
REFERENCE = re.compile(
    rf"(?P<chapter>[Cc]hapter (?P<chapter_number>\d\d)(?:,|'s| \()\s*)?(?P<section_word>[Ss]ections? )"
    rf"(?P<sections>\d+(?:\.\d+)?(?:{SEPARATOR}\d+(?:\.\d+)?)*)"
    rf"|(?P<kind>Theorem|Lemma)s? (?P<numbers>\d+(?:{SEPARATOR}\d+)*)"
    rf"|(?P<exercise_word>[Ee]xercises? )(?P<exercises>\d+\.\d+(?:{SEPARATOR}\d+\.\d+)*)"
    rf"|(?P<equation_word>(?:eq\.|[Ee]quation|[Ii]nequality|[Ii]dentity|[Rr]earranging|and|by) )"
    rf"\((?P<equation>\d+)\)")


@dataclass
class Labels:
    """Where each numbered thing is stated: kind -> number -> chapter number (sections and equations:
    chapter number -> the numbers it has)."""

    stated: dict[str, dict[str, str]] = field(default_factory=lambda: {kind: {} for kind in STATED})
    sections: dict[str, set[str]] = field(default_factory=dict)
    equations: dict[str, set[str]] = field(default_factory=dict)


def find_labels(chapters) -> Labels:
    """The numbered things of every chapter, read from the notebooks' markdown (the first statement wins)."""
    import nbformat

    labels = Labels()
    for chapter in chapters:
        notebook = nbformat.read(chapter.path, as_version=4)
        text = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
        for kind, pattern in STATED.items():
            for match in pattern.finditer(text):
                labels.stated[kind].setdefault(next(group for group in match.groups() if group), chapter.number)
        labels.sections[chapter.number] = set(SECTION_HEADING.findall(text))
        labels.equations[chapter.number] = set(EQUATION_TAG.findall(text))
    return labels


def add_anchors(cells: str, chapter_number: str, labels: Labels) -> str:
    """The chapter's HTML with an anchor at each theorem, lemma and exercise it states, each numbered
    section heading and each tagged equation."""
    for kind, numbers in labels.stated.items():
        for number, where in numbers.items():
            if where == chapter_number:
                cells = re.sub(rf"<strong>({kind.capitalize()} {re.escape(number)})\b",
                               rf'<strong id="{kind}-{number}">\1', cells, count=1)
                if f'id="{kind}-{number}"' not in cells:  # stated inside a step's title
                    cells = re.sub(rf'((?:<a class="book-ref" href="#{kind}-{re.escape(number)}">)?'
                                   rf"{kind.capitalize()} {re.escape(number)}(?:</a>)?\))",
                                   rf'<span id="{kind}-{number}"></span>\1', cells, count=1)

    def section_anchor(match: re.Match) -> str:
        return f'<span class="book-anchor" id="section-{match.group(2)}"></span>{match.group(0)}'

    cells = re.sub(r'<h([23]) id="[^"]*">(\d+(?:\.\d+)?)\.?\s', lambda match: section_anchor(match)
                   if match.group(2) in labels.sections.get(chapter_number, ()) else match.group(0), cells)
    seen: set[str] = set()

    def equation_anchor(match: re.Match) -> str:
        number = EQUATION_TAG.search(match.group(0)).group(1)
        if number in seen:
            return match.group(0)
        seen.add(number)
        return f'<span class="book-anchor" id="equation-{number}"></span>{match.group(0)}'

    return re.sub(r"\$\$(?:(?!\$\$).)*?\\tag\{\d+\}(?:(?!\$\$).)*?\$\$", equation_anchor, cells, flags=re.S)


def link_references(page: str, chapter_number: str, labels: Labels, pages: dict[str, str]) -> str:
    """``page`` (HTML) with the references to numbered things and cited works linked (``pages``: chapter
    number -> its href, `Chapter.link`); text inside links, code, headings and scripts is left alone. Each cited
    work is linked at its first mention on the page."""
    cited: set[str] = set()

    def target(chapter: str, anchor: str) -> str:
        return f"#{anchor}" if chapter == chapter_number else f"{pages[chapter]}#{anchor}"

    def link(text: str, href: str) -> str:
        return f'<a class="book-ref" href="{href}">{text}</a>'

    def numbers_linked(words: str, numbers: str, href_of) -> str:
        """"Theorem 1" is one link; in "exercises 4.2 to 4.4" each number is a link."""
        if re.fullmatch(r"\d+(?:\.\d+)?", numbers):
            return link(words + numbers, href_of(numbers)) if href_of(numbers) else words + numbers
        return words + re.sub(r"\d+(?:\.\d+)?", lambda number: (link(number.group(0), href_of(number.group(0)))
                                                                if href_of(number.group(0)) else number.group(0)),
                              numbers)

    def reference(match: re.Match) -> str:
        if match.group("section_word"):
            chapter = match.group("chapter_number") or chapter_number
            if chapter not in pages and chapter != chapter_number:
                return match.group(0)
            href_of = (lambda number: target(chapter, f"section-{number}")
                       if number in labels.sections.get(chapter, ()) else None)
            return (match.group("chapter") or "") + numbers_linked(match.group("section_word"),
                                                                   match.group("sections"), href_of)
        if match.group("kind"):
            kind = match.group("kind").lower()
            where = labels.stated[kind]
            href_of = (lambda number: target(where[number], f"{kind}-{number}")
                       if where.get(number) in (*pages, chapter_number) else None)
            head = match.group(0)[:match.start("numbers") - match.start()]
            return numbers_linked(head, match.group("numbers"), href_of)
        if match.group("exercise_word"):
            where = labels.stated["exercise"]
            href_of = (lambda number: target(where[number], f"exercise-{number}")
                       if where.get(number) in (*pages, chapter_number) else None)
            return numbers_linked(match.group("exercise_word"), match.group("exercises"), href_of)
        number = match.group("equation")
        if number not in labels.equations.get(chapter_number, ()):
            return match.group(0)
        return match.group("equation_word") + link(f"({number})", f"#equation-{number}")

    def link_text(text: str) -> str:
        text = REFERENCE.sub(reference, text)
        for name, address in CITED_WORKS.items():
            if name not in cited and re.search(name, text):
                cited.add(name)
                text = re.sub(name, lambda match: link(match.group(0), address), text, count=1)
        return ARXIV_NUMBER.sub(lambda match: link(match.group(0), f"https://arxiv.org/abs/{match.group(1)}"),
                                text)

    return outside_tags(page, link_text)


def outside_tags(page: str, change, skip: tuple[str, ...] = NOT_LINKED_INSIDE) -> str:
    """``page`` with ``change`` applied to each piece of text that is not inside an element named in ``skip``."""
    pieces, inside = [], []
    for piece in re.split(r"(<[^>]*>)", page):
        tag = re.match(r"<(/?)([a-zA-Z0-9]+)", piece)
        if tag:
            name = tag.group(2).lower()
            if name in skip and not piece.endswith("/>"):
                if tag.group(1):
                    if name in inside:
                        del inside[len(inside) - 1 - inside[::-1].index(name)]
                else:
                    inside.append(name)
        elif not inside and piece:
            piece = change(piece)
        pieces.append(piece)
    return "".join(pieces)
