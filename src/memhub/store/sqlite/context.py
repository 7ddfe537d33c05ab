"""Neighbouring-turn context for L0 full-text search.

A reply rarely repeats the words of the question it answers ("Which book are you reading?" →
"The Alchemist, again."). Each message's FTS row therefore carries, in a low-weighted `context`
column, the words of the messages around it in its session: the CONTEXT_BEFORE messages before
it and the CONTEXT_AFTER messages after it, in insertion order. On LoCoMo this lifted BM25
recall@10 from 0.60 to 0.71 (2 before, 2 after, weight 0.3) (bench/locomo.py).

The column is kept exact: adding a message refreshes its predecessor (whose "after" changed), and
deleting one refreshes the survivors that had it as a neighbour, so deleted text never lingers in
another message's context.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

CONTEXT_BEFORE = 2
CONTEXT_AFTER = 2
# A message's vector is computed from the messages before it and itself, for the same reason.
EMBED_CONTEXT_BEFORE = 1


def session_tail(con: sqlite3.Connection, scope_key: str, session_id: str) -> list[tuple[int, str]]:
    """(rowid, indexed words) of the session's newest messages, oldest first: the context of what comes next."""
    rows = con.execute(
        "SELECT m.rowid, f.words FROM l0_messages m JOIN l0_fts f ON f.rowid = m.rowid "
        "WHERE m.scope_key = ? AND m.session_id = ? ORDER BY m.rowid DESC LIMIT ?",
        (scope_key, session_id, max(CONTEXT_BEFORE, CONTEXT_AFTER)),
    ).fetchall()
    return [(r[0], r[1]) for r in reversed(rows)]


def appended_contexts(tail: list[str], words: list[str]) -> list[str]:
    """Context columns of messages appended to a session whose newest messages' words are `tail`."""
    contexts = []
    for i in range(len(words)):
        before = (tail + words[:i])[-CONTEXT_BEFORE:] if CONTEXT_BEFORE else []
        after = words[i + 1 : i + 1 + CONTEXT_AFTER]
        contexts.append(" ".join(w for w in (*before, *after) if w))
    return contexts


def _around(con: sqlite3.Connection, scope_key: str, session_id: str, rowid: int, before: int, after: int) -> list[int]:
    """Rowids of up to `before` messages before and `after` messages after one, in session order."""
    earlier = con.execute(
        "SELECT rowid FROM l0_messages WHERE scope_key = ? AND session_id = ? AND rowid < ? "
        "ORDER BY rowid DESC LIMIT ?",
        (scope_key, session_id, rowid, before),
    ).fetchall()
    later = con.execute(
        "SELECT rowid FROM l0_messages WHERE scope_key = ? AND session_id = ? AND rowid > ? ORDER BY rowid LIMIT ?",
        (scope_key, session_id, rowid, after),
    ).fetchall()
    return [r[0] for r in reversed(earlier)] + [r[0] for r in later]


def neighbours(con: sqlite3.Connection, scope_key: str, session_id: str, rowid: int) -> list[int]:
    """Rowids of the messages whose words form this message's context."""
    return _around(con, scope_key, session_id, rowid, CONTEXT_BEFORE, CONTEXT_AFTER)


def affected_by_delete(con: sqlite3.Connection, scope_key: str, session_id: str, rowid: int) -> list[int]:
    """Survivors whose context may have held a message about to be deleted (call before deleting)."""
    return _around(con, scope_key, session_id, rowid, CONTEXT_AFTER, CONTEXT_BEFORE)


def refresh_context(con: sqlite3.Connection, rowids: Iterable[int]) -> None:
    """Recompute the context column of existing messages from their current neighbours."""
    for rowid in dict.fromkeys(rowids):
        row = con.execute("SELECT scope_key, session_id FROM l0_messages WHERE rowid = ?", (rowid,)).fetchone()
        if row is None:
            continue
        around = neighbours(con, row[0], row[1], rowid)
        words = ""
        if around:
            marks = ",".join("?" * len(around))
            found = dict(con.execute(f"SELECT rowid, words FROM l0_fts WHERE rowid IN ({marks})", around).fetchall())
            words = " ".join(found[r] for r in around if found.get(r))
        con.execute("UPDATE l0_fts SET context = ? WHERE rowid = ?", (words, rowid))


def embedding_context(con: sqlite3.Connection, scope_key: str, session_id: str, rowid: int) -> list[str]:
    """The text of the messages just before this one, embedded with it (oldest first)."""
    if EMBED_CONTEXT_BEFORE <= 0:
        return []
    rows = con.execute(
        "SELECT content FROM l0_messages WHERE scope_key = ? AND session_id = ? AND rowid < ? "
        "ORDER BY rowid DESC LIMIT ?",
        (scope_key, session_id, rowid, EMBED_CONTEXT_BEFORE),
    ).fetchall()
    return [r[0] for r in reversed(rows)]
