// Recorder page: record on the phone and lose nothing from the first second.
//
// MediaRecorder hands a chunk every second (timeslice 1000 ms). Each chunk is first encrypted
// with this device's AES-GCM key (generated non-extractable, kept in IndexedDB: script can use it,
// nothing can read it out) and written to IndexedDB; only then is it sent, in order, through a
// deferred-length tus upload (/v1/uploads, Upload-Defer-Length: 1, Upload-Checksum per PATCH).
// A chunk is deleted from the device only after the server answered an Upload-Offset past it
// (write before delete, on the phone too). Offline, chunks pile up and are sent when the server
// answers again; after a crash or a reload the page finds the unfinished recording in IndexedDB,
// sends what the device holds and offers to finish it or record a new part. Each part is its own
// MediaRecorder stream and its own upload; the server assembles the parts in order when the
// session is created (POST /v1/sessions {upload_ids, metadata}).
//
// Why our own client rather than tus-js-client: it keeps its progress in memory and localStorage,
// not the chunks; what must survive here is the audio itself, chunk by chunk, with its offsets.
"use strict";
(function () {
  const root = document.getElementById("recorder");
  if (!root) return;
  let csrf = root.dataset.csrf;  // renewed from /app/record/csrf after a sign-in in another tab
  const TIMESLICE_MS = 1000;
  const MAX_PATCH_BYTES = 1024 * 1024;
  const $ = (id) => document.getElementById(id);
  const form = $("recorder-form");
  const ui = {
    start: $("rec-start"), pause: $("rec-pause"), finish: $("rec-finish"), state: $("rec-state"),
    elapsed: $("rec-elapsed"), saved: $("rec-saved"), sent: $("rec-sent"), waiting: $("rec-waiting"),
    message: $("rec-message"), found: $("rec-found"), foundText: $("rec-found-text"),
    resume: $("rec-continue"), finishFound: $("rec-finish-found"), network: $("rec-network"),
    signIn: $("rec-sign-in"),
  };

  // --- IndexedDB ------------------------------------------------------------------------------
  let dbPromise = null;
  function db() {
    if (!dbPromise) {
      dbPromise = new Promise((resolve, reject) => {
        const open = indexedDB.open("verbatim-recorder", 1);
        open.onupgradeneeded = () => {
          const d = open.result;
          d.createObjectStore("keys");
          d.createObjectStore("recordings", { keyPath: "id" });
          d.createObjectStore("chunks", { keyPath: ["rec", "part", "seq"] });
        };
        open.onsuccess = () => resolve(open.result);
        open.onerror = () => reject(open.error);
      });
    }
    return dbPromise;
  }

  function tx(stores, mode, work) {
    return db().then((d) => new Promise((resolve, reject) => {
      const t = d.transaction(stores, mode, { durability: "strict" });
      let result;
      Promise.resolve(work(t)).then((r) => { result = r; });
      t.oncomplete = () => resolve(result);
      t.onerror = () => reject(t.error);
      t.onabort = () => reject(t.error || new Error("IndexedDB transaction aborted"));
    }));
  }

  function req(r) { return new Promise((resolve, reject) => { r.onsuccess = () => resolve(r.result); r.onerror = () => reject(r.error); }); }

  async function deviceKey() {
    const found = await tx(["keys"], "readonly", (t) => req(t.objectStore("keys").get("device")));
    if (found) return found;
    const key = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"]);
    await tx(["keys"], "readwrite", (t) => { t.objectStore("keys").put(key, "device"); });
    return key;
  }

  function putRecording(rec) { return tx(["recordings"], "readwrite", (t) => { t.objectStore("recordings").put(rec); }); }
  function allRecordings() { return tx(["recordings"], "readonly", (t) => req(t.objectStore("recordings").getAll())); }
  function chunksOf(rec, part) {
    const range = IDBKeyRange.bound([rec, part, 0], [rec, part, Infinity]);
    return tx(["chunks"], "readonly", (t) => req(t.objectStore("chunks").getAll(range)));
  }
  function countChunks(rec) {
    const range = IDBKeyRange.bound([rec, 0, 0], [rec, Infinity, Infinity]);
    return tx(["chunks"], "readonly", (t) => req(t.objectStore("chunks").count(range)));
  }

  // --- state ----------------------------------------------------------------------------------
  let key = null;
  let rec = null;          // the recording being made or sent (its IndexedDB record)
  let recorder = null;     // MediaRecorder of the current part
  let stream = null;
  let wakeLock = null;
  let timer = null;
  let segmentStart = 0;    // when the current stretch of recording began (ms since epoch)
  let pumping = false;
  let pumpAgain = false;
  let online = true;
  let writes = Promise.resolve();  // chunks are written in the order MediaRecorder hands them
  let releaseLock = null;

  // How much audio the device holds, in recorder time. Not chunks × the timeslice: Chromium hands a
  // chunk at the first encoded Opus frame (60 ms) past each 1000 ms, so its chunks hold 1.02 s and a
  // count of them falls 1.2 s a minute behind the microphone. (savedChunks: records of an older page.)
  function savedMsOf(r) { return r.savedMs !== undefined ? r.savedMs : r.savedChunks * TIMESLICE_MS; }

  function say(text) { ui.message.textContent = text; }
  function seconds(ms) { const s = Math.floor(ms / 1000); return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0"); }
  function elapsedMs() { return rec ? rec.elapsedMs + (recorder && recorder.state === "recording" ? Date.now() - segmentStart : 0) : 0; }

  async function render() {
    if (!rec) return;
    ui.elapsed.textContent = seconds(elapsedMs());
    const waiting = await countChunks(rec.id);
    const savedMs = savedMsOf(rec);
    ui.saved.textContent = seconds(savedMs);
    ui.sent.textContent = seconds(Math.min(savedMs, rec.parts.reduce((sum, p) => sum + (p.sentMs || 0), 0)));
    ui.waiting.textContent = String(waiting);
    ui.network.textContent = online ? "connected" : "offline — recording continues on this device";
    root.dataset.waiting = String(waiting);
    root.dataset.online = online ? "yes" : "no";
    // The recorder's own clock, for a reader outside the page (the recorder bench): elapsed ms as
    // of elapsedAt, and where the current part began on it.
    root.dataset.elapsedMs = String(elapsedMs());
    root.dataset.elapsedAt = String(Date.now());
  }

  // --- recording ------------------------------------------------------------------------------
  function metadata() {
    const clients = form.client_ids.value.split(",").map((s) => s.trim()).filter(Boolean);
    return {
      client_ids: clients, recorded_at: new Date().toISOString(), session_type: form.session_type.value,
      consent: { obtained: form.consent.checked, method: form.consent_method.value, obtained_at: new Date().toISOString() },
    };
  }

  function pickType() {
    for (const t of ["audio/webm;codecs=opus", "audio/webm", "audio/mp4"]) {
      if (window.MediaRecorder && MediaRecorder.isTypeSupported(t)) return t;
    }
    return "";
  }

  async function holdWakeLock() {
    try { if ("wakeLock" in navigator) wakeLock = await navigator.wakeLock.request("screen"); } catch (e) { wakeLock = null; }
  }
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible" && recorder && recorder.state === "recording") holdWakeLock();
  });

  async function takeLock(id) {
    // One recorder per recording: a second tab finds the lock held and leaves the recording alone.
    if (!navigator.locks) return true;
    return new Promise((resolve) => {
      navigator.locks.request("verbatim-recording-" + id, { ifAvailable: true }, (lock) => {
        if (!lock) { resolve(false); return undefined; }
        resolve(true);
        return new Promise((release) => { releaseLock = release; });
      });
    });
  }

  async function startPart() {
    stream = await navigator.mediaDevices.getUserMedia({ audio: { echoCancellation: false, noiseSuppression: false, autoGainControl: false } });
    const type = pickType();
    recorder = new MediaRecorder(stream, type ? { mimeType: type, audioBitsPerSecond: 32000 } : {});
    rec.parts.push({ uploadUrl: null, offset: 0, written: 0, nextSeq: 0, mime: recorder.mimeType || type, closed: false,
                     fromMs: rec.elapsedMs, savedMs: 0, sentMs: 0 });
    root.dataset.partFromMs = String(rec.elapsedMs);
    rec.state = "recording";
    await putRecording(rec);
    const part = rec.parts.length - 1;
    recorder.ondataavailable = (event) => {
      if (!event.data || !event.data.size) return;
      const blob = event.data;
      // The recorder clock as the chunk is handed over (not once the writes before it are done):
      // the chunk holds the audio from the part's previous chunk up to here.
      const at = elapsedMs();
      writes = writes.then(() => store(part, blob, at)).catch((e) => say("Could not save audio on this device: " + e.message));
    };
    recorder.onstop = () => { stream.getTracks().forEach((t) => t.stop()); };
    recorder.start(TIMESLICE_MS);
    segmentStart = Date.now();
    await holdWakeLock();
    timer = timer || setInterval(render, 500);
    ui.state.textContent = "Recording";
    root.dataset.state = "recording";
    ui.pause.disabled = false; ui.finish.disabled = false; ui.start.disabled = true;
    ui.pause.textContent = "Pause";
  }

  async function store(part, blob, at) {
    // Written (encrypted) to the device before anything else happens to the chunk.
    const plain = await blob.arrayBuffer();
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const data = await crypto.subtle.encrypt({ name: "AES-GCM", iv }, key, plain);
    const p = rec.parts[part];
    const ms = Math.max(0, at - p.fromMs - p.savedMs);
    const chunk = { rec: rec.id, part, seq: p.nextSeq, start: p.written, size: plain.byteLength, ms, iv, data };
    p.nextSeq += 1;
    p.written += plain.byteLength;
    p.savedMs += ms;
    rec.savedMs = savedMsOf(rec) + ms;
    rec.savedChunks += 1;
    rec.elapsedMs = elapsedMs();
    if (recorder && recorder.state === "recording") segmentStart = Date.now();
    await tx(["chunks", "recordings"], "readwrite", (t) => {
      t.objectStore("chunks").put(chunk);
      t.objectStore("recordings").put(rec);
    });
    pump();
  }

  async function begin(event) {
    event.preventDefault();
    if (!form.reportValidity()) return;
    key = key || await deviceKey();
    const id = crypto.randomUUID();
    rec = { id, meta: metadata(), createdAt: Date.now(), parts: [], elapsedMs: 0, savedChunks: 0, savedMs: 0,
            state: "recording" };
    await takeLock(id);
    form.querySelectorAll("input, select").forEach((el) => { el.disabled = true; });
    try {
      await startPart();
    } catch (e) {
      say("The microphone could not be opened: " + e.message);
      return;
    }
    say("Recording. Each second is saved on this device, then sent.");
  }

  function togglePause() {
    if (!recorder) return;
    if (recorder.state === "recording") {
      rec.elapsedMs = elapsedMs();
      recorder.pause();
      ui.pause.textContent = "Resume";
      ui.state.textContent = "Paused";
      root.dataset.state = "paused";
      if (wakeLock) { wakeLock.release().catch(() => {}); wakeLock = null; }
    } else if (recorder.state === "paused") {
      recorder.resume();
      segmentStart = Date.now();
      ui.pause.textContent = "Pause";
      ui.state.textContent = "Recording";
      root.dataset.state = "recording";
      holdWakeLock();
    }
    render();
  }

  function stopRecorder() {
    if (!recorder || recorder.state === "inactive") return Promise.resolve();
    return new Promise((resolve) => {
      recorder.addEventListener("stop", () => resolve(), { once: true });
      rec.elapsedMs = elapsedMs();
      recorder.stop();
    });
  }

  async function finish() {
    ui.pause.disabled = true; ui.finish.disabled = true;
    ui.state.textContent = "Finishing";
    root.dataset.state = "finishing";
    await stopRecorder();
    recorder = null;
    if (wakeLock) { wakeLock.release().catch(() => {}); wakeLock = null; }
    await writes;
    rec.parts.forEach((p) => { p.closed = true; });
    rec.state = "finishing";
    await putRecording(rec);
    say("Sending the rest of the recording…");
    pump();
  }

  // --- sending --------------------------------------------------------------------------------
  function tusHeaders(extra) { return Object.assign({ "Tus-Resumable": "1.0.0", "X-CSRF-Token": csrf }, extra); }

  async function send(url, init) {
    try {
      const answer = await fetch(url, Object.assign({ credentials: "same-origin", cache: "no-store" }, init));
      setOnline(true);
      return answer;
    } catch (e) {
      setOnline(false);
      throw e;
    }
  }

  function setOnline(value) { if (online !== value) { online = value; render(); } }

  function b64text(text) {
    let s = "";
    new TextEncoder().encode(text).forEach((b) => { s += String.fromCharCode(b); });
    return btoa(s);
  }

  async function b64sha256(bytes) {
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    let s = "";
    digest.forEach((b) => { s += String.fromCharCode(b); });
    return btoa(s);
  }

  async function ensureUpload(part) {
    const p = rec.parts[part];
    if (p.uploadUrl) return;
    // The session's metadata travels with every part: if the recording stops arriving (the phone
    // dies, the browser is never reopened), the server still makes it a session from what arrived.
    const meta = ["filetype " + b64text(p.mime || "audio/webm"), "recording " + b64text(rec.id),
                  "part " + b64text(String(part)), "session " + b64text(JSON.stringify(rec.meta))].join(",");
    const answer = await send("/v1/uploads", { method: "POST", headers: tusHeaders({ "Upload-Defer-Length": "1",
      "Upload-Metadata": meta }) });
    if (answer.status !== 201) throw new Refused(answer);
    p.uploadUrl = answer.headers.get("Location");
    await putRecording(rec);
  }

  class Refused extends Error {
    constructor(answer) { super("the server answered " + answer.status); this.status = answer.status; this.answer = answer; }
  }

  async function serverOffset(part) {
    const answer = await send(rec.parts[part].uploadUrl, { method: "HEAD", headers: tusHeaders({}) });
    if (answer.status !== 200) throw new Refused(answer);
    return Number(answer.headers.get("Upload-Offset"));
  }

  async function confirmed(part, offset) {
    // The server holds every byte before `offset` durably: only now do the chunks below it go.
    const p = rec.parts[part];
    p.offset = offset;
    const done = (await chunksOf(rec.id, part)).filter((c) => c.start + c.size <= offset);
    p.sentMs = (p.sentMs || 0) + done.reduce((sum, c) => sum + (c.ms !== undefined ? c.ms : TIMESLICE_MS), 0);
    await tx(["chunks", "recordings"], "readwrite", (t) => {
      const chunks = t.objectStore("chunks");
      done.forEach((c) => chunks.delete([c.rec, c.part, c.seq]));
      t.objectStore("recordings").put(rec);
    });
  }

  async function sendPart(part) {
    const p = rec.parts[part];
    if (rec.finishedElsewhere) return;  // the server finished it with what arrived: only the session is left
    for (;;) {
      const chunks = (await chunksOf(rec.id, part)).filter((c) => c.start + c.size > p.offset);
      if (!chunks.length) {
        if (!p.closed || p.declared) return;
        if (p.written === 0) { p.declared = true; await putRecording(rec); return; }  // a part with no audio
      }
      await ensureUpload(part);
      // Everything waiting, up to MAX_PATCH_BYTES, decrypted and sent as one PATCH.
      const pieces = [];
      let size = 0;
      let through = p.offset;
      for (const c of chunks) {
        if (size && size + c.size > MAX_PATCH_BYTES) break;
        const plain = new Uint8Array(await crypto.subtle.decrypt({ name: "AES-GCM", iv: c.iv }, key, c.data));
        const from = Math.max(0, p.offset - c.start);
        pieces.push(plain.subarray(from));
        size += plain.byteLength - from;
        through = c.start + c.size;
      }
      const body = new Uint8Array(size);
      let at = 0;
      pieces.forEach((piece) => { body.set(piece, at); at += piece.byteLength; });
      const headers = { "Content-Type": "application/offset+octet-stream", "Upload-Offset": String(p.offset),
                        "Upload-Checksum": "sha256 " + await b64sha256(body) };
      // The part's last bytes declare its length: the server then holds a complete upload.
      if (p.closed && through === p.written) headers["Upload-Length"] = String(p.written);
      const answer = await send(p.uploadUrl, { method: "PATCH", headers: tusHeaders(headers), body });
      if (answer.status === 204) {
        if (headers["Upload-Length"]) p.declared = true;
        await confirmed(part, Number(answer.headers.get("Upload-Offset")));
        render();
        continue;
      }
      if (answer.status === 409 || answer.status === 460 || answer.status === 423) {
        await confirmed(part, await serverOffset(part));  // resend from what the server holds
        continue;
      }
      throw new Refused(answer);
    }
  }

  async function pump() {
    if (!rec) return;
    if (pumping) { pumpAgain = true; return; }
    pumping = true;
    try {
      for (let delay = 500; ;) {
        pumpAgain = false;
        try {
          for (let part = 0; part < rec.parts.length; part++) {
            await sendPart(part);
          }
          if (rec.state === "finishing") await createSession();
          if (!pumpAgain) break;
        } catch (e) {
          if (e instanceof Refused && (e.status === 401 || e.status === 403)) {
            // The page session ended (idle, or the browser restarted): keep recording and keep the
            // chunks; once the therapist signed in again (another tab), take the new CSRF token.
            if (!(await refreshCsrf())) {
              ui.signIn.hidden = false;
              root.dataset.auth = "needed";
              say("Sign in again (the link opens another tab) to send the recording. Recording goes on; nothing is lost.");
            }
            await new Promise((r) => setTimeout(r, 2000));
            continue;
          }
          if (e instanceof Refused && (e.status === 404 || e.status === 410) && !rec.finishedElsewhere) {
            // The server no longer holds the upload: the recording was finished with what arrived
            // (the therapist chose so on another device, or it stopped arriving for hours). The
            // session, if there is one, answers the same Idempotency-Key.
            rec.finishedElsewhere = true;
            rec.parts.forEach((p) => { p.closed = true; p.declared = true; });
            rec.state = "finishing";
            await putRecording(rec);
            continue;
          }
          if (e instanceof Refused && e.status < 500 && e.status !== 408 && e.status !== 429) {
            const body = await e.answer.json().catch(() => ({}));
            say("The server refused the recording: " + (body.detail || e.status) + ". It stays on this device.");
            return;
          }
          // Offline or the server is away (restart, deploy): keep the chunks, try again.
          setOnline(false);
          await new Promise((r) => setTimeout(r, delay));
          delay = Math.min(delay * 2, 4000);
          try {
            for (let part = 0; part < rec.parts.length; part++) {
              if (rec.parts[part].uploadUrl && !rec.parts[part].declared) await confirmed(part, await serverOffset(part));
            }
          } catch (ignored) { /* still away */ }
        }
      }
    } finally {
      pumping = false;
      render();
    }
  }

  async function refreshCsrf() {
    try {
      const answer = await fetch("/app/record/csrf", { credentials: "same-origin", cache: "no-store", redirect: "manual" });
      if (answer.status !== 200) return false;
      csrf = (await answer.json()).csrf_token;
      ui.signIn.hidden = true;
      root.dataset.auth = "ok";
      return true;
    } catch (e) {
      return false;
    }
  }

  async function createSession() {
    if (rec.parts.some((p) => !p.declared)) return;
    const ids = rec.parts.filter((p) => p.written > 0).map((p) => p.uploadUrl.split("/").pop());
    const answer = await send("/v1/sessions", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, "Idempotency-Key": "recorder-" + rec.id },
      body: JSON.stringify({ upload_ids: ids, metadata: rec.meta }),
    });
    const body = await answer.json().catch(() => ({}));
    if (answer.status !== 201 && answer.status !== 200) {
      if (answer.status >= 500 || answer.status === 401 || answer.status === 403) throw new Refused(answer);
      say("The server refused the recording: " + (body.detail || answer.status) + ". It stays on this device.");
      throw new Refused(answer);
    }
    // The session is committed: nothing of this recording needs to stay on the device.
    await tx(["recordings", "chunks"], "readwrite", (t) => {
      t.objectStore("recordings").delete(rec.id);
      t.objectStore("chunks").delete(IDBKeyRange.bound([rec.id, 0, 0], [rec.id, Infinity, Infinity]));
    });
    root.dataset.state = "done";
    ui.state.textContent = "Sent";
    say("The whole recording arrived. Opening the session…");
    if (releaseLock) releaseLock();
    rec = null;
    window.location.assign("/app/sessions/" + body.id);
  }

  // --- an unfinished recording found on this device --------------------------------------------
  async function recover() {
    key = await deviceKey();
    const found = (await allRecordings()).sort((a, b) => a.createdAt - b.createdAt)[0];
    if (!found) return;
    if (!(await takeLock(found.id))) {
      ui.found.hidden = false;
      ui.foundText.textContent = "A recording is open in another tab or window. Record there, or close it first.";
      ui.start.disabled = true;
      root.dataset.state = "elsewhere";
      return;
    }
    rec = found;
    // Whatever MediaRecorder had not handed over when the page died is lost (at most one second).
    rec.parts.forEach((p) => { p.closed = true; });
    await putRecording(rec);
    form.querySelectorAll("input, select").forEach((el) => { el.disabled = true; });
    const started = new Date(rec.createdAt).toLocaleTimeString();
    ui.found.hidden = false;
    ui.foundText.textContent = "An unfinished recording from " + started + " was found on this device (" +
      seconds(savedMsOf(rec)) + " saved). It is being sent. At most the last second before " +
      "the page closed was not saved. Continue it as a new part, or finish it.";
    ui.start.disabled = true;
    ui.state.textContent = rec.state === "finishing" ? "Finishing" : "Interrupted";
    root.dataset.state = rec.state === "finishing" ? "finishing" : "interrupted";
    timer = timer || setInterval(render, 500);
    render();
    pump();
  }

  // --- recordings the server holds that stopped arriving (from a phone that died) ------------------
  async function listStopped() {
    let uploads;
    try {
      const answer = await fetch("/v1/uploads", { credentials: "same-origin", cache: "no-store",
                                                   headers: { "X-CSRF-Token": csrf } });
      if (answer.status !== 200) return;
      uploads = await answer.json();
    } catch (e) { return; }
    const here = new Set((await allRecordings()).map((r) => r.id));
    const byRecording = new Map();
    uploads.filter((u) => u.finishable && u.recording && !here.has(u.recording)).forEach((u) => {
      const seen = byRecording.get(u.recording) || { first: u, bytes: 0, last: u.last_byte_at };
      seen.bytes += u.received_bytes;
      if (u.last_byte_at > seen.last) seen.last = u.last_byte_at;
      byRecording.set(u.recording, seen);
    });
    const list = $("rec-stopped-list");
    list.replaceChildren();
    byRecording.forEach((seen, recording) => {
      if (!seen.bytes) return;
      const item = document.createElement("li");
      item.dataset.recording = recording;
      const text = document.createElement("span");
      text.textContent = "Started " + new Date(seen.first.created_at).toLocaleTimeString() + "; its last audio reached " +
        "the server at " + new Date(seen.last).toLocaleTimeString() + ". ";
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = "Finish with what arrived";
      button.addEventListener("click", () => finishStopped(seen.first.upload_id, button));
      item.append(text, button);
      list.append(item);
    });
    $("rec-stopped").hidden = !list.children.length;
  }

  async function finishStopped(uploadId, button) {
    button.disabled = true;
    try {
      const answer = await fetch("/v1/uploads/" + uploadId + "/finish", {
        method: "POST", credentials: "same-origin", cache: "no-store", headers: { "X-CSRF-Token": csrf } });
      const body = await answer.json().catch(() => ({}));
      if (answer.status === 201 || answer.status === 200) { window.location.assign("/app/sessions/" + body.id); return; }
      say("The server could not finish that recording: " + (body.detail || answer.status) + ".");
    } catch (e) {
      say("The server cannot be reached; try again when the network is back.");
    }
    button.disabled = false;
  }

  form.addEventListener("submit", begin);
  ui.pause.addEventListener("click", togglePause);
  ui.finish.addEventListener("click", finish);
  ui.resume.addEventListener("click", async () => {
    ui.found.hidden = true;
    try { await startPart(); say("Recording a new part of the same session."); } catch (e) { say("The microphone could not be opened: " + e.message); }
  });
  ui.finishFound.addEventListener("click", () => { ui.found.hidden = true; finish(); });
  window.addEventListener("online", () => pump());

  if ("serviceWorker" in navigator) {
    navigator.serviceWorker.register("/app/record-sw.js", { scope: "/app/record" }).catch(() => {});
  }
  recover().catch((e) => say("This device's storage could not be opened: " + e.message)).then(listStopped);
})();
