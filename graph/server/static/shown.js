// Text from a transcript or a memory as the pages show it: control and bidirectional formatting
// characters as escapes (\x1b, \u202e), as the server and the command line show them, so a
// right-to-left override cannot reorder what a page shows. Loaded before each page's own script.
"use strict";
window.sessiongraphShown = (function () {
  const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
  return function shown(text) {
    return String(text).replace(CONTROLS, (c) => {
      const n = c.charCodeAt(0);
      return n < 0x100 ? `\\x${n.toString(16).padStart(2, "0")}` : `\\u${n.toString(16).padStart(4, "0")}`;
    });
  };
})();
