"""Turning free-text model answers into classes: judge verdicts (P3) and multiple-choice letters (P0).

Both parsers are deliberately conservative: an answer they cannot read with confidence is
its own class (``UNPARSEABLE`` / ``None``), counted and reported by the proxies, never
silently folded into a wrong answer.

Verdicts (:func:`parse_verdict`):

1. Markdown emphasis, quotes and a leading ``Answer:``/``Verdict:`` cue are removed, and an
   echo of the question's choice ("CORRECT or INCORRECT", "correct/incorrect") is dropped.
2. If the answer *starts* with a verdict word, that word decides ("INCORRECT - because the
   method is only correct for…" is INCORRECT).
3. Otherwise every mention of ``correct``/``correctly``/``incorrect``/``incorrectly`` is read
   with its polarity, within its clause (the text since the last ``. , ; : ! ?``):

   - a negation among the three words before it ("not", "n't", "never", "no", "cannot",
     "hardly") flips it ("not correct", "does not correctly reflect", "not incorrect",
     "not really correct"); a negation in an earlier clause does not ("No, it is correct");
   - a negated opinion verb earlier in the same clause, with "I" or "we" as its subject,
     flips it too ("I would not say it is correct", "I don't think the summary is correct",
     "I wouldn't call it correct"); the clause here also ends at "but", "however",
     "although", "though", "yet", "whereas" and "while", and a negation after the verb
     flips it back ("I don't think it is incorrect", "I do not think it's not correct");
   - "partially/partly correct" counts as INCORRECT (the summary does not fully reflect
     the program).

   All mentions agreeing give the verdict; mentions that disagree, or none at all ("Yes",
   an empty answer), give UNPARSEABLE.

Choices (:func:`parse_choice`), for options shown as letters A, B, C, …: a leading letter
("B", "(B)", "b)", "B. text", "B: text"), an explicit cue anywhere ("Answer: B", "The answer
is (C)", "option d"), or else the text of exactly one option quoted verbatim. A letter
beyond the options shown ("E" of four) is unparseable, not a guess.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

CORRECT = "CORRECT"
INCORRECT = "INCORRECT"
UNPARSEABLE = "UNPARSEABLE"

_MARKUP = re.compile(r"[*_`#>\"“”\[\]]")
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'"})
_CUE = re.compile(r"^\s*(?:final\s+)?(?:answer|verdict|judg(?:e)?ment|response|output|assessment)\s*[:\-=]\s*")
_ECHO = re.compile(r"\b(?:in)?correct\s*(?:or|/|\|)\s*(?:in)?correct\b")
_LEAD = re.compile(r"^\W*(incorrect|correct)\b")
_MENTION = re.compile(r"\b(incorrect(?:ly)?|correct(?:ly)?)\b")
_NEGATION = re.compile(
    r"\b(?:not|never|no|cannot|hardly|neither|nor)\b|n't\b"
    r"|\b(?:is|was|does|do|did|are|were|ca|wo|could|would|should|has|have|had)nt\b"
)
_CLAUSE_END = re.compile(r"[.,;:!?]")
_SCOPE_END = re.compile(r"[.,;:!?]|\b(?:but|however|although|though|yet|whereas|while)\b")
_RAISED = re.compile(  # "I would not say", "I don't think", "we do not believe", "I wouldn't call"
    r"\b(?:i|we)\b[\w' ]{0,24}?"
    r"(?:\b(?:not|never|cannot|hardly)\b|n't\b|\b(?:do|does|did|would|could|ca|wo|should)nt\b)"
    r"(?:\s+[\w']+){0,2}?\s+(?:think|believe|say|consider|call|feel|agree|deem|regard|claim)\b"
)
_PARTIAL = re.compile(r"\b(?:partially|partly|half)\s*$")
_WINDOW_WORDS = 3


def _normalise(text: str) -> str:
    """Lower case, markdown and quotes removed, whitespace collapsed, cue and echo dropped."""
    flat = " ".join(_MARKUP.sub(" ", text.translate(_APOSTROPHES)).lower().split())
    flat = _CUE.sub("", flat, count=1)
    return _ECHO.sub(" ", flat).strip()


def _since(text: str, boundary: re.Pattern[str]) -> str:
    """The part of ``text`` after the last match of ``boundary`` (all of it when none)."""
    ends = [m.end() for m in boundary.finditer(text)]
    return text[ends[-1] :] if ends else text


def _polarity(word: str, before: str) -> str:
    """The verdict one mention expresses, given the text that precedes it."""
    if _PARTIAL.search(before):
        return INCORRECT
    positive = not word.startswith("in")
    local = _since(before, _CLAUSE_END)
    raised = list(_RAISED.finditer(_since(before, _SCOPE_END)))
    if raised:  # "I don't think (it is) correct": the opinion's negation reaches the mention
        positive = not positive
        local = _since(before, _SCOPE_END)[raised[-1].end() :]
    if _NEGATION.search(" ".join(local.split()[-_WINDOW_WORDS:])):
        positive = not positive
    return CORRECT if positive else INCORRECT


def parse_verdict(text: str) -> str:
    """CORRECT, INCORRECT or UNPARSEABLE for one judge answer (rules in the module docstring)."""
    flat = _normalise(text or "")
    if not flat:
        return UNPARSEABLE
    lead = _LEAD.match(flat)
    if lead:
        return CORRECT if lead.group(1) == "correct" else INCORRECT
    found = {_polarity(m.group(1), flat[: m.start()]) for m in _MENTION.finditer(flat)}
    return found.pop() if len(found) == 1 else UNPARSEABLE


def option_letters(count: int) -> str:
    """The letters labelling ``count`` options: A, B, C, …"""
    if not 1 <= count <= len(string.ascii_uppercase):
        raise ValueError(f"a question needs 1..26 options to be lettered, got {count}")
    return string.ascii_uppercase[:count]


_OPTION_CUE = re.compile(
    r"\b(?:answer|option|choice)\b(?:\s*(?:is|would be|:|=|-))*\s*(?:option\s+|letter\s+)?\(?([a-z])\)?(?![a-z])",
    re.IGNORECASE,
)
_LEADING_MARKED = re.compile(r"^\W*?(?:\(([a-z])\)|([a-z])\s*[\.\):\]](?!\w))", re.IGNORECASE)
_LEADING_BARE = re.compile(r"^\W*([A-Z])(?=\s|$)(?:\s+(\S))?")


def _plain(text: str) -> str:
    return " ".join(_MARKUP.sub(" ", text).split())


def _index(letter: str, count: int) -> int | None:
    """0-based position of ``letter`` among ``count`` options, None beyond them."""
    pos = ord(letter.upper()) - ord("A")
    return pos if 0 <= pos < count else None


def _leading_letter(text: str) -> str | None:
    """A letter that opens the answer: "B", "(B)", "b)", "B. …", "B: …", "C the …"."""
    marked = _LEADING_MARKED.match(text)
    if marked:
        return marked.group(1) or marked.group(2)
    core = text.strip(string.punctuation + " ")
    if len(core) == 1 and core.isalpha():
        return core
    bare = _LEADING_BARE.match(text)
    if bare is None:
        return None
    letter, following = bare.group(1), bare.group(2)
    if following is None:
        return letter
    if letter in "AI" and following[0].islower():
        return None  # "A method that…", "I think…": a word, not a letter
    return letter


def _cue_letter(text: str) -> str | None:
    """The letter after an explicit cue ("answer is B", "option (c)"), skipping articles."""
    for match in _OPTION_CUE.finditer(text):
        letter = match.group(1)
        rest = text[match.end() :]
        if letter in "ai" and re.match(r"\s+[a-z]", rest):
            continue  # "the answer is a list…"
        return letter
    return None


def _option_text(text: str, options: Sequence[str]) -> int | None:
    """The one option whose text the answer quotes verbatim (case and spacing ignored)."""
    flat = _plain(text).lower()
    texts = [_plain(o).lower() for o in options]
    hits = [i for i, t in enumerate(texts) if t and t in flat]
    if len(hits) > 1:  # one option's text inside another's: keep the longest if it contains the rest
        longest = max(hits, key=lambda i: len(texts[i]))
        if all(texts[i] in texts[longest] for i in hits):
            hits = [longest]
    return hits[0] if len(hits) == 1 else None


def parse_choice(text: str, options: Sequence[str]) -> int | None:
    """0-based position of the option the answer picks, in the order shown; None when unreadable.

    ``options`` are the option texts in the order they were shown (lettered A, B, …).
    """
    count = len(options)
    option_letters(count)
    plain = _plain(text or "")
    if not plain:
        return None
    letter = _leading_letter(plain) or _cue_letter(plain)
    if letter is not None:
        return _index(letter, count)
    return _option_text(plain, options)
