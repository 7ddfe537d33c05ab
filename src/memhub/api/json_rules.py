"""JSON Schema for the rules request models check in code, so that the OpenAPI document states them too.

Each name is a fragment for a field's or a model's `json_schema_extra`. A pattern accepts exactly what its
validator accepts where a regular expression can say it; where JSON Schema cannot state a rule (two fields
compared, a string holding JSON), the fragment's description says it in words.
"""

from __future__ import annotations

import re
from typing import Any

from memhub.ids import CONTROL_CLASS

# Python's whitespace (what str.strip() removes), spelled out: JSON Schema's `\s` is ECMA-262's, which differs
# (it leaves out U+0085 and U+001C-U+001F and takes in U+FEFF).
WHITESPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Holds a character other than whitespace (JSON Schema patterns match anywhere in the string).
NON_BLANK = f"[^{WHITESPACE}]"
_C = r"[^/\\\x00-\x1f\x7f]"  # a character of a path segment
_D = r"[^/\\\x00-\x1f\x7f.]"  # ... that is not a dot
# A segment other than "", "." and "..".
_SEGMENT = rf"(?:{_D}{_C}*|\.{_D}{_C}*|\.\.{_C}+)"
_PREFIX_SEGMENT = rf"(?:\.?|{_SEGMENT})"
# memhub.memory.paths.path_problem, as patterns: a relative path of such segments (a directory ends in "/").
SCENE_FILE = rf"^{_SEGMENT}(?:/{_SEGMENT})*$"
SCENE_PATH = rf"^{_SEGMENT}(?:/{_SEGMENT})*/?$"
# A listing prefix may end mid-name and hold empty or "." segments; it may not climb out ("..") or be absolute.
SCENE_PREFIX = rf"^(?:(?:\.|{_SEGMENT})(?:/{_PREFIX_SEGMENT})*)?$"
# A visible segment: not starting with a dot (hidden files are refused).
_VISIBLE = rf"{_D}{_C}*"


def _any_case(word: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in word)


def wiki_filename(extensions: frozenset[str] | set[str], index_file: str | None = None) -> str:
    """memhub.knowledge.wiki.storage.filename_problem as a pattern: visible segments, a known file type."""
    types = "|".join(sorted(_any_case(e.removeprefix(".")) for e in extensions))
    index = f"|{re.escape(index_file)}" if index_file else ""
    return rf"^(?:{_VISIBLE}/)*(?:{_VISIBLE}\.(?:{types}){index})$"


# A page ref: visible segments. The structure pages (index, schema, purpose, log, overview) cannot be written
# or removed either; the pattern leaves that to the route's description.
WIKI_REF = rf"^(?:{_VISIBLE}/)*{_VISIBLE}$"


# What memhub.knowledge.codegraph.remote accepts by default: an http(s) URL naming a host (no user@ part, query,
# fragment or backslash), or a file:// URL. Whether its host resolves only to public addresses depends on DNS and
# on the operator's allow-list, so the route's description states that rule in words; ssh://, git:// and the scp
# form are refused unless the operator turns them on (MEMHUB_CODE_GRAPH_ALLOW_SSH).
_HOST = r"[A-Za-z0-9][A-Za-z0-9.-]*(?::[0-9]{1,5})?"
_URL_PATH = r"(?:/[^\s\x00-\x1f?#\\]*)?"
REPO_URL = rf"^(?:[hH][tT][tT][pP][sS]?://{_HOST}{_URL_PATH}|[fF][iI][lL][eE]:///[^\s\x00-\x1f]*)$"
REPO_URL_RULE = (
    "An https or http URL whose host resolves only to public addresses (an operator may allow hosts with "
    "MEMHUB_CODE_GRAPH_HOST_ALLOWLIST, and ssh://, git:// and host:path URLs with MEMHUB_CODE_GRAPH_ALLOW_SSH), "
    "or a file:// URL under MEMHUB_CODE_SOURCE_ROOTS."
)
# A branch or tag: words joined by "." and "/", never two of one in a row, ending in a word.
BRANCH = r"^[A-Za-z0-9_][A-Za-z0-9_+-]*(?:(?:\.(?:/\.)*/?|/(?:\./)*\.?)[A-Za-z0-9_+-]+)*$"
# A local folder (wiki or code-graph source_path) is named by its absolute path.
ABSOLUTE = "^/"
# The content of a file sent base64-encoded.
BASE64 = r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$"


def non_blank(max_length: int, *, single_line: bool = False) -> dict[str, Any]:
    """Trimmed, 1..max_length characters (counted after trimming); `single_line` also refuses control characters."""
    pattern = rf"^[^{CONTROL_CLASS}]*[^{CONTROL_CLASS}{WHITESPACE}][^{CONTROL_CLASS}]*$" if single_line else NON_BLANK
    return {"pattern": pattern, "maxLength": max_length}


def trimmed_id(max_length: int) -> dict[str, Any]:
    """An id taken after trimming (1..max_length characters): whitespace around it is dropped, no control
    character is left inside."""
    edge, inner = f"[^{CONTROL_CLASS}{WHITESPACE}]", f"[^{CONTROL_CLASS}]"
    return {"pattern": rf"^[{WHITESPACE}]*{edge}(?:{inner}*{edge})?[{WHITESPACE}]*$", "maxLength": max_length}


def given(field: str, value: dict[str, Any] | None = None) -> dict[str, Any]:
    """The field is present with this value (default: any non-null value)."""
    return {"required": [field], "properties": {field: value or {"not": {"type": "null"}}}}


def named(field: str) -> dict[str, Any]:
    """The field holds a non-blank string."""
    return given(field, {"type": "string", "pattern": NON_BLANK})


def absent(field: str) -> dict[str, Any]:
    """The field is left out, null or blank."""
    return {"not": named(field)}


def one_of_given(*alternatives: dict[str, Any]) -> dict[str, Any]:
    """At least one of the alternatives holds."""
    return {"anyOf": list(alternatives)}


def when(condition: dict[str, Any], then: dict[str, Any]) -> dict[str, Any]:
    """If the condition holds, so must `then`."""
    return {"if": condition, "then": then}


def all_of(*rules: dict[str, Any]) -> dict[str, Any]:
    """Every rule holds."""
    return {"allOf": list(rules)}


def not_null(schema: dict[str, Any]) -> None:
    """For a field that may be left out but not sent as null: keep only the non-null branch of its schema."""
    branches = [b for b in schema.pop("anyOf", ()) if b.get("type") != "null"]
    schema.pop("default", None)
    if len(branches) == 1:
        schema.update(branches[0])
    elif branches:
        schema["anyOf"] = branches


# A string that holds a JSON document (JSON Schema's own words for it).
JSON_TEXT = {"contentMediaType": "application/json"}
