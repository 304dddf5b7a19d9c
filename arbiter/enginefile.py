"""Engine tables in TOML: the ``[[engines]]`` of a tournament file, and an engines file of them
shared by events and by ``arbiter match --engines-file`` (docs/tournaments.md, "An engines file").

One home for what an engine entry may say (``ENGINE_KEYS``), how it is checked (``engine_spec``,
errors naming ``FILE:LINE: engines[i].key``) and what it becomes (``EngineSpec``).
"""
from __future__ import annotations

import difflib
import math
import re
import shlex
import sys
import tomllib
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .hosting import EngineConfig, Limits, SandboxMode, parse_cpus
from .tomlpos import dotted, key_lines

ENGINE_KEYS = {
    "name": "unique display name (required)",
    "use": "the engine of this name in the engines_file, with this table's other keys over its own",
    "command": "command line: a string or a list; {python} is this Python",
    "remote": "instead of command: the participant of the [remote] roster who runs this engine on its own machine",
    "cwd": "working directory",
    "options": "table of values for the options the engine declares in its hello (arbiter engine-info CMD)",
    "args": "table of command-line flags, appended as --key value (true: --key; false: omitted)",
    "env": "table of extra environment variables",
    "restart": "start a fresh process for every game",
    "handshake_timeout": "seconds to wait for hello",
    "ready_timeout": "seconds to wait for ready",
    "sandbox": "auto | required | none",
    "ponder": "may it think on the opponent's time",
    "cpus": "pin it to CPU cores: \"1\", \"0,2-3\" or [0, 2] (keep engines on disjoint cores)",
    "limits": "table: memory_mb, processes, open_files, log_mb, log_total_mb, info_chars, disk_mb (over the event's defaults)",
}
ALIASES = {"cmd": "command", "exe": "command", "program": "command", "setoption": "options", "option": "options",
           "flags": "args", "dir": "cwd",
           "workdir": "cwd", "tc": "time_control", "jobs": "concurrency", "threads": "concurrency",
           "db": "output", "engine": "engines", "ratinginterval": "rating_interval"}
"""Names other tools use for our keys: suggested before spelling neighbours (``cmd`` is nearer to ``cwd``)."""


BOM_PROBLEM = ("starts with a byte order mark (U+FEFF: some Windows editors begin UTF-8 files with it), which "
               "TOML does not allow; save the file as UTF-8 without BOM")


class ConfigError(ValueError):
    """A problem in a tournament or engines file; the message names the file, line and key."""


@dataclass
class EngineSpec:
    """One engine as an event describes it (checked); ``engine_config`` is how it is started."""

    name: str
    command: list[str]
    cwd: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    """Values for the options the engine declares in its hello (checked at the handshake)."""
    options_at: dict[str, str] = field(default_factory=dict)
    """Where each option was given (``file:line: key``): named when the engine refuses its value."""
    args: dict[str, Any] = field(default_factory=dict)
    """Command-line flags appended to ``command``."""
    env: dict[str, str] = field(default_factory=dict)
    restart: bool = False
    handshake_timeout: float = 10.0
    ready_timeout: float = 10.0
    sandbox: SandboxMode = SandboxMode.AUTO
    ponder: bool = False
    limits: Limits = field(default_factory=Limits)
    cpus: tuple[int, ...] | None = None
    remote: str | None = None
    """The roster participant who connects this engine over tcp (then ``command`` is empty)."""

    def argv(self) -> list[str]:
        out = [sys.executable if p == "{python}" else p.replace("{python}", sys.executable) for p in self.command]
        for key, value in self.args.items():
            if value is True:
                out.append(f"--{key}")
            elif value is False or value is None:
                continue
            else:
                out += [f"--{key}", str(value)]
        return out

    def engine_config(self, hide: tuple[str, ...] = ()) -> EngineConfig:
        if self.remote:
            return EngineConfig(command=None, name=self.name, participant=self.remote,
                                ready_timeout=self.ready_timeout, limits=self.limits, options=dict(self.options))
        return EngineConfig(command=self.argv(), name=self.name, cwd=self.cwd, env=dict(self.env),
                            restart_each_game=self.restart, handshake_timeout=self.handshake_timeout,
                            ready_timeout=self.ready_timeout, hide=hide, sandbox=self.sandbox, ponder=self.ponder,
                            limits=self.limits, cpus=self.cpus, options=dict(self.options))


