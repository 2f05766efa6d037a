// The page: a game's table as the server sends it to this seat; every move is a request the server checks.
"use strict";

const $ = (id) => document.getElementById(id);
const state = {meta: null, view: null, replay: null, seen: new Set(), polling: false, phase: null};

async function api(method, path, body, raw) {
  const init = {method, headers: {}};
  if (body !== undefined) {
    init.body = raw ? body : JSON.stringify(body);
    init.headers["Content-Type"] = raw ? "application/x-ndjson" : "application/json";
  }
  const res = await fetch(path, init);
  const data = await res.json().catch(() => ({error: `HTTP ${res.status}`}));
  if (!res.ok) throw new Error(data.error || `HTTP ${res.status}`);
  return data;
}

function message(text, kind = "error") {
  const m = $("message");
  m.textContent = text || "";
  m.className = text ? kind : "";
}

function gameMeta(view) { return state.meta.games[view.game]; }

// --- setup ---------------------------------------------------------------------------------------------
function fillSetup() {
  const sel = $("game");
  sel.innerHTML = Object.keys(state.meta.games).map((g) => `<option value="${g}">${g}</option>`).join("");
  sel.value = state.meta.defaults.game;
  sel.onchange = () => seatSelectors(sel.value);
  seatSelectors(sel.value);
}

function seatSelectors(game) {
  const n = state.meta.games[game].players;
  const d = state.meta.defaults;
  const given = d.players && d.game === game ? d.players : ["human"].concat(Array(n - 1).fill("heuristic"));
  const choices = state.meta.players;
  $("seat-players").innerHTML = given.map((spec, s) => {
    const opts = choices.concat(choices.includes(spec) ? [] : [spec])
      .map((p) => `<option${p === spec ? " selected" : ""}>${esc(p)}</option>`).join("");
    return `<label>seat ${s} <select class="player" data-seat="${s}">${opts}</select></label>`;
  }).join("");
}

async function newGame(ev) {
  if (ev) ev.preventDefault();
  const body = {game: $("game").value, players: [...document.querySelectorAll("select.player")].map((e) => e.value)};
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  if ($("pace").value !== "") body.pace = Number($("pace").value);
  else if (!body.players.includes("human")) body.pace = 0.5;  // watching: one move every half second
  if ($("options").value.trim()) {
    try { body.options = JSON.parse($("options").value); } catch (e) { message(`options: ${e.message}`); return; }
  }
  try {
    state.replay = null;
    $("replay-controls").hidden = true;
    $("hint-box").innerHTML = "";
    message("");
    show(await api("POST", "/api/games", body));
  } catch (e) { message(e.message); }
}

// --- the table -----------------------------------------------------------------------------------------
function seatName(view, s) {
  return `player_${s}` + (s === view.viewer ? " (you)" : "") + ` · ${esc(view.players[s])}`;
}

function renderTable(view) {
  const meta = gameMeta(view);
  $("seats").innerHTML = view.seats.map((seat) => {
    const cls = view.to_act === seat.seat ? "seat to-act" : "seat";
    const team = view.sides.length < view.seats.length ? ` · team ${seat.team}` : "";
    const dealer = seat.seat === view.dealer ? " · dealer" : "";
    const hand = seat.hand && view.viewer === null ? `<div class="cards small">${seat.hand.map((c) => cardSVG(meta, c)).join("")}</div>` : "";
    return `<div class="${cls}" data-seat="${seat.seat}"><b>${seatName(view, seat.seat)}</b>${team}${dealer} · ` +
      `${seat.cards} cards<div class="extra">${esc(seat.extra)}</div>${hand}</div>`;
  }).join("");
  $("trick").innerHTML = view.trick.map(([s, c]) => `<div class="played">${cardSVG(meta, c)}<br>player_${s}</div>`).join("");
  const last = view.last_trick;
  $("last-title").textContent = last ? `last trick (${last.number}), won by player_${last.winner}` : "last trick";
  $("last-trick").innerHTML = last ? last.cards.map(([s, c]) => `<div class="played">${cardSVG(meta, c, 40, 60)}<br>p${s}</div>`).join("") : "";
  $("scores").innerHTML = view.sides.map((n, t) => `${esc(n)}: <b>${view.scores[t]}</b> (tricks ${view.tricks_won[t]})`).join("<br>");
  $("signals").innerHTML = view.signals.length ? "signals: " + view.signals.map((x) =>
    `player_${x.seat} ${esc(x.signal.replace("signal:", ""))} with ${esc(meta.cards[x.card].name)} (trick ${x.trick})`).join("; ") : "";
  $("piles").innerHTML = view.piles.map((p, t) => `${esc(view.sides[t])}: ${p.length} cards won`).join("<br>");
}

