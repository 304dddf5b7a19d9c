"""A&A Chess casualties (issue 15): units that differ in anything that matters later are told
apart, a decision is asked whenever the choice matters and skipped only when every choice leads
to the same position. The two reproductions of the issue, the notation, and a property test over
random battles that checks the offered choices against every subset of the candidates."""
from __future__ import annotations

import itertools
import random

import pytest

from arbiter.games.aachess import library as lib
from arbiter.games.aachess.combat import VARIANTS
from arbiter.games.aachess.rules import AAChessState, Unit
from arbiter.games.base import IllegalMove
from sample_engines import aachess_heuristic as heuristic

from test_aachess_rules import blank, put


def sp(s, name: str) -> int:
    return s.board.space(name)


# --- the reproductions ------------------------------------------------------------------


def two_raids() -> AAChessState:
    """Issue 15, rules §4: five bombers to two AA-defended targets; 5 passes, 1 bomber lost."""
    s = blank("GE")
    for space, power in (("United Kingdom", "UK"), ("Russia", "RU")):
        put(s, "aa", power, space)
        put(s, "ic", power, space)
    put(s, "bmb", "GE", "Germany", 5)
    s.apply("bomb 3 bmb : Germany > West Europe > North Sea Zone > United Kingdom; "
            "bomb 2 bmb : Germany > East Europe > Karelia S.S.R. > Russia")
    return s


def test_aa_losses_among_planes_to_two_targets_are_chosen_by_destination():
    s = two_raids()
    assert s.decision_kind() == "casualties" and s.cas["step"] == "aa" and s.current_player() == 1
    assert s.cas["groups"] == [["bmb @ United Kingdom raid, 3 moves left", [5, 6, 7]],
                               ["bmb @ Russia raid, 3 moves left", [8, 9]]]
    assert s.legal_moves() == ["1 bmb @ Russia raid", "1 bmb @ United Kingdom raid"]
    uk, ru = s.pus[2], s.pus[0]
    s.apply("1 bmb @ Russia")
    assert sorted(u.at for u in s.units.values() if u.t == "bmb") == [sp(s, "Russia")] + [sp(s, "United Kingdom")] * 3
    assert (uk - s.pus[2], ru - s.pus[0]) == (7, 2)  # 3 bombers x 2.5 = 7, 1 x 2.5 = 2
    t = two_raids()
    t.apply("#5")  # any unit of a class stands for it
    assert (uk - t.pus[2], ru - t.pus[0]) == (5, 5)


def karelia() -> AAChessState:
    """Issue 15, rules §3 step 4: one infantry overland, one landed from the sea, orthodox."""
    s = blank("GE", variant="orthodox")
    (inf,) = put(s, "inf", "GE", "Baltic Sea Zone")  # the lower id: lowest-id defaults would lose the other
    (trn,) = put(s, "trn", "GE", "Baltic Sea Zone")
    inf.on = trn.id
    put(s, "inf", "GE", "East Europe")
    put(s, "inf", "RU", "Karelia S.S.R.", 2)
    s.apply("1 inf : East Europe > Karelia S.S.R.; 1 inf : Baltic Sea Zone > Karelia S.S.R.")
    return s


def test_the_attacker_keeps_the_overland_infantry_and_may_retreat():
    s = karelia()
    # attack 2 -> no hit; defence 4 -> one hit (remainder 4 counts): the attacker chooses.
    assert s.decision_kind() == "casualties" and s.cas["side"] == "attacker" and s.current_player() == 1
    assert s.legal_moves() == ["1 inf amph", "1 inf from East Europe"]
    s.apply("1 inf amph")
    assert [s.board.names[u.came] for u in s.attackers(sp(s, "Karelia S.S.R."))] == ["East Europe"]
    assert s.decision_kind() == "retreat" and s.legal_moves() == ["continue", "retreat East Europe"]
    s.apply("retreat East Europe")
    assert [s.board.names[u.at] for u in s.units.values() if u.p == 1 and u.t == "inf"] == ["East Europe"]
    # The other choice loses the overland infantry: nowhere to retreat, the attack is lost.
    t = karelia()
    t.apply("1 inf from East Europe")
    assert not [u for u in t.units.values() if u.p == 1 and u.t == "inf"]
    assert any("the attack failed" in line for line in t.log) or any("left behind" in line for line in t.log)


def test_the_heuristic_engine_loses_the_amphibious_infantry_first():
    s = karelia()
    assert lib.choose_casualties(s) == "#1"
    t = two_raids()
    assert lib.choose_casualties(t) == "#5"  # from the larger raid
    s.apply(lib.choose_casualties(s))
    (kept,) = s.attackers(sp(s, "Karelia S.S.R."))
    assert not kept.has("amph") and heuristic.retreat(s) == "retreat East Europe"


