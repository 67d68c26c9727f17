"""rewardkit for OpenRLHF: its requests read into a batch, and the ``reward_func`` file form.

OpenRLHF calls a remote reward with ``{"query", "prompts", "labels"}``: ``query`` is the prompt and the
response decoded with special tokens kept, ``labels`` the dataset's label column. Two ways to use rewardkit:

- the service: ``--reward.remote_url http://host:8000/get_reward?funcs=math,format&token=...``
  (older OpenRLHF: ``--remote_rm_url``); it sends no headers, so the token may ride in the URL;
- this file, in process: ``--reward.remote_url $(rewardkit plugin-path openrlhf)``, with the rewards named
  by ``REWARDKIT_OPENRLHF_FUNCS`` (comma-separated, default ``math``) and configured as by every adapter
  (:mod:`rewardkit.adapters.env`: parameters from ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG``; scored on
  the service instead when ``REWARDKIT_URL`` is set).

Both read a request the same way (:func:`read_request`): the prompt is cut off the query and trailing special
tokens are dropped; a label that is a JSON object (or a string holding one) gives columns, so countdown's
``{"target": 24, "nums": [4, 6]}`` works; any other label is the ``solution`` column.

Both answer the same way (:func:`response_body`): ``rewards`` is the weighted sum of the rewards, and
``scores``, which OpenRLHF's dynamic filtering compares with ``--dynamic_filtering_reward_range 0 1``, is one
reward's own value, the accuracy: the first reward named, or the one named by ``?score_func=NAME`` (the file
form: ``REWARDKIT_OPENRLHF_SCORE_FUNC``). So ``funcs=countdown,format`` gives ``rewards`` up to 2.0 and
``scores`` countdown's 0 or 1.

OpenRLHF sends its labels only when told which field holds them (``--data.label_key``; before 0.10
``--label_key``); without it every label is ``""``. Requests come one sample at a time, so both forms keep one
:class:`~rewardkit.golds.GoldCheck` per process: once :data:`GOLD_WINDOW` samples have come without any gold,
every request without one fails (a 422 on the service), naming the flag; a label missing now and then scores
that sample ``None``, sent as 0.0 (OpenRLHF makes tensors of the answer).

>>> reward_func(["Q: 2+2? A: The answer is 4.<|im_end|>"], ["Q: 2+2? A:"], ["4"])["rewards"]
[1.0]
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from rewardkit.adapters.env import reward_from_env
from rewardkit.engine import BatchResult, result_keys, score_batch
from rewardkit.extract import strip_special_tail
from rewardkit.golds import GoldCheck
from rewardkit.jsontext import JSONTextError, read_json

__all__ = [
    "GOLD_HINT",
    "MAX_NAMED_REWARDS",
    "funcs_from",
    "gold_check",
    "read_request",
    "response_body",
    "reward_func",
    "score_key",
]

MAX_NAMED_REWARDS = 16  # rewards one OpenRLHF request names (``funcs=`` in its URL, REWARDKIT_OPENRLHF_FUNCS)
MAX_LABEL_COLUMNS = 32  # distinct columns the labels of one request may give (each is a list of every row)
GOLD_WINDOW = 8  # samples without any gold after which a request without one fails
GOLD_HINT = (
    "OpenRLHF sends the gold answers (its labels) only when told the dataset field that holds them: "
    "--data.label_key FIELD (before OpenRLHF 0.10: --label_key FIELD)."
)
_gold_check = GoldCheck(GOLD_HINT, GOLD_WINDOW)


def gold_check() -> GoldCheck:
    """This process's check of OpenRLHF's labels (one sample a request: see :mod:`rewardkit.golds`)."""
    return _gold_check


def _label_columns(label: Any) -> dict[str, Any] | None:
    if isinstance(label, Mapping):
        return dict(label)
    if isinstance(label, str) and label.lstrip().startswith("{"):
        try:
            parsed = read_json(label)  # bounded: the text's length and nesting (rewardkit.jsontext)
        except JSONTextError:  # not JSON, too long, or nested too deep: a plain label
            return None
        return dict(parsed) if isinstance(parsed, dict) else None
    return None


def read_request(
    queries: Sequence[str], prompts: Sequence[str] | None, labels: Sequence[Any] | None
) -> tuple[list[str], dict[str, list[Any]]]:
    """OpenRLHF's lists as completions and columns. ``ValueError`` when the lists differ in length or the
    labels name more than :data:`MAX_LABEL_COLUMNS` distinct columns.

    >>> read_request(["P: <answer>6 * 4</answer></s>"], ["P: "], ['{"target": 24, "nums": [4, 6]}'])
    (['<answer>6 * 4</answer>'], {'target': [24], 'nums': [[4, 6]]})
    """
    n = len(queries)
    for name, column in (("prompts", prompts), ("labels", labels)):
        if column is not None and len(column) != n:
            raise ValueError(f"'{name}' has {len(column)} items but 'query' has {n}")
    completions = []
    for i, query in enumerate(queries):
        prompt = prompts[i] if prompts is not None else ""
        response = query[len(prompt) :] if prompt and query.startswith(prompt) else query
        completions.append(strip_special_tail(response))
    columns: dict[str, list[Any]] = {}
    for i, label in enumerate(labels if labels is not None else ()):
        fields = _label_columns(label)
        for key, value in (fields if fields is not None else {"solution": label}).items():
            column = columns.get(str(key))
            if column is None:
                if len(columns) >= MAX_LABEL_COLUMNS:
                    raise ValueError(f"the labels name more than {MAX_LABEL_COLUMNS} distinct columns")
                column = columns[str(key)] = [None] * n
            column[i] = value
    return completions, columns


def funcs_from(text: str) -> list[str]:
    """Reward names from a comma-separated list (``"countdown,format"``); ``ValueError`` when there are none
    or more than :data:`MAX_NAMED_REWARDS`."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names or len(names) > MAX_NAMED_REWARDS:
        raise ValueError(
            f"name 1 to {MAX_NAMED_REWARDS} rewards, comma-separated (e.g. funcs=countdown,format)"
        )
    return names


