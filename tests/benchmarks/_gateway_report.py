"""The gateway benchmark's results page (results/gateway.md) from its JSON."""

from __future__ import annotations

import os
from typing import Any

_QUEUE_SIDES = (("proxy", "minimal OTLP proxy"), ("gateway", "groundwire serve"),
                ("gateway_queue", "groundwire serve --queue-dir"),
                ("gateway_queue_nofsync", "--queue-dir, queue_fsync: false"))  # fmt: skip


def markdown(out: dict[str, Any], *, feed_factor: float, rate_s: float) -> str:
    """The whole page; `feed_factor` and `rate_s` are the run's settings of those names."""
    t, lat, ov, sc = out["throughput"], out["latency"], out["overload"], out["scoring"]
    s = out["settings"]
    rows = [
        "# Gateway benchmark",
        "",
        f"Python {out['machine']['python']}, {out['machine']['cpus']} CPUs (shared with other "
        "work; figures vary run to run). Every part is a separate process on loopback.",
        "",
        f"## Pass-through throughput, evaluation off ({s['runs']} runs of {s['duration_s']} s "
        f"after {s['warmup_s']} s warm-up; {s['concurrency']} clients; "
        f"{s['spans_per_request']}-span protobuf requests of {s['request_bytes']} bytes)",
        "",
        "| side | spans/s median | min | max |",
        "|---|---|---|---|",
        f"| minimal OTLP proxy (aiohttp server + client) | {t['proxy']['median']:,.0f} | "
        f"{t['proxy']['min']:,.0f} | {t['proxy']['max']:,.0f} |",
        f"| groundwire serve | {t['gateway']['median']:,.0f} | {t['gateway']['min']:,.0f} | "
        f"{t['gateway']['max']:,.0f} |",
        f"| **ratio gateway / proxy** | **{t['ratio']['median']:.2f}x** | "
        f"{t['ratio']['min']:.2f}x | {t['ratio']['max']:.2f}x |",
        "",
        "Both deliver every span. The gateway answers once a request is decoded and buffered and "
        "forwards it from the buffer (4 senders); the minimal proxy answers only after downstream "
        "acknowledged, so it holds a connection per request in flight. The gateway also decodes "
        "every request (to validate and count it), which the proxy does not. The two do not send "
        "the same number of requests downstream: the gateway joins protobuf requests queued "
        "behind each other into one (up to 1 MiB, as the Collector's batch processor would), "
        "the proxy sends one per request; most of the gateway's lead comes from that.",
        "",
        f"## Forwarding latency while evaluation runs flat out ({s['latency_s']} s; one 1-span "
        f"probe every {s['probe_interval_s'] * 1000:.0f} ms beside a feed of "
        f"{s['feed_rate_per_s']:.0f} RAG traces/s, {feed_factor:.0f}x the scoring rate)",
        "",
        "| path | p50 ms | p99 ms | max ms | probes |",
        "|---|---|---|---|---|",
    ]
    for side, label in (
        ("direct", "probe alone, client -> sink"),
        ("proxy", "via minimal proxy, same feed"),
        ("gateway_eval_off", "via gateway, evaluation off, same feed"),
        ("gateway_eval_on", "via gateway, evaluation saturated"),
    ):
        row = lat[side]
        rows.append(
            f"| {label} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {row['max_ms']:.2f} | "
            f"{row['probes']} |"
        )
    rows += [
        "",
        f"Added at p99 by evaluation running flat out (on - off): "
        f"**{lat['evaluation_added_p99_ms']:.2f} ms**; gateway with evaluation vs the minimal "
        f"proxy: {lat['gateway_vs_proxy_p99_ms']:.2f} ms.",
        "",
        "## Forwarded-span loss under evaluator overload (same run)",
        "",
        f"- spans answered 200: {ov['spans_accepted']:,}; spans at the sink: "
        f"{ov['spans_at_sink']:,}; **loss: {ov['forwarded_span_loss']}**",
        f"- RAG turns accepted {ov['rag_turns_accepted']:,}: submitted to the runner "
        f"{ov['turns_submitted']:,}, scored {ov['turns_scored']:,}, dropped by the runner "
        f"{ov['turns_dropped']:,}; spans left out of scoring at intake: "
        f"{ov['spans_not_scored']:,}; carrier spans written: {ov['carrier_spans']:,}",
        "",
        "## Scoring (quoted_spans + quote_verification without embedder; one worker thread)",
        "",
        f"Turns scored per second while saturated: **{sc['turns_per_s_one_worker']:.0f}** "
        "(one worker: about one core).",
        "",
        "| fed at | turns/s | seconds | turns fed | scored | dropped | RSS MB, both processes |",
        "|---|---|---|---|---|---|---|",
    ]
    for factor in ("1x", "2x", "4x"):
        row = sc[factor]
        rss = ", ".join(f"{v:.0f}" for v in row["rss_mb"])
        rows.append(
            f"| {factor} | {row['rate_per_s']:.0f} | {row['seconds']:.0f} | {row['turns_fed']:,} | "
            f"{row['scored_share']:.1%} | {row['dropped_share']:.1%} | {rss} |"
        )
    rows += [
        "",
        f"Reading these figures: the 2x and 4x runs last {rate_s:.0f} s, and the scoring process's "
        "inbox (`scoring_queue_requests` requests, here of 20 traces each) absorbs that much "
        "excess and scores it afterwards, so they show drops only once a backlog outgrows it; the "
        "1x run shows whether the measured rate holds for a minute. Latency percentiles on a "
        "shared 2-core machine move several-fold between runs (the load average was far above "
        "2 while this ran); the loss figure does not.",
        "",
    ]
    if "queue" in out:
        rows += queue_markdown(out["queue"])
    return "\n".join(rows)


