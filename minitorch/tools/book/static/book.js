/* The HTML book's one script (python -m minitorch book): MathJax's settings, read by MathJax.js when it
   loads after this file, the contents menu of narrow screens, printed tables fitted to the page's width,
   figures shown at full size on a click, the answers opened for printing, and the search box. */

window.MathJax = {
  /* The rest (TeX input, HTML-CSS output, AMS macros, the menu) comes from the combined configuration named
     in each page's MathJax.js?config=... */
  tex2jax: {
    inlineMath: [["$", "$"], ["\\(", "\\)"]],
    displayMath: [["$$", "$$"], ["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true
  },
  /* The fonts are the STIX web fonts shipped in _static/mathjax/fonts: never a local or a remote font. */
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null},
  "fast-preview": {disabled: true},  /* one typesetting pass, not a rough preview first */
  MathMenu: {showRenderer: false, showFontMenu: false, showLocale: false},
  messageStyle: "none"
};

document.addEventListener("DOMContentLoaded", function () {
  var button = document.querySelector(".book-menu");
  var sidebar = document.getElementById("book-sidebar");
  if (!button || !sidebar) return;
  button.addEventListener("click", function () {
    var open = document.body.classList.toggle("book-menu-open");
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });
  function close() {
    document.body.classList.remove("book-menu-open");
    button.setAttribute("aria-expanded", "false");
  }
  sidebar.addEventListener("click", function (event) {  /* following a link closes the menu */
    if (event.target.closest("a")) close();
  });
  document.querySelector(".book-main").addEventListener("click", close);  /* so does a click beside it */
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") close();
  });
  var current = sidebar.querySelector(".book-current");  /* the contents open at the current chapter */
  if (current) sidebar.scrollTop = current.offsetTop - 48;
});

/* A printed table (an output box) wider than the page: its font shrinks until it fits, down to
   smallestFont() pixels; below that it wraps. Done again when the window's width changes or an answer opens. */
function smallestFont() {  /* pixels: legible on a wide screen; smaller on a phone and in the printed book */
  if (document.body.classList.contains("book-printed")) return 6.5;
  return window.innerWidth < 600 ? 7.5 : 9.5;
}
function fitOutputs() {
  var smallest = smallestFont();
  document.querySelectorAll(".jp-OutputArea pre").forEach(function (pre) {
    pre.style.fontSize = "";
    pre.classList.remove("book-wrap");
    if (!pre.clientWidth) return;  /* hidden (a closed answer): fitted when it opens */
    var style = getComputedStyle(pre);
    var padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    var room = pre.clientWidth - padding, needed = pre.scrollWidth - padding;
    if (needed <= room + 1) return;
    var fitted = Math.floor(parseFloat(style.fontSize) * room / needed * 0.98 * 10) / 10;
    if (fitted >= smallest) pre.style.fontSize = fitted + "px";
    else pre.classList.add("book-wrap");
  });
}
document.addEventListener("DOMContentLoaded", function () {
  fitOutputs();
  var pending = null;
  window.addEventListener("resize", function () {
    clearTimeout(pending);
    pending = setTimeout(fitOutputs, 150);
  });
  document.querySelectorAll("details").forEach(function (details) {
    details.addEventListener("toggle", fitOutputs);
  });
  document.querySelectorAll(".book-figure img").forEach(function (image) {
    image.addEventListener("click", function () {
      image.closest(".book-figure").classList.toggle("book-zoomed");
    });
  });
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Escape") return;
    document.querySelectorAll(".book-zoomed").forEach(function (figure) { figure.classList.remove("book-zoomed"); });
  });
});
/* Printing opens every answer (a closed details prints only its summary), and closes them again after. */
var openedForPrint = [];
window.addEventListener("beforeprint", function () {
  openedForPrint = Array.prototype.filter.call(document.querySelectorAll("details:not([open])"), function (d) {
    d.open = true;
    return true;
  });
});
window.addEventListener("afterprint", function () {
  openedForPrint.forEach(function (details) { details.open = false; });
  openedForPrint = [];
});

