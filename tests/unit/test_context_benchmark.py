"""The context benchmark's arithmetic (benchmarks/context.py), on small hand-made inputs.

Nothing here times anything or asserts a measured number of tokens: the
benchmark prints those. These tests check that what it prints is computed
right: the cacheable-prefix share, the fact score, and that its shapes ask
for facts a careful reader can deliver.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from swarmcore.testing import RecordedRequest, score_facts


def load() -> ModuleType:
    path = Path(__file__).parents[2] / "benchmarks" / "context.py"
    spec = importlib.util.spec_from_file_location("context_benchmark", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


bench = load()


def test_common_prefix() -> None:
    assert bench.common_prefix("abcdef", "abcxyz") == 3
    assert bench.common_prefix("abc", "abcdef") == 3
    assert bench.common_prefix("", "abc") == 0
    assert bench.common_prefix("xbc", "abc") == 0


def test_prefix_share_counts_only_long_shared_prefixes_with_any_earlier_request() -> None:
    texts = ["abcdefgh", "abcdefxy", "abzz", "abcdefghij"]
    # One token a character, a cache that keeps prefixes of 5 or more:
    # request 2 shares 6 with request 1 (counted), request 3 only 2 (not),
    # request 4 shares 8 with request 1 (the longest of its earlier matches).
    cacheable, total = bench.prefix_share(texts, minimum=5, count=len)
    assert (cacheable, total) == (6 + 8, 8 + 8 + 4 + 10)


def test_prefix_share_of_one_request_is_nothing() -> None:
    assert bench.prefix_share(["a" * 50], minimum=1, count=len) == (0, 50)


def test_serialize_puts_the_tools_before_the_messages() -> None:
    request = RecordedRequest(
        model="m",
        messages=[{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
        tools=[{"type": "function", "function": {"name": "t"}}],
    )
    text = bench.serialize(request)
    assert text.index('"name": "t"') < text.index('"S"') < text.index('"U"')


def test_measure_adds_up_and_divides() -> None:
    requests = [
        RecordedRequest(model="m", messages=[{"role": "user", "content": "word " * 1500}]),
        RecordedRequest(model="m", messages=[{"role": "user", "content": "word " * 1600}]),
    ]
    score = score_facts([], {})
    measured = bench.measure(requests, score)
    first, second = (bench.count_tokens(bench.serialize(r)) for r in requests)
    assert measured.calls == 2
    assert measured.input_tokens == first + second
    assert measured.largest == second
    # The second request repeats the first's text up to where the first one closes.
    assert 1024 <= measured.cacheable <= first
    shared = bench.serialize(requests[0])[:-2]  # the first without its closing '"}'
    assert measured.cacheable == bench.count_tokens(shared)
    assert measured.share == pytest.approx(measured.cacheable / (first + second))
    # Billed: the cacheable tokens at a tenth of the price, the rest at full price.
    expected = first + second - measured.cacheable + 0.1 * measured.cacheable
    assert measured.billed == round(expected)


def test_instructions_follow_the_reader_convention() -> None:
    one, two = bench.facts().__next__(), list(bench.facts())[1]
    text = bench.instructions("x", "a tester", [one], [two])
    assert text.startswith("You are x, a tester.")
    assert f"State fact {one.id}: the {one.topic} is {one.value}." in text
    assert f"You need the {two.topic} (fact {two.id})." in text


@pytest.mark.parametrize("shape", list(bench.SHAPES))
@pytest.mark.parametrize("variant", bench.VARIANTS, ids=lambda v: v.summaries)
async def test_every_shape_needs_facts_a_careful_reader_delivers(
    shape: str, variant: object
) -> None:
    measured, model = await bench.run_offline(bench.SHAPES[shape], "push", variant)
    assert measured.score.needed > 0
    assert measured.score.rate == 1.0, measured.score.missing
    assert measured.calls == len(model.requests)


def test_a_mode_this_swarmcore_does_not_accept_is_skipped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.usable_modes(["pull", "sideways"]) == ["pull"]
    assert "context_mode='sideways' is not accepted" in capsys.readouterr().out


def test_a_real_model_without_its_key_is_skipped_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert bench.main(["--modes", "pull", "--lengths", "2", "--model", "openai/gpt-4o-mini"]) == 0
    out = capsys.readouterr().out
    assert "## summaries name their facts, searches by fact id" in out
    assert "--model openai/gpt-4o-mini: OPENAI_API_KEY is not set; real-model run skipped." in out
