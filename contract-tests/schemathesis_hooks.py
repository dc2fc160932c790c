"""Schemathesis hooks: teach the generator the request rules a JSON Schema cannot state.

openapi.yaml states these rules in prose (descriptions of Message, ToolChoice and tools); the
server answers 400 when they are broken. Without this hook, Schemathesis would draw bodies that
match the schema but break a cross-field rule, and count the server's correct 400 as a failure.
Only positive cases are repaired: negative ones must stay invalid.
"""

import schemathesis
from schemathesis.generation import GenerationMode

# Keeps each fuzzed generation short on a real model; any value 1..32000 is valid.
MAX_TOKENS_FOR_FUZZING = 8


@schemathesis.hook
def map_case(context, case):
    meta = case.meta
    if meta is None or meta.generation.mode != GenerationMode.POSITIVE or not isinstance(case.body, dict):
        return case
    body = case.body
    tools = _unique_tools(body)
    _fit_tool_choice(body, tools)
    if isinstance(body.get("messages"), list):
        body["messages"] = [_answerable(m, i, body["messages"]) for i, m in enumerate(body["messages"])]
    for field in ("max_tokens", "max_completion_tokens"):
        if isinstance(body.get(field), int):
            body[field] = min(body[field], MAX_TOKENS_FOR_FUZZING)
    if body.get("max_tokens") is None and body.get("max_completion_tokens") is None:
        body["max_tokens"] = MAX_TOKENS_FOR_FUZZING
    return case


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
    """A forced call needs tools, and a named function must be one of them."""
    choice = body.get("tool_choice")
    if not tools:
        if choice == "required" or isinstance(choice, dict):
            del body["tool_choice"]
    elif isinstance(choice, dict):
        choice["function"]["name"] = tools[0]["function"]["name"]


def _answerable(message, index, messages):
    """A tool message answers an earlier call; null content belongs to assistant tool calls."""
    earlier_ids = {
        call["id"] for m in messages[:index] if m.get("role") == "assistant" for call in m.get("tool_calls") or []
    }
    if message.get("role") == "tool" and message.get("tool_call_id") not in earlier_ids:
        message = {**message, "role": "user"}
        message.pop("tool_call_id", None)
    if message.get("content") is None and not (message.get("role") == "assistant" and message.get("tool_calls")):
        message = {**message, "content": ""}
    return message
