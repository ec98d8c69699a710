"""The client: JSON calls, tar streams and attached exec over the API."""

import asyncio
import io
import json
import os
import shutil
import socket
import ssl
import struct
import sys
import tarfile
import tempfile
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Tuple

from . import models

API = "/v1"
UPGRADE_EXEC = "paddock-exec/1"

# Frame types of an attached exec (appliance/stream in the server).
_STDIN, _STDOUT, _STDERR, _RESIZE, _STDIN_EOF, _EXIT, _ERROR = range(7)
_MAX_FRAME = 1 << 20


class PaddockError(Exception):
    """An error the server answered: status, a stable code (not_found,
    invalid, conflict, unauthorized, internal), the message, and the
    request field it concerns when there is one."""

    def __init__(self, status, code, message, field=""):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field


@dataclass
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes


def cli_login(env=None):
    """The login 'paddock login' saved, as a dict with server, token and
    ca_cert (PEM, or ""): config.json in $PADDOCK_CONFIG_DIR, else in the
    CLI's folder of the user's configuration directory (as Go's
    os.UserConfigDir finds it). None when there is none."""
    env = os.environ if env is None else env
    d = env.get("PADDOCK_CONFIG_DIR", "")
    if not d:
        home = env.get("HOME") or env.get("USERPROFILE") or ""
        if os.name == "nt":
            d = os.path.join(env["AppData"], "paddock") if env.get("AppData") else ""
        elif sys.platform == "darwin":
            d = os.path.join(home, "Library", "Application Support", "paddock") if home else ""
        elif env.get("XDG_CONFIG_HOME"):
            d = os.path.join(env["XDG_CONFIG_HOME"], "paddock")
        else:
            d = os.path.join(home, ".config", "paddock") if home else ""
    if not d:
        return None
    try:
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
    except OSError:
        return None
    if not c.get("server") or not c.get("token"):
        return None
    return {"server": c["server"], "token": c["token"], "ca_cert": c.get("ca_cert", "")}


