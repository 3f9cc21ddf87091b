"""Gateway configuration: YAML file < GROUNDWIRE_GATEWAY_* variables < flags, and every bad value
is an error naming its key and source; the CLI turns one into exit code 2, not a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from tests.gateway.conftest import ROOT

from groundwire.cli._exit import ExitCode
from groundwire.gateway import ConfigError, load_config


def test_sources_layer_file_then_variables_then_flags(tmp_path: Path) -> None:
    """Each later source wins, per key; untouched keys keep their defaults."""
    file = tmp_path / "gateway.yaml"
    file.write_text(
        "forward: http://collector:4318\nquiet_period_s: 5\nevaluators: [quoted_spans]\n"
        "forward_headers: {x-tenant: a}\n"
    )
    env = {
        "GROUNDWIRE_GATEWAY_QUIET_PERIOD_S": "3",
        "GROUNDWIRE_GATEWAY_EVALUATORS": "quoted_spans,quote_verification",
        "GROUNDWIRE_GATEWAY_FORWARD_HEADERS": "x-tenant=b,authorization=Bearer s3cret",
    }
    config = load_config(path=file, environ=env, flags={"quiet_period_s": 1.5, "listen": None})
    assert config.forward == "http://collector:4318"
    assert config.quiet_period_s == 1.5
    assert config.evaluators == ("quoted_spans", "quote_verification")
    assert config.forward_headers == {"x-tenant": "b", "authorization": "Bearer s3cret"}
    assert config.listen == "127.0.0.1:4318" and config.grpc_listen is None
    assert config.forward_protocol == "http/protobuf"
    assert "s3cret" not in str(config.redacted())
    via_env = load_config(environ={"GROUNDWIRE_GATEWAY_CONFIG": str(file)})
    assert via_env.quiet_period_s == 5.0


@pytest.mark.parametrize(
    ("text", "env", "message"),
    [
        ("forward: http://c:4318\nquiet_period: 2\n", {}, "unknown key 'quiet_period'"),
        ("forward: http://c:4318\nmax_wait_s: soon\n", {}, "gateway.yaml: max_wait_s: expected a"),
        ("forward: http://c:4318\nsenders: 0\n", {}, "senders: must be at least 1"),
        ("forward: [a\n", {}, "gateway.yaml:2"),
        ("forward: ftp://c\n", {}, "forward: expected the downstream OTLP endpoint"),
        ("", {}, "forward: the downstream endpoint is required"),
        ("forward: http://c:4318\n", {"GROUNDWIRE_GATEWAY_LISTEN": "nowhere"},
         "listen: expected host:port"),
        ("forward: http://c:4318\n", {"GROUNDWIRE_GATEWAY_SENDERS": "²"},
         "GROUNDWIRE_GATEWAY_SENDERS: expected a whole number"),
        ("forward: http://c:4318\n", {"GROUNDWIRE_GATEWAY_SAMPLE_RATE": "lots"},
         "GROUNDWIRE_GATEWAY_SAMPLE_RATE: expected a number"),
        ("forward: http://c:4318\ntls_cert_file: /nonexistent.pem\ntls_key_file: /k.pem\n", {},
         "tls_cert_file: no such file"),
        ("forward: http://c:4318\nauth_token: 42\n", {}, "auth_token: expected a non-empty"),
    ],
)  # fmt: skip
def test_bad_values_name_their_key_and_source(
    tmp_path: Path, text: str, env: dict[str, str], message: str
) -> None:
    """Unknown keys, bad types, ranges, YAML syntax (with line), schemes and missing files."""
    file = tmp_path / "gateway.yaml"
    file.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path=file, environ=env)
    assert message in str(caught.value)
    # a secret's value is never echoed (the temp path, which may hold digits, aside)
    assert "42" not in str(caught.value).replace(str(tmp_path), "")


def test_cli_reports_a_bad_option_with_exit_code_2_and_no_traceback(tmp_path: Path) -> None:
    """`groundwire serve` with a bad value prints one clear line and exits BAD_ARGUMENTS."""
    done = subprocess.run(
        [sys.executable, "-c", "from groundwire.cli import main; main()", "serve",
         "--forward", "http://c:4318", "--max-wait", "-1"],
        capture_output=True, text=True, timeout=60, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == ExitCode.BAD_ARGUMENTS
    assert "max_wait_s: must be more than 0" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_queue_dir_that_cannot_be_used_exits_2_with_one_line(tmp_path: Path) -> None:
    """`--queue-dir` naming a file, or a directory that cannot be created: one line, exit 2."""
    file = tmp_path / "a-file"
    file.write_text("")
    for queue_dir, message in (
        (file, "queue_dir: not a directory"),
        (file / "below", "queue_dir: cannot open the queue in"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", "from groundwire.cli import main; main()", "serve",
             "--forward", "http://c:4318", "--listen", "127.0.0.1:0", "--queue-dir",
             str(queue_dir)],
            capture_output=True, text=True, timeout=60, cwd=ROOT,
            env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        )  # fmt: skip
        assert done.returncode == ExitCode.BAD_ARGUMENTS, done.stderr
        assert message in done.stderr and "Traceback" not in done.stderr
