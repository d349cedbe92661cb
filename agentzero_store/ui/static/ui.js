// The inspector's only script: polls a background job's state (verify, consolidate)
// and shows its progress. It writes text only (textContent), never markup.
"use strict";
(function () {
  const box = document.getElementById("job");
  if (!box || box.dataset.state !== "running") return;
  const url = box.dataset.poll;
  const show = (job) => {
    document.getElementById("job-state").textContent = job.state;
    document.getElementById("job-step").textContent = job.step;
    const bar = document.getElementById("job-progress");
    bar.max = job.total || 1;
    bar.value = job.done;
    if (job.result) {
      document.getElementById("job-result").textContent = JSON.stringify(job.result, null, 2);
    }
    if (job.error) {
      document.getElementById("job-result").textContent = job.error + (job.hint ? "\nhint: " + job.hint : "");
    }
    box.dataset.state = job.state;
  };
  const poll = () => {
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then((r) => r.json())
      .then((job) => {
        show(job);
        if (job.state === "running") setTimeout(poll, 500);
      })
      .catch(() => setTimeout(poll, 2000));
  };
  setTimeout(poll, 300);
})();
