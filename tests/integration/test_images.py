"""--image (#30, docs/images.md): a Debian trixie image built with Debian's
own tools (mmdebstrap, umoci, skopeo) run as an OCI layout, an oci-archive
and a docker-archive; pins; a corrupt blob; hostile layers that must write
nothing outside the cache; two processes unpacking at once.

The image is built once (as root: mmdebstrap) into FIXTURES_BUILD/images and
reused by reruns and by the uid-65534 run (as_nobody.sh copies it)."""
import gzip
import hashlib
import io
import json
import os
import resource
import shutil
import subprocess
import tarfile
import tempfile
import time
import unittest

from nsbtest import NSBOX, SandboxTest, skip_or_fail

IMAGES = os.path.join(os.environ.get("FIXTURES_BUILD", "build/fixtures"), "images")
TAG = "t"


def load_tests(loader, tests, pattern):
    # the integration suite discovers test_*.py: this file is its own suite
    if pattern is not None and pattern != "test_images.py":
        return unittest.TestSuite()
    return tests


def build_image():
    """The test image: trixie's python3-minimal and its standard library (Python
    3.13, unittest for nsbox test), merged /usr."""
    layout = os.path.join(IMAGES, "oci")
    if os.path.exists(os.path.join(IMAGES, "done")):
        return None
    if os.geteuid() != 0:
        return "the test image is built by the root run (mmdebstrap)"
    os.makedirs(IMAGES, exist_ok=True)
    t0 = time.monotonic()
    tar = os.path.join(IMAGES, "rootfs.tar")
    subprocess.run(["mmdebstrap", "--quiet", "--variant=extract", "--include=python3-minimal,libpython3.13-stdlib",
                    "--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr", "--mode=root", "trixie", tar,
                    "http://deb.debian.org/debian"], check=True, capture_output=True)
    shutil.rmtree(layout, ignore_errors=True)
    for cmd in (["umoci", "init", "--layout", layout], ["umoci", "new", "--image", layout + ":" + TAG],
                ["umoci", "raw", "add-layer", "--image", layout + ":" + TAG, tar],
                ["umoci", "config", "--image", layout + ":" + TAG, "--config.env", "PATH=/usr/local/bin:/usr/bin:/bin",
                 "--config.env", "IMG_MARK=from-image"],
                ["skopeo", "copy", "-q", "oci:%s:%s" % (layout, TAG), "oci-archive:%s/img.oci.tar:%s" % (IMAGES, TAG)],
                ["skopeo", "copy", "-q", "oci:%s:%s" % (layout, TAG),
                 "docker-archive:%s/img.docker.tar:nsbox/test:%s" % (IMAGES, TAG)]):
        subprocess.run(cmd, check=True, capture_output=True)
    os.unlink(tar)
    subprocess.run(["chmod", "-R", "a+rX", IMAGES], check=True)
    with open(os.path.join(IMAGES, "done"), "w") as f:
        f.write("built in %.1f s\n" % (time.monotonic() - t0))
    return None


def manifest_digest(layout):
    with open(os.path.join(layout, "index.json")) as f:
        return json.load(f)["manifests"][0]["digest"]


