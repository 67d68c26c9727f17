"""The json_schema reward: reading the answer's JSON, the verdicts, and schemas that come from data (remote
refs never fetched, catastrophic patterns, 10,000-hop $ref chains, sizes), in process and through a real
service."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import rewardkit
from rewardkit.structured import compile_schema, fenced_blocks, read_answer, read_schema
from tests.support.helpers import Server
from tests.support.timing import busy

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
#: look-ahead: fancy-regex's backtracking VM runs it; Python's re takes ~2^n steps on "a" * n + "!"
EXPONENTIAL = "^(a|a)*(?=b)$"


def chain(hops: int) -> dict[str, Any]:
    """A schema whose root reaches an integer type through ``hops`` $ref hops."""
    defs: dict[str, Any] = {f"d{i}": {"$ref": f"#/$defs/d{i + 1}"} for i in range(hops)}
    defs[f"d{hops}"] = {"type": "integer"}
    return {"$defs": defs, "$ref": "#/$defs/d0"}


def detailed(completions: list[str], schemas: list[Any], **params: Any) -> rewardkit.Scored:
    return rewardkit.get("json_schema", **params).score_detailed(completions, schema=schemas)


@pytest.mark.parametrize(
    ("text", "value", "reason"),
    [
        ('```json\n{"a": 1}\n```', {"a": 1}, None),
        ("Here:\n```JSON\n[1, 2]\n```\nThat is all.", [1, 2], None),
        ('```json\n{"a": 1}\n```\n```json\n{"a": 2}\n```', {"a": 2}, None),  # the last block counts
        ('```\n{"a": 1}\n```', {"a": 1}, None),  # unlabelled fence
        ('```python\nx = 1\n```\n{"a": 1}', None, "no_json"),  # not a json fence, whole answer not JSON
        ('```json\n{"a": 1}\n```\n```\n{"b": 2}\n```', {"a": 1}, None),  # json label first
        ('  {"a": "x"}  ', {"a": "x"}, None),
        ("42", 42, None),
        ('"text"', "text", None),
        ("", None, "no_json"),
        ("I cannot answer that.", None, "no_json"),
        ('Here is the JSON: {"a": 1}', None, "no_json"),  # the whole answer must be the JSON
        ('{"a": 1', None, "invalid_json"),
        ('{"a": 1} trailing words', None, "invalid_json"),
        ("```json\n\n```", None, "invalid_json"),
        ('{"a": NaN}', None, "invalid_json"),
        ('{"a": [Infinity]}', None, "invalid_json"),
        ('{"a": "NaN"}', {"a": "NaN"}, None),  # the word inside a string is fine
        ("[" * 101 + "]" * 101, None, "invalid_json"),  # deeper than jsontext's 100 levels
        ('```json\n{"a": 1}', {"a": 1}, None),  # a fence never closed runs to the end
    ],
)
def test_the_answer_json_is_read_by_the_rules(text: str, value: Any, reason: str | None) -> None:
    found = read_answer(text)
    assert (found.value, found.reason) == (value, reason)


def test_fences_are_found_in_linear_time() -> None:
    text = "```\n" * 50_000  # alternating opens and closes
    start = time.perf_counter()
    assert len(fenced_blocks(text)) == 25_000
    assert time.perf_counter() - start < 2.0 * busy()


def test_verdicts_and_reasons() -> None:
    completions = [
        '<think>an object</think>```json\n{"name": "Ann", "age": 31}\n```',
        '{"name": "Ann", "age": -1}',
        '{"name": "Ann", "age": 31, "extra": true}',
        '{"name": "Ann"}',
        "Ann is 31.",
        '{"name": "Ann", "age": 31',
        '<think>{"name": "Ann", "age": 31}',  # the reasoning never ended: no answer
        '{"name": "Ann", "age": 31}</think>I think so.',  # the JSON is in the reasoning only
    ]
    scored = detailed(completions, [PERSON] * len(completions))
    assert scored.values == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert scored.reasons == [
        None,
        "schema_violation:/age",
        "schema_violation:/",
        "schema_violation:/",
        "no_json",
        "invalid_json",
        "no_json",
        "no_json",
    ]
    assert scored.details[1] == {"keyword": "minimum", "message": "-1 is less than the minimum of 0"}


def test_partial_pays_parseable_json_that_breaks_the_schema_only() -> None:
    completions = ['{"name": "Ann", "age": 31}', '{"name": "Ann"}', "{}", "not json", '{"name": 1']
    assert rewardkit.get("json_schema", partial=0.2)(completions, schema=[PERSON] * 5) == [
        1.0, 0.2, 0.2, 0.0, 0.0,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="partial must be a number in"):
        rewardkit.get("json_schema", partial=1.5)


def test_pointer_paths_escape_and_are_cut() -> None:
    schema = {"properties": {"a/b~c": {"items": {"type": "string"}}}}
    scored = detailed(['{"a/b~c": ["x", 3]}'], [schema])
    assert scored.reasons == ["schema_violation:/a~1b~0c/1"]
    long_key = "k" * 5000
    scored = detailed([json.dumps({long_key: 1})], [{"additionalProperties": {"type": "string"}}])
    assert scored.reasons[0] is not None and len(scored.reasons[0]) <= len("schema_violation:") + 100


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        (None, "missing_schema"),
        ("  ", "missing_schema"),
        ("[1, 2]", "invalid_schema"),
        ("not json", "invalid_schema"),
        (5, "invalid_schema"),
        ({"type": "nonsense"}, "invalid_schema"),
        ({"minimum": "3"}, "invalid_schema"),
        ({"pattern": "(a{1000}){1000}"}, "invalid_schema"),  # a regex program too large to build
        ({"$schema": "http://json-schema.org/draft-03/schema#"}, "unsupported_draft"),
        ({"$ref": "#/$defs/missing"}, "unresolvable_ref"),
        ({"$ref": "https://example.com/person.json"}, "unresolvable_ref"),
        ({"a": {"b": 1}, "c": {1, 2}}, "invalid_schema"),  # a set: no JSON
        ({"description": "x" * 300_000}, "schema_too_large"),
        (json.dumps({"description": "x" * 300_000}), "schema_too_large"),
        (json.dumps({"allOf": [{"not": {}}]}) + "x", "invalid_schema"),
    ],
)
def test_schemas_the_reward_cannot_use_are_none_with_a_reason(schema: Any, reason: str) -> None:
    scored = detailed(['{"a": 1}'], [schema])
    assert (scored.values, scored.reasons) == ([None], [reason])


def test_schemas_as_text_booleans_and_drafts() -> None:
    text = json.dumps(PERSON)
    assert rewardkit.get("json_schema")(['{"name": "A", "age": 1}', "1"], schema=[text, True]) == [1.0, 1.0]
    assert rewardkit.get("json_schema")(["1"], schema=[False]) == [0.0]
    # draft 7 asserts formats; 2020-12 takes them as annotations; $schema picks the draft
    draft7 = {"$schema": "http://json-schema.org/draft-07/schema#", "format": "email"}
    plain = rewardkit.get("json_schema")
    assert plain(['"nope"', '"nope"'], schema=[draft7, {"format": "email"}]) == [0.0, 1.0]
    strict = rewardkit.get("json_schema", validate_formats=True)
    assert strict(['"nope"', '"a@b.co"'], schema=[{"format": "email"}] * 2) == [0.0, 1.0]
    # default_draft for schemas without $schema: draft 4's exclusiveMaximum is a boolean
    draft4 = {"maximum": 3, "exclusiveMaximum": True}
    assert rewardkit.get("json_schema", default_draft="4")(["3"], schema=[draft4]) == [0.0]
    assert detailed(["3"], [draft4]).reasons == ["invalid_schema"]  # not a 2020-12 schema


def test_a_group_compiles_its_schema_once() -> None:
    text, _ = read_schema({"type": "integer", "description": "cache test 1"})
    assert text is not None
    assert compile_schema(text) is compile_schema(text)
    assert compile_schema(text, "7") is not compile_schema(text)


@pytest.mark.parametrize(("shared", "bound"), [("one object", 20), ("equal copies", 80), ("JSON text", 20)])
def test_a_group_reads_its_schema_once_per_batch(shared: str, bound: int) -> None:
    """A GRPO group repeats its schema: it is measured, serialised and looked up once per batch, not once
    per item, whether the rows are the same object, equal copies (as decoded from a request) or equal texts.

    Read per item, 200 items cost ~100x one here. Read once, ~2x; equal copies more, as each copy is still
    pickled to be told equal. The bounds leave a wide margin both ways."""
    props = {f"p{i}": {"type": "object", "properties": {"a": {"type": "string"}}} for i in range(2000)}
    schema: Any = {"type": "object", "properties": props, "required": ["p1"]}
    reward = rewardkit.get("json_schema")
    completion = '```json\n{"p1": {"a": "x"}}\n```'
    assert reward([completion], schema=[schema]) == [1.0]  # compiled once, in the process-wide cache

    def batch(n: int) -> float:
        column = [schema] * n
        if shared == "equal copies":
            column = [json.loads(json.dumps(schema)) for _ in range(n)]
        elif shared == "JSON text":
            column = [json.dumps(schema) for _ in range(n)]  # equal strings, distinct objects
        start = time.perf_counter()
        values = reward([completion] * n, schema=column)
        elapsed = time.perf_counter() - start
        assert values == [1.0] * n
        return elapsed

    one = min(batch(1) for _ in range(3))
    many = min(batch(200) for _ in range(2))
    assert many < bound * one, (one, many)


def test_schemas_equal_in_python_but_not_in_type_are_read_apart() -> None:
    """``{"enum": [True]} == {"enum": [1]}`` in Python; a batch's schemas are told apart by type too."""
    schemas = [{"enum": [1]}, {"enum": [True]}, {"enum": [1]}, {"enum": [True]}, "[", "["]
    scored = detailed(["1"] * 6, schemas)
    assert scored.values == [1.0, 0.0, 1.0, 0.0, None, None]
    assert scored.reasons[4:] == ["invalid_schema"] * 2


