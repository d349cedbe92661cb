// The inspector's only script: while a background job (verify, consolidate) runs, its
// page reloads itself to show the job's progress. Reloading, not fetch(): the
// Content-Security-Policy has no connect-src, so this page can open no connection of
// its own, to this server or any other.
"use strict";
(function () {
  const box = document.getElementById("job");
  if (!box || box.dataset.state !== "running") return;
  setTimeout(function () {
    window.location.reload();
  }, 700);
})();
