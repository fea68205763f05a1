"""Hypothesis profiles of the contract property tests: the suite (``make test``) draws the same
examples on every run (``derandomize``), so its verdict depends on the code alone; ``make fuzz``
(``KAUDIT_PROPERTY_RANDOM=1``) draws new ones each run, and more of them."""

import os

from hypothesis import settings

settings.register_profile("suite", derandomize=True)
settings.register_profile("fuzz", derandomize=False)
settings.load_profile("fuzz" if os.environ.get("KAUDIT_PROPERTY_RANDOM") else "suite")
