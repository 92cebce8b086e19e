"""A drill's feeders: one thread per playbook feeder, producing generated messages at the rate its
shape gives for each moment of the drill, every delivery written to the run's one Ledger.

The producers behave as a real service's would through an outage: acks=all with idempotence,
retrying and buffering for `delivery_timeout_s` (longer than any drill's downtime), so a message
sent while its cluster is down is delivered when the cluster returns, or written off as failed,
never silently lost. The pace comes from a clock, not from the sends: after a stall the feeder
does not burst to catch up (it sends what the rate says from now on, and counts what it skipped).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from loadtest.generator import MessageGenerator, fact, now_ms
from loadtest.ledger import Ledger
from loadtest.producer import DeliveryTracker, close_quietly, key_bytes, make_producer, warm_up

# long enough to ride out a drill's downtime; a message still unacknowledged then is failed
DELIVERY_TIMEOUT_S = 600.0


def generator_hints(hints: dict[str, Any]) -> dict[str, dict]:
    """A playbook's hints (a value, values to draw from, or a generator kind as it is) as the
    generator's hint kinds."""
    return {
        path: (
            dict(value)
            if isinstance(value, dict)
            else {"choice": list(value)}
            if isinstance(value, list)
            else {"const": value}
        )
        for path, value in hints.items()
    }


@dataclass
class FeederStats:
    name: str
    topic: str
    sent: int = 0
    skipped: int = 0  # sends the rate called for while send() itself was blocked
    error: str | None = None  # why the thread ended early
    rates: list[tuple[float, float]] = field(default_factory=list)  # (epoch s, messages/s asked)


class FeederThread(threading.Thread):
    """Produces `feeder`'s messages from the drill's start `t0` (epoch seconds) until `stop` is
    set or its `count` is sent; then waits for every delivery report (up to `drain_s`)."""

    def __init__(
        self,
        feeder,
        descriptor_set,
        *,
        bootstrap: str,
        login: dict,
        ledger: Ledger,
        t0: float,
        seed: int,
        index_base: int,
        stop: threading.Event,
        drain_s: float = 120.0,
        delivery_timeout_s: float = DELIVERY_TIMEOUT_S,
    ):
        super().__init__(name=f"feeder-{feeder.name}", daemon=True)
        self.feeder, self.ledger, self.t0, self.stop = feeder, ledger, t0, stop
        self.generator = MessageGenerator(
            descriptor_set, feeder.message, hints=generator_hints(feeder.hints), seed=seed
        )
        self.settings = dict(
            bootstrap_servers=bootstrap,
            **login,
            linger_ms=20,
            delivery_timeout_ms=int(delivery_timeout_s * 1000),
            request_timeout_ms=10_000,
            client_id=f"daggers-drill-{feeder.name}",
        )
        self.index_base, self.drain_s = index_base, drain_s
        self.stats = FeederStats(feeder.name, feeder.topic)
        self.tracker = DeliveryTracker(ledger)
        self.written_off = 0

    def run(self) -> None:
        try:
            producer = make_producer(**self.settings)
        except Exception as e:  # noqa: BLE001 - the drill reports it; nothing was sent
            self.stats.error = f"cannot start the producer: {type(e).__name__}: {e}"
            return
        try:
            warm_up(producer, [self.feeder.topic])
            self._send_loop(producer)
        except Exception as e:  # noqa: BLE001 - kept for the report; the drill goes on without it
            self.stats.error = f"{type(e).__name__}: {e}"
        finally:
            self.written_off = self.tracker.drain(producer, self.drain_s)
            close_quietly(producer)

    def _send_loop(self, producer) -> None:
        f, gen, stats = self.feeder, self.generator, self.stats
        key_field, event_field = f.key, gen.event_time_field
        credit, last = 0.0, time.time()
        while not self.stop.is_set():
            if f.count is not None and stats.sent >= f.count:
                return
            now = time.time()
            rate = f.rate_at(now - self.t0)
            if rate is None:  # LOKI's count, as fast as it goes
                credit = 1.0
            else:
                if not stats.rates or stats.rates[-1][1] != rate:
                    stats.rates.append((now, rate))
                credit += (now - last) * rate
                if credit > max(1.0, rate):  # stalled (a blocked send): no burst after it
                    stats.skipped += int(credit - max(1.0, rate))
                    credit = max(1.0, rate)
            last = now
            if credit < 1.0:
                self.stop.wait(min(0.05, (1.0 - credit) / rate))
                continue
            credit -= 1.0
            index = self.index_base + stats.sent
            value, facts = gen.make(index, now_ms())
            key = key_bytes(fact(facts, key_field)) if key_field else None
            self.tracker.send(
                producer,
                f.topic,
                value,
                key=key,
                index=index,
                facts=facts,
                event_time_ms=facts.get(event_field) if event_field else None,
            )
            stats.sent += 1
