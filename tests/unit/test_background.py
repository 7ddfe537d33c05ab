"""Background threads lower their own CPU priority and nothing else's."""

from __future__ import annotations

import os
import sys
import threading

from memhub.background import BACKGROUND_NICE, lower_thread_priority


def nice_of_this_thread() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_a_background_thread_runs_lower_and_its_children_inherit_it_while_the_caller_keeps_its_own() -> None:
    seen: dict[str, int] = {}

    def background() -> None:
        seen["before"] = nice_of_this_thread()
        lower_thread_priority()
        seen["after"] = nice_of_this_thread()
        child = threading.Thread(target=lambda: seen.__setitem__("child", nice_of_this_thread()))
        child.start()
        child.join()

    caller_before = nice_of_this_thread()
    worker = threading.Thread(target=background)
    worker.start()
    worker.join()
    assert nice_of_this_thread() == caller_before  # the thread that answers requests is untouched
    if sys.platform.startswith("linux"):
        assert seen["after"] == min(19, seen["before"] + BACKGROUND_NICE)
        assert seen["child"] == seen["after"]  # a build thread started by a lowered worker runs lowered too
    else:
        assert seen["after"] == seen["before"]
