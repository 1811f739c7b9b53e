/* The spectator page: the replay viewer fed by the game's event stream (docs/web.md). */
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("replay-data").textContent);
  const viewer = window.craitsViewer;
  const live = DATA.live;
  if (!live) return;
  const title = document.getElementById("game-title");
  const badge = document.createElement("span");
  badge.id = "live-badge";
  badge.className = "live-badge";
  badge.textContent = live.view === "full" ? "live, " + live.reveal_after + " s behind" : "live";
  title.after(badge);
  if (live.reveal_after != null) {
    const a = document.createElement("a");
    a.className = "live-note";
    a.id = "view-switch";
    a.href = live.view === "full" ? "?" : "?view=full";
    a.textContent = live.view === "full" ? "watch live (hands hidden)" : "show every hand (" + live.reveal_after + " s behind)";
    badge.after(a);
  }
  document.body.dataset.live = "playing";
  if (!new URLSearchParams(location.hash.slice(1)).has("decision")) viewer.go(viewer.frames - 1);  // (else: there)

  let batch = [];
  let timer = null;
  function flush() {
    timer = null;
    const records = batch;
    batch = [];
    viewer.append(records);
    document.body.dataset.received = String(viewer.decisions);
  }
  const query = "?form=compact&from=" + live.from + (live.view === "full" ? "&view=full" : "");
  const source = new EventSource(live.events + query);
  function take(record) {
    batch.push(record);
    if (timer === null) timer = setTimeout(flush, 40);
  }
  source.addEventListener("record", (e) => take(JSON.parse(e.data)));
  // A decision in the compact form: a message of its fields in a fixed order (docs/web.md).
  source.addEventListener("message", (e) => {
    const a = JSON.parse(e.data);
    const record = {
      type: "decision", n: a[0], hand: a[1], seat: a[2], kind: a[3], action: a[4], text: a[5],
      status: a[6], think_us: a[7], transport_us: a[8], events: a[9],
    };
    if (a.length > 10) record.hand_results = a[10];
    take(record);
  });
  function over(text) {
    source.close();
    if (timer !== null) { clearTimeout(timer); flush(); }
    badge.textContent = text;
    badge.classList.add("done");
    document.body.dataset.live = "over";
  }
  source.addEventListener("end", () => over("finished: reload for the full replay"));
  source.addEventListener("abort", (e) => over("stopped: " + JSON.parse(e.data).aborted));
  window.craitsLive = { source: source };
})();