# -- schemas that come from data: nothing fetched, nothing stalls, nothing crashes


class _Counting(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        self.hits.append(self.path)
        body = b'{"type": "string"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def schema_host() -> Iterator[tuple[str, list[str]]]:
    """An HTTP server on loopback that serves a schema and counts what is asked of it."""
    _Counting.hits = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", _Counting.hits
    server.shutdown()
    server.server_close()


def test_a_remote_ref_is_never_fetched(schema_host: tuple[str, list[str]]) -> None:
    url, hits = schema_host
    schemas = [
        {"$ref": f"{url}/person.json"},
        {"properties": {"a": {"$ref": f"{url}/a.json#/x"}}},
        {"$schema": f"{url}/meta.json"},
        {"$id": f"{url}/root.json", "$ref": "other.json"},
    ]
    scored = detailed(['{"a": "x"}'] * 4, schemas)
    assert scored.values == [None] * 4
    assert scored.reasons == ["unresolvable_ref", "unresolvable_ref", "unsupported_draft", "unresolvable_ref"]
    assert hits == []
    assert httpx.get(f"{url}/probe").status_code == 200 and hits == ["/probe"]  # the host did answer


def test_a_catastrophic_pattern_cannot_stall() -> None:
    nested = {"type": "string", "pattern": "^(a+)+$"}  # exponential in Python's re, linear here
    look = {"type": "array", "items": {"type": "string", "pattern": EXPONENTIAL}}
    keys = {"patternProperties": {EXPONENTIAL: {}}, "additionalProperties": False}
    long = "a" * 50_000 + "!"
    start = time.perf_counter()
    scored = detailed(
        [json.dumps(long), json.dumps(["a" * 60 + "!"] * 1000), json.dumps({"a" * 60 + "!": 1})],
        [nested, look, keys],
    )
    elapsed = time.perf_counter() - start
    assert scored.values == [0.0, 0.0, 0.0]
    assert elapsed < 2.0 * busy(), elapsed  # Python's re: ~2^60 steps on any one of them
    assert detailed(['"aaab"'], [{"pattern": "^(a|a)*(?=b)"}]).values == [1.0]  # look-ahead still works


def test_a_10000_hop_ref_chain_answers_quickly_and_right() -> None:
    start = time.perf_counter()
    scored = detailed(["7", '"seven"'], [chain(10_000)] * 2, max_schema_chars=1_000_000)
    assert (scored.values, scored.reasons) == ([1.0, 0.0], [None, "schema_violation:/"])
    assert time.perf_counter() - start < 5.0 * busy()
    assert detailed(["7"], [chain(10_000)]).reasons == ["schema_too_large"]  # over the default 200,000
    cycle = {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}
    assert detailed(["7"], [cycle]).values == [1.0]  # a cycle of refs constrains nothing
    assert detailed(["7"], [{"allOf": [{"$ref": "#"}]}]).values == [1.0]


def test_through_a_real_service(tmp_path: Path, schema_host: tuple[str, list[str]]) -> None:
    """Hostile schemas each answer within the request deadline, fetch nothing, and the service lives on."""
    url, hits = schema_host
    deadline = 20.0
    server = Server({"REWARDKIT_REQUEST_TIMEOUT_S": str(deadline)}, tmp_path / "server.log")
    try:
        listed = httpx.get(server.url + "/rewards", timeout=30).json()
        assert "json_schema" in json.dumps(listed)
        hostile = [
            ({"type": "array", "items": {"pattern": EXPONENTIAL}}, json.dumps(["a" * 60 + "!"] * 500), 0.0),
            (chain(10_000), "7", 1.0),
            ({"$ref": f"{url}/remote.json"}, '"x"', None),
            ({"$schema": f"{url}/meta.json"}, '"x"', None),
            (PERSON, '```json\n{"name": "Ann", "age": 31}\n```', 1.0),
        ]
        for schema, answer, expected in hostile:
            body = {
                "funcs": [{"name": "json_schema", "params": {"max_schema_chars": 1_000_000}}],
                "completions": [answer] * 8,  # a GRPO group sharing one schema
                "columns": {"schema": [schema] * 8},
            }
            start = time.monotonic()
            response = httpx.post(server.url + "/score", json=body, timeout=deadline + 30)
            elapsed = time.monotonic() - start
            assert response.status_code == 200, response.text
            assert response.json()["scores"]["json_schema"] == [expected] * 8
            assert elapsed < deadline, elapsed
        too_big = {"funcs": [{"name": "json_schema", "params": {"max_schema_chars": 2_000_000}}]}
        refused = httpx.post(server.url + "/score", json={**too_big, "completions": ["1"], "columns": {}})
        assert refused.status_code in (400, 422) and "max_schema_chars" in refused.text
        assert hits == []
        assert httpx.get(server.url + "/healthz", timeout=10).status_code == 200
    finally:
        server.stop()


def test_verl_data_source_reads_the_schema_from_ground_truth() -> None:
    from rewardkit.adapters.verl import compute_score, compute_score_batch

    schema = {"type": "object", "required": ["a"]}
    assert compute_score("json_schema", '```json\n{"a": 1}\n```', schema) == 1.0
    assert compute_score("json_schema", '{"b": 1}', json.dumps(schema)) == 0.0
    batch = compute_score_batch(["json_schema"] * 2, ['{"a": 1}', "none"], [schema, schema], [None, None])
    assert batch == [1.0, 0.0]
