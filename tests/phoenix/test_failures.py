"""Phoenix down, going away mid-run, a missing project, a broken span: clear errors, exit codes."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from groundwire.cli import app
from groundwire.cli._exit import ExitCode
from groundwire.offline._pipeline import WindowOptions
from groundwire.phoenix import PhoenixClient, PhoenixQuery, PhoenixUnavailableError, rescore_phoenix
from tests.phoenix._proxy import PhoenixProxy
from tests.phoenix._server import free_port
from tests.phoenix.conftest import new_project

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


def _url(base_url: str, project: str) -> str:
    """`phoenix://HOST:PORT/PROJECT` for a base URL."""
    return f"phoenix://{base_url.removeprefix('http://')}/{project}"


def _message(result: object) -> str:
    """Stderr of a CliRunner result on one line."""
    return " ".join(getattr(result, "stderr", "").split())


def test_phoenix_down_at_the_start(tmp_path: Path) -> None:
    """Nothing listening: a one-line error naming the server, NOTHING_READABLE, no traceback."""
    port = free_port()
    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(
        app, ["rescore", f"phoenix://127.0.0.1:{port}/p", "-e", "quoted_spans", "-o", str(out)]
    )
    assert result.exit_code == ExitCode.NOTHING_READABLE
    assert f"Phoenix at http://127.0.0.1:{port} cannot be reached" in _message(result)
    assert "Traceback" not in result.output


def test_a_project_that_does_not_exist(phoenix: str, tmp_path: Path) -> None:
    """A missing project is a bad argument, and the message says so by name."""
    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(
        app, ["rescore", _url(phoenix, "no-such-project"), "-e", "quoted_spans", "-o", str(out)]
    )
    assert result.exit_code == ExitCode.BAD_ARGUMENTS
    assert "project 'no-such-project' not found on Phoenix" in _message(result)


def test_a_broken_span_is_reported_and_skipped(phoenix: str, tmp_path: Path) -> None:
    """A span that cannot be read is named (page, position, span id) and skipped; the other
    traces are scored."""
    project, spans = new_project(phoenix)
    out = tmp_path / "o.jsonl"
    with PhoenixProxy(phoenix, corrupt_span=1) as proxy:
        result = CliRunner().invoke(
            app, ["rescore", _url(proxy.base_url, project), "-e", "quoted_spans", "-o", str(out)]
        )
    # The run goes on; its status is that of a bad record in a file (OK, or PARTIAL_INPUT).
    assert result.exit_code in (ExitCode.OK, ExitCode.PARTIAL_INPUT), result.output
    text = _message(result)
    where = f"phoenix://{proxy.base_url.removeprefix('http://')}/{project} page 1 span 1"
    assert f"{where} (span_id {proxy.corrupted_span_id}): skipped: not a valid span" in text
    assert "traceId" in text and "not-a-trace-id" in text
    assert "1 bad" in text and f"{spans - 1} spans" in text
    queries = {json.loads(line)["query"] for line in out.read_text().splitlines()}
    assert {"What is the capital of France?", "What is the capital of Spain?"} <= queries


def test_phoenix_going_away_mid_run_leaves_a_resumable_output(phoenix: str, tmp_path: Path) -> None:
    """Phoenix gone after three pages: PhoenixUnavailableError saying so, the turns scored before
    are in OUT, and a resumed run scores the rest once; the command exits PARTIAL_INPUT."""
    project, _ = new_project(phoenix)
    out = tmp_path / "o.jsonl"
    with PhoenixProxy(phoenix, die_after_pages=3) as proxy:
        client = PhoenixClient(proxy.base_url, retries=1, backoff_s=0.05)
        with pytest.raises(PhoenixUnavailableError, match="cannot be reached") as caught:
            rescore_phoenix(
                _url(proxy.base_url, project),
                ["quoted_spans"],
                out,
                query=PhoenixQuery(page_size=5),
                client=client,
                chunk_size=1,
                window=WindowOptions(grace=1),
            )
        client.close()
    assert caught.value.pages_read == 3
    # A failed run leaves OUT alone and keeps what it wrote beside it (docs/reliability.md).
    assert not out.exists()
    kept = tmp_path / "o.partial.jsonl"
    before = [json.loads(line)["span_id"] for line in kept.read_text().splitlines()]
    assert len(before) == 1
    run = rescore_phoenix(_url(phoenix, project), ["quoted_spans"], out, resume=True)
    assert run.summary.counts.resumed == 1 and run.summary.turns_scored == 2
    after = [json.loads(line)["span_id"] for line in out.read_text().splitlines()]
    assert len(after) == len(set(after)) == 3

    with PhoenixProxy(phoenix, die_after_pages=2) as proxy:
        result = CliRunner().invoke(
            app,
            [
                *("rescore", _url(proxy.base_url, project), "-e", "quoted_spans"),
                *("-o", str(tmp_path / "cli.jsonl"), "--phoenix-page-size", "5"),
            ],
        )
    assert result.exit_code == ExitCode.PARTIAL_INPUT, result.output
    text = _message(result)
    assert "cannot be reached" in text and "2 pages were read" in text and "--resume" in text


def test_rate_limits_retries_and_api_key(
    phoenix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """429 answers are waited out (Retry-After) and retried, requests are spaced by
    `min_interval_s`, and PHOENIX_API_KEY goes out as a bearer token on every request."""
    project, spans = new_project(phoenix)
    monkeypatch.setenv("PHOENIX_API_KEY", "k-123")
    with PhoenixProxy(phoenix, throttle=2) as proxy:
        client = PhoenixClient(proxy.base_url, min_interval_s=0.3)
        run = rescore_phoenix(
            _url(proxy.base_url, project),
            ["quoted_spans"],
            query=PhoenixQuery(page_size=10),
            client=client,
        )
        client.close()
    pages = -(-spans // 10)
    assert run.summary.turns_scored == 3 and run.summary.read.spans == spans
    assert client.retried == 2 and client.requests == pages + 2
    gaps = [b - a for a, b in itertools.pairwise(proxy.arrivals)]
    # Spacing is kept by the client; arrival gaps seen at the proxy jitter by a few ms either way
    # (without spacing they are ~1 ms, so a quarter of a second still pins the promise).
    assert len(gaps) == pages + 1 and min(gaps) >= 0.25
    assert proxy.authorization == ["Bearer k-123"] * (pages + 2)


class _NotPhoenix(BaseHTTPRequestHandler):
    """Answers every request 200 with an HTML page (some other web server on that port)."""

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def do_GET(self) -> None:
        body = b"<html><body>hello</body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_a_server_that_is_not_phoenix(tmp_path: Path) -> None:
    """A 200 answer that is not JSON is a clear error asking whether this is Phoenix (exit 4)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotPhoenix)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        result = CliRunner().invoke(
            app,
            [
                *("rescore", f"phoenix://127.0.0.1:{port}/p", "-e", "quoted_spans"),
                *("-o", str(tmp_path / "o.jsonl")),
            ],
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
    assert result.exit_code == ExitCode.NOTHING_READABLE
    text = _message(result)
    assert "the body is not JSON" in text and "is this a Phoenix server?" in text
