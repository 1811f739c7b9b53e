/* The board and games pages: render from the embedded data, then follow /api/stream. */
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("board-data").textContent);
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = String(text);
    return e;
  }

  function link(href, text) {
    const a = el("a", null, text);
    a.href = href;
    return a;
  }

  const fixed = (v, d) => (v == null ? "\u2013" : Number(v).toFixed(d));

  function clock(seconds) {
    if (seconds == null) return "\u2013";
    const s = Math.round(seconds);
    const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    const two = (n) => String(n).padStart(2, "0");
    return (h ? h + ":" + two(m) : two(m)) + ":" + two(r);
  }

  let previous = {};
  let connections = null; // progress.connections: the remote bots' presence, the refused Hellos

  function since(t) {
    if (t == null) return "";
    const d = new Date(t * 1000);
    const two = (n) => String(n).padStart(2, "0");
    return " since " + two(d.getHours()) + ":" + two(d.getMinutes());
  }

  /** A bot's connection cell: "connected since 17:40", "away since 17:52 (left cleanly)", or "" (launched). */
  function connectionCell(td, bot) {
    const p = connections && connections.bots ? connections.bots[bot] : null;
    td.textContent = "";
    td.className = "conn-cell";
    if (!p) { td.textContent = "\u2013"; return; }
    if (p.state === "connected") {
      td.classList.add("here");
      td.textContent = "connected" + since(p.since);
    } else {
      td.classList.add("away");
      td.textContent = (p.state === "never connected" ? "away: never connected" : "away" + since(p.since) + " (" + p.state + ")");
    }
    td.dataset.state = p.state;
  }

  function renderConnections() {
    for (const tr of document.querySelectorAll("#standings tbody tr[data-bot]")) {
      const td = tr.querySelector("td.conn-cell");
      if (td) connectionCell(td, tr.dataset.bot);
    }
    const list = $("refused");
    if (!list) return;
    list.textContent = "";
    const refused = (connections && connections.refused) || [];
    for (const r of refused.slice(-5).reverse()) {
      const claimed = r.claimed ? "\u201c" + r.claimed + "\u201d" : "(no name)";
      list.appendChild(el("li", null, "refused a bot that says it is " + claimed + ": " + r.why + since(r.at).replace(" since", " at")));
    }
    list.parentElement.hidden = refused.length === 0;
  }

  /** Workers found gone (killed) in the last hour, their games back in the queue. */
  function renderGone(gone) {
    const list = $("gone");
    if (!list) return;
    list.textContent = "";
    for (const g of gone.slice(0, 5)) {
      const games = g.games.length ? "; its game(s) " + g.games.join(", ") + " went back to the queue" : "";
      list.appendChild(el("li", null, "worker " + g.name + " on " + g.host + " gone" + since(g.at).replace(" since", " at") + " (" + g.why + ")" + games));
    }
    list.parentElement.hidden = gone.length === 0;
  }

  function renderStandings(doc) {
    const table = $("standings");
    if (!table || !doc) return;
    if ($("board-title")) $("board-title").textContent = doc.tournament || "";
    const body = table.querySelector("tbody");
    body.textContent = "";
    const now = {};
    for (const r of doc.standings || []) {
      // Faults: the games with one (as the teacher's dashboard counts them); the kinds in the tooltip.
      const faulty = doc.faulty_games ? doc.faulty_games[r.bot] || 0 : null;
      const faults = faulty == null ? "\u2013" : faulty + " of " + r.games;
      const key = [r.rank, r.games, fixed(r.rating_mu, 2)].join("/");
      now[r.bot] = key;
      const tr = el("tr", previous[r.bot] !== undefined && previous[r.bot] !== key ? "changed" : null);
      tr.dataset.bot = r.bot;
      tr.dataset.games = String(r.games);
      tr.appendChild(el("td", null, r.rank));
      const name = el("td");
      name.appendChild(link("/bots/" + encodeURIComponent(r.bot), r.bot));
      tr.appendChild(name);
      tr.appendChild(el("td", "rating", fixed(r.rating_ordinal, 2)));
      tr.appendChild(el("td", "mu-sigma", fixed(r.rating_mu, 2) + " \u00b1 " + fixed(r.rating_sigma, 2)));
      tr.appendChild(el("td", null, fixed(r.avg_placing, 2)));
      tr.appendChild(el("td", "games", r.games));
      tr.appendChild(el("td", null, r.wins));
      tr.appendChild(el("td", null, fixed(r.avg_points, 1)));
      const f = el("td", "faults", faults);
      f.dataset.games = faulty == null ? "" : String(faulty);
      f.title = Object.entries(r.issues || {}).filter(([, v]) => v).map(([k, v]) => v + " " + k.replace(/_/g, " ")).join(", ");
      tr.appendChild(f);
      tr.appendChild(el("td", "sure-cell", "\u2013")); // (how sure: filled by renderOrder)
      const c = el("td");
      connectionCell(c, r.bot);
      tr.appendChild(c);
      body.appendChild(tr);
    }
    previous = now;
    table.dataset.recorded = String(doc.games_recorded || 0);
  }

  // The order read off the intervals valid at any time (tournaments.anytime): which neighbours
  // are settled, tied within the margin, or not settled yet; and the stop, if the file has one.
  function renderOrder(doc) {
    const panel = $("order-panel");
    const any = doc && doc.anytime;
    if (!panel || !any || !(any.neighbours || []).length) return;
    panel.hidden = false;
    const rows = {};
    for (const r of doc.standings || []) rows[r.bot] = r;
    const body = $("order").querySelector("tbody");
    body.textContent = "";
    const bots = [any.neighbours[0].upper].concat(any.neighbours.map((n) => n.lower));
    // In words a student reads: the one ranking is the rating's; this says how sure each place is.
    const words = (next) => ({ ahead: "ahead of " + next.lower + " (sure)", behind: "behind " + next.lower + " (sure)",
      tied: "level with " + next.lower + " (within " + any.tie_within + ")", open: "not yet separated from " + next.lower })[next.verdict]
      + (next.drifted ? " (the field changed since: measuring again)" : "");
    for (const td of document.querySelectorAll("#standings td.sure-cell")) td.textContent = "\u2013";
    any.neighbours.forEach((next) => {
      const row = document.querySelector("#standings tbody tr[data-bot=\"" + CSS.escape(next.upper) + "\"] td.sure-cell");
      if (row) { row.textContent = words(next); row.dataset.verdict = next.verdict; }
    });
    bots.forEach((bot, i) => {
      const r = rows[bot] || {};
      const next = any.neighbours[i];
      const tr = el("tr", next ? "verdict-" + next.verdict : null);
      tr.dataset.bot = bot;
      if (next) tr.dataset.settled = next.settled ? "yes" : "no";
      tr.appendChild(el("td", null, i + 1));
      tr.appendChild(el("td", null, bot));
      tr.appendChild(el("td", null, r.beaten == null ? "\u2013"
        : fixed(r.beaten, 2) + " [" + fixed(r.beaten_low, 2) + ", " + fixed(r.beaten_high, 2) + "]"
          + (r.beaten_drifted ? " (moved out of its interval as the field changed: measuring again)" : "")));
      tr.appendChild(el("td", "verdict", next ? words(next) : ""));
      body.appendChild(tr);
    });
    const stop = $("order-stop");
    stop.textContent = any.stop ? "stop = " + any.stop + ": " + (any.stop_met ? "met" : "not met yet") + "; " + any.stop_state : "";
    stop.dataset.met = any.stop ? String(any.stop_met) : "";
    $("order-legend").textContent = "How sure: each bot against the next one below it, by the share of its " +
      "tablemates it beats in a deal (over every seat rotation), with intervals " + any.label + " (" +
      Math.round(100 * any.confidence) + "%, " + any.units + " deals) that may be looked at after every game" +
      (any.level ? "; " + any.level : "") + ". " +
      "\u201cahead of X (sure)\u201d: the interval says so; \u201clevel with X\u201d: each places above the other " +
      "within " + any.tie_within + " of half the games they share; \u201cnot yet separated\u201d: more games are needed.";
  }

  function renderProgress(p) {
    if (!p || !$("progress")) return;
    let fraction = p.total ? p.done / p.total : 0;
    let text = p.done + " / " + p.total + " games";
    if (p.kind === "ladder") {
      // A ladder has no end: rounds and games played; a bar only towards --rounds N.
      text = (p.rounds || 0) + (p.goal_rounds ? " / " + p.goal_rounds : "") + " rounds, " + p.done + " games played";
      fraction = p.goal_rounds ? Math.min(1, (p.rounds || 0) / p.goal_rounds) : null;
    }
    const bar = $("progress-fill").parentElement;
    bar.hidden = fraction === null;
    if (fraction !== null) $("progress-fill").style.width = (100 * fraction).toFixed(1) + "%";
    if (p.kind === "server") text = p.done + " games played, " + (p.live || 0) + " being played";
    if (p.rate) text += " \u00b7 " + p.rate.toFixed(2) + " games/s";
    if (p.kind !== "ladder" && !p.finished && p.eta_s != null) text += " \u00b7 ETA " + clock(p.eta_s);
    if (p.finished && p.kind !== "ladder") text += " \u00b7 finished"; // (a ladder between runs is stopped, not finished)
    const t = $("progress-text");
    t.textContent = text;
    t.dataset.done = String(p.done);
    t.dataset.total = String(p.total);
    if (p.connections !== undefined) {
      connections = p.connections;
      renderConnections();
    }
    if (p.workers_gone !== undefined) renderGone(p.workers_gone);
  }

  function renderLive(games) {
    const table = $("live");
    if (!table) return;
    const body = table.querySelector("tbody");
    body.textContent = "";
    for (const g of games || []) {
      const tr = el("tr");
      tr.dataset.game = g.game_id;
      const id = el("td");
      id.appendChild(link("/games/" + encodeURIComponent(g.game_id), g.game_id));
      id.appendChild(el("span", "live-badge", "live"));
      tr.appendChild(id);
      tr.appendChild(el("td", null, g.bots.join(", ")));
      tr.appendChild(el("td", null, g.hand));
      tr.appendChild(el("td", null, g.decisions));
      body.appendChild(tr);
    }
    if (!body.children.length) body.appendChild(el("tr")).appendChild(el("td", "muted", "no game is being played"));
    if ($("live-count")) $("live-count").textContent = "(" + (games || []).length + ")";
  }

  function renderGames(games) {
    const table = $("recent");
    if (!table) return;
    const body = table.querySelector("tbody");
    body.textContent = "";
    for (const g of games || []) {
      const tr = el("tr");
      tr.dataset.game = g.game_id;
      const id = el("td");
      if (g.replay) id.appendChild(link("/games/" + encodeURIComponent(g.game_id), g.game_id));
      else id.textContent = g.game_id;
      tr.appendChild(id);
      const seats = el("td");
      g.bots.forEach((b, i) => {
        const s = el("span", g.placings[i] === 1 ? "seat-result win" : "seat-result");
        s.textContent = b + " " + g.totals[i] + " #" + g.placings[i] + (i < g.bots.length - 1 ? ", " : "");
        seats.appendChild(s);
      });
      tr.appendChild(seats);
      tr.appendChild(el("td", null, g.aborted ? "aborted: " + g.aborted : ""));
      body.appendChild(tr);
    }
    if (!body.children.length) body.appendChild(el("tr")).appendChild(el("td", "muted", "no game recorded yet"));
  }

  renderStandings(DATA.standings);
  renderOrder(DATA.standings);
  renderProgress(DATA.progress);
  renderLive(DATA.live);
  renderGames(DATA.games);

  const onGamesPage = !$("standings");
  const conn = $("conn");
  const source = new EventSource("/api/stream");
  source.onopen = () => { if (conn) conn.className = "conn on"; };
  source.onerror = () => { if (conn) conn.className = "conn off"; };
  source.addEventListener("standings", (e) => { const doc = JSON.parse(e.data); renderStandings(doc); renderOrder(doc); });
  source.addEventListener("progress", (e) => renderProgress(JSON.parse(e.data)));
  source.addEventListener("live", (e) => renderLive(JSON.parse(e.data)));
  source.addEventListener("games", (e) => { if (!onGamesPage) renderGames(JSON.parse(e.data)); });
  // The server stopped (a run that served its pages has ended): what is shown is its last state.
  source.addEventListener("closed", (e) => {
    source.close();
    document.body.dataset.server = "stopped";
    if (conn) { conn.className = "conn done"; conn.title = JSON.parse(e.data).why; }
  });
  window.craitsBoard = { source: source };
})();
