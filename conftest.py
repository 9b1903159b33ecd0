"""Loaded by every pytest run of this repository (tests/ and the nbval notebooks): the notebook's default session
saving is off (``PI_NOTEBOOK_SESSIONS__DIR=none``; kernels started by tests inherit it), so no test writes into
the real home and no notebook sees another's saved sessions (``%load_ext`` would greet it with an extra line that
nbval compares). Tests of saving point the variable at their own temporary folder."""

from __future__ import annotations

import os

os.environ["PI_NOTEBOOK_SESSIONS__DIR"] = "none"
