// memlane inspector: small conveniences only; every page works without this file.
"use strict";
document.addEventListener("keydown", function (e) {
  // "/" focuses the search box, as in most consoles.
  var box = document.getElementById("q");
  if (e.key === "/" && box && document.activeElement !== box && !(e.target instanceof HTMLInputElement) && !(e.target instanceof HTMLTextAreaElement)) {
    e.preventDefault();
    box.focus();
    box.select();
  }
});
