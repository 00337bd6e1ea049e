"""Final-answer extraction and numeric normalisation for math word problems.

An answer is read from a completion in this order of precedence:

  1. the last `\\boxed{...}` (braces balanced; the convention of MATH-style prompts),
  2. the last `#### n` line (GSM8K's own convention),
  3. the last number in the text (a fallback for models that just state it),

and normalised to a canonical string so that equal values compare equal as text:
thousands separators and a leading "$" dropped, "12.50" -> "12.5", "3.0" -> "3",
simple fractions "3/4" -> "0.75" (when the decimal is exact within 6 places, else
"3/4" in lowest terms), "-0" -> "0". `None` means no answer was found.
"""

from __future__ import annotations

import fractions
import re

_NUMBER = r"-?\$?\d[\d,]*(?:\.\d+)?|-?\$?\.\d+"
_NUMBER_RE = re.compile(_NUMBER)
_HASH_RE = re.compile(r"####\s*(.+)")
_FRACTION_RE = re.compile(r"(-?\d+)\s*/\s*(\d+)")
_FRAC_TEX_RE = re.compile(r"\\d?frac\{(-?\d+)\}\{(\d+)\}")
BOXED = "\\boxed{"


def boxed_contents(text: str) -> list[str]:
    """The contents of every `\\boxed{...}` with balanced braces, in order of their
    openings; an unclosed box is ignored. One pass over the text (a completion full
    of unclosed boxes costs linear time, not quadratic)."""
    found, open_boxes = [], []  # (content start, brace depth inside the box)
    depth, i, n = 0, 0, len(text)
    while i < n:
        if text.startswith(BOXED, i):
            depth += 1
            open_boxes.append((i + len(BOXED), depth))
            i += len(BOXED)
            continue
        char = text[i]
        if char == "{":
            depth += 1
        elif char == "}" and depth > 0:
            if open_boxes and open_boxes[-1][1] == depth:
                start, _ = open_boxes.pop()
                found.append((start, text[start:i]))
            depth -= 1
        i += 1
    return [content for _, content in sorted(found)]


def normalize_number(text: str) -> str | None:
    """Canonical text of one numeric answer, or None if `text` holds no number.

    "1,080" -> "1080"; "$12.50" -> "12.5"; "3.0" -> "3"; "3/4" -> "0.75";
    "\\frac{1}{3}" -> "1/3"; "-0" -> "0"; "x = 7 apples" -> "7" (its last number).
    """
    text = text.strip().replace("\\!", "").replace("{,}", ",")
    tex = _FRAC_TEX_RE.search(text)
    if tex:
        return _fraction(int(tex.group(1)), int(tex.group(2)))
    frac = _FRACTION_RE.fullmatch(text.replace("$", "").strip())
    if frac:
        return _fraction(int(frac.group(1)), int(frac.group(2)))
    numbers = _NUMBER_RE.findall(text)
    if not numbers:
        return None
    raw = numbers[-1].replace(",", "").replace("$", "")
    try:
        value = fractions.Fraction(raw)
    except (ValueError, ZeroDivisionError):
        return None
    return _canonical(value)


def _fraction(numerator: int, denominator: int) -> str | None:
    if denominator == 0:
        return None
    return _canonical(fractions.Fraction(numerator, denominator))


def _canonical(value: fractions.Fraction) -> str:
    """Integers plainly, exact short decimals as decimals, other rationals as p/q."""
    if value.denominator == 1:
        return str(value.numerator)
    scaled = value * 10 ** 6
    if scaled.denominator == 1:  # exact within 6 decimal places
        return f"{float(value):.6f}".rstrip("0").rstrip(".")
    return f"{value.numerator}/{value.denominator}"


def extract_answer(text: str) -> str | None:
    """The completion's normalised final answer (module docstring), or None."""
    for content in reversed(boxed_contents(text)):
        value = normalize_number(content)
        if value is not None:
            return value
    marks = _HASH_RE.findall(text)
    if marks:
        value = normalize_number(marks[-1])
        if value is not None:
            return value
    return normalize_number(text) if _NUMBER_RE.search(text) else None


def answers_match(predicted: str | None, truth: str) -> bool:
    """Exact match of normalised answers (the truth normalised the same way)."""
    return predicted is not None and predicted == normalize_number(truth)
