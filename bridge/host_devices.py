"""What the host says about a device path: whether it is a block device (never raises).

The rules that refuse edits are :mod:`translate.edit_escape`; this module only stats.
"""

from __future__ import annotations

import os
import stat


def is_block_device(path: str) -> bool:
    """Whether ``path`` on the host is (or links to) a block device; False when it cannot be read."""
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
