"""The registry of daggers: what runs where, every spec version (who deployed it, when, from which
position) and every status change, in a real database through SQLAlchemy.

A SQLite file by default; PostgreSQL by URL (`postgresql+psycopg://...`, the lab's). Tables are
created on first use; rows are only ever added to `versions` and `events`, so the history is the
audit trail.
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text, UniqueConstraint, create_engine, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, OperationalError, ProgrammingError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

from ..errors import DaggerError

# Spark's driver states that mean the dagger no longer runs
ENDED = ("FINISHED", "KILLED", "FAILED", "ERROR", "STOPPED", "LOST")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class _Base(DeclarativeBase):
    pass


class DaggerRow(_Base):
    __tablename__ = "daggers"
    name: Mapped[str] = mapped_column(String(128), primary_key=True)
    team: Mapped[str | None] = mapped_column(String(64))
    cluster: Mapped[str] = mapped_column(String(64))
    version: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String(32))
    submission_id: Mapped[str | None] = mapped_column(String(128))
    metrics_port: Mapped[int | None] = mapped_column(Integer)
    checkpoint: Mapped[str] = mapped_column(Text)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class VersionRow(_Base):
    __tablename__ = "versions"
    __table_args__ = (UniqueConstraint("dagger", "number"),)
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dagger: Mapped[str] = mapped_column(ForeignKey("daggers.name"))
    number: Mapped[int] = mapped_column(Integer)
    spec: Mapped[str] = mapped_column(Text)  # the job file as deployed
    spec_format: Mapped[str] = mapped_column(String(16))  # its file suffix: .yaml or .properties
    spec_digest: Mapped[str] = mapped_column(String(64))
    state_key: Mapped[str] = mapped_column(String(64))  # what the checkpoint's state depends on
    checkpoint: Mapped[str] = mapped_column(Text)
    start: Mapped[str] = mapped_column(Text)  # where a new checkpoint started reading
    cluster: Mapped[str] = mapped_column(String(64))
    deployed_by: Mapped[str] = mapped_column(String(128))
    deployed_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class StandbyRow(_Base):
    """A dagger's standby driver: started on another cluster on the same checkpoint, waiting for
    the lease (dagger_runtime/lease.py). A table of its own, so a registry from before standbys
    gains it on first use."""

    __tablename__ = "standbys"
    dagger: Mapped[str] = mapped_column(ForeignKey("daggers.name"), primary_key=True)
    version: Mapped[int] = mapped_column(Integer)
    cluster: Mapped[str] = mapped_column(String(64))
    submission_id: Mapped[str] = mapped_column(String(128))
    metrics_port: Mapped[int] = mapped_column(Integer)
    since: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))


class EventRow(_Base):
    __tablename__ = "events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dagger: Mapped[str] = mapped_column(ForeignKey("daggers.name"))
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True))
    actor: Mapped[str] = mapped_column(String(128))
    action: Mapped[str] = mapped_column(String(16))  # deploy, edit, stop, status
    status: Mapped[str] = mapped_column(String(32))
    detail: Mapped[str] = mapped_column(Text, default="")


@dataclass(frozen=True)
class Dagger:
    name: str
    team: str | None
    cluster: str
    version: int
    status: str
    submission_id: str | None
    metrics_port: int | None
    checkpoint: str
    updated_at: dt.datetime

    @property
    def running(self) -> bool:
        return self.status not in ENDED


@dataclass(frozen=True)
class Standby:
    version: int
    cluster: str
    submission_id: str
    metrics_port: int
    since: dt.datetime


@dataclass(frozen=True)
class Version:
    number: int
    spec: str
    spec_format: str
    spec_digest: str
    state_key: str
    checkpoint: str
    start: str
    cluster: str
    deployed_by: str
    deployed_at: dt.datetime


@dataclass(frozen=True)
class Event:
    at: dt.datetime
    actor: str
    action: str
    status: str
    detail: str


def default_url() -> str:
    """$DAGGER_REGISTRY_URL, else a SQLite file in the user's state directory."""
    if os.environ.get("DAGGER_REGISTRY_URL"):
        return os.environ["DAGGER_REGISTRY_URL"]
    state = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "daggers"
    return f"sqlite:///{state / 'registry.db'}"


def resolve_url(value: str | None) -> str:
    """A registry URL as given, or `@FILE` for one kept in a file (so a password stays out of the
    command line and the shell history)."""
    if not value:
        return default_url()
    if value.startswith("@"):
        path = Path(value[1:]).expanduser()
        try:
            return path.read_text().strip()
        except OSError as e:
            raise DaggerError(f"--registry {value}: cannot read the registry URL from {path}: {e.strerror}") from None
    return value


