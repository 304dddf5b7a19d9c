"""The live web view in a real browser: headless Chromium (the system's, driven by Playwright)
on the page of a real tournament (`arbiter-tournament run --web`: engine subprocesses, SQLite,
the feed socket, uvicorn). One browser and one tournament for the module.

Checks: the page loads; a running game's board changes after a move; the standings change when a
game ends; a finished game steps with the buttons and the keyboard; the engine page shows; nothing
is written to the console as an error. Screenshots of each page go to the test's temporary folder
(and to $WEB_SCREENSHOTS when set: how docs/web/*.png are made).
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
CHROMIUM = os.environ.get("ARBITER_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")

if CHROMIUM is None:
    pytest.skip("needs a browser: no chromium on PATH (Debian package chromium)", allow_module_level=True)
try:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright
except ImportError:
    pytest.skip("needs a browser: the playwright package is not installed", allow_module_level=True)

TOURNAMENT = """
name = "web-browser-test"
game = "einstein"
format = "round_robin"
match = "games=4"  # long enough to be running still while the first tests look (a loaded machine)
time_control = "60"
seed = "{seed}"
output = "{db}"
concurrency = 1
[game_options]
setup = "choose"
[[engines]]
name = "expectimax"
command = "{{python}} -m sample_engines.einstein_expectimax"
args = {{ movetime = 0.6 }}
[[engines]]
name = "random"
command = "{{python}} -m sample_engines.random_engine --seed 5"
"""


SEED = "s33d-of-the-event"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory, web_servers_at_games_priority):
    """The tournament running with its web view, a browser page on it, and where shots go."""
    tmp = tmp_path_factory.mktemp("web")
    db = tmp / "event.sqlite"
    toml = tmp / "event.toml"
    toml.write_text(TOURNAMENT.format(db=db, seed=SEED))
    shots = [tmp]
    if os.environ.get("WEB_SCREENSHOTS"):
        shots.append(Path(os.environ["WEB_SCREENSHOTS"]))
    errors: list[str] = []
    procs: list[subprocess.Popen] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(60000)  # a loaded machine (2 cores, engines and a tournament besides)
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
        port = free_port()
        url = f"http://127.0.0.1:{port}/"
        site = {"page": page, "url": url, "port": port, "db": db, "shots": shots, "errors": errors, "procs": procs}
        try:
            site["proc"] = start(procs, port, "run", str(toml), "--web", str(port), "-q", "--no-report")
            page.goto(url)
            yield site
        finally:
            browser.close()
            for proc in procs:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def start(procs: list, port: int, *args: str) -> subprocess.Popen:
    """``arbiter-tournament ARGS`` in the background, once its web view answers on ``port``."""
    proc = subprocess.Popen([PY, "-m", "tournaments", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    procs.append(proc)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"arbiter-tournament {' '.join(args)} stopped: {proc.stdout.read()}")
            time.sleep(0.05)
    pytest.fail(f"arbiter-tournament {' '.join(args)}: no web view on port {port}")


def shoot(site, name: str) -> None:
    for folder in site["shots"]:
        folder.mkdir(parents=True, exist_ok=True)
        site["page"].screenshot(path=str(folder / name), full_page=True)


def played(page) -> int:
    """Games counted in the standings table (each game counts for both engines)."""
    return page.evaluate("""() => [...document.querySelectorAll('#standings tr')].slice(1)
        .reduce((n, tr) => n + Number(tr.children[2].textContent), 0) / 2""")


def test_running_board_changes_after_a_move(site):
    page = site["page"]
    page.wait_for_selector("#live .card[data-game] img.board", timeout=30000)
    # The card's game, ply and drawing are read in one step: the page may redraw between two reads.
    gid, ply, board = page.evaluate("""() => { const c = document.querySelector('#live .card[data-game]');
        return [c.dataset.game, Number(c.dataset.ply), c.innerHTML]; }""")
    card = page.query_selector(f"#live .card[data-game='{gid}']")
    if card is not None:
        assert card.query_selector("img.board").get_attribute("title") == "EinStein würfelt nicht!"  # the SVG's own
    page.wait_for_function("([gid, ply]) => { const c = document.querySelector(`#live .card[data-game='${gid}']`);"
                           " return !c || Number(c.dataset.ply) > ply; }", arg=[gid, ply], timeout=30000)
    served = page.evaluate("async () => JSON.stringify(await (await fetch('/api/state')).json())")
    assert SEED not in served  # every game's dice derive from it: hidden until the event is over
    card = page.query_selector(f"#live .card[data-game='{gid}']")
    if card is not None:  # still running: its board was redrawn for the new position
        now_ply, now_board = page.evaluate("(c) => [Number(c.dataset.ply), c.innerHTML]", card)
        assert now_ply > ply
        assert now_board != board
        assert card.query_selector("img.board").get_attribute("title") == "EinStein würfelt nicht!"
        shoot(site, "event.png")
    # The page merged the live events' deltas into the same whole view the server holds.
    views = page.evaluate("""async (gid) => {
        const canon = (v) => JSON.stringify(v, (k, x) => x && typeof x === "object" && !Array.isArray(x)
            ? Object.fromEntries(Object.keys(x).sort().map((key) => [key, x[key]])) : x);
        for (let i = 0; i < 200; i++) {
            const held = S.live[gid];
            const full = await (await fetch(`/api/game/${encodeURIComponent(gid)}`)).json();
            if (full.type !== "live" || !held) return null;  // over meanwhile
            if (held.ply === full.ply && held.sent_at === full.sent_at) return [canon(held), canon(full)];
            await new Promise((r) => setTimeout(r, 10));
        }
        return ["never the same view", ""];
    }""", gid)
    if card is not None and views is not None:
        assert views[0] == views[1]


def test_a_link_on_the_event_page_can_be_clicked_while_games_run(site):
    """The event page was rebuilt whole at every live event (20 a second while a game runs): a
    link pressed for longer than a tick was replaced between the press and the release, and the
    click did nothing. A live event now redraws only the running games' boards, clocks and moves."""
    page = site["page"]
    page.goto(site["url"] + "#/")
    for attempt in range(3):  # (a game that starts meanwhile redraws the page: tried again)
        page.wait_for_selector("#live .card[data-game] a", timeout=60000)
        link = page.query_selector("#live .card[data-game] a")
        box = link.bounding_box()
        if box is None:  # replaced already
            continue
        page.mouse.move(box["x"] + 2, box["y"] + 2)
        page.mouse.down()
        time.sleep(0.2)  # a person's click: several live events long
        page.mouse.up()
        try:
            page.wait_for_function("() => location.hash.startsWith('#/game/')", timeout=2000)
            break
        except PlaywrightTimeout:
            pass
    assert page.evaluate("() => location.hash").startswith("#/game/")
    page.wait_for_selector("#game")
    page.goto(site["url"] + "#/")
    page.wait_for_selector("#standings, #view section")


