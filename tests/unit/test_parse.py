from __future__ import annotations

import itertools
import random

import pytest

from swarmcore import Agent, Flow, UserError, chain, parallel


def make(*names: str) -> list[Agent]:
    return [Agent(n, f"{n} instructions") for n in names]


A, B, C, D, E, F = make("a", "b", "c", "d", "e", "f")
AGENTS = [A, B, C, D, E, F]


def error_for(expression: object, agents: object = AGENTS) -> str:
    with pytest.raises(UserError) as info:
        Flow.parse(expression, agents)  # pyright: ignore[reportArgumentType] -- bad values on purpose
    return str(info.value)


def caret(message: str) -> tuple[str, int]:
    """The line shown in an error and the 0-based column its caret points at."""
    lines = message.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "^")
    return lines[at - 1].removeprefix("    "), lines[at].index("^") - 4


# --- building the same flow as the operators -----------------------------------------


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a", Flow([A])),
        ("a >> b >> c", A >> B >> C),
        ("a >> (b | c) >> d", A >> (B | C) >> D),
        ("(a >> b) | c", (A >> B) | C),
        ("a | b | c", A | B | C),
        ("(a | b) | c", A | B | C),
        ("a | (b | c)", A | B | C),
        ("a >> (b >> c)", A >> B >> C),
        ("((a))", Flow([A])),
        ("(a >> b) | (c >> d)", (A >> B) | (C >> D)),
        ("a >> ((b >> (c | d)) | e) >> f", A >> ((B >> (C | D)) | E) >> F),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_equals_the_flow_built_with_operators(expression: str, expected: Flow) -> None:
    assert Flow.parse(expression, AGENTS) == expected


def test_three_way_parallel_is_one_group() -> None:
    assert Flow.parse("a | b | c", AGENTS).steps == [[A, B, C]]


def test_result_holds_the_given_agent_objects() -> None:
    flow = Flow.parse("a >> (b | c)", AGENTS)
    assert flow.agents[0] is A
    assert flow.agents[2] is C
    assert chain(A, parallel(B, C)) == flow


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("a >> b | c", A >> (B | C)),
        ("a | b >> c", (A | B) >> C),
        ("a | b >> c | d >> e", (A | B) >> (C | D) >> E),
    ],
    ids=["seq-then-par", "par-then-seq", "alternating"],
)
def test_bar_binds_tighter_than_shift(expression: str, expected: Flow) -> None:
    assert Flow.parse(expression, AGENTS) == expected


@pytest.mark.parametrize(
    "expression",
    ["a>>(b|c)>>d", "a\n>>\n(b\n  | c)\n>> d", "\ta >>  ( b|c )\r\n>>d"],
    ids=["no-spaces", "newlines", "tabs-and-crlf"],
)
def test_whitespace_is_free(expression: str) -> None:
    assert Flow.parse(expression, AGENTS) == A >> (B | C) >> D


def test_names_with_dashes_underscores_and_digits() -> None:
    web, private = make("web-search", "_private2")
    assert Flow.parse("web-search >> _private2", [web, private]) == web >> private


# --- round trips ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flow",
    [
        Flow([A]),
        A >> B >> C,
        A | B | C,
        A >> (B | C) >> D,
        (A >> B) | C,
        (A >> B) | (C >> D),
        A >> ((B >> (C | D)) | E) >> F,
        ((A >> (B | (C >> D))) | E) >> F,
        (A >> (B | (C >> (D | E)))) | F,
    ],
    ids=lambda f: f.expression(),
)
def test_round_trip(flow: Flow) -> None:
    parsed = Flow.parse(flow.expression(), flow.agents)
    assert parsed == flow
    assert parsed.expression() == flow.expression()


def random_flow(rng: random.Random, names: itertools.count[int], depth: int) -> Flow:
    """A chain of 1-3 steps; a step is an agent or a group whose members may be branches."""

    def agent() -> Agent:
        return Agent(f"n{next(names)}", "x")

    def member() -> Agent | Flow:
        if depth > 0 and rng.random() < 0.4:
            return random_flow(rng, names, depth - 1)
        return agent()

    steps = [
        agent() if rng.random() < 0.4 else parallel(*(member() for _ in range(rng.randint(2, 3))))
        for _ in range(rng.randint(1, 3))
    ]
    return chain(*steps)


@pytest.mark.parametrize("seed", range(40))
def test_round_trip_random_shapes(seed: int) -> None:
    flow = random_flow(random.Random(seed), itertools.count(), depth=3)
    assert Flow.parse(flow.expression(), flow.agents) == flow


