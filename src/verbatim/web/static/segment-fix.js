// Session page: "Correct the words" loads that segment's correction form in place of the link
// (the server's fragment, same origin, escaped by its templates). Without script the link opens
// the form on a page of its own.
"use strict";
document.addEventListener("click", async (event) => {
  const link = event.target.closest("a.fix");
  if (!link) return;
  event.preventDefault();
  const answer = await fetch(link.href, { headers: { "HX-Request": "true" }, credentials: "same-origin" });
  if (answer.status !== 200) { window.location.assign(link.href); return; }
  const holder = document.createElement("div");
  holder.innerHTML = await answer.text();
  const form = holder.querySelector("form");
  if (!form) { window.location.assign(link.href); return; }
  link.replaceWith(form);
  const box = form.querySelector("textarea");
  if (box) box.focus();
});
