"""Code scorers (no LLM) against hand-computed values, and through a spec."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pytest

from evalgate import run_spec
from evalgate.errors import SpecError
from evalgate.load.items import Item
from evalgate.load.loader import load_spec
from evalgate.replies import Run, ToolCall, messages
from evalgate.scorers import code
from evalgate.scorers.base import NotScorable, Scorer, normalize
from evalgate.scorers.js import text as jstext


def score(scorer: Scorer, output: str | list[str] = "", **item: Any) -> float | None:
    texts = output if isinstance(output, list) else [output]
    run = Run(texts=texts, latency_ms=item.pop("latency_ms", None), cost_usd=item.pop("cost_usd", None),
              tool_calls=[ToolCall(n) for n in item.pop("calls", [])])
    item.setdefault("input", "q")
    try:
        value, _ = normalize(scorer.fn(Item(**item), run))
    except NotScorable:
        return None
    return value


# Every value below is also what @mastra/evals 1.10.2 gives (tests/test_mastra_scorers.py runs it).


def test_content_similarity() -> None:
    # Mastra compares the output with the input, whitespace removed, lower-cased
    assert score(code.content_similarity(), "hello  world", input="Hello World") == 1.0
    # the ground truth is ignored unless asked for
    assert score(code.content_similarity(), "Hello World", input="x", ground_truth="hello world") == 0.0
    both = code.content_similarity(reference="ground_truth")
    assert score(both, "Hello World", input="x", ground_truth="hello world") == 1.0
    assert score(both, "Hello World", input="hello world") == 1.0  # no ground_truth: the input
    # case kept: bigrams He el ll lo oW Wo or rl ld vs he el ll lo ow wo or rl ld share 6 -> 2*6/(10+10-2)
    assert score(code.content_similarity(ignore_case=False), "Hello World", input="hello world") == 12 / 18
    # several messages are joined by ", "
    assert score(code.content_similarity(), ["ab", "cd"], input="ab,cd") == 1.0
    # empty input: 1 if the output is empty too, else 0; or not scorable
    assert score(code.content_similarity(), "", input="") == 1.0
    assert score(code.content_similarity(), "a b", input=" ") == 0.0
    assert score(code.content_similarity(empty="not_scorable"), "a b", input=" ") is None


def test_textual_difference() -> None:
    # longest common subsequence: "ab" in "bacb" -> 2 x 2 / (2 + 4) (difflib's matching blocks gave 1/3)
    assert score(code.textual_difference(), "bacb", input="ab") == pytest.approx(2 / 3)
    assert score(code.textual_difference(), "abce", input="abcd") == 0.75
    assert score(code.textual_difference(), "same", input="same") == 1.0
    assert score(code.textual_difference(), "abc", input="") == 0.0
    assert score(code.textual_difference(), "", input="") == 1.0
    assert score(code.textual_difference(empty="not_scorable"), "abc", input="") is None
    # JavaScript's UTF-16 units: the two emoji share their first surrogate -> 2 x 1 / (2 + 2)
    assert score(code.textual_difference(), "😃", input="😀") == 0.5
    assert score(code.textual_difference(reference="ground_truth"), "abcd", input="x", ground_truth="abce") == 0.75


def test_lcs_matches_the_quadratic_definition() -> None:
    rng = random.Random(5)
    for _ in range(300):
        a = "".join(rng.choices("abc😀 ", k=rng.randint(0, 12)))
        b = "".join(rng.choices("abc😀 ", k=rng.randint(0, 12)))
        ua, ub = jstext.utf16(a), jstext.utf16(b)
        table = [[0] * (len(ub) + 1) for _ in range(len(ua) + 1)]
        for i in range(1, len(ua) + 1):
            for j in range(1, len(ub) + 1):
                same = ua[i - 1] == ub[j - 1]
                table[i][j] = table[i - 1][j - 1] + 1 if same else max(table[i - 1][j], table[i][j - 1])
        assert jstext.lcs_length(ua, ub) == table[-1][-1], (a, b)


def test_sentences_split_as_javascript_does_without_backtracking() -> None:
    rng = random.Random(3)
    for _ in range(2000):
        text = "".join(rng.choices("ab .!?\n", k=rng.randint(0, 15)))
        assert code._sentences(text) == re.findall(r"[^.!?]+[.!?]+", text), text
    # a long text without punctuation: the regex would backtrack quadratically
    assert code._sentences("word " * 200_000) == []


def test_keyword_coverage() -> None:
    # keyword-extractor: "in" is a stopword, "2024!" is all digits -> sunny, skies, brooklyn; 2 found
    assert score(code.keyword_coverage(), "sunny in Brooklyn", input="Sunny skies in Brooklyn, 2024!") == 2 / 3
    assert score(code.keyword_coverage(), "anything", input="the and of") == 1.0  # no keywords: 1
    assert score(code.keyword_coverage(empty="not_scorable"), "anything", input="the and of") is None
    from_truth = code.keyword_coverage(reference="ground_truth")
    assert score(from_truth, "sunny in Brooklyn", input="q", ground_truth="Sunny skies in Brooklyn") == 2 / 3
    # evalgate's option: fixed keywords, whole words in any case
    chosen = code.keyword_coverage(["sunny", "72F", "umbrella"])
    assert score(chosen, "It is SUNNY, 72F.") == 2 / 3
    assert score(code.keyword_coverage(["sun"]), "sunny") == 0.0
    assert score(code.keyword_coverage([]), "anything") == 1.0


def test_completeness() -> None:
    # compromise's terms, verbs as infinitives: it, be, sunny, in, brooklyn -> 2 of 5 covered
    assert score(code.completeness(), "sunny Brooklyn", input="It is sunny in Brooklyn") == 0.4
    # "was running" is the verb "run": he, run vs they, run
    assert score(code.completeness(), "they run", input="He was running") == 0.5
    # no input words: 1 if the output has none either, else 0
    assert score(code.completeness(), "sunny", input="") == 0.0
    assert score(code.completeness(), "", input="") == 1.0
    assert score(code.completeness(empty="not_scorable"), "sunny", input="") is None


def test_tone_consistency() -> None:
    # AFINN: good 3, fine 2. "Good day." = 3/2, "Fine night." = 2/2: mean 1.25, variance 0.0625 -> 0.9375
    assert score(code.tone_consistency(), "Good day. Fine night.") == 0.9375
    # a negator flips the next word: "This is not good." = -3/4, "It is great!" = 3/3 -> variance 0.765625
    assert score(code.tone_consistency(), "This is not good. It is great!") == 0.234375
    assert score(code.tone_consistency(), "One sentence only.") == 1.0
    # against a reference tone: 1 - |1 - (-3)|, at least 0
    assert score(code.tone_consistency(reference_tone="terrible"), "It is great") == 0.0
    assert score(code.tone_consistency(reference_tone="Great news!"), "Great news!") == 1.0
    # the ground truth only with `reference: ground_truth`
    assert score(code.tone_consistency(), "It is great", ground_truth="terrible") == 1.0
    assert score(code.tone_consistency(reference="ground_truth"), "It is great", ground_truth="terrible") == 0.0


def test_latency_and_cost() -> None:
    assert score(code.latency(1000), latency_ms=800) == 1.0
    assert score(code.latency(1000), latency_ms=1000) == 1.0
    assert score(code.latency(1000), latency_ms=1200) == 0.0
    assert score(code.latency(1000)) is None
    assert score(code.cost(0.001), cost_usd=0.002) == 0.0
    assert score(code.cost(0.001), cost_usd=0.0005) == 1.0
    assert score(code.cost(0.001)) is None


def test_tool_call_accuracy_code() -> None:
    calls = ["search", "get_weather"]
    assert score(code.tool_call_accuracy_code("get_weather"), calls=calls) == 1.0
    assert score(code.tool_call_accuracy_code("get_weather", strict=True), calls=calls) == 0.0
    assert score(code.tool_call_accuracy_code("get_weather", strict=True), calls=["get_weather"]) == 1.0
    order = code.tool_call_accuracy_code(expected_order=["search", "get_weather"])
    assert score(order, calls=["search", "x", "get_weather"]) == 1.0
    assert score(order, calls=["get_weather", "search"]) == 0.0
    # Mastra compares each tool's first call: get_weather's first call comes before search's
    assert score(order, calls=["get_weather", "search", "get_weather"]) == 0.0
    strict = code.tool_call_accuracy_code(expected_order=["search", "get_weather"], strict=True)
    assert score(strict, calls=calls) == 1.0
    assert score(strict, calls=["search", "x", "get_weather"]) == 0.0
    # no calls at all: 0, whatever is expected; an empty order falls back to expected_tool
    assert score(code.tool_call_accuracy_code(expected_order=[]), calls=[]) == 0.0
    assert score(code.tool_call_accuracy_code(expected_order=[]), calls=["a"]) == 0.0
    assert score(code.tool_call_accuracy_code("a", []), calls=["a"]) == 1.0
    # no expectation on the entry: the item's expected_trajectory
    fallback = code.tool_call_accuracy_code()
    assert score(fallback, calls=calls, expected_trajectory=[{"name": "search"}, "get_weather"]) == 1.0
    assert score(fallback, calls=calls) is None


def test_a_comparison_that_would_take_minutes_is_the_scores_error(tmp_path: Path) -> None:
    # A 300 KB reply against a 300 KB ground truth cost minutes of CPU (the LCS is quadratic) and held the
    # run; 190 KB of 20,000 different characters needed a gigabyte of bit arrays. Each is now that
    # score's error, at once, naming the sizes; the other scorers of the item still score.
    spec = tmp_path / "evalgate.yaml"
    wide_truth = "".join(chr(0x4E00 + i % 20_000) for i in range(190_000))
    wide_reply = "".join(chr(0x4E00 + i * 7 % 20_000) for i in range(190_000))
    spec.write_text(
        "version: 1\ndata:\n"
        f"  - {{id: long, input: q, ground_truth: {'a' * 300_000}, output: {'b' * 300_000}}}\n"
        f"  - {{id: wide, input: q, ground_truth: {wide_truth}, output: {wide_reply}}}\n"
        "  - {id: short, input: q, ground_truth: abcd, output: abce}\n"
        "scorers:\n  - type: textual_difference\n    reference: ground_truth\n  - type: content_similarity\n"
    )
    result = run_spec(spec, keep_items=True)
    long, wide, short = result.items
    key = "textual_difference:ground_truth"
    assert "300,000 with 300,000 UTF-16 units" in long.scorer_errors[key]
    assert "another scorer" in long.scorer_errors[key]
    assert "20,000 different characters" in wide.scorer_errors[key]
    assert "content_similarity" in long.scores and not short.scorer_errors
    assert short.scores[key] == 0.75


def test_code_scorers_through_a_spec(tmp_path: Path) -> None:
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(
        """\
