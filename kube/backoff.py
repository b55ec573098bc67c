"""Exponential backoff for the loops that retry the API server (watches, relists, syncs).

    b = Backoff(initial=1.0, cap=30.0)
    b.next() -> 1.0, 2.0, 4.0, ... 30.0, 30.0      (doubling, capped)
    b.reset()                                      after a watch that worked
    await b.wait()                                 sleeps b.next() with the injected sleep

An unreachable API server then costs one warning per attempt at a growing interval
instead of one a second; ``sleep`` is injectable so tests check the schedule without
sleeping.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

Sleep = Callable[[float], Awaitable[object]]


class Backoff:
    """See the module docstring."""

    def __init__(
        self, initial: float = 1.0, cap: float = 30.0, factor: float = 2.0, sleep: Sleep = asyncio.sleep
    ) -> None:
        if initial <= 0 or cap < initial or factor < 1:
            raise ValueError("backoff needs 0 < initial <= cap and factor >= 1")
        self.initial, self.cap, self.factor = initial, cap, factor
        self._sleep = sleep
        self._next = initial

    @property
    def delay(self) -> float:
        """The pause the next :meth:`wait` takes."""
        return self._next

    def next(self) -> float:
        """The pause to take now; the following one is ``factor`` times longer, up to ``cap``."""
        delay = self._next
        self._next = min(self.cap, self._next * self.factor)
        return delay

    def reset(self) -> None:
        """Back to ``initial`` (the connection worked)."""
        self._next = self.initial

    async def wait(self) -> None:
        """Sleep for :meth:`next` seconds."""
        await self._sleep(self.next())
