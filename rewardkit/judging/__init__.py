"""The parts of an LLM judge that are not the reward itself: templates, images, the verdict cache.

The reward (:mod:`rewardkit.rewards.judge`) builds prompts from these, calls the endpoint and scores.
"""
