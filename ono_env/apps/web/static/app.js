// The ONO! web table: the setup form, the table from your seat, the replay list and viewer.
// The server holds every game; this page sends only decisions (an action id and the number
// of the view it was made on) and shows what the server answers. Text from the server is
// always set as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const COLOURS = { R: "red", Y: "yellow", G: "green", B: "blue" };
let options = null;     // GET /api/options
let table = null;       // the current game's view
let busy = false;       // a decision is on its way
let replay = null;      // the replay being watched
let step = 0;           // its position

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function showError(message) {
  const box = $("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    throw new Error((data && data.error) || `${method} ${path}: HTTP ${response.status}`);
  }
  return data;
}

// ---- cards ----------------------------------------------------------------------------
function cardFace(name) {
  // "R5" -> 5, "GS" -> skip, "B+2", "W", "W+4", "WS" (shuffle hands), "WC" (customizable)
  if (name[0] === "W") return name;
  const rank = name.slice(1);
  return { S: "\u2298", R: "\u21c4" }[rank] || rank;
}

function card(name, extra = "") {
  return el("div", { class: `card ${name[0]} ${extra}`, title: name, "data-card": name,
                     text: cardFace(name) });
}

function colourDot(target, colour) {
  target.style.background = colour ? `var(--${colour})` : "transparent";
  target.title = colour ? `colour: ${COLOURS[colour]}` : "no colour yet";
}

// ---- screens --------------------------------------------------------------------------
function show(screen) {
  for (const s of document.querySelectorAll(".screen")) s.hidden = s.id !== `screen-${screen}`;
}

async function route() {
  showError("");
  const hash = location.hash || "#/new";
  const [, what, id] = hash.split("/");
  try {
    // a game or a replay drawn before it is shown: the screen never shows the previous one
    // while this loads, nor after it failed (before: a bad game link showed the error above
    // the previous game, still clickable)
    if (what === "game" && id) { await loadGame(id); show("game"); }
    else if (what === "replays") { show("replays"); await loadReplays(); }
    else if (what === "replay" && id) { await loadReplay(id); show("replay"); }
    else { show("new"); await setupForm(); }
  } catch (e) {
    if ((what === "game" || what === "replay") && id) show("none");   // the error alone
    showError(e.message);
  }
}

// ---- new game -------------------------------------------------------------------------
async function setupForm() {
  if (!options) options = await api("GET", "/api/options");
  const rules = $("f-rules");
  if (!rules.options.length) {
    for (const name of Object.keys(options.presets)) rules.append(el("option", { value: name, text: name }));
    rules.value = "basic";
    rules.addEventListener("change", () => { presetChanged(); });
    $("f-players").addEventListener("change", opponentInputs);
    $("f-options").addEventListener("change", opponentInputs);
    presetChanged();
  }
}

function presetChanged() {
  const preset = options.presets[$("f-rules").value];
  $("f-players").value = $("f-rules").value === "basic" ? 2 : preset.num_players;
  $("f-preset-help").textContent = options.summaries[$("f-rules").value] || "";
  const box = $("f-options");
  box.replaceChildren();
  for (const [key, value] of Object.entries(preset)) {
    if (key === "name" || key === "num_players") continue;
    let input;
    if (typeof value === "boolean") {
      input = el("input", { type: "checkbox", "data-option": key });
      input.checked = value;
    } else if (options.choices[key]) {
      input = el("select", { "data-option": key });
      for (const c of options.choices[key]) input.append(el("option", { value: c, text: c }));
      input.value = value;
    } else {
      input = el("input", { type: "number", "data-option": key, value: String(value) });
    }
    input.dataset.preset = JSON.stringify(value);
    const help = options.help[key];
    const text = help ? `${help.meaning} (allowed: ${help.allowed})` : "";
    const label = el("label", { class: typeof value === "boolean" ? "check" : "", title: text },
                     input, key);
    box.append(el("div", { class: "option", "data-option-box": key }, label,
                  el("small", { class: "help", "data-help": key, text })));
  }
  opponentInputs();
}

