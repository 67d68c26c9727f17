"""rewardkit: pure, batched reward functions for RL fine-tuning of LLMs.

Every reward follows one contract, ``reward(completions, **columns) -> list[float | None]``, and lives in
one registry that the CLI, the scoring service and the ms-swift plugin all read.

>>> import rewardkit
>>> rewardkit.countdown(["<answer>(6 - 2) * 6</answer>", "no answer"], target=[24, 24], nums=[[2, 6, 6]] * 2)
[1.0, 0.0]
>>> sorted(info.name for info in rewardkit.list_rewards())  # doctest: +NORMALIZE_WHITESPACE
['choice', 'code', 'cosine', 'countdown', 'format', 'gated', 'ifeval', 'json_schema', 'length',
 'llm_judge', 'math', 'math_or_judge', 'qa_em', 'qa_f1', 'r1v_acc', 'reasoning_steps', 'repetition', 'route',
 'soft_overlong', 'tag_count', 'think_format', 'tool_call']

Architecture
------------

Data flows one way::

    trainer, `rewardkit` command or client
      -> adapter (swift_plugins/, adapters/, cli*.py, service/, client.py)
      -> spec (what to score) -> registry (names; the policy for remote callers) -> engine (a batch)
      -> reward functions -> extract/, choices.py, verify/, judging/ (reading and judging answers)

Adapters stay thin: no scoring logic in ``service/``, ``swift_plugins/`` or ``adapters/``. The server and the
client check a reward spec with one function (``spec.check``) on the policy table the server publishes; the
client imports neither the engine nor the registry, and rewards import no trust-boundary module.
``tests/test_architecture.py`` walks the imports (no cycle) and the module sizes (at most 500 lines).
One job a module (paths under ``rewardkit/`` unless they say otherwise):

The contract, the names, a batch

- ``core.py``: the reward contract: ``Reward``, ``ItemReward``, ``Verdict``/``Explained``, column checks,
  the finite-number check, lifecycle hooks (``ready``, ``stats``, ``notes``, ``close``)
- ``deadlines.py``: a batch's deadline: the context that bounds it and what slow parts ask of it
- ``spec.py``: what names a reward to score with (``RewardSpec``: name, params, weight, alias, columns;
  from a string, a dict or a configured reward), ``CallerParam``, and the one check of a spec against a
  published policy table (recursive, with the 256-rewards budget)
- ``registry.py``: names: ``@register``, ``get``, entry points, which parameters a remote caller may set
- ``policy.py``: the trust boundary: the server's settings and caps merged, rewards built for remote callers
- ``engine.py``: several rewards over one batch, weighted, sync and async
- ``golds.py``: a batch in which no item has its gold answer is a configuration error (``MissingGoldError``)
- ``chat.py``: chat messages: which message is the completion, the question and the prompt
- ``lru.py``: the one bounded cache (the judge's verdicts, the math verifier's)
- ``retry.py``: the one retry policy (tenacity) of the client and the judge
- ``trainer_names.py``: a warning when two rewards of one TRL trainer share a name (and so a metric)
- ``concurrency.py``: a concurrency limit shared across threads and event loops
- ``asyncface.py``: rewards whose work is awaited (the judge, the code sandbox): one async core, its sync and
  async faces
- ``jsontext.py``: JSON text from columns read within bounds (length, nesting), and nesting measured
- ``once.py``: a column value read once per batch (a GRPO group repeats its row)
- ``redact.py``: what an error or a log may echo: secrets in URLs masked, a caller's value cut to 200
  characters

The rewards and what they read

- ``rewards/``: one module a reward (``rewards/README.md``); ``rewards/_composed.py`` the rewards built on
  another (``cosine``, ``length``), ``rewards/route.py`` rows to the reward their column names,
  ``rewards/fallback.py`` math first, the judge where the rule verifier cannot decide (``math_or_judge``)
- ``extract/``: reading final answers and golds, in the documented order (the verdict rules, doctested):
  ``extract/segment.py`` the final segment, ``extract/containers.py`` ``<answer>`` blocks and boxes,
  ``extract/markers.py`` answer markers, ``extract/values.py`` a value out of text, ``extract/words.py``
  whole numbers in words (the one rule, for the comparison too)
- ``choices.py``: multiple choice: options, letters and option texts on both sides; ``yesno.py`` Yes/No
  answered in words (a reply opening with Yes or No, a statement that implies one)
- ``verify/``: the math verifier (the comparison rules, doctested): ``verify/normalise.py`` answer text to a
  canonical form, ``verify/fastpath.py`` exact decisions without SymPy, ``verify/guards.py`` answers refused
  before SymPy, ``verify/rows.py`` one row read (gold, answer, choice, fast paths and guards: a verdict or a
  pair left to Math-Verify; in the workers for a large batch), ``verify/pool.py`` dedup, verdict cache and
  what goes to the workers, ``verify/host.py`` the worker host process (``python -m rewardkit.verify``,
  ``verify/__main__.py``) and its pebble pools, ``verify/plan.py`` which pairs go in a task, in what order,
  ``verify/tasks.py`` the tasks the host schedules, ``verify/lessons.py`` forms of answers taught to idle
  workers, ``verify/worker.py`` what runs in a worker, ``verify/latex.py`` latex2sympy as the workers run
  it (faster, the same results), ``verify/options.py`` Math-Verify's verification options a verdict is
  made under
- ``judging/``: the judge's parts: ``judging/templates.py`` prompts and reading the score,
  ``judging/images.py`` images as ``data:`` URLs, ``judging/cache.py`` its verdict cache,
  ``judging/fence.py`` the completion and columns fenced as data, their markers neutralised,
  ``judging/verdict.py`` where a score is read (JSON field or the judge's own text) and the mode probe,
  ``judging/prompts.py`` a batch's prompts built off the loop within the byte cap,
  ``judging/calls.py`` one call (reply byte limit, retries, failures as reasons or one error)
- ``sandbox/``: running untrusted programs in bubblewrap sandboxes (the ``code`` reward):
  ``sandbox/bwrap.py`` the sandbox's command line (mounts, namespaces, user), ``sandbox/harness.py`` what runs
  inside (tests in forked processes, result lines), ``sandbox/run.py`` one sandbox run on the event loop
  (spawn, stream, kill), ``sandbox/pool.py`` many sandboxes at once, deduplicated, within the deadline, and
  readiness, ``sandbox/cases.py`` code datasets' test formats in one form, ``sandbox/compare.py`` outputs
  compared as the datasets' judges do, ``sandbox/seccomp.py`` the seccomp filter that keeps a test
  process from making processes, uncounted memory or namespaces (so ``memory_mb`` bounds a sandbox),
  ``sandbox/cgroup.py`` a memory cgroup per sandbox where the host lets the service make one;
  compiled languages: ``sandbox/languages.py`` the language table (compile and run commands),
  ``sandbox/compile.py`` a program compiled once in a sandbox of its own (``sandbox/build.py`` what runs
  there), ``sandbox/pch.py`` the precompiled ``bits/stdc++.h`` cache, ``sandbox/timelimit.py`` a row's time
  limit, ``sandbox/pyrun.py`` Python tests inside the harness; judging: ``sandbox/checker.py`` special
  judges, ``sandbox/tally.py`` per-test results into a verdict, ``sandbox/scoring.py`` the scoring modes
- ``qa/``: short-answer QA (``qa_em``, ``qa_f1``): ``qa/answer.py`` the answer a completion states
  (after the reasoning, without query and retrieval blocks), ``qa/golds.py`` a row's golds read within
  bounds, ``qa/normalise.py`` SQuAD's normalisation, exact, substring and token F1, ``qa/score.py`` an answer
  against every gold (and substring mode's defence against listed candidates)
- ``structured/``: structured output (``json_schema``): ``structured/answer.py`` the JSON a final answer
  holds (the last ``json`` fence, else an unlabelled one, else the whole answer; strict, within bounds),
  ``structured/schema.py`` a row's schema read within bounds and compiled once (jsonschema-rs, offline,
  linear-time patterns)
- ``toolcalls/``: tool calls (``tool_call``), by BFCL's AST-checker rules: ``toolcalls/parse.py`` the calls a
  completion makes (OpenAI ``tool_calls`` messages, Hermes, Mistral, Llama-3.1 JSON, BFCL's Python calls read
  with ``ast``, never evaluated), ``toolcalls/gold.py`` a row's expected calls and tools read within bounds,
  ``toolcalls/check.py`` calls against expected ones (exact and the partial score)
- ``instructions/``: instruction following (``ifeval``): ``instructions/base.py`` the table of instruction
  ids and the check contract, ``instructions/args.py`` keyword-argument readers, ``instructions/text.py``
  sentences, words, language, stop words and the robust view of a text (offline), ``instructions/ifeval.py``
  IFEval's 25 ids (``instructions/ifeval_words.py``, ``instructions/ifeval_format.py``,
  ``instructions/ifeval_common.py``), ``instructions/ifbench.py`` IFBench's ids
  (``instructions/ifbench_count.py``, ``instructions/ifbench_words.py``, ``instructions/ifbench_format.py``,
  ``instructions/ifbench_custom.py``, ``instructions/ifbench_common.py``, ``instructions/ifbench_train.py``),
  ``instructions/rlvr.py`` open-instruct's ``func_name`` checks, ``instructions/rows.py`` a row's
  instructions read from its columns and checked, ``instructions/table.py`` the documentation table of
  every instruction id
- ``lengths.py``: token counts and GRPO groups for the shaping rewards
- ``groups.py``: statistics of one reward within GRPO groups (``rewardkit score``, ``rewardkit diagnose``)

Tools for users

- ``testing.py``: golden files
- ``agreement.py``: a reward's agreement with labelled data (``rewardkit agreement``, ``bench/verdicts.py``)
- ``diagnose/``: a GRPO run's reward curves explained: ``diagnose/logs.py`` reading trainers' logs,
  ``diagnose/findings.py`` the findings, ``diagnose/rescore.py`` rescoring logged completions,
  ``diagnose/report.py`` the report types, ``diagnose/plot.py`` the figure
- ``jsonl.py``: JSON lines read as users hand them over (a file, gzipped or not, or ``-``), each bad line
  named by file and line: the one reader of ``rewardkit score`` and ``rewardkit agreement``
- ``cli/``: the ``rewardkit`` command (``python -m rewardkit``, ``__main__.py``): ``cli/__init__.py`` the
  app, its commands in ``cli/score.py`` (``score``), ``cli/check.py`` (``list``, ``check``),
  ``cli/agreement.py`` (``agreement``), ``cli/serve.py`` (``serve``, ``plugin-path``),
  ``cli/diagnose.py`` (``diagnose``), and ``cli/common.py`` what they share (errors, counts in words,
  ``--column``, reward names with the closest ones suggested)
- ``examples/``: one runnable script a trainer and one for the service's client (``python -m
  rewardkit.examples.trl``; each run by the tests): ``examples/trl.py``, ``examples/swift.py``,
  ``examples/verl.py``, ``examples/openrlhf.py``, ``examples/client.py``; ``examples/_tiny.py`` the tiny
  model the trainers' examples build, ``examples/_service.py`` the service the service examples start

The adapters

- ``client.py``: the service's clients and ``remote_reward``; ``batching.py`` a batch split into requests
  under the server's limits, and their results joined; ``client_options.py`` a client's URL and keywords
  checked when it is made
- ``adapters/``: the trainer adapters (``adapters/README.md``) and where the service app and plugin files
  are: ``adapters/env.py`` a reward configured from ``REWARDKIT_*`` (in process or on the service),
  ``adapters/verl.py`` veRL's ``compute_score`` and its data-source table, ``adapters/verl_options.py``
  its ``reward_kwargs`` read, ``adapters/verl_reward.py`` the file veRL loads, ``adapters/openrlhf.py``
  OpenRLHF's requests and its ``reward_func`` file
- ``service/`` (top level; ``rewardkit/service`` in the wheel, ``service/README.md``): ``app.py`` the
  factory, ``settings.py`` ``REWARDKIT_*`` settings, ``deps.py`` typed dependencies, ``middleware.py``
  redaction and the ASGI guard (the token before the body, the body's size and time limits),
  ``protocol.py`` the HTTP protocol ``rewardkit serve`` runs (uvicorn's, with a deadline on each request
  head), ``errors.py`` exceptions to answers and their schema, ``scoring.py`` what ``/score`` and
  ``/get_reward`` share, ``models.py`` request and response bodies, ``metrics.py`` Prometheus,
  ``routes/`` one router per resource, ``docs.py`` ``/docs`` and ``/redoc`` from local files,
  ``ray_serve.py`` the same app on Ray Serve
- ``swift_plugins/rewards.py`` (top level): the ms-swift adapter (``rewardkit/plugins/swift/rewards.py``
  in the wheel)
- ``tests/`` (``tests/security/`` the trust boundary), ``bench/`` (``bench/README.md``), ``deploy/``
  (``deploy/README.md``)

Every module of the package is named here:

>>> import pkgutil
>>> modules = [m.name for m in pkgutil.walk_packages(rewardkit.__path__, "rewardkit.")]
>>> paths = [m.removeprefix("rewardkit.").replace(".", "/") for m in modules if ".rewards." not in m]
>>> [p for p in paths if f"``{p}.py``" not in __doc__ and f"``{p}/``" not in __doc__]
[]
"""

