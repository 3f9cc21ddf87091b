"""Quote fidelity, names: a changed name or identifier is flagged; a capital that only starts a
sentence, or stands in shouted text, marks no name."""

from __future__ import annotations

import pytest

from groundwire.evaluators.quote_verification._changes import Fidelity
from groundwire.evaluators.quote_verification._fidelity import compare
from groundwire.evaluators.quote_verification._normalise import fold, normalise


def _reasons(quote: str, source: str) -> list[str]:
    """The meaning changes of the quote against the whole of `source`, described."""
    norm = normalise(source)
    fidelity: Fidelity = compare(quote, fold(quote), source, norm, 0, len(norm.text))
    return [change.describe() for change in fidelity.changes]


_SMITH = ["entity changed: 'Smith' -> 'Jones'"]


@pytest.mark.parametrize(
    ("quote", "source", "reasons"),
    [
        ("The report by Jones was late.", "The report by Smith was late.", _SMITH),
        # a single line break is wrapping, not a new paragraph; spaces are not either
        ("was late \nJones wrote it", "was late \nSmith wrote it", _SMITH),
        ("approved by\nJones", "approved by\nSmith", _SMITH),
        ("approved by  Jones", "approved by  Smith", _SMITH),
        ("the ( Jones ) report", "the ( Smith ) report", _SMITH),
        ("@Jones approved the release", "@Smith approved the release", _SMITH),
        # a sentence end, a blank line or the start of the text: the capital is the sentence's
        ("It was late. Jones wrote it.", "It was late. Smith wrote it.", []),
        ("It was late!Jones wrote it.", "It was late!Smith wrote it.", []),
        ("It said: Jones wrote it.", "It said: Smith wrote it.", []),
        ("was late\n\nJones wrote it", "was late\n\nSmith wrote it", []),
        ("was late\n \nJones wrote it", "was late\n \nSmith wrote it", []),
        ("(Jones wrote it)", "(Smith wrote it)", []),
        ('"Jones approved the release', '"Smith approved the release', []),
        ("Jones wrote the rules.", "Members\n\nSmith wrote the rules.", []),
        ("Jones wrote the rules.", "Members\nSmith wrote the rules.", _SMITH),
    ],
)
def test_a_capitalised_word_is_a_name_only_mid_sentence(
    quote: str, source: str, reasons: list[str]
) -> None:
    """A changed capitalised word is an entity change mid-sentence (also across a wrapped line),
    never where it starts a sentence, a paragraph or the text."""
    assert _reasons(quote, source) == reasons


@pytest.mark.parametrize(
    ("quote", "source", "reasons"),
    [
        ("said the NASA team", "said the NOAA team", ["entity changed: 'NOAA' -> 'NASA'"]),
        ("we said THE NASA team", "we said THE NOAA team", ["entity changed: 'NOAA' -> 'NASA'"]),
        ("we said the NASA TEAM", "we said the NOAA TEAM", ["entity changed: 'NOAA' -> 'NASA'"]),
        (
            "WE said THE NASA team won",
            "WE said THE NOAA team won",
            ["entity changed: 'NOAA' -> 'NASA'"],
        ),
        ("WE SAID THE NASA TEAM", "WE SAID THE NOAA TEAM", []),
        ("we said THE NASA TEAM here", "we said THE NOAA TEAM here", []),
        ("we SAID THE NASA team", "we SAID THE NOAA team", []),
        ("we said THE NASA team WON", "we said THE NOAA team WON", []),
        ("WE SAID NASA team", "WE SAID NOAA team", []),
        ("we said the NASA TEAM WON", "we said the NOAA TEAM WON", []),
        # an acronym is a name even where it starts a sentence
        ("EU rules apply here", "UK rules apply here", ["entity changed: 'UK' -> 'EU'"]),
    ],
)
def test_an_acronym_is_a_name_unless_the_text_around_it_shouts(
    quote: str, source: str, reasons: list[str]
) -> None:
    """Capitals mark an acronym, unless two of the two words either side are in capitals too."""
    assert _reasons(quote, source) == reasons


@pytest.mark.parametrize(
    ("quote", "source", "reasons"),
    [
        ("use gpt4 here", "use gpt5 here", ["entity changed: 'gpt5' -> 'gpt4'"]),
        (
            "edit config.yaml here",
            "edit settings.toml here",
            ["entity changed: 'settings.toml' -> 'config.yaml'"],
        ),
        (
            "call getValue here",
            "call fetchResult here",
            ["entity changed: 'fetchResult' -> 'getValue'"],
        ),
        (
            "call get_value here",
            "call fetch_result here",
            ["entity changed: 'fetch_result' -> 'get_value'"],
        ),
        ("call getvalue here", "call fetchresult here", []),
        ("the A team", "the B team", ["entity changed: 'B' -> 'A'"]),
        ("the report by Xavier", "the report by Xander", ["entity changed: 'Xander' -> 'Xavier'"]),
        ("the $Jones fund", "the $Smith fund", ["entity changed: '$Smith' -> '$Jones'"]),
        ("The cat and The dog", "The cat and A dog", []),
    ],
)
def test_identifiers_are_names_in_any_case(quote: str, source: str, reasons: list[str]) -> None:
    """Letters with digits, an underscore, a dotted or a camelCase name are identifiers even in
    lower case; a plain lower-case word is not, nor a capitalised function word."""
    assert _reasons(quote, source) == reasons


def test_a_recased_acronym_changes_nothing() -> None:
    """ "nasa" for "NASA": case alone is never a change."""
    assert _reasons("ask NASA now", "ask nasa now") == []


@pytest.mark.parametrize(
    ("quote", "source", "reasons"),
    [
        # another file, another option, another path: two letters apart in all, but a whole part
        (
            "edit config.toml first",
            "edit config.yaml first",
            ["entity changed: 'config.yaml' -> 'config.toml'"],
        ),
        (
            "set max_retries first",
            "set max_retrys first",
            ["entity changed: 'max_retrys' -> 'max_retries'"],
        ),
        (
            "read docs/install.md first",
            "read docs/setup.md first",
            ["entity changed: 'docs/setup.md' -> 'docs/install.md'"],
        ),
        # a slip inside one part stays a typo; separators alone are the same name
        ("read docs/setpu.md first", "read docs/setup.md first", []),
        ("call numpy.linalg.norn first", "call numpy.linalg.norm first", []),
        ("passed in the US last year", "passed in the U.S. last year", []),
        ("passed in the U.S. last year", "passed in the US last year", []),
        # a name on one side only: the whole words' closeness does not make it a slip
        ("set file_nam first", "set filename first", ["entity changed: 'filename' -> 'file_nam'"]),
        ("set filenam first", "set file_name first", ["entity changed: 'file_name' -> 'filenam'"]),
        ("tools, eg the compiler", "tools, e.g. the compiler", []),
    ],
)
def test_dotted_snake_and_path_names_slip_only_within_one_part(
    quote: str, source: str, reasons: list[str]
) -> None:
    """The typo allowance of a dotted, snake_case or path name is per part: a changed part is a
    changed name, however short; a one-letter slip in one part, or different separators, is not."""
    assert _reasons(quote, source) == reasons