class Checker:
    """Reads values out of the parsed document, raising ConfigError with file:line: key."""

    def __init__(self, source: str, text: str):
        self.source = source
        self.lines = key_lines(text)

    def line_of(self, path: tuple) -> int | None:
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return None

    def where(self, path: tuple) -> str:
        """``file:line: key`` of ``path`` (the line of its nearest enclosing key found)."""
        line = self.line_of(path)
        where = f"{self.source}:{line}" if line else self.source
        return f"{where}: {dotted(path)}" if path else where

    def error(self, path: tuple, message: str) -> ConfigError:
        return ConfigError(f"{self.where(path)}: {message}")

    def unknown_keys(self, table: dict, allowed: dict, path: tuple) -> None:
        for key in table:
            if key not in allowed:
                close = [ALIASES[key]] if ALIASES.get(key) in allowed else \
                    difflib.get_close_matches(key, list(allowed), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(allowed)}"
                raise self.error(path + (key,), f"unknown key{hint}")

    def get(self, table: dict, key: str, path: tuple, types: type | tuple, default: Any = ..., what: str = "") -> Any:
        if key not in table:
            if default is ...:
                header = f" in [{dotted(path)}]" if path else ""
                raise self.error(path, f"missing required key {key!r}{header}") if path else \
                    ConfigError(f"{self.source}: missing required key {key!r}")
            return default
        value = table[key]
        if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
            raise self.error(path + (key,), f"expected {what or _type_names(types)}, got {value!r}")
        if not isinstance(value, types):
            raise self.error(path + (key,), f"expected {what or _type_names(types)}, got {value!r}")
        if isinstance(value, str) and "\0" in value:  # no path, command or name can hold it
            raise self.error(path + (key,), "must not hold a NUL character")
        if isinstance(value, float) and not math.isfinite(value) and str not in _as_tuple(types):
            # TOML's nan and inf: no count, time or rating (a text key, a time control, reads 'inf' itself)
            raise self.error(path + (key,), f"expected a finite number, got {value!r}")
        return value

    def seconds(self, table: dict, key: str, path: tuple, default: float) -> float:
        """A timeout: a number of seconds above 0 (at 0 or below an engine could never answer in time)."""
        value = float(self.get(table, key, path, (int, float), default))
        if value <= 0:
            raise self.error(path + (key,), f"must be more than 0 seconds, got {value:g}")
        return value


def check_sandbox(c: "Checker", table: dict, path: tuple, default: SandboxMode = SandboxMode.AUTO) -> SandboxMode:
    value = c.get(table, "sandbox", path, str, default.value)
    try:
        return SandboxMode(value)
    except ValueError:
        raise c.error(path + ("sandbox",), f"expected one of {', '.join(m.value for m in SandboxMode)}, "
                                           f"got {value!r}") from None


def check_cpus(c: "Checker", table: dict, path: tuple) -> tuple[int, ...] | None:
    try:
        return parse_cpus(table.get("cpus"))
    except ValueError as exc:
        raise c.error(path + ("cpus",), str(exc)) from None


def check_limits(c: "Checker", table: dict, path: tuple, base: Limits) -> Limits:
    raw = c.get(table, "limits", path, dict, {})
    for key, value in raw.items():
        try:
            Limits.from_mapping({key: value}, base)
        except ValueError as exc:
            raise c.error(path + ("limits", key), str(exc)) from None
    try:
        return Limits.from_mapping(raw, base)
    except ValueError as exc:
        raise c.error(path + ("limits",), str(exc)) from None


def _as_tuple(types: type | tuple) -> tuple:
    return types if isinstance(types, tuple) else (types,)


def _type_names(types: type | tuple) -> str:
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false", dict: "a table",
             list: "an array"}
    types = _as_tuple(types)
    return " or ".join(dict.fromkeys(names.get(t, t.__name__) for t in types))




@dataclass(frozen=True)
class EngineDefaults:
    """An event's defaults for its engines' keys (a tournament file's top-level ``restart``...)."""

    restart: bool = False
    sandbox: SandboxMode = SandboxMode.AUTO
    ponder: bool = False
    limits: Limits = field(default_factory=Limits)


def engine_options(c: Checker, table: dict, path: tuple, key: str) -> dict[str, Any]:
    """An engine's ``options`` (checked against its hello when it starts) or ``args`` table."""
    values = c.get(table, key, path, dict, {})
    for k, v in values.items():
        if isinstance(v, (dict, list)) or isinstance(v, float) and key == "options":
            raise c.error(path + (key, k), "an engine option must be a string, an integer or true/false"
                          if key == "options" else "a command-line flag's value must be a string, number or boolean")
    return dict(values)


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot name an engine, if it cannot: a control character (a newline, an escape
    sequence, a bidirectional override) or a line break would split or garble the one line it
    takes in records, text exports, tables and logs."""
    bad = next((ch for ch in name if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp")), None)
    return None if bad is None else f"must not hold a control character or line break ({bad!r} at position " \
                                    f"{name.index(bad) + 1})"


def engine_name(c: Checker, e: dict, p: tuple) -> str:
    """The engine table's ``name``: not empty, on one line (``name_problem``)."""
    name = c.get(e, "name", p, str)
    if not name.strip():
        raise c.error(p + ("name",), "must not be empty")
    if problem := name_problem(name):
        raise c.error(p + ("name",), problem)
    return name


