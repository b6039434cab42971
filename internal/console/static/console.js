// ticketd console: progressive enhancement only. Every page works without it.
"use strict";

// Sign-in link: /console/signin#code=... (a single-use sign-in code, as
// serve --dev prints for its person) or #token=... carries its secret in the
// fragment, which the browser never sends to the server (so it never reaches
// a log). Clear it from the address bar and history first, then post it like
// the form.
function signInFromFragment() {
  const form = document.getElementById("signin");
  if (!form || !location.hash) {
    return;
  }
  const params = new URLSearchParams(location.hash.slice(1));
  history.replaceState(null, "", location.pathname + location.search);
  const code = params.get("code");
  const token = params.get("token");
  if (code) {
    form.elements.code.value = code;
    form.submit();
  } else if (token) {
    form.elements.token.value = token;
    form.submit();
  }
}

// A form submits once per rendering: a double click sends one request. The
// server makes a resubmission harmless anyway (each form carries its own
// operation ID); this just spares the second round trip.
function submitOnce() {
  document.addEventListener("submit", (event) => {
    const form = event.target;
    if (form.method.toLowerCase() !== "post") {
      return;
    }
    if (form.dataset.submitting === "1") {
      event.preventDefault();
      return;
    }
    form.dataset.submitting = "1";
    form.classList.add("submitting");
  });
  // Coming back to a page from the back/forward cache restores its script
  // state too; the form may be submitted again (it is the same operation).
  window.addEventListener("pageshow", (event) => {
    if (event.persisted) {
      for (const form of document.forms) {
        delete form.dataset.submitting;
        form.classList.remove("submitting");
      }
    }
  });
}

// A link opened in a tab already showing the sign-in page changes only the
// fragment: no new page loads, so listen for that too.
window.addEventListener("hashchange", signInFromFragment);

document.addEventListener("DOMContentLoaded", () => {
  signInFromFragment();
  submitOnce();
});
