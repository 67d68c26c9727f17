"""IFBench's 58 test constraints (``allenai/IFBench``, ``instructions_registry.py`` at c94da02), registered in
the instruction table with ``source="ifbench"``, and the IF-RLVR training constraints
(``source="ifbench-train"``). The checks live in the modules this one imports, by kind:

- :mod:`~rewardkit.instructions.ifbench_count`: ``count:*`` and ``ratio:*``;
- :mod:`~rewardkit.instructions.ifbench_words`: ``words:*`` and ``sentence:*``;
- :mod:`~rewardkit.instructions.ifbench_format`: ``format:*``;
- :mod:`~rewardkit.instructions.ifbench_custom`: ``custom:*`` and ``repeat:*``;
- :mod:`~rewardkit.instructions.ifbench_train`: the 29 IF-RLVR training ids (open-instruct's ``IFEvalG``).

``rules="reference"`` reproduces IFBench's verdicts (``bench/ifbench_parity.py`` measures how closely);
``rules="robust"`` deviates where each spec's ``robust`` line says.

>>> from rewardkit.instructions.base import TABLE
>>> sum(1 for spec in TABLE.values() if spec.source == "ifbench")
58
>>> sum(1 for spec in TABLE.values() if spec.source == "ifbench-train")
29
"""

from __future__ import annotations

from rewardkit.instructions import (  # noqa: F401  (registers the checks)
    ifbench_count,
    ifbench_custom,
    ifbench_format,
    ifbench_train,
    ifbench_words,
)

__all__: list[str] = []
