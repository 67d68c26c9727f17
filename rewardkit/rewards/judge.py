"""LLM judge: a model behind any OpenAI-compatible base URL scores answers no rule can check.

The default template asks for a short justification and a final score from 0 to 10 as ``[[N]]`` (the
MT-Bench convention); the reward is N / 10, read from the last ``[[N]]`` of the reply. Requests run
concurrently (bounded per batch and per endpoint across the process), identical requests go once per batch
and are cached (:mod:`rewardkit.judging.cache`), transient failures are retried (:mod:`rewardkit.retry`), and
configuration errors (401/403/404) stop the batch with one actionable message that never contains the key.
Templates live in :mod:`rewardkit.judging.templates`, images in :mod:`rewardkit.judging.images`.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib.util
import os
import re
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from rewardkit import chat
from rewardkit.concurrency import SharedLimit
from rewardkit.core import (
    BackendUnavailable,
    ColumnError,
    Completion,
    DeadlineExceeded,
    Explained,
    Reward,
    RewardError,
    Scored,
    completion_text,
    finite_number,
    number_error,
    remaining_s,
)
from rewardkit.judging.cache import Outcome, request_key, verdicts
from rewardkit.judging.images import ImageRefused, encode_image
from rewardkit.judging.templates import (
    DEFAULT_TEMPLATE,
    check_inline_template,
    parse_judgement,
    template_fields,
)
from rewardkit.registry import named, register
from rewardkit.retry import retry_after_s, retrying
from rewardkit.spec import CallerParam, read_if_file

__all__ = [
    "JudgeConfigError",
    "JudgeUnavailableError",
    "LLMJudge",
    "check_inline_template",
    "encode_image",
    "llm_judge",
    "parse_judgement",
    "template_fields",
]

_BUILTIN_FIELDS = {"question", "solution", "completion"}
#: where the question is read from, first found first: TRL passes ``prompts``, ms-swift ``messages``
QUESTION_COLUMNS = ("question", "prompt", "prompts", "messages")
UNREACHABLE = frozenset({"connection_error"})  # a timeout reached a server: it may be slow, not down
_limits: dict[tuple[str, int], SharedLimit] = {}  # judge calls in flight, per endpoint, across requests
_limits_lock = threading.Lock()


class JudgeConfigError(RewardError):
    """The judge endpoint refused the configuration (401/403/404): fix the setting, not the data."""


class JudgeUnavailableError(BackendUnavailable):
    """No call of a batch reached the judge endpoint, after the retries: training on a batch of ``None``
    would go on with no signal. ``on_unavailable="none"`` gives those items ``None`` instead."""


def question_text(value: Any) -> str:
    """The question of one row, for the judge's prompt: a string as it is; of a chat (a ``prompts`` or
    ``messages`` row), the last user message's text (:func:`rewardkit.chat.question_text`); ``""`` for a
    chat without one or ``None``; any other value as text.

    >>> question_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"},
    ...                {"role": "assistant", "content": "4"}])
    '2+2?'
    """
    text = chat.question_text(value)
    if text is not None:
        return text
    return "" if value is None or isinstance(value, list | tuple) else str(value)


def _setting(value: Any, env: str) -> Any:
    return value if value is not None else (os.environ.get(env) or None)


@register(
    "llm_judge",
    columns=[],
    optional_columns=[*QUESTION_COLUMNS, "solution", "images"],
    # Where the server's key goes (base_url, model, api_key_env), what it reads (files) and how much it holds
    # (cache, total calls in flight) are the operator's; a caller sizes its own request within caps.
    caller_params={
        "template": CallerParam(check=check_inline_template, inline_file=True),
        "max_concurrency": CallerParam(cap=256),
        "timeout_s": CallerParam(cap=300),
        "max_retries": CallerParam(cap=10),
        "temperature": CallerParam(cap=2),
        "max_image_side": CallerParam(cap=4096),
        "on_unavailable": CallerParam(),
    },
    remote_defaults={"local_files": False, "image_urls": False},
)
@dataclass(frozen=True)
class LLMJudge(Reward):
    """LLM judge: a model behind an OpenAI-compatible URL scores each answer 0-10 as [[N]]; reward N/10.

    Every setting defaults to its ``REWARDKIT_JUDGE_*`` environment variable (``BASE_URL``, ``MODEL``,
    ``API_KEY_ENV`` - the *name* of the variable holding the key, default ``REWARDKIT_JUDGE_API_KEY``).
    ``local_files``: image and template values may name files; ``image_urls``: http(s) image URLs go on
    to the judge (which fetches them). Both are on in-process and off for remote callers of a service.
    ``max_total_concurrency`` bounds the calls in flight to one endpoint across every batch of the process.
    ``client``: an ``openai.AsyncOpenAI``-like client to use instead of one made from the settings (tests,
    custom transports); it is not closed by the judge. ``on_unavailable``: ``"raise"`` (the default) raises
    :class:`JudgeUnavailableError` when no call of a batch reached the endpoint; ``"none"`` scores those
    items ``None`` (reason ``connection_error``).
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
    client: Any = None

    def __post_init__(self) -> None:
        if importlib.util.find_spec("openai") is None or importlib.util.find_spec("PIL") is None:
            raise ImportError("the llm_judge reward needs openai and pillow: pip install 'rewardkit[judge]'")
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
                f"llm_judge: on_unavailable must be 'raise' or 'none', got {self.on_unavailable!r}"
            )
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
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"llm_judge: {name} must be an integer >= {low}, got {value!r}")
        for name, number in (("timeout_s", self.timeout_s), ("temperature", self.temperature)):
            if not finite_number(number) or number < 0:
                raise number_error("llm_judge", name, "a non-negative number", number)
        object.__setattr__(self, "base_url", base_url)
        object.__setattr__(self, "model", model)
        object.__setattr__(self, "api_key_env", key_env)
        object.__setattr__(self, "template", template)
        object.__setattr__(self, "_fields", fields)

    # -- columns: question (or prompt) is required; a custom template's own placeholders are too
    @property
    def required_columns(self) -> tuple[str, ...]:
        fields: frozenset[str] = object.__getattribute__(self, "_fields")
        return tuple(sorted(fields - _BUILTIN_FIELDS))

    @property
    def optional(self) -> tuple[str, ...]:
        return (*QUESTION_COLUMNS, "solution", "images")

    def params(self) -> dict[str, Any]:
        return {"base_url": self.base_url, "model": self.model, "api_key_env": self.api_key_env}

    # -- columns: the base class checks them; the judge also needs a question (or a prompt)
    def bind_columns(
        self, completions: Sequence[Completion], columns: dict[str, Any]
    ) -> dict[str, list[Any]]:
        bound = super().bind_columns(completions, columns)
        if not any(name in bound for name in QUESTION_COLUMNS):
            given = ", ".join(sorted(columns)) or "none"
            rename = self._column_map or {}
            wanted = ", ".join(repr(rename.get(c, c)) for c in QUESTION_COLUMNS)
            raise ColumnError(
                f"reward {self.__name__!r}: it needs the question, from one of the columns {wanted} "
                f"(a list of {len(completions)} values; columns given: {given})"
            )
        return bound

    # -- sync face: the base class binds the columns and calls _score; the raw replies become details
    def _score(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]], raise_on_error: bool
    ) -> list[Explained]:
        scored = self._run_sync(completions, columns)
        return [Explained(*item) for item in zip(scored.values, scored.reasons, scored.details, strict=True)]

    def _run_sync(self, completions: Sequence[Completion], columns: dict[str, list[Any]]) -> Scored:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._judge(completions, columns))
        # Called synchronously from inside a running loop: judge on a loop of our own, in a thread.
        context = contextvars.copy_context()  # the deadline goes along
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(context.run, asyncio.run, self._judge(completions, columns)).result()

    # -- async face (the service and the ms-swift plugin's AsyncORM use it)
    async def ascore_detailed(self, completions: Sequence[Completion], **columns: Any) -> Scored:
        """Judge on the caller's event loop: values, reasons and the raw replies (``details``)."""
        return await self._judge(completions, self.bind_columns(completions, columns))

    async def ascore(self, completions: Sequence[Completion], **columns: Any) -> list[float | None]:
        return (await self.ascore_detailed(completions, **columns)).values

    # -- the work
    def _messages(
        self, completion: Completion, columns: dict[str, list[Any]], i: int
    ) -> list[dict[str, Any]]:
        text = completion_text(completion)
        if text is None:
            raise ValueError("invalid_completion")
        source = next(name for name in QUESTION_COLUMNS if name in columns)
        question = question_text(columns[source][i])
        values = {name: columns[name][i] for name in self.required_columns}
        solution = columns["solution"][i] if "solution" in columns else None
        values.update(
            question=question or "", solution="(none)" if solution is None else solution, completion=text
        )
        prompt = str(self.template).format_map(values)
        images = columns["images"][i] if "images" in columns else None
        if not images:
            return [{"role": "user", "content": prompt}]
        parts: list[dict[str, Any]] = [{"type": "text", "text": prompt}]
        for k, image in enumerate(images if isinstance(images, list | tuple) else [images]):
            try:
                url = encode_image(
                    image,
                    self.max_image_side,
                    local_files=self.local_files,
                    image_urls=self.image_urls,
                    max_pixels=self.max_image_pixels,
                )
            except ImageRefused as exc:
                raise ValueError(f"bad_image:{k}:{exc}") from None
            except Exception as exc:
                raise ValueError(f"bad_image:{k}:{type(exc).__name__}") from None
            parts.append({"type": "image_url", "image_url": {"url": url}})
        return [{"role": "user", "content": parts}]

    async def _judge(self, completions: Sequence[Completion], columns: dict[str, list[Any]]) -> Scored:
        if "images" in columns:  # decoding images is CPU work: off the event loop
            return await asyncio.to_thread(asyncio.run, self._judge_prepared(completions, columns))
        return await self._judge_prepared(completions, columns)

    async def _judge_prepared(
        self, completions: Sequence[Completion], columns: dict[str, list[Any]]
    ) -> Scored:
        import openai

        n = len(completions)
        values: list[float | None] = [None] * n
        reasons: list[str | None] = [None] * n
        details: list[Any] = [None] * n
        requests: dict[str, list[int]] = {}
        payloads: dict[str, list[dict[str, Any]]] = {}
        for i, completion in enumerate(completions):
            try:
                messages = self._messages(completion, columns, i)
            except ValueError as exc:
                values[i], reasons[i] = (
                    (0.0, str(exc)) if str(exc) == "invalid_completion" else (None, str(exc))
                )
                continue
            key = request_key([self.base_url, self.model, self.temperature, messages])
            requests.setdefault(key, []).append(i)
            payloads[key] = messages
        own_client = self.client is None
        client = self.client or openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=os.environ[str(self.api_key_env)],
            timeout=self.timeout_s,
            max_retries=0,  # rewardkit.retry does the retrying
        )
        semaphore = asyncio.Semaphore(self.max_concurrency)
        total = self._shared_limit()
        calls = asyncio.gather(*(self._one(client, semaphore, total, key, payloads[key]) for key in requests))
        try:
            outcomes = await asyncio.wait_for(calls, timeout=remaining_s())
        except TimeoutError:  # the request deadline: every call was cancelled
            raise DeadlineExceeded("llm_judge: the request deadline passed") from None
        finally:
            if own_client:
                await client.close()
        if self.on_unavailable == "raise" and outcomes and all(o[1] in UNREACHABLE for o in outcomes):
            raise JudgeUnavailableError(
                f"llm_judge: none of {len(outcomes)} calls reached the judge at {self._shown_url()} after "
                f"{self.max_retries} retries ({outcomes[0][1]}). Check that the server is up and reachable "
                "from here, and the base URL and port; on_unavailable='none' scores such items None instead."
            )
        for key, (value, reason, raw) in zip(requests, outcomes, strict=True):
            for i in requests[key]:
                values[i], reasons[i], details[i] = value, reason, raw
        return Scored(values, reasons, details)

    def _shared_limit(self) -> SharedLimit:
        key = (str(self.base_url), self.max_total_concurrency)
        with _limits_lock:
            limit = _limits.get(key)
            if limit is None:
                limit = _limits[key] = SharedLimit(self.max_total_concurrency)
            return limit

    async def _one(
        self,
        client: Any,
        semaphore: asyncio.Semaphore,
        total: SharedLimit,
        key: str,
        messages: list[dict[str, Any]],
    ) -> Outcome:
        import openai

        hit = verdicts.get(key) if self.cache_size > 0 else None
        if hit is not None:
            return hit
        body = {"model": self.model, "messages": messages, "temperature": self.temperature}
        try:
            async for attempt in retrying(
                asynchronous=True,
                max_retries=self.max_retries,
                base_s=0.5,
                cap_s=30.0,
                retry_on=_transient,
                retry_after=lambda failure: retry_after_s(_header(failure, "retry-after"), cap_s=60.0),
            ):
                with attempt:
                    async with semaphore, total:  # held for the call, not for the backoff
                        # The SDK's low-level post to the chat completions route: same auth, errors and
                        # status exceptions as chat.completions.create, without its per-call walk over the
                        # typed parameters and response model (1.5 ms of CPU a call, the bottleneck at 64
                        # calls in flight).
                        data = await client.post("/chat/completions", cast_to=dict, body=body)
            reply = data["choices"][0]["message"]["content"] or ""
            score = parse_judgement(reply)
            outcome: Outcome = (score, None if score is not None else "unparseable_judgement", reply)
        except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
            raise JudgeConfigError(self._config_message(exc.status_code)) from None
        except openai.APITimeoutError:
            outcome = (None, "timeout", None)
        except openai.APIConnectionError:
            outcome = (None, "connection_error", None)
        except openai.APIStatusError as exc:
            outcome = (None, f"judge_error:{exc.status_code}", None)
        except Exception as exc:  # garbage bodies and the like: this item, not the batch
            outcome = (None, f"judge_error:{type(exc).__name__}", None)
        if outcome[1] in (None, "unparseable_judgement"):
            verdicts.put(key, outcome, max_items=self.cache_size)
        return outcome

    def _shown_url(self) -> str:
        """The base URL for messages: a ``user:password@`` in it is a secret (and errors reach callers)."""
        return re.sub(r"(://)[^/@\s]+@", r"\1***@", str(self.base_url))

    def _config_message(self, status: int | None) -> str:
        return (
            f"llm_judge: the judge at {self._shown_url()} answered {status} for model {self.model!r} with "
            f"the key read from the environment variable {self.api_key_env}. Check that the key in "
            f"{self.api_key_env} is valid for this endpoint, that the base URL ends where the API starts "
            "(usually .../v1), and that the model id exists there."
        )


def _transient(failure: BaseException) -> bool:
    """Rate limits, server errors, timeouts and lost connections are worth another try."""
    import openai

    return isinstance(failure, openai.RateLimitError | openai.InternalServerError | openai.APIConnectionError)


def _header(failure: BaseException | None, name: str) -> str | None:
    response = getattr(failure, "response", None)
    return response.headers.get(name) if response is not None else None


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
            ``timeout_s``, ``max_retries``, ``temperature``, ``max_image_side``, ``cache_size``) and columns.

    Returns:
        N / 10 for a reply ending in ``[[N]]``; ``None`` when the reply has no score or the call failed.
    """
    settings = {k: kwargs.pop(k) for k in list(kwargs) if k in LLMJudge.__dataclass_fields__}
    columns = {
        k: v for k, v in (("question", question), ("solution", solution), ("images", images)) if v is not None
    }
    return LLMJudge(**settings)(completions, **columns, **kwargs)
