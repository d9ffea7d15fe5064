"""`nsbox report` (terminal and --html, the page loaded in headless Chromium)
and `--junit` of `nsbox judge` and `nsbox test`, end to end.

The expected figures are computed here from the result lines themselves
(never written down), so a report that miscounts fails whatever the machine.
"""
import collections
import html
import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from nsbtest import NSBOX, SandboxTest

SOURCE = os.environ.get("NSBOX_SOURCE", os.path.join(os.path.dirname(__file__), "..", ".."))
COURSE = os.path.join(SOURCE, "examples", "course")
ENV = dict(os.environ, NSBOX_RUNNER_DIR=os.path.join(SOURCE, "harness"))

XSD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "junit_min.xsd")
HOSTILE = "</pre><script>document.title='pwned'</script><img src=x onerror=alert(1)>"
JOBS = [
    {"id": "ok-1", "kind": "python", "code": "print(1)"},
    {"id": "ok-2", "kind": "python", "code": "def f(x):\n    return x\n", "test_code": "assert f(2) == 2"},
    {"id": "wrong", "kind": "python", "code": "import sys\nprint(%r, file=sys.stderr)\nsys.exit(3)" % HOSTILE},
    {"id": "hog", "kind": "python", "code": "x = bytearray(200 << 20)", "limits": {"memory": "48M"}},
    {"id": "loops", "kind": "python", "code": "while True: pass", "timeout": 0.5},
    {"id": "typo", "kind": "pythn", "code": "x"},
    {"id": "judged", "kind": "judge", "spec": {
        "program": {"source": "print(input().upper())"},
        "cases": [{"name": "shout", "stdin": "hi\n", "expect": {"stdout": {"equals": "HI\n"}}},
                  {"name": "quiet", "stdin": "a\n", "expect": {"stdout": {"equals": "a\n"}}}]}},
]


def failed(line):
    if line.get("schema") == "nsbox.verdict/1":
        return line["verdict"] != "pass"
    if "outcome" in line:
        return line["outcome"] != "pass"
    return line["status"] != "exited" or line.get("exit_code") != 0


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("chromium is missing: scripts/deps installs Debian's chromium")


