"""Small helpers the games' ``render_svg`` share: an SVG document, escaped text, a text board."""
from __future__ import annotations

from html import escape


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def document(width: float, height: float, body: list[str], title: str = "") -> str:
    """An SVG element that scales to its container (the page sizes it)."""
    head = f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:g} {height:g}" class="board">'
    if title:
        head += f"<title>{esc(title)}</title>"
    return head + "".join(body) + "</svg>"


def text_board(text: str) -> str:
    """A game without a drawing of its own: its text board, set in a monospace font."""
    lines = text.splitlines() or [""]
    width = max(len(line) for line in lines) * 7.2 + 16
    body = ['<rect width="100%" height="100%" fill="#fbfaf5"/>',
            '<text font-family="monospace" font-size="12" fill="#222">']
    body += [f'<tspan x="8" y="{18 + 15 * i}" xml:space="preserve">{esc(line)}</tspan>' for i, line in enumerate(lines)]
    body.append("</text>")
    return document(width, 15 * len(lines) + 12, body)
