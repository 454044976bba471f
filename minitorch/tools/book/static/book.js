/* The HTML book's one script (python -m minitorch book): MathJax's settings, read by MathJax.js when it
   loads after this file, and the contents menu of narrow screens. */

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
