"""Explain a GRPO run's reward curves: dead groups, stuck rewards, flat or clipped lengths, and why.

Reads what trainers write (nothing is re-run): an ms-swift GRPO output directory (``logging.jsonl`` and, with
``--log_completions true``, ``completions.jsonl``), a TRL output or checkpoint directory
(``trainer_state.json`` and, with ``log_completions=True``, ``completions/*.parquet``), or a JSONL scored by
``rewardkit score``. The package, one job a module:

* :mod:`~rewardkit.diagnose.logs`: reading those logs, streamed, into a :class:`Report`;
* :mod:`~rewardkit.diagnose.findings`: what the metrics and groups show, in plain words, with what to try;
* :mod:`~rewardkit.diagnose.rescore`: scoring the logged completions again to count the rewards' reasons;
* :mod:`~rewardkit.diagnose.plot`: the figure;
* :mod:`~rewardkit.diagnose.report`: the :class:`Report`, :class:`Finding` and :class:`DiagnoseError` types.

Group statistics (:class:`GroupStats`, :class:`GroupTracker`, :func:`group_key`) live in
:mod:`rewardkit.groups`, shared with ``rewardkit score``; they are re-exported here.

>>> import json, pathlib, tempfile
>>> run = pathlib.Path(tempfile.mkdtemp())
>>> lines = [{"global_step/max_steps": f"{s}/3", "reward": 0.0, "reward_std": 0.0,
...           "frac_reward_zero_std": 1.0, "rewards/format/mean": 0.0,
...           "completions/mean_length": 512.0, "completions/clipped_ratio": 1.0} for s in (1, 2, 3)]
>>> _ = (run / "logging.jsonl").write_text("".join(json.dumps(line) + "\\n" for line in lines))
>>> report = diagnose(run)
>>> [f.kind for f in report.findings]
['zero_std', 'stuck', 'length_clipped']
>>> report.findings[1].message[:60]
'format is 0.0 at all 3 logged steps that report it (steps 1-'
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rewardkit.diagnose.findings import find
from rewardkit.diagnose.logs import locate, read_completions, read_scored, read_swift_log, read_trainer_state
from rewardkit.diagnose.plot import plot
from rewardkit.diagnose.report import DiagnoseError, Finding, Report
from rewardkit.diagnose.rescore import rescore as rescore_rows
from rewardkit.diagnose.rescore import rows_for_rescoring
from rewardkit.groups import GroupStats, GroupTracker, group_key  # noqa: F401  (re-exported)

__all__ = ["DiagnoseError", "Finding", "GroupStats", "GroupTracker", "Report", "diagnose", "plot"]


def diagnose(path: str | Path, *, rescore: Sequence[Any] = (), data: str | Path | None = None) -> Report:
    """Read a run (or a scored JSONL) and say what its reward curves show.

    Args:
        path: an ms-swift output directory, a TRL output or checkpoint directory (searched below for the
            newest log), one of their files, or a JSONL scored by ``rewardkit score``.
        rescore: rewards (names or :class:`~rewardkit.engine.FuncSpec`) to score the logged completions with
            again; their reasons are counted in ``report.rescored``.
        data: the dataset (JSONL) whose columns the rescored rewards need (``solution``...), joined by prompt.

    Raises:
        DiagnoseError: the input cannot be read (naming the file and line), holds no GRPO reward metrics, or
        there is nothing to rescore.
    """
    kind, log, completions = locate(Path(path))
    read = [p for p in (log, completions) if p is not None]
    report = Report(source=", ".join(str(p) for p in read), kind=kind)
    if rescore and kind != "scored" and completions is None:
        raise DiagnoseError(
            f"{report.source}: nothing to rescore: the run has no completions log (ms-swift: "
            "--log_completions true; TRL: GRPOConfig(log_completions=True))"
        )
    if kind == "trl" and log is not None:
        read_trainer_state(report, log)
    elif kind == "ms-swift" and log is not None:
        read_swift_log(report, log)
    if kind != "scored":  # the rewards the log reports; the completions log may add its own
        report.funcs = [k.split("/", 1)[1] for k in report.metrics if k.startswith("rewards/")]
    if kind in ("ms-swift", "trl") and completions is not None:
        read_completions(report, completions)
    elif kind == "scored" and log is not None:
        read_scored(report, log)
    has_metrics = any(any(v is not None for v in values) for values in report.metrics.values())
    if not has_metrics and not any(g.groups for g in report.groups.values()):
        raise DiagnoseError(
            f"{report.source}: no GRPO reward metrics (reward, reward_std, rewards/<func>/mean) and no group "
            "of two or more scored completions: nothing to diagnose"
        )
    report.findings = find(report)
    if rescore:
        rescore_rows(
            report, rescore, rows_for_rescoring(report, kind, log, completions), Path(data) if data else None
        )
    return report
