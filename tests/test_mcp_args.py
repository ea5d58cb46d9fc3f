"""The pure decisions behind MCP input schemas and unknown arguments (core/mcp/args.py);
the end-to-end checks through real clients are in tests/test_mcp_clients.py."""

from __future__ import annotations

from ackdeck.core.mcp.args import plain_input_schema, unknown_arguments

SDK_SCHEMA = {
    "type": "object",
    "title": "process_list_toolArguments",
    "properties": {
        "room": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "R"},
        "all": {"type": "boolean", "default": False, "title": "All"},
        "offset": {"anyOf": [{"type": "integer"}, {"type": "string"}], "title": "Offset"},
        "either": {
            "anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}],
            "default": None,
        },
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": 5},
    },
    "required": ["all"],
}


def test_an_optional_value_becomes_its_plain_type_without_a_null_default() -> None:
    out = plain_input_schema("room_ack", SDK_SCHEMA)
    assert out["properties"]["room"] == {"type": "string", "title": "R"}
    assert out["required"] == ["all"]  # still optional: simply not required


def test_real_defaults_and_real_unions_are_kept() -> None:
    out = plain_input_schema("room_ack", SDK_SCHEMA)
    for name in ("all", "offset", "either", "limit"):
        assert out["properties"][name] == SDK_SCHEMA["properties"][name], name


def test_the_title_names_the_tool_and_no_extra_argument_is_accepted() -> None:
    out = plain_input_schema("process_list", SDK_SCHEMA)
    assert (out["title"], out["additionalProperties"]) == ("process_list arguments", False)
    assert SDK_SCHEMA["title"] == "process_list_toolArguments"  # the input is not changed


def test_unknown_arguments_are_named_with_the_accepted_ones() -> None:
    assert unknown_arguments("room_ack", ["all"], ["room", "all"]) is None
    one = unknown_arguments("room_ack", ["al"], ["room", "all"])
    assert one is not None and one.error
    assert one.text == "unknown argument for room_ack: 'al'; room_ack takes room, all"
    assert one.error_json == {
        "error": "invalid_arguments",
        "message": one.text,
        "problems": [{"argument": "al", "problem": "unknown argument"}],
    }
    two = unknown_arguments("wakes_drain", ["b", "a"], [])
    assert two is not None
    assert two.text == "unknown arguments for wakes_drain: 'a', 'b'; wakes_drain takes no arguments"