function statusText(view) {
  const head = `${view.game}${view.deal ? " · " + view.deal : ""} · ${view.phase}`;
  if (view.bot_error) return [`${head} · a player failed: ${view.bot_error}`, "error"];
  if (view.game_over) {
    const w = view.winner === null || view.winner < 0 ? "a draw" : `${view.sides[view.winner]} wins`;
    return [`${head} · game over: ${w}`, "over"];
  }
  if (view.your_turn) return [`${head} · your turn`, "your-turn"];
  if (view.thinking) return [`${head} · player_${view.to_act} (${view.players[view.to_act]}) is thinking`, "thinking"];
  return [`${head} · player_${view.to_act} to act`, "waiting"];
}

function renderHand(view) {
  const meta = gameMeta(view);
  const mine = view.viewer === null ? null : view.seats[view.viewer].hand;
  $("hand-title").textContent = mine ? `your hand (${mine.length} cards)` : "watching: every hand is shown at its seat";
  const legal = new Set(view.legal.map((m) => m.action));
  $("hand").innerHTML = (mine || []).map((c) => cardSVG(meta, c)).join("");
  for (const el of $("hand").querySelectorAll(".card")) {
    const c = Number(el.dataset.card);
    el.dataset.action = c;
    el.classList.add(legal.has(c) ? "legal" : "illegal");
    el.addEventListener("click", () => play(c));
  }
  const specials = view.legal.filter((m) => m.action >= meta.cards.length);
  $("specials").innerHTML = specials.map((m) => `<button class="special" data-action="${m.action}">${esc(m.name)}</button>`).join("") +
    (view.pending_signal ? ` <i>signal chosen: ${esc(view.pending_signal)}: now the card</i>` : "");
  for (const b of $("specials").querySelectorAll("button")) b.onclick = () => play(Number(b.dataset.action));
}

function renderExplain(view, again = false) {
  if (view.phase !== state.phase) { $("explain").innerHTML = ""; state.phase = view.phase; }
  const fresh = (view.explain || []).filter((x) => again || !state.seen.has(x.key));
  if (!fresh.length) return;
  $("explain").innerHTML = fresh.map((x) => `<div class="note" data-key="${esc(x.key)}"><b>${esc(x.title)}</b>${esc(x.text)}</div>`).join("");
  fresh.forEach((x) => state.seen.add(x.key));
}

function renderSide(view) {
  $("log").innerHTML = (view.log || []).map((t) => `<li>${esc(t)}</li>`).join("");
  $("log").scrollTop = $("log").scrollHeight;
  $("results").innerHTML = (view.results || []).map((r) => `<pre class="result">${esc(r.text)}</pre>`).join("");
}

function show(view) {
  state.view = view;
  const [text, kind] = statusText(view);
  $("status").textContent = text;
  $("status").dataset.state = kind;
  $("status").dataset.step = `${view.version}`;
  renderTable(view);
  renderHand(view);
  renderExplain(view);
  renderSide(view);
  $("undo").disabled = !view.can_undo;
  $("hint").disabled = !view.your_turn;
  const dl = $("download");
  dl.classList.toggle("disabled", !view.game_over);
  dl.href = view.game_over ? `/api/games/${view.id}/log` : "#";
  if (view.thinking) poll();
}

