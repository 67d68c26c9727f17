"""Short-answer QA (Natural Questions, TriviaQA, HotpotQA, PopQA, 2Wiki, MuSiQue, Bamboogle; SQuAD): the
answer a completion states, against a row's golds, as SQuAD and Search-R1 score it.

- :mod:`~rewardkit.qa.answer`: the answer read from the completion (the last ``<answer>`` block after the
  reasoning, else a box, an answer marker, the final line), without query and retrieval blocks;
- :mod:`~rewardkit.qa.golds`: the golds read from a column (a text, a list, JSON text of a list, Search-R1's
  ``{"target": [...]}``, SQuAD's and TriviaQA's mappings), within bounds;
- :mod:`~rewardkit.qa.normalise`: SQuAD v1.1's normalisation, exact match, substring match, token F1;
- :mod:`~rewardkit.qa.score`: the answer against every gold (the best), and the substring mode's defence
  against listed candidates.

The rewards are ``qa_em`` and ``qa_f1`` (:mod:`rewardkit.rewards.qa`).

>>> answer, _ = read_answer("<think>search it</think><answer>the Eiffel Tower</answer>")
>>> exact_match(answer, read_golds('["Eiffel Tower"]'))[0], best_f1(answer, ("Eiffel Tower, Paris",))[0]
(1.0, 0.8)
"""

from rewardkit.qa.answer import read_answer
from rewardkit.qa.golds import GoldError, read_golds
from rewardkit.qa.normalise import normalise
from rewardkit.qa.score import best_f1, exact_match

__all__ = ["GoldError", "best_f1", "exact_match", "normalise", "read_answer", "read_golds"]
