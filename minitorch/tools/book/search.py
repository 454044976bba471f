"""The book's search, which works offline from file://: an index built at book time, written as a script.

Each section of each chapter (from one '## ' heading to the next) is a document: its title, its prose and its
code (not the outputs). The package lunr (lunr.py, the Python port of Lunr.js, in requirements.txt) builds a
full-text index of them at book time: it splits the words, drops English stop words, stems ("lemmas" and
"lemma" become "lemma") and scores every term of every document (BM25). We keep, for each stemmed term, the
documents it occurs in with lunr's scores, and for each word of the book the stem lunr gave it.

A section's text is indexed as written (a formula's words, "delta" in $\\delta$, can be searched), and kept for
the snippets under a result as a reader would read it: each formula turned into plain text by the package
pylatexenc ($a_{i0} \\ge 1 - \\delta$ becomes "a_i0 ≥ 1 - δ"), the headings' "¶" left out. A section that
states a theorem, a lemma or an exercise (its anchor, references.py) records it, and a search for that name,
"Theorem 2", shows first the section where it is stated.

All of it goes into _static/search-index.js as one assignment, ``window.BOOK_SEARCH = {...}``, which a page
loads with a <script> element when the reader first types into the search box. A page opened from the disk
may load a script, but may not fetch() a file, which is how most static search tools read their index.
book.js does the looking up: each word typed is stemmed through the word list (or completed, as a prefix),
a section must contain every word, and the sections with the highest summed scores come first.
"""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path

SEARCH_INDEX = "search-index.js"  # in _static/
TITLE_BOOST = 5  # a word in a section's heading counts five times a word in its text
SNIPPET_TEXT = 6000  # characters of each section's text kept for the snippets shown under a result
BLOCKS = {"p", "li", "h3", "h4", "h5", "h6", "pre", "td", "th", "div", "blockquote"}  # a space after each
STATED = re.compile(r"(theorem|lemma|exercise)-(\d+(?:\.\d+)?)")  # the anchor where references.py says it is stated
FORMULA = re.compile(r"\$\$.+?\$\$|\$[^$]{1,400}\$|\\\(.+?\\\)|\\\[.+?\\\]", re.S)  # $$..$$, $..$, \(..\), \[..\]