async function poll() {
  if (state.polling) return;
  state.polling = true;
  try {
    while (state.view && state.view.thinking && !state.replay) {
      await new Promise((r) => setTimeout(r, 100));
      const v = await api("GET", `/api/games/${state.view.id}`);
      if (!state.replay) show(v);
    }
  } catch (e) { message(e.message); } finally { state.polling = false; }
}

// --- moves ---------------------------------------------------------------------------------------------
async function play(action) {
  const v = state.view;
  if (!v || state.replay) return;
  try {
    const next = await api("POST", `/api/games/${v.id}/action`, {seat: v.viewer, action});
    message("");
    $("hint-box").innerHTML = "";
    show(next);
  } catch (e) { message(`refused: ${e.message}`); }
}

async function undo() {
  const v = state.view;
  try {
    const next = await api("POST", `/api/games/${v.id}/undo`, {seat: v.viewer});
    message("undone: back to your previous move; the other players' moves since then were taken back too", "info");
    show(next);
  } catch (e) { message(e.message); }
}

async function hint() {
  const v = state.view;
  $("hint-box").textContent = "the network is thinking";
  try {
    const h = await api("POST", `/api/games/${v.id}/hint`, {seat: v.viewer});
    $("hint-box").innerHTML = `<b>hint (${esc(h.player)}):</b> ` + h.moves.slice(0, 5)
      .map((m) => `<span class="hint-move" data-action="${m.action}">${esc(m.name)} ${(100 * m.p).toFixed(1)}%</span>`).join(", ");
    const best = document.querySelector(`#hand .card[data-action="${h.moves[0].action}"]`);
    if (best) best.classList.add("best");
  } catch (e) { $("hint-box").textContent = ""; message(e.message); }
}

// --- replay of a log -------------------------------------------------------------------------------------
async function loadReplay() {
  const file = $("replay-file").files[0];
  if (!file) return;
  try {
    const r = await api("POST", "/api/replays", await file.text(), true);
    state.replay = {id: r.id, frames: r.frames};
    $("replay-controls").hidden = false;
    $("replay-slider").max = r.frames - 1;
    showFrame(r);
  } catch (e) { message(`replay refused: ${e.message}`); }
  $("replay-file").value = "";
}

function showFrame(f) {
  message("");
  state.view = null;
  $("status").textContent = `replay · ${f.game}${f.deal ? " · " + f.deal : ""} · ${f.phase} · step ${f.index} of ${f.frames - 1}`;
  $("status").dataset.state = "replay";
  $("replay-slider").value = f.index;
  $("replay-text").textContent = f.text;
  renderTable(f);
  $("hand").innerHTML = "";
  $("specials").innerHTML = "";
  $("log").innerHTML = "";
  $("results").innerHTML = "";
  $("undo").disabled = $("hint").disabled = true;
}

async function gotoFrame(k) {
  const r = state.replay;
  if (!r) return;
  k = Math.max(0, Math.min(r.frames - 1, k));
  try { showFrame(await api("GET", `/api/replays/${r.id}/${k}`)); } catch (e) { message(e.message); }
}

// --- start ---------------------------------------------------------------------------------------------------
async function start() {
  state.meta = await api("GET", "/api/meta");
  fillSetup();
  $("setup").addEventListener("submit", newGame);
  $("undo").onclick = undo;
  $("hint").onclick = hint;
  $("rules-again").onclick = () => state.view && renderExplain(state.view, true);
  $("replay-file").onchange = loadReplay;
  const cur = () => Number($("replay-slider").value);
  $("replay-first").onclick = () => gotoFrame(0);
  $("replay-prev").onclick = () => gotoFrame(cur() - 1);
  $("replay-next").onclick = () => gotoFrame(cur() + 1);
  $("replay-last").onclick = () => gotoFrame(state.replay.frames - 1);
  $("replay-slider").onchange = () => gotoFrame(cur());
}

start().catch((e) => message(e.message));