def test_standings_change_when_a_game_ends(site):
    page = site["page"]
    before = played(page) if page.query_selector("#standings") else 0
    page.wait_for_function(f"""() => {{
        const rows = [...document.querySelectorAll('#standings tr')].slice(1);
        return rows.reduce((n, tr) => n + Number(tr.children[2].textContent), 0) / 2 > {before}; }}""",
                           timeout=90000)
    assert played(page) > before
    assert "expectimax" in page.inner_text("#standings")
    # the finished games the page holds (its snapshot's, the ends', the summaries' new ones merged) are the server's
    same = page.evaluate("""async () => {
        const ids = (rows) => JSON.stringify((rows || []).map((r) => r.game_id));
        for (let i = 0; i < 100; i++) {
            const served = (await (await fetch('/api/state')).json()).summary;
            if (S.summary && S.summary.made === served.made) return [ids(S.summary.finished), ids(served.finished)];
            await new Promise((r) => setTimeout(r, 50));
        }
        return null;
    }""")
    if same is not None:  # else the standings moved on all the while
        assert same[0] == same[1]
    site["proc"].wait(120)  # the whole event: all four games; its web view stops with it
    assert site["proc"].returncode == 0
    gap = len(site["errors"])
    snapshots = int(page.evaluate("() => document.body.dataset.snapshots"))
    # the finished event, served by a process of its own from the database
    start(site["procs"], site["port"], "serve", str(site["db"]), "--port", str(site["port"]))
    page.wait_for_function(f"() => Number(document.body.dataset.snapshots) > {snapshots}", timeout=60000)
    page.wait_for_function("() => document.querySelectorAll('#finished tr').length === 5", timeout=60000)
    served = page.evaluate("async () => JSON.stringify(await (await fetch('/api/state')).json())")
    assert f'"seed":"{SEED}"' in served  # the event is over: its master seed is public
    # while no server listened, the page's event stream failed and reconnected: that is no page error
    site["errors"][gap:] = [e for e in site["errors"][gap:] if "net::ERR_" not in e]


