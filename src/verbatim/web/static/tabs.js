// Client tabs of a multi-client session (WAI-ARIA tabs: click or arrow keys). Without script
// every client's record is shown one after the other.
"use strict";
document.querySelectorAll("[data-tabs]").forEach((root) => {
  const tabs = Array.from(root.querySelectorAll('[role="tab"]'));
  if (!tabs.length) return;
  function show(chosen, focus) {
    tabs.forEach((tab) => {
      const on = tab === chosen;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      tab.tabIndex = on ? 0 : -1;
      document.getElementById(tab.getAttribute("aria-controls")).hidden = !on;
    });
    if (focus) chosen.focus();
  }
  tabs.forEach((tab, i) => {
    tab.addEventListener("click", () => show(tab, false));
    tab.addEventListener("keydown", (e) => {
      if (e.key === "ArrowRight") show(tabs[(i + 1) % tabs.length], true);
      if (e.key === "ArrowLeft") show(tabs[(i - 1 + tabs.length) % tabs.length], true);
    });
  });
  show(tabs[0], false);
});
