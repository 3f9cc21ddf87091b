"""Gateway options, one rule each, in-process: how each kind of value is read (flags, variables,
YAML), every range and cross-field check with its message, and what `redacted` hides (the
layering and the CLI's exit code are in test_config.py)."""

from __future__ import annotations

from dataclasses import MISSING
from pathlib import Path
from typing import Any

import pytest

from groundwire.gateway import ConfigError, GatewayConfig, load_config
from groundwire.gateway._config import _option, parse_hostport

_FORWARD = "http://collector:4318"


def _load(**flags: Any) -> GatewayConfig:
    """The config from `flags` alone (with a downstream unless one is given)."""
    return load_config(flags={"forward": _FORWARD, **flags}, environ={})


def _error(**flags: Any) -> str:
    """The message of the ConfigError that `flags` give."""
    with pytest.raises(ConfigError) as raised:
        _load(**flags)
    return str(raised.value)


@pytest.mark.parametrize(
    ("value", "pair"),
    [
        ("127.0.0.1:4318", ("127.0.0.1", 4318)),
        (" [::1]:0 ", ("::1", 0)),
        (":65535", ("127.0.0.1", 65535)),
        ("collector:1", ("collector", 1)),
    ],
)
def test_host_and_port_are_read_with_brackets_and_a_default_host(
    value: str, pair: tuple[str, int]
) -> None:
    """`host:port`, IPv6 in brackets, an empty host meaning 127.0.0.1, ports 0 to 65535."""
    assert parse_hostport(value) == pair


@pytest.mark.parametrize("value", ["nowhere", "host:", "host:http", "host:65536", "host:-1"])
def test_a_host_and_port_that_is_not_one_is_refused(value: str) -> None:
    """No colon, no port, a port that is not a number or out of range: a clear ValueError."""
    with pytest.raises(
        ValueError, match=r"^expected host:port \(e\.g\. 127\.0\.0\.1:4318\)"
    ) as raised:
        parse_hostport(value)
    assert str(raised.value) == f"expected host:port (e.g. 127.0.0.1:4318), got {value!r}"


@pytest.mark.parametrize(
    "value", ["[::1:80", "::1:80", "fe80::1:4318", "[::1]]:80", "[]:80", "[c:80", "c]:80"]
)
def test_an_ipv6_host_must_be_whole_in_its_brackets(value: str) -> None:
    """An unbracketed or unclosed IPv6 host is refused, not split at its last colon (`[::1:80`
    used to listen on `::1` port 80), and what is in the brackets must be an IPv6 address."""
    with pytest.raises(ValueError, match=r"IPv6") as raised:
        parse_hostport(value)
    assert repr(value) in str(raised.value)


def test_a_bracketed_ipv6_host_keeps_its_scope() -> None:
    """A link-local address with its zone is an IPv6 address too."""
    assert parse_hostport("[fe80::1%eth0]:4318") == ("fe80::1%eth0", 4318)


def test_each_kind_of_value_is_read_from_text() -> None:
    """Text (as variables and flags give it) becomes the option's type: stripped strings, whole
    numbers with a sign, numbers, yes/no words, comma lists, key=value pairs, JSON options."""
    config = load_config(
        environ={
            "GROUNDWIRE_GATEWAY_FORWARD": f"  {_FORWARD}  ",
            "GROUNDWIRE_GATEWAY_SENDERS": " 7 ",
            "GROUNDWIRE_GATEWAY_QUIET_PERIOD_S": "0.25",
            "GROUNDWIRE_GATEWAY_QUEUE_FSYNC": " Off ",
            "GROUNDWIRE_GATEWAY_EVALUATORS": " a, ,b ,",
            "GROUNDWIRE_GATEWAY_FORWARD_HEADERS": "x-a = 1 , ,x-b=two=2",
            "GROUNDWIRE_GATEWAY_EVALUATOR_SAMPLE_RATES": "a=0.5,b=1",
            "GROUNDWIRE_GATEWAY_EVALUATOR_OPTIONS": '{"a": {"min_len": 2}}',
            "GROUNDWIRE_GATEWAY_JUDGE_TOKEN_BUDGET": "1000",
            "GROUNDWIRE_GATEWAY_GRPC_LISTEN": "127.0.0.1:4317",
            "GROUNDWIRE_GATEWAY_MAX_OPEN_TRACES": "   ",
        }
    )
    assert config.forward == _FORWARD
    assert config.senders == 7
    assert config.quiet_period_s == 0.25
    assert config.queue_fsync is False
    assert config.evaluators == ("a", "b")
    assert config.forward_headers == {"x-a": "1", "x-b": "two=2"}
    assert config.evaluator_sample_rates == {"a": 0.5, "b": 1.0}
    assert config.evaluator_options == {"a": {"min_len": 2}}
    assert config.judge_token_budget == 1000
    assert config.grpc_listen == "127.0.0.1:4317"
    assert config.max_open_traces == 10_000  # blank: not set


