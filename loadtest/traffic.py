"""Deterministic sample traffic for the sample schemas (bookings, driver pings, API logs).

Each generator yields plain Python events (dicts) and can encode them as protobuf messages, so a
test can compute its expected aggregates from the events, independently of the runtime's decoder.
Coordinates fall around Jakarta, as in the seeds' surge-pricing story.
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
from pathlib import Path

from .settings import SettingsError

BOOKING = "gojek.esb.booking.BookingLogMessage"
DRIVER_PING = "gojek.esb.driverlocation.DriverLocationLogMessage"
API_LOG = "gojek.esb.apilog.ApiLogMessage"

START = dt.datetime(2026, 11, 22, 0, 0, 0, tzinfo=dt.timezone.utc)
# A few hot spots (lat, lng) so S2 cells at level 13 repeat and aggregates are not all ones.
HOT_SPOTS = [
    (-6.175392, 106.827153),
    (-6.2297, 106.8295),
    (-6.1944, 106.8229),
    (-6.1214, 106.7741),
    (-6.3000, 106.8900),
]
VEHICLES = ["bike", "car", "car_xl"]
STATUSES = ["CREATED", "DRIVER_FOUND", "PICKED_UP", "COMPLETED", "CUSTOMER_CANCELLED", "DRIVER_CANCELLED"]
SERVICES = ["GO_RIDE", "GO_CAR", "GO_FOOD", "GO_SEND"]
DRIVER_STATUSES = ["AVAILABLE", "BUSY", "OFFLINE", "ON_TRIP"]
PATHS = ["/v1/bookings", "/v1/drivers/nearby", "/v2/payments", "/v1/users/me"]


def _point(rng: random.Random) -> tuple[float, float]:
    lat, lng = rng.choice(HOT_SPOTS)
    return round(lat + rng.uniform(-0.01, 0.01), 6), round(lng + rng.uniform(-0.01, 0.01), 6)


def _time(rng: random.Random, i: int, n: int, minutes: int) -> dt.datetime:
    # Mostly in order with some jitter, like a real topic; millisecond precision.
    base = minutes * 60_000 * i / max(n, 1)
    ms = int(max(0, base + rng.uniform(-2_000, 2_000)))
    return START + dt.timedelta(milliseconds=min(ms, minutes * 60_000 - 1))


def bookings(n: int, minutes: int = 5, seed: int = 1) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lat, lng = _point(rng)
        out.append(
            {
                "order_number": f"RB-{seed}-{i:06d}",
                "service_type": rng.choice(SERVICES),
                "status": rng.choice(STATUSES),
                "event_timestamp": _time(rng, i, n, minutes),
                "customer_id": f"c{rng.randrange(200)}",
                "driver_id": f"d{rng.randrange(100)}",
                "city_id": rng.choice([1, 2, 3]),
                "vehicle_type": rng.choice(VEHICLES),
                "lat": lat,
                "long": lng,
                "pickup": {"latitude": lat, "longitude": lng, "address": "Jl. Sudirman"},
                "total_fare": round(rng.uniform(10_000, 90_000), 2),
                "items": rng.sample(["food", "drink", "parcel"], rng.randrange(3)),
                "metadata": {"app_version": rng.choice(["4.1", "4.2"])},
            }
        )
    return out


def driver_pings(n: int, minutes: int = 5, seed: int = 2) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        lat, lng = _point(rng)
        out.append(
            {
                "driver_id": f"d{rng.randrange(60)}",
                "latitude": lat,
                "longitude": lng,
                "driver_status": rng.choice(DRIVER_STATUSES),
                "event_timestamp": _time(rng, i, n, minutes),
                "service_type": rng.choice(SERVICES),
                "driver_location": {"latitude": lat, "longitude": lng, "accuracy_meters": 5.0},
                "speed_kmph": round(rng.uniform(0, 60), 1),
                "battery_level": rng.randrange(5, 100),
            }
        )
    return out


def api_logs(n: int, minutes: int = 5, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        status = rng.choices([200, 201, 400, 404, 500, 503], weights=[70, 5, 8, 7, 6, 4])[0]
        out.append(
            {
                "request_id": f"req-{seed}-{i}",
                "event_timestamp": _time(rng, i, n, minutes),
                "service": rng.choice(["booking-svc", "driver-svc", "payment-svc"]),
                "request": {
                    "method": rng.choice(["GET", "POST"]),
                    "path": rng.choice(PATHS),
                    "host": "api.example.internal",
                    "size_bytes": rng.randrange(100, 2000),
                },
                "response": {
                    "status_code": status,
                    "latency_ms": int(rng.lognormvariate(4, 0.8)),
                    "size_bytes": rng.randrange(100, 5000),
                },
                "consumer_id": f"app-{rng.randrange(5)}",
            }
        )
    return out


GENERATORS = {BOOKING: bookings, DRIVER_PING: driver_pings, API_LOG: api_logs}


def encode(events: list[dict], message_class) -> list[bytes]:
    """Protobuf encoding of events (datetime -> Timestamp; nested dicts -> messages)."""
    out = []
    for event in events:
        m = message_class()
        _fill(m, event)
        out.append(m.SerializeToString())
    return out


def _fill(m, values: dict) -> None:
    for key, value in values.items():
        field = getattr(m, key)
        if isinstance(value, dt.datetime):
            # the message class comes from the descriptor set's own pool, so its Timestamp is too
            field.FromDatetime(value.astimezone(dt.timezone.utc).replace(tzinfo=None))
        elif isinstance(value, dict) and hasattr(field, "DESCRIPTOR"):
            _fill(field, value)
        elif isinstance(value, dict):
            field.update(value)
        elif isinstance(value, list):
            field.extend(value)
        else:
            setattr(m, key, value)


def write_sample(
    message: str, n: int, path: str | Path, *, minutes: int = 5, seed: int | None = None, descriptor_set=None
) -> list[dict]:
    """Generate n events of `message`, write them length-delimited to path, return the events."""
    from dagger_runtime.inputs import write_delimited
    from protos import registry

    dset = descriptor_set or registry.load()
    kwargs = {"minutes": minutes} | ({"seed": seed} if seed is not None else {})
    events = GENERATORS[message](n, **kwargs)
    write_delimited(encode(events, dset.message_class(message)), path)
    return events


def add_sample_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("message", help="the message: " + ", ".join(sorted(GENERATORS)) + " (or its simple name)")
    p.add_argument("output", help="file to write (writeDelimitedTo format; its folder is created)")
    p.add_argument("-n", "--count", type=int, default=1000, help="number of messages (default 1000)")
    p.add_argument("--minutes", type=int, default=5, help="event-time span in minutes (default 5)")
    p.add_argument("--seed", type=int, help="random seed (default: fixed per message type)")


def run_sample(args: argparse.Namespace) -> int:
    from protos import registry

    dset = registry.load()
    message = dset.resolve(args.message)
    if message not in GENERATORS:
        raise SettingsError(f"no sample traffic for {message}: there is for {', '.join(sorted(GENERATORS))}")
    Path(args.output).parent.mkdir(parents=True, exist_ok=True)
    write_sample(message, args.count, args.output, minutes=args.minutes, seed=args.seed, descriptor_set=dset)
    print(f"wrote {args.count} {message} messages to {args.output}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`python -m loadtest.traffic`, also `dagger load sample`."""
    p = argparse.ArgumentParser(
        prog="python -m loadtest.traffic", description="Write sample protobuf traffic, length-delimited, to a file."
    )
    add_sample_arguments(p)
    return run_sample(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
