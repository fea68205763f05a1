"""The two durations of the rebalance history's rule (models/README.md, "Settled states"):

- the settle window: a group's state is settled when no membership, owner or assignment change
  of that group follows it for this long (a KIP-848 epoch instead settles when the group epoch
  equals the assignment epoch and every member's current assignment matches its target). The
  default is the seed's 0.8 consumer: a rebalance that fails is retried
  ``rebalance.max.retries`` (4) times, ``rebalance.backoff.ms`` (2000) apart, so owners that
  changed less than 8 s ago may still be a rebalance at work.
- the stuck limit: a rebalance (its first unsettled state to the state that settled it) that
  took longer than this, or has not settled this long after it began, is the finding
  ``stuck_rebalance``.

Both reach the build from ``kaudit build --settle-window-ms/--stuck-limit-ms`` or the config
file's ``history:`` keys, and a spark-submitted build as the same options (:meth:`SettleRule.args`)."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.errors import UsageError

REBALANCE_BACKOFF_MS = 2000  # the 0.8 consumer's rebalance.backoff.ms default
REBALANCE_MAX_RETRIES = 4  # ... and rebalance.max.retries
DEFAULT_SETTLE_WINDOW_MS = REBALANCE_BACKOFF_MS * REBALANCE_MAX_RETRIES
DEFAULT_STUCK_LIMIT_MS = 60_000


@dataclass(frozen=True)
class SettleRule:
    window_ms: int = DEFAULT_SETTLE_WINDOW_MS
    stuck_limit_ms: int = DEFAULT_STUCK_LIMIT_MS

    def __post_init__(self) -> None:
        for name, value in (("--settle-window-ms", self.window_ms), ("--stuck-limit-ms", self.stuck_limit_ms)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"{name} {value!r}: expected a whole number of milliseconds, 0 or more")
        if self.stuck_limit_ms < self.window_ms:
            raise UsageError(f"--stuck-limit-ms {self.stuck_limit_ms} is below --settle-window-ms "
                             f"{self.window_ms}: a rebalance would be stuck before it could settle")

    def args(self) -> list[str]:
        """The rule as ``build_core.py``'s options (read back by :func:`parse`)."""
        return [f"--settle-window-ms={self.window_ms}", f"--stuck-limit-ms={self.stuck_limit_ms}"]


DEFAULT_RULE = SettleRule()


def parse(window: str | int | None, limit: str | int | None) -> SettleRule:
    """A rule from option values (None: the default); anything but a whole number is a usage
    error naming the option."""
    values = {}
    options = (("--settle-window-ms", "window_ms", window), ("--stuck-limit-ms", "stuck_limit_ms", limit))
    for name, key, value in options:
        if value is None:
            continue
        try:
            values[key] = int(str(value).strip(), 10)
        except ValueError:
            raise UsageError(f"{name} {value!r}: expected a whole number of milliseconds, 0 or more") from None
    return SettleRule(**values)
