"""Runnable examples: one a trainer, and one for the service's client. Each is short, builds what it needs
(a tiny model, a dataset, a service on a free loopback port: nothing is downloaded), runs with
``python -m rewardkit.examples.NAME`` from a checkout or an installed wheel, says at its top which extras it
needs, and takes its knobs from the command line (``--help``) and the ``REWARDKIT_*`` environment.

- ``trl``: TRL's ``GRPOTrainer`` with rewardkit's rewards in ``reward_funcs`` (a real run of a step or two);
- ``swift``: ms-swift's ``swift rlhf`` GRPO with ``--external_plugins`` and ``--reward_funcs rk_...``;
- ``verl``: veRL's custom reward function, loaded and awaited as veRL's reward loop does;
- ``openrlhf``: OpenRLHF's remote reward model, ``POST /get_reward`` as OpenRLHF sends it;
- ``client``: the service from Python, ``RewardClient`` and ``remote_reward``.

The tests run every one of them (``tests/test_examples.py``; the trainers' e2e tests run theirs).
"""
