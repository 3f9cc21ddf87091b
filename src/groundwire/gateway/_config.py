"""`GatewayConfig`: every option of `groundwire serve`, from defaults, YAML, variables, flags.

Later sources win: defaults < the YAML file (`--config` or `GROUNDWIRE_GATEWAY_CONFIG`) <
`GROUNDWIRE_GATEWAY_<KEY>` variables < command-line flags. Every value is validated on load and a
bad one is a `ConfigError` naming the key and where it came from (`gateway.yaml: max_wait_s`,
`GROUNDWIRE_GATEWAY_LISTEN`, `--listen`). Secrets (`auth_token`, `forward_headers`) are never
echoed back in an error or a log line.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from groundwire import semconv
from groundwire._values import (
    as_bool,
    as_float,
    as_headers,
    as_int,
    as_list,
    as_opt_int,
    as_opt_str,
    as_options,
    as_rates,
    as_str,
)

__all__ = ["ENV_PREFIX", "ConfigError", "GatewayConfig", "load_config", "parse_hostport"]

ENV_PREFIX: Final = "GROUNDWIRE_GATEWAY_"
"""Prefix of the per-key variables (`GROUNDWIRE_GATEWAY_FORWARD`, ...)."""
_SECRET_KEYS: Final = frozenset({"auth_token", "forward_headers"})
_COMPRESSIONS: Final = ("none", "gzip")


class ConfigError(ValueError):
    """A bad gateway option: the message names the key and its source."""


def parse_hostport(value: str) -> tuple[str, int]:
    """`host:port` (IPv6 in brackets) as a pair; ValueError when malformed.

    A host with a colon must be a bracketed IPv6 address (`[::1]:4318`): `::1:80` or an unclosed
    `[::1:80` would otherwise be split at the last colon and listen somewhere else than meant.
    """
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdecimal() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected host:port (e.g. 127.0.0.1:4318), got {value!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        if not _is_ipv6(host):
            raise ValueError(f"expected an IPv6 address in the brackets, got {value!r}")
    elif ":" in host or "[" in host or "]" in host:
        raise ValueError(
            f"expected host:port, an IPv6 host in brackets ([::1]:4318), got {value!r}"
        )
    return host or "127.0.0.1", int(port)


def _is_ipv6(host: str) -> bool:
    try:
        ipaddress.IPv6Address(host)
    except ValueError:
        return False
    return True


_PARSERS: Final[dict[str, Callable[[Any], Any]]] = {
    "str": as_str,
    "opt_str": as_opt_str,
    "int": as_int,
    "float": as_float,
    "bool": as_bool,
    "list": as_list,
    "headers": as_headers,
    "rates": as_rates,
    "options": as_options,
    "opt_int": as_opt_int,
}


def _option(default: Any, kind: str, doc: str) -> Any:
    """A config field with its parser kind and its one-line meaning (read by docs and errors)."""
    metadata = {"kind": kind, "doc": doc}
    if isinstance(default, dict):
        return field(default_factory=dict, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class GatewayConfig:
    """Every option of the gateway (see docs/gateway.md for the same table with examples)."""

    forward: str = _option("", "str", "downstream OTLP endpoint: http(s)://host:4318 or grpc://")
    forward_headers: Mapping[str, str] = _option({}, "headers", "headers sent downstream")
    forward_timeout_s: float = _option(10.0, "float", "timeout of one downstream request")
    forward_compression: str = _option("none", "str", "compression of forwarded bodies")
    forward_ca_file: str | None = _option(None, "opt_str", "CA bundle for a TLS downstream")
    listen: str = _option("127.0.0.1:4318", "str", "OTLP/HTTP listen address (host:port)")
    grpc_listen: str | None = _option(None, "opt_str", "OTLP/gRPC listen address (off unless set)")
    max_request_bytes: int = _option(4 << 20, "int", "largest request body, after decompression")
    buffer_max_bytes: int = _option(64 << 20, "int", "bytes held for forwarding and retries")
    queue_dir: str | None = _option(
        None, "opt_str", "directory of the persistent forward queue (off: memory only)"
    )
    queue_fsync: bool = _option(
        True, "bool", "fsync each queue commit (off: survives a killed process, not power loss)"
    )
    retry_initial_s: float = _option(0.5, "float", "first retry backoff")
    retry_max_s: float = _option(30.0, "float", "longest retry backoff")
    retry_max_elapsed_s: float = _option(300.0, "float", "give up on a request after this long")
    senders: int = _option(4, "int", "downstream requests in flight at once")
    tls_cert_file: str | None = _option(None, "opt_str", "server certificate (PEM): enables TLS")
    tls_key_file: str | None = _option(None, "opt_str", "server private key (PEM)")
    tls_client_ca_file: str | None = _option(None, "opt_str", "CA that client certs must chain to")
    auth_token: str | None = _option(None, "opt_str", "required bearer token (or header value)")
    auth_header: str = _option("authorization", "str", "header carrying the token")
    evaluators: tuple[str, ...] = _option((), "list", "evaluator names; none: forwarding only")
    evaluator_options: Mapping[str, Mapping[str, Any]] = _option(
        {}, "options", "keyword arguments per evaluator"
    )
    sample_rate: float = _option(1.0, "float", "share of traces scored")
    evaluator_sample_rates: Mapping[str, float] = _option({}, "rates", "share per evaluator")
    judge_token_budget: int | None = _option(None, "opt_int", "judge tokens per rolling hour")
    workers: int = _option(1, "int", "evaluation worker threads")
    eval_queue_size: int = _option(2048, "int", "turns waiting for evaluation before dropping")
    scoring_queue_requests: int = _option(
        1000, "int", "traces requests waiting for the scoring process before left unscored"
    )
    evaluator_timeout_s: float = _option(30.0, "float", "deadline of one evaluation")
    quiet_period_s: float = _option(2.0, "float", "score a trace this long after its last span")
    max_wait_s: float = _option(30.0, "float", "score a trace at the latest this long after start")
    max_open_traces: int = _option(10_000, "int", "traces grouped at once")
    max_open_spans: int = _option(200_000, "int", "spans held for grouping at once")
    shutdown_timeout_s: float = _option(10.0, "float", "deadline of a clean shutdown")
    service_name: str = _option("groundwire-gateway", "str", "service.name of our own telemetry")
    metrics_interval_s: float = _option(15.0, "float", "export interval of our own metrics")
    summary_interval_s: float = _option(
        60.0, "float", "interval of the log line with forwarded, scored and dropped counts"
    )

    def __post_init__(self) -> None:
        """Cross-field checks; each error names the key."""
        _check(self)

    @property
    def forward_protocol(self) -> str:
        """`http/protobuf` or `grpc`, from the scheme of `forward`."""
        scheme = urlsplit(self.forward).scheme
        return "grpc" if scheme in ("grpc", "grpcs") else "http/protobuf"

    @property
    def evaluation(self) -> bool:
        """True when any evaluator is configured."""
        return bool(self.evaluators)

    def redacted(self) -> dict[str, Any]:
        """The options as a dict with secrets masked (for `--print-config` and logs)."""
        out: dict[str, Any] = {}
        for item in fields(self):
            value = getattr(self, item.name)
            if item.name in _SECRET_KEYS and value:
                value = "***" if isinstance(value, str) else dict.fromkeys(value, "***")
            out[item.name] = list(value) if isinstance(value, tuple) else value
        return out


def _fail(key: str, message: str) -> ConfigError:
    return ConfigError(f"{key}: {message}")


def _is_endpoint(url: str) -> bool:
    """An http(s):// or grpc(s):// URL with a host (`http://[::1`, an unclosed bracket, is not:
    urlsplit raises for it, which must not reach the user as a bare "Invalid IPv6 URL")."""
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https", "grpc", "grpcs") and bool(parts.hostname)
    except ValueError:
        return False


def _check(config: GatewayConfig) -> None:
    """Validate values that a parser alone cannot (ranges, schemes, pairs)."""
    if not _is_endpoint(config.forward):
        raise _fail(
            "forward",
            "expected the downstream OTLP endpoint, e.g. http://collector:4318 (OTLP/HTTP) or "
            f"grpc://collector:4317 (OTLP/gRPC), got {config.forward!r}",
        )
    for key in ("listen", "grpc_listen"):
        value = getattr(config, key)
        if value is not None:
            try:
                parse_hostport(value)
            except ValueError as error:
                raise _fail(key, str(error)) from None
    if config.forward_compression not in _COMPRESSIONS:
        raise _fail("forward_compression", f"expected one of {list(_COMPRESSIONS)}")
    for key in (
        "max_request_bytes",
        "buffer_max_bytes",
        "senders",
        "workers",
        "eval_queue_size",
        "scoring_queue_requests",
    ):
        if getattr(config, key) < 1:
            raise _fail(key, f"must be at least 1, got {getattr(config, key)}")
    if config.max_open_traces < 1 or config.max_open_spans < 1:
        raise _fail("max_open_traces/max_open_spans", "must be at least 1")
    for key in (
        "forward_timeout_s",
        "retry_initial_s",
        "retry_max_s",
        "retry_max_elapsed_s",
        "evaluator_timeout_s",
        "max_wait_s",
        "shutdown_timeout_s",
        "metrics_interval_s",
        "summary_interval_s",
    ):
        if getattr(config, key) <= 0:
            raise _fail(key, f"must be more than 0, got {getattr(config, key)}")
    if config.quiet_period_s < 0:
        raise _fail("quiet_period_s", f"must be 0 or more, got {config.quiet_period_s}")
    if config.buffer_max_bytes < config.max_request_bytes:
        raise _fail("buffer_max_bytes", "must be at least max_request_bytes")
    if not 0.0 <= config.sample_rate <= 1.0:
        raise _fail("sample_rate", f"must be in [0, 1], got {config.sample_rate}")
    if bool(config.tls_cert_file) != bool(config.tls_key_file):
        raise _fail("tls_cert_file/tls_key_file", "give both the certificate and the key")
    if config.tls_client_ca_file and not config.tls_cert_file:
        raise _fail("tls_client_ca_file", "client certificates need TLS: set tls_cert_file too")
    queue_dir = None if config.queue_dir is None else Path(config.queue_dir)
    if queue_dir is not None and queue_dir.exists() and not queue_dir.is_dir():
        raise _fail("queue_dir", f"not a directory: {config.queue_dir}")
    for key in ("tls_cert_file", "tls_key_file", "tls_client_ca_file", "forward_ca_file"):
        path = getattr(config, key)
        if path and not Path(path).is_file():
            raise _fail(key, f"no such file: {path}")


_KINDS: Final = {item.name: item.metadata["kind"] for item in fields(GatewayConfig)}


def _convert(key: str, raw: Any, where: str) -> Any:
    """One raw value through its key's parser; errors name the key and the source."""
    try:
        return _PARSERS[_KINDS[key]](raw)
    except ValueError as error:
        shown = "(hidden)" if key in _SECRET_KEYS else repr(raw)
        raise ConfigError(f"{where}: {error}, got {shown}") from None


