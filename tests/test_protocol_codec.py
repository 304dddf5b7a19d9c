"""The codec: every message round-trips; anything else is a ProtocolError that says what is wrong.

The error texts are asserted exactly: they reach engine authors verbatim (in an ``error``
message and in ``game_over.detail``), so a change of wording should be a deliberate one.
"""
from __future__ import annotations

import msgspec
import pytest

from protocol import codec
from protocol.codec import MAX_MESSAGE_SIZE, ProtocolError, decode, encode
from protocol.messages import (ALL_MESSAGES, EngineOption, Error, GameOver, Hello, Info, Message, NewGame, Ping, Pong, Quit,
                               Ready, Reject, Reply, Request, TimeControl, Welcome)

G = {"game_id": "m7.3", "seq": 12}
"""Non-default common fields, so that the round trip exercises them too."""

SAMPLES: dict[type[Message], Message] = {
    m.__class__: m for m in [
        Hello(game_id="", seq=5, name="demo", author="A. Author", version="2.1", protocol_version=1,
              games=["einstein", "smess"], wants_legal_moves=True, wants_state=True, wants_game_info=True,
              options=[EngineOption(name="depth", type="spin", default=3, min=1, max=9, description="plies"),
                       EngineOption(name="style", type="combo", default="calm", choices=["calm", "wild"])],
              max_games=2, secret="9f2c"),
        Welcome(seq=5, referee="arbiter 0.1.0", protocol_version=1),
        Reject(seq=5, reason="unsupported protocol_version 9; this referee speaks 1"),
        NewGame(**G, game="einstein", options={"setup": "random", "depth": [1, 2.5, None]},
                engine_options={"depth": 5, "ponder": True, "style": "wild"},
                game_info={"board": {"files": 7, "arrows": {"a1": ["N"]}}}, seat=1,
                seats=["demo", "rival"], seat_roles=["red", "blue"],
                time_control=TimeControl(text="60+3x10", kind="byo_yomi", base_ms=60_000, increment_ms=1,
                                         moves=2, periods=3, period_ms=10_000),
                dice_commitment="ab" * 32, match_id="m7", game_number=3, dice_stream="m7|3"),
        Ready(**G),
        Request(**G, kind="setup", seat=1, position="pos ü", state={"board": [[0, 1], [2, 3]], "turn": 1},
                ply=4, clocks_ms=[1000, 2000], time_left_ms=1000, legal_moves=["a", "b"],
                last_moves=["x", "y"]),
        Reply(**G, move="a", info=Info(score=-0.5, nodes=10, depth=3, pv=["a", "b"], time_ms=7, comment="hm")),
        GameOver(**G, returns=[-1.0, 1.0], reason="illegal_move", detail="seat 0: 'q9' is not a legal move",
                 dice_seed="cd" * 32),
        Ping(**G),
        Pong(**G),
        Error(**G, code="malformed", message="not msgpack"),
        Quit(**G),
    ]
}


def as_map(message: Message) -> dict:
    """The message as the plain msgpack map a peer in another language would build."""
    return msgspec.to_builtins(message)


def pack(value) -> bytes:
    return msgspec.msgpack.encode(value)


def decode_error(data: bytes) -> str:
    with pytest.raises(ProtocolError) as info:
        decode(data)
    return str(info.value)


AT_DEFAULT = {(Hello, "game_id"), (Welcome, "game_id"), (Reject, "game_id"),
              (Hello, "protocol_version"), (Welcome, "protocol_version")}
"""Sample fields left at their default: there is no other valid value for them."""


def test_samples_cover_every_message_and_every_field():
    assert set(SAMPLES) == set(ALL_MESSAGES)
    for cls, sample in SAMPLES.items():
        for field in msgspec.structs.fields(cls):
            if field.required or (cls, field.name) in AT_DEFAULT:
                continue
            default = field.default if field.default_factory is msgspec.NODEFAULT else field.default_factory()
            assert getattr(sample, field.name) != default, f"{cls.__name__}.{field.name} is left at its default"