class Client:
    """A paddockd server. host is its URL (default $PADDOCK_HOST), token
    an API token (default $PADDOCK_TOKEN); with neither given nor in the
    environment, the login the CLI saved ('paddock login'). ca_cert (a
    file) trusts a private certificate authority, such as Caddy's internal
    one."""

    def __init__(self, host=None, token=None, ca_cert=None, timeout=300):
        host = host or os.environ.get("PADDOCK_HOST", "")
        token = token or os.environ.get("PADDOCK_TOKEN", "")
        ca_data = None
        if not host and not token:
            login = cli_login()
            if login:
                host, token = login["server"], login["token"]
                ca_data = login["ca_cert"] or None
        if not host:
            raise ValueError("no server: give host, set PADDOCK_HOST, or run 'paddock login'")
        if not token:
            raise ValueError("no token: give token or set PADDOCK_TOKEN")
        u = urllib.parse.urlsplit(host)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"host {host!r} must be an http:// or https:// URL")
        self._url = u
        self._base = f"{u.scheme}://{u.netloc}"
        self._token = token
        self._timeout = timeout
        self._ssl = None
        if u.scheme == "https":
            self._ssl = ssl.create_default_context(cafile=ca_cert, cadata=None if ca_cert else ca_data)

    # --- plumbing ---

    def _request(self, method, path, body=None, content_type=None, timeout=...):
        headers = {"Authorization": "Bearer " + self._token}
        if content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self._base + API + path, data=body, method=method, headers=headers)
        try:
            t = self._timeout if timeout is ... else timeout
            return urllib.request.urlopen(req, timeout=t, context=self._ssl)
        except urllib.error.HTTPError as e:
            raise _error(e.code, e.read()) from None

    def _upload(self, method, path, body):
        """A tar body: bytes as they are; a file object streamed, with its
        length when it can be known (else chunked)."""
        if isinstance(body, (bytes, bytearray, memoryview)):
            return self._request(method, path, bytes(body), "application/x-tar")
        headers = {"Authorization": "Bearer " + self._token, "Content-Type": "application/x-tar"}
        try:
            pos = body.tell()
            headers["Content-Length"] = str(os.fstat(body.fileno()).st_size - pos)
        except (OSError, AttributeError, ValueError):
            pass
        req = urllib.request.Request(self._base + API + path, data=body, method=method, headers=headers)
        try:
            return urllib.request.urlopen(req, timeout=self._timeout, context=self._ssl)
        except urllib.error.HTTPError as e:
            raise _error(e.code, e.read()) from None

    def _json(self, method, path, payload=None):
        body = None if payload is None else json.dumps(payload).encode()
        with self._request(method, path, body, "application/json" if body is not None else None) as resp:
            data = resp.read()
        return json.loads(data) if data else None

    # --- boxes ---

    def boxes(self, labels=None) -> List[models.Box]:
        """The boxes this token's user sees; with labels (a dict), those that
        have all of them."""
        q = urllib.parse.urlencode([("label", f"{k}={v}") for k, v in (labels or {}).items()])
        return self._json("GET", "/boxes" + ("?" + q if q else ""))

    def box(self, name) -> models.Box:
        return self._json("GET", "/boxes/" + _q(name))

    def create_box(self, name=None, type=None, image=None, ttl=None, env=None,
                   policy=None, mounts=None, desktop=None, labels=None,
                   idle_stop=None) -> models.Box:
        """Declare a box and wait for it to run. ttl is seconds or a
        duration ("1h"); mounts is a list of {"drive", "path", "readonly"};
        labels a dict of the box's own labels, to find it by; idle_stop
        ("30m", or "off") stops it once unused that long, and its next use
        starts it."""
        post = {k: v for k, v in {
            "name": name, "type": type, "image": image,
            "ttl": str(ttl) if ttl is not None else None, "env": env,
            "policy": policy, "mounts": mounts, "desktop": desktop, "labels": labels,
            "idle_stop": idle_stop,
        }.items() if v is not None}
        return self._json("POST", "/boxes", post)

    def stop_box(self, name) -> models.Box:
        """Snapshot the box's filesystem, then stop it."""
        return self._json("POST", f"/boxes/{_q(name)}/stop")

    def start_box(self, name) -> models.Box:
        return self._json("POST", f"/boxes/{_q(name)}/start")

    def remove_box(self, name):
        self._json("DELETE", "/boxes/" + _q(name))

    def snapshot(self, name) -> models.Snapshot:
        return self._json("POST", f"/boxes/{_q(name)}/snapshots")

    def snapshots(self, name) -> List[models.Snapshot]:
        return self._json("GET", f"/boxes/{_q(name)}/snapshots")

    def restore(self, name, snapshot=None) -> models.Box:
        return self._json("POST", f"/boxes/{_q(name)}/restore", {"snapshot": snapshot} if snapshot else {})

    def fork(self, name, new_name=None, snapshot=None, node=None) -> models.Box:
        """Fork a box; node puts the fork on that server (made where its snapshot is, then moved)."""
        post = {k: v for k, v in {"name": new_name, "snapshot": snapshot, "node": node}.items() if v}
        return self._json("POST", f"/boxes/{_q(name)}/fork", post)

    # --- drives and policies ---

    def drives(self) -> List[models.Drive]:
        return self._json("GET", "/drives")

    def create_drive(self, name) -> models.Drive:
        return self._json("POST", "/drives", {"name": name})

    def remove_drive(self, name):
        self._json("DELETE", "/drives/" + _q(name))

    def set_policy(self, box, policy) -> models.Box:
        """policy is "allow-all", "deny-all" or a named policy."""
        return self._json("PUT", f"/boxes/{_q(box)}/policy", {"policy": policy})

    def policy_report(self, box) -> models.PolicyReport:
        """Dropped packets by kind and the resolver's decisions."""
        return self._json("GET", f"/boxes/{_q(box)}/policy")

    # --- projects (what a Boxfile declares) ---

    def plan(self, spec, destroy=False, drives=False) -> models.Plan:
        """The changes that would make the server match spec, a project
        as the CLI sends it (paddock validate --json shows one)."""
        return self._json("POST", "/plan", {"spec": spec, "destroy": destroy, "drives": drives})

    def apply(self, spec, serial, destroy=False, drives=False) -> models.ApplyResult:
        """Apply the plan made at serial; refused if the state moved."""
        return self._json("POST", "/apply", {"spec": spec, "destroy": destroy, "drives": drives, "serial": serial})

    # --- files ---

    def push(self, box, local, to):
        """Copy a local directory's contents (or a file) into directory to
        in the box. The server refuses an archive that would escape it. The
        archive is spooled to a temporary file, not held in memory."""
        with tempfile.TemporaryFile() as spool:
            with tarfile.open(fileobj=spool, mode="w", format=tarfile.PAX_FORMAT) as tar:
                if os.path.isdir(local):
                    for entry in sorted(os.listdir(local)):
                        tar.add(os.path.join(local, entry), arcname=entry)
                else:
                    tar.add(local, arcname=os.path.basename(local))
            spool.seek(0)
            self.push_tar(box, to, spool)

    def push_tar(self, box, to, tar):
        """Extract a tar (bytes, or a binary file object, streamed) into
        directory to in the box."""
        path = f"/boxes/{_q(box)}/files?path=" + urllib.parse.quote(to, safe="")
        with self._upload("PUT", path, tar):
            pass

    def push_files(self, box, to, files):
        """Write files (relative names to contents, bytes or text) into
        directory to in the box."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for name, data in files.items():
                if isinstance(data, str):
                    data = data.encode()
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        self.push_tar(box, to, buf.getvalue())

    def ports(self, box) -> List[models.Port]:
        """The TCP ports something listens on in a running box, each with
        its preview URL (or a note on why no preview reaches it)."""
        return self._json("GET", f"/boxes/{_q(box)}/ports")

    def grants(self, box) -> List[models.Grant]:
        """Who a box is shared with (its owner's to ask)."""
        return self._json("GET", f"/boxes/{_q(box)}/grants")

    def share(self, box, user, access="viewer") -> models.Grant:
        """Share a box with a user: as a "viewer" (reads it) or a "member"
        (works in it, but cannot remove, move, fork or share it, or change
        its policy)."""
        return self._json("PUT", f"/boxes/{_q(box)}/grants/{_q(user)}", {"access": access})

    def unshare(self, box, user):
        """Stop sharing a box with a user."""
        self._json("DELETE", f"/boxes/{_q(box)}/grants/{_q(user)}")

    def metrics(self) -> List[models.Sample]:
        """The newest sample of each running box the caller sees: CPU (a
        percentage of one CPU), memory, disk, network, processes."""
        return self._json("GET", "/metrics")

    def box_metrics(self, box, since=None) -> models.BoxMetrics:
        """A box's samples since a duration back ("90m", "1h", "2d") or a
        time (default: the last 15 minutes), oldest first."""
        q = "?since=" + urllib.parse.quote(since, safe="") if since else ""
        return self._json("GET", f"/boxes/{_q(box)}/metrics{q}")

    def pull(self, box, path, to=None):
        """A tar of path in the box; every name starts with path's base
        name. With to (a binary file object) the tar is streamed into it
        and None returned."""
        with self._request("GET", f"/boxes/{_q(box)}/files?path=" + urllib.parse.quote(path, safe="")) as resp:
            if to is None:
                return resp.read()
            shutil.copyfileobj(resp, to, 1 << 20)
            return None

    def pull_tree(self, box, path, local):
        """Copy path from the box into the local directory (made if need
        be): path's base name appears in it. Entries that would land
        outside it, links out of it and devices are refused, as the CLI
        refuses them."""
        os.makedirs(local, exist_ok=True)
        with tempfile.TemporaryFile() as spool:
            self.pull(box, path, to=spool)
            spool.seek(0)
            with tarfile.open(fileobj=spool, mode="r:") as tar:
                tar.extractall(local, filter="data")

    # --- jobs (detached commands whose output the server keeps) ---

    def start_job(self, box, cmd, env=None, workdir=None, stdin=False, timeout=None) -> models.Job:
        """Start cmd in the box and return the job at once. With stdin, the
        job's input stays open for send_job_input."""
        post = {"cmd": list(cmd)}
        if env:
            post["env"] = env
        if workdir:
            post["workdir"] = workdir
        if stdin:
            post["stdin"] = True
        if timeout is not None:
            post["timeout"] = str(timeout)
        return self._json("POST", f"/boxes/{_q(box)}/jobs", post)

    def run_code(self, box, code, lang=None, context=None, timeout=None) -> models.RunResult:
        """Run code in the box's code interpreter: a Jupyter kernel that keeps
        its state between runs (a context; default: the language's own).
        Returns its output, the last expression's value by MIME type, what
        it displayed (figures: "image/png", base64) and its error, if any;
        past timeout the kernel is interrupted and keeps its state."""
        post = {"code": code}
        if lang:
            post["lang"] = lang
        if context:
            post["context"] = context
        if timeout is not None:
            post["timeout"] = str(timeout)
        # The server answers once the code ends: its timeout, and a margin.
        body = json.dumps(post).encode()
        with self._request("POST", f"/boxes/{_q(box)}/run", body, "application/json", timeout=None) as resp:
            return json.loads(resp.read())

    def contexts(self, box) -> List[models.CodeContext]:
        return self._json("GET", f"/boxes/{_q(box)}/contexts")

    def create_context(self, box, name=None, lang=None) -> models.CodeContext:
        post = {}
        if name:
            post["name"] = name
        if lang:
            post["lang"] = lang
        return self._json("POST", f"/boxes/{_q(box)}/contexts", post)

    def restart_context(self, box, name) -> models.CodeContext:
        return self._json("POST", f"/boxes/{_q(box)}/contexts/{_q(name)}/restart")

    def remove_context(self, box, name):
        self._json("DELETE", f"/boxes/{_q(box)}/contexts/{_q(name)}")

    def desktop_actions(self, box, actions, screenshot=False, scale=None) -> models.DesktopActionsResult:
        """Run actions on a box's desktop, in order (Anthropic's computer-use
        vocabulary: {"action": "left_click", "coordinate": [120, 40]}, and
        windows, launch, wait_idle), and return each one's result and, with
        screenshot, a PNG (base64) once they are done. With scale,
        screenshots are shrunk and coordinates are in their pixels."""
        post = {"actions": list(actions)}
        if screenshot:
            post["screenshot"] = True
        if scale is not None:
            post["scale"] = scale
        return self._json("POST", f"/boxes/{_q(box)}/desktop/actions", post)

    def signal_job(self, box, job_id, signal="TERM") -> models.Job:
        """Send a signal (TERM, INT, KILL, HUP, QUIT, USR1, USR2) to a
        running job's process group."""
        return self._json("POST", f"/boxes/{_q(box)}/jobs/{_q(job_id)}/signal", {"signal": signal})

    def send_job_input(self, box, job_id, data, eof=False) -> models.JobInput:
        """Send data (bytes or str) to the input of a running job started
        with stdin; with eof, its input ends after it."""
        if isinstance(data, str):
            data = data.encode()
        path = f"/boxes/{_q(box)}/jobs/{_q(job_id)}/input" + ("?eof=1" if eof else "")
        with self._request("POST", path, bytes(data), "application/octet-stream") as resp:
            return json.loads(resp.read())

    def jobs(self, box) -> List[models.Job]:
        return self._json("GET", f"/boxes/{_q(box)}/jobs")

    def job(self, box, job_id) -> models.Job:
        """The job's state (running, exited, killed: its box stopped while it ran, lost) and exit_code."""
        return self._json("GET", f"/boxes/{_q(box)}/jobs/{_q(job_id)}")

    def job_log(self, box, job_id, follow=False):
        """The job's output so far; with follow, all of it once it ends."""
        path = f"/boxes/{_q(box)}/jobs/{_q(job_id)}/log" + ("?follow=1" if follow else "")
        # A followed log waits as long as the job runs.
        with self._request("GET", path, timeout=None if follow else ...) as resp:
            return resp.read()

    # --- exec ---

    def exec(self, box, cmd, stdin=b"", env=None, workdir=None, timeout=None,
             on_stdout=None, on_stderr=None) -> "ExecResult":
        """Run cmd (a list) in the box, feed it stdin, and return its exit
        code and output once it ends. on_stdout and on_stderr, when given,
        are called with each chunk as it arrives (and that stream is not
        kept in the result). timeout (seconds or a duration such as "90s")
        ends the command on the server: exit code 124."""
        with self.exec_stream(box, cmd, env=env, workdir=workdir, timeout=timeout) as s:
            writer = threading.Thread(target=_feed, args=(s, stdin or b""), daemon=True)
            writer.start()
            out, err = bytearray(), bytearray()
            for kind, data in s:
                if kind == "stdout":
                    on_stdout(data) if on_stdout else out.extend(data)
                else:
                    on_stderr(data) if on_stderr else err.extend(data)
            return ExecResult(s.exit_code, bytes(out), bytes(err))

    def exec_stream(self, box, cmd, env=None, workdir=None, timeout=None) -> "ExecStream":
        """Start cmd in the box and return it as an ExecStream: iterate it
        for ("stdout" | "stderr", bytes) as the command writes them, write()
        and close_stdin() to feed it; exit_code once the iteration ends."""
        post = {"cmd": list(cmd)}
        if env:
            post["env"] = env
        if workdir:
            post["workdir"] = workdir
        if timeout is not None:
            post["timeout"] = str(timeout)
        body = json.dumps(post).encode()
        sock = self._dial()
        try:
            head = (f"POST {API}/boxes/{_q(box)}/exec HTTP/1.1\r\n"
                    f"Host: {self._url.netloc}\r\n"
                    f"Authorization: Bearer {self._token}\r\n"
                    "Content-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n"
                    "Connection: Upgrade\r\n"
                    f"Upgrade: {UPGRADE_EXEC}\r\n\r\n")
            sock.sendall(head.encode() + body)
            f = sock.makefile("rb")
            status, headers = _read_head(f)
            if status != 101:
                n = int(headers.get("content-length", "0"))
                raise _error(status, f.read(n) if n else b"")
            sock.settimeout(None)  # the command may run for as long as it needs
            return ExecStream(sock, f)
        except BaseException:
            sock.close()
            raise

    # --- the rest of the API ---

    def whoami(self) -> models.Whoami:
        """The user, role and server this token belongs to."""
        return self._json("GET", "/whoami")

    def set_ttl(self, name, ttl=None) -> models.Box:
        """A new TTL from now (seconds or a duration; None or "" for none)."""
        return self._json("PUT", f"/boxes/{_q(name)}/ttl", {"ttl": "" if ttl is None else str(ttl)})

    def box_handle(self, name):
        """A Box for an existing box (removed when a with block ends,
        unless kept)."""
        return Box(self, self.box(name))

    def list_dir(self, box, path) -> models.Dir:
        """A folder's entries as the box user sees them."""
        return self._json("GET", f"/boxes/{_q(box)}/dir?path=" + urllib.parse.quote(path, safe=""))

    def read_file(self, box, path):
        """One regular file's bytes."""
        with self._request("GET", f"/boxes/{_q(box)}/download?path=" + urllib.parse.quote(path, safe="")) as resp:
            return resp.read()

    def write_file(self, box, path, data):
        """Write bytes (or text) as a file in the box; its folder is made."""
        if isinstance(data, str):
            data = data.encode()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            info = tarfile.TarInfo(os.path.basename(path))
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        folder = os.path.dirname(path) or "/"
        with self._request("PUT", f"/boxes/{_q(box)}/files?path=" + urllib.parse.quote(folder, safe=""),
                           buf.getvalue(), "application/x-tar"):
            pass

    def screenshot(self, box):
        """A PNG of the box's desktop now (bytes)."""
        with self._request("GET", f"/boxes/{_q(box)}/screenshot") as resp:
            return resp.read()

    def take_screenshot(self, box) -> models.Screenshot:
        """Take a screenshot and keep it in the box's gallery."""
        return self._json("POST", f"/boxes/{_q(box)}/screenshots")

    def screenshots(self, box) -> List[models.Screenshot]:
        return self._json("GET", f"/boxes/{_q(box)}/screenshots")

    def desktop_url(self, box):
        """A single-use URL of the box's desktop page (two minutes)."""
        t = self._json("POST", f"/boxes/{_q(box)}/desktop")
        return self._base + t["path"]

    def agents(self, box=None):
        """The server's agents, or a box's with whether each has credentials."""
        return self._json("GET", f"/boxes/{_q(box)}/agents" if box else "/agents")

    def prompt(self, box, task, agent=None, workdir=None) -> models.Job:
        """Hand an agent a task; it runs as a job (see job_log)."""
        post = {k: v for k, v in {"task": task, "agent": agent, "workdir": workdir}.items() if v}
        return self._json("POST", f"/boxes/{_q(box)}/prompt", post)

    def policies(self) -> List[models.Policy]:
        return self._json("GET", "/policies")

    def create_policy(self, name, allow_domains=(), allow_cidrs=()):
        return self._json("POST", "/policies", {"name": name, "allow_domains": list(allow_domains), "allow_cidrs": list(allow_cidrs)})

    def update_policy(self, name, allow_domains=(), allow_cidrs=()):
        return self._json("PUT", "/policies/" + _q(name), {"name": name, "allow_domains": list(allow_domains), "allow_cidrs": list(allow_cidrs)})

    def remove_policy(self, name):
        self._json("DELETE", "/policies/" + _q(name))

    def backup_drive(self, name, to=None):
        """A drive's contents as tar bytes; with to (a binary file object)
        streamed into it instead, and None returned."""
        with self._request("GET", f"/drives/{_q(name)}/archive") as resp:
            if to is None:
                return resp.read()
            shutil.copyfileobj(resp, to, 1 << 20)
            return None

    def restore_drive(self, name, tar):
        """Replace a drive's contents with a tar's: bytes, or a binary file
        object, streamed (refused while the drive is mounted)."""
        with self._upload("PUT", f"/drives/{_q(name)}/archive", tar):
            pass

    def secrets(self) -> List[models.Secret]:
        return self._json("GET", "/secrets")

    def set_secret(self, name, value, shared=False, broker=None, header=None, limit=None):
        """Sets a secret. With broker (the hosts its value may be sent to) it
        is brokered: boxes get a stand-in, never the value; header says where
        the value goes (x-api-key, bearer, token, a header's name, or
        "NAME: PREFIX"), limit how many requests a box may send (N/min, ...)."""
        body = value.encode() if isinstance(value, str) else value
        q = [("shared", "true")] if shared else []
        q += [("broker", h) for h in (broker or [])]
        q += [(k, v) for k, v in (("header", header), ("limit", limit)) if v]
        path = "/secrets/" + _q(name) + ("?" + urllib.parse.urlencode(q) if q else "")
        with self._request("PUT", path, body, "text/plain"):
            pass

    def set_secret_broker(self, name, broker):
        """Changes how a secret is brokered, keeping its value: broker is a
        SecretBroker ({"hosts": [...], "header": ..., "limit": ...}; no
        hosts: not brokered)."""
        self._json("PUT", "/secrets/" + _q(name) + "/broker", broker)

    def remove_secret(self, name):
        self._json("DELETE", "/secrets/" + _q(name))

    def tokens(self) -> List[models.TokenInfo]:
        return self._json("GET", "/tokens")

    def create_token(self, name) -> models.TokenCreated:
        """A new API token; its value is in this answer only."""
        return self._json("POST", "/tokens", {"name": name})

    def revoke_token(self, name):
        self._json("DELETE", "/tokens/" + _q(name))

    def keys(self) -> List[models.Key]:
        return self._json("GET", "/keys")

    def add_key(self, key, name=None) -> models.Key:
        return self._json("POST", "/keys", {k: v for k, v in {"key": key, "name": name}.items() if v})

    def remove_key(self, name):
        self._json("DELETE", "/keys/" + _q(name))

    def users(self) -> List[models.User]:
        return self._json("GET", "/users")

    def invite(self, role="member") -> models.InviteCreated:
        return self._json("POST", "/users/invites", {"role": role})

    def remove_user(self, name):
        self._json("DELETE", "/users/" + _q(name))

    def quota(self, user) -> models.UserQuota:
        """A user's quota and use (a member reads their own)."""
        return self._json("GET", "/users/" + _q(user) + "/quota")

    def set_quota(self, user, quota) -> models.UserQuota:
        """Set a member's quota: each field given (0: no bound); those in
        quota["default"] go back to the server's (the owner or an admin)."""
        return self._json("PUT", "/users/" + _q(user) + "/quota", quota)

    def audit(self, box=None, user=None, action=None, since=None, after=None, limit=None) -> List[models.AuditEntry]:
        """The audit log's entries the caller may see, oldest first. since is a
        duration back from now ("1h", "2d") or a time; after an entry's number,
        to follow the log; action an action or a kind of them ("box")."""
        q = {k: v for k, v in (("box", box), ("user", user), ("action", action), ("since", since),
                               ("after", after), ("limit", limit)) if v not in (None, "")}
        return self._json("GET", "/audit?" + urllib.parse.urlencode(q))

    def verify_audit(self, seen: Optional[models.AuditMark] = None) -> models.AuditCheck:
        """Check the audit log's chain, and its end against seen (the head a
        check answered before, which the caller kept): where it breaks, or
        what is missing (the owner or an admin)."""
        q = "?seen=" + urllib.parse.quote(f"{seen['seq']}:{seen['hash']}", safe="") if seen else ""
        return self._json("GET", "/audit/verify" + q)


    def images(self) -> List[models.Image]:
        """The images you may make boxes from: your own, those shared with
        you (an admin: everyone's)."""
        return self._json("GET", "/images")

    def image(self, ref) -> models.Image:
        """One image, by NAME[:TAG], OWNER/NAME[:TAG], its id or an id prefix."""
        return self._json("GET", "/images/" + _q(ref))

    def remove_image(self, ref):
        """Remove one of your images; boxes made from it keep it until they go."""
        self._json("DELETE", "/images/" + _q(ref))

    def share_image(self, ref, shares) -> models.Image:
        """Set who else may make boxes from an image (every tag of its
        name): shares is {"users": [...], "groups": [...], "everyone": bool}."""
        return self._json("PUT", "/images/" + _q(ref) + "/shares", shares)

    def build_image(self, name, files, tag=None, dockerfile=None, policy=None, project=None, on_log=None) -> models.Image:
        """Build an image of yours from a build context (files: relative
        names to contents, the Dockerfile among them) in a builder box,
        whose steps reach what policy lets them; on_log gets each line of
        the build's output as it comes. A context the same as the last
        build's gives that image at once ("cached")."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for rel, data in sorted(files.items()):
                b = data.encode() if isinstance(data, str) else bytes(data)
                info = tarfile.TarInfo(rel)
                info.size, info.mode = len(b), 0o644
                tar.addfile(info, io.BytesIO(b))
        q = urllib.parse.urlencode([("name", name)] + [(k, v) for k, v in
                                   (("tag", tag), ("dockerfile", dockerfile), ("policy", policy), ("project", project)) if v])
        for kind, data in self._sse("/images?" + q, "POST", buf.getvalue()):
            if kind == "log":
                if on_log:
                    on_log(data.get("text", ""))
            elif kind == "image":
                return data["image"]
            elif kind == "error":
                raise PaddockError(200, data.get("code", ""), data.get("message", "the build failed"))
        raise PaddockError(0, "internal", "the build's stream ended before its result")
    def nodes(self) -> List[models.Node]:
        """The servers boxes are placed on, the control plane's first (the owner's)."""
        return self._json("GET", "/nodes")

    def node_join(self) -> models.NodeJoin:
        """A one-time command that lets another server join (the owner's)."""
        return self._json("POST", "/nodes/joins")

    def label_node(self, name, labels) -> models.Node:
        return self._json("PUT", "/nodes/" + _q(name) + "/labels", {"labels": labels})

    def set_node_pool(self, name, pool) -> models.Node:
        """Keep a warm pool of the server's own: ready boxes of each type
        on it (0: none), beside warm_pool's."""
        return self._json("PUT", "/nodes/" + _q(name) + "/pool", {"pool": pool})

    def drain_node(self, name) -> models.Drained:
        """No new box goes to the server, and its boxes move to others."""
        return self._json("POST", "/nodes/" + _q(name) + "/drain")

    def undrain_node(self, name):
        self._json("DELETE", "/nodes/" + _q(name) + "/drain")

    def remove_node(self, name):
        self._json("DELETE", "/nodes/" + _q(name))

    def move_box(self, name, node, with_boxes=()) -> models.Box:
        """Move a box, with the drives it mounts and the boxes in with_boxes that share them, to another server."""
        return self._json("POST", "/boxes/" + _q(name) + "/move", {"node": node, "with": list(with_boxes)})

    def move_drive(self, name, node, with_boxes=()) -> models.Drive:
        """Move a drive, with the boxes that mount it (all of them, in with_boxes), to another server."""
        return self._json("POST", "/drives/" + _q(name) + "/move", {"node": node, "with": list(with_boxes)})

    def projects(self) -> List[models.Project]:
        """Boxfile projects, their last apply and their drift."""
        return self._json("GET", "/projects")

    def events(self, metrics=False) -> Iterator[Tuple[str, Any]]:
        """Yield (kind, data) from the events stream: every object first,
        then ("ready", {}), then each change, until the caller stops. With
        metrics, also ("metrics", sample) per running box at each sampling
        pass."""
        return self._sse("/events?metrics=1" if metrics else "/events")

    def watch_dir(self, box, path, recursive=False) -> Iterator[models.WatchEvent]:
        """Watch a folder (or file) of a box: yield its events as they
        happen, first "ready", then created, modified, removed and renamed
        (with "from"), each with its path, kind and size; "dropped" says
        how many this client read too slowly for. Stop by closing the
        generator (or leaving the loop)."""
        q = urllib.parse.urlencode([("path", path)] + ([("recursive", "1")] if recursive else []))
        for _, data in self._sse(f"/boxes/{_q(box)}/watch?{q}"):
            yield data

    def _sse(self, path, method="GET", body=None):
        resp = self._request(method, path, body, "application/x-tar" if body is not None else None, timeout=None)
        try:
            kind, data = None, []
            for raw in resp:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("event: "):
                    kind = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and kind:
                    yield kind, json.loads("\n".join(data) or "null")
                    kind, data = None, []
        finally:
            resp.close()

    def _dial(self):
        port = self._url.port or (443 if self._url.scheme == "https" else 80)
        sock = socket.create_connection((self._url.hostname, port), timeout=self._timeout)
        if self._ssl:
            sock = self._ssl.wrap_socket(sock, server_hostname=self._url.hostname)
        return sock


class ExecStream:
    """A command running in a box, attached. Iterating it yields
    ("stdout" | "stderr", bytes) chunks until the command ends; then
    exit_code is set. write() and close_stdin() feed its stdin (from any
    one thread while another iterates). Use it in a with block, or call
    close(), to hang up early (the command goes on unless it was given a
    timeout)."""

    def __init__(self, sock, f):
        self._sock, self._f = sock, f
        self._wlock = threading.Lock()
        self.exit_code = None

    def write(self, data):
        data = data.encode() if isinstance(data, str) else bytes(data)
        with self._wlock:
            for i in range(0, len(data), _MAX_FRAME):
                chunk = data[i:i + _MAX_FRAME]
                self._sock.sendall(struct.pack(">BI", _STDIN, len(chunk)) + chunk)

    def close_stdin(self):
        with self._wlock:
            self._sock.sendall(struct.pack(">BI", _STDIN_EOF, 0))

    def __iter__(self):
        while self.exit_code is None:
            hdr = self._f.read(5)
            if len(hdr) < 5:
                raise ConnectionError("the exec stream ended without an exit code")
            kind, size = hdr[0], struct.unpack(">I", hdr[1:])[0]
            payload = self._f.read(size)
            if kind == _STDOUT:
                yield "stdout", payload
            elif kind == _STDERR:
                yield "stderr", payload
            elif kind == _EXIT:
                self.exit_code = struct.unpack(">i", payload)[0]
            elif kind == _ERROR:
                raise PaddockError(500, "internal", payload.decode(errors="replace"))

    def wait(self):
        """Read (and drop) the rest of the output; the exit code."""
        for _ in self:
            pass
        return self.exit_code

    def close(self):
        self._sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def _feed(stream, data):
    try:
        stream.write(data)
        stream.close_stdin()
    except OSError:
        pass  # the command ended first; its exit frame says how


def _read_head(f):
    line = f.readline().decode("latin-1")
    parts = line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ConnectionError(f"not an HTTP answer: {line!r}")
    headers = {}
    while True:
        h = f.readline().decode("latin-1").strip()
        if not h:
            break
        k, _, v = h.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(parts[1]), headers


def _error(status, body):
    try:
        e = json.loads(body)
        return PaddockError(status, e.get("error", ""), e.get("message", ""), e.get("field", ""))
    except (ValueError, AttributeError):
        return PaddockError(status, "", body.decode(errors="replace").strip() or f"HTTP {status}")


def _q(name):
    return urllib.parse.quote(name, safe="")


class Box:
    """A box, as a handle: Box.create(...) makes one; in a with block it is
    removed at the end unless keep() was called (or keep=True given)."""

    def __init__(self, client, data, keep=False):
        self.client, self.data, self.kept = client, data, keep

    @classmethod
    def create(cls, client=None, keep=False, **kwargs):
        c = client or Client()
        return cls(c, c.create_box(**kwargs), keep)

    @property
    def name(self):
        return self.data["name"]

    def keep(self):
        self.kept = True
        return self

    def refresh(self):
        self.data = self.client.box(self.name)
        return self.data

    def exec(self, cmd, **kwargs):
        return self.client.exec(self.name, cmd, **kwargs)

    def push(self, local, to):
        return self.client.push(self.name, local, to)

    def pull(self, path):
        return self.client.pull(self.name, path)

    def read_file(self, path):
        return self.client.read_file(self.name, path)

    def write_file(self, path, data):
        return self.client.write_file(self.name, path, data)

    def stop(self):
        self.data = self.client.stop_box(self.name)
        return self.data

    def start(self):
        self.data = self.client.start_box(self.name)
        return self.data

    def remove(self):
        self.client.remove_box(self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if not self.kept:
            try:
                self.remove()
            except PaddockError as e:
                if e.status != 404:
                    raise
        return False


class AsyncClient:
    """The Client for asyncio: every method of Client, awaitable (each call
    runs in a worker thread, so the event loop never blocks); events and
    exec_stream are async iterators."""

    def __init__(self, *args, **kwargs):
        self._c = Client(*args, **kwargs)

    def __getattr__(self, name):
        fn = getattr(self._c, name)
        if not callable(fn):
            return fn

        async def call(*args, **kwargs):
            return await asyncio.to_thread(fn, *args, **kwargs)
        return call

    async def events(self, metrics=False):
        """Like Client.events, as an async iterator."""
        it = self._c.events(metrics)
        try:
            async for ev in _aiter(it):
                yield ev
        finally:
            it.close()

    async def watch_dir(self, box, path, recursive=False):
        """Like Client.watch_dir, as an async iterator."""
        it = self._c.watch_dir(box, path, recursive)
        try:
            async for ev in _aiter(it):
                yield ev
        finally:
            it.close()

    async def exec_stream(self, box, cmd, **kwargs):
        """Like Client.exec_stream; iterate the result with async for."""
        s = await asyncio.to_thread(self._c.exec_stream, box, cmd, **kwargs)
        return AsyncExecStream(s)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False


class AsyncExecStream:
    """An ExecStream for asyncio: async for over its chunks; write,
    close_stdin and wait are awaitable; exit_code once it ends."""

    def __init__(self, s):
        self._s = s

    @property
    def exit_code(self):
        return self._s.exit_code

    async def write(self, data):
        await asyncio.to_thread(self._s.write, data)

    async def close_stdin(self):
        await asyncio.to_thread(self._s.close_stdin)

    def __aiter__(self):
        return _aiter(iter(self._s))

    async def wait(self):
        return await asyncio.to_thread(self._s.wait)

    def close(self):
        self._s.close()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.close()
        return False


async def _aiter(it):
    """Each next() of a blocking iterator, in a worker thread."""
    done = object()
    while True:
        v = await asyncio.to_thread(next, it, done)
        if v is done:
            return
        yield v