def write_blob(layout, data):
    h = hashlib.sha256(data).hexdigest()
    with open(os.path.join(layout, "blobs", "sha256", h), "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + h, "size": len(data)}


def publish_manifest(layout, manifest):
    """Writes @manifest as a blob of @layout and makes it the layout's only
    image (index.json)."""
    desc = write_blob(layout, json.dumps(manifest).encode())
    desc["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [desc]}, f)
    return desc


def oci_of_layers(layout, layers):
    """An OCI layout of @layers (each a list of (TarInfo, bytes|None)), gzipped."""
    os.makedirs(os.path.join(layout, "blobs", "sha256"))
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    descs = []
    for entries in layers:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for ti, data in entries:
                t.addfile(ti, io.BytesIO(data) if data is not None else None)
        d = write_blob(layout, gzip.compress(buf.getvalue(), 1))
        d["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
        descs.append(d)
    cfg = write_blob(layout, json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                                         "rootfs": {"type": "layers", "diff_ids": []}}).encode())
    cfg["mediaType"] = "application/vnd.oci.image.config.v1+json"
    man = write_blob(layout, json.dumps({"schemaVersion": 2, "config": cfg, "layers": descs}).encode())
    man["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump({"schemaVersion": 2, "manifests": [man]}, f)


def entry(name, kind=tarfile.REGTYPE, data=b"", link=""):
    ti = tarfile.TarInfo(name)
    ti.type = kind
    ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    ti.linkname = link
    if kind == tarfile.REGTYPE:
        ti.size = len(data)
        return ti, data
    return ti, None


class ImageCase(SandboxTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="nsbox-img-")
        os.chmod(self.tmp, 0o755)
        self.env = dict(os.environ, XDG_CACHE_HOME=os.path.join(self.tmp, "cache"))

    def tearDown(self):
        subprocess.run(["chmod", "-R", "u+rwX", self.tmp])
        subprocess.run(["rm", "-rf", self.tmp])   # any depth (shutil.rmtree recurses in Python)

    def img(self, *args, **kw):
        return self.nsbox(*args, env=kw.pop("env", self.env), **kw)


class BuiltImage(ImageCase):
    @classmethod
    def setUpClass(cls):
        cls.why = build_image()

    def setUp(self):
        super().setUp()
        if self.why or not os.path.exists(os.path.join(IMAGES, "done")):
            skip_or_fail(self, self.why or "no test image")
        self.layout = os.path.join(IMAGES, "oci")
        self.digest = manifest_digest(self.layout)

    def check_runs(self, ref):
        p, res = self.run_json("python", "--image", ref, "-c",
                               "import sys, os; print(sys.version_info[:2], os.environ['IMG_MARK'])",
                               env=self.env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(res["stdout"]["text"], "(3, 13) from-image\n")
        self.assertEqual(res["image"]["ref"], ref)
        self.assertTrue(res["image"]["digest"].startswith("sha256:"))
        return res

    def test_oci_layout_runs_python_313(self):
        res = self.check_runs("oci:%s:%s" % (self.layout, TAG))
        self.assertEqual(res["image"]["digest"], self.digest)

    def test_archives(self):
        self.check_runs("oci-archive:%s/img.oci.tar:%s" % (IMAGES, TAG))
        self.check_runs("docker-archive:%s/img.docker.tar:nsbox/test:%s" % (IMAGES, TAG))

    def test_docker_archive_name_with_a_registry_port(self):
        """`docker save localhost:5000/app:1.0` records that name in
        RepoTags: docker-archive:FILE:localhost:5000/app:1.0 selects it (it
        was read as FILE 'FILE:localhost'), pinned too; another tag or a
        bad NAME is refused, clearly."""
        copy = os.path.join(self.tmp, "saved.tar")
        with tarfile.open(os.path.join(IMAGES, "img.docker.tar")) as src, tarfile.open(copy, "w") as dst:
            for m in src.getmembers():
                data = src.extractfile(m).read() if m.isfile() else None
                if m.name == "manifest.json":
                    man = json.loads(data)
                    man[0]["RepoTags"] = ["localhost:5000/app:1.0"]
                    data = json.dumps(man).encode()
                    m.size = len(data)
                dst.addfile(m, io.BytesIO(data) if data is not None else None)
        os.chmod(copy, 0o644)
        res = self.check_runs("docker-archive:%s:localhost:5000/app:1.0" % copy)
        self.check_runs("docker-archive:%s:localhost:5000/app:1.0@%s" % (copy, res["image"]["digest"]))
        other = self.img("python", "--image", "docker-archive:%s:localhost:5000/app:2.0" % copy, "-c", "pass")
        self.assertEqual(other.returncode, 125)
        self.assertIn(b"no image tagged 'localhost:5000/app:2.0'", other.stderr)
        bad = self.img("python", "--image", "docker-archive:%s:localhost:5000/app" % copy, "-c", "pass")
        self.assertEqual(bad.returncode, 125)
        self.assertIn(b"is not a TAG", bad.stderr)

    def test_run_command_inside(self):
        p = self.img("run", "--image", "oci:%s:%s" % (self.layout, TAG), "python3", "-c", "print('run ok')")
        self.assertEqual((p.returncode, p.stdout), (0, b"run ok\n"), p.stderr)

    def test_pin(self):
        ok = self.img("python", "--image", "oci:%s:%s@%s" % (self.layout, TAG, self.digest), "-c", "print(1)")
        self.assertEqual((ok.returncode, ok.stdout), (0, b"1\n"), ok.stderr)
        bad = self.img("python", "--image", "oci:%s:%s@sha256:%s" % (self.layout, TAG, "0" * 64), "-c", "print(1)")
        self.assertEqual(bad.returncode, 125)
        self.assertIn(b"pinned sha256:", bad.stderr)
        self.assertEqual(bad.stdout, b"")

    def test_policy_hash_covers_digest(self):
        a = self.check_runs("oci:%s:%s" % (self.layout, TAG))
        b = self.check_runs("docker-archive:%s/img.docker.tar:nsbox/test:%s" % (IMAGES, TAG))
        self.assertNotEqual(a["policy_sha256"], b["policy_sha256"])

    def test_packages_refused(self):
        p = self.img("python", "--image", "oci:%s:%s" % (self.layout, TAG), "--package", self.tmp, "-c", "1")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"packages come from the image", p.stderr)

    def test_corrupt_blob(self):
        copy = os.path.join(self.tmp, "oci")
        shutil.copytree(self.layout, copy)
        blobs = os.path.join(copy, "blobs", "sha256")
        big = max(os.listdir(blobs), key=lambda b: os.path.getsize(os.path.join(blobs, b)))
        path = os.path.join(blobs, big)
        os.chmod(path, 0o644)
        with open(path, "r+b") as f:
            f.seek(1000)
            c = f.read(1)
            f.seek(1000)
            f.write(bytes([c[0] ^ 1]))
        p = self.img("python", "--image", "oci:%s:%s" % (copy, TAG), "-c", "print(1)")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"corrupt or altered", p.stderr)
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        self.assertEqual([n for n in os.listdir(cache) if n != ".lock"], [])

    def test_concurrent_unpack(self):
        ref = "oci:%s:%s" % (self.layout, TAG)
        ps = [subprocess.Popen([NSBOX, "python", "--image", ref, "-c", "print(2)"], env=self.env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        outs = [p.communicate(timeout=120) for p in ps]
        self.assertEqual([p.returncode for p in ps], [0, 0], outs)
        self.assertEqual(sum(o[1].count(b"nsbox: unpacked") for o in outs), 1, outs)
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        self.assertEqual(sorted(n for n in os.listdir(cache) if not n.startswith(".")),
                         ["sha256-" + self.digest[7:]])


    def test_prune_racing_unpacks(self):
        # nsbox image prune waiting for the exclusive lock while a run unpacks:
        # the run must still use the entry it built (flock converted the lock
        # to shared by unlocking first, and prune removed the entry in between:
        # the run failed, 125)
        import threading
        ref = "oci:%s:%s" % (self.layout, TAG)
        stop, prunes = threading.Event(), []

        def prune():
            while not stop.is_set():
                prunes.append(self.img("image", "prune").returncode)
        t = threading.Thread(target=prune)
        t.start()
        try:
            runs = [self.img("python", "--image", ref, "-c", "print('ok')", timeout=120) for _ in range(3)]
        finally:
            stop.set()
            t.join()
        self.assertEqual([(p.returncode, p.stdout) for p in runs], [(0, b"ok\n")] * 3,
                         [p.stderr for p in runs])
        self.assertEqual(set(prunes), {0})

    def test_judge_spec_image_and_flag(self):
        spec = {"program": {"source": "import sys; print(sys.version_info[:2])"}, "image": "oci:%s:%s" % (self.layout, TAG),
                "cases": [{"name": "v", "expect": {"stdout": {"equals": "(3, 13)\n"}}}]}
        path = os.path.join(self.tmp, "spec.json")
        with open(path, "w") as f:
            json.dump(spec, f)
        p = self.img("judge", "--json", path)
        self.assertEqual(p.returncode, 0, p.stderr)
        v = json.loads(p.stdout)
        self.assertEqual(v["verdict"], "pass")
        self.assertEqual(v["cases"][0]["result"]["image"]["digest"], self.digest)
        del spec["image"]
        with open(path, "w") as f:
            json.dump(spec, f)
        p = self.img("judge", "--image", "docker-archive:%s/img.docker.tar" % IMAGES, path)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)

    def test_replay_refuses_another_image(self):
        spec = {"program": {"source": "import sys; print(sys.version_info[:2])"},
                "cases": [{"name": "v", "expect": {"stdout": {"equals": "(3, 13)\n"}}}]}
        path = os.path.join(self.tmp, "spec.json")
        obs = os.path.join(self.tmp, "obs.jsonl")
        with open(path, "w") as f:
            json.dump(spec, f)
        oci = "oci:%s:%s" % (self.layout, TAG)
        p = self.img("judge", "--image", oci, "--observe", obs, path)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.img("judge", "--image", oci, "--replay", obs, path)
        self.assertEqual(p.returncode, 0, p.stderr + p.stdout)
        # the same files as a docker-archive: another digest, so another policy
        p = self.img("judge", "--image", "docker-archive:%s/img.docker.tar" % IMAGES, "--replay", obs, path)
        self.assertEqual(p.returncode, 125, p.stdout)
        self.assertIn(b"image = ", p.stderr)

    def test_batch_and_test(self):
        ref = "oci:%s:%s" % (self.layout, TAG)
        jobs = b'{"id":1,"kind":"python","code":"import sys; print(sys.version_info[:2])"}\n'
        p = self.img("batch", "--image", ref, "-", input=jobs)
        self.assertEqual(p.returncode, 0, p.stderr)
        line = json.loads(p.stdout)
        self.assertEqual((line["stdout"]["text"], line["image"]["digest"]), ("(3, 13)\n", self.digest))
        src = os.environ.get("NSBOX_SOURCE", ".")
        course = os.path.join(src, "examples", "course")
        p = self.img("test", "--json", "--image", ref, "--harness", os.path.join(course, "harness"),
                     "--workspace", os.path.join(course, "workspace"))
        self.assertEqual(p.returncode, 0, p.stderr)
        rep = json.loads(p.stdout)
        self.assertEqual((rep["verdict"], rep["result"]["image"]["digest"]), ("pass", self.digest))

    def test_batch_job_image_keys(self):
        ref = "oci:%s:%s" % (self.layout, TAG)
        code = "import sys; print(sys.version_info[:2])"
        jobs = [{"id": 1, "kind": "python", "code": code, "image": ref},
                {"id": 2, "kind": "run", "argv": ["python3", "-c", "print(3)"], "image": ref},
                {"id": 3, "kind": "python", "code": "1", "image": "oci:/nonexistent"},
                {"id": 4, "kind": "judge", "spec": {"image": ref, "program": {"source": code},
                                                    "cases": [{"name": "v", "expect": {"stdout": {"equals": "(3, 13)\n"}}}]}}]
        p = self.img("batch", "-j", "3", "-", input="".join(json.dumps(j) + "\n" for j in jobs).encode())
        lines = {d["id"]: d for d in map(json.loads, p.stdout.decode().splitlines())}
        self.assertEqual(lines[1]["stdout"]["text"], "(3, 13)\n", lines[1])
        self.assertEqual(lines[1]["image"]["digest"], self.digest)
        self.assertEqual(lines[2]["stdout"]["text"], "3\n", lines[2])
        self.assertEqual(lines[3]["status"], "error")
        self.assertEqual(lines[4]["verdict"], "pass", lines[4])
        self.assertLessEqual(p.stderr.count(b"nsbox: unpacked"), 1, p.stderr)

    def test_batch_worker_keeps_no_image_per_job(self):
        """A persistent batch worker (#28) opens a job's image once per ref
        and lets go of the one before (its cache lock fd, its strings): jobs
        alternating two images at -j 1 under 64 fds all run."""
        refs = ["oci:%s:%s" % (self.layout, TAG), "docker-archive:%s/img.docker.tar" % IMAGES]
        jobs = [{"id": i, "kind": "run", "argv": ["python3", "-c", "print(3)"], "image": refs[i % 2]}
                for i in range(80)]
        p = self.img("batch", "-j", "1", "-", input="".join(json.dumps(j) + "\n" for j in jobs).encode(),
                     timeout=300, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64)))
        lines = [json.loads(l) for l in p.stdout.decode().splitlines()]
        bad = [d for d in lines if d["status"] != "exited"]
        self.assertEqual((len(lines), bad[:1]), (80, []), p.stderr[-2000:])

    def test_profile_image_key(self):
        prof = os.path.join(self.tmp, "img.ini")
        with open(prof, "w") as f:
            f.write("[sandbox]\nimage = oci:%s:%s\n" % (self.layout, TAG))
        p, res = self.run_json("python", "--profile", prof, "-c", "import sys; print(sys.version_info[:2])",
                               env=self.env)
        self.assertEqual((p.returncode, res["stdout"]["text"]), (0, "(3, 13)\n"), p.stderr)
        self.assertEqual(res["image"]["digest"], self.digest)

    def test_client_image(self):
        """The client's image= (client/python): batch and doctor on the image."""
        import sys
        sys.path.insert(0, os.path.join(os.environ.get("NSBOX_SOURCE", "."), "client", "python"))
        from nsbox_client import Client
        os.environ["XDG_CACHE_HOME"] = self.env["XDG_CACHE_HOME"]
        try:
            c = Client(nsbox=NSBOX, image="oci:%s:%s" % (self.layout, TAG))
            r = c.run_code("import sys; print(sys.version_info[:2])")
            self.assertEqual((r.status, r.stdout), ("pass", "(3, 13)\n"), r)
            self.assertEqual(r.raw["image"]["digest"], self.digest)
            self.assertFalse(c.warm_available())
        finally:
            del os.environ["XDG_CACHE_HOME"]

    def test_image_root_is_read_only(self):
        code = r'''
import errno, json, os
seen = {}
for path in ("/usr/pwned", "/etc/pwned", "/pwned", "/var/pwned"):
    try:
        open(path, "w").write("x")
        seen[path] = "written"
    except OSError as e:
        seen[path] = errno.errorcode[e.errno]
seen["root"] = sorted(os.listdir("/"))
seen["passwd"] = open("/etc/passwd").read()
seen["tmp"] = os.access("/tmp", os.W_OK)
print(json.dumps(seen))
'''
        p, res = self.run_json("python", "--image", "oci:%s:%s" % (self.layout, TAG), "-c", code, env=self.env)
        self.assertEqual(p.returncode, 0, res["stderr"])
        seen = json.loads(res["stdout"]["text"])
        for path in ("/usr/pwned", "/etc/pwned", "/pwned", "/var/pwned"):
            self.assertIn(seen[path], ("EROFS", "EACCES", "EPERM"), (path, seen))
        self.assertNotIn("work", seen["root"])       # the host's directories are not there
        self.assertIn("nsbox sandbox", seen["passwd"])  # nsbox's passwd, not the image's
        self.assertTrue(seen["tmp"])
        cache = os.path.join(self.tmp, "cache", "nsbox", "images", "sha256-" + self.digest[7:], "rootfs")
        for name in ("usr/pwned", "etc/pwned", "pwned", "var/pwned"):
            self.assertFalse(os.path.lexists(os.path.join(cache, name)))

    def test_interpreter_inside_and_refusals(self):
        ref = "oci:%s:%s" % (self.layout, TAG)
        p, res = self.run_json("python", "--image", ref, "--interpreter", "/usr/bin/python3.13", "-c",
                               "import sys; print(sys.executable)", env=self.env)
        self.assertEqual((p.returncode, res["stdout"]["text"]), (0, "/usr/bin/python3.13\n"), p.stderr)
        self.assertEqual(res["command"][0], "/usr/bin/python3.13")
        p = self.img("python", "--image", ref, "--interpreter", "/usr/bin/python9", "-c", "1")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"no executable file in the image", p.stderr)
        p = self.img("python", "--image", ref, "--isolation", "reduced", "-c", "1")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"strict isolation", p.stderr)
        p = self.img("python", "--image", "docker://python:3.12", "-c", "1")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"never pulls", p.stderr)

    def test_doctor_image(self):
        p = self.img("doctor", "--json", "--image", "oci:%s:%s@%s" % (self.layout, TAG, self.digest))
        d = json.loads(p.stdout)
        [c] = [c for c in d["checks"] if c["name"] == "image"]
        self.assertEqual(c["status"], "ok", c)
        self.assertIn(self.digest, c["detail"])
        self.assertIn("/usr/bin/python3", c["detail"])
        p = self.img("doctor", "--json", "--image", "oci:%s:%s@sha256:%s" % (self.layout, TAG, "1" * 64))
        self.assertEqual(p.returncode, 1)
        d = json.loads(p.stdout)
        [c] = [c for c in d["checks"] if c["name"] == "image"]
        self.assertEqual(c["status"], "unavailable")
        self.assertIn("pinned", c["detail"])

    def test_warm_refused_with_reason(self):
        p = self.img("batch", "--warm", "--image", "oci:%s:%s" % (self.layout, TAG), "-", input=b"")
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"--warm", p.stderr)

    def test_image_ls_rm_prune(self):
        ref = "oci:%s:%s" % (self.layout, TAG)
        self.assertEqual(self.img("python", "--image", ref, "-c", "1").returncode, 0)
        ls = self.img("image", "ls")
        self.assertEqual(ls.returncode, 0, ls.stderr)
        [line] = ls.stdout.decode().splitlines()
        meta = json.loads(line)
        self.assertEqual((meta["ref"], meta["digest"]), (ref, self.digest))
        # in use: a run holds the entry's lock until it exits
        busy = subprocess.Popen([NSBOX, "python", "--image", ref, "-c", "import time; print(1, flush=True); "
                                 "time.sleep(30)"], env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            self.assertEqual(busy.stdout.readline(), b"1\n")
            rm = self.img("image", "rm", self.digest)
            self.assertEqual(rm.returncode, 125)
            self.assertIn(b"in use", rm.stderr)
            self.assertIn(b"pruned 0", self.img("image", "prune").stdout)
        finally:
            busy.kill()
            busy.communicate()
        rm = self.img("image", "rm", self.digest)
        self.assertEqual(rm.returncode, 0, rm.stderr)
        again = self.img("image", "rm", self.digest)
        self.assertEqual(again.returncode, 125)
        self.assertIn(b"not in the cache", again.stderr)
        self.assertEqual(self.img("image", "ls").stdout, b"")
        self.assertEqual(self.img("python", "--image", ref, "-c", "1").returncode, 0)
        self.assertIn(b"pruned 1", self.img("image", "prune").stdout)


class HostileLayers(ImageCase):
    """Each layer tries to write outside the root being built; the canary
    directory (outside the cache) must stay empty."""

    def setUp(self):
        super().setUp()
        self.canary = os.path.join(self.tmp, "canary")
        os.mkdir(self.canary)
        os.chmod(self.canary, 0o777)

    def attempt(self, layers, env=None):
        layout = os.path.join(self.tmp, "hostile")
        shutil.rmtree(layout, ignore_errors=True)
        oci_of_layers(layout, layers)
        p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env or self.env)
        self.assertEqual(os.listdir(self.canary), [], p.stderr)
        return p

    def test_dotdot(self):
        up = os.path.relpath(self.canary, "/")
        p = self.attempt([[entry("../../../../../../../../" + up + "/dotdot", data=b"x")]])
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"outside the root", p.stderr)

    def test_absolute_name_lands_inside(self):
        p = self.attempt([[entry(self.canary + "/abs", data=b"x")]])
        self.assertEqual(p.returncode, 127, p.stderr)   # unpacked (inside), then no /nothing

    def test_symlink_then_write_through(self):
        # resolved in the root, the link dangles: refused (125) or inside (127)
        p = self.attempt([[entry("evil", tarfile.SYMTYPE, link=self.canary)], [entry("evil/pwned", data=b"x")]])
        self.assertIn(p.returncode, (125, 127), p.stderr)
        # same layer too
        self.attempt([[entry("evil2", tarfile.SYMTYPE, link=self.canary), entry("evil2/pwned", data=b"x")]])

    def test_relative_symlink_climbing_out(self):
        self.attempt([[entry("up", tarfile.SYMTYPE, link="../../../../../../../../../" + self.canary.lstrip("/")),
                       entry("up/pwned", data=b"x")]])

    def test_hardlink_out(self):
        self.attempt([[entry("hl", tarfile.LNKTYPE, link="../../../../../../etc/passwd")]])
        self.attempt([[entry("l", tarfile.SYMTYPE, link=self.canary), entry("l/h", tarfile.LNKTYPE, link="/etc/hostname")]])

    def test_whiteout_of_dotdot(self):
        victim = os.path.join(self.canary, "..", "victim")
        with open(victim, "w") as f:
            f.write("keep")
        p = self.attempt([[entry("d", tarfile.DIRTYPE), entry("d/.wh...", data=b"")]])
        self.assertEqual(p.returncode, 125)
        self.assertTrue(os.path.exists(victim))
        p = self.attempt([[entry("l", tarfile.SYMTYPE, link=self.tmp), entry("l/.wh.victim", data=b"")]])
        self.assertTrue(os.path.exists(victim))

    def test_bomb(self):
        env = dict(self.env, NSBOX_IMAGE_MAX_BYTES="8M")
        p = self.attempt([[entry("bomb", data=bytes(64 << 20))]], env=env)
        self.assertEqual(p.returncode, 125)
        self.assertIn(b"inflates past the limit", p.stderr)

    def test_whiteouts(self):
        self.attempt([[entry("d", tarfile.DIRTYPE), entry("d/a", data=b"1"), entry("d/b", data=b"2"),
                       entry("x", data=b"3"), entry("keep", data=b"4")],
                      [entry("d/.wh..wh..opq"), entry("d/c", data=b"5"), entry(".wh.x")],
                      [entry("d/e", data=b"6"), entry("d/.wh..wh..opq")]])
        root = self.rootfs()
        self.assertEqual(sorted(os.listdir(os.path.join(root, "d"))), ["e"])   # c was below layer 3's marker
        self.assertFalse(os.path.lexists(os.path.join(root, "x")))
        self.assertTrue(os.path.exists(os.path.join(root, "keep")))
        self.assertEqual([n for n in os.listdir(root) if n.startswith(".wh.")], [])

    def rootfs(self):
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        [entry_dir] = [n for n in os.listdir(cache) if n.startswith("sha256-")]
        return os.path.join(cache, entry_dir, "rootfs")

    def test_device_and_setuid(self):
        dev = tarfile.TarInfo("dev/evil")
        dev.type, dev.devmajor, dev.devminor = tarfile.CHRTYPE, 1, 3
        suid, _ = entry("usr/bin/suid", data=b"#!/bin/sh\n")
        suid.mode = 0o4755
        self.attempt([[(dev, None), (suid, b"#!/bin/sh\n")]])
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        [entry_dir] = [n for n in os.listdir(cache) if n.startswith("sha256-")]
        root = os.path.join(cache, entry_dir, "rootfs")
        self.assertFalse(os.path.lexists(os.path.join(root, "dev", "evil")))
        self.assertEqual(os.stat(os.path.join(root, "usr", "bin", "suid")).st_mode & 0o7777, 0o755)