# --- notation -------------------------------------------------------------------------------------


def test_casualty_notation_qualifiers_and_refusals():
    s = two_raids()
    for text, match in (("1 bmb @ Atlantis", "Atlantis"), ("2 bmb", "exactly 1"), ("1 bmb amph", "only 0 bmb"),
                        ("1 bmb raid United Kingdom", "takes no space name"), ("1 inf", "only 0 inf"),
                        ("#1", "not one of those")):
        with pytest.raises(IllegalMove, match=match):
            s.check_move(text)
    for text in ("1 bmb @ united kingdom", "bmb raid @ Russia", "#9", "1 bmb"):
        s.check_move(text)
    k = karelia()
    k.check_move("inf FROM East Europe")
    with pytest.raises(IllegalMove, match="only 0 inf"):
        k.check_move("1 inf from Caucasus")


def test_interchangeable_units_are_still_taken_without_asking():
    s = blank("GE", variant="orthodox")
    put(s, "arm", "GE", "East Europe", 3)
    a, b = put(s, "inf", "RU", "Karelia S.S.R.", 2)
    # Russia's own leftovers from its turn (reset when its next turn begins) do not tell them apart.
    a.came, a.used, a.flags = sp(s, "Russia"), 1, "cm,done"
    # Attack 9: one hit; defence 4: one hit. Three armor from one place, two infantry: forced.
    s.apply("3 arm : East Europe > Karelia S.S.R.")
    assert s.decision_kind() == "retreat"
    assert any("defender loses 1 inf, attacker loses 1 arm" in line for line in s.log)
    assert sorted(s.units) == [2, 3, 5]  # the lowest ids went, as before


def test_too_many_outcomes_are_not_listed():
    s = two_raids()
    assert len(s.casualty_choices()) == 2 and s.casualty_choices(limit=1) is None


def test_planes_from_different_places_are_alike_when_their_moves_left_agree():
    s = blank("GE", variant="orthodox")
    put(s, "ftr", "GE", "East Europe")
    put(s, "ftr", "GE", "Finland Norway")
    put(s, "inf", "GE", "Ukraine S.S.R.")
    put(s, "inf", "RU", "Karelia S.S.R.", 3)
    # Attack 3 + 3 + 1 = 7: one hit (forced: three alike infantry); defence 6: one hit. Both
    # fighters flew one step (3 moves left): where a plane came from no longer matters.
    s.apply("1 ftr : East Europe > Karelia S.S.R.; 1 ftr : Finland Norway > Karelia S.S.R.; "
            "1 inf : Ukraine S.S.R. > Karelia S.S.R.")
    assert s.decision_kind() == "casualties" and s.cas["groups"] == [["ftr, 3 moves left", [1, 2]],
                                                                     ["inf from Ukraine S.S.R.", [3]]]
    assert s.legal_moves() == ["1 ftr", "1 inf from Ukraine S.S.R."]


def test_a_transport_s_cargo_and_a_carrier_s_fighters_tell_it_apart():
    s = blank("UK")
    (full, empty) = put(s, "trn", "GE", "North Sea Zone", 2)
    (inf,) = put(s, "inf", "GE", "North Sea Zone")
    inf.on = full.id
    (cv1, cv2) = put(s, "cv", "GE", "North Sea Zone", 2)
    (f,) = put(s, "ftr", "GE", "North Sea Zone")
    assert f.on == cv1.id
    put(s, "ftr", "UK", "United Kingdom", 3)
    put(s, "bmb", "UK", "United Kingdom", 3)
    s.apply("3 ftr : United Kingdom > North Sea Zone; 3 bmb : United Kingdom > North Sea Zone")
    # attack 9 + 12 = 21 -> 3 hits: the defender chooses among two transports and two carriers.
    assert s.decision_kind() == "casualties" and s.cas["side"] == "defender"
    labels = [label for label, _ in s.cas["groups"]]
    assert "trn, carrying 1 inf" in labels and "trn" in labels and "cv, carrying 1 ftr" in labels and "cv" in labels
    assert "ftr, aboard a cv" in labels
    choices = s.legal_moves()
    assert len(choices) == len(set(choices)) and all(s.check_move(c) is None for c in choices)


# --- property: offered choices == distinguishable outcomes, over random battles -----------------