def test_finished_game_steps(site):
    page = site["page"]
    page.wait_for_selector("#finished a[href^='#/game/']", timeout=30000)
    page.click("#finished a[href^='#/game/']")
    page.wait_for_selector("#board svg.board")
    page.wait_for_function("() => /step \\d+ \\/ \\d+/.test(document.querySelector('#step').textContent)")
    last = int(page.inner_text("#step").split("/")[1])
    assert page.inner_text("#step") == f"step {last} / {last}" and last > 5
    assert "verified" in page.inner_text("#dice") and "NOT" not in page.inner_text("#dice")
    end_board = page.inner_html("#board")
    page.keyboard.press("ArrowLeft")
    page.wait_for_function(f"() => document.querySelector('#step').textContent === 'step {last - 1} / {last}'")
    page.click("#first")
    page.wait_for_function(f"() => document.querySelector('#step').textContent === 'step 0 / {last}'")
    assert page.inner_html("#board") != end_board
    assert page.query_selector("#board .cube") is None  # before the set-up: an empty board
    for _ in range(3):
        page.click("#next")
    page.wait_for_function(f"() => document.querySelector('#step').textContent === 'step 3 / {last}'")
    assert page.query_selector("#movelist span.cur[data-step='3']") is not None
    page.keyboard.press("End")
    page.wait_for_function(f"() => document.querySelector('#step').textContent === 'step {last} / {last}'")
    shoot(site, "game.png")


def test_engine_page(site):
    page = site["page"]
    page.goto(site["url"] + "#/engine/expectimax")
    page.wait_for_selector("#engine")
    text = page.inner_text("#engine")
    assert "4 games" in text and "decisions" in text
    shoot(site, "engine.png")
    page.goto(site["url"])
    page.wait_for_selector("#standings")
    if not (site["shots"][0] / "event.png").exists():
        shoot(site, "event.png")


TEAM_AND_SOLO = """
name = "{name}"
game = "{game}"
format = "round_robin"
games = 2
time_control = "10"
seed = "s"
output = "{db}"
[[engines]]
name = "r1"
command = "{{python}} -m sample_engines.{engine} --seed 1"
[[engines]]
name = "r2"
command = "{{python}} -m sample_engines.{engine} --seed 2"
"""


