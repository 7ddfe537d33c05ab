"""Parse PDF and DOCX files in child processes with memory, CPU-time and wall-clock limits.

pypdf and python-docx run on whatever a user uploaded or put in a source folder. A crafted file can ask
them for gigabytes of memory or minutes of CPU, and memory a parser once took is not given back to the
system by a long-lived server. So no document is parsed in the server process:

- A `DocumentWorker` starts `python -m memhub.knowledge.wiki.docworker`, a small process that imports
  pypdf and python-docx once and then, for each document the server sends it (a JSON header with the
  file name, kind and limits, then the bytes), forks a child.
- The child sets its own RLIMIT_AS and RLIMIT_CPU (where the `resource` module exists; no core files
  either), parses, hands the units and problems back as JSON, and exits, taking whatever it allocated
  with it. The server kills a child that outlives the wall-clock limit.
- A child that runs out of memory, is stopped by a limit or crashes makes that one file `failed` with
  the reason; a build goes on with the rest.

A build keeps one worker for all its documents, so a document costs a fork (a few milliseconds) rather
than an interpreter start and the parsers' import (about 0.15 s, several times that on a busy machine),
which only the first document pays. Where there is no `os.fork` (Windows), the worker parses one
document itself and exits, and the next document starts a new one.

Frames on the worker's stdin and stdout are an 8-byte big-endian length and that many bytes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import json
import logging
import os
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import IO, Any

from memhub.knowledge.wiki.documents import Extracted, docx_units, pdf_units
from memhub.knowledge.wiki.sourcetypes import Limits, SourceError, SourceUnit, exc_reason

# The child's exit status when a parser ran out of the memory the limit allows.
MEMORY_EXIT = 3
_PROBLEM_KINDS = ("error", "skip", "truncated")
# The directory memhub is imported from, put first on the worker's path so it runs this very code.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])
_FRAME = struct.Struct(">Q")
# How long the worker may take to report on a child that was killed, or to start and answer at all.
_GRACE_SECONDS = 30.0

# Documents parsed at once by this server, whoever asked (builds, raw/read): each child may use up to
# the memory limit, so a burst of uploads cannot multiply it without bound.
CONCURRENT_EXTRACTIONS = 2
_slots = threading.BoundedSemaphore(CONCURRENT_EXTRACTIONS)

_count_lock = threading.Lock()
_count = 0


def extraction_count() -> int:
    """How many documents this process has handed to a child for parsing (a cache hit does not count)."""
    with _count_lock:
        return _count


class _WorkerGone(Exception):
    """The worker process ended or broke the protocol; it is replaced for the next document."""


class DocumentWorker:
    """The server's side of one worker process: documents in, units and problems out, one at a time."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._frames: queue.Queue[bytes | None] = queue.Queue()

    def __enter__(self) -> DocumentWorker:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        """End the worker process (it exits when its stdin closes; it is killed if it does not)."""
        with self._lock:
            self._stop()

    def extract(self, filename: str, kind: str, data: bytes, limits: Limits) -> Extracted:
        """Units and problems of one PDF or DOCX, parsed in a child process under `limits`; never raises."""
        global _count
        with _count_lock:
            _count += 1
        with self._lock, _slots:
            try:
                return self._extract(filename, kind, data, limits)
            except (_WorkerGone, TimeoutError) as exc:
                self._stop(kill=True)
                detail = str(exc) or "it did not answer"
                return [], [SourceError(filename, f"the extraction process failed: {detail}")]
            except Exception as exc:  # a reply out of step: this worker cannot be trusted with the next file
                self._stop(kill=True)
                return [], [SourceError(filename, exc_reason("the extraction process failed", exc))]

    def _extract(self, filename: str, kind: str, data: bytes, limits: Limits) -> Extracted:
        process = self._start()
        header = json.dumps({"filename": filename, "kind": kind, "limits": dataclasses.asdict(limits)})
        deadline = time.monotonic() + limits.process_wall_seconds
        try:
            assert process.stdin is not None
            _write_frame(process.stdin, header.encode("utf-8"))
            _write_frame(process.stdin, data)
        except OSError as exc:
            raise _WorkerGone(f"it stopped reading ({exc.strerror or exc})") from None
        child = int(json.loads(self._frame(deadline + _GRACE_SECONDS))["pid"])
        try:
            status = json.loads(self._frame(deadline))
        except TimeoutError:
            status = None
            if child == process.pid:
                self._stop(kill=True)  # it parsed the document itself (no fork)
            else:
                _kill(child)
                self._frame(time.monotonic() + _GRACE_SECONDS)  # the worker's report of the kill …
                self._frame(time.monotonic() + _GRACE_SECONDS)  # … and the empty result
        else:
            result = self._frame(time.monotonic() + _GRACE_SECONDS)
            if not status.get("more", True):
                self._stop()
        if status is None or time.monotonic() > deadline:  # a result after the deadline counts as none
            reason = f"extraction stopped: it ran longer than {limits.process_wall_seconds:g} s and was killed"
            return [], [SourceError(filename, reason)]
        if status["exit"] != 0 or not result:
            return [], [SourceError(filename, _failure(int(status["exit"]), limits))]
        try:
            return _decode(filename, json.loads(result))
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            return [], [SourceError(filename, exc_reason("the extraction process returned an unreadable result", exc))]

    def _start(self) -> subprocess.Popen[bytes]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        try:
            process = subprocess.Popen(
                [sys.executable, "-m", __name__],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                close_fds=True,
            )
        except OSError as exc:
            raise _WorkerGone(f"it could not start ({exc.strerror or exc})") from None
        frames: queue.Queue[bytes | None] = queue.Queue()
        assert process.stdout is not None
        threading.Thread(target=_read_frames, args=(process.stdout, frames), daemon=True).start()
        self._process, self._frames = process, frames
        return process

    def _frame(self, deadline: float) -> bytes:
        try:
            frame = self._frames.get(timeout=max(deadline - time.monotonic(), 0.0))
        except queue.Empty:
            raise TimeoutError from None
        if frame is None:
            raise _WorkerGone("it ended unexpectedly")
        return frame

    def _stop(self, *, kill: bool = False) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if kill:
            process.kill()
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        try:
            process.wait(_GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _kill(pid: int) -> None:
    # Not yet reaped by the worker, so the pid cannot have been reused.
    with contextlib.suppress(OSError):
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))