class _SectionText(HTMLParser):
    """The text of a chapter page's content, split at its '## ' headings, outputs left out."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.sections: list[dict] = [{"anchor": "", "title": "", "text": [], "states": []}]
        self.in_heading = False
        self.skipping = 0  # > 0 inside an output area, a script, or a style (depth of nested divs)
        self.in_anchor_link = False  # inside a heading's "¶" link

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if self.skipping:
            if tag == "div":
                self.skipping += 1
            return
        if tag in ("script", "style") or (tag == "div" and "jp-OutputArea" in attributes.get("class", "")):
            self.skipping = 1
            return
        if tag == "h2" and attributes.get("id"):
            self.sections.append({"anchor": attributes["id"], "title": "", "text": [], "states": []})
            self.in_heading = True
        elif tag == "a" and "anchor-link" in attributes.get("class", ""):
            self.in_heading, self.in_anchor_link = False, True  # the heading's "¶"
        stated = STATED.fullmatch(attributes.get("id") or "")
        if stated:
            self.sections[-1]["states"].append(f"{stated.group(1).capitalize()} {stated.group(2)}")

    def handle_endtag(self, tag):
        if self.skipping and (tag == "div" or tag in ("script", "style")):
            self.skipping -= 1
            return
        if tag == "h2":
            self.in_heading = False
        elif tag == "a":
            self.in_anchor_link = False
        if tag in BLOCKS and not self.skipping:
            self.sections[-1]["text"].append(" ")  # "one" of a heading and "ReLU" of the next paragraph stay apart

    def handle_data(self, data):
        if self.skipping or self.in_anchor_link:
            return
        section = self.sections[-1]
        if self.in_heading:
            section["title"] += data
        else:
            section["text"].append(data)


def check_search_package() -> None:
    """A BookError saying how to install lunr or pylatexenc if one is missing (checked before any chapter runs)."""
    from minitorch.tools.book.chapters import BookError

    try:
        import pylatexenc  # noqa: F401
    except ImportError:
        raise BookError("the book's search writes its snippets' formulas as text with the package pylatexenc, which "
                        "is not installed: pip install -r requirements.txt") from None
    try:
        import lunr  # noqa: F401
    except ImportError:
        raise BookError("the book's search index is built with the package lunr, which is not installed: "
                        "pip install -r requirements.txt") from None


def plain_text(text: str) -> str:
    """``text`` with each formula ($...$, $$...$$, \\(...\\), \\[...\\]) written as plain text ("a_i0 ≥ 1 - δ")."""
    from pylatexenc.latex2text import LatexNodes2Text

    converter = LatexNodes2Text(math_mode="text")

    def formula(match: re.Match) -> str:
        written = match.group(0)
        written = written[2:-2] if written[:2] in ("$$", "\\(", "\\[") else written[1:-1]
        written = re.sub(r"\\tag\{([^}]*)\}", r"\\quad(\1)", written)  # an equation's number, as the page shows it
        try:
            return re.sub(r"\s+", " ", converter.latex_to_text(written)).strip()
        except Exception:  # noqa: BLE001 - a formula pylatexenc cannot read is shown as written
            return match.group(0)

    return FORMULA.sub(formula, text)


def section_documents(page: str, page_name: str, chapter_title: str) -> list[dict]:
    """The searchable sections of a chapter page (its HTML): link, title, plain text (for the snippets), the
    text as written (``indexed``: for the index) and the numbered things it states."""
    main = re.search(r'<main class="book-main">(.*)</main>', page, re.S)
    parser = _SectionText()
    parser.feed(main.group(1) if main else page)
    documents = []
    for section in parser.sections:
        text = re.sub(r"\s+", " ", html.unescape("".join(section["text"]))).strip()
        if not text and not section["title"]:
            continue
        title = section["title"].strip() or chapter_title
        link = f"{page_name}#{section['anchor']}" if section["anchor"] else page_name
        documents.append({"link": link, "chapter": chapter_title, "title": plain_text(title), "text": plain_text(text),
                          "indexed": f"{title} {text}", "states": section["states"]})
    return documents


def build_index(documents: list[dict]) -> dict:
    """The data of search-index.js: the documents, each stemmed term's (document, score) pairs, the stem
    of each word of the book, and the stop words (left out of the index, so skipped in a query)."""
    from lunr import lunr
    from lunr.stemmer import stemmer
    from lunr.stop_word_filter import WORDS, stop_word_filter
    from lunr.tokenizer import Tokenizer
    from lunr.trimmer import trimmer

    index = lunr(ref="ref", fields=[{"field_name": "title", "boost": TITLE_BOOST}, "text"],
                 documents=[{"ref": str(number), "title": document["title"],
                             "text": document.get("indexed", document["text"])}
                            for number, document in enumerate(documents)])
    serialized = index.serialize()
    term_of_index = {entry[1]["_index"]: entry[0] for entry in serialized["invertedIndex"]}
    postings: dict[str, dict[int, float]] = {}
    for field_and_ref, vector in serialized["fieldVectors"]:
        field, ref = field_and_ref.split("/", 1)
        boost = TITLE_BOOST if field == "title" else 1
        for position in range(0, len(vector), 2):
            term = term_of_index[vector[position]]
            scores = postings.setdefault(term, {})
            scores[int(ref)] = round(scores.get(int(ref), 0.0) + boost * vector[position + 1], 3)
    words: dict[str, str] = {}
    for document in documents:
        for token in Tokenizer(document["title"] + " " + document.get("indexed", document["text"])):
            word = trimmer(token)
            if word is None or not str(word) or stop_word_filter(word) is None:
                continue
            surface = str(word)  # before stemming: the stemmer changes the token in place
            stem = str(stemmer(word))
            if stem in postings:
                words.setdefault(surface, stem)
    kept = ("link", "chapter", "title", "text", "states")  # what book.js shows and sorts by
    return {"documents": [{**{key: document[key] for key in kept if document.get(key)},
                           "text": document["text"][:SNIPPET_TEXT]} for document in documents],
            "terms": {term: sorted(scores.items()) for term, scores in postings.items()},
            "words": words, "stop_words": sorted(WORDS)}


def write_search_index(book: Path, chapters) -> Path:
    """_static/search-index.js for the ``chapters`` written in ``book``."""
    documents = []
    for chapter in chapters:
        page = (book / chapter.page).read_text(encoding="utf-8")
        documents += section_documents(page, chapter.link, chapter.title)
    path = book / "_static" / SEARCH_INDEX
    data = json.dumps(build_index(documents), ensure_ascii=False, separators=(",", ":"))
    path.write_text(f"window.BOOK_SEARCH = {data};\n", encoding="utf-8")
    return path