# --- what models wrap around an expression --------------------------------------------


@pytest.mark.parametrize(
    "expression",
    [
        "  a >> b  ",
        "`a >> b`",
        "```a >> b```",
        "```\na >> b\n```",
        "```text\na >> b\n```",
        "a >> b.",
        "`a >> b`.",
        "`a >> b.`",
        "\n```flow\n(a\n  >> b).\n```\n",
    ],
)
def test_wrapping_is_stripped(expression: str) -> None:
    assert Flow.parse(expression, AGENTS) == A >> B


@pytest.mark.parametrize(
    ("expression", "char", "column"),
    [
        ("`a >> b", "'`'", 0),
        ("a >> b`", "'`'", 6),
        ("a >> b..", "'.'", 6),
        ("a. >> b", "'.'", 1),
        ("Flow: a >> b", "':'", 4),
    ],
)
def test_other_wrapping_is_an_error(expression: str, char: str, column: int) -> None:
    message = error_for(expression)
    assert f"unexpected character {char}" in message
    assert caret(message)[1] == column


# --- syntax errors ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "problem", "column", "fix"),
    [
        ("a b", "two agent names in a row", 2, "Put '>>' (one after another) or '|'"),
        ("a >> b c", "two agent names in a row", 7, "between them"),
        ("(a) b", "two agent names in a row", 4, "between them"),
        ("(a) (b)", "'(' right after an agent or group", 4, "between them"),
        ("a >>", "'>>' with nothing after it (found the end)", 2, "Put an agent name or '('"),
        ("a |", "'|' with nothing after it (found the end)", 2, "Put an agent name or '('"),
        ("a >> | b", "'>>' with nothing after it (found '|')", 2, "after it"),
        ("a | >> b", "'|' with nothing after it (found '>>')", 2, "after it"),
        ("a || b", "'|' with nothing after it (found '|')", 2, "after it"),
        ("(a >> ) b", "'>>' with nothing after it (found ')')", 3, "after it"),
        (">> a", "'>>' with nothing before it", 0, "Put an agent name or ')' before it"),
        ("(| a)", "'|' with nothing before it", 1, "before it"),
        ("(a >> b", "missing ')'", 7, "Add a ')' to close the '(' at column 1"),
        ("a >> (b | (c >> d)", "missing ')'", 18, "close the '(' at column 6"),
        ("a)", "unmatched ')'", 1, "Remove it, or add the '(' it closes"),
        (") a", "unmatched ')'", 0, "Remove it"),
        ("(a >> b)) | c", "unmatched ')'", 8, "Remove it"),
        ("()", "empty parentheses", 0, "Put agent names inside them"),
        ("a >> ( ) >> b", "empty parentheses", 5, "Put agent names inside them"),
        ("", "the expression is empty", 0, "Join agent names with '>>'"),
        ("   \n ", "the expression is empty", 0, "e.g. 'a >> (b | c) >> d'"),
        ("``", "the expression is empty", 0, "Join agent names"),
        ("a -> b", "unexpected character '-'", 2, "Use '>>'"),
        ("a > b", "unexpected character '>'", 2, "Use '>>'"),
        ("a >>> b", "unexpected character '>'", 4, "Use '>>'"),
        ("a, b", "unexpected character ','", 1, "Use '|'"),
        ("a & b", "unexpected character '&'", 2, "Use '|'"),
        ("'a' >> b", 'unexpected character "\'"', 0, "without quotes"),
        ("[a, b]", "unexpected character '['", 0, "parentheses"),
        ("a >> b;", "unexpected character ';'", 6, "Join agent names"),
        ("1st >> b", "unexpected character '1'", 0, "Join agent names"),
        ("__import__('os')", 'unexpected character "\'"', 11, "without quotes"),
    ],
)
def test_syntax_errors(expression: str, problem: str, column: int, fix: str) -> None:
    message = error_for(expression)
    assert message.startswith(f"Invalid flow expression at column {column + 1}: {problem}.")
    assert fix in message
    shown, at = caret(message)
    assert at == column
    stripped = expression.strip().strip("`")
    assert shown == stripped


def test_multi_line_error_names_the_line_and_shows_it() -> None:
    message = error_for("a >>\n  b c\n>> d")
    assert message.startswith("Invalid flow expression at line 2, column 5: two agent names")
    assert caret(message) == ("  b c", 4)


def test_caret_lines_up_under_tabs() -> None:
    shown, at = caret(error_for("a\t>>\tb c"))
    assert shown == "a >> b c"
    assert at == 7