let agentsAsked = 0;
async function opponentInputs() {
  // only the agents that can sit at this table (a learned agent plays the rules and player
  // count it was trained for): the server says which
  const n = Math.max(2, Math.min(10, Number($("f-players").value) || 2));
  const ask = ++agentsAsked;
  let names = options.agents;
  try {
    names = (await api("POST", "/api/agents", {
      rules: $("f-rules").value, options: changedOptions(), num_players: n })).agents;
  } catch (e) { /* options being typed: keep the full list until they are valid */ }
  if (ask !== agentsAsked) return;   // a newer change answered first
  const box = $("f-opponents");
  const before = [...box.querySelectorAll("select")].map((s) => s.value);
  const typedBefore = [...box.querySelectorAll("[data-opponent-text]")].map((t) => t.value);
  box.replaceChildren();
  for (let k = 0; k < n - 1; k++) {
    const s = el("select", { "data-opponent": String(k) });
    for (const name of names) {   // a cheating agent sees hidden cards: said so
      s.append(el("option", { value: name, text: (options.cheating || []).includes(name)
        ? `${name} (cheating)` : name }));
    }
    s.value = names.includes(before[k]) ? before[k] : options.default_opponent;
    const typed = el("input", { type: "text", "data-opponent-text": String(k), size: "12",
                                placeholder: "or type: pimc:16", value: typedBefore[k] || "",
                                title: "any agent name the server allows, e.g. a search agent " +
                                       "with its budget (pimc:16, ismcts:200, pimc:50ms); the " +
                                       "server checks it when you deal" });
    box.append(el("label", {}, `Opponent ${k + 1}`, s, typed));
  }
}

function changedOptions() {
  const out = {};
  for (const input of $("f-options").querySelectorAll("[data-option]")) {
    const key = input.dataset.option;
    let value;
    if (input.type === "checkbox") value = input.checked;
    else if (input.tagName === "SELECT") value = input.value;
    // a whole number as a number; anything else ("", "1e3", "2.5") as typed, for the server
    // to refuse with the option's allowed values (before: "1e3" was sent as 1000)
    else value = /^-?[0-9]+$/.test(input.value.trim()) ? Number(input.value) : input.value;
    if (JSON.stringify(value) !== input.dataset.preset) out[key] = value;
  }
  return out;
}

async function startGame(event) {
  event.preventDefault();
  showError("");
  const seed = $("f-seed").value;
  // a JavaScript number is exact up to 2**53 - 1: a larger seed would be sent as another one
  if (seed !== "" && !(/^[0-9]+$/.test(seed) && Number.isSafeInteger(Number(seed)))) {
    showError(`seed ${seed}: allowed: a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, or empty for a fresh one`);
    return;
  }
  // an empty or partial number field is said so, not sent as 0 (Number("") is 0)
  for (const [id, what] of [["f-players", "Players"], ["f-seat", "Your seat"]]) {
    const text = $(id).value.trim();
    if (!/^[0-9]+$/.test(text)) {
      showError(`${what}: ${text === "" ? "empty" : JSON.stringify(text)}; allowed: a whole number`);
      return;
    }
  }
  const body = {
    rules: $("f-rules").value,
    options: changedOptions(),
    num_players: Number($("f-players").value),
    seat: Number($("f-seat").value),
    opponents: [...$("f-opponents").querySelectorAll("label")].map((l) =>
      l.querySelector("[data-opponent-text]").value.trim() || l.querySelector("select").value),
    seed: seed === "" ? null : Number(seed),
    thinking: $("f-thinking").checked,
  };
  try {
    table = await api("POST", "/api/games", body);
    location.hash = `#/game/${table.id}`;
  } catch (e) { showError(e.message); }
}

// ---- the table ------------------------------------------------------------------------
let shownTable = null;  // the game the end-of-game buttons belong to

async function loadGame(id) {
  if (!table || table.id !== id) table = await api("GET", `/api/games/${id}`);
  if (shownTable !== table.id) {
    shownTable = table.id;
    $("save-replay").disabled = false;
    $("open-replay").hidden = true;
    $("download-replay").hidden = true;
  }
  drawTable();
}

async function decide(action) {
  if (busy) return;
  busy = true;
  showError("");
  try {
    table = await api("POST", `/api/games/${table.id}/action`, { action, move: table.move });
  } catch (e) {
    showError(e.message);
    try { table = await api("GET", `/api/games/${table.id}`); } catch (e2) { /* keep the view */ }
  }
  busy = false;
  drawTable();
}