def _own(st: AAChessState, u: Unit, step: str) -> tuple:
    """What about a unit can still matter (docs/games/aachess.md, "Casualties"): another power's
    moves, origins and flags are reset at the start of its turn; 'stop' and AA passes are spent
    once the combat move is over; land and sea units in a battle stay there for the turn, so only
    planes keep moves that matter; an origin counts only while a retreat can follow (``step``
    "attacker", with defenders left)."""
    if u.p != st.mover:
        return (u.t, u.p, u.at)
    flags = frozenset(f for f in u.flags.split(",") if f) & {"amph", "raid", "sea", "shore"}
    air = st.board.units[u.t].kind == "air"
    moves = st.remaining(u) if air else None
    came = u.came if step == "attacker" and not air and "amph" not in flags else None
    return (u.t, u.p, u.at, moves, came, tuple(sorted(flags)))


def canonical(st: AAChessState, step: str) -> tuple:
    """The position after a casualty choice, ids forgotten: the units (the defender's marked
    casualties already removed, as they will be) each with its carrier and its cargo."""
    st = st.clone()
    if st.bt and st.bt.get("marked"):
        st._kill([st.units[i] for i in st.bt["marked"] if i in st.units])
    if step == "attacker" and not (st.bt and st.defenders(st.bt["at"])):
        step = "attacker_last"  # every defender gone: no retreat follows, origins no longer count
    out = []
    for u in st.units.values():
        carrier = st.units.get(u.on) if u.on >= 0 else None
        cargo = sorted(repr(_own(st, c, step)) for c in st.units.values() if c.on == u.id)
        out.append(repr((_own(st, u, step), _own(st, carrier, step) if carrier else None, cargo)))
    return tuple(sorted(out))


def brute_force(st: AAChessState, step: str, count: int, cands: list[int]) -> dict[tuple, list[int]]:
    """Every subset of the candidates of the right size, by the position it leads to."""
    seen: dict[tuple, list[int]] = {}
    for sub in itertools.combinations(cands, count):
        c = st.clone()
        c.cas = None
        c._casualties_chosen(step, [c.units[i] for i in sub])
        seen.setdefault(canonical(c, step), list(sub))
    return seen


def random_battle(rng: random.Random) -> AAChessState:
    """A German attack with units of mixed history: a land battle in Karelia (overland from
    friendly and enemy land, amphibious, planes with different moves left), a sea battle in the
    North Sea (ships from several zones, carriers with fighters, loaded transports, submarines),
    or AA fire over several targets. Defenders carry stale moves, origins and flags."""
    s = blank("GE", variant=rng.choice(VARIANTS))
    b = s.board

    def add(code, power, space, came=None, flags="", used=0, on=-1):
        u = put(s, code, power, space)[0]
        u.came = sp(s, came) if came else -1
        u.flags, u.used = flags, used
        if on >= 0 or code != "ftr":
            u.on = on
        return u

    stale = ["", "cm", "cm,done,stop", "amph,done"]
    kind = rng.choice(["land", "land", "sea", "aa"])
    if kind == "land":
        at = "Karelia S.S.R."
        for _ in range(rng.randint(1, 4)):
            add(rng.choice(["inf", "inf", "arm"]), "GE", at, came=rng.choice(["East Europe", "Finland Norway",
                "Ukraine S.S.R.", "Russia"]), flags=rng.choice(["cm,done,stop", "cm,stop", "done"]),
                used=rng.choice([1, 2]))
        for _ in range(rng.randint(0, 2)):
            add(rng.choice(["inf", "arm"]), "GE", at, came=rng.choice(["Baltic Sea Zone", "Karelia Sea Zone"]),
                flags="cm,amph,done,stop", used=2)
        for _ in range(rng.randint(0, 3)):
            add(rng.choice(["ftr", "bmb"]), "GE", at, came=rng.choice(["East Europe", "Ukraine S.S.R."]),
                flags="cm,stop", used=rng.choice([1, 2]))
        for _ in range(rng.randint(1, 4)):
            add(rng.choice(["inf", "inf", "arm", "ftr"]), "RU", at, came=rng.choice([None, "Russia", "Caucasus"]),
                flags=rng.choice(stale), used=rng.randint(0, 2))
        add("aa", "RU", at)
    elif kind == "sea":
        at = "North Sea Zone"
        put(s, "sub", "UK", "East Canada Sea Zone")  # a zone no retreat may go to
        for _ in range(rng.randint(1, 4)):
            code = rng.choice(["bb", "cv", "sub", "sub", "trn"])
            u = add(code, "GE", at, came=rng.choice(["Baltic Sea Zone", "East Canada Sea Zone", "Karelia Sea Zone"]),
                    flags=rng.choice(["cm,stop", "cm,stop,sea", "cm,stop,unl", "stop"]), used=rng.choice([1, 2]))
            if code == "cv":
                for _ in range(rng.randint(0, 2)):
                    add("ftr", "GE", at, came="Baltic Sea Zone", flags="cm,stop", used=1, on=u.id)
            if code == "trn" and rng.random() < 0.6:
                add(rng.choice(["inf", "arm"]), "GE", at, came="West Europe", flags="cm", used=1, on=u.id)
        for _ in range(rng.randint(0, 2)):
            add("ftr", "GE", at, came="West Europe", flags="cm,stop", used=rng.choice([1, 2]))
        for _ in range(rng.randint(1, 4)):
            code = rng.choice(["bb", "cv", "trn", "sub"])
            u = add(code, "UK", at, came=rng.choice([None, "Karelia Sea Zone"]), flags=rng.choice(stale),
                    used=rng.randint(0, 2))
            if code == "cv":
                for _ in range(rng.randint(0, 2)):
                    add("ftr", "UK", at, flags=rng.choice(stale), on=u.id)
            if code == "trn" and rng.random() < 0.5:
                add("inf", "UK", at, on=u.id)
    else:
        targets = ["United Kingdom", "Russia", "Karelia S.S.R."]
        for t in targets:
            owner = "UK" if t == "United Kingdom" else "RU"
            put(s, "aa", owner, t)
            put(s, "ic", owner, t)
            put(s, "inf", owner, t)
        for _ in range(rng.randint(4, 9)):
            t = rng.choice(targets)
            raid = rng.random() < 0.5
            u = add(rng.choice(["bmb"] if raid else ["ftr", "bmb"]), "GE", t, came="West Europe",
                    flags="cm,raid,stop" if raid else "cm,stop", used=rng.choice([2, 3]))
            s.passes[u.id] = rng.choice([1, 1, 2])
            if raid:
                s.raids.setdefault(sp(s, t), []).append(u.id)
            elif sp(s, t) not in s.pending:
                s.pending.append(sp(s, t))
        s.phase = "aa"
        s._advance()
        return s
    s.pending = [sp(s, at)]
    s.phase = "battles"
    s._advance()
    return s