def score_key(names: Sequence[str], score_func: str | None = None) -> str:
    """The reward whose values are OpenRLHF's ``scores``: ``score_func``, or the first of ``names`` (keys as
    in the response's ``extra_logs``: ``name#2`` for a repeat). ``ValueError`` for a name not among them.

    >>> score_key(["countdown", "format"]), score_key(["countdown", "format"], "format")
    ('countdown', 'format')
    """
    keys = result_keys(list(names))
    if score_func is None:
        return keys[0]
    if score_func not in keys:
        raise ValueError(f"score_func {score_func!r} is not one of the rewards named: {', '.join(keys)}")
    return score_func


def response_body(result: BatchResult, score: str | None = None) -> dict[str, Any]:
    """What OpenRLHF reads: ``rewards`` (the weighted sum), ``scores`` (what its dynamic filtering compares
    with a 0-1 range: the values of the reward ``score``, by default the first) and ``extra_logs`` (each
    reward's own values). OpenRLHF makes tensors of them, so "not applicable" (``None``) is sent as 0.0."""
    rewards = [0.0 if r is None else r for r in result.rewards]
    logs = {key: [0.0 if v is None else v for v in values] for key, values in result.scores.items()}
    return {"rewards": rewards, "scores": logs[score or next(iter(logs))], "extra_logs": logs}


def reward_func(
    queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any
) -> dict[str, Any]:
    """OpenRLHF's file form: the rewards named by ``REWARDKIT_OPENRLHF_FUNCS`` (default ``math``) on the
    batch, as every adapter configures them (:func:`rewardkit.adapters.env.reward_from_env`: parameters
    from ``REWARDKIT_PARAMS`` / ``REWARDKIT_CONFIG``; on the service at ``REWARDKIT_URL`` when it is set).
    ``scores`` are the values of ``REWARDKIT_OPENRLHF_SCORE_FUNC``, by default the first reward's.

    Raises:
        MissingGoldError: :data:`GOLD_WINDOW` samples have come without any label (see
            :func:`gold_check`); ``ValueError`` for a score func that is not among the rewards.
    """
    names = funcs_from(os.environ.get("REWARDKIT_OPENRLHF_FUNCS", "math"))
    score = score_key(names, os.environ.get("REWARDKIT_OPENRLHF_SCORE_FUNC") or None)
    completions, columns = read_request(queries, prompts, labels)
    rewards = [reward_from_env(name) for name in names]
    return response_body(score_batch(rewards, completions, columns, golds=gold_check()), score)
