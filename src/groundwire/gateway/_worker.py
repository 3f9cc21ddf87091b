"""Scoring in its own process, so that evaluation CPU never competes with forwarding.

The receiving process only puts each traces request (the protobuf bytes that arrived, or the one
encoding of an OTLP/JSON request, and its span count) on a bounded inter-process queue
(`ScoringProcess.feed`: never blocks; when full, the spans count as `not_scored`). The child
(`scoring_main`: process set-up, lower priority, then `score_until_stopped`) has the `Scorer`
decode each request and group its spans by trace, submits the turns of due traces straight to
the background runner, whose emitter exports results downstream with the child's own providers,
and sends its counts back every half second (for `/healthz` and the gauges). On shutdown it
scores what it holds within the deadline and sends its final counts. With a persistent queue its
reports also name the queued requests done and the traces scored, with their results as OTLP
requests (`ResultCapture`): the parent commits them in one transaction and forwards the results
(`on_scored`); a restarted gateway starts the child with the trace ids scored before.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

from groundwire.gateway._config import GatewayConfig
from groundwire.gateway._metrics import GatewayMetrics

__all__ = ["ScoringProcess", "scoring_main"]

logger = logging.getLogger("groundwire.gateway")

_STATS_EVERY_S: Final = 0.5
_SCORED_EVERY_S: Final = 0.05
"""How often finished traces (and results) are reported for the persistent queue: sooner
downstream, and less scored again after a SIGKILL."""
_TICK_S: Final = 0.1
"""How often, at most, due traces are looked for while no request arrives."""
_REMEMBER: Final = 100_000
"""Scored trace ids remembered to recognise their late spans."""
_SAME_AS_RUNNER: Final = (
    "sample_rate",
    "evaluator_sample_rates",
    "judge_token_budget",
    "workers",
    "evaluator_timeout_s",
)
"""The scoring options the gateway's config and `RunnerConfig` name alike."""
_NICE: Final = 10
_STOP: Final = "stop"
_START_S: Final = 60.0
"""How long the child waits for the scored trace ids (`_ScoredIds`)."""


class _ScoredIds:
    """The trace ids scored before, read by the child from a queue the parent fills after the
    start: in the start arguments, past the pipe's 64 KiB (a restart's ~200,000 ids), the
    parent's write would wait for good on a child that died before reading them."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel

    def __iter__(self) -> Iterator[str]:
        """The ids (once; raises `queue.Empty` when the parent sent none within `_START_S`)."""
        return iter(self._channel.get(timeout=_START_S))


def _build_scorer(
    config: GatewayConfig, metrics: GatewayMetrics, providers: Any, scored: Iterable[str] = ()
) -> Any:
    """The runner, emitter and trace window behind scoring (in the child)."""
    from groundwire._registry import resolve_evaluators
    from groundwire.gateway._scoring import build_scorer
    from groundwire.gateway._services import ServiceEmitter
    from groundwire.runner import RunnerConfig
    from groundwire.trace_window import TraceWindow

    names = list(config.evaluators)
    spec: Any = {name: dict(config.evaluator_options.get(name, {})) for name in names}
    runner_config = RunnerConfig(  # validates each option, naming it
        evaluators=resolve_evaluators(spec),
        max_queue_size=config.eval_queue_size,
        **{name: getattr(config, name) for name in _SAME_AS_RUNNER},
    )
    emitter = ServiceEmitter(providers)  # each app's results under its own service.name
    window = TraceWindow(
        quiet=config.quiet_period_s,
        max_wait=config.max_wait_s,
        max_traces=config.max_open_traces,
        max_spans=config.max_open_spans,
        remember=_REMEMBER,
    )

    def flush() -> None:
        """Export the carrier spans and result events written so far."""
        providers.tracer_provider.force_flush(5_000)
        if providers.logger_provider is not None:
            providers.logger_provider.force_flush(5_000)

    return build_scorer(runner_config, emitter, window, metrics, already_scored=scored, flush=flush)


def check_evaluators(config: GatewayConfig) -> None:
    """Resolve the evaluators once in the parent, so a bad name fails at start with exit 2."""
    from groundwire._registry import resolve_evaluators

    names = list(config.evaluators)
    unknown = sorted(set(config.evaluator_options) - set(names))
    if unknown:
        raise ValueError(f"evaluator_options: {unknown} are not among the evaluators {names}")
    resolve_evaluators({name: dict(config.evaluator_options.get(name, {})) for name in names})


def _stats(
    scorer: Any,
    metrics: GatewayMetrics,
    final: bool = False,
    drained: bool = True,
) -> dict[str, Any]:
    stats = scorer.stats()
    out: dict[str, Any] = {}
    if final:  # the results are exported (the providers are shut down): no flush
        out["scored"] = scorer.take_scored()
    return out | {
        "final": final,
        "drained": drained,
        "open_traces": scorer.open_traces,
        "counts": metrics.snapshot(),
        "lags": metrics.take_lags(),
        "turns": {
            "submitted": stats.submitted,
            "scored": stats.scored,
            "errored": stats.errored,
            "dropped": stats.dropped,
            "sampled_out": stats.sampled_out,
            "in_flight": stats.in_flight,
        },
    }


def _serve(
    scorer: Any,
    metrics: GatewayMetrics,
    inbox: Any,
    outbox: Any,
    reporter: Any,
    parent_alive: Callable[[], bool],
) -> float | None:
    """The child's loop: score fed requests, submit due traces, hand scored traces to the
    `reporter` every 50 ms and report counts every half second; returns the shutdown deadline
    the parent sent, None when `parent_alive` says the parent is gone."""
    last = last_scored = 0.0
    while True:
        try:
            item = inbox.get(timeout=_TICK_S)
        except queue.Empty:
            item = None
        if isinstance(item, tuple) and item[0] == _STOP:
            return float(item[1])
        now = time.monotonic()
        try:
            if item is not None:
                scorer.add(*item)
            scorer.tick(now)
        except Exception:
            logger.exception("scoring step failed; the telemetry was still forwarded")
        if now - last_scored >= _SCORED_EVERY_S:
            last_scored = now
            if not parent_alive():
                # the gateway was killed (SIGKILL, OOM) without stopping us: nobody will send
                # the stop, and the queue never ends (this process holds its write end too)
                logger.warning("the gateway process is gone; the scoring process stops")
                return None
            done, ids = scorer.take_scored()
            if done or ids:
                reporter.offer(done, ids)
        if now - last >= _STATS_EVERY_S:
            last = now
            outbox.put(_stats(scorer, metrics))


def scoring_main(
    config: GatewayConfig, inbox: Any, outbox: Any, log_level: int, scored: Any = ()
) -> None:
    """The child process's entry: ignore the terminal's signals, log, lower the priority, then
    `score_until_stopped`; the orphan of a persistent queue exits at once."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    with contextlib.suppress(OSError):
        os.nice(_NICE)
    parent = multiprocessing.parent_process()  # None when run as the main process
    alive = parent.is_alive if parent is not None else _always
    if not score_until_stopped(config, inbox, outbox, scored, alive):
        logging.shutdown()
        os._exit(0)  # no exit handlers: the runner's threads and the providers are left as is


