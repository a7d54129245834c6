// Note page.
// 1. Selecting a sentence (or a risk flag) highlights the transcript segments it cites. Where the record
//    stands beside the note it scrolls there; where it does not (a tablet's single column), the cited words
//    open inline, under the sentence. Without script the link still jumps to the first cited segment.
// 2. The draft's edit form autosaves (a moment after typing stops, at least every MAX_WAIT_MS while it goes
//    on) to the page's own autosave route, and says whether the text is saved. Until it is, the text is kept
//    in this tab's sessionStorage (key verbatim.unsaved.<note>.<version>; it goes nowhere else): a session
//    that expired while typing loses nothing — after sign-in the page restores the text and saves it.
"use strict";

function besideTheNote() {
  const aside = document.querySelector(".evidence");
  const text = document.querySelector(".note-text");
  if (!aside || !text) return true;
  return aside.getBoundingClientRect().left >= text.getBoundingClientRect().right;
}

function clearEvidence() {
  document.querySelectorAll(".cited").forEach((el) => { el.classList.remove("cited"); el.removeAttribute("aria-current"); });
  document.querySelectorAll("a.active[data-cites]").forEach((a) => a.classList.remove("active"));
  document.querySelectorAll(".inline-evidence").forEach((el) => el.remove());
}

function inlineEvidence(link, found) {
  const panel = document.createElement("div");
  panel.className = "inline-evidence";
  panel.setAttribute("role", "region");
  panel.setAttribute("aria-label", "The words this rests on");
  panel.tabIndex = -1;
  const list = document.createElement("ol");
  list.className = "conversation";
  found.forEach((el) => {
    const copy = el.cloneNode(true);
    copy.removeAttribute("id");
    copy.removeAttribute("tabindex");
    copy.removeAttribute("aria-current");
    copy.classList.remove("cited");
    list.appendChild(copy);
  });
  const whole = document.createElement("a");
  whole.href = "#" + found[0].id;
  whole.textContent = "Show in the whole record";
  const close = document.createElement("button");
  close.type = "button";
  close.className = "small inline-close";
  close.textContent = "Close";
  panel.append(list, whole, close);
  (link.closest("li") || link.parentElement).appendChild(panel);
  panel.scrollIntoView({ block: "nearest" });
  panel.focus({ preventScroll: true });
}

document.addEventListener("click", (event) => {
  const close = event.target.closest("button.inline-close");
  if (close) {
    const link = close.closest("li") && close.closest("li").querySelector("a[data-cites]");
    clearEvidence();
    if (link) link.focus();
    return;
  }
  const link = event.target.closest("a[data-cites]");
  if (!link) return;
  const found = link.dataset.cites.split(" ").map((id) => document.getElementById("ev-" + id)).filter(Boolean);
  if (!found.length) return;
  event.preventDefault();
  clearEvidence();
  link.classList.add("active");
  found.forEach((el) => { el.classList.add("cited"); el.setAttribute("aria-current", "true"); });
  if (besideTheNote()) {
    found[0].scrollIntoView({ block: "center" });
    found[0].focus({ preventScroll: true });
  } else {
    inlineEvidence(link, found);
  }
});

const DEBOUNCE_MS = 1500;
const MAX_WAIT_MS = 20000;
const RETRY_MS = 5000;

