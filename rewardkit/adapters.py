"""Where the adapters live: the scoring service's app and the trainer plugins, installed or in a checkout.

A wheel carries them inside the package (``rewardkit/service``, ``rewardkit/plugins/swift/rewards.py``), so
it adds no top-level name but ``rewardkit``; a source checkout keeps them at the top (``service/``,
``swift_plugins/rewards.py``). Both are found the same way.

>>> plugin_path("swift").name
'rewards.py'
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["PLUGINS", "plugin_path", "service_app"]

_PACKAGE = Path(__file__).resolve().parent
#: trainer -> (file in the installed package, file in a source checkout)
PLUGINS = {"swift": ("plugins/swift/rewards.py", "swift_plugins/rewards.py")}


def service_app() -> str:
    """The app factory for uvicorn: ``rewardkit.service.app:create_app`` when installed from a wheel,
    ``service.app:create_app`` in a checkout."""
    if importlib.util.find_spec("rewardkit.service") is not None:
        return "rewardkit.service.app:create_app"
    return "service.app:create_app"


def plugin_path(trainer: str) -> Path:
    """The plugin file for ``trainer`` (``swift``: pass it to ``--external_plugins``).

    Raises ``ValueError`` for an unknown trainer and ``FileNotFoundError`` when the file is not there.
    """
    if trainer not in PLUGINS:
        raise ValueError(f"no plugin for {trainer!r}; plugins: {', '.join(sorted(PLUGINS))}")
    installed, checkout = PLUGINS[trainer]
    for path in (_PACKAGE / installed, _PACKAGE.parent / checkout):
        if path.is_file():
            return path
    raise FileNotFoundError(f"the {trainer} plugin is not installed with this copy of rewardkit ({_PACKAGE})")
