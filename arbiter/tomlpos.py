"""Where each key of a TOML document is: ``('engines', 1, 'command') -> line 14``.

``tomllib`` parses and reports syntax errors with their line, but the dictionaries it returns
forget where things were. This lenient scanner walks the same text (already known to be valid
TOML) and records the line of every key, table header and array element, so that a *semantic*
error ("time_control: bad value") can name the line too.
"""
from __future__ import annotations

Path = tuple  # a key path: str keys and int array indices


class _Scanner:
    def __init__(self, text: str):
        self.s = text
        self.i = 0
        self.line = 1
        self.lines: dict[Path, int] = {}
        self.array_tables: dict[tuple[str, ...], int] = {}

    # --- characters -------------------------------------------------------------------------

    def peek(self, n: int = 1) -> str:
        return self.s[self.i:self.i + n]

    def advance(self, n: int = 1) -> None:
        chunk = self.s[self.i:self.i + n]
        self.line += chunk.count("\n")
        self.i += n

    def at_end(self) -> bool:
        return self.i >= len(self.s)

    def skip_space(self, newlines: bool) -> None:
        while not self.at_end():
            c = self.peek()
            if c in " \t\r" or (newlines and c == "\n"):
                self.advance()
            elif c == "#":
                while not self.at_end() and self.peek() != "\n":
                    self.advance()
            else:
                return

    # --- pieces -----------------------------------------------------------------------------

    def string(self) -> str:
        for quote in ('"""', "'''"):
            if self.peek(3) == quote:
                self.advance(3)
                start = self.i
                while not self.at_end() and self.peek(3) != quote:
                    self.advance(2 if quote[0] == '"' and self.peek() == "\\" else 1)
                text = self.s[start:self.i]
                self.advance(3)
                while self.peek() == quote[0]:  # up to two quotes may end the content
                    self.advance()
                return text
        quote = self.peek()
        self.advance()
        start = self.i
        while not self.at_end() and self.peek() != quote and self.peek() != "\n":
            self.advance(2 if quote == '"' and self.peek() == "\\" else 1)
        text = self.s[start:self.i]
        self.advance()
        return text

    def key(self) -> list[str]:
        parts: list[str] = []
        while True:
            self.skip_space(False)
            if self.peek() in ('"', "'"):
                parts.append(self.string())
            else:
                start = self.i
                while not self.at_end() and (self.peek().isalnum() or self.peek() in "-_"):
                    self.advance()
                parts.append(self.s[start:self.i])
            self.skip_space(False)
            if self.peek() == ".":
                self.advance()
                continue
            return parts

    def value(self, path: Path) -> None:
        self.skip_space(False)
        c = self.peek()
        if c in ('"', "'"):
            self.string()
        elif c == "[":
            self.advance()
            index = 0
            while True:
                self.skip_space(True)
                if self.peek() == "]" or self.at_end():
                    self.advance()
                    return
                self.lines.setdefault(path + (index,), self.line)
                self.value(path + (index,))
                index += 1
                self.skip_space(True)
                if self.peek() == ",":
                    self.advance()
        elif c == "{":
            self.advance()
            while True:
                self.skip_space(False)
                if self.peek() == "}" or self.at_end():
                    self.advance()
                    return
                keys = self.key()
                self.lines.setdefault(path + tuple(keys), self.line)
                if self.peek() == "=":
                    self.advance()
                self.value(path + tuple(keys))
                self.skip_space(False)
                if self.peek() == ",":
                    self.advance()
        else:
            while not self.at_end() and self.peek() not in ",]}\n#":
                self.advance()

    def resolve(self, keys: list[str]) -> Path:
        """A header's key path with the current index of every array of tables on it."""
        out: list = []
        plain: tuple[str, ...] = ()
        for k in keys:
            plain += (k,)
            out.append(k)
            if plain in self.array_tables:
                out.append(self.array_tables[plain])
        return tuple(out)

    def document(self) -> dict[Path, int]:
        prefix: Path = ()
        while True:
            self.skip_space(True)
            if self.at_end():
                return self.lines
            if self.peek(2) == "[[":
                line = self.line
                self.advance(2)
                keys = self.key()
                self.advance(2)
                plain = tuple(keys)
                self.array_tables[plain] = self.array_tables.get(plain, -1) + 1
                prefix = self.resolve(keys)
                self.lines.setdefault(prefix[:-1], line)
                self.lines[prefix] = line
            elif self.peek() == "[":
                line = self.line
                self.advance()
                keys = self.key()
                self.advance()
                prefix = self.resolve(keys)
                self.lines.setdefault(prefix, line)
            else:
                line = self.line
                keys = self.key()
                path = prefix + tuple(keys)
                for n in range(len(prefix) + 1, len(path) + 1):
                    self.lines.setdefault(path[:n], line)
                self.skip_space(False)
                if self.peek() == "=":
                    self.advance()
                self.value(path)


def key_lines(text: str) -> dict[Path, int]:
    """The 1-based line of every key path in a valid TOML document (best effort: a path that
    cannot be found is simply absent)."""
    try:
        return _Scanner(text).document()
    except Exception:  # a scanner bug must never hide the real error message
        return {}


def dotted(path: Path) -> str:
    """``('engines', 1, 'command')`` -> ``engines[1].command``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + (part if part.replace("-", "").replace("_", "").isalnum() else f'"{part}"')
    return out
