"""schema.json and SPEC.md cannot drift from the Structs in protocol/messages.py.

* schema.json is exactly what ``python -m protocol.schema`` generates;
* SPEC.md has a table per message (and per embedded map) listing every field with its wire
  type, whether it is required and its default; every tag, error code, forfeit reason and
  time-control kind named in the Structs appears in it;
* the example session's bytes in SPEC.md are what the encoder produces;
* the dice test vector in SPEC.md is what the algorithm it describes produces.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import re
import struct

import msgspec
import msgspec.inspect as mi
import pytest

from arbiter import dice, games
from protocol import schema
from protocol.codec import MAX_MESSAGE_SIZE, ProtocolError, decode, encode
from protocol.messages import (ALL_MESSAGES, PROTOCOL_VERSION, EndReason, ErrorCode, Hello, OptionType, Reply,
                               Request, TimeControlKind)

REGENERATE = "run `python -m protocol.schema` and commit the result"
SPEC = schema.SPEC_PATH.read_text(encoding="utf-8")


def tag(cls: type) -> str:
    return cls.__struct_config__.tag


def embedded_structs() -> list[type]:
    """The untagged Structs carried inside messages (TimeControl, Info), in order of appearance."""
    found: list[type] = []

    def walk(t: mi.Type) -> None:
        if isinstance(t, mi.UnionType):
            for member in t.types:
                walk(member)
        elif isinstance(t, (mi.ListType, mi.SetType, mi.FrozenSetType, mi.VarTupleType)):
            walk(t.item_type)
        elif isinstance(t, mi.DictType):
            walk(t.value_type)
        elif isinstance(t, mi.StructType) and t.cls not in ALL_MESSAGES and t.cls not in found:
            found.append(t.cls)
            for field in t.fields:
                walk(field.type)

    for cls in ALL_MESSAGES:
        for field in mi.type_info(cls).fields:
            walk(field.type)
    return found


STRUCTS = [*ALL_MESSAGES, *embedded_structs()]
ENUMS = [EndReason, ErrorCode, TimeControlKind, OptionType]


# --- schema.json -----------------------------------------------------------------------------


def test_committed_schema_is_the_generated_one():
    committed = schema.SCHEMA_PATH.read_text(encoding="utf-8")
    assert committed == schema.schema_text(), f"protocol/schema.json is out of date: {REGENERATE}"


def test_schema_is_pretty_sorted_and_ends_with_a_newline():
    text = schema.schema_text()
    assert text.endswith("}\n")
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=tag)
def test_every_message_is_in_the_schema_with_its_tag(cls):
    generated = schema.json_schema()
    ref = f"#/$defs/{cls.__name__}"
    definition = generated["$defs"][cls.__name__]
    assert {"$ref": ref} in generated["anyOf"]
    assert generated["discriminator"]["propertyName"] == "type"
    assert generated["discriminator"]["mapping"][tag(cls)] == ref
    assert definition["properties"]["type"] == {"enum": [tag(cls)]}
    assert "type" in definition["required"]
    fields = msgspec.structs.fields(cls)
    assert set(definition["properties"]) == {"type"} | {f.name for f in fields}
    assert set(definition["required"]) == {"type"} | {f.name for f in fields if f.required}


def test_schema_covers_exactly_the_messages():
    generated = schema.json_schema()
    assert set(generated["discriminator"]["mapping"]) == {tag(cls) for cls in ALL_MESSAGES}
    assert set(generated["$defs"]) == {cls.__name__ for cls in STRUCTS + ENUMS}


def test_schema_carries_the_field_docstrings():
    request = schema.json_schema()["$defs"]["Request"]["properties"]
    assert request["time_left_ms"]["description"] == (
        "Time this decision may take before the engine's flag falls (0 = unlimited).")
    assert request["kind"]["description"].startswith("The kind of decision: `move`, `setup`")


def test_main_writes_stale_files_and_check_reports_them(tmp_path, monkeypatch, capsys):
    schema_path, spec_path = tmp_path / "schema.json", tmp_path / "SPEC.md"
    schema_path.write_text("{}\n", encoding="utf-8")
    spec_path.write_text(f"intro\n{schema.EXAMPLE_BEGIN}\nold\n{schema.EXAMPLE_END}\noutro\n", encoding="utf-8")
    monkeypatch.setattr(schema, "SCHEMA_PATH", schema_path)
    monkeypatch.setattr(schema, "SPEC_PATH", spec_path)

    assert schema.main(["--check"]) == 1
    assert "out of date" in capsys.readouterr().err
    assert schema_path.read_text(encoding="utf-8") == "{}\n"

    assert schema.main([]) == 0
    assert schema_path.read_text(encoding="utf-8") == schema.schema_text()
    assert spec_path.read_text(encoding="utf-8") == f"intro\n{schema.render_example_session()}\noutro\n"
    assert schema.main(["--check"]) == 0


def test_committed_files_pass_the_check():
    assert schema.main(["--check"]) == 0, REGENERATE


# --- SPEC.md: message tables ----------------------------------------------------------------


def section(text: str, heading: str) -> str:
    """The body of the markdown section whose heading line is ``heading``, up to the next heading
    of the same or a higher level."""
    level = heading.split(" ")[0]
    match = re.search(rf"^{re.escape(heading)}[^\n]*\n(.*?)(?=^#{{1,{len(level)}}} |\Z)", text, re.M | re.S)
    assert match, f"SPEC.md has no section {heading!r}"
    return match.group(1)


MESSAGES_SECTION = section(SPEC, "## Messages")
ROW = re.compile(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \| (.+) \|$", re.M)


def wire_type(t: mi.Type) -> str:
    """A type as SPEC.md's Encoding section names it."""
    names = {mi.StrType: "string", mi.IntType: "int", mi.FloatType: "float", mi.BoolType: "bool",
             mi.NoneType: "nil", mi.AnyType: "any"}
    if type(t) in names:
        return names[type(t)]
    if isinstance(t, mi.UnionType):
        return " or ".join(wire_type(member) for member in t.types)
    if isinstance(t, mi.ListType):
        return f"array of {wire_type(t.item_type)}"
    if isinstance(t, mi.DictType):
        return f"map of {wire_type(t.key_type)} to {wire_type(t.value_type)}"
    if isinstance(t, mi.StructType):
        return t.cls.__name__
    if isinstance(t, mi.EnumType):
        return "string"  # an enum travels as its text value
    raise AssertionError(f"no wire name for {t!r}: name it in SPEC.md's Encoding section and here")