version: 1
data:
  - input: What is the weather?
    ground_truth: Sunny skies in Brooklyn
    output: {text: Sunny in Brooklyn, latency_ms: 900, cost_usd: 0.01, tool_calls: [{name: get_weather}]}
scorers:
  - type: content_similarity
  - type: textual_difference
  - type: keyword_coverage
    keywords: [sunny, brooklyn]
  - type: completeness
  - type: tone_consistency
  - type: latency
    max_ms: 1000
  - type: cost
    max_usd: 0.001
  - type: tool_call_accuracy_code
    expected_tool: get_weather
    threshold: 1
"""
    )
    result = run_spec(spec)
    assert result.verdict == "passed"
    assert result.scores["keyword_coverage:sunny,brooklyn"] == 1.0
    assert result.scores["latency:1000"] == 1.0
    assert result.scores["cost:0.001"] == 0.0
    assert result.scores["tool_call_accuracy_code:get_weather"] == 1.0
    # the input "What is the weather?" -> what, be, the, weather: none in the output
    assert result.scores["completeness"] == 0.0


def test_bad_arguments_are_spec_errors(tmp_path: Path) -> None:
    spec = tmp_path / "evalgate.yaml"
    spec.write_text(
        "version: 1\ndata: [{input: q, output: a}]\nscorers:\n"
        "  - type: keyword_coverage\n    reference: output\n"
    )
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    assert caught.value.problems[0].line == 5
    assert "reference" in caught.value.problems[0].message


# ---- agents' texts are untrusted: the text helpers give the regexes' answers, in linear time ----

_JS_WS = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_REFERENCE = {  # the regexes these replaced, as Mastra's libraries write them
    "trim": (jstext.trim, lambda t: re.sub(f"^[{_JS_WS}]+|[{_JS_WS}]+$", "", t)),
    "strip_tags": (jstext.strip_tags, lambda t: re.sub(r"(<([^>]+)>)", "", t, flags=re.IGNORECASE)),
}
_PIECES = ["<", ">", "<>", "a", "B", "é", "_", "'", "-", "—", " ", "\n", "\t", "\u00a0", "\u3000", "\ufeff",
           "<b>", "9", "٣", "𝔸", "."]


@pytest.mark.parametrize("name", list(_REFERENCE))
def test_text_helpers_give_the_regexes_answer(name: str) -> None:
    ours, theirs = _REFERENCE[name]
    rng = random.Random(5)
    texts = ["".join(rng.choice(_PIECES) for _ in range(rng.randrange(0, 12))) for _ in range(20_000)]
    differ = [t for t in texts if ours(t) != theirs(t)]
    assert not differ, differ[:5]


@pytest.mark.parametrize("output", [
    "It" + " " * 1_000_000 + "works",  # trim's `\s+$` rescans a run of spaces that does not end the text
    "a" + "-" * 1_000_000 + "b",  # the word-edge regex over a markdown rule inside one token
    "<" * 1_000_000,  # the tag regex rescans to the end from every `<` no `>` follows
], ids=["spaces", "dashes", "open-tags"])
def test_a_hostile_output_is_scored_in_linear_time(output: str) -> None:
    """Scoring an agent's 1 MB reply with the text scorers must not hold the run for hours (the regexes
    took 2.5 s on 20,000 spaces, 6 s on 20,000 dashes, quadratically more). A subprocess with a
    deadline, so a regression fails instead of hanging."""
    import subprocess
    import sys

    code_ = ("import sys; from evalgate.scorers.js import text as jstext; t = sys.stdin.read(); "
             "jstext.extract_keywords(t); jstext.sentiment(t)")
    done = subprocess.run([sys.executable, "-c", code_], input=output, text=True, timeout=120, capture_output=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(("value", "why"), [
    # Mastra's agent merges these into its own reply (a real agent run: "u, ok" for the first), so the text
    # its scorers read depends on the reply: evalgate refuses rather than read it differently
    ([{"role": "user", "content": "u"}, {"role": "assistant", "content": "A"}], "ending the input"),
    ([{"role": "assistant", "content": "A"}, {"role": "tool", "content": []}], "a tool message ending the input"),
    # merges evalgate does not reproduce: a null v4 text in merged messages (its cache key is "textundefined")
    ([{"role": "assistant", "content": [{"type": "text", "text": None}], "experimental_providerMetadata": {}},
      {"role": "assistant", "content": [{"type": "text", "text": "Y"}], "experimental_providerMetadata": {}}, "u"],
     "compares their cache keys in a way evalgate does not reproduce"),
    ([{"role": "assistant", "content": "A"}, {"role": "assistant", "content": {"format": 2, "parts": []}}, "u"],
     "has format-2 content"),
    ([{"role": "assistant", "content": [{"type": "tool-approval-request", "approvalId": "p"}]}, "u"],
     "no text or image or file or tool-call"),
    ([{"role": "user", "parts": [{"type": "text", "text": "u"}, {"type": "source-url", "sourceId": "s",
                                                                  "url": "https://example.com"}]}], "UI message"),
    ([{"role": "user", "content": [{"type": "tool-approval-response", "approvalId": "p", "approved": True}]}],
     "no text or image or file or tool-call"),
    ({"role": "developer", "content": "q"}, "Unsupported role"),
    ({"content": "q"}, "Unsupported role"),
    ([{"role": "user"}], "no content"),
    # the agent replaces an earlier message by a later one with its id (a real run reads "b"; evalgate reproduces
    # it for plain user messages, not with metadata, which may reorder them), keeps a signal
    # message with metadata of its own, and passes a v4 system message on unconverted
    ([{"role": "user", "content": "a", "id": "x"}, {"role": "user", "content": "b", "id": "x",
                                                    "metadata": {"k": 1}}], "the id of input"),
    ([{"role": "signal", "content": "s"}, "u"], "a signal message"),
    ([{"role": "system", "content": "s", "experimental_providerMetadata": {}}, "u"], "v4 system message"),
    # where the agent throws: a system message with no text, a number content
    ([{"role": "system", "content": ""}, "u"], "no text"),
    ([{"role": "system", "content": [{"type": "image", "image": "x"}]}, "u"], "no text"),
    ([{"role": "system", "content": "s", "parts": []}, "u"], "Invalid system message format"),
    ([{"role": "system"}, "u"], "no content"),
    ([{"role": "user", "content": 5}], "Cannot use 'in' operator"),
    ([{"role": "user", "content": [{"type": "image", "image": "x", "mimeType": "image/png"}, None]}], "null"),
])
def test_an_input_evalgate_cannot_read_as_mastra_does_is_refused_by_name(value: Any, why: str) -> None:
    item = Item(input=value)
    with pytest.raises(ValueError, match=why):
        code.input_text(item)
    with pytest.raises(ValueError, match=why):
        code.content_similarity().fn(item, Run(texts=["u"]))


@pytest.mark.parametrize(("value", "text"), [
    # what a real agent makes of these (tests/test_mastra_scorers.py, group input_shapes)
    ([{"role": "user", "content": {"text": "x"}}, "b"], ", b"),  # an object content that is no format 2: no text
    ([{"role": "user", "content": {"format": 2, "parts": None, "content": "c"}}], "c"),
    ([{"role": "user", "content": {"format": 2, "parts": [None, "x", {"type": "text", "text": "a"}]}}], "a"),
    ([{"role": "user", "content": [None, "x", 5, {}, {"type": "source"}, {"type": "text", "text": "a"}]}], "a"),
    ([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}], "a\nb"),
    # an AI SDK v4 message keeps its parts only: the last text part is read
    ([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], "threadId": "t"}],
     "b"),
    ([{"role": "user", "content": [{"type": "text", "text": "a"},
                                   {"type": "image", "image": "x", "mimeType": "image/png"},
                                   {"type": "text", "text": "b"}]}], "b"),
    ([{"role": "system", "content": [{"type": "text", "text": "s"}]}, "u"], "u"),
    # assistant and tool messages in a row are one input message: the last non-empty text of them
    ([{"role": "user", "content": "u"},
      {"role": "assistant", "content": [{"type": "text", "text": "Let me check."},
                                        {"type": "tool-call", "toolCallId": "c1", "toolName": "w", "input": {}}]},
      {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "w",
                                    "output": {"type": "text", "value": "20C"}}]},
      {"role": "user", "content": "v"}], "u, Let me check., v"),
    ([{"role": "assistant", "content": "A1"}, {"role": "assistant", "content": "A2"}, "u"], "A2, u"),
    ([{"role": "assistant", "content": "A1"}, {"role": "tool", "content": "20C"}, "u"], "20C, u"),
    ([{"role": "assistant", "content": "A1"}, {"role": "assistant", "content": [{"type": "text", "text": ""}]}, "u"],
     "A1, u"),
    # v4 text parts of merged messages: one is appended while the message has fewer parts of its text
    ([{"role": "assistant", "content": [{"type": "text", "text": "X"}, {"type": "text", "text": "Y"}],
       "experimental_providerMetadata": {}},
      {"role": "assistant", "content": [{"type": "text", "text": "X"}], "experimental_providerMetadata": {}}, "u"],
     "Y, u"),
    # a user message's tool-call, tool-result and reasoning parts add no text (a v4 one: the last text part)
    ([{"role": "user", "content": [{"type": "reasoning", "text": "r"}, {"type": "text", "text": "a"},
                                   {"type": "text", "text": "b"}]}], "a\nb"),
    ([{"role": "user", "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "w", "args": {}},
                                   {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}], "b"),
    # an AI SDK UI message of text parts is taken for a v4 one: the last text part is read
    ([{"role": "user", "parts": [{"type": "text", "text": "a"}, {"type": "step-start"}, {"type": "text", "text": "b"},
                                 {"type": "text", "text": ""}]}], "b"),
    # one with a file, reasoning or tool part is a v5 one: its texts joined with ""
    ([{"role": "user", "parts": [{"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,iVBO"},
                                 {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}], "ab"),
    # a user message with the id of an earlier one replaces it, and goes last; an equal one is dropped
    ([{"role": "user", "content": "a", "id": "x"}, "m", {"role": "user", "content": "b", "id": "x"}], "m, b"),
    ([{"role": "user", "content": "a", "id": "x"}, "m", {"role": "user", "content": "a", "id": "x"}], "a, m"),
])
def test_a_message_list_input_is_read_as_a_real_agent_converts_it(value: Any, text: str) -> None:
    assert code.input_text(Item(input=value)) == text


def test_the_system_prompt_and_the_input_messages_as_mastra_reads_them() -> None:
    system = {"role": "system", "content": "Be brief."}
    assert messages.mastra_system_prompt([system, system, {"role": "system", "content": [
        {"type": "text", "text": "a"}, {"type": "text", "text": ""}, {"type": "text", "text": "b"}]}, "u"]) \
        == "Be brief.\n\na\nb"
    assert messages.mastra_system_prompt("Be brief.") == messages.mastra_system_prompt({"city": "Paris"}) == ""
    # no input message: the tool-call accuracy scorers throw; a lone assistant message is merged into the reply
    assert messages.no_input_messages(system) and messages.no_input_messages([system, system])
    assert not messages.no_input_messages([{"role": "assistant", "content": "A"}])
    assert not messages.no_input_messages([{"role": "user", "content": "a", "id": "x"},
                                           {"role": "user", "content": "b", "id": "x"}])
    with pytest.raises(ValueError, match="no text"):
        messages.no_input_messages([{"role": "system", "content": ""}, "u"])
    item = Item(input=[system])
    with pytest.raises(ValueError, match="no message"):
        code.tool_call_accuracy_code(expected_tool="t").fn(item, Run(texts=["x"], tool_calls=[ToolCall("t")]))


@pytest.mark.parametrize("value", [{"city": "Paris", "days": 2}, [1, 2], 5, [{"city": "Paris"}]])
def test_a_structured_input_is_read_as_its_json(value: Any) -> None:
    """An input that is no message (an HTTP target's body, a function's arguments) is no input a Mastra agent
    takes: the scorers compare with its JSON text, as before, rather than refuse every such item."""
    text = json.dumps(value, ensure_ascii=False)
    assert code.input_text(Item(input=value)) == text
    assert score(code.content_similarity(), text.upper(), input=value) == 1.0


def test_tool_call_accuracy_errors_on_an_output_of_no_message_as_mastra_throws() -> None:
    from evalgate import run_evals
    from evalgate.scorers import code

    scorer = code.tool_call_accuracy_code(expected_tool="book")
    data = [
        {"id": "none", "input": "Book it", "output": {"messages": []}},
        # a conversation's turns are one list to a reader of the whole: empty only when every turn is
        {"id": "turns", "inputs": ["Book it", "Now"], "outputs": [{"messages": []}, "Booked."]},
        {"id": "all-empty", "inputs": ["Book it", "Now"], "outputs": [{"messages": []}, {"messages": []}]},
    ]
    result = run_evals(data=data, scorers=[scorer])
    none, turns, empty = result.items
    key = "tool_call_accuracy_code:book"
    assert "holds no message" in none.scorer_errors[key]
    assert not turns.scorer_errors and turns.scores[key] == 0.0
    assert "turn 1: the output holds no message" in empty.scorer_errors[key]