function thinkingText(t) {
  const items = Object.entries(t.probs).sort((a, b) => b[1] - a[1]);
  const box = el("div", { class: "think" });
  for (const [name, p] of items.slice(0, 6)) {
    box.append(el("div", {}, el("span", { class: "bar", style: `width:${Math.round(p * 80)}px` }),
                  `${name} ${(100 * p).toFixed(1)}%`));
  }
  // a search agent: the mean playout result of each legal action
  const values = Object.entries(t.values || {}).sort((a, b) => b[1] - a[1]);
  if (values.length) {
    box.append(el("div", { class: "note", text:
      "search: the mean result of each action over the deals it sampled, from 0 (a loss; a " +
      "loss to tied winners less) to 1 (a win; a shared win less, a game cut unfinished " +
      "1/players, a round of a match " +
      "by the points it moved). pimc keeps its guide's choice (greedy's, or the learned " +
      "policy's) unless another action beats it by a clear margin, so it may not play the " +
      "top value." }));
  }
  for (const [name, v] of values.slice(0, 6)) {
    box.append(el("div", {}, el("span", { class: "bar", style: `width:${Math.round(Math.max(0, Math.min(1, v)) * 80)}px` }),
                  `${name}: mean result ${v >= 0 ? "+" : ""}${v.toFixed(2)}`));
  }
  if (t.value !== null && t.value !== undefined) box.append(el("div", { text: `value estimate ${t.value.toFixed(3)}` }));
  return box;
}

function drawPile(prefix, s) {
  $(`${prefix}stock`).textContent = String(s.stock);
  $(`${prefix}top`).replaceChildren(card(s.top));
  colourDot($(`${prefix}colour`), s.color);
  $(`${prefix}pending`).textContent = s.pending_draw ? `pending draw: ${s.pending_draw}` : "";
}

// round: the rounds ended (the engine's count); over: the match has ended, and its last
// round is the one shown (before: a round that was never dealt, one past it)
function drawScores(target, rules, scores, round, over) {
  target.textContent = rules.target_score
    ? `round ${over ? round : round + 1} \u00b7 match to ${rules.target_score} \u00b7 scores ` +
      scores.map((v, q) => `P${q} ${v}`).join("  ")
    : "";
}

function drawTable() {
  const t = table;
  document.body.dataset.move = String(t.move);
  document.body.dataset.finished = String(t.finished);
  const arrow = t.direction === 1 ? "clockwise \u21bb" : "counter-clockwise \u21ba";
  $("status").textContent = `${t.rules_title} \u00b7 ${t.players.length} players \u00b7 you are P${t.seat} \u00b7 ` +
    `direction ${arrow} \u00b7 ` + (t.seed === null ? "seed shown at the end" : `seed ${t.seed}`);
  drawRing(t);
  drawPile("", t);
  drawScores($("scores"), t.rules, t.scores, t.round, t.finished && !t.result.truncated);
  const mine = t.legal.length > 0;
  $("turn").textContent = t.finished ? "" : mine
    ? `Your turn (${t.phase})` + (t.drawn_card ? `: you drew ${t.drawn_card}` : "")
    : `P${t.current} to act`;
  // your hand: a card is playable when some legal action plays it
  const plays = {};
  const others = [];
  for (const a of t.legal) {
    if (a.name.startsWith("play ")) {
      const cardName = a.name.split(" ")[1];
      (plays[cardName] = plays[cardName] || []).push(a);
    } else others.push(a);
  }
  const hand = $("hand");
  hand.replaceChildren();
  $("chooser").hidden = true;
  for (const c of t.hand) {
    const legal = plays[c];
    const node = card(c, legal ? "playable" : "");
    if (legal) node.addEventListener("click", () => choose(c, legal));
    hand.append(node);
  }
  const buttons = $("buttons");
  buttons.replaceChildren();
  for (const a of others) {
    // what the option does where that needs saying (what a catch or a challenge costs), as
    // the terminal game lists it
    buttons.append(el("button", { "data-action": a.name, title: a.hint || a.name,
                                  onclick: () => decide(a.id) },
                      a.name, ...(a.hint ? [el("small", { class: "hint", text: a.hint })] : [])));
  }
  // history and what the agents reported
  // the last round's end, where the log no longer reaches back to it (many decisions of
  // agents between two of the human's)
  const earlier = t.events_decision !== null && !t.history.some((h) => h.decision === t.events_decision)
    ? t.events : [];
  drawHistory($("history"), t.history, t.deal, earlier);
  $("thinking-toggle").checked = t.thinking;
  $("rules-summary").textContent = t.rules_summary;
  $("rules-text").replaceChildren(...t.rules_text.map((line) => el("li", { text: line })));
  drawFinalHands(t);
  // the end
  $("result").hidden = !t.finished;
  $("after").hidden = !t.finished;
  if (t.finished) {
    $("result").textContent = winnersText(t.result.winners, (q) => t.players[q].label, t.seat,
                                          t.result.lowest_total)
      || "The game was cut at the decision limit: no winner";
  }
}

