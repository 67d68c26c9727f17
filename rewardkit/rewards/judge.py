"""LLM judge: a model behind any OpenAI-compatible base URL scores answers no rule can check, and the policy
being trained cannot talk it into a better score.

The default template asks for a short justification and a final score from 0 to 10 as ``[[N]]`` (the
MT-Bench convention); the reward is N / 10. What the policy wrote goes in as data: the completion and every
column sit inside a fence whose boundary it cannot forge, with score markers and boundary look-alikes in
them neutralised (:mod:`rewardkit.judging.fence`; reason ``judge_marker_in_completion``). The score is read
from a JSON field where the endpoint honours a JSON schema, else from the judge's own text after any quote
of the fence, which must name one score (:mod:`rewardkit.judging.verdict`: an encoded instruction the judge
decodes and quotes beside its grade makes ``judge_several_scores``; ``verdict="auto"`` asks the endpoint
once which).

Prompts are built, capped in bytes and hashed off the event loop (:mod:`rewardkit.judging.prompts`);
requests run concurrently (bounded per batch and per endpoint across the process), identical requests go
once per batch and are cached with a truncated reply (:mod:`rewardkit.judging.cache`); replies are read
within a byte limit, transient failures retried (:mod:`rewardkit.judging.calls`). A batch whose calls all
fail (unreachable, 5xx, timeouts, replies without a score) raises :class:`JudgeUnavailableError` (a 503 in
the service); configuration errors (401/403/404) stop it with one actionable message that never contains
the key.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rewardkit.asyncface import AsyncReward, run_coroutine
from rewardkit.concurrency import SharedLimit
from rewardkit.core import (
    ColumnError,
    Completion,
    DeadlineExceeded,
    Scored,
    Unreachable,
    finite_number,
    number_error,
    remaining_s,
)
from rewardkit.judging.cache import Outcome, request_key, verdicts
from rewardkit.judging.calls import (
    UNREACHABLE,
    Caller,
    JudgeConfigError,
    JudgeUnavailableError,
    down,
    new_client,
    reachable,
    shown_url,
    unavailable_message,
)
from rewardkit.judging.fence import MARKER_REASON
from rewardkit.judging.images import encode_image
from rewardkit.judging.prompts import QUESTION_COLUMNS, Prompter, question_text
from rewardkit.judging.templates import (
    DEFAULT_TEMPLATE,
    check_inline_template,
    parse_judgement,
    template_fields,
)
from rewardkit.judging.verdict import (
    MODES,
    PROBE_MESSAGES,
    QUOTED_REASON,
    RESPONSE_FORMAT,
    SEVERAL_REASON,
    UNPARSEABLE,
    known_mode,
    probe_mode,
    read_json,
    read_text,
    remember_mode,
)
from rewardkit.redact import redact_secrets, shown
from rewardkit.registry import named, register
from rewardkit.spec import CallerParam, read_if_file

__all__ = [
    "QUESTION_COLUMNS",
    "JudgeConfigError",
    "JudgeUnavailableError",
    "LLMJudge",
    "check_inline_template",
    "encode_image",
    "llm_judge",
    "parse_judgement",
    "question_text",
    "template_fields",
]

_BUILTIN_FIELDS = {"question", "solution", "completion"}
REPLY_KEPT_CHARS = 2000  # of a reply, in details and in the verdict cache
SHOWN_NAMES = 10  # of the columns given, those an error names
#: what a repeat of the same request would answer again
_CACHED = (None, UNPARSEABLE, QUOTED_REASON, SEVERAL_REASON)
_limits: dict[tuple[str, int], SharedLimit] = {}  # judge calls in flight, per endpoint, across requests
_limits_lock = threading.Lock()
_T = TypeVar("_T")


def _setting(value: Any, env: str) -> Any:
    return value if value is not None else (os.environ.get(env) or None)


@register(
    "llm_judge",
    columns=[],
    optional_columns=[*QUESTION_COLUMNS, "solution", "images"],
    # Where the server's key goes (base_url, model, api_key_env), what it reads (files), how much it holds
    # (cache, total calls in flight, prompt and reply bytes) and how verdicts are read are the operator's; a
    # caller sizes its own request within caps.
    caller_params={
        "template": CallerParam(check=check_inline_template, inline_file=True),
        "max_concurrency": CallerParam(cap=256),
        "timeout_s": CallerParam(cap=300),
        "max_retries": CallerParam(cap=10),
        "temperature": CallerParam(cap=2),
        "max_image_side": CallerParam(cap=4096),
        "on_unavailable": CallerParam(),
        "unavailable_share": CallerParam(cap=1),
    },
    remote_defaults={"local_files": False, "image_urls": False},
)
@dataclass(frozen=True)
class LLMJudge(AsyncReward):
    """LLM judge: a model behind an OpenAI-compatible URL scores each fenced answer 0-10; reward N/10.

    Every setting defaults to its ``REWARDKIT_JUDGE_*`` environment variable (``BASE_URL``, ``MODEL``,
    ``API_KEY_ENV`` - the *name* of the variable holding the key, default ``REWARDKIT_JUDGE_API_KEY``).
    ``local_files``: image and template values may name files; ``image_urls``: http(s) image URLs go on
    to the judge (which fetches them). Both are on in-process and off for remote callers of a service.
    ``max_total_concurrency`` bounds the calls in flight to one endpoint across every batch of the process.
    ``client``: an ``openai.AsyncOpenAI``-like client to use instead of one made from the settings (tests,
    custom transports); it is not closed by the judge. ``on_unavailable``: ``"raise"`` (the default) raises
    :class:`JudgeUnavailableError` when at least ``unavailable_share`` (default 1: all) of a batch's calls
    failed (unreachable, 5xx or 429, timeouts, replies without a score or over ``max_reply_bytes``);
    ``"none"`` scores those items ``None`` with their reasons (``connection_error``, ``judge_error:503``...).
    Operator settings: ``verdict`` (``"auto"``, ``"json"``, ``"text"``: :mod:`rewardkit.judging.verdict`),
    ``max_prompt_bytes`` (an item whose prompt is larger gets ``prompt_too_large``, no call),
    ``max_reply_bytes`` (a larger reply is abandoned as it streams in: ``judge_reply_too_large``).
    The question is read from the first of the columns ``question``, ``prompt``, ``prompts`` and
    ``messages`` that is given (a chat: its last user message).
    """

    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    template: str | None = None
    max_concurrency: int = 32
    timeout_s: float = 60.0
    max_retries: int = 3
    temperature: float = 0.0
    max_image_side: int = 1024
    cache_size: int = 10_000
    local_files: bool = True
    image_urls: bool = True
    max_image_pixels: int = 25_000_000
    max_total_concurrency: int = 256
    on_unavailable: str = "raise"
    unavailable_share: float = 1.0
    verdict: str = "auto"
    max_prompt_bytes: int = 256 * 1024
    max_reply_bytes: int = 1 << 20
    client: Any = None

    def __post_init__(self) -> None:
        if importlib.util.find_spec("openai") is None or importlib.util.find_spec("PIL") is None:
            raise ImportError(
                "the llm_judge reward needs openai and pillow: pip install '/path/to/rewardkit[judge]'"
            )
        injected = getattr(self.client, "base_url", None)
        base_url = _setting(self.base_url, "REWARDKIT_JUDGE_BASE_URL") or (
            str(injected) if injected else None
        )
        model = _setting(self.model, "REWARDKIT_JUDGE_MODEL")
        key_env = _setting(self.api_key_env, "REWARDKIT_JUDGE_API_KEY_ENV") or "REWARDKIT_JUDGE_API_KEY"
        if not base_url:
            raise ValueError("llm_judge: no base_url: pass base_url=... or set REWARDKIT_JUDGE_BASE_URL")
        if not model:
            raise ValueError("llm_judge: no model: pass model=... or set REWARDKIT_JUDGE_MODEL")
        if self.client is None and not os.environ.get(key_env):
            raise ValueError(
                f"llm_judge: the environment variable {key_env} (which should hold the API key) is not set; "
                "set it, or name another one with api_key_env=... / REWARDKIT_JUDGE_API_KEY_ENV "
                "(a local server without keys still needs a placeholder value)"
            )
        template = self.template or DEFAULT_TEMPLATE
        if not isinstance(template, str):
            raise ValueError(f"llm_judge: template must be a string, got {type(template).__name__}")
        if self.local_files:  # in-process, a template may name a file
            template = read_if_file(template)
        try:
            fields = template_fields(template)
        except ValueError as exc:
            raise ValueError(f"llm_judge: {exc}") from None
        if "completion" not in fields:
            raise ValueError("llm_judge: the template must contain {completion}")
        if self.on_unavailable not in ("raise", "none"):
            raise ValueError(
                f"llm_judge: on_unavailable must be 'raise' or 'none', got {shown(self.on_unavailable)}"
            )
        if self.verdict not in MODES:
            raise ValueError(
                f"llm_judge: verdict must be one of {', '.join(MODES)}, got {shown(self.verdict)}"
            )
        share = self.unavailable_share
        if not finite_number(share) or not 0 < share <= 1:
            raise number_error("llm_judge", "unavailable_share", "a number in (0, 1]", share)
        for flag in ("local_files", "image_urls"):
            if not isinstance(getattr(self, flag), bool):
                raise ValueError(f"llm_judge: {flag} must be true or false")
        for name, value, low in (
            ("max_concurrency", self.max_concurrency, 1),
            ("max_retries", self.max_retries, 0),
            ("max_image_side", self.max_image_side, 16),
            ("cache_size", self.cache_size, 0),
            ("max_image_pixels", self.max_image_pixels, 1),
            ("max_total_concurrency", self.max_total_concurrency, 1),
            ("max_prompt_bytes", self.max_prompt_bytes, 1024),
            ("max_reply_bytes", self.max_reply_bytes, 1024),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"llm_judge: {name} must be an integer >= {low}, got {shown(value)}")
        for name, number in (("timeout_s", self.timeout_s), ("temperature", self.temperature)):
            if not finite_number(number) or number < 0:
                raise number_error("llm_judge", name, "a non-negative number", number)
        object.__setattr__(self, "base_url", base_url)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "api_key_env", key_env)
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "_fields", fields)

    # -- columns: a template's placeholders; {question} reads one of QUESTION_COLUMNS (bind_columns checks)
    @property
    def required_columns(self) -> tuple[str, ...]:
        fields: frozenset[str] = object.__getattribute__(self, "_fields")
        return tuple(sorted(fields - _BUILTIN_FIELDS))

    @property
    def optional(self) -> tuple[str, ...]:
        fields: frozenset[str] = object.__getattribute__(self, "_fields")
        asked = (
            *(QUESTION_COLUMNS if "question" in fields else ()),
            *(("solution",) if "solution" in fields else ()),
        )
        return (*asked, "images")

    def params(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "api_key_env": self.api_key_env}

    def __repr__(self) -> str:  # the base URL's secrets (user:password@, ?api-key=) masked
        return redact_secrets(super().__repr__())

    # -- columns: the base class checks them; a template with {question} also needs a question (or a prompt)
    def bind_columns(
        self, completions: Sequence[Completion], columns: dict[str, Any]
    ) -> dict[str, list[Any]]:
        bound = super().bind_columns(completions, columns)
        fields: frozenset[str] = object.__getattribute__(self, "_fields")
        if "question" in fields and not any(name in bound for name in QUESTION_COLUMNS):
            names = sorted(columns)
            given = ", ".join(map(shown, names[:SHOWN_NAMES])) or "none"
            if len(names) > SHOWN_NAMES:
                given += f" and {len(names) - SHOWN_NAMES} more"
            rename = self._column_map or {}
            wanted = ", ".join(shown(rename.get(c, c)) for c in QUESTION_COLUMNS)
            raise ColumnError(
                f"reward {shown(self.__name__)}: it needs the question, from one of the columns {wanted} "
                f"(a list of {len(completions)} values; columns given: {given})"
            )
        return bound

    # -- lifecycle: ``verdict="auto"`` asks the endpoint once which verdicts it can be held to
    def ready(self, timeout_s: float) -> bool | None:
        """Probe the endpoint for its verdict mode (once a process); ``True`` once known, ``None`` while the
        endpoint answers without telling (5xx, a timeout) or with a fixed ``verdict`` (nothing is asked, but a
        connection is tried: :func:`~rewardkit.judging.calls.reachable`);
        :class:`~rewardkit.core.Unreachable` naming the URL when nothing answers there (no connection, no
        such host): a batch would be a 503. The client SDK is loaded here either way (the service asks at
        start-up): its import takes 0.5 s of CPU, 1-2 s on a busy machine, which the first batch would
        otherwise spend of its deadline (a 2 s deadline: a 504)."""
        if self.client is None:
            importlib.import_module("openai")
        if self.verdict != "auto":  # the mode is known: nothing is asked, but is anything there?
            if run_coroutine(lambda: reachable(str(self.base_url), min(timeout_s, 5.0))) is False:
                raise Unreachable(f"{shown_url(str(self.base_url))} (no connection: nothing listens there)")
            return None
        endpoint = (str(self.base_url), str(self.model))
        if known_mode(*endpoint) is None:
            try:
                _, failure = run_coroutine(
                    lambda: self._with_caller(lambda caller: asyncio.wait_for(self._probe(caller), timeout_s))
                )
            except TimeoutError:  # the probe took longer than the readiness check waits: not known yet
                return None
            if failure in UNREACHABLE:
                raise Unreachable(
                    f"{shown_url(endpoint[0])} (no connection: nothing listens there, or no such host)"
                )
        return True if known_mode(*endpoint) else None

    # -- the work
    async def _judge(self, completions: Sequence[Completion], columns: dict[str, list[Any]]) -> Scored:
        prompter = Prompter(
            template=str(self.template),
            fields=object.__getattribute__(self, "_fields"),
            max_prompt_bytes=self.max_prompt_bytes,
            max_image_side=self.max_image_side,
            local_files=self.local_files,
            image_urls=self.image_urls,
            max_image_pixels=self.max_image_pixels,
        )
        # fencing, image encoding and hashing are CPU work: off the event loop, within the deadline
        key = [self.base_url, self.model, self.temperature]
        batch = await asyncio.to_thread(prompter.prepare, completions, columns, key)
        n = len(completions)
        values: list[float | None] = [None] * n
        reasons: list[str | None] = [None] * n
        details: list[Any] = [None] * n
        for i, decided in batch.decided.items():
            values[i], reasons[i] = decided
        if not batch.requests:
            return Scored(values, reasons, details)

        digests = list(batch.requests)

        async def calls(caller: Caller) -> list[Outcome]:
            mode = await self._mode(caller)
            outcomes: list[Outcome] = [(None, "not_sent", None)] * len(digests)
            pending = iter(range(len(digests)))  # shared: each request is taken by one worker

            async def worker() -> None:
                for k in pending:
                    payload = batch.payloads[digests[k]]
                    outcomes[k] = await self._one(caller, request_key([digests[k], mode]), *payload, mode)

            # max_concurrency workers, not a task per request: 10,000 tasks take seconds of the event loop
            # to start and as long to cancel at the deadline, while /healthz waits
            work = [asyncio.ensure_future(worker()) for _ in range(min(self.max_concurrency, len(digests)))]
            try:
                await asyncio.gather(*work)
                return outcomes
            finally:  # a configuration error (or the deadline) stops the batch: no call goes on without it
                for task in work:
                    task.cancel()
                await asyncio.gather(*work, return_exceptions=True)

        try:
            outcomes = await asyncio.wait_for(self._with_caller(calls), timeout=remaining_s())
        except TimeoutError:  # the request deadline: every call was cancelled
            raise DeadlineExceeded("llm_judge: the request deadline passed") from None
        failed = [str(o[1]) for o in outcomes if down(o[1])]
        if (
            self.on_unavailable == "raise"
            and failed
            and len(failed) >= self.unavailable_share * len(outcomes)
        ):
            raise JudgeUnavailableError(
                unavailable_message(failed, len(outcomes), str(self.base_url), self.max_retries)
            )
        for digest, (value, reason, reply) in zip(batch.requests, outcomes, strict=True):
            for i in batch.requests[digest]:
                values[i], reasons[i], details[i] = value, reason, reply
                if i in batch.marked and reason is None:
                    reasons[i] = MARKER_REASON
        return Scored(values, reasons, details)

    async def _with_caller(self, work: Callable[[Caller], Awaitable[_T]]) -> _T:
        """Run ``work`` with this batch's caller (a client of our own, closed after, unless injected)."""
        client = self.client or await asyncio.to_thread(  # off the loop: the first one loads the CA store
            new_client, str(self.base_url), os.environ[str(self.api_key_env)], self.timeout_s
        )
        caller = Caller(
            client=client,
            semaphore=asyncio.Semaphore(self.max_concurrency),
            total=self._shared_limit(),
            model=str(self.model),
            temperature=self.temperature,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            max_reply_bytes=self.max_reply_bytes,
            base_url=str(self.base_url),
            api_key_env=str(self.api_key_env),
        )
        try:
            return await work(caller)
        finally:
            if self.client is None:
                await client.close()

    async def _mode(self, caller: Caller) -> str:
        """The verdict mode of this batch: the setting, or what the probe found (``"text"`` until it has)."""
        if self.verdict != "auto":
            return self.verdict
        mode = known_mode(str(self.base_url), str(self.model))
        if mode is None:
            mode, _ = await self._probe(caller)
        return mode or "text"

    async def _probe(self, caller: Caller) -> tuple[str | None, str | None]:
        """Ask the endpoint which verdicts it can be held to, and remember it: ``(mode, failure)``, the mode
        ``None`` when the probe found nothing (unreachable, 5xx: the next batch asks again)."""
        endpoint = (str(self.base_url), str(self.model))
        mode: str | None = None
        reply, failure = await caller.send(PROBE_MESSAGES, RESPONSE_FORMAT, retries=0)
        if reply is not None:
            mode = probe_mode(reply)
        elif failure is not None and failure.startswith("judge_error:4"):
            mode = "text"  # the endpoint refuses response_format (400, 422)
        remember_mode(*endpoint, mode)
        return mode, failure

    def _shared_limit(self) -> SharedLimit:
        key = (str(self.base_url), self.max_total_concurrency)
        with _limits_lock:
            limit = _limits.get(key)
            if limit is None:
                limit = _limits[key] = SharedLimit(self.max_total_concurrency)
            return limit

    async def _one(
        self, caller: Caller, key: str, messages: list[dict[str, Any]], nonce: str, mode: str
    ) -> Outcome:
        hit = verdicts.get(key) if self.cache_size > 0 else None
        if hit is not None:
            return hit
        reply, failure = await caller.send(messages, RESPONSE_FORMAT if mode == "json" else None)
        if reply is None:
            return None, failure, None
        score, reason = read_json(reply) if mode == "json" else read_text(reply, nonce)
        kept = reply if len(reply) <= REPLY_KEPT_CHARS else reply[:REPLY_KEPT_CHARS] + " ...[truncated]"
        outcome: Outcome = (score, reason, kept)
        if reason in _CACHED:
            verdicts.put(key, outcome, max_items=self.cache_size)
        return outcome