def _always() -> bool:
    """The parent check of a child that has no parent process to watch."""
    return True


def score_until_stopped(
    config: GatewayConfig,
    inbox: Any,
    outbox: Any,
    scored: Iterable[str],
    parent_alive: Callable[[], bool],
) -> bool:
    """The child's work: decode, group, score, export and report counts until the parent's
    `_STOP`, then score what it holds within the deadline the stop carries and send the final
    counts. Without a stop, when `parent_alive` says the gateway is gone, it scores what it
    holds within the config's shutdown timeout and sends nothing; with a persistent queue it
    returns False at once instead (the caller exits: the queue holds those traces)."""
    from groundwire.gateway._results import ResultCapture
    from groundwire.gateway._scoring import ScoredReporter  # the child's imports, not the parent's
    from groundwire.gateway._telemetry import build_providers

    # with a persistent queue the results are not exported from here: they travel with the
    # report of their traces, to be committed with it (exactly once across a crash)
    capture = ResultCapture() if config.queue_dir is not None else None
    providers = build_providers(config, prometheus=False, capture=capture)
    metrics = GatewayMetrics(None)  # tallies only: the parent records them (one /metrics)
    scorer = _build_scorer(config, metrics, providers, scored)
    reporter = ScoredReporter(
        scorer.flush_results,
        lambda done, ids, results: outbox.put({"scored": (done, ids, results)}),
        None if capture is None else lambda ids, last: capture.take(ids, everything=last),
    )
    deadline_s = _serve(scorer, metrics, inbox, outbox, reporter, parent_alive)
    orphaned = deadline_s is None
    if orphaned and config.queue_dir is not None:
        # the persistent queue holds these traces and the next gateway scores them: scoring
        # them here too would give them two results (and the results not yet committed with
        # their scored mark are scored again by the next gateway, not sent from here)
        logger.warning("the open traces are left to the next start (persistent queue)")
        return False
    if deadline_s is None:
        deadline_s = config.shutdown_timeout_s
    started = time.monotonic()
    _turns, drained = scorer.shutdown(max(0.0, deadline_s - 0.5))
    reporter.offer(*scorer.take_scored())
    reporter.close(max(0.1, deadline_s - (time.monotonic() - started)))
    providers.shutdown(max(0.5, deadline_s - (time.monotonic() - started)))
    if not orphaned:
        outbox.put(_stats(scorer, metrics, final=True, drained=drained))
    return True


