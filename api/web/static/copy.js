// Copy buttons: <button data-copy-target="input-id" data-copy-status="status-id">.
// A file, not inline script, so the page's Content-Security-Policy can forbid inline code.
"use strict";
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-target]");
  if (!button) return;
  const field = document.getElementById(button.dataset.copyTarget);
  const status = document.getElementById(button.dataset.copyStatus || "");
  if (!field) return;
  let copied = false;
  try {
    await navigator.clipboard.writeText(field.value);
    copied = true;
  } catch (err) {
    // Clipboard API unavailable (plain http, old browser): select for a manual copy.
    field.focus();
    field.select();
    copied = document.execCommand && document.execCommand("copy");
  }
  button.textContent = copied ? "Copied" : "Copy";
  if (status) {
    status.textContent = copied
      ? "Copied to the clipboard."
      : "Press Ctrl+C (or ⌘C) to copy the selected token.";
  }
});