def _write_frame(stream: IO[bytes], payload: bytes) -> None:
    stream.write(_FRAME.pack(len(payload)))
    stream.write(payload)
    stream.flush()


def _read_exactly(stream: IO[bytes], size: int) -> bytes | None:
    chunks: list[bytes] = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def _read_frame(stream: IO[bytes]) -> bytes | None:
    head = _read_exactly(stream, _FRAME.size)
    if head is None:
        return None
    return _read_exactly(stream, _FRAME.unpack(head)[0])


def _read_frames(stream: IO[bytes], frames: queue.Queue[bytes | None]) -> None:
    """The server's reader of one worker's stdout: every frame into the queue, then None at its end."""
    try:
        while (frame := _read_frame(stream)) is not None:
            frames.put(frame)
    except (OSError, ValueError):
        pass
    frames.put(None)


def _failure(code: int, limits: Limits) -> str:
    """Why a child ended without a result, in terms of the limit it hit when that is known."""
    if code == MEMORY_EXIT:
        return f"extraction ran out of memory (limit {limits.process_memory_bytes // (1024 * 1024)} MB) and was stopped"
    if code < 0:
        number = -code
        if number == getattr(signal, "SIGXCPU", None):
            return f"extraction used more than {limits.process_cpu_seconds} s of CPU time and was stopped"
        name = signal.Signals(number).name if number in signal.valid_signals() else f"signal {number}"
        return f"the extraction process was killed ({name})"
    return f"the extraction process failed (exit status {code})"


def _decode(filename: str, result: dict[str, Any]) -> Extracted:
    """The child's JSON back into units and problems (checked: it is the output of a parser of untrusted data)."""
    units = [
        SourceUnit(
            str(text), str(locator), tuple(str(h) for h in heading), (int(lines[0]), int(lines[1])) if lines else None
        )
        for text, locator, heading, lines in result["units"]
    ]
    errors = []
    for reason, kind in result["errors"]:
        if kind not in _PROBLEM_KINDS:
            raise ValueError(f"unknown problem kind {kind!r}")
        errors.append(SourceError(filename, str(reason), kind))
    return units, errors


