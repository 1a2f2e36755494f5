"""Prompts as data: each proxy names a template here; the text lives in one place."""

from __future__ import annotations

from mcu_exp.llm.contract import Message

SYSTEM = "You are an expert software engineer who explains code precisely."

TEMPLATES: dict[str, str] = {
    "summarize_intent": (
        "Read the following {language} method and write a one-sentence summary of its intent: "
        "what it does and why, not how.\n\n```{language}\n{code}\n```"
    ),
}


def summary_messages(code: str, language: str, template: str = "summarize_intent",
                     system: str | None = SYSTEM) -> tuple[Message, ...]:
    """Chat messages asking for an intent summary of one program."""
    try:
        text = TEMPLATES[template]
    except KeyError:
        raise ValueError(f"proxy.prompt: unknown template {template!r}; known: {sorted(TEMPLATES)}") from None
    user = Message("user", text.format(language=language, code=code.strip("\n")))
    return (Message("system", system), user) if system else (user,)
