"""How wide a line of SVG text is drawn, estimated without a font, and lines wrapped to a width.

SVG does not wrap text and clips what crosses its edge, so the heatmap sizes its cells and wraps
its legend from these estimates. They are per-character advances of DejaVu Sans (the widest of
the usual ``sans-serif`` faces: Liberation Sans and Arial draw narrower), rounded up, so a line
estimated to fit does fit whichever of them the reader's browser picks.
"""

from __future__ import annotations

#: advance widths as a fraction of the font size; a character not listed takes DEFAULT
_NARROW = frozenset("iljtfrI.,:;'|!()[]{} ")
_WIDE = frozenset("mwMW%~=+<>\u00b1\u2264\u2265")
_DIGITS = frozenset("0123456789")
NARROW, DIGIT, DEFAULT, UPPER, WIDE, OTHER = 0.42, 0.64, 0.62, 0.8, 0.99, 1.0
#: bold glyphs run wider; a margin covers kerning and rounding in the browser
BOLD, MARGIN = 1.12, 1.04


def _advance(char: str) -> float:
    if char in _NARROW:
        return NARROW
    if char in _DIGITS:
        return DIGIT
    if char in _WIDE:
        return WIDE
    if not char.isascii():
        return OTHER  # symbols such as the star: as wide as the font draws them at most
    if char.isupper():
        return UPPER
    return DEFAULT


def text_width(text: str, size: float, *, bold: bool = False) -> float:
    """The width ``text`` takes at ``size`` px, never less than a browser draws it."""
    width = sum(_advance(char) for char in text) * size * MARGIN
    return width * BOLD if bold else width


def wrap(text: str, width: float, size: float, *, bold: bool = False) -> list[str]:
    """``text`` broken at spaces into lines no wider than ``width``; a word wider than that on
    its own is broken between characters."""
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else word
        if text_width(candidate, size, bold=bold) <= width:
            line = candidate
            continue
        if line:
            lines.append(line)
        line = ""
        for char in word:
            if line and text_width(line + char, size, bold=bold) > width:
                lines.append(line)
                line = ""
            line += char
    if line or not lines:
        lines.append(line)
    return lines
