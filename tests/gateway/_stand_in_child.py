"""A stand-in scoring child for the tests of the parent's handle (`ScoringProcess`): a real
spawned process on the handle's real queues that sends what the test feeds it, in the child's
own messages, instead of scoring (a scoring child takes seconds to start). Each request fed is
the JSON of one command:

- `{"send": MESSAGE}`: put MESSAGE on the outbox (a report of scored traces, or counts);
- `{"echo": true}`: report the request itself: `{"scored": (seqs, [spans, time fed], [])}`;
- `{"pause": SECONDS}`: take nothing from the inbox for that long;
- `{"exit": CODE}`: end the process at once with CODE;
- `{"at_stop": MESSAGE}`: what to send at the stop (default `FINAL`); `{"at_stop": null}`:
  ignore the stop and keep running (a child that hangs); `{"at_stop": {"exit": CODE}}`: end
  with CODE and send nothing.

At start it reports what it was given, `{"scored": ([start method, log level, inbox size],
sorted scored ids, [])}`, and at the stop `{"scored": (["stop"], [the stop's deadline], [])}`
before the stop's message."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from typing import Any

FINAL: dict[str, Any] = {
    "final": True,
    "drained": True,
    "open_traces": 0,
    "counts": {},
    "lags": [],
    "turns": {"submitted": 0, "scored": 0},
}


def main(config: Any, inbox: Any, outbox: Any, log_level: int, scored: Any) -> None:
    """The stand-in child's main (the arguments `ScoringProcess` gives `scoring_main`)."""
    method = multiprocessing.get_start_method()
    outbox.put({"scored": ([method, log_level, config.scoring_queue_requests], sorted(scored), [])})
    at_stop: Any = FINAL
    while True:
        item = inbox.get()
        if item[0] == "stop":
            outbox.put({"scored": (["stop"], [item[1]], [])})
            if at_stop is None:
                continue
            if "exit" in at_stop:
                os._exit(at_stop["exit"])
            outbox.put(at_stop)
            return
        body, spans, fed, seqs = item
        command = json.loads(body)
        if "send" in command:
            outbox.put(command["send"])
        elif "echo" in command:
            outbox.put({"scored": (list(seqs), [spans, fed], [])})
        elif "pause" in command:
            time.sleep(command["pause"])
        elif "exit" in command:
            os._exit(command["exit"])
        elif "at_stop" in command:
            at_stop = command["at_stop"]


def command(**what: Any) -> bytes:
    """A request body for the stand-in child."""
    return json.dumps(what).encode()