@pytest.mark.parametrize("word", ["1", "true", "YES", " on "])
def test_yes_words_are_true(word: str) -> None:
    """1, true, yes, on (any case, spaces around) read as true; a flag still wins over them."""
    env = {"GROUNDWIRE_GATEWAY_FORWARD": _FORWARD, "GROUNDWIRE_GATEWAY_QUEUE_FSYNC": word}
    assert load_config(environ=env).queue_fsync is True
    assert load_config(flags={"queue_fsync": False}, environ=env).queue_fsync is False


@pytest.mark.parametrize("word", ["0", "false", "No", "OFF"])
def test_no_words_are_false(word: str) -> None:
    """0, false, no, off (any case) read as false."""
    assert _load(queue_fsync=word).queue_fsync is False


def test_values_of_their_own_type_are_taken_as_they_are() -> None:
    """YAML and flags may give typed values: whole numbers, numbers, booleans, lists, tuples and
    mappings are taken (lists and keys stripped, header values made text)."""
    config = _load(
        senders=3,
        retry_max_s=2,
        queue_fsync=True,
        evaluators=[" a ", "", "b"],
        forward_headers={"x-a": 5},
        evaluator_sample_rates={"a": "0.5"},
        evaluator_options={"a": {"k": 1}},
        grpc_listen="",
        judge_token_budget="",
    )
    assert (config.senders, config.retry_max_s, config.queue_fsync) == (3, 2.0, True)
    assert config.evaluators == ("a", "b")
    assert _load(evaluators=("c",)).evaluators == ("c",)
    assert config.forward_headers == {"x-a": "5"}
    assert config.evaluator_sample_rates == {"a": 0.5}
    assert config.evaluator_options == {"a": {"k": 1}}
    assert config.grpc_listen is None and config.judge_token_budget is None
    assert _load(judge_token_budget=5).judge_token_budget == 5


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"listen": " "}, "--listen: expected a non-empty string, got ' '"),
        ({"listen": 5}, "--listen: expected a non-empty string, got 5"),
        ({"senders": True}, "--senders: expected a whole number, got True"),
        ({"senders": "1.5"}, "--senders: expected a whole number, got '1.5'"),
        ({"senders": 1.5}, "--senders: expected a whole number, got 1.5"),
        ({"retry_max_s": False}, "--retry-max-s: expected a number, got False"),
        ({"retry_max_s": None, "max_wait_s": "inf"},
         "--max-wait-s: expected a finite number, got 'inf'"),
        ({"max_wait_s": [1]}, "--max-wait-s: expected a number, got [1]"),
        ({"queue_fsync": "maybe"}, "--queue-fsync: expected true or false, got 'maybe'"),
        ({"queue_fsync": 1}, "--queue-fsync: expected true or false, got 1"),
        ({"evaluators": ["a", 1]},
         "--evaluators: expected a list of names (or a comma-separated string), got ['a', 1]"),
        ({"evaluator_sample_rates": "a"},
         "--evaluator-sample-rates: expected key=value pairs separated by commas, got 'a'"),
        ({"evaluator_sample_rates": "=1"},
         "--evaluator-sample-rates: expected key=value pairs separated by commas, got '=1'"),
        ({"evaluator_sample_rates": {1: 0.5}},
         "--evaluator-sample-rates: expected a mapping (or key=value,... in a variable), got "
         "{1: 0.5}"),
        ({"evaluator_sample_rates": "a=x"}, "--evaluator-sample-rates: expected a number, got"),
        ({"evaluator_options": "{oops"},
         "--evaluator-options: expected a JSON object (in a variable), got '{oops'"),
        ({"evaluator_options": {"a": 1}},
         "--evaluator-options: expected a mapping of evaluator name -> keyword arguments, got"),
        ({"judge_token_budget": "many"}, "--judge-token-budget: expected a whole number, got"),
        ({"forward_headers": "a"}, "--forward-headers: expected key=value pairs separated by "
         "commas, got (hidden)"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_kind_names_the_flag_and_what_was_expected(
    flags: dict[str, Any], message: str
) -> None:
    """Each kind's refusal says what it expected and what it got (secrets hidden)."""
    assert _error(**flags).startswith(message)


def test_the_flag_that_set_a_key_is_named_when_given() -> None:
    """`flag_names` names the command-line flag a key came from."""
    with pytest.raises(ConfigError, match=r"^--max-wait: expected a number, got 'x'$"):
        load_config(flags={"forward": _FORWARD, "max_wait_s": "x"},
                    flag_names={"max_wait_s": "--max-wait"}, environ={})  # fmt: skip


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"forward": "grpc://"}, "forward: expected the downstream OTLP endpoint, e.g. "
         "http://collector:4318 (OTLP/HTTP) or grpc://collector:4317 (OTLP/gRPC), got 'grpc://'"),
        ({"grpc_listen": "nowhere"},
         "grpc_listen: expected host:port (e.g. 127.0.0.1:4318), got 'nowhere'"),
        ({"forward_compression": "zstd"}, "forward_compression: expected one of ['none', 'gzip']"),
        ({"max_request_bytes": 0}, "max_request_bytes: must be at least 1, got 0"),
        ({"buffer_max_bytes": 0}, "buffer_max_bytes: must be at least 1, got 0"),
        ({"workers": 0}, "workers: must be at least 1, got 0"),
        ({"eval_queue_size": 0}, "eval_queue_size: must be at least 1, got 0"),
        ({"scoring_queue_requests": 0}, "scoring_queue_requests: must be at least 1, got 0"),
        ({"max_open_traces": 0}, "max_open_traces/max_open_spans: must be at least 1"),
        ({"max_open_spans": 0}, "max_open_traces/max_open_spans: must be at least 1"),
        ({"forward_timeout_s": 0}, "forward_timeout_s: must be more than 0, got 0.0"),
        ({"retry_initial_s": 0}, "retry_initial_s: must be more than 0, got 0.0"),
        ({"retry_max_s": 0}, "retry_max_s: must be more than 0, got 0.0"),
        ({"retry_max_elapsed_s": -1}, "retry_max_elapsed_s: must be more than 0, got -1.0"),
        ({"evaluator_timeout_s": 0}, "evaluator_timeout_s: must be more than 0, got 0.0"),
        ({"shutdown_timeout_s": 0}, "shutdown_timeout_s: must be more than 0, got 0.0"),
        ({"metrics_interval_s": 0}, "metrics_interval_s: must be more than 0, got 0.0"),
        ({"summary_interval_s": 0}, "summary_interval_s: must be more than 0, got 0.0"),
        ({"quiet_period_s": -0.5}, "quiet_period_s: must be 0 or more, got -0.5"),
        ({"buffer_max_bytes": 99, "max_request_bytes": 100},
         "buffer_max_bytes: must be at least max_request_bytes"),
        ({"sample_rate": 1.5}, "sample_rate: must be in [0, 1], got 1.5"),
        ({"sample_rate": -0.1}, "sample_rate: must be in [0, 1], got -0.1"),
        ({"tls_key_file": "k.pem"}, "tls_cert_file/tls_key_file: give both the certificate and"),
        ({"tls_client_ca_file": "ca.pem"},
         "tls_client_ca_file: client certificates need TLS: set tls_cert_file too"),
        ({"forward_ca_file": "/nonexistent/ca.pem"},
         "forward_ca_file: no such file: /nonexistent/ca.pem"),
    ],
)  # fmt: skip
def test_each_check_names_its_key_and_the_value(flags: dict[str, Any], message: str) -> None:
    """Ranges, schemes, pairs and files: each refusal names the key and says why."""
    assert _error(**flags).startswith(message)


