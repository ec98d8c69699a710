"""The SDK against a real paddockd: PADDOCK_HOST and PADDOCK_TOKEN name it
(testbed/e2e starts one and runs these tests)."""

import base64
import io
import os
import tarfile
import tempfile
import time
import unittest

import asyncio

from paddock import AsyncClient, Box, Client, PaddockError


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Client()
        cls.box = cls.c.create_box(name="py-box", ttl="1h", env={"GREETING": "hi"}, labels={"sdk": "py"})

    @classmethod
    def tearDownClass(cls):
        for b in cls.c.boxes():
            if b["name"].startswith("py-"):
                cls.c.remove_box(b["name"])

    def test_box_is_running_and_listed(self):
        self.assertEqual(self.box["status"], "running")
        self.assertEqual(self.box["ttl_seconds"], 3600)
        self.assertIn("py-box", [b["name"] for b in self.c.boxes()])
        self.assertEqual(self.box["labels"], {"sdk": "py"})
        self.assertEqual([b["name"] for b in self.c.boxes(labels={"sdk": "py"})], ["py-box"])
        self.assertEqual(self.c.boxes(labels={"sdk": "none"}), [])

    def test_exec_streams_and_exit_code(self):
        r = self.c.exec("py-box", ["sh", "-c", "cat; echo $GREETING $EXTRA; pwd; echo oops >&2; exit 3"],
                        stdin=b"from stdin\n", env={"EXTRA": "there"}, workdir="/tmp")
        self.assertEqual(r.exit_code, 3)
        self.assertEqual(r.stdout, b"from stdin\nhi there\n/tmp\n")
        self.assertEqual(r.stderr, b"oops\n")
        big = os.urandom(3 << 20)  # more than one frame
        r = self.c.exec("py-box", ["sha256sum"], stdin=big)
        import hashlib
        self.assertEqual(r.stdout.split()[0].decode(), hashlib.sha256(big).hexdigest())

    def test_exec_callbacks_iteration_and_timeout(self):
        chunks = []
        r = self.c.exec("py-box", ["sh", "-c", "echo one; sleep 0.3; echo two >&2; exit 4"],
                        on_stdout=lambda b: chunks.append(("out", b)), on_stderr=lambda b: chunks.append(("err", b)))
        self.assertEqual((r.exit_code, r.stdout, r.stderr), (4, b"", b""))
        self.assertEqual(chunks, [("out", b"one\n"), ("err", b"two\n")])
        # A conversation: each answer is read before the next line is sent.
        with self.c.exec_stream("py-box", ["sh", "-c", "while read l; do echo got-$l; done; echo bye"]) as s:
            it = iter(s)
            for word in ("a", "b"):
                s.write(word + "\n")
                self.assertEqual(next(it), ("stdout", f"got-{word}\n".encode()))
            s.close_stdin()
            self.assertEqual(list(it), [("stdout", b"bye\n")])
            self.assertEqual(s.exit_code, 0)
        r = self.c.exec("py-box", ["sh", "-c", "echo start; sleep 300"], timeout=1)
        self.assertEqual((r.exit_code, r.stdout), (124, b"start\n"))
        with self.assertRaises(PaddockError) as e:
            self.c.exec("py-box", ["true"], timeout="soon")
        self.assertEqual(e.exception.field, "timeout")

    def test_jobs_keep_output_on_the_server(self):
        j = self.c.start_job("py-box", ["sh", "-c", "echo first; sleep 1; echo second; exit 5"])
        self.assertEqual(j["state"], "running")
        self.assertEqual(self.c.job_log("py-box", j["id"], follow=True), b"first\nsecond\n")
        done = self.c.job("py-box", j["id"])
        self.assertEqual((done["state"], done["exit_code"]), ("exited", 5))
        self.assertIn(j["id"], [x["id"] for x in self.c.jobs("py-box")])

    def test_job_control(self):
        j = self.c.start_job("py-box", ["sh", "-c", "while read l; do echo got:$l; done; echo eof"], stdin=True)
        self.assertEqual(self.c.send_job_input("py-box", j["id"], "héllo\n"), {"bytes": 7, "closed": False})
        self.assertEqual(self.c.send_job_input("py-box", j["id"], b"two\n", eof=True), {"bytes": 4, "closed": True})
        self.assertEqual(self.c.job_log("py-box", j["id"], follow=True), "got:héllo\ngot:two\neof\n".encode())
        k = self.c.start_job("py-box", ["sh", "-c", "trap 'echo term; exit 3' TERM; echo ready; while :; do sleep 0.1; done"])
        for _ in range(600):
            if b"ready" in self.c.job_log("py-box", k["id"]):
                break
            time.sleep(0.1)
        self.assertEqual(self.c.signal_job("py-box", k["id"])["id"], k["id"])
        self.assertIn(b"term\n", self.c.job_log("py-box", k["id"], follow=True))
        self.assertEqual(self.c.job("py-box", k["id"])["exit_code"], 3)
        with self.assertRaises(PaddockError) as e:
            self.c.signal_job("py-box", k["id"], "NOPE")
        self.assertEqual(e.exception.field, "signal")
        with self.assertRaises(PaddockError) as e:
            self.c.send_job_input("py-box", k["id"], "late")
        self.assertEqual(e.exception.status, 409)

    def test_code_interpreter(self):
        self.c.run_code("py-box", "x = 41", context=None)
        r = self.c.run_code("py-box", "x + 1")
        self.assertEqual((r["context"], r["result"]["text/plain"]), ("python", "42"))
        r = self.c.run_code("py-box", "while True: pass", timeout=1)
        self.assertTrue(r["timed_out"])
        self.assertEqual(self.c.run_code("py-box", "x")["result"]["text/plain"], "41")
        self.assertEqual(self.c.create_context("py-box", name="py-scratch")["state"], "running")
        self.assertEqual(self.c.run_code("py-box", "x", context="py-scratch")["error"]["name"], "NameError")
        self.assertEqual(sorted(c["name"] for c in self.c.contexts("py-box")), ["py-scratch", "python"])
        self.c.restart_context("py-box", "python")
        self.assertEqual(self.c.run_code("py-box", "x")["error"]["name"], "NameError")
        self.c.remove_context("py-box", "py-scratch")
        with self.assertRaises(PaddockError) as e:
            self.c.run_code("py-box", "1", context="py-scratch")
        self.assertEqual(e.exception.status, 404)

    def test_watch_dir(self):
        self.c.exec("py-box", ["mkdir", "-p", "/config/pw"])
        it = self.c.watch_dir("py-box", "/config/pw")
        self.assertEqual(next(it)["type"], "ready")
        self.c.exec("py-box", ["sh", "-c", "echo hi > /config/pw/a"])
        e = next(it)
        self.assertEqual((e["type"], e["path"], e["kind"]), ("created", "/config/pw/a", "file"))
        it.close()
        with self.assertRaises(PaddockError) as e:
            next(self.c.watch_dir("py-box", "/root"))
        self.assertEqual(e.exception.status, 403)

    def test_push_and_pull(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "sub"))
            with open(os.path.join(d, "a.txt"), "w") as f:
                f.write("alpha\n")
            with open(os.path.join(d, "sub", "b.txt"), "w") as f:
                f.write("beta\n")
            self.c.push("py-box", d, to="/config/pushed")
        r = self.c.exec("py-box", ["sh", "-c", "cat /config/pushed/a.txt /config/pushed/sub/b.txt; stat -c %U /config/pushed/a.txt"])
        self.assertEqual(r.stdout, b"alpha\nbeta\npaddock\n")
        with tarfile.open(fileobj=io.BytesIO(self.c.pull("py-box", "/config/pushed"))) as t:
            self.assertEqual(t.extractfile("pushed/sub/b.txt").read(), b"beta\n")

    def test_errors_name_what_and_where(self):
        with self.assertRaises(PaddockError) as e:
            self.c.box("py-nosuch")
        self.assertEqual((e.exception.status, e.exception.code), (404, "not_found"))
        self.assertIn('no box named "py-nosuch"', e.exception.message)
        with self.assertRaises(PaddockError) as e:
            self.c.create_box(name="py-bad", type="huge")
        self.assertEqual((e.exception.status, e.exception.code, e.exception.field), (400, "invalid", "type"))
        with self.assertRaises(PaddockError) as e:
            self.c.exec("py-nosuch", ["true"])
        self.assertEqual(e.exception.status, 404)
        with self.assertRaises(PaddockError) as e:
            Client(token="pdk_0000").boxes()
        self.assertEqual((e.exception.status, e.exception.code), (401, "unauthorized"))

    def test_policy(self):
        self.c.set_policy("py-box", "deny-all")
        self.assertEqual(self.c.box("py-box")["policy"], "deny-all")
        rep = self.c.policy_report("py-box")
        self.assertEqual(rep["policy"], "deny-all")
        self.assertIn("metadata", rep["drops"])
        self.c.set_policy("py-box", "allow-all")
        # Both changes are in the audit log, which chains.
        es = self.c.audit(box="py-box", action="box.policy")
        self.assertEqual([e["result"] for e in es], ["ok", "ok"])
        self.assertTrue(self.c.verify_audit()["ok"])
        # The owner has no quota.
        self.assertEqual(self.c.quota(self.c.whoami()["user"])["role"], "owner")

    def test_stop_snapshot_start(self):
        b = self.c.create_box(name="py-life", idle_stop="2h")
        self.assertEqual((b.get("idle_stop"), b.get("sleeping")), ("2h0m0s", None))
        self.c.exec("py-life", ["sh", "-c", "echo kept > /config/f"])
        self.assertEqual(self.c.stop_box("py-life")["status"], "stopped")
        self.assertEqual([s["reason"] for s in self.c.snapshots("py-life")], ["stop"])
        self.c.start_box("py-life")
        self.assertEqual(self.c.exec("py-life", ["cat", "/config/f"]).stdout, b"kept\n")
        child = self.c.fork("py-life", new_name="py-child")
        self.assertEqual(child["name"], "py-child")
        self.assertEqual(self.c.exec("py-child", ["cat", "/config/f"]).stdout, b"kept\n")
        self.assertEqual(b["name"], "py-life")

    def test_plan_and_apply_a_project(self):
        spec = {"project": "pysdk", "boxes": [{"name": "py-proj", "ttl": "2h"}], "drives": [{"name": "py-cache"}]}
        plan = self.c.plan(spec)
        self.assertEqual(sorted((ch["address"], ch["action"]) for ch in plan["changes"]),
                         [("box.py-proj", "create"), ("drive.py-cache", "create")])
        res = self.c.apply(spec, plan["serial"])
        self.assertFalse(res.get("failed"))
        self.assertEqual(self.c.plan(spec)["changes"], [])
        with self.assertRaises(PaddockError) as e:
            self.c.apply(spec, plan["serial"])  # made before the apply: stale
        self.assertEqual(e.exception.status, 409)
        gone = self.c.plan(spec, destroy=True, drives=True)
        self.c.apply(spec, gone["serial"], destroy=True, drives=True)
        self.assertNotIn("py-proj", [b["name"] for b in self.c.boxes()])
        self.assertNotIn("py-cache", [d["name"] for d in self.c.drives()])

    def test_whoami_and_ttl(self):
        me = self.c.whoami()
        self.assertEqual(me["role"], "owner")
        self.assertEqual(self.c.set_ttl("py-box", "2h")["ttl_seconds"], 7200)
        self.assertNotIn("ttl_seconds", self.c.set_ttl("py-box", None))
        self.c.set_ttl("py-box", "1h")

    def test_files_one_by_one(self):
        self.c.write_file("py-box", "/config/one/note.txt", "written\n")
        self.assertEqual(self.c.read_file("py-box", "/config/one/note.txt"), b"written\n")
        names = [e["name"] for e in self.c.list_dir("py-box", "/config/one")["entries"]]
        self.assertEqual(names, ["note.txt"])
        with self.assertRaises(PaddockError) as e:
            self.c.read_file("py-box", "/config/one/none")
        self.assertEqual(e.exception.status, 404)

    def test_box_handle_goes_at_the_end_of_a_with_block(self):
        with Box.create(self.c, name="py-ctx") as b:
            self.assertEqual(b.exec(["echo", "in"]).stdout, b"in\n")
            b.write_file("/config/x", b"x")
            self.assertEqual(b.read_file("/config/x"), b"x")
        self.assertNotIn("py-ctx", [x["name"] for x in self.c.boxes()])
        with Box.create(self.c, name="py-kept") as b:
            b.keep()
        self.assertIn("py-kept", [x["name"] for x in self.c.boxes()])

    def test_async_client(self):
        async def main():
            async with AsyncClient() as ac:
                boxes, r = await asyncio.gather(ac.boxes(), ac.exec("py-box", ["echo", "async"]))
                return [b["name"] for b in boxes], r
        names, r = asyncio.run(main())
        self.assertIn("py-box", names)
        self.assertEqual(r.stdout, b"async\n")

        async def streams():
            async with AsyncClient() as ac:
                got = []
                async with await ac.exec_stream("py-box", ["sh", "-c", "echo x; echo y >&2"]) as s:
                    async for kind, data in s:
                        got.append((kind, data))
                    code = s.exit_code
                async for kind, data in ac.events():
                    if kind == "ready":
                        break
                return sorted(got), code
        got, code = asyncio.run(streams())
        self.assertEqual((got, code), ([("stderr", b"y\n"), ("stdout", b"x\n")], 0))

    def test_account(self):
        t = self.c.create_token("py-token")
        self.assertTrue(t["token"].startswith("pdk_"))
        self.assertEqual(Client(token=t["token"]).whoami()["token"], "py-token")
        self.assertIn("py-token", [x["name"] for x in self.c.tokens()])
        self.c.revoke_token("py-token")
        self.assertNotIn("py-token", [x["name"] for x in self.c.tokens()])
        self.c.set_secret("PY_SECRET", "s3cret")
        secrets = self.c.secrets()
        self.assertIn("PY_SECRET", [x["name"] for x in secrets])
        self.assertNotIn("s3cret", repr(secrets))
        self.c.set_secret("PY_SECRET", "s3cret", broker=["api.model.test"], header="x-api-key", limit="5/min")
        b = [x for x in self.c.secrets() if x["name"] == "PY_SECRET"][0]["broker"]
        self.assertEqual(b, {"hosts": ["api.model.test"], "header": "x-api-key", "limit": "5/min"})
        self.c.set_secret_broker("PY_SECRET", {"hosts": ["api.model.test"], "header": "bearer"})
        b = [x for x in self.c.secrets() if x["name"] == "PY_SECRET"][0]["broker"]
        self.assertEqual(b, {"hosts": ["api.model.test"], "header": "bearer"})
        self.c.remove_secret("PY_SECRET")
        # Images: none yet; this server's boxes run on runc, so a build is
        # refused before it starts, saying why.
        self.assertEqual(self.c.images(), [])
        with self.assertRaises(PaddockError) as cm:
            self.c.image("nosuch:1")
        self.assertEqual(cm.exception.status, 404)
        with self.assertRaises(PaddockError) as cm:
            self.c.build_image("tools", {"Dockerfile": "FROM scratch\n"}, tag="1")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "conflict"))
        self.assertIn("Docker inside a box does not work", cm.exception.message)
        self.assertIsInstance(self.c.keys(), list)
        self.assertIn("owner", [u["role"] for u in self.c.users()])
        self.assertIn("/invite/", self.c.invite()["url"])
        # One server: its own, and nowhere to move a box to.
        ns = self.c.nodes()
        self.assertEqual(len(ns), 1)
        self.assertTrue(ns[0]["control_plane"] and ns[0]["state"] == "up")
        with self.assertRaises(PaddockError) as e:
            self.c.drain_node("nosuch")
        self.assertEqual(e.exception.status, 404)
        n = self.c.set_node_pool(ns[0]["name"], {"small": 0})
        self.assertEqual((n["name"], n.get("own_pool")), (ns[0]["name"], None))
        with self.assertRaises(PaddockError) as e:
            self.c.set_node_pool(ns[0]["name"], {"huge": 1})
        self.assertEqual((e.exception.status, e.exception.field), (400, "pool"))
        with self.assertRaises(PaddockError) as e:
            self.c.move_box("nosuch", ns[0]["name"])
        self.assertEqual(e.exception.status, 404)

    def test_named_policies(self):
        self.c.create_policy("py-pol", allow_domains=["example.test"])
        self.c.update_policy("py-pol", allow_cidrs=["10.9.0.0/16"])
        pol = [p for p in self.c.policies() if p["name"] == "py-pol"][0]
        self.assertEqual((pol.get("allow_domains"), pol["allow_cidrs"]), (None, ["10.9.0.0/16"]))
        self.c.remove_policy("py-pol")

    def test_trees_and_streams(self):
        self.c.exec("py-box", ["sh", "-c", "mkdir -p /config/tree/sub && echo leaf > /config/tree/sub/leaf.txt && ln -s sub/leaf.txt /config/tree/rel"])
        with tempfile.TemporaryDirectory() as d:
            self.c.pull_tree("py-box", "/config/tree", d)
            with open(os.path.join(d, "tree", "sub", "leaf.txt")) as f:
                self.assertEqual(f.read(), "leaf\n")
            self.assertEqual(os.readlink(os.path.join(d, "tree", "rel")), "sub/leaf.txt")
            # A box that links out of the target: refused, nothing written there.
            self.c.exec("py-box", ["sh", "-c", "mkdir -p /config/evil && ln -s /etc/passwd /config/evil/pw"])
            out = os.path.join(d, "evil-out")
            with self.assertRaises(tarfile.TarError):
                self.c.pull_tree("py-box", "/config/evil", out)
            self.assertFalse(os.path.lexists(os.path.join(out, "evil", "pw")))
            # Streams both ways through files, not memory.
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as t:
                data = os.urandom(1 << 20)
                info = tarfile.TarInfo("big.bin")
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            path = os.path.join(d, "in.tar")
            with open(path, "wb") as f:
                f.write(buf.getvalue())
            self.c.create_drive("py-stream")
            with open(path, "rb") as f:
                self.c.restore_drive("py-stream", f)
            with open(os.path.join(d, "out.tar"), "w+b") as f:
                self.assertIsNone(self.c.backup_drive("py-stream", to=f))
                f.seek(0)
                with tarfile.open(fileobj=f) as t:
                    self.assertEqual(t.extractfile("big.bin").read(), data)
            self.c.remove_drive("py-stream")
            with open(path, "rb") as f:
                self.c.push_tar("py-box", "/config/streamed", f)
            r = self.c.exec("py-box", ["sh", "-c", "sha256sum < /config/streamed/big.bin"])
            import hashlib
            self.assertEqual(r.stdout.split()[0].decode(), hashlib.sha256(data).hexdigest())

    def test_drive_backup_and_restore(self):
        self.c.create_drive("py-drive")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            info = tarfile.TarInfo("data.txt")
            info.size = 5
            t.addfile(info, io.BytesIO(b"drive"))
        self.c.restore_drive("py-drive", buf.getvalue())
        with tarfile.open(fileobj=io.BytesIO(self.c.backup_drive("py-drive"))) as t:
            self.assertEqual(t.extractfile("data.txt").read(), b"drive")
        self.c.remove_drive("py-drive")

    def test_agents_and_prompt(self):
        self.assertIn("say", [a["name"] for a in self.c.agents()])
        self.assertIn("say", [a["name"] for a in self.c.agents("py-box")])
        j = self.c.prompt("py-box", "hello python", agent="say")
        self.assertIn(b"said=hello python", self.c.job_log("py-box", j["id"], follow=True))

    def test_desktop(self):
        self.c.create_box(name="py-desk", desktop=True)
        png = self.c.screenshot("py-desk")
        self.assertTrue(png.startswith(b"\x89PNG"))
        kept = self.c.take_screenshot("py-desk")
        self.assertEqual([x["id"] for x in self.c.screenshots("py-desk")], [kept["id"]])
        self.assertIn("/desktop/py-desk/#ticket=", self.c.desktop_url("py-desk"))
        r = self.c.desktop_actions("py-desk", [{"action": "mouse_move", "coordinate": [40, 30]}, {"action": "cursor_position"}],
                                   screenshot=True, scale=0.5)
        self.assertEqual(r["results"][1]["coordinate"], [40, 30])
        self.assertEqual((r["width"], r["height"]), (640, 400))
        self.assertTrue(base64.b64decode(r["screenshot"]).startswith(b"\x89PNG"))

    def test_metrics(self):
        # Boxes are sampled every 5 s (metrics_interval).
        m = None
        for _ in range(100):
            m = next((s for s in self.c.metrics() if s["box"] == "py-box"), None)
            if m:
                break
            time.sleep(0.2)
        self.assertIsNotNone(m, "no sample of py-box")
        self.assertEqual(m["memory_limit_bytes"], 2048 << 20)
        self.assertGreater(m["processes"], 0)
        h = self.c.box_metrics("py-box", since="1h")
        self.assertEqual(h["box"], "py-box")
        self.assertGreater(len(h["samples"]), 0)
        with self.assertRaises(PaddockError) as e:
            self.c.box_metrics("py-box", since="soon")
        self.assertEqual(e.exception.field, "since")
        for kind, data in self.c.events(metrics=True):
            if kind == "metrics" and data["box"] == "py-box":
                break

    def test_sharing(self):
        self.assertEqual(self.c.grants("py-box"), [])
        with self.assertRaises(PaddockError) as e:
            self.c.share("py-box", "nobody-here", "member")
        self.assertEqual(e.exception.status, 404)
        self.assertIn('no user named "nobody-here"', str(e.exception))
        with self.assertRaises(PaddockError) as e:
            self.c.share("py-box", "nobody-here", "owner")
        self.assertEqual(e.exception.field, "access")

    def test_events_and_projects(self):
        seen = set()
        for kind, data in self.c.events():
            if kind == "box":
                seen.add(data["name"])
            if kind == "ready":
                break
        self.assertIn("py-box", seen)
        self.assertIsInstance(self.c.projects(), list)


if __name__ == "__main__":
    unittest.main()
