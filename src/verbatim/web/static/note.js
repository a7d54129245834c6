// Note page: selecting a sentence (or a risk flag) highlights the transcript segments it cites
// and scrolls to the first. Without script the link still jumps to the first cited segment.
"use strict";
document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-cites]");
  if (!link) return;
  const found = link.dataset.cites.split(" ").map((id) => document.getElementById("ev-" + id)).filter(Boolean);
  if (!found.length) return;
  event.preventDefault();
  document.querySelectorAll(".cited").forEach((el) => { el.classList.remove("cited"); el.removeAttribute("aria-current"); });
  document.querySelectorAll("a.active[data-cites]").forEach((a) => a.classList.remove("active"));
  link.classList.add("active");
  found.forEach((el) => { el.classList.add("cited"); el.setAttribute("aria-current", "true"); });
  found[0].scrollIntoView({ block: "center" });
  found[0].focus({ preventScroll: true });
});
