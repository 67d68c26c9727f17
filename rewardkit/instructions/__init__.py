"""Instruction following (IFEval, IFBench, open-instruct's IF-RLVR ground truths): every instruction id a
row may name, its keyword arguments, and its check, in two rule sets (``reference`` reproduces the reference
checkers' verdicts; ``robust`` closes the known hacks).

- :mod:`~rewardkit.instructions.base`: the table of instruction ids and the check contract;
- :mod:`~rewardkit.instructions.args`: readers for keyword arguments.
"""

from rewardkit.instructions.base import TABLE, BadKwargs, Context, Spec, instruction, read_args

__all__ = ["TABLE", "BadKwargs", "Context", "Spec", "instruction", "read_args"]

from rewardkit.instructions import ifbench  # noqa: E402, F401, I001  (fills TABLE with IFBench's ids)
