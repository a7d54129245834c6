// Upload page: a resumable (tus) upload to /v1/uploads with a progress bar, then the session is
// created from it (POST /v1/sessions {upload_id, metadata}). The page session's cookie goes with
// each request; the CSRF token goes in X-CSRF-Token (the server refuses the cookie without it).
"use strict";
(function () {
  const form = document.getElementById("upload-form");
  if (!form) return;
  const csrf = form.dataset.csrf;
  const bar = document.getElementById("upload-progress");
  const message = document.getElementById("upload-message");
  const button = document.getElementById("upload-button");

  function say(text) { message.textContent = text; }

  function metadata() {
    const clients = form.client_ids.value.split(",").map((s) => s.trim()).filter(Boolean);
    const recorded = new Date(form.recorded_at.value + "Z").toISOString();
    return {
      client_ids: clients, recorded_at: recorded, session_type: form.session_type.value,
      consent: { obtained: form.consent.checked, method: form.consent_method.value,
                 obtained_at: new Date().toISOString() },
    };
  }

  async function finish(uploadUrl, meta) {
    const uploadId = uploadUrl.split("/").pop();
    const answer = await fetch("/v1/sessions", {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf, "Idempotency-Key": uploadId },
      body: JSON.stringify({ upload_id: uploadId, metadata: meta }),
    });
    const body = await answer.json().catch(() => ({}));
    if (!answer.ok) { say("The recording arrived but was refused: " + (body.detail || answer.status)); button.disabled = false; return; }
    say("Uploaded. Opening the session…");
    window.location.assign("/app/sessions/" + body.id);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const file = form.audio.files[0];
    if (!file) { say("Choose a recording first."); return; }
    if (!form.consent.checked) { say("Attest the clients' consent first."); return; }
    const meta = metadata();
    button.disabled = true;
    say("Uploading…");
    const upload = new tus.Upload(file, {
      endpoint: "/v1/uploads",
      headers: { "X-CSRF-Token": csrf },
      chunkSize: 8 * 1024 * 1024,
      retryDelays: [0, 1000, 3000, 5000, 10000],
      metadata: { filename: file.name },
      onProgress(sent, total) {
        const pct = total ? Math.floor((sent / total) * 100) : 0;
        bar.value = pct; bar.textContent = pct + "%";
      },
      onError(error) { say("The upload stopped: " + error.message + ". Choose the same file again to resume."); button.disabled = false; },
      onSuccess() { bar.value = 100; finish(upload.url, meta); },
    });
    // A file sent before (same name, size, date) resumes where it stopped.
    upload.findPreviousUploads().then((previous) => {
      if (previous.length) upload.resumeFromPreviousUpload(previous[0]);
      upload.start();
    });
  });
})();
