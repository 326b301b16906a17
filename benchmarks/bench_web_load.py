"""A bounded load test of the web table on loopback: many clients at once, and one client whose
agents search at the largest budget the server allows.

    python benchmarks/bench_web_load.py --clients 100 --seconds 30 --out docs/results/web-load

Starts ``ono-web`` on 127.0.0.1 (a free port) in a process of its own, fills its replay store
to its caps (uploads of the largest replays it keeps), then runs ``--clients`` threads for
``--seconds`` seconds (each request bounded by a 30 s timeout; the loop stops by itself): each
client deals a game against ``greedy`` and plays it to the end with random legal actions,
reading the options and the replay list between moves. Meanwhile one more client plays a game
against the server's largest search budget (``pimc:<max>``, three opponents), and every
request of the others during its games is timed apart. Prints and writes (``--out``) the
requests per second, p50/p99/max latency, errors, the latency of the others while the search
runs, and the server's resident memory (RSS) before and after, with the caps full.
Only 127.0.0.1 is ever contacted.
"""

from __future__ import annotations

import http.client
import json
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench_args import (
    at_least,
    optional_out,
    out_folder,
    parser,
    path_arg,
    run_script,
    sub_run,
)

from ono_env.checks import remove_made_dirs

HOST = "127.0.0.1"


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class Client:
    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection(HOST, port, timeout=30)

    def call(self, method: str, path: str, body=None) -> tuple[int, dict | list | None, float]:
        t = time.perf_counter()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        data = body if isinstance(body, (bytes, str)) or body is None else json.dumps(body)
        try:
            self.conn.request(method, path, body=data, headers=headers)
            r = self.conn.getresponse()
            raw = r.read()
            status = r.status
        except (OSError, http.client.HTTPException):
            self.conn.close()
            return 0, None, time.perf_counter() - t
        try:
            payload = json.loads(raw) if raw else None
        except ValueError:
            payload = None
        return status, payload, time.perf_counter() - t


def play(client: Client, opponents: list[str], rng: random.Random, record, stop: threading.Event,
         players: int = 2) -> None:
    s, view, dt = client.call("POST", "/api/games", {"rules": "basic", "num_players": players,
                                                     "opponents": opponents})
    record(s, dt)
    moves = 0
    while s == 200 and view and not view.get("finished") and not stop.is_set() and moves < 400:
        legal = view.get("legal") or []
        if not legal:
            break
        a = rng.choice(legal)
        s, view, dt = client.call("POST", f"/api/games/{view['id']}/action",
                                  {"action": a["id"] if isinstance(a, dict) else a,
                                   "move": view["move"]})
        record(s, dt)
        moves += 1
        if moves % 5 == 0:
            for path in ("/api/options", "/api/replays"):
                s2, _, dt2 = client.call("GET", path)
                record(s2, dt2)