def set_nofile_1024():
    # the soft limit most sessions have: what `nsbox image rm` must work under
    import resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


class HostileLayouts(ImageCase):
    """An outside review of #30 (rev-image): what the image author controls
    besides the layers' names (the layout's files, the shape of the tree),
    and where the cache lives."""

    def layout(self, layers, name="hostile"):
        layout = os.path.join(self.tmp, name)
        shutil.rmtree(layout, ignore_errors=True)
        oci_of_layers(layout, layers)
        return layout

    def test_fifo_blob_is_refused_not_waited_on(self):
        # a FIFO where a blob should be: opening it for reading would wait for
        # a writer forever, holding the cache's exclusive lock (every other
        # image run of this user would wait too)
        layout = self.layout([[entry("a", data=b"x")]])
        with open(os.path.join(layout, "blobs", "sha256", manifest_digest(layout)[7:])) as f:
            layer = json.load(f)["layers"][0]["digest"][7:]
        for name in ("blobs/sha256/" + layer, "index.json"):
            path = os.path.join(layout, name)
            os.rename(path, path + ".keep")
            os.mkfifo(path)
            try:
                p = self.img("run", "--image", "oci:" + layout, "/nothing", timeout=20)
            except subprocess.TimeoutExpired:
                self.fail("nsbox waited on the FIFO %s" % name)
            finally:
                os.unlink(path)
                os.rename(path + ".keep", path)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertIn(b"not a regular file", p.stderr)

    def test_cache_under_a_writable_parent_is_refused(self):
        # another user who can rename entries of a parent can swap the cache
        # for one of their own after nsbox checked it: every ancestor must be
        # root's or the caller's and not group/other-writable (unless sticky)
        layout = self.layout([[entry("a", data=b"x")]])
        shared = os.path.join(self.tmp, "shared")
        os.makedirs(os.path.join(shared, "nsbox"))
        os.chmod(os.path.join(shared, "nsbox"), 0o777)
        env = dict(self.env, XDG_CACHE_HOME=shared)
        p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"writable by others", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(shared, "nsbox", "images", ".lock")))
        self.assertEqual(self.img("image", "ls", env=env).returncode, 125)
        # the same through a symlink: the directory it resolves to is checked
        os.chmod(os.path.join(shared, "nsbox"), 0o755)
        os.chmod(shared, 0o777)
        os.makedirs(os.path.join(self.tmp, "home", "nsbox"))
        os.symlink(os.path.join(shared, "nsbox", "images"), os.path.join(self.tmp, "home", "nsbox", "images"))
        env = dict(self.env, XDG_CACHE_HOME=os.path.join(self.tmp, "home"))
        p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"writable by others", p.stderr)
        # a sticky world-writable parent (/tmp) is fine: others cannot rename the caller's entries
        os.chmod(shared, 0o1777)
        p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env)
        self.assertEqual(p.returncode, 127, p.stderr)

    def deep_layers(self):
        # a directory chain deeper than the fd limit, built from a few entries:
        # each symlink names the bottom so far, each entry adds 1000 levels below it
        seg = "/".join(["a"] * 1000)
        ents, bottom = [entry(seg, tarfile.DIRTYPE)], seg
        for k in range(2):
            ents += [entry("j%d" % k, tarfile.SYMTYPE, link="/" + bottom),
                     entry("j%d/%s" % (k, seg), tarfile.DIRTYPE)]
            bottom += "/" + seg
        ents.append(entry("top", data=b"t"))
        return [ents]

    def test_rm_and_prune_remove_a_deep_tree(self):
        layout = self.layout(self.deep_layers())
        p = self.img("run", "--image", "oci:" + layout, "/nothing", preexec_fn=set_nofile_1024)
        self.assertEqual(p.returncode, 127, p.stderr)
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        [name] = [n for n in os.listdir(cache) if n.startswith("sha256-")]
        rm = self.img("image", "rm", "sha256:" + name[7:], preexec_fn=set_nofile_1024)
        # a failed removal must never leave the entry half removed under its
        # name (the next run would take it for a finished root)
        self.assertEqual([n for n in os.listdir(cache) if n.startswith("sha256-")], [], rm.stderr)
        self.assertEqual(rm.returncode, 0, rm.stderr)
        self.assertEqual(self.img("run", "--image", "oci:" + layout, "/nothing").returncode, 127)
        prune = self.img("image", "prune", preexec_fn=set_nofile_1024)
        self.assertIn(b"pruned 1", prune.stdout, prune.stderr)
        self.assertEqual(os.listdir(cache), [".lock"])

    def test_directories_made_for_a_name_count_as_entries(self):
        # one entry a/a/.../a makes 1000 directories: the entry bound must see
        # them, or a small layer fills the disk's inodes past it
        env = dict(self.env, NSBOX_IMAGE_MAX_ENTRIES="500")
        layout = self.layout([[entry("/".join(["a"] * 1000) + "/f", data=b"x")]])
        p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"more than 500 entries", p.stderr)
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 127, p.stderr)
        ls = self.img("image", "ls")
        self.assertGreaterEqual(json.loads(ls.stdout)["entries"], 1001)

    def test_layer_swapped_after_a_first_read_is_refused(self):
        # the layout is the image author's: whoever can write a blob can change
        # it between a verifying read and the unpacking read; the bytes
        # unpacked must be the bytes hashed (one read, hashed as it goes)
        good = io.BytesIO()
        with tarfile.open(fileobj=good, mode="w") as t:
            for i in range(48):
                t.addfile(*[(ti, io.BytesIO(d)) for ti, d in [entry("pad%02d" % i, data=bytes(1 << 20))]][0])
            ti, d = entry("marker", data=b"good")
            t.addfile(ti, io.BytesIO(d))
        good = good.getvalue()
        at = good.rindex(b"good")
        layout = os.path.join(self.tmp, "swap")
        os.makedirs(os.path.join(layout, "blobs", "sha256"))
        layer = write_blob(layout, good)
        layer["mediaType"] = "application/vnd.oci.image.layer.v1.tar"
        cfg = write_blob(layout, json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                                             "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]}}).encode())
        cfg["mediaType"] = "application/vnd.oci.image.config.v1+json"
        man = write_blob(layout, json.dumps({"schemaVersion": 2, "config": cfg, "layers": [layer]}).encode())
        man["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
        with open(os.path.join(layout, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": [man]}, f)
        blob = os.path.join(layout, "blobs", "sha256", layer["digest"][7:])
        p = subprocess.Popen([NSBOX, "run", "--image", "oci:" + layout, "/nothing"], env=self.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        swapped, fd_path, peak = False, None, 0
        while p.poll() is None and not swapped:
            try:
                if fd_path is None:
                    fds = os.path.join("/proc", str(p.pid), "fd")
                    fd_path = next((os.path.join("/proc", str(p.pid), "fdinfo", n) for n in os.listdir(fds)
                                    if os.readlink(os.path.join(fds, n)) == blob), None)
                    continue
                with open(fd_path) as f:
                    pos = int(f.readline().split()[1])
            except (OSError, ValueError, StopIteration):
                fd_path = None
                continue
            peak = max(peak, pos)
            if peak > len(good) // 2 and pos < len(good) // 4:   # read to the end once, then again from the start
                with open(blob, "r+b") as f:
                    os.pwrite(f.fileno(), b"evil", at)
                swapped = True
        out, err = p.communicate(timeout=120)
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        markers = [open(os.path.join(cache, n, "rootfs", "marker"), "rb").read()
                   for n in os.listdir(cache) if n.startswith("sha256-")]
        self.assertNotIn(b"evil", markers, "a blob changed after its check was unpacked: %s" % err)
        if swapped:
            self.assertEqual(p.returncode, 125, err)
            self.assertIn(b"corrupt or altered", err)
        else:
            self.assertEqual((p.returncode, markers), (127, [b"good"]), err)

    def test_no_external_decompressor_runs(self):
        # libarchive's "all filters" runs lrzip, lzop, grzip ... from PATH on a
        # layer with their magic: the image author's bytes fed, outside any
        # sandbox, to whatever decompressor the host has
        fake = os.path.join(self.tmp, "bin")
        os.mkdir(fake)
        ran = os.path.join(self.canary_dir(), "ran")
        for prog in ("lrzip", "lzop", "grzip", "lzip", "lz4", "zstd", "gzip", "xz", "bzip2"):
            with open(os.path.join(fake, prog), "w") as f:
                f.write("#!/bin/sh\necho %s >> %s\ncat >/dev/null\n" % (prog, ran))
            os.chmod(os.path.join(fake, prog), 0o755)
        env = dict(self.env, PATH=fake + ":" + os.environ.get("PATH", "/usr/bin:/bin"))
        layout = self.layout([[entry("a", data=b"x")]])
        with open(os.path.join(layout, "blobs", "sha256", manifest_digest(layout)[7:])) as f:
            man = json.load(f)
        for magic in (b"LRZI\x00\x06", b"\x89LZO\x00\r\n\x1a\n", b"GRZipII\x00\x02\x04:)", b"LZIP\x01\x0c",
                      b"\x04\x22\x4d\x18\x64\x40\xa7"):
            layer = write_blob(layout, magic + bytes(64))
            layer["mediaType"] = "application/vnd.oci.image.layer.v1.tar+gzip"
            man["layers"] = [layer]
            publish_manifest(layout, man)
            p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertFalse(os.path.exists(ran), open(ran).read() if os.path.exists(ran) else "")

    def canary_dir(self):
        d = os.path.join(self.tmp, "canary")
        os.makedirs(d, exist_ok=True)
        return d

    def test_zstd_xz_and_uncompressed_layers(self):
        tars = []
        for i, comp in enumerate(("zstd", "xz", None)):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as t:
                ti, d = entry("f%d" % i, data=b"layer%d" % i)
                t.addfile(ti, io.BytesIO(d))
            data = buf.getvalue()
            if comp:
                data = subprocess.run([shutil.which(comp) or self.skipTest("no " + comp), "-c"], input=data,
                                      capture_output=True, check=True).stdout
            tars.append(data)
        layout = self.layout([[entry("base", data=b"b")]])
        with open(os.path.join(layout, "blobs", "sha256", manifest_digest(layout)[7:])) as f:
            man = json.load(f)
        for data, mt in zip(tars, ("tar+zstd", "tar+xz", "tar")):
            layer = write_blob(layout, data)
            layer["mediaType"] = "application/vnd.oci.image.layer.v1." + mt
            man["layers"].append(layer)
        publish_manifest(layout, man)
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 127, p.stderr)
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        [name] = [n for n in os.listdir(cache) if n.startswith("sha256-")]
        self.assertEqual(sorted(os.listdir(os.path.join(cache, name, "rootfs"))), ["base", "f0", "f1", "f2"])

    def test_killed_unpack_is_never_used_and_swept(self):
        # kill -9 mid-unpack: the half-built .tmp- is never taken for the
        # image, and the next unpack (under the exclusive lock, so nobody else
        # is building) removes it
        layout = self.layout([[entry("d%d/f%05d" % (i // 1000, i), data=b"x" * 100) for i in range(20000)]])
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        p = subprocess.Popen([NSBOX, "run", "--image", "oci:" + layout, "/nothing"], env=self.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        tmp = []
        while p.poll() is None and time.monotonic() < deadline:
            tmp = [n for n in os.listdir(cache) if n.startswith(".tmp-")] if os.path.isdir(cache) else []
            if tmp and os.path.isdir(os.path.join(cache, tmp[0], "rootfs", "d1")):
                break
            time.sleep(0.01)
        p.kill()
        p.wait()
        if not tmp or any(n.startswith("sha256-") for n in os.listdir(cache)):
            self.skipTest("the unpack finished before it could be killed")
        self.assertEqual([n for n in os.listdir(cache) if n.startswith("sha256-")], [])
        other = self.layout([[entry("a", data=b"x")]], "other")
        p = self.img("run", "--image", "oci:" + other, "/nothing")
        self.assertEqual(p.returncode, 127, p.stderr)
        self.assertEqual([n for n in os.listdir(cache) if n.startswith(".tmp-")], [])
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 127, p.stderr)
        [name] = [n for n in os.listdir(cache) if n.startswith("sha256-") and
                  os.path.exists(os.path.join(cache, n, "rootfs", "d19"))]
        self.assertEqual(len(os.listdir(os.path.join(cache, name, "rootfs", "d19"))), 1000)


def raw_layout(layout, blobs_of_layers, media="application/vnd.oci.image.layer.v1.tar", config=None,
               index_extra=None):
    """An OCI layout whose layers are the given raw blobs (bytes); returns the
    manifest descriptor."""
    os.makedirs(os.path.join(layout, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(layout, "oci-layout"), "w") as f:
        f.write('{"imageLayoutVersion":"1.0.0"}')
    descs = []
    for data in blobs_of_layers:
        d = write_blob(layout, data)
        d["mediaType"] = media
        descs.append(d)
    cfg = write_blob(layout, config or json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                                                   "rootfs": {"type": "layers", "diff_ids": []}}).encode())
    cfg["mediaType"] = "application/vnd.oci.image.config.v1+json"
    man = write_blob(layout, json.dumps({"schemaVersion": 2, "config": cfg, "layers": descs}).encode())
    man["mediaType"] = "application/vnd.oci.image.manifest.v1+json"
    with open(os.path.join(layout, "index.json"), "w") as f:
        json.dump(dict({"schemaVersion": 2, "manifests": [man]}, **(index_extra or {})), f)
    return man


def tar_of(entries):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for ti, data in entries:
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def read(path):
    with open(path, "rb") as f:
        return f.read()


class RedTeamImage(ImageCase):
    """A second, adversarial review of image_unpack.c and image_cache.c
    (redteam-image): a hostile image author and a hostile local user. The
    canary (outside the cache) must stay empty; the cache must stay usable
    and removable."""

    def setUp(self):
        super().setUp()
        self.canary = os.path.join(self.tmp, "canary")
        os.mkdir(self.canary)
        os.chmod(self.canary, 0o777)
        self.cache = os.path.join(self.tmp, "cache", "nsbox", "images")

    def run_layers(self, layers, name="hostile", env=None, expect=None):
        layout = os.path.join(self.tmp, name)
        shutil.rmtree(layout, ignore_errors=True)
        oci_of_layers(layout, layers)
        p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env or self.env)
        self.assertEqual(os.listdir(self.canary), [], p.stderr)
        if expect is not None:
            self.assertEqual(p.returncode, expect, p.stderr)
        return p

    def rootfs(self):
        [e] = [n for n in os.listdir(self.cache) if n.startswith("sha256-")]
        return os.path.join(self.cache, e, "rootfs")

    def test_xattrs_and_acls_are_not_applied(self):
        ti, data = entry("usr/bin/capped", data=b"#!/bin/sh\n")
        ti.mode = 0o755
        ti.pax_headers = {"SCHILY.xattr.security.capability": "\x01\x00\x00\x02\xff\xff\xff\xff",
                          "SCHILY.xattr.user.evil": "1", "SCHILY.xattr.trusted.evil": "1",
                          "SCHILY.acl.access": "user::rwx,user:0:rwx,group::r-x,mask::rwx,other::r-x"}
        self.run_layers([[(ti, data)]], expect=127)
        path = os.path.join(self.rootfs(), "usr", "bin", "capped")
        self.assertEqual(os.listxattr(path, follow_symlinks=False), [])

    def test_hardlink_to_symlink_and_through_symlinked_parent(self):
        # a hard link to a symlink pointing outside: links the symlink (inside);
        # a hard link whose target's parent is a symlink out resolves inside
        outside = os.path.join(self.canary, "..", "secret")
        with open(outside, "w") as f:
            f.write("host")
        self.run_layers([[entry("s", tarfile.SYMTYPE, link=outside), entry("h", tarfile.LNKTYPE, link="s"),
                          entry("p", tarfile.SYMTYPE, link=self.tmp), entry("h2", tarfile.LNKTYPE, link="p/secret"),
                          entry("h3", tarfile.LNKTYPE, link="s/../canary")]])
        self.assertEqual(read(outside), b"host")
        self.assertEqual(os.stat(outside).st_nlink, 1)
        if any(n.startswith("sha256-") for n in os.listdir(self.cache)):
            root = self.rootfs()
            self.assertTrue(os.path.islink(os.path.join(root, "h")))
            self.assertFalse(os.path.exists(os.path.join(root, "h2")))

    def test_hardlink_survives_whiteout_of_its_target_and_later_writes(self):
        self.run_layers([[entry("a", data=b"orig"), entry("b", tarfile.LNKTYPE, link="a")],
                         [entry(".wh.a"), entry("c", tarfile.LNKTYPE, link="b")],
                         [entry("b", data=b"new")]], expect=127)
        root = self.rootfs()
        self.assertFalse(os.path.lexists(os.path.join(root, "a")))
        self.assertEqual(read(os.path.join(root, "c")), b"orig")   # b replaced, not written through
        self.assertEqual(read(os.path.join(root, "b")), b"new")
        p = self.run_layers([[entry("d", tarfile.DIRTYPE), entry("hd", tarfile.LNKTYPE, link="d")]], name="hd")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"'hd'", p.stderr)

    def test_symlink_replaces_directory_between_layers(self):
        # (the link's target made inside the root: a dangling parent is refused)
        self.run_layers([[entry("d", tarfile.DIRTYPE), entry("d/f", data=b"1"),
                          entry(self.canary.lstrip("/"), tarfile.DIRTYPE)],
                         [entry("d", tarfile.SYMTYPE, link=self.canary)],
                         [entry("d/pwned", data=b"x"), entry("d/sub", tarfile.DIRTYPE), entry("d/sub/f", data=b"x")]],
                        expect=127)
        p = self.run_layers([[entry("e", tarfile.DIRTYPE)], [entry("e", tarfile.SYMTYPE, link=self.canary)],
                             [entry("e/pwned", data=b"x")]], name="dangling")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"entry 'e/pwned'", p.stderr)
        root = self.rootfs()
        self.assertTrue(os.path.islink(os.path.join(root, "d")))
        self.assertTrue(os.path.exists(os.path.join(root, self.canary.lstrip("/"), "pwned")))

    def test_file_dir_file_and_duplicates(self):
        self.run_layers([[entry("x", data=b"1"), entry("x", tarfile.DIRTYPE), entry("x/in", data=b"2"),
                          entry("x", data=b"3"), entry("y", data=b"a"), entry("y", data=b"b")],
                         [entry("x", tarfile.DIRTYPE), entry("y", tarfile.SYMTYPE, link="x")]], expect=127)
        root = self.rootfs()
        self.assertEqual(os.listdir(os.path.join(root, "x")), [])
        self.assertEqual(os.readlink(os.path.join(root, "y")), "x")

    def test_whiteout_tricks(self):
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("keep")
        for name, layers in (
                ("opq-root", [[entry("a", data=b"1")], [entry(".wh..wh..opq"), entry("b", data=b"2")]]),
                ("opq-through-link", [[entry("l", tarfile.SYMTYPE, link=self.tmp)],
                                      [entry("l/.wh..wh..opq")]]),
                ("wh-through-link", [[entry("l", tarfile.SYMTYPE, link=self.tmp), entry("l/.wh.victim")]]),
                ("wh-link-itself", [[entry("l", tarfile.SYMTYPE, link=self.tmp)], [entry(".wh.l")]]),
                ("wh-dot", [[entry(".wh..")]]), ("wh-empty", [[entry("d/.wh.")]]),
                ("wh-dotdot-top", [[entry(".wh...")]]), ("opq-nested", [[entry("a/.wh..wh..opq/x", data=b"1")]]),
                ("wh-abs", [[entry("/" + self.tmp.lstrip("/") + "/.wh.victim")]])):
            p = self.run_layers(layers, name=name)
            self.assertIn(p.returncode, (125, 127), (name, p.stderr))
            self.assertTrue(os.path.exists(victim), name)
        # an opaque marker at the root of a later layer: the layer below is gone
        p = self.run_layers([[entry("a", data=b"1")], [entry(".wh..wh..opq"), entry("b", data=b"2")]], name="opq2")
        root = os.path.join(self.cache, "sha256-" + manifest_digest(os.path.join(self.tmp, "opq2"))[7:], "rootfs")
        self.assertEqual(os.listdir(root), ["b"])

    def test_fifo_socket_devices_skipped(self):
        ents = []
        for name, kind in (("fifo", tarfile.FIFOTYPE), ("blk", tarfile.BLKTYPE), ("chr", tarfile.CHRTYPE)):
            ti = tarfile.TarInfo(name)
            ti.type = kind
            ti.devmajor, ti.devminor = 8, 0
            ents.append((ti, None))
        sgid, data = entry("sgid", data=b"x")
        sgid.mode = 0o2777
        sd, _ = entry("sticky", tarfile.DIRTYPE)
        sd.mode = 0o7777
        self.run_layers([ents + [(sgid, data), (sd, None)]], expect=127)
        root = self.rootfs()
        self.assertEqual(sorted(os.listdir(root)), ["sgid", "sticky"])
        self.assertEqual(os.stat(os.path.join(root, "sgid")).st_mode & 0o7000, 0)
        self.assertEqual(os.stat(os.path.join(root, "sticky")).st_mode & 0o6000, 0)

    def test_mode_0000_tree_is_removable(self):
        d0, _ = entry("locked", tarfile.DIRTYPE)
        d0.mode = 0
        f0, data = entry("locked/f", data=b"x")
        f0.mode = 0
        d1, _ = entry("late", tarfile.DIRTYPE)
        d1.mode = 0
        self.run_layers([[(d0, None), (f0, data), entry("late/sub", tarfile.DIRTYPE), entry("late/sub/f", data=b"y"),
                          (d1, None)]], expect=127)
        [name] = [n for n in os.listdir(self.cache) if n.startswith("sha256-")]
        rm = self.img("image", "rm", "sha256:" + name[7:])
        self.assertEqual(rm.returncode, 0, rm.stderr)
        self.assertEqual([n for n in os.listdir(self.cache) if not n.startswith(".lock")], [])

    def test_long_names_and_entry_count(self):
        p = self.run_layers([[entry("n" * 300, data=b"x")]], name="long1")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"layer 1 of 1", p.stderr)
        env = dict(self.env, NSBOX_IMAGE_MAX_ENTRIES="100")
        p = self.run_layers([[entry("f%d" % i) for i in range(60)], [entry("g%d" % i) for i in range(60)]],
                            name="many", env=env)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"more than 100 entries", p.stderr)
        self.assertEqual([n for n in os.listdir(self.cache) if not n.startswith(".")], [])

    def test_oversized_blob_is_not_read_to_its_end(self):
        # a layer whose blob is far larger than any unpack may write (a sparse
        # file: no disk, but every byte read and hashed under the cache's
        # exclusive lock): refused by its size, before reading it
        layout = os.path.join(self.tmp, "big")
        man = raw_layout(layout, [tar_of([entry("a", data=b"x")])])
        with open(os.path.join(layout, "blobs", "sha256", man["digest"][7:])) as f:
            blob = os.path.join(layout, "blobs", "sha256", json.load(f)["layers"][0]["digest"][7:])
        with open(blob, "r+b") as f:
            f.truncate(4 << 30)
        env = dict(self.env, NSBOX_IMAGE_MAX_BYTES="8M")
        t0 = time.monotonic()
        p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env, timeout=120)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"bytes, the manifest says", p.stderr)
        self.assertLess(time.monotonic() - t0, 3)

    def test_manifest_and_index_tricks(self):
        base = tar_of([entry("a", data=b"x")])
        # index -> index -> index: refused, not followed forever
        layout = os.path.join(self.tmp, "nest")
        man = raw_layout(layout, [base])
        inner = write_blob(layout, json.dumps({"schemaVersion": 2, "manifests": [man]}).encode())
        inner["mediaType"] = "application/vnd.oci.image.index.v1+json"
        inner["platform"] = {"os": "linux", "architecture": "amd64"}
        mid = write_blob(layout, json.dumps({"schemaVersion": 2, "manifests": [inner]}).encode())
        mid["mediaType"] = "application/vnd.oci.image.index.v1+json"
        with open(os.path.join(layout, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": [mid]}, f)
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 125, p.stderr)
        # a manifest blob that is not what its digest says
        layout = os.path.join(self.tmp, "mism")
        man = raw_layout(layout, [base])
        with open(os.path.join(layout, "blobs", "sha256", man["digest"][7:]), "ab") as f:
            f.write(b" ")
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"corrupt or altered", p.stderr)
        # a huge index.json
        layout = os.path.join(self.tmp, "huge")
        raw_layout(layout, [base], index_extra={"annotations": {"x": "y" * (5 << 20)}})
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"larger than", p.stderr)
        # the config descriptor naming a layer (or the manifest itself)
        layout = os.path.join(self.tmp, "cfg")
        man = raw_layout(layout, [base])
        mpath = os.path.join(layout, "blobs", "sha256", man["digest"][7:])
        with open(mpath) as f:
            m = json.load(f)
        m["config"] = dict(m["layers"][0], mediaType="application/vnd.oci.image.config.v1+json")
        publish_manifest(layout, m)
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertEqual([n for n in os.listdir(self.cache) if not n.startswith(".")], [])

    def test_docker_config_cannot_take_an_oci_manifests_entry(self):
        # a docker-archive is cached by its config's digest, an OCI image by its
        # manifest's: a docker-archive whose "config" is a victim's manifest
        # (bytes anyone can copy) and no layers must not become the cache entry
        # the victim's pinned OCI image then runs on
        victim = os.path.join(self.tmp, "victim")
        man = raw_layout(victim, [tar_of([entry("usr/bin/tool", data=b"real")])])
        with open(os.path.join(victim, "blobs", "sha256", man["digest"][7:]), "rb") as f:
            man_bytes = f.read()
        arch = os.path.join(self.tmp, "evil.docker.tar")
        with tarfile.open(arch, "w") as t:
            for name, data in (("cfg.json", man_bytes),
                               ("manifest.json", json.dumps([{"Config": "cfg.json", "RepoTags": ["e:1"],
                                                              "Layers": []}]).encode())):
                ti = tarfile.TarInfo(name)
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
        self.img("run", "--image", "docker-archive:" + arch, "/nothing")
        p = self.img("run", "--image", "oci:%s@%s" % (victim, man["digest"]), "/usr/bin/tool")
        root = os.path.join(self.cache, "sha256-" + man["digest"][7:], "rootfs")
        self.assertTrue(os.path.exists(os.path.join(root, "usr", "bin", "tool")), p.stderr)

    def test_long_ref_meta_is_whole_json(self):
        tag = "t" * 9000
        layout = os.path.join(self.tmp, "longtag")
        man = raw_layout(layout, [tar_of([entry("a", data=b"x")])])
        man["annotations"] = {"org.opencontainers.image.ref.name": tag}
        with open(os.path.join(layout, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": [man]}, f)
        ref = "oci:%s:%s" % (layout, tag)
        p = self.img("run", "--image", ref, "/nothing")
        self.assertEqual(p.returncode, 127, p.stderr)
        ls = self.img("image", "ls")
        [line] = ls.stdout.decode(errors="replace").splitlines()
        meta = json.loads(line)
        self.assertEqual((meta["ref"], meta["digest"]), (ref, man["digest"]))

    def test_image_rm_names_outside_the_cache(self):
        keep = os.path.join(self.tmp, "cache", "nsbox", "keep")
        os.makedirs(self.cache, exist_ok=True)
        os.makedirs(keep)
        for name in ("../keep", "sha256:../../keep", "sha256:" + "a" * 63 + "/", "sha256:" + "A" * 64, "",
                     "sha256:" + "0" * 64 + "/../../keep"):
            p = self.img("image", "rm", name)
            self.assertEqual(p.returncode, 125, (name, p.stderr))
        self.assertTrue(os.path.isdir(keep))

    def test_entry_swapped_for_a_symlink_is_not_run(self):
        # the caller's own cache: an entry that is a symlink (planted, or left
        # by a tool) is not a root nsbox built
        layout = os.path.join(self.tmp, "l1")
        man = raw_layout(layout, [tar_of([entry("a", data=b"x")])])
        self.assertEqual(self.img("run", "--image", "oci:" + layout, "/nothing").returncode, 127)
        entry_dir = os.path.join(self.cache, "sha256-" + man["digest"][7:])
        os.rename(entry_dir, entry_dir + ".real")
        os.symlink(entry_dir + ".real", entry_dir)
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"not a directory nsbox made", p.stderr)
        os.unlink(entry_dir)
        os.rename(entry_dir + ".real", entry_dir)
        self.assertEqual(self.img("run", "--image", "oci:" + layout, "/nothing").returncode, 127)
        if os.geteuid() == 0:   # an entry (or its rootfs) another user owns
            for d in (entry_dir, os.path.join(entry_dir, "rootfs")):
                os.chown(d, 65534, 65534)
                p = self.img("run", "--image", "oci:" + layout, "/nothing")
                self.assertEqual(p.returncode, 125, p.stderr)
                self.assertIn(b"not a directory nsbox made", p.stderr)
                os.chown(d, 0, 0)

    def test_top_level_symlinks_resolve_in_the_sandbox(self):
        # /etc as a symlink to a host directory: nsbox writes its own passwd
        # and group in the sandbox's /etc; none may land on the host
        self.run_layers([[entry("etc", tarfile.SYMTYPE, link=self.canary),
                          entry("tmp", tarfile.SYMTYPE, link=self.canary),
                          entry("lib", tarfile.SYMTYPE, link=self.canary)]])

    def test_skipped_entry_data_counts_toward_the_limit(self):
        # entries nsbox makes without data (a FIFO, a directory, a symlink)
        # carrying data through a pax "size" (64 MiB here; 1 GiB is 36 KB as zstd).
        # libarchive inflated and skipped it inside next_header, counted
        # nowhere: a few MB of blob were hours of inflation under the cache's
        # exclusive lock
        zstd = shutil.which("zstd") or self.skipTest("no zstd")
        for kind in (tarfile.FIFOTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE):
            tarpath = os.path.join(self.tmp, "skip.tar")
            with open(tarpath, "wb") as f:
                t = tarfile.open(fileobj=f, mode="w", format=tarfile.PAX_FORMAT)
                ti = tarfile.TarInfo("skipped")
                ti.type, ti.linkname, ti.pax_headers = kind, "x", {"size": str(64 << 20)}
                t.addfile(ti, None)
                f.write(b"\x01" * 512)             # not an end-of-archive block
                f.seek((64 << 20) - 512, os.SEEK_CUR)
                f.truncate(f.tell())
                t.offset = f.tell()
                ti = tarfile.TarInfo("after")
                ti.size = 1
                t.addfile(ti, io.BytesIO(b"a"))
                t.close()
            data = subprocess.run([zstd, "-1", "-c", tarpath], capture_output=True, check=True).stdout
            os.unlink(tarpath)
            layout = os.path.join(self.tmp, "skip")
            shutil.rmtree(layout, ignore_errors=True)
            raw_layout(layout, [data], media="application/vnd.oci.image.layer.v1.tar+zstd")
            env = dict(self.env, NSBOX_IMAGE_MAX_BYTES="8M")
            p = self.img("run", "--image", "oci:" + layout, "/nothing", env=env)
            self.assertEqual(p.returncode, 125, (kind, p.stderr))
            self.assertRegex(p.stderr, b"'skipped/?' inflates past the limit")

    def test_cache_of_another_user_is_refused(self):
        # root's run with XDG_CACHE_HOME naming a tree another user owns (sudo
        # keeping a user's environment): that user could swap the root
        if os.geteuid() != 0:
            self.skipTest("chown needs root")
        layout = os.path.join(self.tmp, "l")
        raw_layout(layout, [tar_of([entry("a", data=b"x")])])
        other = os.path.join(self.tmp, "other")
        os.makedirs(os.path.join(other, "nsbox", "images"))
        for d in (other, os.path.join(other, "nsbox"), os.path.join(other, "nsbox", "images")):
            os.chown(d, 65534, 65534)
        env = dict(self.env, XDG_CACHE_HOME=other)
        for args in (("run", "--image", "oci:" + layout, "/nothing"), ("image", "ls"), ("image", "prune")):
            p = self.img(*args, env=env)
            self.assertEqual(p.returncode, 125, (args, p.stderr))
        self.assertEqual(os.listdir(os.path.join(other, "nsbox", "images")), [])

    def swap_while_waiting(self, ref, swap):
        """nsbox learns the digest under the cache's shared lock, then waits for
        the exclusive one to unpack: the image is changed (@swap) while it
        waits, with the test holding the lock shared."""
        import fcntl
        os.makedirs(self.cache, exist_ok=True)
        lock = os.open(os.path.join(self.cache, ".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_SH)
        try:
            p = subprocess.Popen([NSBOX, "run", "--image", ref, "/nothing"], env=self.env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and not waits_for_flock(p.pid):
                time.sleep(0.01)
            self.assertTrue(waits_for_flock(p.pid), "nsbox never waited for the exclusive lock")
            swap()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
            os.close(lock)
        return p.communicate(timeout=60)[1], p.returncode

    def test_image_changed_between_digest_and_unpack(self):
        # the entry is named by the digest read first; the layers unpacked
        # into it came from a second read of the layout: an index changed in
        # between put image B under A's digest, where a later run pinned to A
        # found it
        good = os.path.join(self.tmp, "good")
        man_a = raw_layout(good, [tar_of([entry("which", data=b"A")])])
        evil = os.path.join(self.tmp, "evil")
        raw_layout(evil, [tar_of([entry("which", data=b"B")])])
        shutil.copytree(os.path.join(evil, "blobs"), os.path.join(good, "blobs"), dirs_exist_ok=True)

        def swap():
            shutil.copy(os.path.join(evil, "index.json"), os.path.join(good, "index.json"))
        err, rc = self.swap_while_waiting("oci:" + good, swap)
        entry_a = os.path.join(self.cache, "sha256-" + man_a["digest"][7:], "rootfs", "which")
        if os.path.exists(entry_a):
            self.assertEqual(read(entry_a), b"A", err)
        self.assertEqual(rc, 125, err)
        self.assertIn(b"changed while", err)
        # the same with an oci-archive replaced on disk
        arch = os.path.join(self.tmp, "a.tar")
        with tarfile.open(arch, "w") as t:
            t.add(os.path.join(self.tmp, "evil"), arcname=".")
        shutil.copy(arch, arch + ".evil")
        with open(os.path.join(good, "index.json"), "w") as f:
            json.dump({"schemaVersion": 2, "manifests": [man_a]}, f)
        shutil.rmtree(os.path.join(self.tmp, "cache"))
        with tarfile.open(arch, "w") as t:
            t.add(good, arcname=".")
        err, rc = self.swap_while_waiting("oci-archive:" + arch, lambda: os.replace(arch + ".evil", arch))
        if os.path.exists(entry_a):
            self.assertEqual(read(entry_a), b"A", err)
        self.assertEqual(rc, 125, err)

    def test_archive_members_name_nothing_on_the_host(self):
        # a docker-archive's manifest.json names its config and layers by path:
        # absolute, climbing out, or through a symlink member, they resolve in
        # the archive's own extraction, never on the host (where valid files
        # wait, to be found if they were looked at)
        host = os.path.join(self.tmp, "host")
        os.mkdir(host)
        layer = tar_of([entry("from-host", data=b"x")])
        with open(os.path.join(host, "layer.tar"), "wb") as f:
            f.write(layer)
        cfg = json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                          "rootfs": {"type": "layers",
                                     "diff_ids": ["sha256:" + hashlib.sha256(layer).hexdigest()]}}).encode()
        with open(os.path.join(host, "cfg.json"), "wb") as f:
            f.write(cfg)
        up = "../" * 12 + host.lstrip("/")
        for cfg_name, layer_name in ((host + "/cfg.json", host + "/layer.tar"),
                                     (up + "/cfg.json", up + "/layer.tar"),
                                     ("l/cfg.json", "l/layer.tar")):
            arch = os.path.join(self.tmp, "d.tar")
            with tarfile.open(arch, "w") as t:
                t.addfile(*entry("l", tarfile.SYMTYPE, link=host))
                data = json.dumps([{"Config": cfg_name, "RepoTags": ["x:1"], "Layers": [layer_name]}]).encode()
                t.addfile(*[(ti, io.BytesIO(d)) for ti, d in [entry("manifest.json", data=data)]][0])
            p = self.img("run", "--image", "docker-archive:" + arch, "/nothing")
            self.assertEqual(p.returncode, 125, (cfg_name, p.stderr))
            self.assertEqual(glob_entries(self.cache), [], p.stderr)
        # the control: the same files inside the archive run
        with tarfile.open(arch, "w") as t:
            t.add(host, arcname="in")
            data = json.dumps([{"Config": "in/cfg.json", "RepoTags": ["x:1"], "Layers": ["in/layer.tar"]}]).encode()
            t.addfile(*[(ti, io.BytesIO(d)) for ti, d in [entry("manifest.json", data=data)]][0])
        p = self.img("run", "--image", "docker-archive:" + arch, "/nothing")
        self.assertEqual((p.returncode, len(glob_entries(self.cache))), (127, 1), p.stderr)


def waits_for_flock(pid):
    """Is @pid blocked on an flock (a "->" line of /proc/locks naming it)?"""
    with open("/proc/locks") as f:
        for line in f:
            t = line.split()
            if len(t) > 5 and t[1] == "->" and t[2] == "FLOCK" and t[5] == str(pid):
                return True
    return False


def glob_entries(cache):
    return [n for n in os.listdir(cache) if n.startswith("sha256-")] if os.path.isdir(cache) else []


def sparse_entry(name, realsize, data=b"s" * 512):
    """A PAX 1.0 sparse file (GNU.sparse.*): @data at offset 0, holes to @realsize."""
    smap = b"1\n0\n%d\n" % len(data)
    smap += bytes(-len(smap) % 512)
    ti = tarfile.TarInfo("GNUSparseFile.0/" + name)
    ti.size = len(smap) + len(data)
    ti.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": name,
                      "GNU.sparse.realsize": str(realsize)}
    return ti, smap + data


class RedTeamMore(ImageCase):
    """More of the red-team review: sparse files, foreign layers, opaque markers."""

    def test_sparse_files_count_their_full_size(self):
        cache = os.path.join(self.tmp, "cache", "nsbox", "images")
        env = dict(self.env, NSBOX_IMAGE_MAX_BYTES="8M")
        big = os.path.join(self.tmp, "big")
        raw_layout(big, [tar_of([sparse_entry("huge", 1 << 40)])])
        p = self.img("run", "--image", "oci:" + big, "/nothing", env=env)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"'huge' inflates past the limit", p.stderr)
        small = os.path.join(self.tmp, "small")
        raw_layout(small, [tar_of([sparse_entry("four", 4 << 20)])])
        p = self.img("run", "--image", "oci:" + small, "/nothing", env=env)
        self.assertEqual(p.returncode, 127, p.stderr)
        [name] = glob_entries(cache)
        path = os.path.join(cache, name, "rootfs", "four")
        self.assertEqual(os.path.getsize(path), 4 << 20)
        with open(path, "rb") as f:
            self.assertEqual(f.read(513), b"s" * 512 + b"\0")
        ls = json.loads(self.img("image", "ls").stdout)
        self.assertGreaterEqual(ls["bytes"], 4 << 20)

    def test_foreign_layer_is_never_fetched(self):
        # a nondistributable layer names URLs; nsbox never fetches: the blob
        # must be in the layout
        layout = os.path.join(self.tmp, "foreign")
        man = raw_layout(layout, [tar_of([entry("a", data=b"x")])],
                         media="application/vnd.oci.image.layer.nondistributable.v1.tar")
        mpath = os.path.join(layout, "blobs", "sha256", man["digest"][7:])
        with open(mpath) as f:
            m = json.load(f)
        os.unlink(os.path.join(layout, "blobs", "sha256", m["layers"][0]["digest"][7:]))
        m["layers"][0]["urls"] = ["http://127.0.0.1:9/layer"]
        publish_manifest(layout, m)
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn(b"No such file", p.stderr)

    def test_opaque_marker_keeps_parents_its_layer_made(self):
        # "d/sub/f" makes d/sub (no entry of its own names it); an opaque
        # marker of d later in the same layer hides the layers below only
        layout = os.path.join(self.tmp, "opq")
        oci_of_layers(layout, [[entry("d", tarfile.DIRTYPE), entry("d/old", data=b"1")],
                               [entry("d/sub/f", data=b"2"), entry("d/.wh..wh..opq")]])
        p = self.img("run", "--image", "oci:" + layout, "/nothing")
        self.assertEqual(p.returncode, 127, p.stderr)
        [name] = glob_entries(os.path.join(self.tmp, "cache", "nsbox", "images"))
        root = os.path.join(self.tmp, "cache", "nsbox", "images", name, "rootfs")
        self.assertEqual(sorted(os.listdir(os.path.join(root, "d"))), ["sub"])
        self.assertEqual(read(os.path.join(root, "d", "sub", "f")), b"2")