// who won: one seat, or those tied on the lowest total of a penalty-scored match (null: none);
// lowest: a penalty-scored match, won on the lowest total, said so as the terminal says it
// (before: "P0 wins" under a last round that P1 won)
function winnersText(winners, label, you, lowest) {
  if (!winners.length) return null;
  const how = lowest ? " on the lowest total" : "";
  if (winners.length === 1 && winners[0] === you) return `You win${how}!`;
  const names = winners.map((q) => (q === you ? "you" : `P${q} (${label(q)})`));
  return winners.length === 1 ? `${names[0]} wins${how}`
    : `${names.join(", ")} tie for the win on the lowest total`;
}

function seatPosition(q, seat, n) {
  // your seat at the bottom; the seats to your left follow clockwise (left, top, right)
  const angle = Math.PI / 2 + (2 * Math.PI * (q - seat)) / n;
  return { left: 50 + 40 * Math.cos(angle), top: 50 + 38 * Math.sin(angle) };
}

function drawRing(t) {
  const ring = $("players");
  ring.replaceChildren();
  const n = t.players.length;
  for (const p of t.players) {
    const at = seatPosition(p.seat, t.seat, n);
    const box = el("div", { class: `player seat${p.seat === t.current && !t.finished ? " active" : ""}${p.you ? " you" : ""}`,
                            "data-seat": String(p.seat), style: `left:${at.left}%;top:${at.top}%` },
      el("div", { class: "name", text: `P${p.seat} ${p.you ? "you" : p.label}` }),
      el("div", { text: `${p.cards} card${p.cards === 1 ? "" : "s"}` }));
    if (p.dealer) box.append(el("span", { class: "badge", text: "dealer" }));
    if (p.called) box.append(el("span", { class: "badge", text: "ONO!" }));
    if (p.catchable) box.append(el("span", { class: "badge warn", text: "can be caught" }));
    ring.append(box);
  }
  const arrow = t.direction === 1 ? "\u21bb" : "\u21ba";
  const turn = t.finished ? "game over" : t.current === t.seat ? "your turn" : `P${t.current}'s turn`;
  ring.append(el("div", { class: "ring-centre", "data-direction": t.direction === 1 ? "clockwise" : "counter-clockwise" },
    el("div", { class: "arrow", text: arrow }),
    el("div", { text: t.direction === 1 ? "clockwise" : "counter-clockwise" }),
    el("div", { class: "whose", text: turn })));
}