def engine_spec(c: Checker, e: dict, p: tuple, defaults: EngineDefaults, check_paths: bool = True) -> EngineSpec:
    """One engine table with a ``command`` (not a remote one), checked; errors name ``p``'s line."""
    name = engine_name(c, e, p)
    command = c.get(e, "command", p, (str, list))
    if isinstance(command, str):
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise c.error(p + ("command",), f"cannot split the command line: {exc}") from None
    else:
        if not all(isinstance(a, str) for a in command):
            raise c.error(p + ("command",), "a command list must hold only strings")
        argv = list(command)
    if not argv:
        raise c.error(p + ("command",), "must not be empty")
    if any("\0" in a for a in argv):
        raise c.error(p + ("command",), "must not hold a NUL character (no program can receive it)")
    cwd = c.get(e, "cwd", p, str, None)
    if cwd is not None and check_paths and not Path(cwd).is_dir():
        raise c.error(p + ("cwd",), f"no such directory: {cwd}")
    options = engine_options(c, e, p, "options")
    flags = engine_options(c, e, p, "args")
    env = c.get(e, "env", p, dict, {})
    for k, v in env.items():
        if not k or "=" in k or "\0" in k:
            raise c.error(p + ("env", k), f"not an environment variable name: {k!r} (empty, or holds '=' or NUL)")
        if not isinstance(v, (str, int, float)) or isinstance(v, bool):
            raise c.error(p + ("env", k), "an environment value must be a string or a number")
        if "\0" in str(v):
            raise c.error(p + ("env", k), "an environment value must not hold a NUL character")
    return EngineSpec(
        name=name, command=argv, cwd=cwd, options=options, args=flags, env={k: str(v) for k, v in env.items()},
        options_at={k: c.where(p + ("options", k)) for k in options},
        restart=c.get(e, "restart", p, bool, defaults.restart),
        handshake_timeout=c.seconds(e, "handshake_timeout", p, 10.0),
        ready_timeout=c.seconds(e, "ready_timeout", p, 10.0),
        sandbox=check_sandbox(c, e, p, defaults.sandbox), ponder=c.get(e, "ponder", p, bool, defaults.ponder),
        limits=check_limits(c, e, p, defaults.limits), cpus=check_cpus(c, e, p))


def toml_document(text: str, source: str) -> dict:
    """``text`` parsed, or ConfigError naming ``source`` and the line of the syntax error."""
    if text.startswith("\ufeff"):  # tomllib: "Invalid statement (column 1)", for a file that looks right
        raise ConfigError(f"{source}:1: {BOM_PROBLEM}")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        msg = str(exc)
        m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
        if m:
            raise ConfigError(f"{source}:{m.group(1)}: TOML syntax error: {msg[:m.start()].strip()} "
                              f"(column {m.group(2)})") from None
        raise ConfigError(f"{source}: TOML syntax error: {msg}") from None


@dataclass
class EnginesFile:
    """An engines file: ``[[engines]]`` tables (the keys of a tournament's, ``remote`` and ``use``
    excepted) that events refer to by name. ``entry`` returns a table with where it came from."""

    source: str
    text: str
    checker: Checker
    tables: dict[str, tuple[int, dict]]
    """Engine name -> (its index in the file's ``engines`` array, its table)."""

    @classmethod
    def parse(cls, text: str, source: str) -> "EnginesFile":
        doc = toml_document(text, source)
        c = Checker(source, text)
        c.unknown_keys(doc, {"engines": "array of tables [[engines]]"}, ())
        raw = c.get(doc, "engines", (), list, ..., what="an array of tables [[engines]]")
        tables: dict[str, tuple[int, dict]] = {}
        for i, e in enumerate(raw):
            p = ("engines", i)
            if not isinstance(e, dict):
                raise c.error(p, "each engine must be a table ([[engines]] with name, command, ...)")
            c.unknown_keys(e, {k: v for k, v in ENGINE_KEYS.items() if k not in ("use", "remote")}, p)
            name = c.get(e, "name", p, str)
            if name in tables:
                raise c.error(p + ("name",), f"duplicate engine name {name!r} (also engines[{tables[name][0]}])")
            engine_spec(c, e, p, EngineDefaults(), check_paths=False)  # every entry checked, used or not
            tables[name] = (i, e)
        if not tables:
            raise ConfigError(f"{source}: no [[engines]] tables")
        return cls(source, text, c, tables)

    @classmethod
    def load(cls, path: str | Path) -> "EnginesFile":
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read the engines file: {getattr(exc, 'strerror', None) or exc}") \
                from None
        return cls.parse(text, str(path))

    def spec(self, name: str, defaults: EngineDefaults = EngineDefaults(), check_paths: bool = True) -> EngineSpec:
        """The engine called ``name`` with an event's ``defaults``; errors name its line in this file."""
        index, table = self.tables[name]
        return engine_spec(self.checker, table, ("engines", index), defaults, check_paths)

    def unknown(self, name: str) -> str:
        """Why ``name`` is not usable: the names the file has."""
        close = difflib.get_close_matches(name, list(self.tables), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return f"no engine named {name!r} in {self.source}{hint} (it has: {', '.join(self.tables)})"