/* Search. The index (search.py) is a script, _static/search-index.js, loaded on the first keystroke: a page
   opened from the disk may load a script but not fetch() a file. A section must hold every word typed (each
   word stemmed through the book's word list, or, if it is no word of the book, completed as a prefix); the
   sections with the largest summed scores come first, those holding the words as typed, in order, before
   them, and first of all the section that states what was typed ("Theorem 2": where it is stated). */
function searchBook(data, query) {
  var typed = query.toLowerCase().trim();
  var words = typed.split(/[\s\-]+/).map(function (word) { return word.replace(/^\W+|\W+$/g, ""); })
    .filter(function (word) { return word && data.stop_words.indexOf(word) < 0; });
  if (!words.length) return [];
  var surfaces = Object.keys(data.words), scores = null;
  for (var w = 0; w < words.length; w++) {
    var stems = {};
    if (data.words[words[w]]) stems[data.words[words[w]]] = true;
    else surfaces.forEach(function (surface) {
      if (surface.indexOf(words[w]) === 0) stems[data.words[surface]] = true;
    });
    var found = {};
    Object.keys(stems).forEach(function (stem) {
      data.terms[stem].forEach(function (pair) { found[pair[0]] = Math.max(found[pair[0]] || 0, pair[1]); });
    });
    if (scores === null) scores = found;
    else {
      var both = {};
      Object.keys(scores).forEach(function (doc) { if (doc in found) both[doc] = scores[doc] + found[doc]; });
      scores = both;
    }
  }
  var name = typed.replace(/\s+/g, " ");
  return Object.keys(scores).map(function (doc) {
    var document_ = data.documents[doc];
    var exact = (document_.title + " " + document_.text).toLowerCase().indexOf(typed) >= 0;
    var states = (document_.states || []).some(function (stated) { return stated.toLowerCase() === name; });
    return {doc: document_, score: scores[doc] + (exact ? 1000 : 0) + (states ? 1e6 : 0)};
  }).sort(function (a, b) { return b.score - a.score; }).slice(0, 12).map(function (hit) { return hit.doc; });
}
function escapeHtml(text) {
  return text.replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; });
}
function snippet(text, query) {
  var lower = text.toLowerCase(), words = query.toLowerCase().split(/\s+/).filter(Boolean);
  var at = lower.indexOf(query.toLowerCase().trim());
  for (var i = 0; at < 0 && i < words.length; i++) at = lower.indexOf(words[i]);
  var start = Math.max(0, at - 60), piece = escapeHtml(text.slice(start, start + 180));
  words.forEach(function (word) {
    piece = piece.replace(new RegExp("(" + word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + ")", "ig"), "<mark>$1</mark>");
  });
  return (start > 0 ? "&hellip;" : "") + piece + "&hellip;";
}
document.addEventListener("DOMContentLoaded", function () {
  var input = document.querySelector(".book-search-input"), list = document.querySelector(".book-search-results");
  if (!input || !list) return;
  function show() {
    var query = input.value;
    if (!window.BOOK_SEARCH || !query.trim()) { list.hidden = true; return; }
    var hits = searchBook(window.BOOK_SEARCH, query);
    list.innerHTML = hits.length ? hits.map(function (doc) {
      return '<li><a href="' + doc.link + '"><strong>' + escapeHtml(doc.title) + '</strong> <span class="book-search-chapter">' +
        escapeHtml(doc.chapter) + "</span><p>" + snippet(doc.text, query) + "</p></a></li>";
    }).join("") : "<li>No section holds all of these words.</li>";
    list.hidden = false;
  }
  function load() {
    if (window.BOOK_SEARCH || input.dataset.loading) return;
    input.dataset.loading = "1";
    var script = document.createElement("script");
    script.src = input.dataset.index;
    script.onload = show;
    script.onerror = function () { list.innerHTML = "<li>The search index is missing from _static/.</li>"; list.hidden = false; };
    document.head.appendChild(script);
  }
  input.addEventListener("focus", load);
  input.addEventListener("input", function () { load(); show(); });
  input.addEventListener("keydown", function (event) {
    if (event.key === "Enter") {
      var first = list.querySelector("a");
      if (first) window.location.href = first.getAttribute("href");
    } else if (event.key === "Escape") {
      list.hidden = true;
    }
  });
  document.addEventListener("click", function (event) { if (!event.target.closest(".book-search")) list.hidden = true; });
});