def test_offered_casualty_choices_are_exactly_the_distinguishable_outcomes(monkeypatch):
    checked = {"asked": 0, "forced": 0, "aa": 0}
    watching = True
    original = AAChessState._ask_casualties

    def watched(self, power, side, count, cands, step, why):
        if not watching:  # only on the path actually played (not inside check_move's trials)
            return original(self, power, side, count, cands, step, why)
        units = [i for i in cands if i in self.units]
        n = min(count, len(units))
        outcomes = brute_force(self, step, n, units) if n else {}
        original(self, power, side, count, cands, step, why)
        if self.cas is None:  # taken without asking: every choice must lead to the same position
            assert len(outcomes) <= 1, (step, self.to_text())
            checked["forced"] += 1
        else:
            assert len(outcomes) >= 2
    monkeypatch.setattr(AAChessState, "_ask_casualties", watched)

    rng = random.Random(15)
    for _ in range(120):
        watching = True
        s = random_battle(rng)
        for _ in range(400):
            if s.phase != "battles" and s.phase != "aa":
                break
            if s.chance is not None:
                s.apply_chance(rng.choice(s.chance_outcomes()))
                continue
            kind = s.decision_kind()
            if kind == "casualties":
                cas = s.cas
                outcomes = brute_force(s, cas["step"], cas["count"], cas["candidates"])
                watching = False
                for sub in itertools.combinations(cas["candidates"], cas["count"]):  # any legal choice
                    s.check_move(", ".join(f"#{i}" for i in sub))
                watching = True
                offered = s.legal_moves()
                assert offered is not None and len(offered) == len(set(offered))
                reached = []
                for text in offered:
                    c = s.clone()
                    c.cas = None
                    c._casualties_chosen(cas["step"], [c.units[u.id] for u in s._pick_casualties(text)])
                    reached.append(canonical(c, cas["step"]))
                assert len(set(reached)) == len(reached) and set(reached) == set(outcomes)
                assert sum(len(ids) for _, ids in cas["groups"]) == len(cas["candidates"])
                checked["asked"] += 1
                checked["aa"] += cas["step"] == "aa"
                s.apply(rng.choice(offered) if rng.random() < 0.5 else
                        ", ".join(f"#{i}" for i in rng.sample(cas["candidates"], cas["count"])))
            else:
                s.apply(rng.choice(s.legal_moves()))
    assert checked["asked"] >= 40 and checked["forced"] >= 40 and checked["aa"] >= 5, checked