def queue_markdown(q: dict[str, Any]) -> list[str]:
    """Part 5's section."""
    rows = [
        "## The persistent queue (`--queue-dir`): pass-through, evaluation off",
        "",
        "Each request is committed to SQLite (WAL, `synchronous=FULL`: on disk before the 200; "
        "concurrent requests share a commit; `secure_delete=FAST`) and deleted once delivered. "
        "Same closed loop as above, runs alternated; every side measured in the same run"
        + (
            f" ({q['measured']}, load average {q['load_average_1m']:.1f} on "
            f"{os.cpu_count()} CPUs at the end"
            + (
                ", more than the benchmark's own processes: the machine was shared"
                if q["load_average_1m"] > 4
                else ""
            )
            + ": compare the ratios, not the spans/s with the sections above)"
            if "measured" in q
            else ""
        )
        + ".",
        "",
        "| side | spans/s median | min | max |",
        "|---|---|---|---|",
    ]
    for side, label in _QUEUE_SIDES:
        if side not in q:
            continue
        row = q[side]
        rows.append(f"| {label} | {row['median']:,.0f} | {row['min']:,.0f} | {row['max']:,.0f} |")
    for name, label in (("queue_vs_memory", "with the queue / without"),
                        ("queue_vs_proxy", "with the queue / proxy"),
                        ("nofsync_vs_memory", "queue without fsync / without queue")):  # fmt: skip
        if name not in q:
            continue
        r = q[name]
        rows.append(f"| **ratio {label}** | **{r['median']:.2f}x** | {r['min']:.2f}x | "
                    f"{r['max']:.2f}x |")  # fmt: skip
    if "cost" in q:
        rows += [
            "",
            "Cost per request of each side's own process (median of the runs; CPU of every "
            "thread, and bytes it wrote to disk):",
            "",
            "| side | CPU us per request | disk bytes per request |",
            "|---|---|---|",
        ]
        for side, label in _QUEUE_SIDES:
            cost = q["cost"][side]
            rows.append(f"| {label} | {cost['cpu_us']:,.0f} | {cost['disk_bytes']:,.0f} |")
    rows += [
        "",
        "Latency of a paced 1-span probe (one every 10 ms, nothing else running), client send to "
        "sink arrival:",
        "",
        "| path | p50 ms | p99 ms | probes |",
        "|---|---|---|---|",
    ]
    paths = (("direct", "client -> sink"), ("proxy", "via minimal proxy"),
             ("gateway", "via gateway"), ("gateway_queue", "via gateway --queue-dir"),
             ("gateway_queue_nofsync", "via gateway --queue-dir, no fsync"))  # fmt: skip
    for side, label in paths:
        if side not in q["latency"]:
            continue
        row = q["latency"][side]
        rows.append(f"| {label} | {row['p50_ms']:.2f} | {row['p99_ms']:.2f} | {row['probes']} |")
    rows += [
        "",
        f"Added at p99 by the queue (with - without): **{q['queue_added_p99_ms']:.2f} ms**"
        + (f"; without fsync: {q['nofsync_added_p99_ms']:.2f} ms" if "nofsync_added_p99_ms" in q
           else "") + ".",
    ]  # fmt: skip
    if "fsync_ms" in q:
        rows.append(
            f"One small SQLite commit with fsync on this disk during the run: p50 "
            f"{q['fsync_ms']['p50']:.2f} ms, p99 {q['fsync_ms']['p99']:.2f} ms: the floor under "
            "the added latency with `queue_fsync` on (the default)."
        )
    rows.append("")
    return rows