def test_the_edges_of_each_range_are_allowed(tmp_path: Path) -> None:
    """1 where at least 1 is asked, 0 quiet period, sample rates 0 and 1, a buffer exactly the
    request limit, both TLS files with a client CA, a queue directory not there yet."""
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    cert.write_text("")
    key.write_text("")
    config = _load(
        forward="grpcs://collector:4317", max_request_bytes=1, buffer_max_bytes=1, senders=1,
        workers=1, eval_queue_size=1, scoring_queue_requests=1, max_open_traces=1,
        max_open_spans=1, quiet_period_s=0, sample_rate=0, tls_cert_file=str(cert),
        tls_key_file=str(key), tls_client_ca_file=str(cert), forward_ca_file=str(cert),
        queue_dir=str(tmp_path / "queue"),
    )  # fmt: skip
    assert config.forward_protocol == "grpc" and config.sample_rate == 0.0
    assert _load(sample_rate=1, forward="grpc://c:4317").forward_protocol == "grpc"
    assert _load(forward="https://c").forward_protocol == "http/protobuf"
    assert _load(queue_dir=str(tmp_path)).queue_dir == str(tmp_path)


def test_a_queue_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    """`queue_dir` naming an existing file: refused with the path."""
    file = tmp_path / "a-file"
    file.write_text("")
    assert _error(queue_dir=str(file)) == f"queue_dir: not a directory: {file}"