@named("llm_judge")
def llm_judge(
    completions: Sequence[Completion],
    question: Sequence[Any] | None = None,
    *,
    solution: Sequence[Any] | None = None,
    images: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """LLM-judge reward of each completion (the registry's ``llm_judge``).

    Args:
        completions: strings or chat message lists.
        question: the question per completion (``prompt``, ``prompts`` or ``messages`` columns work too).
        solution: optional reference answers.
        images: optional images per completion (paths, ``http(s)``/``data:`` URLs, bytes, PIL images).
        **kwargs: judge settings (``base_url``, ``model``, ``api_key_env``, ``template``, ``max_concurrency``,
            ``timeout_s``, ``max_retries``, ``temperature``, ``max_image_side``, ``cache_size``, ``verdict``,
            ...: :class:`LLMJudge`) and columns.

    Returns:
        N / 10 for the judge's score (its JSON ``score``, or the one ``[[N]]`` of its own text); ``None``
        when the reply has no score of the judge's, several different ones, or the call failed.
    """
    settings = {k: kwargs.pop(k) for k in list(kwargs) if k in LLMJudge.__dataclass_fields__}
    columns = {
        k: v for k, v in (("question", question), ("solution", solution), ("images", images)) if v is not None
    }
    return LLMJudge(**settings)(completions, **columns, **kwargs)
