"""TLS and token checks on both receivers (as the Collector's receivers offer them), health paths
open to probes, the Prometheus endpoint, and no secret in the logs."""

from __future__ import annotations

import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tests.gateway.conftest import GatewayProcess, RawDownstream

pytestmark = pytest.mark.slow  # each test runs real `groundwire serve` processes

_TOKEN = "t0ken-never-logged"


def _certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A CA and a server certificate for 127.0.0.1 signed by it (openssl)."""
    ca_key, ca = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "server.key", directory / "server.csr", directory / "server.pem"
    ext = directory / "san.ext"
    ext.write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for command in (
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key,
         "-out", ca, "-days", "1", "-subj", "/CN=test-ca"],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
         "-subj", "/CN=127.0.0.1"],
        ["openssl", "x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
         "-out", cert, "-days", "1", "-extfile", ext],
    ):  # fmt: skip
        subprocess.run([str(part) for part in command], check=True, capture_output=True)
    return ca, cert, key


def _spans(name: str) -> tuple:  # type: ignore[type-arg]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("t").start_span(name).end()
    return exporter.get_finished_spans()


def test_tls_and_token_on_http_and_grpc(
    tmp_path: Path,
    downstream: RawDownstream,
    run_gateway: Callable[..., GatewayProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Over TLS, the SDK exporters with the bearer token get through on both protocols; without
    it they get 401 / UNAUTHENTICATED and nothing is forwarded; probes need no token; the token
    never reaches the log; /metrics (with the token) shows the gateway's own counters."""
    ca, cert, key = _certificates(tmp_path)
    # requests lets REQUESTS_CA_BUNDLE override a session's CA file (psf/requests#3829)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    gateway = run_gateway(
        "--forward", downstream.endpoint, "--grpc", "127.0.0.1:0",
        "--tls-cert", str(cert), "--tls-key", str(key),
        env={"GROUNDWIRE_GATEWAY_AUTH_TOKEN": _TOKEN},
    )  # fmt: skip
    base = f"https://127.0.0.1:{gateway.http_port}"
    auth = {"authorization": f"Bearer {_TOKEN}"}
    good = OTLPSpanExporter(endpoint=base + "/v1/traces", certificate_file=str(ca), headers=auth)
    assert good.export(_spans("http-ok")) == SpanExportResult.SUCCESS
    bad = OTLPSpanExporter(endpoint=base + "/v1/traces", certificate_file=str(ca))
    assert bad.export(_spans("http-denied")) == SpanExportResult.FAILURE
    wrong = OTLPSpanExporter(
        endpoint=base + "/v1/traces",
        certificate_file=str(ca),
        headers={"authorization": f"Bearer {_TOKEN}x"},
    )
    assert wrong.export(_spans("http-wrong-token")) == SpanExportResult.FAILURE
    credentials = grpc.ssl_channel_credentials(root_certificates=ca.read_bytes())
    target = f"127.0.0.1:{gateway.grpc_port}"
    grpc_good = GrpcSpanExporter(endpoint=target, credentials=credentials, headers=auth)
    assert grpc_good.export(_spans("grpc-ok")) == SpanExportResult.SUCCESS
    grpc_bad = GrpcSpanExporter(endpoint=target, credentials=credentials, timeout=3)
    assert grpc_bad.export(_spans("grpc-denied")) == SpanExportResult.FAILURE
    assert downstream.wait_for(lambda d: len(d.spans()) == 2)
    time.sleep(0.3)
    assert sorted(s.name for s in downstream.spans()) == ["grpc-ok", "http-ok"]
    context = ssl.create_default_context(cafile=str(ca))
    assert urllib.request.urlopen(base + "/healthz", context=context, timeout=5).status == 200
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(base + "/metrics", context=context, timeout=5)
    assert denied.value.code == 401
    request = urllib.request.Request(base + "/metrics", headers=auth)
    text = urllib.request.urlopen(request, context=context, timeout=5).read().decode()
    assert 'groundwire_gateway_forwarded_total{groundwire_signal="traces"' in text
    assert 'groundwire_gateway_refused_total{groundwire_reason="unauthenticated"' in text
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{gateway.http_port}/healthz", timeout=5)
        raise AssertionError("plain HTTP must not be served on a TLS port")
    except (urllib.error.URLError, ConnectionError):
        pass
    assert _TOKEN not in gateway.output()


def test_client_certificates_are_required_when_a_client_ca_is_set(
    tmp_path: Path,
    downstream: RawDownstream,
    run_gateway: Callable[..., GatewayProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With `--tls-client-ca`, an exporter presenting a certificate from that CA gets through;
    one without a client certificate fails the handshake and nothing is forwarded for it."""
    ca, cert, key = _certificates(tmp_path)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    client_key, client_csr = tmp_path / "client.key", tmp_path / "client.csr"
    client_cert = tmp_path / "client.pem"
    for command in (
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", client_key,
         "-out", client_csr, "-subj", "/CN=app"],
        ["openssl", "x509", "-req", "-in", client_csr, "-CA", ca, "-CAkey", tmp_path / "ca.key",
         "-CAcreateserial", "-out", client_cert, "-days", "1"],
    ):  # fmt: skip
        subprocess.run([str(part) for part in command], check=True, capture_output=True)
    gateway = run_gateway(
        "--forward", downstream.endpoint, "--tls-cert", str(cert), "--tls-key", str(key),
        "--tls-client-ca", str(ca),
    )  # fmt: skip
    url = f"https://127.0.0.1:{gateway.http_port}/v1/traces"
    with_cert = OTLPSpanExporter(
        endpoint=url,
        certificate_file=str(ca),
        client_certificate_file=str(client_cert),
        client_key_file=str(client_key),
    )
    assert with_cert.export(_spans("mtls-ok")) == SpanExportResult.SUCCESS
    without = OTLPSpanExporter(endpoint=url, certificate_file=str(ca), timeout=3)
    assert without.export(_spans("mtls-denied")) == SpanExportResult.FAILURE
    assert downstream.wait_for(lambda d: len(d.spans()) == 1)
    assert [s.name for s in downstream.spans()] == ["mtls-ok"]
