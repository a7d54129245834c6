// Service worker of the recorder page: keeps /app/record and its scripts available without a
// network, so a recorder reopened offline (after a crash, in a basement) still records and keeps
// its chunks. API calls (/v1/…) are never cached or answered from here: they go to the network
// and fail when it is gone, which the page handles by keeping the chunks on the device.
"use strict";
const CACHE = "verbatim-recorder-v1";
const SHELL = ["/app/record", "/app/static/recorder.js", "/app/static/app.css",
               "/app/static/vendor/htmx-2.0.4.min.js", "/app/static/recorder.webmanifest",
               "/app/static/recorder-icon.svg"];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(SHELL)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((names) => Promise.all(names.filter((n) => n !== CACHE).map((n) => caches.delete(n))))
    .then(() => self.clients.claim()));
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin || !SHELL.includes(url.pathname)) return;
  // Network first (a signed-in page carries a fresh CSRF token), the cached copy when offline.
  event.respondWith(fetch(event.request).then((answer) => {
    if (answer.ok && !answer.redirected) {
      const copy = answer.clone();
      caches.open(CACHE).then((cache) => cache.put(url.pathname, copy));
    }
    return answer;
  }).catch(() => caches.match(url.pathname).then((hit) => hit || Response.error())));
});