def _stop_with_parent() -> None:
    """In the server's process before it starts (Linux): the kernel sends it SIGTERM when
    this script's process ends, even by SIGKILL, which no handler sees (prctl's
    PR_SET_PDEATHSIG)."""
    import ctypes

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def main() -> None:
    ap = parser(__doc__)
    ap.add_argument("--clients", type=int, default=100,
                    help="client threads at once, besides the search client (default 100)")
    ap.add_argument("--seconds", type=float, default=30.0,
                    help="how long the clients run (default 30)")
    ap.add_argument("--out", type=path_arg, default=None,
                    help=optional_out("load.json"))
    ap.add_argument("--budget", type=int, default=None,
                    help="the search client's pimc budget (default: the largest the server allows)")
    ap.add_argument("--uploads", type=int, default=260,
                    help="replays uploaded before the load (default 260: past the server's 200, "
                         "to fill its caps; each is replayed on upload, about 2 s at 19,000 "
                         "decisions)")
    ap.add_argument("--server-path", type=path_arg, default=None,
                    help="run the server from this source tree (PYTHONPATH), e.g. an older "
                         "checkout laid out as installed, for a before/after comparison")
    a = ap.parse_args()
    if not 1 <= a.clients <= 500:
        sys.exit(f"bench_web_load: --clients {a.clients}; allowed: 1 to 500")
    if not 1 <= a.seconds <= 600:
        sys.exit(f"bench_web_load: --seconds {a.seconds}; allowed: 1 to 600")
    if a.budget is not None:
        at_least("bench_web_load", "--budget", a.budget, 1)
    if not 0 <= a.uploads <= 1000:
        sys.exit(f"bench_web_load: --uploads {a.uploads}; allowed: 0 to 1000")
    try:
        held = a.server_path is None or (a.server_path / "ono_env" / "__init__.py").is_file()
    except OSError:   # a name too long, say
        held = False
    if not held:
        # before: any folder, and the server then ran the installed package without a word
        sys.exit(f"bench_web_load: --server-path {str(a.server_path)!r}; allowed: a folder "
                 f"holding a package ono_env/ laid out as installed")
    if a.out:
        out_folder(a.out, "bench_web_load", writes=("load.json",))
    import socket
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]
    import os
    env, cwd = dict(os.environ), None
    if a.server_path is not None:
        # python -c and -m look in their working folder first: run there too (before: from
        # the repository's root, its own ono_env/ ran, whatever --server-path named)
        env["PYTHONPATH"], cwd = str(a.server_path), str(a.server_path)
    # the package the server imports, as the results say it (--server-path's, or installed)
    server_package = sub_run(
        "bench_web_load",
        [sys.executable, "-c", "import ono_env, os; print(os.path.dirname(ono_env.__file__))"],
        env=env, cwd=cwd, stdout=subprocess.PIPE, text=True).stdout.strip()
    if a.server_path is not None and (
            Path(server_package).resolve() != (a.server_path / "ono_env").resolve()):
        sys.exit(f"bench_web_load: --server-path {str(a.server_path)!r}: the server would import "
                 f"ono_env from {server_package!r}; allowed: a folder whose ono_env/ Python "
                 f"imports first")
    server = subprocess.Popen([sys.executable, "-m", "ono_env.apps.web.server", "--port", str(port)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                              cwd=cwd,
                              preexec_fn=_stop_with_parent if sys.platform == "linux" else None)
    # a run stopped by SIGTERM or SIGHUP still stops its server (the finally below): Python
    # runs no finally on those signals unless a handler turns them into an exception
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda num, frame: sys.exit(f"bench_web_load: stopped by signal {num}"))
    try:
        for _ in range(3000):   # a tree without prebuilt kernels compiles them first
            try:
                if Client(port).call("GET", "/api/options")[0] == 200:
                    break
            except OSError:
                pass
            if server.poll() is not None:
                sys.exit(f"bench_web_load: the server exited (rc {server.returncode}) before it "
                         f"answered: {server.stderr.read().strip()[-400:]}")
            time.sleep(0.1)
        else:
            sys.exit("bench_web_load: the server did not answer /api/options in 300 s")
        opts = Client(port).call("GET", "/api/options")[1]
        most = opts.get("search_limits", {}).get("budget", 512)   # older servers: 512
        if a.budget is not None and a.budget > most:   # every search request would be refused
            remove_made_dirs()   # the --out folder made for this run
            sys.exit(f"bench_web_load: --budget {a.budget}; allowed: at most {most}, the "
                     f"largest search budget this server allows")
        budget = a.budget or most
        rss0 = rss_mb(server.pid)
        # fill the replay store: the largest replays the server keeps, up to its caps
        from ono_env.arena import run_arena
        rep = run_arena(["random", "random"], "classic", 2, 16, 0, rating=False, record=16,
                        max_decisions=19_000)   # long replays, under the server's 20,000 decisions
        texts = sorted((r.to_json() for r in rep.replays), key=len)[-8:]
        print(f"uploading {a.uploads} replays of {min(map(len, texts)):,} to {max(map(len, texts)):,} "
              f"bytes", file=sys.stderr)
        c = Client(port)
        uploads = [c.call("POST", "/api/replays", texts[k % len(texts)])[0] for k in range(a.uploads)]
        rss_full = rss_mb(server.pid)
        lat: list[float] = []
        during: list[float] = []
        errors: dict[str, int] = {}
        lock = threading.Lock()
        searching = threading.Event()
        stop = threading.Event()

        def record(status: int, dt: float) -> None:
            with lock:
                lat.append(dt)
                if searching.is_set():
                    during.append(dt)
                if status >= 500 or status == 0:
                    errors[str(status)] = errors.get(str(status), 0) + 1

        def worker(k: int) -> None:
            rng = random.Random(k)
            cl = Client(port)
            while not stop.is_set():
                play(cl, ["greedy"], rng, record, stop)

        search_times: list[float] = []
        refusals: list[int] = []

        def searcher() -> None:
            rng = random.Random(-1)
            cl = Client(port)
            while not stop.is_set():
                searching.set()
                play(cl, [f"pimc:{budget}"] * 3, rng,
                     lambda s, dt: (search_times.append(dt), refusals.append(s == 400)), stop,
                     players=4)
                searching.clear()

        threads = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(a.clients)]
        threads.append(threading.Thread(target=searcher, daemon=True))
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        time.sleep(a.seconds)
        stop.set()
        for t in threads:
            t.join(timeout=35)
        wall = time.perf_counter() - t0
        rss1 = rss_mb(server.pid)
        search_refused = sum(refusals)
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP):   # a second signal must not cut this short
            signal.signal(sig, signal.SIG_IGN)
        server.terminate()
        try:
            _, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:   # it did not stop on SIGTERM
            server.kill()
            _, err = server.communicate()
    lat.sort()
    during.sort()

    def q(xs, p):
        return 1000 * xs[min(len(xs) - 1, int(p * len(xs)))] if xs else float("nan")

    out = {"clients": a.clients, "seconds": round(wall, 1), "requests": len(lat),
           "requests_per_second": round(len(lat) / wall, 1), "p50_ms": round(q(lat, 0.5), 1),
           "p99_ms": round(q(lat, 0.99), 1), "max_ms": round(q(lat, 1.0), 1), "errors": errors,
           "search_budget": f"pimc:{budget}", "search_requests": len(search_times),
           "search_refused": search_refused,
           "search_p50_ms": round(q(sorted(search_times), 0.5), 1),
           "others_during_search": len(during), "others_during_search_p99_ms": round(q(during, 0.99), 1),
           "others_during_search_max_ms": round(q(during, 1.0), 1),
           "replay_uploads": a.uploads, "replay_uploads_ok": uploads.count(200), "rss_mb_start": round(rss0, 1),
           "rss_mb_caps_full": round(rss_full, 1), "rss_mb_end": round(rss1, 1),
           "server_log_tracebacks": err.count("Traceback"),
           "server_package": server_package}
    print(json.dumps(out, indent=1))
    if a.out:
        (a.out / "load.json").write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    run_script("bench_web_load", main)
