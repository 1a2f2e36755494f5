"""Prompts as data: each proxy names a template here; the text lives in one place."""

from __future__ import annotations

import string
from collections.abc import Sequence

from mcu_exp.llm.contract import Message

SYSTEM = "You are an expert software engineer who explains code precisely."

TEMPLATES: dict[str, str] = {
    "summarize_intent": (
        "Read the following {language} method and write a one-sentence summary of its intent: "
        "what it does and why, not how.\n\n```{language}\n{code}\n```"
    ),
}


def summary_messages(
    code: str, language: str, template: str = "summarize_intent", system: str | None = SYSTEM
) -> tuple[Message, ...]:
    """Chat messages asking for an intent summary of one program."""
    try:
        text = TEMPLATES[template]
    except KeyError:
        raise ValueError(f"proxy.prompt: unknown template {template!r}; known: {sorted(TEMPLATES)}") from None
    user = Message("user", text.format(language=language, code=code.strip("\n")))
    return (Message("system", system), user) if system else (user,)


JUDGE_TEMPLATES: dict[str, str] = {
    "judge_summary": (
        "Here is a {language} method and a summary of its intent written by someone else.\n\n"
        "```{language}\n{code}\n```\n\nSummary: {summary}\n\n"
        "Does the summary correctly reflect the method's functionality and intent? "
        "Answer with one word: CORRECT or INCORRECT."
    ),
}

QUESTION_TEMPLATES: dict[str, str] = {
    "answer_question": (
        "Read the following {language} method and answer the multiple-choice question about it.\n\n"
        "```{language}\n{code}\n```\n\nQuestion: {question}\n{options}\n\n"
        "Answer with the letter of the one correct option ({letters})."
    ),
}


OUTPUT_TEMPLATES: dict[str, str] = {
    "program_then_question": "```{language}\n{code}\n```\n\n{question}",
}


def _pick(templates: dict[str, str], name: str, what: str) -> str:
    try:
        return templates[name]
    except KeyError:
        raise ValueError(f"unknown {what} template {name!r}; known: {sorted(templates)}") from None


def judge_messages(
    code: str, language: str, summary: str, template: str = "judge_summary", system: str | None = SYSTEM
) -> tuple[Message, ...]:
    """Chat messages asking a judge whether one summary reflects a program (P3)."""
    text = _pick(JUDGE_TEMPLATES, template, "judge")
    user = Message("user", text.format(language=language, code=code.strip("\n"), summary=" ".join(summary.split())))
    return (Message("system", system), user) if system else (user,)


def question_messages(
    code: str,
    language: str,
    question: str,
    options: Sequence[str],
    template: str = "answer_question",
    system: str | None = SYSTEM,
) -> tuple[Message, ...]:
    """Chat messages asking one multiple-choice question, options lettered A, B, … in the given order (P0)."""
    text = _pick(QUESTION_TEMPLATES, template, "question")
    letters = string.ascii_uppercase[: len(options)]
    listed = "\n".join(f"{letter}. {option}" for letter, option in zip(letters, options))
    user = Message(
        "user",
        text.format(
            language=language,
            code=code.strip("\n"),
            question=question.strip(),
            options=listed,
            letters=", ".join(letters),
        ),
    )
    return (Message("system", system), user) if system else (user,)


def output_messages(
    code: str, language: str, question: str, template: str = "program_then_question", system: str | None = SYSTEM
) -> tuple[Message, ...]:
    """Chat messages showing one program and asking the subjects' question about it, e.g. "What
    does this C program print?" (p0_output; the question itself comes from the proxy's config)."""
    text = _pick(OUTPUT_TEMPLATES, template, "output")
    user = Message("user", text.format(language=language, code=code.strip("\n"), question=question.strip()))
    return (Message("system", system), user) if system else (user,)
