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
import threading
import time
from pathlib import Path
from urllib.parse import urlencode, urlsplit

from authlib.integrations.flask_client import OAuth
from flask import Flask, abort, flash, g, jsonify, redirect, render_template, request, session, url_for
from flask_wtf.csrf import CSRFError, CSRFProtect

from dagger_runtime.errors import DaggerError
from dagger_runtime.lifecycle import operations
from dagger_runtime.lifecycle.clusters import get_cluster
from dagger_runtime.lifecycle.registry import Registry
from dagger_runtime.lifecycle.spark import driver_log

from . import access
from .config import PortalConfig

SESSION_HOURS = 8
LOG_TAIL_BYTES = 200_000
LOG_TAIL_LINES = 400
STATUS_CACHE_S = 5.0       # a team's status is asked of the clusters at most this often, however many tabs poll
_SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def safe_next(target: str) -> str:
    """Where to go after the sign-in: a path of this portal only, never another site (//host,
    /\\host and scheme-relative spellings included)."""
    if (not target.startswith("/") or target.startswith(("//", "/\\")) or "\\" in target
            or any(ord(c) < 0x20 or c == "\x7f" for c in target)):
        return "/"
    return target


def create_app(config: PortalConfig, *, registry: Registry | None = None) -> Flask:
    from infra import grants as grants_mod

    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=config.session_key,
        SESSION_COOKIE_NAME="__Host-dagger-portal",
        # browsers hold loopback for a secure context: Secure cookies work on the lab's http too
        SESSION_COOKIE_SECURE=True,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        PERMANENT_SESSION_LIFETIME=dt.timedelta(hours=SESSION_HOURS),
        SESSION_REFRESH_EACH_REQUEST=False,   # the lifetime counts from the sign-in
        WTF_CSRF_TIME_LIMIT=None,          # the token lives as long as the session
        MAX_CONTENT_LENGTH=1 << 20,
    )
    CSRFProtect(app)
    oauth = OAuth(app)
    provider = oauth.register(
        "provider", client_id=config.client_id, client_secret=config.client_secret,
        server_metadata_url=f"{config.issuer}/.well-known/openid-configuration",
        client_kwargs={"scope": "openid", "code_challenge_method": "S256"})
    # a broken grant names no one (infra.validate refuses it in its pull request)
    grants, _ = grants_mod.load_all(Path(config.grants_dir) if config.grants_dir else grants_mod.GRANTS_DIR)
    groups_to_teams = access.team_groups(grants.values())
    registry = registry or Registry(config.registry_url)
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(config.url))
    # form-action: the sign-out form's redirect goes on to the provider's end-session page
    provider_origin = "{0.scheme}://{0.netloc}".format(urlsplit(config.issuer))
    csp = ("default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
           f"form-action 'self' {provider_origin}; frame-ancestors 'none'")
    status_cache: dict[tuple, tuple[float, dict]] = {}
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
            token = provider.authorize_access_token()    # checks state, the code's PKCE, the ID token and its nonce
        except Exception as e:     # authlib's OAuthError and the ID token's checks: sign in again
            app.logger.warning("sign-in refused: %s", type(e).__name__)
            return render_template("error.html", code=401, message="The sign-in did not complete. Try again."), 401
        claims = token.get("userinfo") or {}
        try:
            viewer = access.viewer(claims, groups_to_teams, grants_mod.OPERATORS_GROUP)
        except access.NotAMember as e:
            session.clear()
            return render_template("error.html", code=403, message=str(e)), 403
        nxt = session.get("next", "/")
        session.clear()            # nothing of the signed-out session carries over
        session.permanent = True
        # what the access needs, and when: the session ends SESSION_HOURS after the sign-in
        session["signed_in"] = {"at": time.time(), "claims": {k: claims.get(k) for k in
                                                             ("sub", "preferred_username", "groups")},
                                "sid": claims.get("sid")}
        app.logger.info("signed in: %s (teams %s%s)", viewer.user, ", ".join(sorted(viewer.teams)) or "-",
                        ", operator" if viewer.operator else "")
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
        teams = None if g.viewer.operator else g.viewer.teams
        key = (name, None if teams is None else tuple(sorted(teams)))
        with status_lock:
            hit = status_cache.get(key)
            if hit and time.monotonic() - hit[0] < STATUS_CACHE_S:
                return hit[1]
        data = operations.status(registry, name, actor=g.viewer.actor, clusters_dir=config.clusters_dir,
                                 teams=teams).data
        with status_lock:
            status_cache[key] = (time.monotonic(), data)
        return data

    @app.get("/daggers")
    @signed_in
    def daggers_page():
        return render_template("daggers.html", status=_status())

    @app.get("/daggers/<name>")
    @signed_in
    def dagger_page(name: str):
        dagger = own_dagger(name)
        versions = registry.versions(dagger.name)
        return render_template("dagger.html", dagger=dagger, versions=versions,
                               history=registry.history(dagger.name), status=_one_status(dagger.name))

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
        lines = list(difflib.unified_diff(versions[old].spec.splitlines(), versions[new].spec.splitlines(),
                                          f"version {old}", f"version {new}", lineterm=""))
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

    # --- the API (the pages' data, as JSON) --------------------------------------------------------

    @app.get("/api/me")
    @signed_in
    def api_me():
        return jsonify(user=g.viewer.user, teams=sorted(g.viewer.teams), operator=g.viewer.operator)

    @app.get("/api/daggers")
    @signed_in
    def api_daggers():
        return jsonify(_status())

    @app.get("/api/daggers/<name>")
    @signed_in
    def api_dagger(name: str):
        dagger = own_dagger(name)
        return jsonify(dagger=dagger.name, team=dagger.team, cluster=dagger.cluster, version=dagger.version,
                       status=_one_status(dagger.name),
                       versions=[{"number": v.number, "cluster": v.cluster, "deployed_by": v.deployed_by,
                                  "deployed_at": v.deployed_at.isoformat(), "spec": v.spec}
                                 for v in registry.versions(dagger.name)],
                       history=[{"at": e.at.isoformat(), "actor": e.actor, "action": e.action,
                                 "status": e.status, "detail": e.detail} for e in registry.history(dagger.name)])

    @app.context_processor
    def viewer_in_templates():
        return {"viewer": g.get("viewer")}

    return app