def test_team_and_solo_events_show_their_own_standings(site, tmp_path):
    """A cooperative (team) event ranks engines by their teams' mean score and lists the teams; a
    solo event by wins and mean score, with its paired comparisons: no win/draw/loss columns
    (before, both showed a row of blanks: their standings have no points)."""
    page = site["page"]
    for game, engine, expect in (("catalonia", "random_engine", "#teams"), ("stalingrad", "stalingrad_random", "#paired")):
        db, toml = tmp_path / f"{game}.sqlite", tmp_path / f"{game}.toml"
        toml.write_text(TEAM_AND_SOLO.format(name=f"{game}-event", game=game, db=db, engine=engine))
        run = subprocess.run([PY, "-m", "tournaments", "run", str(toml), "-q", "--no-report"], cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stdout + run.stderr
        port = free_port()
        start(site["procs"], port, "serve", str(db), "--port", str(port))
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector(expect)
        head = page.inner_text("#standings tr")
        assert "mean score" in head and "W" not in head.split() and "points" not in head
        rows = page.evaluate("() => [...document.querySelectorAll('#standings tr')].slice(1).map(tr => "
                             "[...tr.children].map(td => td.textContent))")
        assert sorted(r[1] for r in rows) == ["r1", "r2"] and all(r[2] == "2" and r[-2] != "–" for r in rows)
        if game == "stalingrad":
            assert "win %" in head
        shoot(site, f"{game}-event.png")


def test_a_game_without_boards_and_a_server_error_show_what_happened(site):
    """A record of a game this installation does not know: its page shows the moves and says it
    has no board (before: the server's plain-text 500, a SyntaxError in the console, the page
    left as it was); a server error is shown as the page's message, not thrown."""
    import msgspec

    from arbiter.records.store import iter_records
    from arbiter.web import MemorySource, WebServer

    deadline = time.monotonic() + 120
    while (first := next(iter_records(site["db"]), None)) is None and time.monotonic() < deadline:
        time.sleep(0.2)  # (the event's first game, when this test runs alone)
    record = msgspec.structs.replace(first, game="nosuchgame")

    class Failing(MemorySource):
        def engine(self, name):
            raise RuntimeError("internals")

    source = Failing("unknown")
    source.announced(record)
    server = WebServer(source, None, port=0)
    server.start()
    page, gap = site["page"], len(site["errors"])
    try:
        page.goto(f"{server.url}#/game/{record.game_id}")
        page.wait_for_function("() => (document.querySelector('#board') || {}).textContent === "
                               "'no board: this game cannot be replayed here'")
        assert page.inner_text("#movelist").strip() and "not replayed here" in page.inner_text("#dice")
        page.goto(f"{server.url}#/engine/{record.players[0]}")
        page.wait_for_function("() => document.querySelector('#view').textContent.includes('internal error')")
    finally:
        page.goto("about:blank")
        server.stop()
    new = site["errors"][gap:]
    assert not [e for e in new if "Failed to load resource" not in e], new  # (the 500 itself is logged by the browser)
    del site["errors"][gap:]


class Publisher:
    """A referee's feed in a thread: live views of game ``g1`` over the real feed socket, a new
    ply every few milliseconds (resent until stopped: a PUB socket drops what it sends before its
    connection is made), with ``board`` as the view's board."""

    def __init__(self, endpoint: str, board: str):
        import threading

        self.endpoint, self.board, self.stop = endpoint, board, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        import msgspec
        import zmq

        ctx = zmq.Context()
        pub = ctx.socket(zmq.PUB)
        pub.connect(self.endpoint)
        ply = 0
        while not self.stop.is_set():
            ply += 1
            now = time.time()
            pub.send(msgspec.msgpack.encode({
                "type": "live", "game_id": "g1", "match_id": "m", "number": 1, "game": "einstein",
                "players": ["a", "b"], "roles": ["red", "blue"], "time_control": "60", "dice_commitment": "c",
                "started_at": now, "ply": ply, "acting": [0], "clocks_ms": [60000, 60000], "sent_at": now,
                "event_at": now, "board": self.board, "last": [{"ply": ply - 1, "seat": 0, "kind": "move", "move": f"m{ply}"}]}))
            time.sleep(0.02)
        pub.close(0)
        ctx.term()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(5)


def live_ply(page) -> int:
    return page.evaluate("() => S.live.g1 ? S.live.g1.ply : 0")


@contextlib.contextmanager
def fed_page(site, tmp_path, name: str, board: str):
    """A server whose feed gets a running game ``g1`` with ``board`` (a ``Publisher``), and the
    site's page: (server, page); afterwards, nothing new in the console."""
    from arbiter.web import MemorySource, WebServer

    endpoint = f"ipc://{tmp_path}/feed"
    server = WebServer(MemorySource(name), endpoint, port=0, tick=0.01)
    server.start()
    publisher = Publisher(endpoint, board)
    page, gap = site["page"], len(site["errors"])
    try:
        yield server, page
    finally:
        publisher.close()
        page.goto("about:blank")
        server.stop()
    new = site["errors"][gap:]
    assert new == [], new


def test_a_malformed_address_is_not_found_and_the_page_keeps_updating(site, tmp_path):
    """A hand-typed address that is not valid percent-encoding (``#/engine/50%``): page.js's
    decodeURIComponent threw a URIError on the route and again on every live event, so the page
    went blank, stopped updating, and filled the console. It now says there is no such page, takes
    the live events as ever, and a valid address still works."""
    from arbiter.games import load_game

    with fed_page(site, tmp_path, "addresses", load_game("einstein").new_initial_state().render_svg()) as (server, page):
        for address in ("#/engine/50%", "#/game/%E0%A4%A"):
            page.goto(server.url + address)
            page.wait_for_function("() => document.querySelector('#view').textContent.includes('no such page')",
                                   timeout=10000)
            page.wait_for_function("() => S.live.g1 && S.live.g1.ply > 0", timeout=10000)
            ply = live_ply(page)
            page.wait_for_function(f"() => S.live.g1.ply > {ply + 5}", timeout=10000)  # live events taken
            assert "no such page" in page.inner_text("#view")
        page.evaluate("() => { location.hash = '#/game/g1'; }")  # a valid address from there
        page.wait_for_selector("#game[data-live='1'] .card[data-game='g1']", timeout=10000)
        page.evaluate("() => { location.hash = '#/'; }")
        page.wait_for_selector("#live .card[data-game='g1']", timeout=10000)
        ply = int(page.get_attribute("#live .card[data-game='g1']", "data-ply"))
        page.wait_for_function(f"() => Number(document.querySelector(\"#live .card[data-game='g1']\").dataset.ply) > {ply}",
                               timeout=10000)


HOSTILE_BOARD = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 10 10" class="board" onload="window.pwned=\'svg\'">'
                 '<script>window.pwned = "script"</script><rect width="10" height="10" fill="#3b7"/>'
                 '<image href="/no-such-image.png" onerror="window.pwned=\'image\'"/></svg>')


