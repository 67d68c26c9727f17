"""Instruction following (IFEval, IFBench, open-instruct's IF-RLVR ground truths): every instruction id a
row may name, its keyword arguments, and its check, in two rule sets (``reference`` reproduces the reference
checkers' verdicts; ``robust`` closes the known hacks).

- :mod:`~rewardkit.instructions.base`: the table of instruction ids and the check contract;
- :mod:`~rewardkit.instructions.args`: readers for keyword arguments;
- :mod:`~rewardkit.instructions.text`: sentences, words, language, stop words, the robust view of a text;
- :mod:`~rewardkit.instructions.ifeval`: IFEval's 25 instructions;
- :mod:`~rewardkit.instructions.ifbench`: IFBench's 58 test and its IF-RLVR training instructions;
- :mod:`~rewardkit.instructions.rlvr`: open-instruct's 25 ``func_name`` checks (Tulu 3's RLVR-IFeval);
- :mod:`~rewardkit.instructions.rows`: a row's instructions read from its columns, and checked.
"""

from rewardkit.instructions.base import TABLE, BadKwargs, Context, Spec, instruction, read_args

__all__ = ["TABLE", "BadKwargs", "Context", "Spec", "instruction", "read_args"]

from rewardkit.instructions import ifbench  # noqa: E402, F401, I001  (fills TABLE with IFBench's ids)
from rewardkit.instructions import ifeval  # noqa: E402, F401, I001  (fills TABLE with IFEval's ids)
from rewardkit.instructions import rlvr  # noqa: E402, F401, I001  (open-instruct's func_name checks)