function drawHistory(target, history, deal, earlier) {
  // one item per turn (a seat's decisions in a row), newest first; what it changed at the
  // table under it; an agent's thinking folded; last (the oldest), the last round's end
  // where the log no longer holds it (earlier), and what the deal's first card did while
  // the log still reaches back to it
  target.replaceChildren();
  const groups = [];
  for (const h of history) {
    const last = groups[groups.length - 1];
    if (last && last.seat === h.seat) last.items.push(h);
    else groups.push({ seat: h.seat, player: h.player, items: [h] });
  }
  for (const g of groups.reverse()) {
    const li = el("li", { class: "turn-group", "data-seat": String(g.seat) },
                  el("div", { class: "who", text: `P${g.seat} ${g.player}` }));
    for (const h of g.items) {
      li.append(el("div", { class: "act", text: h.text.replace(/^P\d+: /, "") }));
      for (const e of h.events || []) li.append(el("div", { class: "event", text: e }));
      if (h.thinking) {
        li.append(el("details", { class: "thought" },
                     el("summary", { text: "what it thought" }), thinkingText(h.thinking)));
      }
    }
    target.append(li);
  }
  if (earlier && earlier.length) {
    const li = el("li", { class: "turn-group earlier" },
                  el("div", { class: "who", text: "earlier: the last round's end" }));
    for (const e of earlier) li.append(el("div", { class: "event", text: e }));
    target.append(li);
  }
  if (deal && deal.length) {
    const li = el("li", { class: "turn-group" }, el("div", { class: "who", text: "the deal" }));
    for (const e of deal) li.append(el("div", { class: "event", text: e }));
    target.append(li);
  }
}

function drawFinalHands(t) {
  const box = $("final-hands");
  box.replaceChildren();
  if (!t.finished || !t.result || !t.result.hands) { box.hidden = true; return; }
  box.hidden = false;
  box.append(el("h3", { text: "Final hands" }));
  t.result.hands.forEach((h, q) => {
    const row = el("div", { class: "final-hand", "data-seat": String(q) },
                   el("span", { class: "name", text: `P${q} ${t.players[q].you ? "you" : t.players[q].label}: ` }));
    if (!h.length) row.append(el("span", { text: "no cards" }));
    for (const c of h) row.append(card(c, "small"));
    box.append(row);
  });
}

function choose(cardName, legal) {
  if (legal.length === 1) { decide(legal[0].id); return; }
  const box = $("chooser");
  box.replaceChildren(el("span", { text: `play ${cardName}:` }));
  for (const a of legal) {
    const rest = a.name.split(" ").slice(2).join(" ");
    box.append(el("button", { "data-action": a.name, text: COLOURS[rest] ? `${rest} (${COLOURS[rest]})` : a.name,
                              onclick: () => decide(a.id) }));
  }
  box.hidden = false;
}

async function toggleThinking() {
  try { table = await api("POST", `/api/games/${table.id}/thinking`, { show: $("thinking-toggle").checked }); drawTable(); }
  catch (e) { showError(e.message); }
}

async function saveReplay() {
  try {
    const saved = await api("POST", `/api/games/${table.id}/replay`);
    const open = $("open-replay");
    open.href = `#/replay/${saved.id}`;
    open.hidden = false;
    const dl = $("download-replay");
    dl.href = `/api/replays/${saved.id}/file`;
    dl.hidden = false;
    $("save-replay").disabled = true;
  } catch (e) { showError(e.message); }
}

// ---- replays --------------------------------------------------------------------------
async function loadReplays() {
  const list = await api("GET", "/api/replays");
  const body = $("replay-list").querySelector("tbody");
  body.replaceChildren();
  for (const r of list) {
    body.append(el("tr", {},
      el("td", {}, el("a", { href: `#/replay/${r.id}`, text: r.title })),
      el("td", { text: r.rules_title }), el("td", { text: r.players.join(", ") }),
      el("td", { text: String(r.decisions) }),
      el("td", { text: r.winners.length ? r.winners.map((q) => `P${q}`).join(", ") : "-" }),
      el("td", { text: r.saved_at })));
  }
}

async function uploadReplay(event) {
  const file = event.target.files[0];
  if (!file) return;
  try {
    const saved = await api("POST", "/api/replays", await file.text());
    location.hash = `#/replay/${saved.id}`;
  } catch (e) { showError(e.message); }
  event.target.value = "";
}

async function loadReplay(id) {
  if (!replay || replay.id !== id) {
    replay = await api("GET", `/api/replays/${id}`);
    replay.id = id;
    step = 0;
  }
  drawReplay();
}

