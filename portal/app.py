"""The portal's Flask application. Every page and API call but the sign-in's needs a signed-in user,
and every one that names a dagger answers only for the user's teams (access.Viewer): another
team's dagger is "not found", exactly as one that does not exist, so a page or a hand-made request
learns nothing of it.

Sessions live in a signed cookie (`__Host-` prefixed: Secure, path /, no domain; HttpOnly;
SameSite=Lax); every change is a POST carrying the session's CSRF token (Flask-WTF); pages are
Jinja templates with autoescaping, so whatever a user wrote (a dagger's name, its query) is shown
as text; the Content-Security-Policy allows the portal's own scripts and styles only.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import os
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from authlib.integrations.flask_client import OAuth
from flask import Flask, abort, flash, g, jsonify, redirect, render_template, request, session, url_for
from flask_wtf.csrf import CSRFError, CSRFProtect

from dagger_runtime.config.loader import loads_job
from dagger_runtime.errors import DaggerError
from dagger_runtime.lifecycle import operations, spark
from dagger_runtime.lifecycle.clusters import get_cluster, load_clusters
from dagger_runtime.lifecycle.failover import kafka_clusters
from dagger_runtime.lifecycle.registry import Registry
from dagger_runtime.lifecycle.spark import driver_log
from infra import grants as grants_mod

from . import access, cells, charts, drafts, latest
from .config import PortalConfig
from .platform_rules import RULES

SESSION_HOURS = 8
LOG_TAIL_BYTES = 200_000
LOG_TAIL_LINES = 400
STATUS_CACHE_S = 5.0  # a team's status is asked of the clusters at most this often, however many tabs poll
STATUS_STALE_S = 60.0  # older than this, a status is not shown while it is asked again
CELLS_CACHE_S = 10.0  # a dagger's latest window is read from its sink at most this often, however many look
CHARTS_CACHE_S = 15.0  # a dagger's charts and alerts are asked of Prometheus at most this often (30 s steps)
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


_SCALARS = {
    1: "double",
    2: "float",
    3: "int64",
    4: "uint64",
    5: "int32",
    6: "fixed64",
    7: "fixed32",
    8: "bool",
    9: "string",
    12: "bytes",
    13: "uint32",
    15: "sfixed32",
    16: "sfixed64",
    17: "sint32",
    18: "sint64",
}


def _repeated(field) -> bool:
    flag = getattr(field, "is_repeated", None)  # protobuf 6; `label` before it
    return bool(flag) if flag is not None else field.label == 3


def safe_next(target: str) -> str:
    """Where to go after the sign-in: a path of this portal only, never another site (//host,
    /\\host and scheme-relative spellings included)."""
    if (
        not target.startswith("/")
        or target.startswith(("//", "/\\"))
        or "\\" in target
        or any(ord(c) < 0x20 or c == "\x7f" for c in target)
    ):
        return "/"
    return target


def create_app(config: PortalConfig, *, registry: Registry | None = None, workbench=None) -> Flask:
    from infra import spec as platform_spec
    from protos import registry as protos_registry

    app = Flask(__name__)
    app.json.sort_keys = False  # a preview's rows keep the query's column order
    app.config.update(
        SECRET_KEY=config.session_key,
        SESSION_COOKIE_NAME="__Host-dagger-portal",
        # browsers hold loopback for a secure context: Secure cookies work on the lab's http too
        SESSION_COOKIE_SECURE=True,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=dt.timedelta(hours=SESSION_HOURS),
        SESSION_REFRESH_EACH_REQUEST=False,  # the lifetime counts from the sign-in
        WTF_CSRF_TIME_LIMIT=None,  # the token lives as long as the session
        MAX_CONTENT_LENGTH=1 << 20,
    )
    CSRFProtect(app)
    oauth = OAuth(app)
    provider = oauth.register(
        "provider",
        client_id=config.client_id,
        client_secret=config.client_secret,
        server_metadata_url=f"{config.issuer}/.well-known/openid-configuration",
        client_kwargs={"scope": "openid", "code_challenge_method": "S256"},
    )
    # a broken grant names no one (infra.validate refuses it in its pull request)
    grants, _ = grants_mod.load_all(Path(config.grants_dir) if config.grants_dir else grants_mod.GRANTS_DIR)
    groups_to_teams = access.team_groups(grants.values())
    registry = registry or Registry(config.registry_url)
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(config.url))
    # form-action: the sign-out form's redirect goes on to the provider's end-session page
    provider_origin = "{0.scheme}://{0.netloc}".format(urlsplit(config.issuer))
    csp = (
        "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
        f"form-action 'self' {provider_origin}; frame-ancestors 'none'"
    )
    catalogue = [t for c in platform_spec.load_platform().kafka_clusters.values() for t in c.topics]
    descriptor_set = protos_registry.load()
    servers = drafts.Servers(config.kafka, config.influx_url, config.postgres) if config.kafka else None
    influx = cells.Influx(config.influx_url) if config.influx_url else None
    prometheus = (
        charts.Prometheus(config.prometheus_url, config.prometheus_user, config.prometheus_password)
        if config.prometheus_url
        else None
    )
    status_cache: dict[tuple, tuple[float, dict]] = {}
    status_gates: dict[tuple, threading.Lock] = {}
    charts_cache: dict[tuple, tuple[float, tuple]] = {}
    maps: dict[tuple, tuple] = {}
    cells_cache: dict[tuple, tuple[float, dict]] = {}
    status_lock = threading.Lock()

    def signed_in(view):
        @functools.wraps(view)
        def wrapper(*args, **kwargs):
            if g.viewer is None:
                if request.path.startswith("/api/"):
                    return jsonify(error="sign in first"), 401
                return redirect(url_for("sign_in", next=request.full_path if request.query_string else request.path))
            return view(*args, **kwargs)

        return wrapper

    def shown_error(e: DaggerError, sentence: str) -> str:
        """An operation's refusal as this viewer may read it: the cause for an operator; for a team
        a sentence (the cause may name other teams' clusters, folders or the registry's host)."""
        app.logger.warning("%s: %s: %s", g.viewer.user, sentence, e)
        if g.viewer.operator:
            return f"{sentence}: {e}"
        return f"{sentence[0].upper()}{sentence[1:]}; the platform's operators can see why in the portal's log."

    def own_dagger(name: str):
        """The dagger `name` if the viewer's team owns it; 404 (as for no dagger) otherwise."""
        dagger = registry.get(name)
        if dagger is None or not g.viewer.sees(dagger.team):
            abort(404)
        return dagger

    @app.before_request
    def load_viewer():
        g.viewer = None
        signed = session.get("signed_in")
        if signed:
            age = time.time() - float(signed.get("at", 0))
            try:
                if 0 <= age < SESSION_HOURS * 3600:
                    # teams from the groups and today's grants, so a grant's change counts at once
                    g.viewer = access.viewer(signed["claims"], groups_to_teams, grants_mod.OPERATORS_GROUP)
            except access.NotAMember:
                pass
            if g.viewer is None:
                session.clear()
        # a change must come from the portal's own pages (CSRF tokens aside, as browsers say where from)
        if request.method not in ("GET", "HEAD", "OPTIONS"):
            sent = request.headers.get("Origin")
            if sent is not None and sent != origin:
                abort(403)

    @app.after_request
    def security_headers(response):
        response.headers.setdefault("Content-Security-Policy", csp)
        for name, value in _SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if origin.startswith("https://"):
            response.headers.setdefault("Strict-Transport-Security", "max-age=31536000")
        return response

    @app.errorhandler(CSRFError)
    def csrf_refused(e):
        return render_template("error.html", code=400, message=f"Refused: {e.description}"), 400

    @app.errorhandler(403)
    def forbidden(e):
        if request.path.startswith("/api/"):
            return jsonify(error="forbidden"), 403
        return render_template("error.html", code=403, message="You may not do that."), 403

    @app.errorhandler(404)
    def not_found(e):
        if request.path.startswith("/api/"):
            return jsonify(error="not found"), 404
        return render_template("error.html", code=404, message="Not found."), 404

    # --- signing in and out ------------------------------------------------------------------------

    @app.get("/auth/login")
    def sign_in():
        session["next"] = safe_next(request.args.get("next", "/"))
        return provider.authorize_redirect(f"{config.url}/auth/callback")

    @app.get("/auth/callback")
    def callback():
        try:
            token = provider.authorize_access_token()  # checks state, the code's PKCE, the ID token and its nonce
        except Exception as e:  # noqa: BLE001 - authlib's OAuthError and the ID token's checks: sign in again
            app.logger.warning("sign-in refused: %s", type(e).__name__)
            return render_template("error.html", code=401, message="The sign-in did not complete. Try again."), 401
        claims = token.get("userinfo") or {}
        try:
            viewer = access.viewer(claims, groups_to_teams, grants_mod.OPERATORS_GROUP)
        except access.NotAMember as e:
            session.clear()
            return render_template("error.html", code=403, message=str(e)), 403
        nxt = session.get("next", "/")
        session.clear()  # nothing of the signed-out session carries over
        session.permanent = True
        # what the access needs, and when: the session ends SESSION_HOURS after the sign-in
        session["signed_in"] = {
            "at": time.time(),
            "claims": {k: claims.get(k) for k in ("sub", "preferred_username", "groups")},
            "sid": claims.get("sid"),
        }
        app.logger.info(
            "signed in: %s (teams %s%s)",
            viewer.user,
            ", ".join(sorted(viewer.teams)) or "-",
            ", operator" if viewer.operator else "",
        )
        return redirect(nxt)

    @app.post("/auth/logout")
    def sign_out():
        session.clear()
        end = provider.load_server_metadata().get("end_session_endpoint")
        if not end:
            return redirect("/", code=303)
        # the provider asks the user to confirm (no id_token kept here to skip it): its session ends too
        query = {"post_logout_redirect_uri": f"{config.url}/", "client_id": config.client_id}
        return redirect(f"{end}?{urlencode(query)}", code=303)

    # --- pages -------------------------------------------------------------------------------------

    @app.get("/healthz")
    def healthz():
        return "ok\n", 200, {"Content-Type": "text/plain"}

    @app.get("/")
    def home():
        if g.viewer is None:
            return render_template("signed_out.html")
        return redirect(url_for("daggers_page"))

    def _status(name: str | None = None) -> dict:
        """The daggers' live status for the viewer's teams. Asked of the clusters by one request at a
        time per view: a view older than STATUS_CACHE_S is answered as it is while one caller
        refreshes it in the background (under load, every tab's poll asking the masters at once
        made everyone wait); one older than STATUS_STALE_S is not shown, but asked for."""
        teams = None if g.viewer.operator else g.viewer.teams
        key = (name, None if teams is None else tuple(sorted(teams)))
        actor = g.viewer.actor

        def ask() -> dict:
            data = operations.status(registry, name, actor=actor, clusters_dir=config.clusters_dir, teams=teams).data
            with status_lock:
                if len(status_cache) > 1000:
                    status_cache.clear()
                status_cache[key] = (time.monotonic(), data)
            return data

        def refresh(gate) -> None:
            try:
                ask()
            except DaggerError as e:
                app.logger.warning("the daggers' status could not be refreshed: %s", e)
            finally:
                gate.release()

        with status_lock:
            hit = status_cache.get(key)
            gate = status_gates.setdefault(key, threading.Lock())
        age = time.monotonic() - hit[0] if hit else None
        if age is not None and age < STATUS_CACHE_S:
            return hit[1]
        if age is not None and age < STATUS_STALE_S:
            if gate.acquire(blocking=False):
                try:
                    threading.Thread(target=refresh, args=(gate,), name="portal-status", daemon=True).start()
                except RuntimeError:  # no thread to be had: the next request tries again
                    gate.release()
            return hit[1]
        with gate:  # the first asks; those behind it take its answer
            with status_lock:
                hit = status_cache.get(key)
            if hit and time.monotonic() - hit[0] < STATUS_CACHE_S:
                return hit[1]
            return ask()

    @app.get("/daggers")
    @signed_in
    def daggers_page():
        try:
            return render_template("daggers.html", status=_status())
        except DaggerError as e:
            # the registry's rows without their live numbers, and why
            rows = [
                {"dagger": d.name, "team": d.team, "cluster": d.cluster, "version": d.version, "status": d.status}
                for d in registry.list()
                if g.viewer.sees(d.team)
            ]
            flash(shown_error(e, "the daggers' live numbers cannot be read now"), "error")
            return render_template("daggers.html", status={"daggers": rows})

    @app.get("/daggers/<name>")
    @signed_in
    def dagger_page(name: str):
        dagger = own_dagger(name)
        versions = registry.versions(dagger.name)
        watched, alerts, problem = [], [], None
        if prometheus is not None and dagger.team:
            try:
                watched, alerts = _watched(dagger.team, dagger.name)
            except DaggerError as e:
                problem = shown_error(e, "its charts and alerts cannot be read now")
        return render_template(
            "dagger.html",
            dagger=dagger,
            versions=versions,
            history=registry.history(dagger.name),
            status=_one_status(dagger.name),
            charts=watched,
            alerts=alerts,
            charts_problem=problem,
            chart_box=(charts.WIDTH, charts.HEIGHT),
            watching=prometheus is not None,
            map_key=_map_of(dagger, versions[-1])[1] if versions else None,
            failover_to=failover_targets(dagger) if g.viewer.operator and dagger.running else [],
        )

    def _watched(team: str, name: str) -> tuple[list, list]:
        """The dagger's charts and alerts, asked of Prometheus at most every CHARTS_CACHE_S."""
        with status_lock:
            hit = charts_cache.get((team, name))
        if hit and time.monotonic() - hit[0] < CHARTS_CACHE_S:
            return hit[1]
        found = charts.dagger_charts(prometheus, team, name), charts.dagger_alerts(prometheus, team, name)
        with status_lock:
            if len(charts_cache) > 1000:
                charts_cache.clear()
            charts_cache[(team, name)] = (time.monotonic(), found)
        return found

    def _map_of(dagger, version):
        """(the version's job as its team's deploy reads it, the column its map is keyed by), or
        (None, None) when its sink is not the portal's InfluxDB or its query keys by no cell. A
        version never changes: read once."""
        if influx is None or not dagger.team:
            return None, None
        key = (dagger.name, version.number, dagger.team)
        with status_lock:
            known = maps.get(key)
        if known is None:
            known = _read_map(dagger, version)
            with status_lock:
                if len(maps) > 1000:
                    maps.clear()
                maps[key] = known
        return known

    def _read_map(dagger, version):
        fmt = "properties" if version.spec_format.endswith("properties") else "yaml"
        try:
            # only the dagger's team's secrets, as deploy hands its driver
            names = spark.referenced_env(version.spec, dagger.team, fmt)
            job = loads_job(
                version.spec,
                fmt=fmt,
                source=f"{dagger.name}{version.spec_format}",
                env={n: os.environ[n] for n in names},
            )
        except DaggerError:
            return None, None
        sink = job.sink.influx
        if sink is None or sink.url.rstrip("/") != config.influx_url.rstrip("/"):
            return None, None
        key = cells.key_of(job.sql)
        return (job, key) if key else (None, None)

    @app.get("/api/daggers/<name>/cells")
    @signed_in
    def api_cells(name: str):
        dagger = own_dagger(name)
        versions = registry.versions(dagger.name)
        job, key = _map_of(dagger, versions[-1]) if versions else (None, None)
        if key is None:
            return jsonify(error="this dagger writes no S2 cells or geohashes to the platform's InfluxDB"), 404
        sink = job.sink.influx
        cached = (dagger.name, versions[-1].number, dagger.team)
        with status_lock:
            hit = cells_cache.get(cached)
        if hit and time.monotonic() - hit[0] < CELLS_CACHE_S:
            return jsonify(hit[1])
        try:
            rows = cells.latest_window(
                influx,
                sink.db_name,
                sink.measurement_name,
                sink.username,
                sink.password.get_secret_value() if sink.password else None,
            )
            drawn = cells.cells(rows, key)
        except DaggerError as e:
            return jsonify(error=shown_error(e, "its latest window cannot be read now")), 503
        with status_lock:
            if len(cells_cache) > 1000:
                cells_cache.clear()
            cells_cache[cached] = (time.monotonic(), drawn)
        return jsonify(drawn)

    def _one_status(name: str) -> dict | None:
        try:
            rows = _status(name)["daggers"]
        except DaggerError:
            return None
        return rows[0] if rows else None

    @app.get("/daggers/<name>/diff")
    @signed_in
    def dagger_diff(name: str):
        """What changed in the query and settings between two versions (default: the last two)."""
        dagger = own_dagger(name)
        versions = {v.number: v for v in registry.versions(dagger.name)}
        new = request.args.get("to", type=int) or dagger.version
        old = request.args.get("from", type=int) or new - 1
        if old not in versions or new not in versions:
            abort(404)
        lines = list(
            difflib.unified_diff(
                versions[old].spec.splitlines(),
                versions[new].spec.splitlines(),
                f"version {old}",
                f"version {new}",
                lineterm="",
            )
        )
        return render_template("diff.html", dagger=dagger, old=old, new=new, lines=lines)

    @app.get("/daggers/<name>/logs")
    @signed_in
    def dagger_logs(name: str):
        dagger = own_dagger(name)
        text, problem = "", None
        if not dagger.submission_id:
            problem = "It has no driver."
        else:
            try:
                cluster = get_cluster(dagger.cluster, config.clusters_dir, team=dagger.team)
                text = driver_log(cluster, dagger.submission_id, which="stdout", tail_bytes=LOG_TAIL_BYTES)
            except DaggerError as e:
                problem = shown_error(e, "its driver's log cannot be read now")
        lines = text.splitlines()[-LOG_TAIL_LINES:]
        return render_template("logs.html", dagger=dagger, lines=lines, problem=problem)

    @app.post("/daggers/<name>/stop")
    @signed_in
    def dagger_stop(name: str):
        dagger = own_dagger(name)
        try:
            outcome = operations.stop(registry, dagger.name, actor=g.viewer.actor, clusters_dir=config.clusters_dir)
        except DaggerError as e:
            flash(shown_error(e, f"the stop of {dagger.name} did not go through"), "error")
        else:
            for line in outcome.lines:
                flash(line, "info")
            app.logger.info("%s stopped %s", g.viewer.user, dagger.name)
        return redirect(url_for("dagger_page", name=dagger.name), code=303)

    def failover_targets(dagger) -> list[str]:
        """Where an operator may move the dagger: spark/<cluster> for the team's other Spark
        clusters, kafka/<cluster> for every Kafka cluster (the operation refuses the one it reads)."""
        spark_to = [f"spark/{c}" for c in team_clusters(dagger.team) if c != dagger.cluster]
        try:
            kafka_to = [f"kafka/{c}" for c in sorted(kafka_clusters(config.clusters_dir))]
        except DaggerError:
            kafka_to = []
        return spark_to + kafka_to

    @app.post("/daggers/<name>/failover")
    @signed_in
    def dagger_failover(name: str):
        dagger = own_dagger(name)
        if not g.viewer.operator:
            abort(403)  # the team sees its dagger; only the platform's operators move it
        target = request.form.get("to", "")
        if not dagger.running or target not in failover_targets(dagger):
            flash(f"{dagger.name} cannot be moved to {target[:80]!r}: choose one of the clusters offered", "error")
            return redirect(url_for("dagger_page", name=dagger.name), code=303)
        kind, _, to = target.partition("/")
        try:
            if kind == "spark":
                outcome = operations.failover_spark(
                    registry, dagger.name, to, actor=g.viewer.actor, clusters_dir=config.clusters_dir
                )
            else:
                outcome = operations.failover_kafka(
                    registry, dagger.name, to, actor=g.viewer.actor, clusters_dir=config.clusters_dir
                )
        except DaggerError as e:
            flash(shown_error(e, f"the failover of {dagger.name} to {target} did not go through"), "error")
        else:
            for line in outcome.lines:
                flash(line, "info")
            app.logger.info("%s moved %s to %s", g.viewer.user, dagger.name, target)
        return redirect(url_for("dagger_page", name=dagger.name), code=303)

    # --- creating a dagger: input, query, sink ------------------------------------------------------

    def own_team(team) -> str:
        """A team the viewer acts for (404 for any other, as for no team)."""
        if not isinstance(team, str) or team not in grants or not g.viewer.sees(team):
            abort(404)
        return team

    def team_inputs(team: str) -> list[drafts.Input]:
        return drafts.inputs(catalogue, team, grants[team].kafka_clusters)

    @app.get("/daggers/new")
    @signed_in
    def new_dagger():
        teams = sorted(grants) if g.viewer.operator else sorted(t for t in g.viewer.teams if t in grants)
        if not teams:
            abort(404)
        team = own_team(request.args.get("team", teams[0]))
        inputs = [(i, fields_of(i.message)) for i in team_inputs(team)]
        return render_template(
            "new.html",
            teams=teams,
            team=team,
            inputs=inputs,
            table=drafts.TABLE,
            clusters=team_clusters(team) if servers else [],
            sinks=[k for k in drafts.SINK_TYPES if servers and _sink_offered(k)],
            ready=servers is not None and workbench is not None,
        )

    def _sink_offered(kind: str) -> bool:
        return (
            kind in ("kafka", "log")
            or (kind == "influx" and bool(servers.influx_url))
            or (kind == "postgres" and servers.postgres is not None)
        )

    def fields_of(message: str) -> list[tuple[str, str]]:
        """A message's fields as (name, type) for step 1 (the query's columns of a stream)."""
        out = []
        for f in descriptor_set.message_descriptor(message).fields:
            kind = (
                f.message_type.full_name
                if f.message_type
                else (f.enum_type.full_name if f.enum_type else _SCALARS.get(f.type, "?"))
            )
            out.append((f.name, ("repeated " if _repeated(f) else "") + kind))
        return out

    @app.post("/api/drafts/validate")
    @signed_in
    def api_validate():
        """Step 2 and 3's answer as the analyst types: the form's problems (field by field), or
        `dagger validate --json`'s answer for the dagger the form describes."""
        form = request.get_json(silent=True)
        if not isinstance(form, dict):
            return jsonify(valid=False, errors=[{"kind": "form", "field": "", "message": "a JSON object"}]), 400
        team = own_team(form.get("team"))
        if servers is None or workbench is None:
            return jsonify(
                valid=False, errors=[{"kind": "form", "field": "", "message": "this portal creates no daggers"}]
            ), 409
        try:
            job = drafts.job(
                form,
                team=team,
                granted=team_inputs(team),
                servers=servers,
                rules=RULES,
                schema_version=descriptor_set.digest,
            )
        except drafts.DraftError as e:
            return jsonify(valid=False, errors=[{"kind": "form", **p} for p in e.problems]), 400
        try:
            answer = workbench.validate(job)
        except DaggerError as e:
            return jsonify(valid=False, errors=[{"kind": "portal", "message": str(e)}]), 503
        return jsonify(answer)

    def _draft(form) -> tuple[str, dict] | tuple[None, tuple]:
        """(team, job) for a draft the viewer may write, or (None, an error response)."""
        if not isinstance(form, dict):
            return None, (jsonify(valid=False, errors=[{"kind": "form", "field": "", "message": "a JSON object"}]), 400)
        team = own_team(form.get("team"))
        if servers is None or workbench is None:
            return None, (
                jsonify(
                    valid=False, errors=[{"kind": "form", "field": "", "message": "this portal creates no daggers"}]
                ),
                409,
            )
        try:
            return team, drafts.job(
                form,
                team=team,
                granted=team_inputs(team),
                servers=servers,
                rules=RULES,
                schema_version=descriptor_set.digest,
            )
        except drafts.DraftError as e:
            return None, (jsonify(valid=False, errors=[{"kind": "form", **p} for p in e.problems]), 400)

    @app.post("/api/drafts/preview")
    @signed_in
    def api_preview():
        """The draft's query over its topic's latest messages (a bounded read as the team's
        principal), every window closed: `dagger preview`'s rows."""
        team, job = _draft(request.get_json(silent=True))
        if team is None:
            return job
        topic = job["streams"][0]["topics"][0]
        try:
            login = RULES.kafka_login(team)
        except DaggerError as e:
            return jsonify(
                valid=False, errors=[{"kind": "preview", "message": shown_error(e, "the preview failed")}]
            ), 503
        try:
            # its refusals name the analyst's own topic and nothing else: said as they are
            values = latest.latest(servers.kafka, topic, login)
        except DaggerError as e:
            return jsonify(valid=False, errors=[{"kind": "preview", "message": str(e)}]), 409
        try:
            answer = workbench.preview(job, values)
        except DaggerError as e:
            return jsonify(
                valid=False, errors=[{"kind": "preview", "message": shown_error(e, "the preview failed")}]
            ), 503
        return jsonify(answer)

    @app.post("/api/drafts/deploy")
    @signed_in
    def api_deploy():
        """Deploy the draft to one of the team's clusters, through `dagger deploy`'s own operation,
        once validate's checks pass; the audit trail records the signed-in user."""
        form = request.get_json(silent=True)
        team, job = _draft(form)
        if team is None:
            return job
        cluster = form.get("cluster")
        if cluster not in team_clusters(team):
            return jsonify(
                valid=False, errors=[{"kind": "form", "field": "cluster", "message": "one of your team's clusters"}]
            ), 400
        if registry.get(job["name"]) is not None:
            return jsonify(
                valid=False,
                errors=[{"kind": "form", "field": "name", "message": "a dagger of that name exists: choose another"}],
            ), 409
        return _checked_then(
            job,
            "deploy",
            lambda path: operations.deploy(
                registry, path, cluster, actor=g.viewer.actor, clusters_dir=config.clusters_dir
            ),
        )

    def _checked_then(job: dict, what: str, operation):
        """validate's checks on the job, then `operation(spec file)` with the workbench's Spark to
        itself (deploy and edit check the spec on it too); the answer to the page."""
        try:
            checked = workbench.validate(job)
        except DaggerError as e:
            return jsonify(valid=False, errors=[{"kind": "portal", "message": str(e)}]), 503
        if not checked["valid"]:
            return jsonify(checked), 400
        with tempfile.TemporaryDirectory(prefix=f"dagger-portal-{what}-") as folder:
            path = Path(folder) / f"{job['name']}.yaml"
            path.write_text(drafts.spec_text(job))
            try:
                with workbench.exclusive():
                    outcome = operation(str(path))
            except DaggerError as e:
                return jsonify(
                    valid=False,
                    errors=[
                        {"kind": what, "message": shown_error(e, f"the {what} of {job['name']} did not go through")}
                    ],
                ), 409
        app.logger.info("%s: %s of %s", g.viewer.user, what, job["name"])
        with status_lock:
            status_cache.clear()
        return jsonify(
            valid=True, dagger=job["name"], lines=outcome.lines, url=url_for("dagger_page", name=job["name"])
        )

    # --- changing a dagger's query ------------------------------------------------------------------

    def _edited(dagger, form) -> tuple[dict | None, tuple | None]:
        if servers is None or workbench is None:
            return None, (
                jsonify(
                    valid=False, errors=[{"kind": "form", "field": "", "message": "this portal changes no daggers"}]
                ),
                409,
            )
        if not isinstance(form, dict):
            return None, (jsonify(valid=False, errors=[{"kind": "form", "field": "", "message": "a JSON object"}]), 400)
        version = registry.versions(dagger.name)[-1]
        try:
            return drafts.edited(version.spec, version.spec_format, form), None
        except drafts.DraftError as e:
            return None, (jsonify(valid=False, errors=[{"kind": "form", **p} for p in e.problems]), 400)

    @app.get("/daggers/<name>/edit")
    @signed_in
    def edit_dagger(name: str):
        dagger = own_dagger(name)
        version = registry.versions(dagger.name)[-1]
        try:
            job = drafts.editable(version.spec, version.spec_format)
        except drafts.DraftError as e:
            flash(e.problems[0]["message"], "error")
            return redirect(url_for("dagger_page", name=dagger.name), code=303)
        return render_template(
            "edit.html",
            dagger=dagger,
            query=job["sql"],
            watermark_delay=str(job.get("watermark_delay", "60s")),
            ready=workbench is not None,
        )

    @app.post("/api/daggers/<name>/validate")
    @signed_in
    def api_validate_edit(name: str):
        dagger = own_dagger(name)
        job, refused = _edited(dagger, request.get_json(silent=True))
        if refused:
            return refused
        try:
            return jsonify(workbench.validate(job))
        except DaggerError as e:
            return jsonify(valid=False, errors=[{"kind": "portal", "message": str(e)}]), 503

    @app.post("/api/daggers/<name>/edit")
    @signed_in
    def api_edit(name: str):
        """The changed query as the dagger's next version, through `dagger edit`'s own operation
        (the same checkpoint when the change keeps its state usable), once validate's checks pass."""
        dagger = own_dagger(name)
        job, refused = _edited(dagger, request.get_json(silent=True))
        if refused:
            return refused
        return _checked_then(
            job,
            "edit",
            lambda path: operations.edit(
                registry, dagger.name, path, actor=g.viewer.actor, clusters_dir=config.clusters_dir
            ),
        )

    def team_clusters(team: str) -> list[str]:
        """The Spark clusters the team may deploy to (the clusters folder's, by their team)."""
        try:
            return sorted(load_clusters(config.clusters_dir, team))
        except DaggerError:
            return []

    # --- the API (the pages' data, as JSON) --------------------------------------------------------

    @app.get("/api/me")
    @signed_in
    def api_me():
        return jsonify(user=g.viewer.user, teams=sorted(g.viewer.teams), operator=g.viewer.operator)

    @app.get("/api/daggers")
    @signed_in
    def api_daggers():
        try:
            return jsonify(_status())
        except DaggerError as e:
            return jsonify(error=shown_error(e, "the daggers' live numbers cannot be read now")), 503

    @app.get("/api/daggers/<name>")
    @signed_in
    def api_dagger(name: str):
        dagger = own_dagger(name)
        return jsonify(
            dagger=dagger.name,
            team=dagger.team,
            cluster=dagger.cluster,
            version=dagger.version,
            status=_one_status(dagger.name),
            versions=[
                {
                    "number": v.number,
                    "cluster": v.cluster,
                    "deployed_by": v.deployed_by,
                    "deployed_at": v.deployed_at.isoformat(),
                    "spec": v.spec,
                }
                for v in registry.versions(dagger.name)
            ],
            history=[
                {"at": e.at.isoformat(), "actor": e.actor, "action": e.action, "status": e.status, "detail": e.detail}
                for e in registry.history(dagger.name)
            ],
        )

    @app.context_processor
    def viewer_in_templates():
        return {"viewer": g.get("viewer")}

    return app