def test_a_board_from_the_feed_cannot_run_script_in_the_page(site, tmp_path):
    """Whatever connects to the feed socket wrote its board into every spectator's page as markup
    (innerHTML): an SVG's ``onload``/``onerror`` attributes ran in the page. A running game's board
    is now shown as an image (an SVG image runs no script and loads nothing), on the event page and
    on the game's own page."""
    with fed_page(site, tmp_path, "hostile", HOSTILE_BOARD) as (server, page):
        for address, card in (("#/", "#live .card[data-game='g1']"), ("#/game/g1", "#game .card[data-game='g1']")):
            page.goto(server.url + address)
            page.wait_for_selector(card, timeout=10000)
            ply = live_ply(page)
            page.wait_for_function(f"() => S.live.g1.ply > {ply + 10}", timeout=10000)  # redrawn many times
            assert page.evaluate("() => window.pwned") is None
            assert page.query_selector(f"{card} script, {card} svg") is None
            page.wait_for_function(f"() => document.querySelector(\"{card} img.board\").naturalWidth > 0",
                                   timeout=10000)  # the board is shown all the same


def test_win_rates_of_an_engine_without_games_are_a_dash(site):
    """An engine that has played no game yet (a solo or table event under way) showed a win % of
    "0.0" (the report's rate is None, or 0 of a count taken as 1) and, at a table, a mean rank and
    return of 0.00: figures it does not have. They are a dash, as every undefined figure is."""
    from arbiter.web import MemorySource, WebServer

    solo = [{"rank": 1, "engine": "r1", "games": 2, "wins": 1, "win_rate": 0.5, "win_lo": 0.0945, "win_hi": 0.9055,
             "mean": 1.5, "lo": None, "hi": None},
            {"rank": 2, "engine": "r2", "games": 0, "wins": 0, "win_rate": None, "win_lo": 0.0, "win_hi": 1.0,
             "mean": None, "lo": None, "hi": None}]  # as tournaments.report.solo_sections makes them
    table = [{"rank": 1, "engine": "a1", "games": 1, "wins": 1, "draws": 0, "win_rate": 1.0, "mean_rank": 1.0,
              "mean_return": 1.0, "mu": 27.6, "sigma": 8.1, "ordinal": 3.3},
             {"rank": 2, "engine": "a3", "games": 0, "wins": 0, "draws": 0, "win_rate": 0.0, "mean_rank": 0.0,
              "mean_return": 0.0, "mu": 25.0, "sigma": 8.33, "ordinal": 0.0}]  # as its table_sections

    class Standings(MemorySource):
        def summary(self):
            return {"title": self.title, "standings": self.rows}

    page = site["page"]
    for rows, blank in ((solo, ["win %", "95 % interval", "mean score"]), (table, ["win %", "mean rank", "mean return"])):
        source = Standings("standings")
        source.rows = rows
        server = WebServer(source, None, port=0)
        server.start()
        try:
            page.goto(server.url)
            page.wait_for_selector("#standings")
            head = page.evaluate("() => [...document.querySelectorAll('#standings th')].map(th => th.textContent)")
            cells = page.evaluate("() => [...document.querySelectorAll('#standings tr')].slice(1).map(tr => "
                                  "[...tr.children].map(td => td.textContent))")
            for name in blank:
                col = head.index(name)
                assert cells[0][col] not in ("–", "") and cells[1][col] == "–", (name, cells)
        finally:
            page.goto("about:blank")
            server.stop()