def expected_rows(cls: type) -> dict[str, tuple[str, str, str]]:
    """``{field: (type, required, default)}`` as SPEC.md's table for ``cls`` must show them."""
    rows = {"type": ("string", "yes", "—")} if cls in ALL_MESSAGES else {}
    for field in mi.type_info(cls).fields:
        if field.required:
            rows[field.name] = (wire_type(field.type), "yes", "—")
        else:
            default = field.default if field.default_factory is msgspec.NODEFAULT else field.default_factory()
            rows[field.name] = (wire_type(field.type), "no", f"`{json.dumps(msgspec.to_builtins(default))}`")
    return rows


def struct_heading(cls: type) -> str:
    return f"### `{tag(cls) if cls in ALL_MESSAGES else cls.__name__}`"


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
def test_spec_has_a_complete_table_for_every_message(cls):
    """Every tag has a section; its table lists exactly the Struct's fields, with the right wire
    type, required-ness and default, and a meaning."""
    heading = struct_heading(cls)
    body = section(MESSAGES_SECTION, heading)
    shown = {name: (kind.strip(), required.strip(), default.strip())
             for name, kind, required, default, meaning in ROW.findall(body)}
    expected = expected_rows(cls)
    assert shown.keys() == expected.keys(), (
        f"SPEC.md {heading}: the table's fields differ from {cls.__name__}'s: "
        f"missing {sorted(expected.keys() - shown.keys())}, extra {sorted(shown.keys() - expected.keys())}")
    for name, row in expected.items():
        assert shown[name] == row, f"SPEC.md {heading}, field `{name}`: (type, required, default) should be {row}"
    for name, _, _, _, meaning in ROW.findall(body):
        assert meaning.strip(), f"SPEC.md {heading}, field `{name}` has no meaning"
    if cls in ALL_MESSAGES:
        type_row = next(row for row in ROW.findall(body) if row[0] == "type")
        assert f'`"{tag(cls)}"`' in type_row[4]


def test_spec_documents_no_message_that_does_not_exist():
    documented = re.findall(r"^### `(\w+)`", MESSAGES_SECTION, re.M)
    assert sorted(documented) == sorted(struct_heading(cls)[5:-1] for cls in STRUCTS)


def test_spec_mentions_every_tag_and_field_name():
    """Plainly: every tag and every field name of every message appears in SPEC.md as `code`."""
    for cls in STRUCTS:
        if cls in ALL_MESSAGES:
            assert f"`{tag(cls)}`" in SPEC, f"SPEC.md never mentions the message `{tag(cls)}`"
        for field in msgspec.structs.fields(cls):
            assert f"`{field.name}`" in SPEC, f"SPEC.md never mentions {cls.__name__}.{field.name}"