# --- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
def test_round_trip(cls):
    message = SAMPLES[cls]
    decoded = decode(encode(message))
    assert type(decoded) is cls
    assert decoded == message


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
def test_wire_form_is_a_map_with_string_keys_tagged_by_type(cls):
    wire = msgspec.msgpack.decode(encode(SAMPLES[cls]))
    assert isinstance(wire, dict)
    assert all(isinstance(key, str) for key in wire)
    assert wire["type"] == cls.__struct_config__.tag
    assert {"game_id", "seq"} <= set(wire)


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
def test_optional_fields_may_be_omitted(cls):
    """A peer may send only ``type`` and the required fields: the defaults apply."""
    required = {f.name for f in msgspec.structs.fields(cls) if f.required}
    wire = {k: v for k, v in as_map(SAMPLES[cls]).items() if k == "type" or k in required}
    decoded = decode(pack(wire))
    assert decoded == cls(**{name: getattr(SAMPLES[cls], name) for name in required})


def test_key_order_does_not_matter():
    wire = as_map(SAMPLES[Request])
    assert decode(pack(dict(reversed(list(wire.items()))))) == SAMPLES[Request]


def test_integers_are_accepted_for_float_fields():
    wire = {**as_map(SAMPLES[GameOver]), "returns": [1, -1]}
    assert decode(pack(wire)).returns == [1.0, -1.0]


# --- forward compatibility -------------------------------------------------------------------


def test_unknown_top_level_fields_are_ignored():
    wire = {**as_map(SAMPLES[Request]), "new_field": 1, "another": {"nested": [1, "two", None]}}
    assert decode(pack(wire)) == SAMPLES[Request]


def test_unknown_fields_in_embedded_maps_are_ignored():
    new_game = as_map(SAMPLES[NewGame])
    new_game["time_control"]["delay_ms"] = 300
    assert decode(pack(new_game)) == SAMPLES[NewGame]
    reply = as_map(SAMPLES[Reply])
    reply["info"]["hashfull"] = 0.5
    assert decode(pack(reply)) == SAMPLES[Reply]


@pytest.mark.parametrize("cls", ALL_MESSAGES, ids=lambda c: c.__name__)
def test_every_message_ignores_unknown_fields(cls):
    assert decode(pack({**as_map(SAMPLES[cls]), "x_future": [1, 2]})) == SAMPLES[cls]


# --- malformed input: exact error texts ------------------------------------------------------


def test_empty_bytes():
    assert decode_error(b"") == "empty message"


def test_bytes_that_are_not_msgpack():
    assert decode_error(b"\xc1") == r"not msgpack: MessagePack data is malformed: invalid opcode '\xc1' (byte 0)"


def test_truncated_message_at_every_length():
    data = encode(SAMPLES[Request])
    for end in range(1, len(data)):
        assert decode_error(data[:end]) == "not msgpack: Input data was truncated", f"cut at byte {end}"


def test_two_messages_in_one_frame():
    data = encode(SAMPLES[Ping])
    assert decode_error(data + data) == (
        f"not msgpack: MessagePack data is malformed: trailing characters (byte {len(data)})")


def test_unknown_type():
    assert decode_error(pack({"type": "bogus", "seq": 1})) == "invalid message: Invalid value 'bogus' - at `$.type`"


def test_a_decoder_text_quoting_a_huge_value_is_cut():
    """The decoder quotes a bad tag or enum value; sent back in ``error`` and ``game_over.detail`` (to
    the opponent too), a 1 MiB one made those messages exceed the frame limit."""
    for message in ({"type": "x" * 1_000_000}, {"type": "error", "code": "y" * 1_000_000, "message": "m"}):
        text = decode_error(pack(message))
        assert len(text) == codec.DETAIL_LIMIT and text.endswith("..."), text[:80]
    assert text.startswith("invalid message: Invalid enum value 'yyy")


DEEP = b"\x91" * 100_000 + b"\x01"  # an array in an array in ... (100 KB)


@pytest.mark.parametrize("data", [
    b"\x83\xa4type\xa5reply\xa4move\xa1a\xa1x" + DEEP,  # an unknown field of a valid reply
    b"\x83\xa4type\xa5hello\xa4name\xa1n\xa7options\x91\x83\xa4name\xa1o\xa4type\xa5check\xa7default" + DEEP,
])
def test_values_nested_too_deeply_are_malformed_not_a_crash(data):
    """They raised ``RecursionError``, which no caller expects: it ended the whole match."""
    assert decode_error(data) == codec.NESTED_TOO_DEEPLY


def test_missing_type():
    assert decode_error(pack({"seq": 1, "move": "a"})) == "invalid message: Object missing required field `type`"