def test_very_long_line_is_shown_around_the_error() -> None:
    agents = [Agent(f"n{i}", "x") for i in range(100)]
    expression = " >> ".join(a.name for a in agents[:50]) + " >> zz >> " + "n99 >> " * 20
    shown, at = caret(error_for(expression, agents))
    assert shown.startswith("...")
    assert shown.endswith("...")
    assert len(shown) < 130
    assert shown[at : at + 2] == "zz"


# --- names ----------------------------------------------------------------------------------


def test_unknown_name_suggests_close_names_and_lists_all() -> None:
    researcher, writer, editor = make("researcher", "writer", "editor")
    message = error_for("researcher >> reseacher >> writer", [researcher, writer, editor])
    assert "unknown agent 'reseacher'" in message
    assert "Did you mean 'researcher'?" in message
    assert "Available agents: researcher, writer, editor." in message
    assert caret(message)[1] == 14


def test_unknown_name_without_close_names() -> None:
    message = error_for("a >> zzz")
    assert "unknown agent 'zzz'" in message
    assert "Did you mean" not in message
    assert "Available agents: a, b, c, d, e, f." in message


def test_unknown_name_with_no_agents() -> None:
    assert "Available agents: (none)." in error_for("a", [])


def test_agent_used_twice() -> None:
    message = error_for("a >> (b | a)")
    assert "agent 'a' is used twice (first at column 1)" in message
    assert "names must be unique" in message
    assert "agent.clone(name='a_2')" in message
    assert caret(message)[1] == 10


def test_agent_used_twice_under_two_mapping_keys() -> None:
    message = error_for("x | y", {"x": A, "y": A})
    assert "agent 'a' (as 'y') is used twice (first at column 1)" in message
    assert caret(message)[1] == 4


# --- the agents argument --------------------------------------------------------------------


def test_mapping_of_name_to_agent() -> None:
    assert Flow.parse("a >> (b | c)", {a.name: a for a in AGENTS}) == A >> (B | C)


def test_mapping_keys_may_be_aliases() -> None:
    assert Flow.parse("first >> second", {"first": A, "second": B}) == A >> B


def test_any_iterable_of_agents() -> None:
    assert Flow.parse("a >> b", (a for a in AGENTS)) == A >> B


def test_same_agent_listed_twice_is_fine() -> None:
    assert Flow.parse("a >> b", [A, B, A]) == A >> B


def test_two_agents_with_the_same_name() -> None:
    message = error_for("a", [A, Agent("a", "another")])
    assert "Two agents are named 'a'" in message
    assert "rename one" in message


@pytest.mark.parametrize(
    ("agents", "fragment"),
    [
        (["a", "b"], "got 'a' among the agents; pass Agent objects"),
        ({"a": "a"}, "got 'a' among the agents"),
        ({1: A}, "got the agent name 1; names are strings"),
        ("ab", "takes the agents as a list or a mapping of name to agent, got str"),
        (None, "got NoneType"),
    ],
    ids=["strings", "mapping-to-string", "non-string-key", "a-string", "none"],
)
def test_agents_that_are_not_agents(agents: object, fragment: str) -> None:
    assert fragment in error_for("a", agents)


@pytest.mark.parametrize("expression", [None, 42, b"a >> b", A >> B], ids=repr)
def test_expression_must_be_a_string(expression: object) -> None:
    assert "A flow expression must be a string" in error_for(expression)


# --- limits -----------------------------------------------------------------------------------


def test_length_limit() -> None:
    assert Flow.parse("a" + " " * 9_999, AGENTS) == Flow([A])
    message = error_for("a" + " " * 10_000)
    assert "10,001 characters long; the limit is 10,000" in message


def test_depth_limit() -> None:
    assert Flow.parse("(" * 50 + "a" + ")" * 50, AGENTS) == Flow([A])
    message = error_for("(" * 51 + "a" + ")" * 51)
    assert "parentheses nested more than 50 deep" in message
    assert caret(message)[1] == 50


@pytest.mark.parametrize(
    "expression",
    ["(" * 4_000 + "a" + ")" * 4_000, "(" * 9_999, "a >> " + "( " * 4_000 + "b"],
    ids=["balanced", "only-open", "after-a-name"],
)
def test_deep_nesting_is_a_user_error_not_a_recursion_error(expression: str) -> None:
    assert "nested more than 50 deep" in error_for(expression)


def test_long_flat_chain_parses_without_recursion() -> None:
    agents = [Agent(f"n{i}", "x") for i in range(1_000)]
    flow = Flow.parse(" >> ".join(a.name for a in agents), agents)
    assert flow == chain(*agents)
