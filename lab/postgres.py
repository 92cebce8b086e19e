"""PostgreSQL (Debian's) on loopback for the job registry and the postgres sink: initdb once,
password (SCRAM) authentication over TCP, the socket in the data dir.

PostgreSQL refuses to run as root; as root the server runs as the `postgres` user, in a directory
of its own (pytest's temporary directories are closed to other users)."""

from __future__ import annotations

import os
import pwd
import secrets
import subprocess
import tempfile
from pathlib import Path

from .packages import postgres_bin
from .process import HOST, LocalServer, ServerError

SUPERUSER = "dagger_admin"


class Postgres(LocalServer):
    name = "postgres"

    def __init__(self, data_dir=None, **kwargs):
        self._user = pwd.getpwnam("postgres") if os.geteuid() == 0 else None
        if data_dir is None or self._user is not None:
            data_dir = tempfile.mkdtemp(prefix="dagger-postgres-")
            kwargs.setdefault("start_timeout", 60.0)
        super().__init__(data_dir, **kwargs)
        self._temporary = True if self._user is not None else self._temporary
        self.password = secrets.token_urlsafe(18)
        self.pgdata = self.data_dir / "pgdata"
        if self._user is not None:
            os.chown(self.data_dir, self._user.pw_uid, self._user.pw_gid)

    def _program(self, name: str) -> str:
        path = postgres_bin(name)
        if not path:
            raise ServerError(f"PostgreSQL's {name} is not installed: run `make servers` (Debian package postgresql)")
        return path

    def preexec(self):
        parent_hook = super().preexec()
        user = self._user

        def hook():
            if user is not None:
                os.setgid(user.pw_gid)
                os.setuid(user.pw_uid)
            if parent_hook:
                parent_hook()

        return hook

    def prepare(self) -> None:
        if (self.pgdata / "PG_VERSION").exists():
            return

        pwfile = self.data_dir / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._user is not None:
            os.chown(pwfile, self._user.pw_uid, self._user.pw_gid)
        os.chmod(pwfile, 0o600)
        result = subprocess.run(
            [
                self._program("initdb"),
                "-D",
                str(self.pgdata),
                "-U",
                SUPERUSER,
                "-E",
                "UTF8",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={pwfile}",
                "--no-instructions",
            ],
            capture_output=True,
            text=True,
            preexec_fn=self.preexec(),
            cwd=self.data_dir,
        )
        pwfile.unlink()
        if result.returncode != 0:
            raise ServerError(f"initdb failed ({result.returncode}): {result.stderr.strip()[-2000:]}")

    def command(self) -> list[str]:
        return [
            self._program("postgres"),
            "-D",
            str(self.pgdata),
            "-p",
            str(self.port),
            "-k",
            str(self.data_dir),
            "-c",
            f"listen_addresses={HOST}",
            # a test server: durability is not what is tested here
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
        ]

    def start(self):
        if self._user is not None:
            Path(self.log_path).touch()
            os.chown(self.log_path, self._user.pw_uid, self._user.pw_gid)
        return super().start()

    def dsn(self, db: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@{HOST}:{self.port}/{db}"

    def connect(self, db: str = "postgres", **kwargs):
        import psycopg

        return psycopg.connect(self.dsn(db), password=self.password, connect_timeout=5, **kwargs)

    def healthy(self) -> bool:
        with self.connect() as conn:
            conn.execute("SELECT 1")
        return True

    def create_database(self, db: str) -> None:
        from psycopg import sql

        with self.connect(autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(db)))
