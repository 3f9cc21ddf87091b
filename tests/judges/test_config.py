"""JudgeConfig from arguments and environment, and the data delimiters."""

from __future__ import annotations

import pytest

from groundwire.judges import JudgeConfig, data_block, neutralise
from groundwire.judges._delimit import restore


def test_not_configured_without_model_url_or_key() -> None:
    """No model, base URL or API key anywhere: no judge."""
    assert JudgeConfig.from_env({}) is None
    assert JudgeConfig.from_env({"GROUNDWIRE_JUDGE_TIMEOUT": "5"}) is None


def test_groundwire_variables_win_over_openai_ones() -> None:
    """GROUNDWIRE_JUDGE_* take precedence over OPENAI_*, which are the fallback."""
    env = {
        "GROUNDWIRE_JUDGE_MODEL": "judge",
        "OPENAI_MODEL": "other",
        "OPENAI_BASE_URL": "http://localhost:8000/v1",
        "OPENAI_API_KEY": "sk-fallback",
        "GROUNDWIRE_JUDGE_TIMEOUT": "12.5",
        "GROUNDWIRE_JUDGE_MAX_CONCURRENCY": "4",
        "GROUNDWIRE_JUDGE_MAX_RETRIES": "0",
        "GROUNDWIRE_JUDGE_MODE": "JSON",
    }
    config = JudgeConfig.from_env(env)
    assert config is not None
    assert (config.model, config.base_url, config.api_key) == (
        "judge",
        "http://localhost:8000/v1",
        "sk-fallback",
    )
    assert (config.timeout_s, config.max_concurrency, config.max_retries, config.mode) == (
        12.5,
        4,
        0,
        "json",
    )


def test_arguments_win_over_environment() -> None:
    """Explicit options override the environment; a key alone configures the default model."""
    config = JudgeConfig.from_env({"OPENAI_API_KEY": "sk"}, timeout_s=3.0)
    assert config is not None
    assert (config.model, config.timeout_s, config.base_url) == ("gpt-4o-mini", 3.0, None)


def test_cache_dir_implies_disk() -> None:
    """Setting a cache directory switches the cache to disk unless a kind is given."""
    config = JudgeConfig.from_env({"GROUNDWIRE_JUDGE_CACHE_DIR": "/tmp/x", "OPENAI_API_KEY": "k"})
    assert config is not None and config.cache == "disk"
    config = JudgeConfig.from_env({"OPENAI_API_KEY": "k"}, cache_dir="/tmp/x", cache="off")
    assert config is not None and config.cache == "off"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GROUNDWIRE_JUDGE_TIMEOUT": "soon"}, "GROUNDWIRE_JUDGE_TIMEOUT must be a number"),
        ({"GROUNDWIRE_JUDGE_MAX_RETRIES": "1.5"}, "GROUNDWIRE_JUDGE_MAX_RETRIES must be an int"),
        ({"GROUNDWIRE_JUDGE_CACHE": "redis"}, "GROUNDWIRE_JUDGE_CACHE must be one of"),
    ],
)
def test_bad_environment_values_named(env: dict[str, str], message: str) -> None:
    """A malformed variable fails with an error naming the variable."""
    with pytest.raises(ValueError, match=message):
        JudgeConfig.from_env({"OPENAI_API_KEY": "k", **env})


@pytest.mark.parametrize(
    ("option", "value"),
    [("timeout_s", 0), ("max_concurrency", 0), ("max_retries", -1), ("mode", "xml")],
)
def test_bad_arguments_named(option: str, value: object) -> None:
    """A bad option fails at construction with a message naming it."""
    with pytest.raises(ValueError, match=f"JudgeConfig.{option}"):
        JudgeConfig(**{option: value})  # type: ignore[arg-type]


def test_unknown_option_rejected() -> None:
    """A misspelt option is an error listing the known ones."""
    with pytest.raises(TypeError, match="temprature"):
        JudgeConfig.from_env({}, temprature=0)


def test_api_key_not_in_repr() -> None:
    """The API key never shows up in a repr (logs, tracebacks)."""
    assert "sk-secret" not in repr(JudgeConfig(api_key="sk-secret"))


def test_neutralise_only_touches_our_tags() -> None:
    """Only tag-like sequences naming our delimiters are escaped; other text is unchanged."""
    text = "a < b and <b>bold</b> </answer> < / Context > <spanner>"
    escaped = neutralise(text)
    assert escaped == "a < b and <b>bold</b> &lt;/answer> &lt; / Context > <spanner>"
    assert restore(escaped) == text


def test_data_block_rejects_unknown_tag() -> None:
    """Only registered delimiter tags may be used (so neutralise covers them)."""
    with pytest.raises(ValueError, match="not a registered delimiter"):
        data_block("question", "x")


def test_equal_configs_share_one_client() -> None:
    """Evaluators with equal judge options share one client (one limit, one memory cache)."""
    from groundwire.evaluators import CitationSupport, ResponseGroundedness

    options = {"model": "m", "base_url": "http://127.0.0.1:9/v1"}
    grounded, cited = ResponseGroundedness(**options), CitationSupport(**options)
    assert grounded.judge is not None and grounded.judge is cited.judge
    assert ResponseGroundedness(model="other", base_url="http://127.0.0.1:9/v1").judge is not (
        grounded.judge
    )


def test_client_and_options_together_rejected() -> None:
    """Passing a ready client and judge options at once is ambiguous, so it is an error."""
    from groundwire.judges import JudgeClient, resolve_judge

    client = JudgeClient(JudgeConfig(model="m"))
    with pytest.raises(TypeError, match="not both"):
        resolve_judge(client, model="x")