def _apply_limits(limits: Limits) -> None:
    """Lower this process's address space and CPU time to the limits (no core files); a no-op without `resource`."""
    try:
        import resource
    except ImportError:  # not a POSIX system: the parent's wall-clock limit still applies
        return
    wanted = [
        ("RLIMIT_AS", limits.process_memory_bytes, limits.process_memory_bytes),
        # SIGXCPU at the soft limit ends the process; the hard limit (SIGKILL) is the backstop.
        ("RLIMIT_CPU", limits.process_cpu_seconds, limits.process_cpu_seconds + 5),
        ("RLIMIT_CORE", 0, 0),
    ]
    for name, soft, hard in wanted:
        which = getattr(resource, name, None)
        if which is None:
            continue
        try:
            _, current = resource.getrlimit(which)
            if current != resource.RLIM_INFINITY:
                hard = min(hard, current)
            resource.setrlimit(which, (min(soft, hard), hard))
        except (ValueError, OSError):  # a platform that does not enforce this limit
            continue


def _parse(filename: str, kind: str, data: bytes, limits: Limits) -> Extracted:
    if kind == "pdf":
        return pdf_units(filename, data, limits)
    if kind == "docx":
        return docx_units(filename, data, limits)
    raise ValueError(f"not a PDF or DOCX: {kind!r}")


def _parse_to_json(filename: str, kind: str, data: bytes, limits: Limits) -> bytes:
    units, errors = _parse(filename, kind, data, limits)
    payload = {
        "units": [[u.text, u.locator, list(u.heading), list(u.lines) if u.lines else None] for u in units],
        "errors": [[e.reason, e.kind] for e in errors],
    }
    return json.dumps(payload, ensure_ascii=False).encode("utf-8")


def _child(header: dict[str, Any], data: bytes, limits: Limits, result_fd: int) -> None:
    """A forked child: limits first, then parse and write the JSON result; it never returns."""
    code = 0
    try:
        _apply_limits(limits)
        encoded = _parse_to_json(header["filename"], header["kind"], data, limits)
        del data
        with os.fdopen(result_fd, "wb") as out:
            out.write(encoded)
    except MemoryError:
        code = MEMORY_EXIT
    except BaseException:
        traceback.print_exc()
        code = 1
    os._exit(code)


def serve() -> int:
    """The worker process: read documents from stdin, fork a limited child for each, report on stdout."""
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # whatever a library prints must not corrupt the replies
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # one warning per damaged object adds up
    # Imported once here, so every forked child has them already.
    importlib.import_module("docx.table")
    importlib.import_module("pypdf")

    fields = {f.name for f in dataclasses.fields(Limits)}
    can_fork = hasattr(os, "fork")
    while (head := _read_frame(requests)) is not None:
        data = _read_frame(requests)
        if data is None:
            break
        header = json.loads(head)
        limits = Limits(**{k: v for k, v in header["limits"].items() if k in fields})
        if not can_fork:
            # Parse here and exit afterwards: the process's memory goes with it.
            _write_frame(replies, json.dumps({"pid": os.getpid()}).encode())
            try:
                encoded, code = _parse_to_json(header["filename"], header["kind"], data, limits), 0
            except MemoryError:
                encoded, code = b"", MEMORY_EXIT
            _write_frame(replies, json.dumps({"exit": code, "more": False}).encode())
            _write_frame(replies, encoded)
            break
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_end)
            _child(header, data, limits, write_end)
        os.close(write_end)
        del data
        _write_frame(replies, json.dumps({"pid": pid}).encode())
        with os.fdopen(read_end, "rb") as results:
            encoded = results.read()
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        _write_frame(replies, json.dumps({"exit": code, "more": True}).encode())
        _write_frame(replies, encoded if code == 0 else b"")
    return 0


if __name__ == "__main__":
    sys.exit(serve())
