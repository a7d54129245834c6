// A one-time link lands here from another site (an e-mail, a terminal): post the form at once,
// now same-site, so the Strict session cookie can be set.
"use strict";
const linkForm = document.getElementById("link-form");
if (linkForm) linkForm.submit();