@pytest.mark.parametrize("key", ["tls_cert_file", "tls_key_file", "tls_client_ca_file"])
def test_each_tls_file_must_exist(tmp_path: Path, key: str) -> None:
    """Each of the three TLS files is checked on its own."""
    real = tmp_path / "real.pem"
    real.write_text("")
    files = {"tls_cert_file": str(real), "tls_key_file": str(real), key: "/nonexistent.pem"}
    assert _error(**files) == f"{key}: no such file: /nonexistent.pem"


def test_evaluation_is_on_when_any_evaluator_is_named() -> None:
    """`evaluation` is true with evaluators, false without."""
    assert _load(evaluators="quoted_spans").evaluation is True
    assert _load().evaluation is False


def test_redacted_masks_secrets_and_lists_tuples() -> None:
    """`redacted` masks the token and every header value (keys kept), leaves empty secrets as
    they are, and gives tuples as lists."""
    shown = _load(auth_token="s3cret", forward_headers="x-a=1,x-b=2", evaluators="a,b").redacted()
    assert shown["auth_token"] == "***"
    assert shown["forward_headers"] == {"x-a": "***", "x-b": "***"}
    assert shown["evaluators"] == ["a", "b"]
    assert shown["senders"] == 4 and shown["forward"] == _FORWARD
    plain = _load().redacted()
    assert plain["auth_token"] is None and plain["forward_headers"] == {}
    assert set(plain) == set(GatewayConfig.__dataclass_fields__)


