/* The HTML book's one script (python -m minitorch book): MathJax's settings, read by MathJax.js when it
   loads after this file, the contents menu of narrow screens, printed tables fitted to the page's width,
   figures shown at full size on a click, and the answers opened for printing. */

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