class ScoringProcess:
    """The parent's handle on the scoring child: feed it, read its counts, stop it."""

    def __init__(
        self,
        config: GatewayConfig,
        metrics: GatewayMetrics,
        *,
        scored: Iterable[str] = (),
        on_scored: Callable[..., None] | None = None,
        main: Callable[..., None] = scoring_main,
    ) -> None:
        """Start the child (spawned: a clean interpreter, no inherited threads or sockets);
        the traces in `scored` are not scored again; `on_scored(requests, trace_ids[, results])`
        hears of the queued requests done for scoring, the traces scored and (with a
        persistent queue) their evaluation results as OTLP requests (`ResultRequest`). `main`
        is the child's entry (`scoring_main`, or a module-level function speaking the same
        messages), given (config, inbox, outbox, log level, scored ids: `_ScoredIds`)."""
        context = multiprocessing.get_context("spawn")
        self._metrics = metrics
        self._on_scored = on_scored
        self._inbox: Any = context.Queue(maxsize=config.scoring_queue_requests)
        self._outbox: Any = context.Queue()
        # kept for the handle's life: the child opens its locks by name while it starts
        self._ids: Any = context.Queue()
        level = logging.getLogger("groundwire").getEffectiveLevel()
        self._process = context.Process(
            target=main,
            args=(config, self._inbox, self._outbox, level, _ScoredIds(self._ids)),
            name="groundwire-gateway-scoring",
            daemon=True,
        )
        self._process.start()
        # sent by the queues' feeder threads, never by the start; a child that died leaves them
        # waiting on a full pipe, which must not hold our exit (a live child reads all first)
        self._ids.cancel_join_thread()
        self._inbox.cancel_join_thread()
        self._ids.put(frozenset(scored))
        self._closing = False
        self._dead = False
        self.last: dict[str, Any] = {"open_traces": 0, "counts": {}, "turns": {}}
        self._final = threading.Event()
        self._reader = threading.Thread(target=self._read, name="gateway-scoring-stats")
        self._reader.daemon = True
        self._reader.start()

    def _read(self) -> None:
        """Keep the child's latest counts."""
        while True:
            try:
                stats = self._outbox.get(timeout=1.0)
            except queue.Empty:
                if not self._process.is_alive():
                    self._dead = True
                    if not self._closing:
                        logger.error(
                            "the scoring process exited (code %s); forwarding goes on, traces "
                            "are no longer scored (counted as not_scored)",
                            self._process.exitcode,
                        )
                    self._final.set()
                    return
                continue
            except (EOFError, OSError):
                self._final.set()
                return
            if self._on_scored is not None and stats.get("scored"):
                self._on_scored(*stats["scored"])
            if "final" not in stats:
                continue  # a report of scored traces only
            before = self.last.get("counts", {})
            self._metrics.absorb(before, stats.get("counts", {}), stats.get("lags", []))
            scored_turns = stats["turns"]["scored"] - self.last.get("turns", {}).get("scored", 0)
            if scored_turns > 0:
                self._metrics.scored_turns(scored_turns)
            self.last = stats
            if stats.get("final"):
                self._final.set()
                return

    @property
    def open_traces(self) -> int:
        """Traces being grouped in the child (as of its last report)."""
        return int(self.last.get("open_traces", 0))

    @property
    def started(self) -> bool:
        """True once the child has reported (its evaluators are loaded and it is scoring)."""
        return "submitted" in self.last.get("turns", {})

    @property
    def queued_requests(self) -> int:
        """Traces requests waiting for the child."""
        try:
            return int(self._inbox.qsize())
        except NotImplementedError:  # macOS has no sem_getvalue
            return 0

    @property
    def alive(self) -> bool:
        """True while the child runs."""
        return self._process.is_alive()

    def feed(self, body: bytes, spans: int, seqs: tuple[int, ...] = (), wait: bool = False) -> bool:
        """Queue a protobuf traces request for scoring (`spans`: the receiver's count; `seqs`:
        its rows in the persistent queue); never blocks unless `wait` (a replay at start; up to
        a few seconds). False: counted as not scored, dropped."""
        if self._closing or self._dead:
            self._metrics.not_scored(spans, "shutdown" if self._closing else "scoring_stopped")
            return False
        try:
            self._inbox.put((body, spans, time.monotonic(), seqs), block=wait, timeout=5.0)
        except queue.Full:
            self._metrics.not_scored(spans, "scoring_queue_full")
            return False
        return True

    def _send_stop(self, deadline: float) -> None:
        """Put the stop in the inbox, waiting for room while the child runs and the deadline
        allows: a child still starting keeps a small inbox full, and a stop dropped then would
        leave it to be killed at the deadline. The stop carries the time left when it is put."""
        while self._process.is_alive():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            try:
                self._inbox.put((_STOP, max(0.5, left - 0.5)), timeout=min(left, _TICK_S))
            except queue.Full:
                continue
            except Exception:  # an unusable queue: the deadline and the kill still hold
                return
            return

    def shutdown(self, timeout_s: float) -> bool:
        """Ask the child to score what it holds and exit within `timeout_s`; True when it did."""
        deadline = time.monotonic() + timeout_s
        self._closing = True
        self._send_stop(deadline)
        self._final.wait(max(0.0, deadline - time.monotonic()))
        self._process.join(max(0.1, deadline - time.monotonic()))
        if self._process.is_alive():
            logger.warning("the scoring process did not finish before the deadline; stopping it")
            self._process.kill()
            self._process.join(1.0)
            return False
        return bool(self.last.get("final")) and bool(self.last.get("drained"))