class Registry:
    def __init__(self, url: str):
        try:
            parsed = make_url(url)
        except ArgumentError:
            raise DaggerError(
                "the registry URL is not a database URL (sqlite:///FILE or postgresql+psycopg://USER@HOST:PORT/DB)"
            ) from None
        if parsed.get_backend_name() not in ("sqlite", "postgresql"):
            raise DaggerError(f"the registry runs on SQLite or PostgreSQL, not {parsed.get_backend_name()}")
        if parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:"):
            Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        # the URL may hold a password: say where, never the URL itself
        self.where = parsed.render_as_string(hide_password=True)
        # a pooled connection outlives a server restart (the portal's did, after a drill restarted
        # PostgreSQL): check it before each use and reconnect, rather than fail the request
        self.engine = create_engine(parsed, pool_pre_ping=True)
        try:
            _Base.metadata.create_all(self.engine)
        except (OperationalError, ProgrammingError) as e:
            from ..sinks.postgres import login_refusal

            text = str(e.orig).strip()
            reason = login_refusal(e.orig) or ("permission denied" in text and text.splitlines()[0])
            if reason:
                # only the registry's own role may log in to its database and write its tables
                raise DaggerError(
                    f"the registry at {self.where} refused role {parsed.username!r}: {reason}; log in "
                    "with the registry's own URL (the lab's secrets/registry.url)"
                ) from None
            raise DaggerError(f"cannot reach the registry at {self.where}: {text.splitlines()[0]}") from None

    def close(self) -> None:
        self.engine.dispose()

    # --- reading -------------------------------------------------------------------------------
    def get(self, name: str) -> Dagger | None:
        with Session(self.engine) as s:
            row = s.get(DaggerRow, name)
            return _dagger(row) if row else None

    def list(self, cluster: str | None = None) -> list[Dagger]:
        with Session(self.engine) as s:
            query = select(DaggerRow).order_by(DaggerRow.name)
            if cluster:
                query = query.where(DaggerRow.cluster == cluster)
            return [_dagger(r) for r in s.scalars(query)]

    def version(self, name: str, number: int | None = None) -> Version | None:
        with Session(self.engine) as s:
            query = select(VersionRow).where(VersionRow.dagger == name)
            query = (
                query.where(VersionRow.number == number)
                if number is not None
                else query.order_by(VersionRow.number.desc()).limit(1)
            )
            row = s.scalars(query).first()
            return _version(row) if row else None

    def versions(self, name: str) -> list[Version]:
        with Session(self.engine) as s:
            rows = s.scalars(select(VersionRow).where(VersionRow.dagger == name).order_by(VersionRow.number))
            return [_version(r) for r in rows]

    def history(self, name: str) -> list[Event]:
        with Session(self.engine) as s:
            rows = s.scalars(select(EventRow).where(EventRow.dagger == name).order_by(EventRow.id))
            return [Event(r.at, r.actor, r.action, r.status, r.detail) for r in rows]

    def ports_in_use(self, cluster: str) -> set[int]:
        with Session(self.engine) as s:
            standbys = set(s.scalars(select(StandbyRow.metrics_port).where(StandbyRow.cluster == cluster)))
        return {d.metrics_port for d in self.list(cluster) if d.running and d.metrics_port} | standbys

    def standby(self, name: str) -> Standby | None:
        with Session(self.engine) as s:
            r = s.get(StandbyRow, name)
            return Standby(r.version, r.cluster, r.submission_id, r.metrics_port, r.since) if r else None

    # --- writing -------------------------------------------------------------------------------
    def record_version(
        self,
        *,
        name: str,
        team: str | None,
        cluster: str,
        spec: str,
        spec_format: str,
        spec_digest: str,
        state_key: str,
        checkpoint: str,
        start: str,
        actor: str,
        submission_id: str,
        metrics_port: int | None,
        action: str,
        new: bool = False,
    ) -> int:
        """A deploy or an edit: a new version, the dagger's current row, an event. Returns the
        version number. Checked in the same transaction, as two deploys may race (the checks
        before a deploy read the registry seconds earlier): a dagger never changes team, and a
        `new` one (a first deploy) must not exist yet."""
        now = _now()
        with Session(self.engine) as s, s.begin():
            row = s.get(DaggerRow, name, with_for_update=True)
            if row is not None and (new or row.team != team):
                raise DaggerError(
                    f"dagger {name} was deployed meanwhile by someone else; choose another name"
                    if new
                    else f"dagger {name} belongs to another team: a dagger never changes team"
                )
            number = (row.version + 1) if row else 1
            if row is None:
                row = DaggerRow(name=name, created_at=now)
                s.add(row)
            row.team, row.cluster, row.version, row.status = team, cluster, number, "SUBMITTED"
            row.submission_id, row.metrics_port, row.checkpoint, row.updated_at = (
                submission_id,
                metrics_port,
                checkpoint,
                now,
            )
            s.flush()
            s.add(
                VersionRow(
                    dagger=name,
                    number=number,
                    spec=spec,
                    spec_format=spec_format,
                    spec_digest=spec_digest,
                    state_key=state_key,
                    checkpoint=checkpoint,
                    start=start,
                    cluster=cluster,
                    deployed_by=actor,
                    deployed_at=now,
                )
            )
            s.add(
                EventRow(
                    dagger=name,
                    at=now,
                    actor=actor,
                    action=action,
                    status="SUBMITTED",
                    detail=f"version {number} as {submission_id} on {cluster}; {start}",
                )
            )
        return number

    def record_status(
        self,
        name: str,
        status: str,
        *,
        actor: str,
        action: str = "status",
        detail: str = "",
        submission_id: str | None = None,
    ) -> bool:
        """A status change (only a change is recorded). With submission_id, only if that driver is
        still the dagger's (an edit may have replaced it meanwhile). Returns whether it changed."""
        with Session(self.engine) as s, s.begin():
            row = s.get(DaggerRow, name, with_for_update=True)
            if row is None or (row.status == status and action == "status"):
                return False
            if submission_id is not None and row.submission_id != submission_id:
                return False
            now = _now()
            row.status, row.updated_at = status, now
            s.add(EventRow(dagger=name, at=now, actor=actor, action=action, status=status, detail=detail))
            return True

    def record_standby(
        self, name: str, *, version: int, cluster: str, submission_id: str, metrics_port: int, actor: str, action: str
    ) -> None:
        now = _now()
        with Session(self.engine) as s, s.begin():
            row = s.get(StandbyRow, name, with_for_update=True) or StandbyRow(dagger=name)
            row.version, row.cluster, row.submission_id, row.metrics_port, row.since = (
                version,
                cluster,
                submission_id,
                metrics_port,
                now,
            )
            s.add(row)
            s.add(
                EventRow(
                    dagger=name,
                    at=now,
                    actor=actor,
                    action=action,
                    status="STANDBY",
                    detail=f"version {version} standing by as {submission_id} on {cluster}",
                )
            )

    def drop_standby(self, name: str, *, actor: str, action: str, detail: str) -> bool:
        with Session(self.engine) as s, s.begin():
            row = s.get(StandbyRow, name, with_for_update=True)
            if row is None:
                return False
            s.delete(row)
            s.add(EventRow(dagger=name, at=_now(), actor=actor, action=action, status="NO_STANDBY", detail=detail))
            return True

    def take_over(self, name: str, *, actor: str, detail: str, driver: str | None, standby_driver: str) -> Standby:
        """The standby is now the dagger's driver: its cluster, driver and metrics port become the
        dagger's, and it has no standby left. Only if the dagger's driver and standby are still
        `driver` and `standby_driver` (an edit or another move may have replaced them meanwhile)."""
        with Session(self.engine) as s, s.begin():
            row = s.get(DaggerRow, name, with_for_update=True)
            standby = s.get(StandbyRow, name, with_for_update=True)
            if row is None or standby is None or row.submission_id != driver or standby.submission_id != standby_driver:
                raise DaggerError(
                    f"{name}: its driver or standby changed while the takeover was being recorded; see `dagger status`"
                )
            now = _now()
            row.cluster, row.submission_id, row.metrics_port = (
                standby.cluster,
                standby.submission_id,
                standby.metrics_port,
            )
            row.status, row.updated_at = "RUNNING", now
            taken = Standby(
                standby.version, standby.cluster, standby.submission_id, standby.metrics_port, standby.since
            )
            s.delete(standby)
            s.add(EventRow(dagger=name, at=now, actor=actor, action="failover", status="RUNNING", detail=detail))
            return taken


def _dagger(r: DaggerRow) -> Dagger:
    return Dagger(
        r.name, r.team, r.cluster, r.version, r.status, r.submission_id, r.metrics_port, r.checkpoint, r.updated_at
    )


def _version(r: VersionRow) -> Version:
    return Version(
        r.number,
        r.spec,
        r.spec_format,
        r.spec_digest,
        r.state_key,
        r.checkpoint,
        r.start,
        r.cluster,
        r.deployed_by,
        r.deployed_at,
    )