def test_a_yaml_file_that_cannot_be_used_says_why(tmp_path: Path) -> None:
    """A missing file, an empty one (defaults), a list at the top level, a syntax error without
    a line: each a ConfigError naming the file."""
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError, match=r"missing\.yaml: cannot read the config file: No such"):
        load_config(path=missing, environ={})
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert load_config(path=empty, flags={"forward": _FORWARD}, environ={}).senders == 4
    listed = tmp_path / "list.yaml"
    listed.write_text("- forward\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path=listed, environ={})
    assert str(raised.value) == f"{listed}: expected a mapping of options at the top level"
    tabbed = tmp_path / "tab.yaml"
    tabbed.write_text("forward: 'unterminated\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path=tabbed, environ={})
    assert str(raised.value).startswith(f"{tabbed}:2: ")


def test_an_unknown_yaml_key_lists_the_known_ones_in_order(tmp_path: Path) -> None:
    """The message lists every known key, sorted."""
    file = tmp_path / "gateway.yaml"
    file.write_text("forward: http://c:4318\nlisten_on: x\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path=file, environ={})
    known = ", ".join(sorted(GatewayConfig.__dataclass_fields__))
    assert str(raised.value) == f"{file}: unknown key 'listen_on'; known keys: {known}"


def test_the_file_from_the_variable_is_read_and_a_path_wins(tmp_path: Path) -> None:
    """`GROUNDWIRE_GATEWAY_CONFIG` names the file when no path is given (blank: none)."""
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    first.write_text("forward: http://a:4318\n")
    second.write_text("forward: http://b:4318\n")
    assert load_config(environ={"GROUNDWIRE_GATEWAY_CONFIG": f" {first} "}).forward == (
        "http://a:4318"
    )
    env = {"GROUNDWIRE_GATEWAY_CONFIG": str(first)}
    assert load_config(path=second, environ=env).forward == "http://b:4318"
    with pytest.raises(ConfigError, match=r"^forward: the downstream endpoint is required"):
        load_config(environ={"GROUNDWIRE_GATEWAY_CONFIG": "  "})


def test_the_missing_downstream_names_every_way_to_give_it() -> None:
    """No forward anywhere: one message naming the flag, the file key and the variable."""
    with pytest.raises(ConfigError) as raised:
        load_config(flags={"forward": None}, environ={})
    assert str(raised.value) == (
        "forward: the downstream endpoint is required (--forward, the config file's 'forward' "
        "key or GROUNDWIRE_GATEWAY_FORWARD)"
    )


def test_a_negative_whole_number_is_read_and_then_refused_by_its_range() -> None:
    """'-3' reads as the number -3 (so the range check, not the parser, refuses it)."""
    assert _error(senders="-3") == "senders: must be at least 1, got -3"
    assert _error(senders=" -3 ") == "senders: must be at least 1, got -3"


def test_yaml_that_cannot_even_be_scanned_names_the_file_and_says_so(tmp_path: Path) -> None:
    """A character YAML does not accept (no line to point at): the file and 'not valid YAML';
    a syntax error: the file, the line and the parser's own words."""
    control = tmp_path / "control.yaml"
    control.write_text("forward: \x01\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path=control, environ={})
    assert str(raised.value) == f"{control}: not valid YAML"
    quote = tmp_path / "quote.yaml"
    quote.write_text("forward: 'unterminated\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path=quote, environ={})
    assert str(raised.value) == f"{quote}:2: found unexpected end of stream"


def test_an_option_field_carries_its_default_kind_and_meaning() -> None:
    """`_option` makes a dataclass field with the default (a fresh dict for a mapping) and the
    parser kind and one-line meaning that errors and docs read."""
    plain = _option(4, "int", "senders")
    assert (plain.default, plain.default_factory) == (4, MISSING)
    assert dict(plain.metadata) == {"kind": "int", "doc": "senders"}
    mapping = _option({}, "headers", "headers sent downstream")
    assert (mapping.default, mapping.default_factory) == (MISSING, dict)
    assert dict(mapping.metadata) == {"kind": "headers", "doc": "headers sent downstream"}
    assert GatewayConfig.__dataclass_fields__["senders"].metadata["doc"] == (
        "downstream requests in flight at once"
    )


def test_only_brackets_are_taken_off_a_host() -> None:
    """A host made of other characters keeps them all (only IPv6's brackets are stripped)."""
    assert parse_hostport("XX:1") == ("XX", 1)


def test_the_variables_of_the_process_are_read_when_none_are_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without `environ`, the process's own `GROUNDWIRE_GATEWAY_*` variables are read."""
    monkeypatch.setenv("GROUNDWIRE_GATEWAY_FORWARD", "http://from-env:4318")
    monkeypatch.delenv("GROUNDWIRE_GATEWAY_CONFIG", raising=False)
    assert load_config().forward == "http://from-env:4318"


def test_only_a_leading_minus_sign_is_allowed_before_the_digits() -> None:
    """A whole number with any other character before its digits is refused by the parser,
    with its own message (not Python's)."""
    assert _error(senders="X3") == "--senders: expected a whole number, got 'X3'"
    assert _error(senders="--3") == "--senders: expected a whole number, got '--3'"


@pytest.mark.parametrize("forward", ["http://[::1", "http://[::1:4318/v1", "ftp://c:21", "http://"])
def test_a_forward_url_that_is_not_an_endpoint_is_refused_naming_forward(forward: str) -> None:
    """An unclosed IPv6 bracket (urlsplit raises for it), another scheme, or no host: the
    message names `forward` and shows the value, never a bare "Invalid IPv6 URL"."""
    message = _error(forward=forward)
    assert message.startswith("forward: expected the downstream OTLP endpoint")
    assert repr(forward) in message
