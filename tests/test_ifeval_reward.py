"""The ifeval reward: the column forms users have (IFEval/IFBench, open-instruct, veRL), the prompt it reads,
modes, loose variants, reasons and bounds; open-instruct's func_name checks; the documentation table."""

from __future__ import annotations

import concurrent.futures
import json
from typing import Any

import pytest

import rewardkit
from rewardkit.instructions import TABLE, Context
from rewardkit.instructions.ifeval import IDS
from rewardkit.instructions.rows import MAX_INSTRUCTIONS, loose_variants, read_instructions
from rewardkit.instructions.table import BEGIN, END, README, markdown

OK = "Rain fell all day and the river rose over the old stone bridge."


def score(completions: list[Any], **kw: Any) -> rewardkit.Scored:
    params = {k: kw.pop(k) for k in ("mode", "loose", "rules") if k in kw}
    return rewardkit.get("ifeval", **params).score_detailed(completions, **kw)


def test_ifeval_has_its_25_ids_and_open_instruct_its_25_functions() -> None:
    assert len(IDS) == 25 and all(TABLE[i].source == "ifeval" for i in IDS)
    funcs = [s.id for s in TABLE.values() if s.source == "open-instruct"]
    assert len(funcs) == 25 and "validate_no_commas" in funcs


@pytest.mark.parametrize(
    "columns",
    [
        {"instruction_id_list": [["punctuation:no_comma"]], "kwargs": [[{}]]},
        {"instruction_id_list": ['["punctuation:no_comma"]'], "kwargs": ["[{}]"]},  # JSON text
        {"instruction_id_list": [["punctuation:no_comma"]]},  # no kwargs column: no arguments
        {
            "instruction_id_list": [["punctuation:no_comma"]],
            "kwargs": [[{"num_words": None}]],
        },  # nulls dropped
        {"ground_truth": [{"func_name": "validate_no_commas", "N": None}]},  # open-instruct, a dict
        {"ground_truth": ['{"func_name": "validate_no_commas"}']},  # ... JSON text
        {"ground_truth": [[{"func_name": "validate_no_commas"}, {"func_name": "validate_title", "N": None}]]},
        {"ground_truth": ["[{'instruction_id': ['punctuation:no_comma'], 'kwargs': [None]}]"]},  # Python text
        {"ground_truth": [{"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}]},
        {"reward_model": [{"ground_truth": '{"func_name": "validate_no_commas"}', "style": "rule"}]},  # veRL
    ],
)
def test_every_column_form_reads_the_same_instructions(columns: dict[str, Any]) -> None:
    title = "<<River>>\n" if "validate_title" in json.dumps(columns) else ""
    assert score([title + OK], **columns).values == [1.0]
    assert score([title + OK.replace("day and", "day, and")], **columns).values == [0.0]


@pytest.mark.parametrize(
    ("columns", "reason"),
    [
        ({}, "no_instructions"),
        ({"instruction_id_list": [[]]}, "no_instructions"),
        ({"instruction_id_list": [["keywords:none_such"]]}, "unknown_instruction:keywords:none_such"),
        ({"ground_truth": ['{"func_name": "verify_everything"}']}, "unknown_instruction:verify_everything"),
        ({"instruction_id_list": [["keywords:frequency"]], "kwargs": [[{"keyword": "x"}]]}, None),
        ({"instruction_id_list": [["punctuation:no_comma"]], "kwargs": [[{}, {}]]}, "invalid_instructions"),
        ({"ground_truth": ["not json ["]}, "invalid_instructions"),
        ({"ground_truth": [42]}, "invalid_instructions"),
        (
            {"instruction_id_list": [["punctuation:no_comma"] * (MAX_INSTRUCTIONS + 1)]},
            "too_many_instructions",
        ),
    ],
)
def test_rows_that_cannot_be_judged_are_none_with_a_reason(
    columns: dict[str, Any], reason: str | None
) -> None:
    result = score([OK], **columns)
    assert result.values == [None]
    assert result.reasons[0] == (reason or "bad_kwargs:keywords:frequency")


def test_all_fraction_reasons_and_details() -> None:
    ids = [["punctuation:no_comma", "detectable_format:title", "change_case:english_lowercase"]]
    kwargs: list[list[dict[str, Any]]] = [[{}, {}, {}]]
    text = "<<river>>\nrain fell all day, and the river rose."
    strict = score([text], instruction_id_list=ids, kwargs=kwargs)
    assert strict.values == [0.0] and strict.reasons == ["failed:punctuation:no_comma"]
    assert strict.details[0] == [
        {"id": "punctuation:no_comma", "followed": False},
        {"id": "detectable_format:title", "followed": True},
        {"id": "change_case:english_lowercase", "followed": True},
    ]
    frac = score([text], instruction_id_list=ids, kwargs=kwargs, mode="fraction")
    assert frac.values == [pytest.approx(2 / 3)]


def test_the_answer_is_after_the_reasoning_and_an_unclosed_think_is_none_of_it() -> None:
    ids = {"instruction_id_list": [["punctuation:no_comma"]] * 4}
    result = score(
        [
            "<think>Commas, commas, commas.</think>" + OK,  # the reasoning's commas do not count
            "<think>" + OK + "</think>Sure, here.",  # nor does its text pass
            "<think>" + OK,  # truncated reasoning: no answer
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": OK}],  # chat
        ],
        **ids,
    )
    assert result.values == [1.0, 0.0, 0.0, 1.0]
    assert result.reasons[2] == "unclosed_think"


def test_an_empty_answer_follows_nothing_under_both_rule_sets() -> None:
    ids = {"instruction_id_list": [["punctuation:no_comma", "keywords:forbidden_words"]] * 2}
    kwargs = {"kwargs": [[{}, {"forbidden_words": ["rain"]}]] * 2}
    for rules in ("reference", "robust"):
        assert score(["", "<think>x</think>   "], **ids, **kwargs, rules=rules).values == [0.0, 0.0]
    # marks only: the reference checks it (no comma, no forbidden word: a pass), the robust rules do not
    one = {"instruction_id_list": ids["instruction_id_list"][:1], "kwargs": kwargs["kwargs"][:1]}
    assert score(["***"], **one, rules="reference").values == [1.0]
    assert score(["***"], **one).values == [0.0]


def test_loose_variants_never_leave_nothing() -> None:
    # the middle line alone ("***", and "" once the * are removed) has no word: dropped
    assert loose_variants("Sure:\n***\nBye") == [
        "Sure:\n***\nBye",
        "***\nBye",
        "Sure:\n***",
        "Sure:\n\nBye",
        "\nBye",
        "Sure:\n",
    ]
    assert "***" in loose_variants("Sure:\n***\nBye", robust=False)
    ids = {"instruction_id_list": [["startend:quotation"]] * 2}
    text = 'Here it is:\n"' + OK + '"\nHope that helps!'
    assert score([text, '"' + OK + '"'], **ids, loose=True).values == [1.0, 1.0]
    assert score([text, '"' + OK + '"'], **ids).values == [0.0, 1.0]


def test_the_prompt_is_read_from_prompt_prompts_or_messages() -> None:
    request = "Name three rivers."
    prompt = request + " First repeat the request word for word without change, then give your answer"
    answer = request + "\nThe Nile, the Amazon and the Danube."
    ids = {"instruction_id_list": [["combination:repeat_prompt"]]}
    chat = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": prompt}]
    assert score([answer], **ids, prompt=[prompt]).values == [1.0]
    assert score([answer], **ids, prompts=[chat]).values == [1.0]  # TRL
    assert score([answer], **ids, messages=[[*chat, {"role": "assistant", "content": answer}]]).values == [
        1.0
    ]
    assert score(["The Nile."], **ids, prompt=[prompt]).values == [0.0]  # no repeat
    assert score([request], **ids, prompt=[prompt]).values == [0.0]  # a repeat and no answer
    no_prompt = score([answer], **ids)
    assert no_prompt.values == [None] and no_prompt.reasons == ["bad_kwargs:combination:repeat_prompt"]


def test_bounds_and_bad_parameters() -> None:
    long = score(["a " * 60_000], instruction_id_list=[["punctuation:no_comma"]])
    assert long.values == [0.0] and long.reasons == ["answer_too_long"]
    for bad in ({"mode": "most"}, {"rules": "lenient"}, {"loose": "yes"}, {"max_answer_chars": 0}):
        with pytest.raises(ValueError, match="ifeval"):
            rewardkit.get("ifeval", **bad)


def test_unreadable_text_is_refused_before_it_is_parsed() -> None:
    from rewardkit.instructions.rows import RowError

    with pytest.raises(RowError) as info:
        read_instructions(None, None, "[" * 300_000)
    assert info.value.reason == "invalid_instructions"
    with pytest.raises(RowError):  # deep nesting within the size bound: a clear refusal, never a crash
        read_instructions(None, None, "[" * 100_000 + "]" * 100_000)


def test_same_verdicts_from_many_threads() -> None:
    texts = [f"Le fleuve numéro {n} monte lentement sous le vieux pont de pierre." for n in range(30)]
    texts += [OK.replace("rose", f"rose {n} feet") for n in range(30)]
    ids = [["language:response_language", "punctuation:no_comma"]] * len(texts)
    kwargs = [[{"language": "fr"}, {}]] * len(texts)
    reward = rewardkit.get("ifeval")
    serial = reward(texts, instruction_id_list=ids, kwargs=kwargs)

    def one(i: int) -> float | None:
        return reward([texts[i]], instruction_id_list=[ids[i]], kwargs=[kwargs[i]])[0]

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        assert list(pool.map(one, range(len(texts)))) == serial
    assert serial == [1.0] * 30 + [0.0] * 30


# open-instruct's func_name checks: an honest pass, an honest fail and (where there is one) the hack each
# robust rule closes, as (func_name, arguments, answer, reference verdict, robust verdict)
S2, P2, P2B, SEC2 = (
    "It rained. The river rose.",
    "It rained.\n\nThen it stopped.",
    "It rained.\n\nIt stopped.",
    ("SECTION 1 rain\nSECTION 2 river"),
)
THEN, THE = {"N": 2, "i": 2, "first_word": "Then"}, {"N": 2, "i": 2, "first_word": "The"}
RIVER, NO_RIVER = {"original_prompt": "Name a river."}, {"forbidden_words": ["river"]}
RLVR_CASES = [
    ("verify_keywords", {"keyword_list": ["river"]}, OK, True, True),
    ("verify_keywords", {"keyword_list": ["ocean"]}, OK, False, False),
    ("verify_keywords", {"keyword_list": ["rive"]}, OK, True, False),  # a substring of 'river'
    ("verify_keyword_frequency", {"word": "river", "N": 1}, OK, True, True),
    ("verify_keyword_frequency", {"word": "river", "N": 2}, OK, False, False),
    ("verify_keyword_frequency", {"word": "rain", "N": 20}, "rain " * 20, True, False),  # filler
    ("validate_forbidden_words", {"forbidden_words": ["snow"]}, OK, True, True),
    ("validate_forbidden_words", NO_RIVER, OK, False, False),
    (
        "validate_forbidden_words",
        NO_RIVER,
        OK.replace("river", "r\u0456ver"),
        True,
        False,
    ),
    ("verify_letter_frequency", {"letter": "z", "N": 0}, OK, True, True),
    ("verify_letter_frequency", {"letter": "z", "N": 1}, OK, False, False),
    ("verify_letter_frequency", {"letter": "a", "N": 0}, "R\u0430in f\u0430lls", True, False),  # look-alikes
    ("validate_response_language", {"language": "en"}, OK, True, True),
    ("validate_response_language", {"language": "de"}, OK, False, False),
    ("validate_response_language", {"language": "en"}, "12 34 !!", False, False),  # undetectable: never
    ("verify_paragraph_count", {"N": 2}, "One river.\n* * *\nTwo bridges.", True, True),
    ("verify_paragraph_count", {"N": 3}, "One river.\n* * *\nTwo bridges.", False, False),
    ("verify_paragraph_count", {"N": 2}, "Rain.\n* * *\nRain.", True, False),  # repeated
    ("validate_word_constraint", {"N": 10, "quantifier": "at least"}, OK, True, True),
    ("validate_word_constraint", {"N": 10, "quantifier": "at most"}, OK, False, False),
    ("validate_word_constraint", {"N": 20, "quantifier": "around"}, "rain " * 20, True, False),  # filler
    (
        "verify_sentence_constraint",
        {"N": 2, "quantifier": "at least"},
        S2,
        True,
        True,
    ),
    (
        "verify_sentence_constraint",
        {"N": 3, "quantifier": "at least"},
        S2,
        False,
        False,
    ),
    ("verify_sentence_constraint", {"N": 3, "quantifier": "at least"}, "Rain. Rain. Rain.", True, False),
    (
        "validate_paragraphs",
        THEN,
        P2,
        True,
        True,
    ),
    (
        "validate_paragraphs",
        THEN,
        P2B,
        False,
        False,
    ),
    (
        "validate_paragraphs",
        THE,
        P2,
        True,
        False,
    ),
    ("verify_postscript", {"postscript_marker": "P.S."}, OK + "\nP.S. Bring boots.", True, True),
    ("verify_postscript", {"postscript_marker": "P.S."}, OK, False, False),
    ("verify_postscript", {"postscript_marker": "P.S."}, OK + "\nP.S. ...", True, False),  # marks only
    ("validate_placeholders", {"N": 1}, "Dear [name], hello.", True, True),
    ("validate_placeholders", {"N": 1}, "Dear friend, hello.", False, False),
    ("validate_placeholders", {"N": 2}, "Dear [], hello [ ].", True, False),
    ("verify_bullet_points", {"N": 2}, "* rain\n* river", True, True),
    ("verify_bullet_points", {"N": 3}, "* rain\n* river", False, False),
    ("verify_bullet_points", {"N": 3}, "* rain\n* river\n---", True, False),  # a rule is no bullet
    ("validate_title", {}, "<<River>>\n" + OK, True, True),
    ("validate_title", {}, OK, False, False),
    ("validate_title", {}, "<<>>" + OK, True, False),  # an empty title
    ("validate_choice", {"options": ["yes", "no"]}, "My answer is yes.", True, True),
    ("validate_choice", {"options": ["yes", "no"]}, "Perhaps.", False, False),
    ("validate_choice", {"options": ["yes", "no"]}, "yes or no", True, False),  # both
    ("validate_highlighted_sections", {"N": 2}, "*rain* and *river*", True, True),
    ("validate_highlighted_sections", {"N": 2}, "*rain* and river", False, False),
    ("validate_highlighted_sections", {"N": 2}, "** and ** here", True, False),  # empty highlights
    (
        "validate_sections",
        {"N": 2, "section_splitter": "SECTION"},
        SEC2,
        True,
        True,
    ),
    (
        "validate_sections",
        {"N": 3, "section_splitter": "SECTION"},
        SEC2,
        False,
        False,
    ),
    ("validate_sections", {"N": 2, "section_splitter": "SECTION"}, "SECTION 1\nSECTION 2", True, False),
    ("validate_json_format", {}, '{"river": "Nile"}', True, True),
    ("validate_json_format", {}, "river: Nile", False, False),
    ("validate_json_format", {}, '"the river is the Nile"', True, False),  # a bare string
    ("validate_repeat_prompt", RIVER, "Name a river. The Nile.", True, True),
    ("validate_repeat_prompt", RIVER, "The Nile.", False, False),
    (
        "validate_repeat_prompt",
        RIVER,
        "Name a river.",
        True,
        False,
    ),  # no answer
    ("validate_two_responses", {}, "The Nile.\n******\nThe Amazon.", True, True),
    ("validate_two_responses", {}, "The Nile.", False, False),
    ("validate_two_responses", {}, "The Nile.\n******\nthe nile", True, False),  # the same twice
    ("validate_uppercase", {}, "THE NILE IS LONG.", True, True),
    ("validate_uppercase", {}, "The Nile is long.", False, False),
    ("validate_uppercase", {}, "123 !!!", True, False),  # no letter at all
    ("validate_lowercase", {}, "the nile is long.", True, True),
    ("validate_lowercase", {}, "The Nile is long.", False, False),
    ("validate_lowercase", {}, "123 !!!", True, False),
    ("validate_frequency_capital_words", {"N": 2, "quantifier": "at least"}, "NASA and ESA", True, True),
    ("validate_frequency_capital_words", {"N": 3, "quantifier": "at least"}, "NASA and ESA", False, False),
    ("validate_frequency_capital_words", {"N": 20, "quantifier": "at least"}, "OK " * 20, True, False),
    ("validate_end", {"end_phrase": "Any questions?"}, OK + " Any questions?", True, True),
    ("validate_end", {"end_phrase": "Any questions?"}, OK, False, False),
    ("validate_end", {"end_phrase": "Any questions?"}, "Any questions?", True, False),  # the phrase alone
    ("validate_quotation", {}, '"' + OK + '"', True, True),
    ("validate_quotation", {}, OK, False, False),
    ("validate_quotation", {}, '"', True, False),  # one quote mark
    ("validate_no_commas", {}, OK, True, True),
    ("validate_no_commas", {}, "Rain, river.", False, False),
    ("validate_no_commas", {}, "Rain\uff0c river.", True, False),  # a full-width comma
]


@pytest.mark.parametrize(("name", "args", "answer", "reference", "robust"), RLVR_CASES)
def test_open_instruct_func_name_checks(
    name: str, args: dict[str, Any], answer: str, reference: bool, robust: bool
) -> None:
    spec = TABLE[name]
    read = spec.read(args)
    assert spec.check(answer, read, Context(rules="reference")) is reference
    assert spec.check(answer, read, Context(rules="robust")) is robust


def test_every_func_name_has_three_cases() -> None:
    names = [c[0] for c in RLVR_CASES]
    assert {s.id for s in TABLE.values() if s.source == "open-instruct"} == set(names)
    assert min(names.count(n) for n in set(names)) >= 3


def test_the_documentation_table_lists_every_id_with_its_rule() -> None:
    text = README.read_text(encoding="utf-8")
    table = text[text.index(BEGIN) + len(BEGIN) : text.index(END)].strip()
    assert table == markdown(), "regenerate it: python -m rewardkit.instructions.table --write"
    for spec in TABLE.values():
        assert f"| `{spec.id}` | {spec.source} |" in table
    assert table.count("\n| `") + 1 == len(TABLE) + 1  # one row per id (the header's first cell is `id`)
