"""The trainer adapters, and where the service's app and the trainers' plugin files are.

- :mod:`rewardkit.adapters.verl`: ``compute_score`` (sync, batch, async) for veRL's
  ``custom_reward_function``;
- :mod:`rewardkit.adapters.openrlhf`: the ``reward_func(queries, prompts, labels)`` file for OpenRLHF, and
  the reading of its requests that the service's ``/get_reward`` shares;
- ms-swift's plugin file;
- :mod:`rewardkit.adapters.env`: what they share, a reward configured from the environment
  (:func:`~rewardkit.adapters.env.reward_from_env`: in process, or on the service at ``REWARDKIT_URL``).

A wheel carries the service and the ms-swift plugin inside the package (``rewardkit/service``,
``rewardkit/plugins/swift/rewards.py``), so it adds no top-level name but ``rewardkit``; a source checkout
keeps them at the top (``service/``, ``swift_plugins/rewards.py``). Both are found the same way.

>>> plugin_path("swift").name
'rewards.py'
>>> plugin_path("verl").name
'verl_reward.py'
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["PLUGINS", "plugin_path", "service_app"]

_PACKAGE = Path(__file__).resolve().parent.parent
#: trainer -> (file in the installed package, file in a source checkout)
PLUGINS = {
    "swift": ("plugins/swift/rewards.py", "swift_plugins/rewards.py"),
    "verl": ("adapters/verl_reward.py", "rewardkit/adapters/verl_reward.py"),
    "openrlhf": ("adapters/openrlhf.py", "rewardkit/adapters/openrlhf.py"),
}


def service_app() -> str:
    """The app factory for uvicorn: ``rewardkit.service.app:create_app`` when installed from a wheel,
    ``service.app:create_app`` in a checkout."""
    if importlib.util.find_spec("rewardkit.service") is not None:
        return "rewardkit.service.app:create_app"
    return "service.app:create_app"


def plugin_path(trainer: str) -> Path:
    """The plugin file for ``trainer``: ``swift`` (``--external_plugins``), ``verl``
    (``reward.custom_reward_function.path``), ``openrlhf`` (``--reward.remote_url``, the file form).

    Raises ``ValueError`` for an unknown trainer and ``FileNotFoundError`` when the file is not there.
    """
    if trainer not in PLUGINS:
        raise ValueError(f"no plugin for {trainer!r}; plugins: {', '.join(sorted(PLUGINS))}")
    installed, checkout = PLUGINS[trainer]
    for path in (_PACKAGE / installed, _PACKAGE.parent / checkout):
        if path.is_file():
            return path
    raise FileNotFoundError(f"the {trainer} plugin is not installed with this copy of rewardkit ({_PACKAGE})")
