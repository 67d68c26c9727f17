"""qa_em and qa_f1: the answer read as search-augmented models write it, golds in every shape the public
datasets keep them, bounds on every column, veRL's data sources, and the real service."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

import rewardkit
from rewardkit.qa import GoldError, read_answer, read_golds
from rewardkit.qa.golds import MAX_GOLD_CHARS, MAX_GOLDS
from tests.support.helpers import Server
from tests.support.timing import busy

# (completion, the answer read, the reason) - each a format a model family writes
READ = [
    (  # Search-R1 / ZeroSearch: think, search, information, think, answer
        "<think>I need to find it.</think>\n<search> capital of France </search>\n\n<information>Doc 1"
        "(Title: Lyon) Lyon is ...</information>\n\n<think>Paris.</think>\n<answer> Paris </answer>",
        "Paris",
        None,
    ),
    ("<answer>The final answer is \\boxed{Paris}</answer>", "Paris", None),  # ReSearch
    (
        "<|begin_of_query|>capital<|end_of_query|><|begin_of_documents|>Lyon<|end_of_documents|>"
        "So the capital is \\boxed{Paris}.",
        "Paris",
        None,
    ),  # R1-Searcher
    ("Paris is on the Seine.\nSo the answer is: Paris.", "Paris", None),  # IRCoT / HotpotQA CoT
    ('Thinking.\nFinal Answer: "Paris"', "Paris", None),
    ("Thinking.\n**Answer:** *Paris*", "Paris", None),
    ("It is the capital.\nThe answer is Paris.", "Paris", None),
    ("Paris<|im_end|>", "Paris", None),  # special tokens at the end
    ("<think>a</think>\n\nParis\n\n", "Paris", None),  # the final line
    ("<answer>Lyon</answer><answer>Paris</answer>", "Paris", None),  # the last block
    (
        '<tool_call>{"name": "search"}</tool_call><tool_response>Lyon</tool_response><answer>Paris</answer>',
        "Paris",
        None,
    ),  # DeepResearcher
    ("retrieved Lyon text</information>\n<answer>Paris</answer>", "Paris", None),  # a block opened before
    ("<think>Paris<answer>Paris</answer>", None, "unclosed_think"),
    ("<answer>Pa", None, "unclosed_answer"),
    ("<answer> </answer>", None, "empty_answer"),
    ("<think>Paris</think>", None, "no_answer"),
    ("<think>x</think><search>Paris</search>", None, "no_answer"),  # a query is no answer
    ("<think>x</think><information>Paris", None, "no_answer"),  # unclosed retrieval hides the rest
    ("<answer>" + "Paris " * 400 + "</answer>", None, "answer_too_long"),
]


@pytest.mark.parametrize(("completion", "answer", "reason"), READ)
def test_the_answer_is_read_as_models_write_it(
    completion: str, answer: str | None, reason: str | None
) -> None:
    assert read_answer(completion) == (answer, reason)


def test_chat_completions_are_read_from_the_last_assistant_message() -> None:
    chat = [[{"role": "assistant", "content": "<think>x</think><answer>Paris</answer>"}]]
    assert rewardkit.get("qa_em")(chat, solution=[["Paris"]]) == [1.0]
    assert rewardkit.get("qa_f1")(chat, solution=[["Paris"]]) == [1.0]


GOLDS = [
    ("Paris", ("Paris",)),
    (["Paris", "City of Light"], ("Paris", "City of Light")),
    (("Paris",), ("Paris",)),
    (np.array(["Paris", "Lyon"]), ("Paris", "Lyon")),  # veRL's parquet rows
    ('["Paris", "Lyon"]', ("Paris", "Lyon")),
    ('{"target": ["Paris"]}', ("Paris",)),
    ({"target": np.array(["Paris"])}, ("Paris",)),  # Search-R1's ground truth from parquet
    ({"text": ["Denver Broncos", "Broncos"], "answer_start": [177, 184]}, ("Denver Broncos", "Broncos")),
    ({"value": "Paris", "aliases": ["Paris, France"]}, ("Paris", "Paris, France")),  # TriviaQA
    ({"answers": ["x"]}, ("x",)),
    (1995, ("1995",)),
    (2.5, ("2.5",)),
    ("[not json", ("[not json",)),
    ([], ()),
    (None, ()),
]


@pytest.mark.parametrize(("value", "golds"), GOLDS)
def test_golds_are_read_in_every_shape_datasets_use(value: object, golds: tuple[str, ...]) -> None:
    assert read_golds(value) == golds


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([True], "must be text"),
        ([["Paris"]], "must be text"),
        ('[["Paris"]]', "must be text"),  # JSON text of nested lists
        ("[" * 50 + "]" * 50, "must be text"),  # nested deeper than golds are: the text, over its bound
        ([float("nan")], "non-finite"),
        ([10**4000], "too long"),
        (["x"] * (MAX_GOLDS + 1), "the limit is 1000"),
        ("x" * (MAX_GOLD_CHARS + 1), "characters; the limit"),
        ("[" + '"x",' * 100_000 + '"x"]', "characters; the limit"),  # JSON text over its bound
        ({"label": "Paris"}, "needs one of the keys"),
    ],
)
def test_golds_over_the_bounds_or_of_no_known_shape_are_refused(value: object, message: str) -> None:
    with pytest.raises(GoldError, match=message):
        read_golds(value)
    scored = rewardkit.get("qa_em").score_detailed(["<answer>x</answer>"], solution=[value])
    assert scored.values == [None] and scored.reasons == ["invalid_gold"]


def test_reasons_say_why_an_item_was_not_judged() -> None:
    reward = rewardkit.get("qa_em", substring=True)
    completions = ["<answer>Paris</answer>", "<answer>Paris</answer>", "no", "<answer>Lyon or Paris</answer>"]
    scored = reward.score_detailed(completions, solution=[None, ["the"], ["no"], ["Paris"]])
    assert scored.values == [None, None, 1.0, 0.0]
    assert scored.reasons == ["missing_solution", "empty_gold", None, "hedged_answer"]
    assert scored.details[2] == {"answer": "no", "gold": "no"}


def test_parameters_are_checked() -> None:
    assert rewardkit.get("qa_em", correct=1.0, wrong=-1.0)(["<answer>x</answer>"], solution=["y"]) == [-1.0]
    for bad in ({"max_ratio": 0.5}, {"max_ratio": float("nan")}, {"max_ratio": 101}, {"substring": "yes"}):
        with pytest.raises(ValueError, match="qa_em"):
            rewardkit.get("qa_em", **bad)
    assert rewardkit.get("qa_em", substring=True, max_ratio=5)(
        ["<answer>it is in Paris, France</answer>"], solution=["Paris"]
    ) == [1.0]


def test_hostile_text_is_read_in_linear_time() -> None:
    """Megabyte completions made of what the readers search for: each well under a second."""
    slow = busy()
    hostile = [
        "<answer>" * 100_000,
        "<search>" * 100_000 + "</search>",
        "</information>" * 50_000,
        "Answer: x\n" * 100_000,
        "the answer is " * 70_000,
        "\\boxed{" * 100_000,
        "<think>" + "a" * 1_000_000 + "</think>" + "b" * 1_000_000,
        "x" * 2_000_000,
    ]
    reward = rewardkit.get("qa_f1")
    for text in hostile:
        start = time.perf_counter()
        reward.score_detailed([text], raise_on_error=True, solution=[["x"]])
        assert time.perf_counter() - start < 1.0 * slow, text[:20]


def test_verl_data_sources_score_search_r1_rows() -> None:
    from rewardkit.adapters import verl

    right = "<think>x</think><search>q</search><information>d</information><answer>Paris</answer>"
    for name in ("nq", "triviaqa", "popqa", "hotpotqa", "2wikimultihopqa", "musique", "bamboogle"):
        for source in (name, f"searchR1_{name}"):
            truth = {"target": np.array(["Paris", "City of Light"])}
            assert verl.compute_score(source, right, truth) == 1.0, source
            assert verl.compute_score(source, "<answer>Lyon</answer>", truth) == 0.0, source
    detailed = verl.compute_score_detailed("nq", "<answer></answer>", {"target": ["Paris"]})
    assert detailed == {"score": 0.0, "reason": "empty_answer"}


# ---------------------------------------------------------------- through the real service


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    s = Server({}, Path(tmp_path_factory.mktemp("qa")) / "server.log")
    yield s
    s.stop()


def test_the_service_lists_and_scores_both(server: Server) -> None:
    listed = {r["name"]: r for r in httpx.get(server.url + "/rewards", timeout=30).json()["rewards"]}
    assert listed["qa_em"]["columns"] == ["solution"] and listed["qa_f1"]["columns"] == ["solution"]
    params = listed["qa_em"]["params"]
    assert params["substring"]["default"] is False and params["substring"]["settable"] is True
    assert params["max_ratio"]["cap"] == 100
    body = {
        "funcs": ["qa_f1", {"name": "qa_em", "params": {"substring": True}}],
        "completions": [
            "<answer>the Eiffel Tower</answer>",
            "<answer>Paris, France</answer>",
            "<answer></answer>",
        ],
        "columns": {"solution": ['["Eiffel Tower, Paris"]', {"target": ["Paris"]}, ["Paris"]]},
    }
    response = httpx.post(server.url + "/score", json=body, timeout=60)
    assert response.status_code == 200, response.text
    scores = response.json()["scores"]
    assert scores["qa_f1"] == [0.8, pytest.approx(2 / 3), 0.0]
    assert scores["qa_em"] == [0.0, 1.0, 0.0]


def test_the_service_caps_what_a_caller_sets(server: Server) -> None:
    body = {
        "funcs": [{"name": "qa_em", "params": {"max_ratio": 1000}}],
        "completions": ["<answer>x</answer>"],
        "columns": {"solution": ["x"]},
    }
    response = httpx.post(server.url + "/score", json=body, timeout=60)
    assert response.status_code == 422 and "max_ratio" in response.text, response.text
    bad_gold = {
        "funcs": ["qa_em"],
        "completions": ["<answer>x</answer>"],
        "columns": {"solution": [[[["x"]]]]},
    }
    response = httpx.post(server.url + "/score", json=bad_gold, timeout=60)
    assert response.status_code == 200 and response.json()["scores"]["qa_em"] == [None], response.text
