"""The parts of an LLM judge that are not the reward itself.

- :mod:`~rewardkit.judging.templates`: the default template, what a template may hold (plain placeholders,
  each once), reading ``[[N]]``;
- :mod:`~rewardkit.judging.fence`: the completion and every column go into the prompt as data, inside a
  boundary the policy cannot guess, with score markers and boundary look-alikes neutralised however they
  are disguised (compatibility forms, marks, invisible characters; not encodings);
- :mod:`~rewardkit.judging.prompts`: a batch's prompts built off the event loop, within ``max_prompt_bytes``
  and the request deadline;
- :mod:`~rewardkit.judging.verdict`: the score of a reply: the JSON field where the endpoint honours
  ``response_format``, else the one ``[[N]]`` of the judge's own text outside any quoted fence;
- :mod:`~rewardkit.judging.calls`: one call, with retries, the reply read within ``max_reply_bytes`` (an
  error's body within ``ERROR_BODY_BYTES``), and what counts as the judge being unavailable;
- :mod:`~rewardkit.judging.images`: images as ``data:`` URLs, bounded in pixels and encoded bytes;
- :mod:`~rewardkit.judging.cache`: the verdict cache, bounded in entries and bytes.

The reward (:mod:`rewardkit.rewards.judge`) puts these together.
"""
