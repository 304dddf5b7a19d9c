// The live page: one snapshot, then server-sent events (docs/web.md). Routes: #/ (the event),
// #/game/ID (a running game, or a finished one to step through), #/engine/NAME.
"use strict";
const S = { summary: null, live: {}, recv: {}, replay: null };
const $ = (sel, root) => (root || document).querySelector(sel);
const esc = (t) => String(t ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
const fmtMs = (ms) => {
  if (ms === null || ms === undefined) return "∞";
  ms = Math.max(0, ms);
  const s = ms / 1000;
  return s >= 60 ? `${Math.floor(s / 60)}:${String(Math.floor(s % 60)).padStart(2, "0")}` : s.toFixed(1);
};
const num = (x, d = 1) => (x === null || x === undefined || Number.isNaN(x) ? "–" : Number(x).toFixed(d));
const span = (lo, hi, d = 2) => (lo === null || lo === undefined ? "–" : `${num(lo, d)} – ${num(hi, d)}`);  // an interval, or "–"
// The page's address: its kind (game, engine, "" for the event) and its argument, decoded; the
// argument is null when it is not valid percent-encoding (a hand-typed "#/engine/50%": a URIError
// thrown on the route, and on every live event after it, stopped the page).
function address() {
  const [kind, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  let arg = rest.join("/");
  try { arg = decodeURIComponent(arg); } catch (e) { arg = null; }
  return [kind, arg];
}
const link = (name) => `<a href="#/engine/${encodeURIComponent(name)}">${esc(name)}</a>`;

// A JSON answer, or {error} when the answer is not JSON (a proxy's error page, a dropped connection).
async function getJSON(url) {
  try {
    const res = await fetch(url);
    try { return [res.ok, await res.json()]; } catch (e) { return [false, { error: `the server answered ${res.status} ${res.statusText}` }]; }
  } catch (e) { return [false, { error: "the server cannot be reached" }]; }
}

function table(rows, cols, id) {
  if (!rows || !rows.length) return "<p>none yet</p>";
  const head = cols.map(([k, t]) => `<th class="${k === "engine" ? "l" : ""}">${esc(t)}</th>`).join("");
  const body = rows.map((r) => "<tr>" + cols.map(([k, , f]) => `<td class="${k === "engine" ? "l" : ""}">${f ? f(r[k], r) : esc(r[k] ?? "")}</td>`).join("") + "</tr>").join("");
  return `<table id="${id || ""}"><tr>${head}</tr>${body}</table>`;
}

function ratingPlot(rows) {
  // Each engine's rating with its 95 % interval, drawn anew on every summary.
  rows = (rows || []).filter((r) => r.elo !== null && r.elo !== undefined);
  if (!rows.length) return "";
  const lo = Math.min(...rows.map((r) => r.lo ?? r.elo)), hi = Math.max(...rows.map((r) => r.hi ?? r.elo));
  const pad = Math.max(10, (hi - lo) * 0.08), a = lo - pad, b = hi + pad;
  const W = 520, L = 120, H = 24 * rows.length + 30, x = (v) => L + ((v - a) / (b - a)) * (W - L - 10);
  let out = `<svg id="ratingplot" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}">`;
  if (a < 0 && b > 0) out += `<line x1="${x(0)}" x2="${x(0)}" y1="5" y2="${H - 20}" stroke="#bbb" stroke-dasharray="3"/>`;  // (OpenSkill's μ is ~25)
  rows.forEach((r, i) => {
    const y = 18 + 24 * i;
    out += `<text x="4" y="${y + 4}" font-size="12">${esc(r.engine)}</text>`;
    out += `<line x1="${x(r.lo ?? r.elo)}" x2="${x(r.hi ?? r.elo)}" y1="${y}" y2="${y}" stroke="#2563eb" stroke-width="2"/>`;
    out += `<circle cx="${x(r.elo)}" cy="${y}" r="4" fill="#1e40af"/>`;
  });
  [a, (a + b) / 2, b].forEach((v) => { out += `<text x="${x(v)}" y="${H - 4}" font-size="10" text-anchor="middle">${v.toFixed(0)}</text>`; });
  return out + "</svg>";
}

function progress(sm) {
  const t = sm.tournament || {};
  const played = t.games_played ?? (sm.progress || {}).played ?? 0;
  const total = t.games_max_remaining !== undefined ? played + t.games_max_remaining : (sm.progress || {}).total;
  const running = Object.keys(S.live).length;
  let eta = "";
  if (total && sm.mean_game_s) {
    const left = total - played;
    const ms = (1000 * left * sm.mean_game_s) / Math.max(1, running);  // under a minute: "ETA 11 s", not a clock's "11.1"
    eta = left > 0 ? ` · ETA ${ms >= 60000 ? fmtMs(ms) : Math.round(ms / 1000) + " s"}` : " · done";
  }
  const pct = total ? (100 * played) / total : 0;
  return `<div id="progress"><span class="bar"><div style="width:${pct.toFixed(1)}%"></div></span> ` +
    `${played}${total ? " / " + total : ""} games · ${running} running${eta}${t.finished ? " · finished" : ""}</div>`;
}

function sprtBlock(sm) {
  const t = sm.tournament || {};
  let out = "";
  if (t.sprt_stop) out += `<p>SPRT stop rule: ${esc(t.sprt_stop.verdict ?? "")} (LLR ${num(t.sprt_stop.llr, 2)} in [${num(t.sprt_stop.lower, 2)}, ${num(t.sprt_stop.upper, 2)}])</p>`;
  const rows = Array.isArray(sm.sprt) ? sm.sprt : [];
  if (rows.length) {
    const cols = Object.keys(rows[0]).filter((k) => typeof rows[0][k] !== "object" || rows[0][k] === null).slice(0, 9);
    out += table(rows, cols.map((k) => [k, k, (v) => (typeof v === "number" ? num(v, 2) : esc(v))]), "sprt");
  }
  return out ? `<section><h2>SPRT</h2>${out}</section>` : "";
}

function crosstable(ct) {
  if (!ct || !ct.engines) return "";
  const head = ct.engines.map((e, i) => `<th>${i + 1}</th>`).join("");
  const rows = ct.engines.map((e, i) => `<tr><td class="l">${i + 1}. ${link(e)}</td>` +
    ct.points[i].map((p, j) => `<td>${i === j ? "—" : p === null ? "·" : `${num(p, 1)}/${ct.games[i][j]}`}</td>`).join("") + "</tr>").join("");
  return `<section><h2>Crosstable</h2><table id="crosstable"><tr><th></th>${head}</tr>${rows}</table></section>`;
}

function clockSpans(g) {
  return g.players.map((p, s) => `<span class="clock${g.acting.includes(s) ? " on" : ""}" data-g="${esc(g.game_id)}" data-s="${s}">` +
    `${esc(g.roles[s] || s)} ${esc(p)}: <b>${fmtMs(g.clocks_ms[s])}</b></span>`).join("");
}

function lastInfo(g) {
  const e = [...g.last].reverse().find((x) => x.info);
  if (!e) return "";
  const i = e.info;
  return `${esc(g.players[e.seat])}: score ${esc(i.score ?? "–")} · depth ${esc(i.depth ?? "–")} · nodes ${esc(i.nodes ?? "–")}` +
    `${i.pv ? " · pv " + esc(i.pv.join(" ")) : ""}`;
}

function liveCard(g) {
  return `<div class="card" data-game="${esc(g.game_id)}" data-ply="${esc(g.ply)}">` +
    `<div><a href="#/game/${encodeURIComponent(g.game_id)}">game ${esc(g.number)}</a> · ${esc(g.match_id)} · ply <span class="ply">${esc(g.ply)}</span></div>` +
    `<div class="body">${cardBody(g)}</div></div>`;
}

// A running game's board comes from the feed, which whatever can reach its socket writes to: it is
// shown as an image (an SVG image runs no script and loads nothing), never as the page's markup.
const boardSrc = (svg) => `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg ?? "")}`;
// An image shows none of its SVG's tooltips: the drawing's own <title> (the game's name) becomes the image's.
const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"', "#x27": "'", "#39": "'" };
const boardTitle = (svg) => ((/<title>([^<]*)<\/title>/.exec(svg ?? "") || [])[1] || "")
  .replace(/&(amp|lt|gt|quot|#x27|#39);/g, (_, e) => ENTITIES[e]);
const moveList = (g) => g.last.map((e) => `${esc(e.ply)}.${e.seat < 0 ? "roll " : ""}${esc(e.move)}`).join(" ");

function cardBody(g) {
  return `<div class="clocks">${clockSpans(g)}</div><img class="board" alt="board" title="${esc(boardTitle(g.board))}" src="${boardSrc(g.board)}">` +
    `<div class="moves">${moveList(g)}</div><div class="info">${lastInfo(g)}</div>`;
}

// A live event on the event page redraws only the changed games' boards, clocks and moves: the page
// rebuilt whole 20 times a second replaced a link between its press and its release (no click).
function updateLive(ids) {
  for (const gid of ids) {
    const card = [...document.querySelectorAll("#live .card[data-game]")].find((c) => c.dataset.game === gid);
    if (!card || !S.live[gid]) return renderEvent();  // a game new to the page: the whole page, once
    updateCard(card, S.live[gid]);
  }
}

function updateCard(card, g) {
  card.dataset.ply = g.ply;
  card.querySelector(".ply").textContent = g.ply;
  const img = card.querySelector("img.board"), src = boardSrc(g.board);
  if (img.getAttribute("src") !== src) {  // the same image element: shown until the next is drawn
    img.src = src;
    img.title = boardTitle(g.board);
  }
  card.querySelector(".clocks").innerHTML = clockSpans(g);
  card.querySelector(".moves").innerHTML = moveList(g);
  card.querySelector(".info").innerHTML = lastInfo(g);
}

function finishedRows(rows) {
  return table(rows.slice(0, 50), [
    ["number", "#"], ["players", "players", (v) => v.map(link).join(" – ")],
    ["returns", "result", (v) => esc(v.join(" : "))], ["reason", "ended", (v, r) => esc(v + (r.detail ? ": " + r.detail : ""))],
    ["plies", "plies"], ["game_id", "", (v) => `<a href="#/game/${encodeURIComponent(v)}">replay</a>`],
  ], "finished");
}

function renderEvent() {
  const sm = S.summary || {};
  $("#title").textContent = (sm.tournament || {}).name || sm.title || "arbiter";
  const ratingRows = ((sm.ratings && sm.ratings.table) || (sm.standings || [])
    .map((r) => ({ engine: r.engine, elo: r.elo, lo: r.elo_lo, hi: r.elo_hi })))
    .map((r) => (r.elo === undefined && r.mu !== undefined ? { ...r, elo: r.mu } : r))  // a table event's OpenSkill μ
    .filter((r) => r.elo !== null && r.elo !== undefined);
  const shared = (sm.standings || []).some((r) => r.mean !== undefined && r.points === undefined);
  // a per-game figure of an engine with no game yet is none, not 0 (the report's rate is None, or 0 of 1)
  const perGame = (f) => (v, r) => (r.games ? f(v, r) : "–");
  const interval = (v, r) => (r.lo === null || r.lo === undefined ? "–" : `${num(r.lo, 2)} – ${num(r.hi, 2)}`);
  const solo = (sm.standings || []).some((r) => r.win_rate !== undefined);
  const tables = (sm.standings || []).some((r) => r.mean_rank !== undefined);  // a 3-5 seat event: OpenSkill
  const cols = tables  // as its report ranks them: no points (before: a row of blanks)
    ? [["rank", "#"], ["engine", "engine", link], ["games", "games"], ["wins", "wins"], ["draws", "draws"],
      ["win_rate", "win %", perGame((v) => num(100 * v, 1))], ["mean_rank", "mean rank", perGame((v) => num(v, 2))],
      ["mean_return", "mean return", perGame((v) => num(v, 2))], ["mu", "μ", (v) => num(v, 2)],
      ["sigma", "σ", (v) => num(v, 2)], ["ordinal", "μ − 3σ", (v) => num(v, 2)]]
    : shared  // a team (cooperative) or solo event: mean scores (and a solo game's wins), no draws
    ? [["rank", "#"], ["engine", "engine", link], ["games", "games"],
      ...(solo ? [["wins", "wins"], ["win_rate", "win %", perGame((v) => num(100 * v, 1))],
        ["win_lo", "95 % interval", perGame((v, r) => `${num(100 * v, 1)} – ${num(100 * r.win_hi, 1)}`)]] : []),
      ["mean", "mean score", perGame((v) => num(v, 2))], ["lo", "95 % interval", interval]]
    : [["rank", "#"], ["engine", "engine", link], ["games", "games"], ["points", "points", (v) => num(v, 1)],
      ["W", "W"], ["D", "D"], ["L", "L"], ["score", "score", (v) => (v === null || v === undefined ? "–" : num(100 * v, 1) + " %")]];
  if ((sm.standings || []).some((r) => r.elo !== undefined)) cols.push(["elo", "Elo", (v, r) => v === null ? "–" : `${num(v, 0)} [${num(r.elo_lo, 0)}, ${num(r.elo_hi, 0)}]`]);
  const live = Object.values(S.live).sort((a, b) => a.game_id < b.game_id ? -1 : 1);
  $("#view").innerHTML =
    `<section><h2>Progress</h2>${progress(sm)}${sm.note ? `<p>${esc(sm.note)}</p>` : ""}</section>` +
    `<section><h2>Standings</h2>${table(sm.standings, cols, "standings")}</section>` +
    (sm.teams ? `<section><h2>Teams</h2>${table(sm.teams, [["team", "team"], ["games", "games"],
      ["mean", "mean score", (v) => num(v, 1)], ["lo", "95 % interval", interval], ["best", "best"], ["worst", "worst"]],
      "teams")}</section>` : "") +
    (sm.paired && sm.paired.length ? `<section><h2>Paired comparisons on common seeds (A − B)</h2>${table(sm.paired,
      [["A", "A"], ["B", "B"], ["seeds", "seeds"], ["mean_diff", "mean diff", (v) => num(v, 2)],
       ["lo", "95 % interval", (v, r) => span(r.lo, r.hi)], ["A_better", "A better"],
       ["ties", "ties"], ["B_better", "B better"], ["p_value", "sign test p", (v) => num(v, 4)]], "paired")}</section>` : "") +
    (sm.seats && sm.seats.length ? `<section><h2>Seats</h2>${table(sm.seats, [["seat", "seat"], ["games", "games"],
      ["return_mean", "mean return", (v) => num(v, 2)], ["return_lo", "95 % interval", (v, r) => span(v, r.return_hi)],
      ["win_share", "win share", (v) => num(v, 3)]], "seats")}</section>` : "") +
    crosstable(sm.crosstable) +
    (ratingRows.length ? `<section><h2>Ratings (95 % intervals)</h2>${ratingPlot(ratingRows)}</section>` : "") +
    sprtBlock(sm) +
    `<section><h2>Running games</h2><div class="grid" id="live">${live.map(liveCard).join("") || "<p>none</p>"}</div></section>` +
    `<section><h2>Finished games</h2>${finishedRows(sm.finished || [])}</section>`;
}

// The game shown has its dice withheld (other games roll them) and the event is over now, as the
// standings say: its page is fetched again for the seed, without the spectator reloading it.
function withheldNoMore() {
  const sm = S.summary || {}, p = sm.progress || {};
  const over = (sm.tournament || {}).finished || (p.total !== null && p.total !== undefined && p.played >= p.total);
  return Boolean(S.replay && S.replay.dice.withheld && over);
}

async function renderGame(gid) {
  if (S.live[gid]) {
    const g = S.live[gid];
    const card = [...document.querySelectorAll("#game[data-live='1'] .card[data-game]")].find((c) => c.dataset.game === gid);
    if (card) return updateCard(card, g);  // its page already: the changes only
    $("#view").innerHTML = `<section id="game" data-live="1"><h2>${g.players.map((p, s) => esc(p) + (g.roles && g.roles[s] ? ` (${esc(g.roles[s])})` : "")).join(" vs ")} · game ${esc(g.number)} (running)</h2>` +
      `<p>dice commitment ${esc(g.dice_commitment)} (the seed is shown when the game is over)</p>${liveCard(g)}</section>`;
    return;
  }
  const held = S.replay && S.replay.row.game_id === gid ? S.replay : null;
  if (held && !withheldNoMore()) return drawReplay();
  const [ok, data] = await getJSON(`/api/game/${encodeURIComponent(gid)}`);
  if (!ok) { $("#view").innerHTML = `<section><p>${esc(data.error)}</p></section>`; return; }
  if (data.type === "live") { S.live[gid] = data; S.recv[gid] = performance.now(); return renderGame(gid); }
  S.replay = { ...data, step: held ? Math.min(held.step, data.steps - 1) : data.steps - 1, boards: {} };
  drawReplay();
}

async function showStep(i) {
  const r = S.replay;
  r.step = Math.max(0, Math.min(r.steps - 1, i));
  const step = r.step;
  if (!r.steps) { $("#board").textContent = "no board: this game cannot be replayed here"; $("#step").textContent = ""; return; }
  if (!(step in r.boards)) {
    const res = await fetch(`/api/game/${encodeURIComponent(r.row.game_id)}/board/${step}`).catch(() => null);
    if (!res || !res.ok) { if (S.replay === r) $("#board").textContent = "the board could not be had"; return; }
    r.boards[step] = await res.text();
  }
  if (S.replay !== r || r.step !== step) return;
  $("#board").innerHTML = r.boards[step];
  $("#step").textContent = `step ${step} / ${r.steps - 1}`;
  document.querySelectorAll("#movelist span").forEach((s) => s.classList.toggle("cur", Number(s.dataset.step) === step));
}

function drawReplay() {
  const r = S.replay, rec = r.record, row = r.row;
  const moves = rec.events.map((e, i) => `<span data-step="${i + 1}" title="${esc(e.kind)}${e.measured_ms ? " · " + num(e.measured_ms, 0) + " ms" : ""}">` +
    `${e.ply}.${e.seat < 0 ? "roll " : esc(rec.players[e.seat]) + ":"}${esc(e.move)}</span>`).join(" ");
  const lost = row.forfeit_seats || (row.forfeit_seat === null || row.forfeit_seat === undefined ? [] : [row.forfeit_seat]);
  const forfeit = lost.length ? `<p class="bad" id="forfeit">forfeit by ${lost.map((s) => esc(rec.players[s])).join(" and ")}: ${esc(row.reason)} — ${esc(row.detail)}</p>` : "";
  // each engine with its seat's role (a table's powers, a pair's colours): the board and the move list say them
  const seats = rec.players.map((p, s) => link(p) + (rec.seat_roles && rec.seat_roles[s] ? ` (${esc(rec.seat_roles[s])})` : ""));
  $("#view").innerHTML = `<section id="game" data-live="0"><h2>${seats.join(" vs ")} · game ${row.number} · ${esc(row.returns.join(" : "))} (${esc(row.reason)}${row.detail ? ": " + esc(row.detail) : ""})</h2>` +
    forfeit +
    (r.dice.withheld ? `<p id="dice">dice: commitment <code>${esc(r.dice.commitment)}</code>, ${r.dice.rolls} rolls — ` +
      `<b>seed withheld until the event is over</b> (other games roll the same dice)`
      : `<p id="dice">dice: seed <code>${esc(r.dice.seed)}</code>, commitment <code>${esc(r.dice.commitment)}</code>, ${r.dice.rolls} rolls — ` +
      `<b class="${r.dice.verified ? "ok" : "bad"}">${r.dice.verified ? "verified" : "NOT verified: " + esc(r.dice.problems.join("; "))}</b>`) +
    ` · record replays: <b class="${r.verified ? "ok" : "bad"}">${r.verified ? "consistent" : esc(r.problems.join("; "))}</b></p>` +
    `<div><button id="first" title="Home">|◀</button><button id="prev" title="←">◀</button>` +
    `<button id="next" title="→">▶</button><button id="last" title="End">▶|</button> <span id="step"></span></div>` +
    `<div id="board" style="max-width:560px"></div><div id="movelist" class="moves" style="max-height:200px">${moves}</div></section>`;
  $("#first").onclick = () => showStep(0);
  $("#prev").onclick = () => showStep(r.step - 1);
  $("#next").onclick = () => showStep(r.step + 1);
  $("#last").onclick = () => showStep(r.steps - 1);
  document.querySelectorAll("#movelist span").forEach((s) => { s.onclick = () => showStep(Number(s.dataset.step)); });
  showStep(r.step);
}

async function renderEngine(name) {
  const [ok, d] = await getJSON(`/api/engine/${encodeURIComponent(name)}`);
  if (!ok) { $("#view").innerHTML = `<section><p>${esc(d.error)}</p></section>`; return; }
  $("#view").innerHTML = `<section id="engine"><h2>${esc(d.engine)}</h2>` +
    (d.cooperative ? `<p>${d.games} games: mean score ${num(d.mean, 1)}</p>`
      : d.solo ? `<p>${d.games} games: ${d.W} won, ${d.L} lost · mean score ${num(d.mean, 2)}</p>`  // a draw means nothing alone
      : `<p>${d.games} games: +${d.W} =${d.D} −${d.L} (${num(d.points, 1)} points)</p>`) +
    `<p>time: ${d.decisions} decisions, mean ${num(d.mean_ms, 1)} ms, max ${num(d.max_ms, 1)} ms, total ${fmtMs(d.total_ms)} s · ` +
    `latency (measured − reported): mean ${num(d.mean_latency_ms, 2)} ms</p>` +
    `<h2>Forfeits${d.forfeits.length < d.forfeit_count ? ` (the last ${d.forfeits.length} of ${d.forfeit_count})` : ""}</h2>${table(d.forfeits, [["game_id", "game", (v) => `<a href="#/game/${encodeURIComponent(v)}">${esc(v)}</a>`], ["reason", "reason"], ["detail", "detail"]], "forfeits")}` +
    `<h2>Games${d.results.length < d.games ? ` (the last ${d.results.length} of ${d.games})` : ""}</h2>${table(d.results, [["number", "#"], ["players", "players", (v) => v.map(esc).join(" – ")], ["result", "result"],
      ["reason", "ended"], ["time_ms", "time (ms)", (v) => num(v, 0)], ["game_id", "", (v) => `<a href="#/game/${encodeURIComponent(v)}">replay</a>`]], "results")}</section>`;
}

function route() {
  const [kind, arg] = address();
  if (kind !== "game") S.replay = null;
  if (arg === null) { $("#view").innerHTML = `<section><p>no such page: ${esc(location.hash)}</p></section>`; return; }
  if (kind === "game") return renderGame(arg);
  if (kind === "engine") return renderEngine(arg);
  return renderEvent();
}

function onUpdate(gid) {
  const [kind, open] = address();
  if (kind === "" || kind === undefined) return renderEvent();
  if (kind === "game" && withheldNoMore()) return renderGame(open);
  if (kind === "game" && gid !== undefined && open === gid) {
    S.replay = null;
    return renderGame(gid);
  }
}

// A running game's view from a live event: whole the first time, then only what changed
// ("delta": its ply, the changed fields, the new events and how many to keep, the board perhaps as
// edits of the one before; Hub.delta).
// A delta older than the view held (queued before this browser's snapshot) changes nothing: null.
function merge(g) {
  if (!g.delta) return g;
  const known = S.live[g.game_id];
  if (!known || known.ply > g.ply) return null;
  const fresh = new Set(g.last.map((e) => e.ply));
  const all = known.last.filter((e) => !fresh.has(e.ply)).concat(g.last).sort((a, b) => a.ply - b.ply);
  const last = all.slice(Math.max(0, all.length - g.keep));
  const view = { ...known, ...g, last };
  if (g.board_patch) {  // edits of the board at ply board_from (Hub.delta); a newer one held is kept
    if (known.ply === g.board_from) {
      const parts = known.board.split("<");
      for (const [start, end, add] of [...g.board_patch].reverse()) parts.splice(start, end - start, ...add);
      view.board = parts.join("<");
    }
    delete view.board_patch; delete view.board_from;
  }
  delete view.delta; delete view.keep;
  return view;
}

// Finished games' rows merged (a summary sends those new since the last one, an end its game's),
// newest first as the server orders them (Hub newest_first), the first `keep` kept.
function finishedMerged(held, rows, keep) {
  const byId = new Map((held || []).map((r) => [r.game_id, r]));
  rows.forEach((r) => byId.set(r.game_id, r));
  return [...byId.values()].sort((a, b) => (b.ended_at || 0) - (a.ended_at || 0)
    || (a.game_id < b.game_id ? -1 : a.game_id > b.game_id ? 1 : 0)).slice(0, keep);
}

function connect() {
  const es = new EventSource("/events");
  es.addEventListener("snapshot", (ev) => {
    const d = JSON.parse(ev.data);
    S.summary = d.summary; S.live = {};
    const now = performance.now();
    d.live.forEach((g) => { S.live[g.game_id] = g; S.recv[g.game_id] = now; });
    $("#status").textContent = "live";
    document.body.dataset.snapshots = Number(document.body.dataset.snapshots || 0) + 1;  // (tests wait on it)
    route();
  });
  es.addEventListener("live", (ev) => {
    const now = performance.now(), games = JSON.parse(ev.data).games;
    games.forEach((g) => { const view = merge(g); if (view) { S.live[g.game_id] = view; S.recv[g.game_id] = now; } });
    if (location.hash.replace(/^#\/?/, "") === "") return updateLive(games.map((g) => g.game_id));
    const open = address()[1];
    onUpdate(games.some((g) => g.game_id === open) ? open : undefined);
  });
  es.addEventListener("end", (ev) => {
    const d = JSON.parse(ev.data);
    delete S.live[d.game_id];
    if (S.summary) S.summary.finished = finishedMerged(S.summary.finished, [d.row], (S.summary.finished || []).length + 1);
    onUpdate(d.game_id);
  });
  es.addEventListener("summary", (ev) => {
    const d = JSON.parse(ev.data);
    if (S.summary && S.summary.made >= d.made) return;  // queued before a newer snapshot
    if (d.finished_new) {
      d.finished = finishedMerged(S.summary && S.summary.finished, d.finished_new, d.finished_keep);
      delete d.finished_new; delete d.finished_keep;
    }
    S.summary = d; onUpdate();
  });
  es.onerror = () => { $("#status").textContent = "reconnecting…"; };
}

// The clocks tick between updates: the acting seats' time runs down from what the referee sent.
setInterval(() => {
  const now = performance.now();
  document.querySelectorAll(".clock.on").forEach((el) => {
    const g = S.live[el.dataset.g];
    if (!g) return;
    const s = Number(el.dataset.s), left = g.clocks_ms[s];
    if (left === null) return;
    el.querySelector("b").textContent = fmtMs(left - (now - S.recv[g.game_id]));
  });
}, 100);

document.addEventListener("keydown", (ev) => {
  if (!S.replay || !$("#board")) return;
  const r = S.replay;
  const to = { ArrowLeft: r.step - 1, ArrowRight: r.step + 1, Home: 0, End: r.steps - 1 }[ev.key];
  if (to !== undefined) { ev.preventDefault(); showStep(to); }
});
window.addEventListener("hashchange", route);
connect();