function autosave(form) {
  const prefix = "verbatim.unsaved." + form.dataset.note + ".";
  const state = document.getElementById("save-state");
  const signIn = document.getElementById("save-sign-in");
  const version = form.querySelector("input[name=version]");
  const areas = () => Array.from(form.querySelectorAll("textarea"));
  const texts = () => JSON.stringify(areas().map((a) => a.value));
  let saved = texts();  // what the server holds
  let timer = null;
  let since = 0;
  let busy = false;
  let again = false;

  const show = (kind, words) => { state.hidden = false; state.dataset.state = kind; state.textContent = words; };
  const keys = () => {
    try { return Object.keys(sessionStorage).filter((k) => k.startsWith(prefix)); } catch (e) { return []; }
  };
  const forget = () => keys().forEach((k) => sessionStorage.removeItem(k));
  const keep = () => {
    try {
      forget();
      sessionStorage.setItem(prefix + version.value, texts());
    } catch (e) {
      show("unsaved", "Not saved yet, and this browser would not keep a copy: do not leave the page.");
    }
  };
  const schedule = (delay) => {
    if (!since) since = Date.now();
    clearTimeout(timer);
    timer = setTimeout(save, Math.max(0, Math.min(delay, MAX_WAIT_MS - (Date.now() - since))));
  };
  const replace = (id, html) => { const el = document.getElementById(id); if (el) el.innerHTML = html; };

  async function save() {
    clearTimeout(timer);
    timer = null;
    since = 0;
    if (busy) { again = true; return; }
    const sent = texts();
    if (sent === saved) {
      forget();
      show("saved", "All changes saved");
      return;
    }
    const body = new URLSearchParams(new FormData(form));
    busy = true;
    show("saving", "Saving…");
    let answer = null;
    try {
      answer = await fetch(form.dataset.autosave, {
        method: "POST", body, credentials: "same-origin", redirect: "manual",
        headers: { Accept: "application/json" },
      });
    } catch (e) {
      answer = null;
    }
    busy = false;
    if (answer === null) {
      show("unsaved", "Not saved: the server could not be reached. Your text is kept in this tab; saving again shortly.");
      schedule(RETRY_MS);
    } else if (answer.type === "opaqueredirect" || answer.status === 401 || answer.status === 303) {
      // The page session ended (idle sign-out): the text stays in sessionStorage until it is saved.
      show("unsaved", "Not saved: you were signed out after a period without activity. Your text is kept in this tab.");
      signIn.hidden = false;
    } else if (answer.ok) {
      const out = await answer.json();
      version.value = String(out.version);
      saved = sent;
      signIn.hidden = true;
      replace("note-meta", out.meta);
      replace("note-sections", out.sections);
      replace("sign-card", out.sign);
      if (texts() === saved) {
        forget();
        show("saved", "All changes saved");
      } else {
        keep();
        schedule(DEBOUNCE_MS);
      }
    } else {
      let detail = "the server refused it (" + answer.status + ").";
      try { detail = (await answer.json()).detail || detail; } catch (e) { /* not JSON */ }
      show("unsaved", "Not saved: " + detail);
    }
    if (again) { again = false; schedule(0); }
  }

  form.addEventListener("input", () => {
    keep();
    show("pending", "Changes not saved yet…");
    schedule(DEBOUNCE_MS);
  });
  form.addEventListener("submit", (event) => { event.preventDefault(); save(); });

  // Text typed before a sign-out (or a closed connection), kept in this tab: put it back and save it.
  const kept = keys()[0];
  if (kept) {
    let restored = null;
    try { restored = JSON.parse(sessionStorage.getItem(kept)); } catch (e) { restored = null; }
    const boxes = areas();
    if (Array.isArray(restored) && restored.length === boxes.length) {
      if (JSON.stringify(restored) === saved) {
        forget();
      } else {
        restored.forEach((t, i) => { boxes[i].value = String(t); });
        show("pending", "Restored the text you typed before; saving it…");
        save();
      }
    }
  }
}

// An amendment is not saved by itself (it needs its reason, and changes a signed record): what is typed is
// kept in the tab until the form is sent, and put back if the page comes back at the same version.
function keepAmendment(form) {
  const prefix = "verbatim.unsaved-amendment." + form.dataset.note + ".";
  const key = prefix + form.dataset.version;
  const fields = () => Array.from(form.querySelectorAll("textarea, input[name=reason]"));
  const values = () => JSON.stringify(fields().map((f) => f.value));
  const original = values();
  let store = null;
  try {
    store = window.sessionStorage;
    Object.keys(store).filter((k) => k.startsWith(prefix) && k !== key).forEach((k) => store.removeItem(k));
    const kept = JSON.parse(store.getItem(key) || "null");
    const boxes = fields();
    if (Array.isArray(kept) && kept.length === boxes.length && JSON.stringify(kept) !== original) {
      kept.forEach((v, i) => { boxes[i].value = String(v); });
      document.getElementById("amend-restored").hidden = false;
    }
  } catch (e) { store = null; }
  form.addEventListener("input", () => {
    if (!store) return;
    try {
      if (values() === original) store.removeItem(key); else store.setItem(key, values());
    } catch (e) { /* storage full: nothing more to do */ }
  });
}

const editForm = document.getElementById("edit-form");
if (editForm) autosave(editForm);
const amendForm = document.getElementById("amend-form");
if (amendForm) keepAmendment(amendForm);
