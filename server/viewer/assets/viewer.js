/* Craits replay viewer: rebuilds every position from the recorded engine events.
 *
 * No engine runs here: the events carry the cards (deal, draw, play), so a per-seat
 * hand model plus the public table state (top card, suit, direction, count, stock)
 * is enough. Scores come from the replay's result record, hand by hand.
 * Events are [kind, seat, [card codes], suit or -1, value]; card = (rank-1)*4 + suit.
 *
 * Live (the web server's spectator page): records arrive one by one through
 * ``craitsViewer.append``; a card a spectator may not see is -1 (shown as a back), and each
 * decision that ends a hand carries that hand's scores (``hand_results``).
 */
(function () {
  "use strict";

  const DATA = JSON.parse(document.getElementById("replay-data").textContent);
  const RECORDS = DATA.records;
  const HEADER = RECORDS[0];
  const START = RECORDS[1];
  const DECISIONS = [];
  let RESULT = { hands: [] };
  const CONFIG = HEADER.config;
  const TEAMS = CONFIG.preset === "crates-partners";
  const FLAGS = CONFIG.flags || {};
  const N = CONFIG.players;
  const BOTS = HEADER.seats.map((s, i) => String(s.bot != null ? s.bot : "seat " + i));

  const SUIT_SYMBOL = ["\u2663", "\u2666", "\u2665", "\u2660"];
  const SUIT_WORD = ["clubs", "diamonds", "hearts", "spades"];
  const SUIT_LETTER = "CDHS";
  const RANK_TEXT = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K"];
  const HAND_SIZES_CRAITS = [8, 7, 6, 5, 4, 3, 2, 1, 2, 3, 4, 5, 6, 7, 8];

  const rankOf = (c) => (c >> 2) + 1;
  const suitOf = (c) => c & 3;
  const cardText = (c) => RANK_TEXT[c >> 2] + SUIT_LETTER[c & 3];
  const isRed = (c) => (c & 3) === 1 || (c & 3) === 2;

  function deckSize() {
    const perDeck = FLAGS.strip_kings_queens ? 44 : 52;
    return perDeck * (FLAGS.decks || (N > 5 ? 2 : 1));
  }

  function handSizes() {
    if (CONFIG.preset === "crazy-eights") return null;
    return FLAGS.short_game ? HAND_SIZES_CRAITS.slice(0, 8) : HAND_SIZES_CRAITS;
  }

  // ------------------------------------------------------------------ the model

  function newModel() {
    return {
      hands: Array.from({ length: N }, () => []),
      top: -1, suit: -1, direction: 1, count: 0, dealer: -1, hand: 0,
      stock: 0, discard: 0, drawnBeforeReshuffle: 0,
      totals: new Array(N).fill(0),
      handPressures: new Array(N).fill(0),
      pressureTotals: new Array(N).fill(0),
      penalty: new Array(N).fill(false),
      handsDone: 0, handOver: false, over: false,
      dealerDraws: [],
    };
  }

  function cloneModel(m) {
    const c = Object.assign({}, m);
    c.hands = m.hands.map((h) => h.slice());
    c.totals = m.totals.slice();
    c.handPressures = m.handPressures.slice();
    c.pressureTotals = m.pressureTotals.slice();
    c.penalty = m.penalty.slice();
    c.dealerDraws = m.dealerDraws.slice();
    return c;
  }

  const handResults = {};
  function takeResult(rec) {
    RESULT = rec;
    for (const h of rec.hands || []) handResults[h.number] = h;
  }
  if (RECORDS[RECORDS.length - 1].type === "result") takeResult(RECORDS[RECORDS.length - 1]);

  /* Take a card from a hand; a card the viewer could not see there is a -1. */
  function removeCard(hand, code) {
    let i = hand.indexOf(code);
    if (i < 0) i = hand.indexOf(-1);
    if (i >= 0) hand.splice(i, 1);
  }

  /* Apply one event. ``ctx`` says which draw of the acting seat ends a count. */
  function applyEvent(m, ev, ctx) {
    const [kind, seat, cards, suit, value] = ev;
    switch (kind) {
      case "dealer_draw":
        m.dealerDraws.push([seat, cards[0]]);
        break;
      case "hand_start":
        m.hand = value; m.dealer = seat; m.handOver = false;
        m.hands = Array.from({ length: N }, () => []);
        m.stock = deckSize(); m.discard = 0; m.direction = 1; m.count = 0;
        m.handPressures = new Array(N).fill(0); m.penalty = new Array(N).fill(false);
        m.top = -1; m.suit = -1;
        break;
      case "deal":
        m.hands[seat] = cards.slice(); m.stock -= cards.length;
        break;
      case "turn_up":
        m.top = cards[0]; m.suit = suitOf(cards[0]); m.stock -= 1; m.discard = 1;
        break;
      case "name_suit":
        m.suit = suit;
        break;
      case "play":
        removeCard(m.hands[seat], cards[0]);
        m.top = cards[0]; m.suit = suit >= 0 ? suit : suitOf(cards[0]); m.discard += 1;
        break;
      case "missed_announcement":
        m.penalty[seat] = true;
        break;
      case "count":
        m.count = value;
        break;
      case "draw":
        // A draw that emptied the stock logs its reshuffles first and its cards after them.
        for (const c of cards) m.hands[seat].push(c);
        m.stock -= cards.length - m.drawnBeforeReshuffle;
        m.drawnBeforeReshuffle = 0;
        if (ctx && seat === ctx.seat && ctx.countDraw > 0) {
          ctx.countDraw -= 1;
          if (ctx.countDraw === 0) m.count = 0;
        }
        break;
      case "forfeit":
        if (ctx && ctx.kind === "PENALTY" && seat === ctx.seat) m.penalty[seat] = false;
        break;
      case "penalty_draw":
        m.penalty[seat] = false;
        break;
      case "reverse":
        m.direction = value;
        break;
      case "pressure":
        m.handPressures[seat] += value; m.pressureTotals[seat] += value;
        break;
      case "reshuffle":
        m.drawnBeforeReshuffle += m.stock;
        m.stock = value; m.discard = 1;
        break;
      case "hand_end": {
        const h = handResults[value];
        if (h) for (let s = 0; s < N; s++) m.totals[s] += h.scores[s];
        m.handsDone = value; m.handOver = true; m.count = 0;
        break;
      }
      case "game_end":
        m.over = true;
        break;
      default:
        break;
    }
  }

  // ------------------------------------------------------------------ frames

  /* A frame is one position to show: after the start, after each decision, and a
   * separate frame at each hand's end (before the next deal) so the final hands show. */
  const LOG = []; // {ev, dec (decision index or -1), frame}
  const FRAMES = [];

  function pushFrame(m, dec, handOver, firstLog) {
    FRAMES.push({
      model: cloneModel(m), dec: dec, handOver: handOver,
      logEnd: LOG.length, firstLog: firstLog,
      handLogStart: currentHandLogStart,
    });
  }

  let currentHandLogStart = 0;
  const building = newModel();

  function runEvents(events, dec, ctx) {
    const m = building;
    let firstLog = LOG.length;
    for (let i = 0; i < events.length; i++) {
      const ev = events[i];
      if (ev[0] === "hand_start") currentHandLogStart = LOG.length;
      applyEvent(m, ev, ctx);
      LOG.push({ ev: ev, dec: dec });
      const more = events.slice(i + 1).some((e) => e[0] !== "game_end");
      if (ev[0] === "hand_end" && more) {
        pushFrame(m, dec, true, firstLog);
        firstLog = LOG.length;
      }
    }
    pushFrame(m, dec, m.handOver, firstLog);
  }

  /* Add one record after the start: a decision's frames, or the result. */
  function addRecord(rec) {
    if (rec.type === "result") {
      takeResult(rec);
      return;
    }
    if (rec.type !== "decision" || rec.n <= DECISIONS.length) return; // (a live stream may repeat one)
    for (const h of rec.hand_results || []) handResults[h.number] = h;
    DECISIONS.push(rec);
    const ctx = { seat: rec.seat, kind: rec.kind, countDraw: 0 };
    if (rec.action === 0 && building.count > 0) {
      if (rec.kind === "ANSWER_COUNT") ctx.countDraw = 1;
      else if (rec.kind === "PENALTY") ctx.countDraw = 2;
    }
    runEvents(rec.events, DECISIONS.length - 1, ctx);
  }

  runEvents(START.events, -1, null);
  RECORDS.slice(2).forEach(addRecord);

  /* The frame showing the position right after decision n (0: before any decision). */
  function frameOfDecision(n) {
    let best = 0;
    for (let i = 0; i < FRAMES.length; i++) {
      if (FRAMES[i].dec + 1 <= n) best = i;
    }
    return best;
  }

  // ------------------------------------------------------------------ rendering helpers

  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  function cardEl(code, extra) {
    const e = el("span", "card" + (extra ? " " + extra : ""));
    if (code < 0) {
      e.classList.add("empty");
      return e;
    }
    e.classList.add(isRed(code) ? "red" : "black");
    e.dataset.card = cardText(code);
    e.title = cardText(code);
    e.appendChild(el("span", "rank", RANK_TEXT[code >> 2]));
    e.appendChild(el("span", "suit", SUIT_SYMBOL[code & 3]));
    return e;
  }

  /* Known cards by suit and rank, then the ones the viewer cannot see (-1). */
  function sortForDisplay(hand) {
    const known = hand.filter((c) => c >= 0).sort((a, b) => (suitOf(a) - suitOf(b)) || (rankOf(a) - rankOf(b)));
    return known.concat(hand.filter((c) => c < 0));
  }

  /* A table cell with a seat's bot name, cut short with an ellipsis (full name on hover). */
  function nameCell(tag, s, withSeat) {
    const cell = el(tag);
    cell.title = "seat " + s + ": " + BOTS[s];
    cell.appendChild(el("span", "nm", (withSeat ? s + " " : "") + BOTS[s]));
    return cell;
  }

  function seatName(s) {
    return s >= 0 && s < N ? BOTS[s] : "table";
  }

  function cardsText(cards) {
    return cards.map((c) => RANK_TEXT[c >> 2] + SUIT_SYMBOL[c & 3]).join(" ");
  }

  /* One event in words, as ``viewer`` may see it (null: everything). */
  function describe(ev, viewer) {
    const [kind, seat, cards, suit, value] = ev;
    const who = seatName(seat);
    const sees = (viewer == null || viewer === seat) && !cards.some((c) => c < 0);
    switch (kind) {
      case "dealer_draw": return who + " draws " + cardsText(cards) + " for the deal";
      case "hand_start": return "Hand " + value + ": " + who + " deals";
      case "deal": return who + " is dealt " + (sees ? cardsText(cards) : cards.length + " cards");
      case "turn_up": return "turned up " + cardsText(cards);
      case "name_suit": return who + " names " + SUIT_WORD[suit];
      case "play": return who + " plays " + cardsText(cards) + (suit >= 0 ? " naming " + SUIT_WORD[suit] : "") + (value ? " \u2013 one card!" : "");
      case "missed_announcement": return who + " forgot to announce one card";
      case "count": return "count " + value;
      case "cooper": return who + " makes a Cooper (out on a 6) and draws";
      case "draw":
        if (!cards.length) return who + " draws nothing";
        return who + " draws " + (sees ? cardsText(cards) : cards.length + (cards.length === 1 ? " card" : " cards"));
      case "forfeit": return who + " forfeits the turn";
      case "skip": return who + " is skipped";
      case "reverse": return "direction reverses (" + (value > 0 ? "clockwise" : "counter-clockwise") + ")";
      case "pressure": return who + " takes a pressure of " + value;
      case "reshuffle": return "discards reshuffled: stock " + value;
      case "penalty_draw": return who + " pays the one-card penalty";
      case "hand_end": {
        const h = handResults[value];
        return "Hand " + value + " ends" + (h ? " (" + h.reason + ")" : "");
      }
      case "game_end": return "Game over";
      default: return kind;
    }
  }

  /* Microseconds as milliseconds, e.g. "1.25 ms" (bare: no unit, for table cells). */
  function ms(us, bare) {
    if (us == null) return "\u2013";
    const v = us / 1000;
    return (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) + (bare ? "" : " ms");
  }

  // ------------------------------------------------------------------ UI state

  const ui = { frame: 0, viewer: null, playing: false, timer: null };

  function setupStatic() {
    const flags = Object.keys(FLAGS).filter((k) => FLAGS[k] === true);
    if (FLAGS.seven_hits && FLAGS.seven_hits !== "next_but_one") flags.push("seven_hits=" + FLAGS.seven_hits);
    if (FLAGS.decks) flags.push(FLAGS.decks + (FLAGS.decks === 1 ? " deck" : " decks"));
    $("game-title").textContent = HEADER.game_id ? "Game " + HEADER.game_id : "Craits replay";
    const meta = [CONFIG.preset, N + " players"].concat(flags);
    if (HEADER.seed != null) meta.push("seed " + HEADER.seed);
    if (DATA.note) meta.push(DATA.note);
    if (HEADER.tournament) meta.push("tournament " + HEADER.tournament);
    if (RESULT.aborted) meta.push("ABORTED: " + RESULT.aborted);
    $("game-meta").textContent = meta.join(" \u00b7 ");
    if (DATA.index_href) {
      const link = $("index-link");
      link.href = DATA.index_href;
      link.hidden = false;
    }
    const view = $("view");
    view.appendChild(new Option("all hands", "all"));
    for (let s = 0; s < N; s++) view.appendChild(new Option("seat " + s + ": " + BOTS[s], String(s)));

    const seats = $("seats");
    for (let s = 0; s < N; s++) {
      const box = el("div", "seat");
      box.id = "seat-" + s;
      box.dataset.seat = String(s);
      // Seat 0 at the bottom, then clockwise (seat 1 to its left on screen).
      const angle = Math.PI / 2 + (2 * Math.PI * s) / N;
      // Clamped so a seat box (at most 30% wide) never leaves the table.
      box.style.left = Math.min(84, Math.max(16, 50 + 40 * Math.cos(angle))).toFixed(2) + "%";
      box.style.top = (50 + 38 * Math.sin(angle)).toFixed(2) + "%";
      const head = el("div", "seat-head");
      head.appendChild(el("span", "seat-no", String(s)));
      head.appendChild(el("span", "seat-name", BOTS[s]));
      head.appendChild(el("span", "badges"));
      box.appendChild(head);
      box.appendChild(el("div", "hand"));
      box.appendChild(el("div", "seat-foot"));
      seats.appendChild(box);
    }
    setRange();
  }

  function setRange() {
    $("slider").max = String(FRAMES.length - 1);
    $("goto").max = String(DECISIONS.length);
  }

  // ------------------------------------------------------------------ render

  function render() {
    const f = FRAMES[ui.frame];
    const m = f.model;
    const next = f.handOver || m.over ? null : DECISIONS[f.dec + 1] || null;
    const viewer = ui.viewer;
    document.body.dataset.frame = String(ui.frame);
    document.body.dataset.view = viewer == null ? "all" : String(viewer);

    // seats and hands
    for (let s = 0; s < N; s++) {
      const box = $("seat-" + s);
      box.classList.toggle("to-act", !!next && next.seat === s);
      box.classList.toggle("viewer", viewer === s);
      const badges = box.querySelector(".badges");
      badges.textContent = "";
      if (m.dealer === s) badges.appendChild(el("span", "badge dealer", "D"));
      if (m.penalty[s]) badges.appendChild(el("span", "badge penalty", "owes a turn"));
      if (m.handPressures[s]) badges.appendChild(el("span", "badge pressure", "pressure " + m.handPressures[s]));
      const hand = box.querySelector(".hand");
      hand.textContent = "";
      const hidden = viewer != null && viewer !== s;
      hand.classList.toggle("hidden-hand", hidden);
      hand.dataset.count = String(m.hands[s].length);
      if (hidden) {
        for (let i = 0; i < m.hands[s].length; i++) hand.appendChild(el("span", "card back"));
      } else {
        for (const c of sortForDisplay(m.hands[s])) hand.appendChild(c < 0 ? el("span", "card back") : cardEl(c));
      }
      if (!m.hands[s].length) hand.appendChild(el("span", "no-cards", "no cards"));
      box.querySelector(".seat-foot").textContent =
        m.hands[s].length + (m.hands[s].length === 1 ? " card" : " cards") + " \u00b7 total " + m.totals[s];
    }

    // centre
    const top = $("top-card");
    top.replaceWith((() => { const c = cardEl(m.top, "big"); c.id = "top-card"; return c; })());
    $("stock-size").textContent = String(m.stock);
    $("stock").classList.toggle("empty", m.stock <= 0);
    $("discard-size").textContent = String(m.discard);
    const suit = $("current-suit");
    suit.textContent = m.suit >= 0 ? SUIT_SYMBOL[m.suit] + " " + SUIT_WORD[m.suit] : "\u2013";
    suit.dataset.suit = m.suit >= 0 ? SUIT_WORD[m.suit] : "";
    suit.className = m.suit === 1 || m.suit === 2 ? "red" : "";
    const dir = $("direction");
    dir.textContent = m.direction > 0 ? "\u21bb clockwise" : "\u21ba counter-clockwise";
    dir.dataset.direction = String(m.direction);
    $("count").textContent = String(m.count);
    $("count-chip").classList.toggle("hot", m.count > 0);
    const sizes = handSizes();
    $("hand-number").textContent = sizes ? m.hand + " / " + sizes.length + " (" + sizes[m.hand - 1] + (sizes[m.hand - 1] === 1 ? " card)" : " cards)") : String(m.hand);
    const toAct = $("to-act");
    toAct.textContent = next ? next.seat + " " + BOTS[next.seat] + " \u2013 " + next.kind.toLowerCase().replace("_", " ") : "\u2013";
    toAct.dataset.seat = next ? String(next.seat) : "";
    toAct.dataset.kind = next ? next.kind : "";
    $("hand-number").dataset.hand = String(m.hand);
    const banner = $("banner");
    if (m.over) {
      banner.hidden = false;
      banner.textContent = "Game over \u2013 " + winnersText();
    } else if (f.handOver) {
      banner.hidden = false;
      const h = handResults[m.handsDone];
      banner.textContent = "Hand " + m.handsDone + " over" + (h ? " (" + h.reason + ")" : "");
    } else {
      banner.hidden = true;
    }

    // frame label and controls
    const decNo = f.dec + 1;
    const label = $("frame-label");
    label.textContent = "decision " + decNo + " / " + DECISIONS.length + (f.handOver ? " \u00b7 hand over" : "");
    label.dataset.decision = String(decNo);
    $("slider").value = String(ui.frame);
    $("btn-play").textContent = ui.playing ? "\u275A\u275A pause" : "\u25B6 play";
    $("view").value = viewer == null ? "all" : String(viewer);

    renderDecision(f);
    renderEvents(f, viewer);
    renderScoreSheet(m, f);
    renderBotStats(f);
  }

  function winnersText() {
    if (!RESULT.placings) return "the final scores come with the result";
    if (RESULT.team_totals) {
      const t = RESULT.team_placings.indexOf(1);
      if (RESULT.team_placings[0] === RESULT.team_placings[1]) return "the partnerships tie on " + RESULT.team_totals[0];
      return "team " + t + " wins (" + BOTS[t] + " & " + BOTS[t + 2] + "), " + RESULT.team_totals[t] + " to " + RESULT.team_totals[1 - t];
    }
    const best = [];
    RESULT.placings.forEach((p, s) => { if (p === 1) best.push(BOTS[s]); });
    return (best.length > 1 ? "tie: " : "winner: ") + best.join(", ");
  }

  function renderDecision(f) {
    const box = $("decision-info");
    box.textContent = "";
    if (f.dec < 0) {
      box.appendChild(el("p", "muted", "The deal: no decision yet."));
      return;
    }
    const rec = DECISIONS[f.dec];
    const rows = [
      ["decision", "#" + rec.n + " (hand " + rec.hand + ")"],
      ["seat", rec.seat + " " + BOTS[rec.seat]],
      ["kind", rec.kind.toLowerCase().replace("_", " ")],
      ["action", rec.text + "  (id " + rec.action + (rec.legal != null ? ", " + rec.legal + " legal" : "") + ")"],
      ["status", rec.status],
      ["think", ms(rec.think_us)],
      ["transport", ms(rec.transport_us)],
    ];
    if (rec.note) rows.push(["note", rec.note]);
    const table = el("table", "kv");
    table.id = "decision-table";
    for (const [k, v] of rows) {
      const tr = el("tr");
      tr.appendChild(el("th", null, k));
      const td = el("td", k === "status" ? "status-" + rec.status : null, v);
      td.dataset.field = k;
      tr.appendChild(td);
      table.appendChild(tr);
    }
    box.appendChild(table);
  }

  function renderEvents(f, viewer) {
    const box = $("events");
    box.textContent = "";
    const from = f.handLogStart;
    let lastDec = null;
    for (let i = from; i < f.logEnd; i++) {
      const entry = LOG[i];
      if (entry.dec !== lastDec && entry.dec >= 0) {
        const rec = DECISIONS[entry.dec];
        box.appendChild(el("div", "ev-dec", "#" + rec.n + " " + BOTS[rec.seat] + ": " + rec.text + " [" + rec.status + "]"));
      }
      lastDec = entry.dec;
      const line = el("div", "ev ev-" + entry.ev[0] + (i >= f.firstLog ? " fresh" : ""), describe(entry.ev, viewer));
      box.appendChild(line);
    }
    scrollEventsSoon();
  }

  /* Scroll the log to its end at the next frame: reading scrollHeight now would force a
   * layout on every step (slow when stepping fast or scrubbing). */
  let scrollPending = false;
  function scrollEventsSoon() {
    if (scrollPending) return;
    scrollPending = true;
    requestAnimationFrame(() => {
      scrollPending = false;
      const box = $("events");
      box.scrollTop = box.scrollHeight;
    });
  }

  function renderScoreSheet(m, f) {
    const table = $("score-sheet");
    table.textContent = "";
    const sizes = handSizes();
    const total = sizes ? sizes.length : Math.max((RESULT.hands || []).length, Object.keys(handResults).length, 1);
    const head = el("tr");
    head.appendChild(el("th", null, "hand"));
    for (let s = 0; s < N; s++) head.appendChild(nameCell("th", s, false));
    const thead = el("thead");
    thead.appendChild(head);
    table.appendChild(thead);
    const body = el("tbody");
    for (let h = 1; h <= total; h++) {
      const tr = el("tr");
      tr.dataset.hand = String(h);
      if (h === m.hand && !f.handOver && !m.over) tr.className = "current";
      tr.appendChild(el("th", null, String(h) + (sizes ? " (" + sizes[h - 1] + ")" : "")));
      const res = handResults[h];
      for (let s = 0; s < N; s++) {
        const td = el("td");
        if (res && h <= m.handsDone) {
          td.textContent = String(res.scores[s]);
          if (res.pressures[s]) td.appendChild(el("sup", "p", "p" + res.pressures[s]));
        }
        tr.appendChild(td);
      }
      body.appendChild(tr);
    }
    table.appendChild(body);
    const foot = el("tfoot");
    const totals = el("tr", "totals");
    totals.appendChild(el("th", null, "total"));
    for (let s = 0; s < N; s++) {
      const td = el("td", null, String(m.totals[s]));
      td.dataset.seat = String(s);
      totals.appendChild(td);
    }
    foot.appendChild(totals);
    if (TEAMS) {
      const teams = el("tr", "teams");
      teams.appendChild(el("th", null, "team"));
      for (let s = 0; s < N; s++) {
        const td = el("td", null, String(m.totals[s % 2] + m.totals[(s % 2) + 2]));
        td.title = "team " + (s % 2) + ": seats " + (s % 2) + " and " + ((s % 2) + 2);
        teams.appendChild(td);
      }
      foot.appendChild(teams);
    }
    if (m.over && RESULT.placings) {
      const places = el("tr", "places");
      places.appendChild(el("th", null, "place"));
      for (let s = 0; s < N; s++) places.appendChild(el("td", RESULT.placings[s] === 1 ? "win" : null, String(RESULT.placings[s])));
      foot.appendChild(places);
    }
    table.appendChild(foot);
    table.dataset.handsDone = String(m.handsDone);
  }

  const ISSUE_ABBREV = { timeout: "T", illegal: "I", malformed: "M", bank: "B", default: "D", disconnected: "X" };

  function renderBotStats(f) {
    const table = $("bot-stats");
    table.textContent = "";
    const stats = BOTS.map(() => ({ asked: 0, auto: 0, think: 0, max: 0, timed: 0, transport: 0, bad: {} }));
    for (let d = 0; d <= f.dec; d++) {
      const rec = DECISIONS[d];
      const st = stats[rec.seat];
      if (rec.status === "auto") { st.auto += 1; continue; }
      st.asked += 1;
      if (rec.think_us != null) { st.think += rec.think_us; st.max = Math.max(st.max, rec.think_us); st.timed += 1; }
      if (rec.transport_us != null) st.transport += rec.transport_us;
      if (rec.status !== "ok") st.bad[rec.status] = (st.bad[rec.status] || 0) + 1;
    }
    const head = el("tr");
    for (const h of ["seat", "asked", "auto", "think avg ms", "think max ms", "transport avg ms", "issues"]) head.appendChild(el("th", null, h));
    table.appendChild(head);
    stats.forEach((st, s) => {
      const tr = el("tr");
      tr.appendChild(nameCell("th", s, true));
      tr.appendChild(el("td", null, String(st.asked)));
      tr.appendChild(el("td", null, String(st.auto)));
      tr.appendChild(el("td", null, st.timed ? ms(Math.round(st.think / st.timed), true) : "\u2013"));
      tr.appendChild(el("td", null, st.timed ? ms(st.max, true) : "\u2013"));
      tr.appendChild(el("td", null, st.timed ? ms(Math.round(st.transport / st.timed), true) : "\u2013"));
      const issues = el("td", null, Object.keys(st.bad).map((k) => (ISSUE_ABBREV[k] || k) + st.bad[k]).join(" ") || "\u2013");
      issues.title = Object.keys(st.bad).map((k) => st.bad[k] + " " + k).join(", ");
      tr.appendChild(issues);
      table.appendChild(tr);
    });
  }

  // ------------------------------------------------------------------ navigation

  function go(frame) {
    ui.frame = Math.max(0, Math.min(FRAMES.length - 1, frame));
    if (ui.frame === FRAMES.length - 1) pause();
    render();
  }

  function step(delta) { go(ui.frame + delta); }

  function handJump(delta) {
    const hand = FRAMES[ui.frame].model.hand;
    let i = ui.frame;
    if (delta > 0) {
      // to the end of this hand (its final cards and scores), or on to the next deal
      i += 1;
      while (i < FRAMES.length - 1 && !FRAMES[i].handOver && FRAMES[i].model.hand === hand) i++;
    } else {
      // to the start of this hand, or of the previous one if already there
      const startOf = (j) => { while (j > 0 && FRAMES[j - 1].model.hand === FRAMES[j].model.hand) j--; return j; };
      const s = startOf(i);
      i = s === i && i > 0 ? startOf(i - 1) : s;
    }
    go(i);
  }

  function play() {
    if (ui.frame >= FRAMES.length - 1) ui.frame = 0;
    ui.playing = true;
    tick();
    render();
  }

  function tick() {
    clearTimeout(ui.timer);
    if (!ui.playing) return;
    ui.timer = setTimeout(() => { step(1); tick(); }, Number($("speed").value));
  }

  function pause() {
    ui.playing = false;
    clearTimeout(ui.timer);
  }

  function togglePlay() {
    if (ui.playing) { pause(); render(); } else play();
  }

  function setViewer(v) {
    ui.viewer = v == null || v === "all" || Number(v) >= N ? null : Number(v);
    render();
  }

  function gotoDecision(n) {
    go(frameOfDecision(Math.max(0, Math.min(DECISIONS.length, Number(n) || 0))));
  }

  function bind() {
    $("btn-first").onclick = () => go(0);
    $("btn-last").onclick = () => go(FRAMES.length - 1);
    $("btn-prev").onclick = () => step(-1);
    $("btn-next").onclick = () => step(1);
    $("btn-prev-hand").onclick = () => handJump(-1);
    $("btn-next-hand").onclick = () => handJump(1);
    $("btn-play").onclick = togglePlay;
    $("slider").oninput = (e) => go(Number(e.target.value));
    $("view").onchange = (e) => setViewer(e.target.value);
    $("speed").onchange = () => tick();
    $("goto").onchange = (e) => gotoDecision(e.target.value);
    $("goto").onkeydown = (e) => {
      if (e.key === "Enter") { gotoDecision(e.target.value); e.target.blur(); }
      if (e.key === "Escape") e.target.blur();
      e.stopPropagation();
    };
    document.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const tag = (e.target && e.target.tagName) || "";
      if (tag === "INPUT" && e.target.type !== "range") return;
      let handled = true;
      switch (e.key) {
        case "ArrowRight": step(1); break;
        case "ArrowLeft": step(-1); break;
        case " ": togglePlay(); break;
        case "Home": go(0); break;
        case "End": go(FRAMES.length - 1); break;
        case "PageDown": handJump(1); break;
        case "PageUp": handJump(-1); break;
        case "a": case "A": setViewer(null); break;
        case "g": $("goto").focus(); $("goto").select(); break;
        default:
          if (/^[0-9]$/.test(e.key) && Number(e.key) < N) setViewer(Number(e.key));
          else handled = false;
      }
      if (handled) e.preventDefault();
    });
  }

  setupStatic();
  bind();
  render();
  /* A link to a decision (a fault's, from a bot's page): #decision=N, with seat=S for that seat's view. */
  const wanted = new URLSearchParams(location.hash.slice(1));
  if (wanted.has("seat")) setViewer(wanted.get("seat"));
  if (wanted.has("decision")) gotoDecision(wanted.get("decision"));

  /* Live: add records as they come; a viewer on the last frame follows the game. */
  function append(records) {
    const following = ui.frame >= FRAMES.length - 1;
    for (const rec of records) addRecord(rec);
    setRange();
    if (following) ui.frame = FRAMES.length - 1;
    render();
  }

  // A small API for tests, the console and the live page.
  window.craitsViewer = {
    get frames() { return FRAMES.length; },
    get decisions() { return DECISIONS.length; },
    append: append,
    go: go,
    gotoDecision: gotoDecision,
    setViewer: setViewer,
    frame: () => ui.frame,
  };
})();
