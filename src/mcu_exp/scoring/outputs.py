"""A program's printed output as written by a reader or a model, normalised for comparison.

The atoms study judged answers against an exact output key ("3 5", "true", "abcdefabcdef"):
its keys write the output with each run of whitespace (newlines included) as one space, and
its subjects' answers were typed into a field. A model answers in chat form, so
:func:`normalise_output` removes only what wraps an answer, never what is in it:

1. surrounding whitespace;
2. a surrounding Markdown code fence: the text between an opening line that starts with three
   backticks (the rest of that line is Markdown's info string, a language tag such as ``c`` or
   ``text``, and is dropped) and a closing three backticks; on one line (`````3 5`````), the
   text between the backticks;
3. one pair of matching quotes or backticks that wrap the whole answer, the same mark occurring
   nowhere inside (``"3 5"``, ``'true'``, `` `9` ``; not ``"3" "5"``);

steps 1-3 repeat while they change something (```` ```\\n"3 5"\\n``` ```` gives ``3 5``); then

4. every run of whitespace inside (spaces, tabs, newlines) becomes one space.

Case, punctuation and every other character count: ``True`` is not ``true``, ``9.0`` is not
``9``, ``Output: 3 5`` is not ``3 5`` (the question asks for the exact output only). On the
atoms data this rule judges the subjects' answers as the study did on all 1,698 wrong answers
and on 4,326 of its 4,371 right ones; the other 45 are near-misses the study accepted by hand
(``9.0`` for ``9``, ``ture`` for ``true``), which this rule, like the key, calls wrong.
"""

from __future__ import annotations

import re

_FENCE = "```"
_QUOTES = ('"', "'", "`")
_WHITESPACE = re.compile(r"\s+")


def _unwrap(text: str) -> str:
    """``text`` without one wrapping layer (fence or quotes) and the whitespace around it, or
    ``text`` itself when nothing wraps it."""
    if len(text) >= 2 * len(_FENCE) and text.startswith(_FENCE) and text.endswith(_FENCE):
        inner = text[len(_FENCE) : -len(_FENCE)]
        if "\n" in inner:
            inner = inner.split("\n", 1)[1]  # the opening line holds only the info string
        return inner.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in _QUOTES and text[0] not in text[1:-1]:
        return text[1:-1].strip()
    return text


def normalise_output(text: str) -> str:
    """``text`` as the printed output it states (see the module docstring for the rule)."""
    current = text.strip()
    while (unwrapped := _unwrap(current)) != current:
        current = unwrapped
    return _WHITESPACE.sub(" ", current).strip()


def output_key(value: object) -> str | None:
    """A program's answer key normalised, or None when it has none (missing, NaN or empty: a
    CSV cell cannot tell an empty key from a missing one)."""
    if value is None or (isinstance(value, float) and value != value):
        return None
    key = normalise_output(str(value))
    return key or None