def _from_file(path: Path) -> dict[str, Any]:
    """The validated values of a YAML config file."""
    import yaml  # type: ignore[import-untyped]

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"{path}: cannot read the config file: {error.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise ConfigError(f"{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of options at the top level")
    values: dict[str, Any] = {}
    for key, raw in data.items():
        if key not in _KINDS:
            known = ", ".join(sorted(_KINDS))
            raise ConfigError(f"{path}: unknown key {key!r}; known keys: {known}")
        values[key] = _convert(key, raw, f"{path}: {key}")
    return values


def _from_env(environ: Mapping[str, str]) -> dict[str, Any]:
    """Values of the `GROUNDWIRE_GATEWAY_<KEY>` variables that are set."""
    values: dict[str, Any] = {}
    for key in _KINDS:
        name = ENV_PREFIX + key.upper()
        raw = environ.get(name, "").strip()
        if raw:
            values[key] = _convert(key, raw, name)
    return values


def load_config(
    *,
    path: str | os.PathLike[str] | None = None,
    flags: Mapping[str, Any] | None = None,
    flag_names: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> GatewayConfig:
    """Defaults < YAML file < `GROUNDWIRE_GATEWAY_*` variables < `flags` (None values ignored).

    `flag_names` maps a key to the command-line flag that set it, for error messages.
    """
    environ = os.environ if environ is None else environ
    file = path or environ.get(semconv.ENV_GATEWAY_CONFIG, "").strip() or None
    values: dict[str, Any] = {}
    if file is not None:
        values.update(_from_file(Path(file)))
    values.update(_from_env(environ))
    for key, raw in (flags or {}).items():
        if raw is not None:
            label = (flag_names or {}).get(key) or "--" + key.replace("_", "-")
            values[key] = _convert(key, raw, label)
    if not values.get("forward"):
        raise ConfigError(
            "forward: the downstream endpoint is required (--forward, the config file's "
            f"'forward' key or {ENV_PREFIX}FORWARD)"
        )
    try:
        return replace(GatewayConfig(forward=values["forward"]), **values)
    except ConfigError:
        raise
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error)) from None