def test_a_withheld_game_page_shows_its_seed_when_the_run_ends(site, tmp_path):
    """A finished game whose dice a later game shares (``arbiter solo``: every engine plays the
    same seeds) has its seed withheld while the run goes on. Its page, opened then, said "withheld"
    until the spectator reloaded it, long after the run was over. It now reloads the game by itself
    when the standings say the run is over: the seed shows, verified."""
    from arbiter.clock import parse_time_control
    from arbiter.feed import Feed
    from arbiter.formats.match import Series
    from arbiter.formats.solo import suite_stream
    from arbiter.games import load_game
    from arbiter.hosting import EngineConfig
    from arbiter.web import MemorySource, WebServer

    game = load_game("stalingrad")
    records = []
    for name, seed in (("A", "3"), ("B", "4")):
        series = Series(game, [EngineConfig([PY, "-m", "sample_engines.stalingrad_random", "--seed", seed],
                                            name=name, cwd=str(ROOT))],
                        parse_time_control("60"), run_dir=tmp_path / "logs", seed=b"one-suite")
        try:
            records.append(series.play_game(0, [0], dice_stream=suite_stream(0)))
        finally:
            series.close()
    first, second = records
    endpoint = f"ipc://{tmp_path}/feed"
    server = WebServer(MemorySource("suite", total=2), endpoint, port=0, tick=0.01, poll=0.1)
    server.start()
    feed = Feed(endpoint)
    page = site["page"]
    try:
        deadline = time.monotonic() + 10
        while not server.app.state.hub.source.lines() and time.monotonic() < deadline:
            feed.finished(first)  # (until the feed's connection is made)
            feed.flush()
            time.sleep(0.1)
        page.goto(f"{server.url}#/game/{first.game_id}")
        page.wait_for_function("() => (document.querySelector('#dice') || {textContent: ''}).textContent.includes('withheld')")
        assert first.dice_seed not in page.content()
        page.evaluate("() => { window.sameDocument = true; }")
        feed.finished(second)  # the run is over
        feed.flush()
        page.wait_for_function(f"() => document.querySelector('#dice').textContent.includes('{first.dice_seed}')",
                               timeout=60000)  # once the standings are made again: later on a loaded machine
        assert "verified" in page.inner_text("#dice") and "NOT" not in page.inner_text("#dice")
        assert page.evaluate("() => window.sameDocument") is True  # not reloaded
    finally:
        feed.close()
        page.goto("about:blank")
        server.stop()