class Report(SandboxTest):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="nsbox-report-")
        # removed even when the batch below fails (tearDownClass then never runs)
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        os.chmod(cls.tmp, 0o755)
        jobs = os.path.join(cls.tmp, "jobs.jsonl")
        with open(jobs, "w") as f:
            f.write("".join(json.dumps(j) + "\n" for j in JOBS))
        p = subprocess.run([NSBOX, "batch", "-j", "2", jobs], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=300)
        assert p.returncode == 2, p.stderr    # 2: the jobs include a bad line (docs/batch.md)
        cls.lines = [json.loads(line) for line in p.stdout.decode().splitlines()]
        assert len(cls.lines) == len(JOBS), p.stdout
        # two files, a blank line and a line that is not JSON in the second
        cls.a = os.path.join(cls.tmp, "a.jsonl")
        cls.b = os.path.join(cls.tmp, "b.jsonl")
        text = p.stdout.decode().splitlines(True)
        with open(cls.a, "w") as f:
            f.writelines(text[:4])
        with open(cls.b, "w") as f:
            f.writelines(text[4:6] + ["\n", "{\"id\": \"cut\", \"sta\n"] + text[6:])

    def report(self, *args, **kw):
        return subprocess.run([NSBOX, "report", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=120, **kw)

    def test_terminal_summary(self):
        p = self.report(self.a, self.b)
        self.assertEqual(p.returncode, 0, p.stderr)
        results = [x for x in self.lines if x.get("schema") != "nsbox.verdict/1"]
        n_failed = sum(failed(x) for x in self.lines)
        self.assertIn("%d jobs (%d results, %d verdicts), %d failed or erred; 1 bad lines" %
                      (len(self.lines), len(results), len(self.lines) - len(results), n_failed), p.stdout)
        for key, title in (("status", "status"), ("outcome", "outcome")):
            counts = collections.Counter(x[key] for x in results if x.get(key))
            row = next(line for line in p.stdout.splitlines() if line.strip().startswith(title + " "))
            for value, n in counts.items():
                self.assertRegex(row, r"\b%s %d \(" % (value, n))
        limits = collections.Counter(x["limit"] for x in results if x.get("limit"))
        limits.update(c["result"]["limit"] for x in self.lines if x.get("schema") == "nsbox.verdict/1"
                      for c in x["cases"] if c["result"] and c["result"]["limit"])
        row = next(line for line in p.stdout.splitlines() if line.strip().startswith("limit "))
        for value, n in limits.items():
            self.assertRegex(row, r"\b%s %d\b" % (value, n))
        self.assertIn("verdict      fail 1 (100.0%)", p.stdout)
        # every result and verdict says how it started (here: all cold)
        starts = collections.Counter(x.get("start") for x in self.lines if isinstance(x, dict))
        self.assertEqual(set(starts), {"cold"}, starts)
        self.assertIn("start        cold %d (100.0%%)" % len(self.lines), p.stdout)
        # the slowest job first, named with its file and line
        slow = max(results, key=lambda x: x["wall_ms"])
        first = p.stdout.split("slowest jobs\n", 1)[1].splitlines()[0]
        self.assertIn(" %s  (" % slow["id"], first)
        # errors grouped by stage and message; the bad line by file:line
        typo = next(x for x in self.lines if x["id"] == "typo")
        # (#32: a number, a path, an id in the message folded, so that it groups)
        self.assertIn("1  config: %s" % re.sub(r"\bline \d+", "line N", typo["error"]["message"]), p.stdout)
        self.assertIn("%s:4: not JSON" % self.b, p.stdout)

    def peak_rss_kib(self, lines, n):
        """Peak RSS of `nsbox report --html` over @n copies of @lines."""
        path = os.path.join(self.tmp, "big-%d.jsonl" % n)
        with open(path, "w") as f:
            for i in range(n):
                d = dict(lines[i % len(lines)], id="big-%d" % i)
                f.write(json.dumps(d) + "\n")
        env = dict(os.environ)
        # ASan keeps freed blocks in a quarantine (256 MiB by default): off
        # here, so the figure is the report's own memory
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
        probe = ("import resource, subprocess, sys\n"
                 "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
                 "print(r.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
        p = subprocess.run(["/usr/bin/python3", "-c", probe, NSBOX, "report", "--html",
                            os.path.join(self.tmp, "big.html"), path],
                           stdout=subprocess.PIPE, text=True, timeout=600, env=env)
        code, rss = p.stdout.split()
        self.assertEqual(code, "0")
        os.unlink(path)
        return int(rss)

    def test_memory_does_not_grow_with_the_input(self):
        """Streaming: 20,000 lines of 4 KiB of stderr each (80 MiB) take the
        memory 1,000 take; a report that kept its lines would need 80 MiB more."""
        wrong = next(x for x in self.lines if x["id"] == "wrong")
        fat = dict(wrong, stderr=dict(wrong["stderr"], text="Traceback line\n" * 270))
        lines = [fat] + [x for x in self.lines if x["id"] != "wrong"]
        small = self.peak_rss_kib(lines, 1000)
        big = self.peak_rss_kib(lines, 20000)
        self.assertLess(big - small, 8 * 1024, "peak RSS %d KiB over 20,000 lines, %d KiB over 1,000" % (big, small))

    def test_stdin_and_order_of_files(self):
        with open(self.a) as f:
            p = self.report("-", self.b, stdin=f)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("%d jobs" % len(self.lines), p.stdout)

    def test_nothing_valid_is_an_error(self):
        bad = os.path.join(self.tmp, "bad.jsonl")
        with open(bad, "w") as f:
            f.write("not json\n[1]\n{\"id\": 1}\n")
        p = self.report(bad)
        self.assertEqual(p.returncode, 1)
        self.assertIn("no valid result or verdict line in 3 lines (3 bad)", p.stderr)
        self.assertIn("%s:2: not a JSON object" % bad, p.stdout)
        p = self.report(os.path.join(self.tmp, "missing.jsonl"))
        self.assertEqual(p.returncode, 125)
        self.assertIn("missing.jsonl", p.stderr)
        p = self.report(self.a, "--html", "x.html")
        self.assertEqual(p.returncode, 125)
        self.assertIn("options go before them", p.stderr)
        p = self.report("--html", self.a, self.a)
        self.assertEqual(p.returncode, 125)
        self.assertIn("is the input", p.stderr)

    def test_judge_verdict_files(self):
        """A class's verdicts as `nsbox judge` writes them (indented JSON, one per file)."""
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"program": {"source": "print(input())"},
                       "cases": [{"name": "echo", "stdin": "hi\n", "expect": {"stdout": {"equals": "hi\n"}}},
                                 {"name": "no", "stdin": "a\n", "expect": {"stdout": {"equals": "b\n"}}}]}, f)
        v1, v2 = os.path.join(self.tmp, "v1.json"), os.path.join(self.tmp, "v2.json")
        p = subprocess.run([NSBOX, "judge", "--result", v1, spec], stdout=subprocess.DEVNULL, timeout=120)
        self.assertEqual(p.returncode, 1)
        with open(v2, "w") as f:
            p = subprocess.run([NSBOX, "judge", "--json", spec], stdout=f, timeout=120)
        self.assertEqual(p.returncode, 1)
        with open(v1) as f:
            self.assertEqual(f.readline().strip(), "{")   # indented: not JSON Lines
        with open(v1) as f:
            verdict = json.load(f)
        page = os.path.join(self.tmp, "verdicts.html")
        p = self.report("--html", page, v1, v2)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("2 jobs (0 results, 2 verdicts), 2 failed or erred; 0 bad lines", p.stdout)
        self.assertIn("verdict      fail 2 (100.0%)", p.stdout)
        with open(page) as f:
            src = f.read()
        no = next(c for c in verdict["cases"] if c["name"] == "no")
        # a row per verdict, and once as the example of their failure group (#32)
        self.assertEqual(src.count(html.escape("case no: " + no["reason"]).replace("&#x27;", "&#39;")), 3)
        self.assertRegex(src, r'<tr class="grp-fail"><td class="num">2</td>')
        self.assertIn("<td>%s:1</td>" % html.escape(v1), src)   # no id: named by FILE:LINE

    def test_html_refuses_a_symlink(self):
        link = os.path.join(self.tmp, "link.html")
        target = os.path.join(self.tmp, "target")
        with open(target, "w") as f:
            f.write("keep")
        os.symlink(target, link)
        try:
            p = self.report("--html", link, self.a)
            self.assertEqual(p.returncode, 125)
            self.assertIn("--html", p.stderr)
            with open(target) as f:
                self.assertEqual(f.read(), "keep")
        finally:
            os.unlink(link)

    def test_outputs_and_inputs_checked_before_reading(self):
        """Review of #18: '-' twice read stdin once and the second '-' as
        empty; --html - wrote a file named '-'; --html into a missing
        directory or onto a directory was found only after every input was
        read. All refused first, 125, nothing written."""
        cwd = tempfile.mkdtemp(dir=self.tmp)
        for args, why in ((["-", "-"], "'-' (standard input) given twice"),
                          (["--html", "-", self.a], "--html -: the page goes to a file"),
                          (["--html", os.path.join(self.tmp, "missing", "r.html"), self.a],
                           "--html: cannot create"),
                          (["--html", self.tmp, self.a], "--html: '%s' is not a regular file" % self.tmp)):
            p = self.report(*args, stdin=subprocess.DEVNULL, cwd=cwd)
            self.assertEqual((p.returncode, p.stdout), (125, ""), (args, p.stderr))
            self.assertIn(why, p.stderr)
        self.assertEqual(os.listdir(cwd), [])

    def test_html_on_a_full_disk_is_left_empty(self):
        """Review of #18: a page cut by a full disk (RLIMIT_FSIZE 2 KiB here)
        was left half-written; now it is emptied, exit 125, the reason
        named."""
        import resource
        import signal

        def small_files():
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (2048, resource.RLIM_INFINITY))

        page = os.path.join(self.tmp, "full.html")
        p = self.report("--html", page, self.a, self.b, preexec_fn=small_files)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn("--html: writing", p.stderr)
        self.assertIn("(left empty): File too large", p.stderr)
        self.assertEqual(os.path.getsize(page), 0)

    def browser(self, *args, url):
        prof = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        argv = [chromium(), "--headless", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
                "--user-data-dir=" + prof]
        if os.geteuid() == 0:
            # Chromium refuses to run as root with its own sandbox on; this
            # page is ours and loads nothing, so the test runs it without.
            argv.append("--no-sandbox")
        p = subprocess.run(argv + list(args) + [url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120, env=dict(os.environ, HOME=prof))
        self.assertEqual(p.returncode, 0, p.stderr[-3000:])
        return p

    def test_html_page_in_chromium(self):
        page = os.path.join(self.tmp, "report.html")
        p = self.report("--html", page, self.a, self.b)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(page, encoding="utf-8") as f:
            src = f.read()
        # self-contained: nothing to fetch
        self.assertNotRegex(src, r"(src|href)\s*=\s*[\"']?(https?:|//)")
        self.assertNotIn("@import", src)
        self.assertNotIn("url(", src)

        dom = self.browser("--dump-dom", url="file://" + page).stdout.decode()
        n_failed = sum(failed(x) for x in self.lines)
        self.assertIn('<span id="jobs">%d</span>' % len(self.lines), dom)
        self.assertIn('<span id="failed-count">%d</span>' % n_failed, dom)
        self.assertIn('<span id="bad-count">1</span>', dom)
        for status, n in collections.Counter(x["status"] for x in self.lines if "status" in x).items():
            self.assertRegex(dom, r'id="status-%s">%s <b>%d</b>' % (status, status, n))
        rows = re.findall(r'<tr class="(?:fail|error)"', dom)
        self.assertEqual(len(rows), n_failed)
        self.assertEqual(dom.count("<script"), 1, "the hostile stderr became an element")
        self.assertNotIn("pwned", re.search(r"<title>(.*?)</title>", dom).group(1))
        self.assertIn(html.escape(HOSTILE, quote=False), dom)
        self.assertIn('<svg id="hist-wall"', dom)
        self.assertIn('<svg id="hist-mem"', dom)
        self.assertGreater(dom.count('class="bar"'), 1)
        # the filter box, given a filter in the address: only matching rows show
        dom = self.browser("--dump-dom", url="file://%s#exit%%20code%%203" % page).stdout.decode()
        shown = re.findall(r'<tr class="(?:fail|error)"( style="display: none;")?>', dom)
        self.assertEqual(len(shown), n_failed)
        self.assertEqual(sum(1 for s in shown if not s), 1)
        self.assertIn('<span id="shown">1</span>', dom)

        shot = os.path.join(self.tmp, "report.png")
        self.browser("--screenshot=" + shot, "--window-size=1200,2600", "--hide-scrollbars",
                     url="file://" + page)
        self.check_screenshot(shot)
        keep = os.environ.get("NSBOX_REPORT_SCREENSHOT")
        if keep:
            shutil.copy(shot, keep)

    # -- #32: 3000 mixed results, grouped -----------------------------------

    @staticmethod
    def mixed(n=3000):
        """n result and verdict lines: the real batch's, then synthetic ones
        whose failures repeat with what differs between two instances of the
        same failure (a path, a line number, a hex id, the output quoted)."""
        import random

        rnd = random.Random(32)
        lines = []
        for i in range(n):
            r = rnd.random()
            base = {"schema": "nsbox.result/1", "id": "job-%d" % i, "wall_ms": rnd.uniform(5, 900),
                    "peak_memory_bytes": rnd.randint(8, 120) << 20, "status": "exited", "exit_code": 1}
            if r < 0.40:
                base["stderr"] = {"text": 'Traceback (most recent call last):\n  File "/tmp/s%d/main.py", line %d\n'
                                          "SyntaxError: invalid syntax (main.py, line %d)\n" % (i, i % 40, i % 40)}
            elif r < 0.55:
                base["stderr"] = {"text": 'File "/workspace/u%d/sol.py", line %d\nZeroDivisionError: division by zero\n'
                                          % (i, i % 9)}
            elif r < 0.62:
                base.update(status="limit", limit="wall_time", stderr={"text": ""})
            elif r < 0.66:
                base.update(status="error", error={"stage": "mount", "message": "cannot mount /tmp/nsbox-%08x: EBUSY"
                                                   % rnd.getrandbits(32)})
            elif r < 0.72:
                base = {"schema": "nsbox.verdict/1", "id": "sub-%d" % i, "verdict": "fail",
                        "cases": [{"name": "adds", "verdict": "pass", "reason": "exit code 0",
                                   "result": {"status": "exited", "exit_code": 0, "wall_ms": 20}},
                                  {"name": "big", "verdict": "fail",
                                   "reason": "stdout differs at line 1: expected '%d', got '%d'" % (i, i + 1),
                                   "result": {"status": "exited", "exit_code": 0, "wall_ms": 30}}]}
            else:
                base.update(exit_code=0, stderr={"text": ""})
            lines.append(base)
        return lines

    def test_3000_mixed_results_grouped(self):
        lines = self.mixed()
        path = os.path.join(self.tmp, "mixed.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(x) + "\n" for x in lines)
        want = collections.Counter()
        for x in lines:
            if "verdict" in x:
                want["case big: stdout differs at line N: expected '\u2026', got '\u2026'"] += 1
            elif x["status"] == "error":
                want["sandbox error (mount): cannot mount <path>: EBUSY"] += 1
            elif x["status"] == "limit":
                want["stopped by the wall_time limit (raise it with --wall-time DUR)"] += 1
            elif x["exit_code"]:
                want[x["stderr"]["text"].strip().splitlines()[-1].replace("line %s)" % x["stderr"]["text"]
                     .strip().splitlines()[-1].rsplit(" ", 1)[-1][:-1], "line N)")] += 1
        n_failed = sum(want.values())
        self.assertEqual(len(want), 5, want)
        p = self.report(path)
        self.assertEqual(p.returncode, 0, p.stderr)
        text = p.stdout
        section = text[text.index("failures by reason"):]
        self.assertIn("failures by reason (%d jobs failed or erred, 5 reasons)" % n_failed, section)
        # largest first, with counts, shares and one example each
        order = re.findall(r"^ +(\d+) +([\d.]+)%  (.*?)(?:  \[\d+ erred\])?$", section, re.M)[:5]
        self.assertEqual([(int(c), k) for c, _, k in order], [(c, k) for k, c in want.most_common()])
        for c, pct, _ in order:
            self.assertAlmostEqual(float(pct), 100 * int(c) / n_failed, delta=0.06)
        self.assertEqual(section.count("e.g. "), 5)
        self.assertIn("SyntaxError: invalid syntax (main.py, line N)", section)
        # which cases fail most
        self.assertRegex(text, r"judge cases, most failed first \(2 cases\)\n +\d+ of \d+ +100\.0% failed  big\n")

        page = os.path.join(self.tmp, "mixed.html")
        p = self.report("--html", page, path)
        self.assertEqual(p.returncode, 0, p.stderr)
        dom = self.browser("--dump-dom", url="file://" + page).stdout.decode()
        groups = re.findall(r'<tr class="grp-(?:fail|error)"><td class="num">(\d+)</td>', dom)
        self.assertEqual([int(g) for g in groups], sorted(want.values(), reverse=True))
        self.assertRegex(dom, r'id="status-exited">exited <b>\d+</b> <i class="pct">[\d.]+%</i>')
        self.assertIn('<table id="cases"', dom)
        # the page uses the window: measured in the browser, the table of
        # reasons and the one of failed jobs span the width (before #32 the
        # page used about half of it)
        with open(page, encoding="utf-8") as f:
            src = f.read()
        probe = os.path.join(self.tmp, "probe.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(src.replace("</body>", "<script>document.title=['groups','failed'].map(function(i){"
                                "return Math.round(100*document.getElementById(i).getBoundingClientRect().width"
                                "/document.documentElement.clientWidth)}).join(' ')</script></body>"))
        for width in (1000, 1800):
            dom = self.browser("--dump-dom", "--window-size=%d,900" % width, url="file://" + probe).stdout.decode()
            share = [int(x) for x in re.search(r"<title>(\d+ \d+)</title>", dom).group(1).split()]
            self.assertTrue(all(x >= 90 for x in share), (width, share))
        shot = os.path.join(self.tmp, "mixed.png")
        self.browser("--screenshot=" + shot, "--window-size=1600,1000", "--hide-scrollbars", url="file://" + page)
        from PIL import Image

        im = Image.open(shot).convert("RGB")
        px = im.load()
        w, h = im.size
        # ink in the right quarter of the window (the examples column and the
        # table rules), and the red share bars of the groups
        self.assertTrue(any(px[x, y] != (255, 255, 255) for y in range(0, h, 2) for x in range(w * 3 // 4, w - 30)),
                        "nothing drawn in the right quarter: the page does not use the window")
        self.assertTrue(any(px[x, y] == (0xc0, 0x39, 0x2b) for y in range(0, h, 2) for x in range(0, w, 2)))
        keep = os.environ.get("NSBOX_REPORT_SCREENSHOT_MIXED")
        if keep:
            shutil.copy(shot, keep)

    def check_screenshot(self, path):
        from PIL import Image, ImageStat

        im = Image.open(path).convert("RGB")
        self.assertEqual(im.size, (1200, 2600))
        # not blank: the page drew text, tables and bars
        stat = ImageStat.Stat(im.convert("L"))
        self.assertGreater(stat.stddev[0], 20, "a blank (or nearly blank) screenshot")
        px = im.load()
        w, h = im.size
        ink = sum(1 for y in range(0, h, 4) for x in range(0, w, 4) if px[x, y] != (255, 255, 255))
        self.assertGreater(ink, (w // 4) * (h // 4) // 100)
        # the top has content (the title), the bottom rows are background:
        # the whole page fit, nothing was cut at the bottom edge
        top = [px[x, y] for y in range(0, 80) for x in range(0, w, 2)]
        self.assertTrue(any(p != (255, 255, 255) for p in top), "nothing drawn at the top")
        bottom = {px[x, y] for y in range(h - 40, h) for x in range(w)}
        self.assertEqual(bottom, {(255, 255, 255)}, "the page reaches the bottom edge: cut")
        # blue bars of the histograms are there
        self.assertTrue(any(px[x, y] == (0x3b, 0x7d, 0xd8) for y in range(0, h, 2) for x in range(0, w, 2)))


class JUnit(SandboxTest):
    def setUp(self):
        super().setUp()
        self.tmp = tempfile.mkdtemp(prefix="nsbox-junit-")
        os.chmod(self.tmp, 0o755)
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def nsbox_env(self, *args):
        return subprocess.run([NSBOX, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              timeout=120, env=ENV)

    def read_junit(self, path):
        """The file, checked against the minimal schema of the JUnit that CI
        viewers read (junit_min.xsd: written from the element and attribute
        list of the Jenkins JUnit plugin), then parsed with junitparser."""
        from junitparser import Error, Failure, JUnitXml, Skipped

        v = subprocess.run(["xmllint", "--noout", "--schema", XSD, path], capture_output=True, text=True)
        self.assertEqual(v.returncode, 0, v.stderr)
        xml = JUnitXml.fromfile(path)
        suites = list(xml)
        self.assertEqual(len(suites), 1)
        cases = {}
        for case in suites[0]:
            kinds = [type(r) for r in case.result]
            kind = "pass" if not kinds else {Failure: "failure", Error: "error", Skipped: "skipped"}[kinds[0]]
            self.assertIsNotNone(case.time)   # every case has one
            self.assertTrue(case.classname and "/" not in case.classname, case.classname)
            cases[case.name] = (kind, case.result[0].message if case.result else None, case.result)
            cases[(case.classname, case.name)] = cases[case.name] + (case,)
        return suites[0], cases

    def test_judge(self):
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"program": {"source": "import sys\nprint(sys.stdin.read().strip() * 2)\n"
                                             "print('<tb> & \"q\"', file=sys.stderr)\n"},
                       "limits": {"output_limit": "8"},
                       "cases": [{"name": "twice", "stdin": "ab", "expect": {"stdout": {"equals": "abab\n"}}},
                                 {"name": "wrong <&>", "stdin": "x", "expect": {"stdout": {"equals": "x\n"}}},
                                 {"name": "cut", "stdin": "0123456789",
                                  "expect": {"stdout": {"regex": "^0123"}}}]}, f)
        junit = os.path.join(self.tmp, "judge.xml")
        p = self.nsbox_env("judge", "--json", "--junit", junit, spec)
        verdict = json.loads(p.stdout)
        by_name = {c["name"]: c for c in verdict["cases"]}
        self.assertEqual([by_name[n]["verdict"] for n in ("twice", "wrong <&>", "cut")],
                         ["pass", "fail", "undetermined"])
        suite, cases = self.read_junit(junit)
        self.assertEqual((suite.tests, suite.failures, suite.errors, suite.skipped), (3, 1, 1, 0))
        # the suite is named by the spec's file name, never its host path (a
        # CI page may be the learner's; nsbox test names it by the harness
        # folder's name the same way)
        self.assertEqual(suite.name, "spec.json")
        self.assertEqual(cases["twice"][0], "pass")
        self.assertEqual(cases["wrong <&>"][0], "failure")
        # #32: the expected value ('x') is not quoted without --junit-expected
        # (a CI page may be the learner's); the reason is in the body too
        self.assertIn("expected 'x'", by_name["wrong <&>"]["reason"])
        self.assertEqual(cases["wrong <&>"][1], "stdout differs at line 1: got 'xx'")
        self.assertEqual(cases["wrong <&>"][2][0].text, "stdout differs at line 1: got 'xx'")
        with open(junit) as f:
            self.assertNotIn("expected 'x'", f.read())
        self.assertEqual(cases["cut"][0], "error")
        self.assertEqual(cases["cut"][1], by_name["cut"]["reason"])
        self.assertEqual(cases[("judge.spec", "twice")][3].classname, "judge.spec")
        # the captured streams of every case, escaped and read back whole
        # (cut at the output limit, 8 bytes)
        case = cases[("judge.spec", "wrong <&>")][3]
        self.assertEqual(case.system_err, by_name["wrong <&>"]["result"]["stderr"]["text"])
        self.assertEqual(case.system_err, '<tb> & "')
        self.assertEqual(case.system_out, "xx\n")
        self.assertEqual(cases[("judge.spec", "twice")][3].system_out, "abab\n")

        # --junit-expected: the verdict's reason as it is
        p = self.nsbox_env("judge", spec, "--junit", junit, "--junit-expected")
        suite, cases = self.read_junit(junit)
        self.assertEqual(cases["wrong <&>"][1], by_name["wrong <&>"]["reason"])

        # --fail-fast: the cases not run are skipped
        p = self.nsbox_env("judge", "--fail-fast", "--junit", junit, spec)
        self.assertEqual(p.returncode, 1, p.stderr)
        suite, cases = self.read_junit(junit)
        self.assertEqual((suite.tests, suite.failures, suite.errors, suite.skipped), (3, 1, 0, 1))

    def test_junit_expected_needs_junit(self):
        # without --junit it did nothing, silently: a teacher who meant to
        # hide (or show) expected values learns that no file is written
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"program": {"source": "print(1)"}, "cases": [{"name": "a"}]}, f)
        p = self.nsbox_env("judge", spec, "--junit-expected")
        self.assertEqual(p.returncode, 125)
        self.assertIn("nsbox: judge: --junit-expected needs --junit FILE", p.stderr)

    def test_test_command(self):
        junit = os.path.join(self.tmp, "tests.xml")
        for ws in ("workspace", "workspace-wrong"):
            p = self.nsbox_env("test", "--json", "--junit", junit, "--harness", os.path.join(COURSE, "harness"),
                               "--workspace", os.path.join(COURSE, ws))
            rep = json.loads(p.stdout)
            suite, cases = self.read_junit(junit)
            self.assertEqual(suite.tests, len(rep["tests"]))
            want = collections.Counter(t["outcome"] for t in rep["tests"])
            self.assertEqual(suite.failures, want["failed"] + want["error"])
            self.assertEqual(suite.errors, 0)
            self.assertEqual(suite.skipped, want["skipped"])
            for t in rep["tests"]:
                # #32: "test_x.py::Class::test" is the class "test_x.Class" (not the harness path)
                parts = t["name"].split("::")
                key = (".".join([parts[0][:-3]] + parts[1:-1]), parts[-1])
                kind = cases[key][0]
                self.assertEqual(kind, {"passed": "pass", "failed": "failure", "error": "failure",
                                        "skipped": "skipped"}[t["outcome"]], t)
                if t["outcome"] == "failed":
                    # message=: its first line ("..." when there is more); the body: all of it
                    first = t["message"].split("\n")[0][:300]
                    self.assertEqual(cases[key][1], first + ("..." if first != t["message"] else ""))
                    self.assertIn(t["message"], cases[key][2][0].text)
                self.assertEqual(cases[key][3].system_out, t["stdout"])
        self.assertGreater(suite.failures, 0, "workspace-wrong fails no test")
        # the suite: the harness folder's name, never its host path, even
        # given with a trailing slash (or two: it was the whole path)
        for harness in (os.path.join(COURSE, "harness"), os.path.join(COURSE, "harness") + "/",
                        os.path.join(COURSE, "harness") + "//"):
            self.nsbox_env("test", "--junit", junit, "--harness", harness,
                           "--workspace", os.path.join(COURSE, "workspace"))
            suite, cases = self.read_junit(junit)
            self.assertEqual(suite.name, "harness", harness)

    def test_undetermined_test_run_is_an_error(self):
        empty = os.path.join(self.tmp, "empty-harness")
        os.mkdir(empty)
        os.chmod(empty, 0o755)
        junit = os.path.join(self.tmp, "tests.xml")
        p = self.nsbox_env("test", "--junit", junit, "--harness", empty, "--workspace",
                           os.path.join(COURSE, "workspace"))
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        suite, cases = self.read_junit(junit)
        self.assertEqual((suite.failures, suite.errors), (0, 1))
        self.assertEqual(cases["(harness)"][0], "error")
        self.assertIn("no tests", cases["(harness)"][1])

    def test_junit_file_is_never_exposed(self):
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"program": {"source": "print(1)"},
                       "cases": [{"name": "one", "expect": {"stdout": {"equals": "1\n"}}}]}, f)
        ws = os.path.join(self.tmp, "ws")
        os.mkdir(ws)
        os.chmod(ws, 0o777)
        inside = os.path.join(ws, "judge.xml")
        p = self.nsbox_env("judge", "--workspace", ws, "--junit", inside, spec)
        self.assertEqual(p.returncode, 125)
        self.assertIn("--junit", p.stderr)
        self.assertFalse(os.path.exists(inside))
        p = self.nsbox_env("test", "--junit", os.path.join(COURSE, "workspace", "x.xml"), "--harness",
                           os.path.join(COURSE, "harness"), "--workspace", os.path.join(COURSE, "workspace"))
        self.assertEqual(p.returncode, 125)
        self.assertIn("--junit", p.stderr)
        # a symlink at the name is refused, never followed
        target = os.path.join(self.tmp, "target")
        with open(target, "w") as f:
            f.write("keep")
        link = os.path.join(self.tmp, "link.xml")
        os.symlink(target, link)
        p = self.nsbox_env("judge", "--junit", link, spec)
        self.assertEqual(p.returncode, 125)
        self.assertIn("--junit", p.stderr)
        with open(target) as f:
            self.assertEqual(f.read(), "keep")

    def test_junit_and_result_never_the_same_file(self):
        """Review of #18: --junit FILE --result FILE silently left only the
        JUnit file (the verdict written, then overwritten): refused, 125,
        before anything runs, for judge and test alike."""
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"program": {"source": "print(1)"}, "cases": [{"name": "one"}]}, f)
        same = os.path.join(self.tmp, "same.out")
        for cmd in (["judge", spec], ["test", "--harness", os.path.join(COURSE, "harness"), "--workspace",
                                      os.path.join(COURSE, "workspace")]):
            p = self.nsbox_env(cmd[0], "--junit", same, "--result", same, *cmd[1:])
            self.assertEqual((p.returncode, p.stdout), (125, ""), p.stderr)
            self.assertIn("--junit and --result name the same file", p.stderr)
            self.assertFalse(os.path.exists(same))
            # nor into a directory that is not there: refused before anything runs
            missing = os.path.join(self.tmp, "missing", "x.xml")
            p = self.nsbox_env(cmd[0], "--junit", missing, *cmd[1:])
            self.assertEqual((p.returncode, p.stdout), (125, ""), p.stderr)
            self.assertIn("--junit: cannot create '%s': No such file or directory" % missing, p.stderr)


if __name__ == "__main__":
    unittest.main()
