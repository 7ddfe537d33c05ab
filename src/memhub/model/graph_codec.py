"""One file's facts as a compact JSON document: how the store keeps them, and how parse workers hand
them back (a JSON string crosses a process boundary several times faster than pickled dataclasses, and
the store needs it anyway)."""

from __future__ import annotations

import json
from operator import attrgetter
from typing import Any

from memhub.model.graph import Binding, FileFacts, Import, Reference, Symbol

# Field values in declaration order (slots dataclasses list them in __slots__), read in C; asdict
# deep-copies every value and was most of the indexing time.
_FIELDS = {kind: attrgetter(*kind.__slots__) for kind in (Symbol, Reference, Import, Binding)}


def _rows(records: list[Any]) -> list[tuple[Any, ...]]:
    return list(map(_FIELDS[type(records[0])], records)) if records else []


def encode_facts(facts: FileFacts) -> str:
    """The facts without the path, language and error count (which the file's record holds)."""
    return json.dumps(
        {
            "module": facts.module,
            "symbols": _rows(facts.symbols),
            "references": _rows(facts.references),
            "imports": _rows(facts.imports),
            "bindings": _rows(facts.bindings),
        },
        ensure_ascii=False,
        separators=(",", ":"),
    )


def decode_facts(path: str, language: str, parse_errors: int, document: str) -> FileFacts:
    data = json.loads(document)
    return FileFacts(
        path,
        language,
        data["module"],
        # `bases` (index 10) is a list in JSON; fields added after it have defaults, so older documents load.
        [Symbol(*s[:10], tuple(s[10]), *s[11:]) for s in data["symbols"]],
        [Reference(*r) for r in data["references"]],
        [Import(*i) for i in data["imports"]],
        [Binding(*b) for b in data["bindings"]],
        parse_errors,
    )