from importlib.metadata import PackageNotFoundError, version

from rewardkit import registry
from rewardkit.core import ColumnError, Explained, ItemReward, Reward, RewardError, Scored, Verdict
from rewardkit.engine import BatchResult, FuncSpec, score_batch
from rewardkit.registry import RewardInfo, UnknownRewardError, get, list_rewards, register
from rewardkit.rewards.choice import choice_accuracy
from rewardkit.rewards.countdown import countdown
from rewardkit.rewards.format import format_tags
from rewardkit.rewards.judge import llm_judge
from rewardkit.rewards.math_equivalence import math_equivalence
from rewardkit.rewards.r1v import r1v_accuracy
from rewardkit.spec import RewardSpec

try:
    __version__ = version("rewardkit")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"

__all__ = [
    "BatchResult",
    "ColumnError",
    "Explained",
    "FuncSpec",
    "ItemReward",
    "Reward",
    "RewardError",
    "RewardInfo",
    "RewardSpec",
    "Scored",
    "UnknownRewardError",
    "Verdict",
    "__version__",
    "choice_accuracy",
    "countdown",
    "format_tags",
    "get",
    "list_rewards",
    "llm_judge",
    "math_equivalence",
    "r1v_accuracy",
    "register",
    "registry",
    "score_batch",
]
