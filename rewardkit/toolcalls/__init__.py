"""Tool calls (the ``tool_call`` reward's engine): a model's function calls against a row's expected calls,
by the rules of BFCL's AST checker.

Read, then compare, each step its own module:

- :mod:`rewardkit.toolcalls.parse`: the completion's calls, in the formats models write (OpenAI
  ``tool_calls`` messages, Hermes/Qwen ``<tool_call>`` blocks, Mistral ``[TOOL_CALLS]``, Llama-3.1 JSON,
  BFCL's Python-call syntax read with :mod:`ast`, never evaluated), after the reasoning only;
- :mod:`rewardkit.toolcalls.gold`: the row's expected calls (BFCL's possible answers or plain calls) and
  its tools (OpenAI function schemas or BFCL's function list);
- :mod:`rewardkit.toolcalls.check`: the comparison (name, required parameters, no unknown one, types by
  the schema, values among the accepted ones as BFCL normalises strings, parallel calls in any order) and
  the dense ``partial`` score.

>>> from rewardkit.toolcalls import check_calls, read_calls, read_gold, read_tools
>>> calls = read_calls('<tool_call>{"name": "get_weather", "arguments": {"city": "paris"}}</tool_call>').calls
>>> check_calls(calls, read_gold([{"get_weather": {"city": ["Paris"]}}]), read_tools([]))
>>> check_calls(calls, read_gold([]), read_tools([]))  # an irrelevance row: no call was expected
'wrong_count'
"""

from rewardkit.toolcalls.check import UnsupportedType, check_call, check_calls, partial_score
from rewardkit.toolcalls.gold import GoldCall, GoldError, Tool, read_gold, read_tools
from rewardkit.toolcalls.parse import Call, Parsed, read_calls

__all__ = [
    "Call",
    "GoldCall",
    "GoldError",
    "Parsed",
    "Tool",
    "UnsupportedType",
    "check_call",
    "check_calls",
    "partial_score",
    "read_calls",
    "read_gold",
    "read_tools",
]