function drawReplay() {
  const r = replay;
  const s = r.steps[step];
  const last = r.steps.length - 1;
  document.body.dataset.step = String(step);
  $("rp-title").textContent = `${r.rules_title} \u00b7 ${r.players.map((p, q) => `P${q} ${p}`).join(", ")} \u00b7 ${r.source}`;
  $("rp-direction").textContent = s.direction === 1 ? "direction \u21bb clockwise" : "direction \u21ba counter-clockwise";
  $("rp-mine").hidden = !r.players.includes("you");
  $("rp-mine").disabled = nextMine(step) === null;
  $("rp-key").disabled = nextKey(step) === null;
  $("rp-step").textContent = `decision ${step} of ${last}`;
  $("rp-first").disabled = $("rp-back").disabled = step === 0;
  $("rp-next").disabled = $("rp-last").disabled = step === last;
  drawPile("rp-", s);
  drawScores($("rp-scores"), r.rules, s.scores, s.round, s.terminated);
  const hands = $("rp-hands");
  hands.replaceChildren();
  s.hands.forEach((h, q) => {
    const box = el("div", { class: `player${q === s.current_player && !(s.terminated || s.truncated) ? " active" : ""}`,
                            "data-seat": String(q) },
      el("div", { class: "name", text: `P${q} ${r.players[q]} (${h.length})` }));
    if (s.called[q]) box.append(el("span", { class: "badge", text: "ONO!" }));
    const cards = el("div");
    for (const c of h) cards.append(card(c, "small"));
    box.append(cards);
    hands.append(box);
  });
  const prev = r.decisions[step - 1];
  $("rp-previous").textContent = prev ? `${prev.text} (${r.players[prev.seat]})` : "-";
  $("rp-events").replaceChildren(...(prev ? prev.events : r.deal).map((e) => el("div", { class: "event", text: e })));
  $("rp-previous-thinking").replaceChildren(...(prev && prev.thinking ? [thinkingText(prev.thinking)] : []));
  const next = r.decisions[step];
  $("rp-decision").textContent = next ? `${next.text} (${r.players[next.seat]})` : "-";
  $("rp-thinking").replaceChildren(...(next && next.thinking ? [thinkingText(next.thinking)] : []));
  const done = step === last && r.result;
  $("rp-result").hidden = !done;
  if (done) {
    $("rp-result").textContent = winnersText(r.winners, (q) => r.players[q], null, r.lowest_total)
      || "no winner (cut at the decision limit)";
  }
}

const KEY = /\b(catch|challenge|play WS|target \d)\b/;

function isKey(d) {
  // a catch, a challenge, a swap or shuffle of hands, the end of a round
  return KEY.test(d.text) || d.round_end || (d.events || []).some((e) => /swap hands|dealt out again/.test(e));
}

function nextKey(from) {
  // the step just after the next key decision: what it changed is on screen
  for (let k = from; k < replay.decisions.length; k++) if (isKey(replay.decisions[k])) return k + 1;
  return null;
}

function nextMine(from) {
  const me = replay.players.indexOf("you");
  for (let k = from + 1; k < replay.decisions.length; k++) if (replay.decisions[k].seat === me) return k;
  return null;
}

function replayGo(to) {
  if (!replay) return;
  step = Math.max(0, Math.min(replay.steps.length - 1, to));
  drawReplay();
}

// ---- wiring ---------------------------------------------------------------------------
window.addEventListener("hashchange", route);
window.addEventListener("DOMContentLoaded", () => {
  $("new-form").addEventListener("submit", startGame);
  $("thinking-toggle").addEventListener("change", toggleThinking);
  $("save-replay").addEventListener("click", saveReplay);
  $("upload").addEventListener("change", uploadReplay);
  $("rp-first").addEventListener("click", () => replayGo(0));
  $("rp-back").addEventListener("click", () => replayGo(step - 1));
  $("rp-next").addEventListener("click", () => replayGo(step + 1));
  $("rp-last").addEventListener("click", () => replayGo(Infinity));
  $("rp-key").addEventListener("click", () => { const k = nextKey(step); if (k !== null) replayGo(k); });
  $("rp-mine").addEventListener("click", () => { const k = nextMine(step); if (k !== null) replayGo(k); });
  document.addEventListener("keydown", (e) => {
    if ($("screen-replay").hidden) return;
    if (e.key === "ArrowRight") replayGo(step + 1);
    if (e.key === "ArrowLeft") replayGo(step - 1);
  });
  route();
});