@pytest.mark.parametrize("enum", ENUMS, ids=lambda e: e.__name__)
def test_spec_lists_every_value_of_the_enums(enum):
    """Error codes, end reasons and time-control kinds: the schema lists exactly the enum's values
    and SPEC.md explains each."""
    assert sorted(schema.json_schema()["$defs"][enum.__name__]["enum"]) == sorted(e.value for e in enum)
    for member in enum:
        assert f"`{member.value}`" in SPEC, f"SPEC.md never mentions {enum.__name__} value `{member.value}`"


def test_spec_states_the_constants():
    assert SPEC.startswith(f"# The arbiter engine protocol, version {PROTOCOL_VERSION}\n")
    assert f"{MAX_MESSAGE_SIZE} bytes" in SPEC
    assert "`ARBITER_ENDPOINT`" in SPEC and "`{endpoint}`" in SPEC
    assert "docs/games/einstein.md" in SPEC
    assert "python -m protocol.schema" in SPEC and "protocol/schema.json" in SPEC


# --- SPEC.md: the example session ------------------------------------------------------------


def example_blocks() -> dict[int, tuple[str, str, str, str]]:
    """``{number: (direction, tag, json text, hex dump)}`` of the example session in SPEC.md."""
    pattern = re.compile(r"^#### (\d+)\. (.+?): `(\w+)` \((\d+) bytes\)\n\n```json\n(.*?)\n```\n\n```text\n(.*?)\n```",
                         re.M | re.S)
    blocks = {}
    for number, direction, message_tag, size, as_json, dump in pattern.findall(SPEC):
        blocks[int(number)] = (direction, message_tag, as_json, dump)
        assert len(bytes_of(dump)) == int(size), f"example {number}: the byte count in the heading is wrong"
    return blocks


def bytes_of(dump: str) -> bytes:
    """The bytes of a ``hexdump -C`` style dump (offset, hex columns, |ascii|)."""
    data = bytearray()
    for line in dump.splitlines():
        offset, rest = line.split("  ", 1)
        assert int(offset, 16) == len(data), f"hex dump offset {offset} does not follow the bytes before it"
        data += bytes.fromhex(rest.split("|")[0])
    return bytes(data)


def test_spec_example_session_is_the_generated_one():
    assert schema.render_example_session() in SPEC, f"SPEC.md's example session is out of date: {REGENERATE}"


def test_spec_example_bytes_are_what_the_encoder_produces():
    blocks = example_blocks()
    session = schema.example_session()
    assert sorted(blocks) == list(range(1, len(session) + 1))
    for number, (direction, message) in enumerate(session, 1):
        shown_direction, shown_tag, shown_json, dump = blocks[number]
        data = bytes_of(dump)
        assert (shown_direction, shown_tag) == (direction, tag(type(message)))
        assert data == encode(message), f"example {number} (`{shown_tag}`): the hex in SPEC.md is not the encoding"
        assert decode(data) == message
        assert json.loads(shown_json) == msgspec.to_builtins(message)
    shown_tags = {block[1] for block in blocks.values()}
    assert {tag(Hello), tag(Request), tag(Reply)} <= shown_tags


def test_example_session_is_a_consistent_game():
    (_, hello), (_, welcome), (_, new_game), (_, ready), (_, request), (_, reply), (_, game_over) = (
        schema.example_session())
    assert welcome.protocol_version == hello.protocol_version == PROTOCOL_VERSION
    assert (ready.game_id, ready.seq) == (new_game.game_id, new_game.seq)
    assert (reply.game_id, reply.seq) == (request.game_id, request.seq)
    assert new_game.seq < request.seq < game_over.seq
    assert (new_game.game, new_game.time_control.text, new_game.time_control.base_ms) == ("einstein", "180", 180_000)
    die = int(request.position.split()[2])  # EinStein's position shows the die rolled for the move
    assert (request.kind, die, request.time_left_ms) == ("move", 3, request.clocks_ms[request.seat])
    seed = bytes.fromhex(game_over.dice_seed)
    assert hashlib.sha256(seed).hexdigest() == new_game.dice_commitment
    assert roll_as_specified(seed, new_game.match_id, new_game.game_number, 0, 6)[0] + 1 == die


