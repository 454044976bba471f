"""The executed HTML book, ``python -m minitorch book``: every chapter run from a fresh kernel and written
as static pages that work offline, with every output, typeset math and the book's contents on each page.

One module per job: chapters.py (which notebooks, their titles), execute.py (running them in kernels),
pages.py (the HTML of a page), assets.py (the shared stylesheet, script and MathJax), build.py (checking
the output folder, building the book aside and moving it into place). This package only runs notebooks:
it imports nothing from minitorch's paper code.
"""
