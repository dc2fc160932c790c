"""Schemathesis hooks: teach the generator the request rules a JSON Schema cannot state.

openapi.yaml states in JSON Schema (`allOf` of `if`/`then`) the rules across fields it can:
content absent or null only on an assistant message with tool calls, `tool_call_id` on a tool
message, `tool_choice` `required` or named only with tools, `stream_options` only with
`stream: true`; Schemathesis generates by them, so no hook repairs those. What is left here is
in prose only (descriptions of tools, ToolChoice and Message): function names unique, a named
`tool_choice` among the tools, a `tool_call_id` answering an earlier call. Without these repairs,
Schemathesis would draw bodies that break such a rule and count the server's correct 400 as a
failure. Only positive cases are repaired: negative ones must stay invalid.
"""

import schemathesis
from schemathesis.generation import GenerationMode

# Keeps each fuzzed generation short on a real model; any value 1..32000 is valid.
MAX_TOKENS_FOR_FUZZING = 8

# Content parts must hold a real file of the declared type (a random string is no image); URLs
# are never fuzzed, so the run fetches nothing from outside this machine.
TINY_PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)
TINY_TEXT = "data:text/plain;base64,aGVsbG8="


@schemathesis.hook
def map_case(context, case):
    if not isinstance(case.body, dict):
        return case
    _short_generations(case.body)
    meta = case.meta
    if meta is None or meta.generation.mode != GenerationMode.POSITIVE:
        return case
    body = case.body
    tools = _unique_tools(body)
    _fit_tool_choice(body, tools)
    if isinstance(body.get("messages"), list):
        body["messages"] = [_answerable(m, i, body["messages"]) for i, m in enumerate(body["messages"])]
        _open_format_for_tasks(body)
    return case


def _short_generations(body):
    """Caps valid token limits (1..32000) at a few tokens, whatever the case's mode: a value that
    was valid stays valid and an invalid one stays invalid. Without a limit, one is added to
    positive cases only."""
    for field in ("max_tokens", "max_completion_tokens"):
        value = body.get(field)
        # JSON integers may come as floats (24325.0): the same number on the wire.
        if isinstance(value, (int, float)) and not isinstance(value, bool) and float(value).is_integer() and 1 <= value <= 32000:
            body[field] = min(int(value), MAX_TOKENS_FOR_FUZZING)
    if body.get("max_tokens") is None and body.get("max_completion_tokens") is None and "messages" in body:
        body.setdefault("max_tokens", MAX_TOKENS_FOR_FUZZING)


def _unique_tools(body):
    """Function names must be unique."""
    tools = body.get("tools")
    if not isinstance(tools, list):
        return []
    seen, unique = set(), []
    for tool in tools:
        name = tool["function"]["name"]
        if name not in seen:
            seen.add(name)
            unique.append(tool)
    body["tools"] = unique
    return unique


def _fit_tool_choice(body, tools):
    """A named function must be one of the tools (the contract says a forced call needs tools)."""
    choice = body.get("tool_choice")
    if tools and isinstance(choice, dict):
        choice["function"]["name"] = tools[0]["function"]["name"]


def _answerable(message, index, messages):
    """A tool message answers an earlier call; attachments are real files."""
    earlier_ids = {
        call["id"] for m in messages[:index] if m.get("role") == "assistant" for call in m.get("tool_calls") or []
    }
    if message.get("role") == "tool" and message.get("tool_call_id") not in earlier_ids:
        message = {**message, "role": "user"}
        message.pop("tool_call_id", None)
    if isinstance(message.get("content"), list):
        message = {**message, "content": [_real_file(part) for part in message["content"]]}
    return message


def _open_format_for_tasks(body):
    """A task fixes the shape of its answer, so task mode takes an open response format only."""
    system = " ".join(
        m["content"] for m in body["messages"] if m.get("role") in ("system", "developer") and isinstance(m.get("content"), str)
    )
    if "<task>" in system.lower() and "response_format" in body:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "task", "schema": {}}}


def _real_file(part):
    if part.get("type") == "image_url":
        return {**part, "image_url": {**part["image_url"], "url": TINY_PNG}}
    if part.get("type") == "file":
        return {**part, "file": {"filename": "notes.txt", "file_data": TINY_TEXT}}
    return part