def test_example_session_is_real_einstein():
    """The example's options, position, state, ply and move are what the EinStein rules give."""
    _, _, (_, new_game), _, (_, request), (_, reply), _ = schema.example_session()
    game = games.load_game(new_game.game)  # the example is checked against the real rules, never skipped
    assert new_game.options == game.options
    assert new_game.seat_roles == list(game.seat_roles)
    state = game.new_initial_state()
    state.apply_joint(dict(enumerate(request.last_moves)))
    state.apply_chance(int(request.position.split()[2]))
    assert request.ply == 3  # two set-ups and a roll
    assert state.observation(request.seat) == request.position
    assert state.observation_data(request.seat) == request.state
    assert state.decision_kind(request.seat) == request.kind
    assert reply.move in state.legal_moves(request.seat)


# --- SPEC.md: the dice test vector -----------------------------------------------------------


def roll_as_specified(seed: bytes, match_id: str, game_number: int, index: int, n: int) -> tuple[int, list[int]]:
    """SPEC.md's dice algorithm, read literally: (outcome index, the u of every attempt)."""
    attempts = []
    while True:
        msg = f"{match_id}|{game_number}|{index}|{len(attempts)}".encode()
        (u,) = struct.unpack(">Q", hmac.new(seed, msg, hashlib.sha256).digest()[:8])
        attempts.append(u)
        if u < 2**64 - 2**64 % n:
            return u % n, attempts


SEED, MATCH, GAME = schema.EXAMPLE_SEED, "m6", 1
REJECTED_ROLL = 7
"""A roll index that, with n = 2**63 + 1, is rejected once before it is accepted."""


def test_spec_dice_test_vector():
    dice = section(SPEC, "## Dice")
    assert SEED == bytes(range(32))
    assert f"`match_id` = `{MATCH}`, `game_number` = {GAME}" in dice
    assert hashlib.sha256(SEED).hexdigest() in dice
    mac = hmac.new(SEED, f"{MATCH}|{GAME}|0|0".encode(), hashlib.sha256).digest()
    assert f"mac = `{mac.hex()}`" in dice
    u = int.from_bytes(mac[:8], "big")
    assert f"u = `0x{mac[:8].hex()}` = {u} < limit, outcome index = u mod 6 = {u % 6}, die {u % 6 + 1}." in dice
    outcomes = [roll_as_specified(SEED, MATCH, GAME, i, 6)[0] for i in range(12)]
    assert f"outcome indices: `{' '.join(map(str, outcomes))}`" in dice
    assert f"EinStein dice\n  `{' '.join(str(k + 1) for k in outcomes)}`" in dice
    outcome, attempts = roll_as_specified(SEED, MATCH, GAME, REJECTED_ROLL, 2**63 + 1)
    assert len(attempts) == 2, "the rejection example must need exactly two attempts"
    assert f"roll {REJECTED_ROLL} with *n* = 2^63 + 1" in dice
    assert f"gives u = {attempts[0]} ≥ limit" in dice
    assert f"gives\n  u = {attempts[1]}, accepted: outcome index {outcome}." in dice


def test_spec_dice_algorithm_is_the_referees():
    def referee_roll(index: int, n: int) -> int:  # a game's default stream is "match_id|game_number"
        return dice.derive_roll(SEED, dice.stream_name(MATCH, GAME), index, n)

    for index in range(50):
        for n in (2, 6, 720, 2**63 + 1):
            assert referee_roll(index, n) == roll_as_specified(SEED, MATCH, GAME, index, n)[0], (index, n)
    assert dice.commitment(SEED) == hashlib.sha256(SEED).hexdigest()


# --- SPEC.md: the decoder's texts ------------------------------------------------------------


@pytest.mark.parametrize("wire", [
    b"",
    b"\xc1",
    msgspec.msgpack.encode({"type": "ping"})[:-1],
    msgspec.msgpack.encode(["hello"]),
    msgspec.msgpack.encode({"type": "bogus"}),
    msgspec.msgpack.encode({"seq": 1}),
    msgspec.msgpack.encode({"type": "reply"}),
    msgspec.msgpack.encode({"type": "new_game", "game": "einstein", "seat": 0, "seats": [], "time_control": {"text": "1"}}),
    msgspec.msgpack.encode({"type": "reply", "move": "a", "info": {"nodes": "many"}}),
    b"\x00" * (MAX_MESSAGE_SIZE + 1),
], ids=["empty", "not-msgpack", "truncated", "array", "unknown-type", "no-type", "missing-field",
        "missing-embedded-field", "wrong-type", "oversize"])
def test_spec_quotes_the_decoders_texts(wire):
    with pytest.raises(ProtocolError) as info:
        decode(wire)
    table = section(SPEC, "## Errors and forfeits").replace("\\|", "|")
    assert f"`{info.value}`" in table or f"`` {info.value} ``" in table, f"SPEC.md does not quote {str(info.value)!r}"