def test_type_of_the_wrong_type():
    assert decode_error(pack({"type": 1})) == "invalid message: Expected `str`, got `int` - at `$.type`"


REQUIRED = [(cls, f.name) for cls in ALL_MESSAGES for f in msgspec.structs.fields(cls) if f.required]


@pytest.mark.parametrize("cls,field", REQUIRED, ids=[f"{c.__name__}.{f}" for c, f in REQUIRED])
def test_missing_required_field_is_named(cls, field):
    wire = as_map(SAMPLES[cls])
    del wire[field]
    assert decode_error(pack(wire)) == f"invalid message: Object missing required field `{field}`"


def test_missing_required_field_of_an_embedded_map_names_its_path():
    wire = as_map(SAMPLES[NewGame])
    del wire["time_control"]["kind"]
    assert decode_error(pack(wire)) == "invalid message: Object missing required field `kind` - at `$.time_control`"


@pytest.mark.parametrize("cls,field,value,expected", [
    (Hello, "name", 5, "Expected `str`, got `int` - at `$.name`"),
    (Hello, "name", b"demo", "Expected `str`, got `bytes` - at `$.name`"),
    (Hello, "wants_legal_moves", "yes", "Expected `bool`, got `str` - at `$.wants_legal_moves`"),
    (Reply, "move", None, "Expected `str`, got `None` - at `$.move`"),
    (Reply, "seq", 1.5, "Expected `int`, got `float` - at `$.seq`"),
    (Reply, "info", [1], "Expected `object | null`, got `array` - at `$.info`"),
    (Reply, "info", {"nodes": "many"}, "Expected `int | null`, got `str` - at `$.info.nodes`"),
    (Request, "clocks_ms", [1000, "2000"], "Expected `int`, got `str` - at `$.clocks_ms[1]`"),
    (Request, "ply", "3", "Expected `int`, got `str` - at `$.ply`"),
    (NewGame, "time_control", {"text": "180", "kind": "sudden_death", "base_ms": "3m"},
     "Expected `int`, got `str` - at `$.time_control.base_ms`"),
    (NewGame, "options", {1: "x"}, "Expected `str`, got `int` - at `key` in `$.options`"),
    (Hello, "max_games", 0, "Expected `int` >= 1 - at `$.max_games`"),  # was taken as 1 without a word
], ids=lambda v: v.__name__ if isinstance(v, type) else None)
def test_wrong_field_type_names_the_path(cls, field, value, expected):
    wire = {**as_map(SAMPLES[cls]), field: value}
    assert decode_error(pack(wire)) == f"invalid message: {expected}"


def test_oversize_message():
    def request_of_size(size: int) -> bytes:
        base = len(encode(Request(kind="move", seat=0, position="")))
        for pad in range(size - base - 8, size - base + 1):  # the str header grows with the length
            data = encode(Request(kind="move", seat=0, position="." * pad))
            if len(data) == size:
                return data
        raise AssertionError(f"cannot build a request of {size} bytes")

    assert decode(request_of_size(MAX_MESSAGE_SIZE)).kind == "move"
    too_big = request_of_size(MAX_MESSAGE_SIZE + 1)
    assert decode_error(too_big) == f"message of {MAX_MESSAGE_SIZE + 1} bytes exceeds the 1048576-byte limit"
    assert decode_error(b"\x00" * (10 * MAX_MESSAGE_SIZE)) == (
        f"message of {10 * MAX_MESSAGE_SIZE} bytes exceeds the 1048576-byte limit")


def test_max_message_size_is_one_mebibyte():
    assert codec.MAX_MESSAGE_SIZE == 1048576


@pytest.mark.parametrize("value", [["hello", "demo"], [], list(as_map(SAMPLES[Hello]).items())],
                         ids=["array", "empty-array", "array-of-pairs"])
def test_array_instead_of_map(value):
    assert decode_error(pack(value)) == "invalid message: Expected `object`, got `array`"


@pytest.mark.parametrize("value,got", [(5, "int"), ("hello", "str"), (None, "None"), (b"\x81", "bytes")])
def test_scalar_instead_of_map(value, got):
    assert decode_error(pack(value)) == f"invalid message: Expected `object`, got `{got}`"


def test_map_with_a_non_string_key():
    assert decode_error(pack({1: 2})) == "invalid message: Expected `str`, got `int` - at `key` in `$`"