def test_the_page_orders_and_keeps_finished_games_as_the_server_does(site):
    """page.js ``finishedMerged`` (a summary's new rows into the ones held) against the server's order
    (``newest_first``): games ending out of order, equal end times, a row replaced, the newest kept."""
    import json
    import random

    from arbiter.web.app import newest_first

    rng = random.Random(3)
    held = [{"game_id": f"g{i}", "ended_at": float(rng.randint(0, 30)), "plies": 1} for i in range(40)]
    new = [{"game_id": f"g{i}", "ended_at": float(rng.randint(0, 40)), "plies": 2} for i in range(30, 60)]
    merged = {r["game_id"]: r for r in held} | {r["game_id"]: r for r in new}
    expected = sorted(merged.values(), key=newest_first)[:25]
    script = (ROOT / "arbiter" / "web" / "page.js").read_text()
    function = script[script.index("function finishedMerged("):]
    function = function[:function.index("\n}\n") + 3]  # the page may be elsewhere by now: the function alone
    got = site["page"].evaluate(f"([held, rows]) => {{ {function} return finishedMerged(held, rows, 25); }}",
                                [held, new])
    assert got == json.loads(json.dumps(expected))


def test_no_console_errors(site):
    assert site["errors"] == []


TABLE = """
name = "table-event"
game = "aachess"
format = "round_robin"
games = 3
time_control = "30"
seed = "t"
output = "{db}"
concurrency = 1
[game_options]
seats = 3
[[engines]]
name = "a1"
command = "{{python}} -m sample_engines.aachess_random --seed 1"
[[engines]]
name = "a2"
command = "{{python}} -m sample_engines.aachess_random --seed 2"
[[engines]]
name = "a3"
command = "{{python}} -m sample_engines.aachess_random --seed 3"
"""


def test_a_table_event_shows_its_standings_and_ratings(site, tmp_path):
    """A 3-5 seat (table) event ranks engines by OpenSkill, as its report does: wins, draws, win %,
    mean rank, mean return, μ, σ, with the ratings plotted and the seats' table. Before, its page
    showed the points/W/D/L columns of a two-seat event, every cell blank (a table's standings
    have none of them), and no ratings. A finished game's page names each engine's powers."""
    page = site["page"]
    db, toml = tmp_path / "table.sqlite", tmp_path / "table.toml"
    toml.write_text(TABLE.format(db=db))
    run = subprocess.run([PY, "-m", "tournaments", "run", str(toml), "-q", "--no-report"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    port = free_port()
    start(site["procs"], port, "serve", str(db), "--port", str(port))
    page.goto(f"http://127.0.0.1:{port}/")
    page.wait_for_selector("#standings")
    head = page.inner_text("#standings tr")
    assert "mean rank" in head and "μ" in head and "points" not in head
    rows = page.evaluate("() => [...document.querySelectorAll('#standings tr')].slice(1).map(tr => "
                         "[...tr.children].map(td => td.textContent))")
    assert sorted(r[1] for r in rows) == ["a1", "a2", "a3"]
    assert all(r[2] == "3" and all(cell.strip() not in ("", "–") for cell in r) for r in rows), rows
    assert page.query_selector("#ratingplot") is not None and page.query_selector("#seats") is not None
    shoot(site, "table-event.png")
    # a finished game says which engine held which powers (before: the names alone, in seat order)
    page.click("#finished a[href^='#/game/']")
    page.wait_for_selector("#board svg.board")
    heading = page.inner_text("#game h2")
    assert all(f"({role})" in heading for role in ("RU+UK", "GE+JP", "US")), heading
