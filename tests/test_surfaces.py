"""Surfaces under bad input: one text check for labels and names, replays kept within bytes,
browser labels that are names and never paths, models checked by what they compute, paths and
addresses checked before any work, one error shape per surface, and the core's last refusals."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
from fastapi.testclient import TestClient

from ono_env.agents.learned import (
    MAX_OUTPUT,
    PolicyNet,
    load_agent,
    read_model,
    shipped_models,
    write_model,
)
from ono_env.apps.arena_cli import main as arena_main
from ono_env.apps.web.server import Replays, SMALL_BODY, create_app
from ono_env.apps.web.server import main as web_main
from ono_env.apps.web.table import Refused, WEB_MAX_BUDGET, WEB_MAX_MS, search_label
from ono_env.arena import check_ray_address, read_arena_json, run_arena
from ono_env.checks import check_input_file, check_text
from ono_env.replay import Replay


@pytest.fixture(scope="module")
def client():
    return TestClient(create_app())


def a_replay(n: int = 1, seed: int = 0) -> Replay:
    res = run_arena(["greedy", "random"], "basic", 2, 4, seed, rating=False, record=n)
    return res.replays[0]


# ---- one text check -----------------------------------------------------------------------
@pytest.mark.parametrize("value, fragment", [("\ud800", "lone surrogate"), ("x" * 201, "201 characters"),
                                             ("", "0 characters"), (7, "(int)"), ("a\nb", "control")])
def test_the_text_check_names_the_field(value, fragment):
    with pytest.raises(ValueError, match="label") as e:
        check_text("label", value)
    assert fragment in str(e.value)


def test_a_lone_surrogate_label_is_refused_and_the_list_keeps_working(client):
    d = json.loads(a_replay().to_json())
    d["players"][0] = "\ud800"
    r = client.post("/api/replays", content=json.dumps(d),
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and "players[0]" in r.json()["error"]
    assert client.get("/api/replays").status_code == 200
    r = client.post("/api/games", content=json.dumps({"rules": "basic", "options": {"name": "\ud800"},
                                                      "opponents": ["greedy"], "num_players": 2}),
                    headers={"content-type": "application/json"})
    assert r.status_code == 400 and "'name'" in r.json()["error"]
    r = client.post("/api/games", json={"rules": "basic", "options": {"name": "x" * 60_000},
                                        "opponents": ["greedy"], "num_players": 2})
    assert r.status_code == 400 and "60,000 characters" in r.json()["error"]
    r = client.post("/api/games", json={"rules": "basic", "options": {"name": "x" * 1_000_000},
                                        "opponents": ["greedy"], "num_players": 2})
    assert r.status_code == 413 and "at most 65536" in r.json()["error"]   # a game's body


def test_replays_are_kept_within_a_byte_budget():
    r = a_replay()
    size = len(r.to_json().encode())
    kept = Replays(limit=100, max_bytes=3 * size)
    ids = [kept.add(r, f"r{k}") for k in range(5)]
    assert [x["id"] for x in kept.listing()] == ids[:1:-1] and kept.bytes == 3 * size
    with pytest.raises(Refused, match="keeps at most"):
        Replays(max_bytes=size - 1).add(r, "big")


def test_uploads_push_out_only_uploads_and_an_upload_sent_again_is_the_same(tmp_path):
    # before: 200 uploads (of one small file) dropped every game the others had saved, and
    # each upload of the same text was kept again
    r = a_replay()
    kept = Replays(limit=3)
    saved = [kept.add(r, f"game {k}") for k in range(2)]
    first = kept.add(r, "uploaded", "upload")
    assert kept.add(r, "uploaded", "upload") == first and kept.count("upload") == 1
    other = a_replay(seed=1)
    uploads = [kept.add(other if k % 2 else a_replay(seed=k + 2), "uploaded", "upload")
               for k in range(5)]
    assert all(kept.has(x) for x in saved) and kept.count("saved") == 2
    assert kept.count("upload") == 3 and not kept.has(first)
    assert uploads[1] == uploads[3] and kept.has(uploads[3])   # sent again: the newest
    with pytest.raises(ValueError, match="replay kind 'other'; allowed: folder, saved, upload"):
        kept.add(r, "x", "other")
    # a --replays folder given twice (or by another path) is listed once
    import io
    r.save(tmp_path / "a.json")
    log = io.StringIO()
    app = create_app(replay_dirs=[str(tmp_path), str(tmp_path), str(tmp_path / ".")], log=log)
    assert [x["title"] for x in TestClient(app).get("/api/replays").json()] == ["a.json"]
    assert log.getvalue().count("names a folder given before") == 2


def test_a_kept_replay_is_held_as_its_compressed_text_not_as_objects():
    """Before: the server held each replay as Python objects, three to five times its JSON
    text, while its limits counted the text: 57 uploads within the 256 MiB of text took the
    server from 195 to about 1,050 MB."""
    import gc
    import weakref

    r = a_replay()
    text = r.to_json()
    kept = Replays()
    rid = kept.add(r, "one")
    entry = kept.listing()[0]
    gone = weakref.ref(r)
    del r
    gc.collect()
    assert gone() is None                                  # the server holds no Replay object
    assert kept.text(rid) == text and kept.get(rid).to_json() == text
    assert entry["id"] == rid and entry["title"] == "one" and kept.bytes == len(text.encode())
    assert len(kept._items[rid].packed) < len(text)        # compressed
    with pytest.raises(Refused, match="no replay"):
        kept.check("nosuch")


def test_a_replay_folder_past_the_cap_is_noted_and_forged_winners_skipped(tmp_path):
    import io
    r = a_replay()
    for k in range(3):
        r.save(tmp_path / f"r{k}.json")
    d = json.loads(r.to_json())
    d["result"]["winner"] = 1 - d["result"]["winner"]
    (tmp_path / "forged.json").write_text(json.dumps(d))
    log = io.StringIO()
    app = create_app(replay_dirs=[str(tmp_path)], log=log)
    titles = [x["title"] for x in TestClient(app).get("/api/replays").json()]
    assert "forged.json" not in titles and "forged.json skipped" in log.getvalue()
    log = io.StringIO()
    create_app(replay_dirs=[str(tmp_path)], log=log, max_replays=2)
    assert "holds 4 replay files; the server keeps 2" in log.getvalue()


# ---- browser labels are names --------------------------------------------------------------
@pytest.mark.parametrize("label", ["pimc:a/b.safetensors", "pimc:../x", "pimc:", "pimc:1e9",
                                   f"pimc:{WEB_MAX_BUDGET + 1}", "pimc:60000ms", "ismcts:0",
                                   # before: past here, then refused by the agent's parser
                                   # naming its own limits (1,000,000), the label twice
                                   "pimc:01", "ismcts:0512", "pimc:00.5ms"])
def test_search_labels_past_the_limits_or_naming_paths_are_refused(client, label, tmp_path):
    with pytest.raises(Refused):
        search_label(label)
    r = client.post("/api/games", json={"rules": "basic", "num_players": 2, "opponents": [label]})
    error = r.json()["error"]
    assert r.status_code == 400 and "allowed" in error and error.count(repr(label)) == 1
    assert "1000000" not in error and "1,000,000" not in error


@pytest.mark.parametrize("label, why", [
    ("pimc:1.5", "is not a whole number of worlds or a time in ms"),
    ("pimc:-1", "is not a whole number of worlds or a time in ms"),
    ("ismcts:abc", "is not a whole number of worlds or a time in ms"),
    ("pimc:a/b.safetensors", "is not a whole number of worlds or a time in ms"),
    ("pimc:1000000000", "is past this server's limit"), ("pimc:01", "has a leading zero"),
    ("pimc:1.1234567ms", "has more than 6 decimals"), ("pimc:00.5ms", "has a leading zero")])
def test_a_search_name_with_a_bad_budget_is_told_what_is_wrong_with_it(label, why):
    # before: "not a search agent label", of a name that is one
    with pytest.raises(Refused, match=rf"^agent '{re.escape(label)}': the budget {re.escape(why)}; "
                                      rf"allowed: a search agent"):
        search_label(label)


def test_the_server_states_its_search_limits(client):
    limits = client.get("/api/options").json()["search_limits"]
    assert limits == {"budget": WEB_MAX_BUDGET, "ms": 1000.0}
    assert search_label(f"pimc:{WEB_MAX_BUDGET}") == ("pimc", str(WEB_MAX_BUDGET))


def test_a_model_named_like_an_agent_is_offered_under_its_file_name_or_refused(tmp_path):
    # a file named as an agent plays under its whole file name (model_label), so it is
    # offered so; a copy of a shipped policy is that agent, offered once
    # (test_web.py::test_a_shipped_policys_own_file_or_a_copy_is_that_agent_offered_once)
    from fastapi.testclient import TestClient
    model = tmp_path / "pimc.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], model)
    budgeted = tmp_path / "pimc:8.safetensors"   # before: refused as taken by pimc
    shutil.copy(shipped_models()["ppo-basic-2p"], budgeted)
    offered = TestClient(create_app(models=[str(model), str(budgeted)])).get(
        "/api/options").json()["agents"]
    assert "pimc.safetensors" in offered and "pimc:8.safetensors" in offered
    assert offered.count("pimc") == 1
    copy = tmp_path / "ppo-basic-2p.safetensors"
    shutil.copy(shipped_models()["ppo-basic-2p"], copy)
    offered = TestClient(create_app(models=[str(copy)], log=io.StringIO())).get(
        "/api/options").json()["agents"]
    assert offered.count("ppo-basic-2p") == 1 and "ppo-basic-2p.safetensors" not in offered


# ---- a model is checked by what it computes ---------------------------------------------------
def overflowing(tmp_path: Path, how: str) -> Path:
    meta, net = read_model(shipped_models()["ppo-basic-2p"])
    layers = [(w.copy(), b.copy()) for w, b in net.layers]
    scale = net.scale.copy()
    if how == "logits":
        layers[-1][1][:] = 3e38
        layers[-1][1][::2] = -3e38
    else:
        scale[:] = 1e-45
    path = tmp_path / f"{how}.safetensors"
    from safetensors.numpy import save_file

    from ono_env.agents.learned import META_KEY
    bad = PolicyNet(scale, layers, net.activation, net.value_layers)   # write_model would refuse
    save_file(bad.tensors(), str(path), metadata={META_KEY: json.dumps(meta)})
    with pytest.raises(ValueError, match="damaged model"):
        write_model(tmp_path / "again.safetensors", bad, meta)
    return path


@pytest.mark.parametrize("how", ["logits", "scale"])
def test_a_model_whose_outputs_overflow_is_refused_with_its_name(tmp_path, how, capsys):
    path = overflowing(tmp_path, how)
    # a tiny scale makes the observation infinite and the logits NaN, which the message
    # says (it gave the largest of the other logits)
    found = r"\(largest 3e\+38\)" if how == "logits" else r"\(NaN\)"
    with pytest.raises(ValueError, match=rf"{how}.safetensors.*not finite numbers within \+-1e\+06 {found}"):
        load_agent(path, "basic")
    assert arena_main([str(path), "greedy", "--rules", "basic", "--players", "2",
                       "--games", "4", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{how}.safetensors" in err and "damaged model" in err
    with pytest.raises(ValueError, match="damaged model"):
        create_app(models=[str(path)])


def test_every_shipped_model_passes_the_output_check():
    for path in shipped_models().values():
        _meta, net = read_model(path)
        assert np.abs(net(np.zeros((1, net.observation_size), np.float32))).max() < MAX_OUTPUT


def test_replay_writers_refuse_numbers_the_reader_refuses():
    r = a_replay()
    r.thinking[0] = {"agent": "x", "probs": {}, "value": float("nan")}
    with pytest.raises(ValueError):
        r.to_json()


# ---- paths and addresses ------------------------------------------------------------------------
@pytest.fixture
def fifo(tmp_path):
    p = tmp_path / "fifo"
    os.mkfifo(p)
    return p


def test_links_in_a_loop_and_to_nothing_are_named_so(tmp_path, capsys):
    """Before: a file read through a link in a loop said "Too many levels of symbolic links"
    (ono-export, reading a model), and --out a link to nothing "cannot create the folder:
    File exists"."""
    from ono_env.checks import check_output_dir

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    for name in ("a", "gone"):
        with pytest.raises(ValueError, match=rf"^cannot read thing '.*{name}': a symbolic link "
                                             rf"that leads to no file \(a loop, or its target is "
                                             rf"gone\)$"):
            check_input_file(tmp_path / name, "thing", 100)
        with pytest.raises(ValueError, match=rf"^--out: '.*{name}' is a symbolic link that leads to "
                                             rf"no folder \(a loop, or its target is gone\); "
                                             rf"allowed: a folder, or a new name$"):
            check_output_dir(tmp_path / name, "--out")
    assert not (tmp_path / "nowhere").exists()
    # a link in a loop on the way: said so, not "no such file" nor the system's words
    with pytest.raises(ValueError, match=r"^cannot read thing '.*a/x': a symbolic link on its "
                                         r"path leads round in a loop$"):
        check_input_file(tmp_path / "a" / "x", "thing", 100)
    with pytest.raises(ValueError, match=r"^--out: cannot create the folder '.*a/x': a symbolic "
                                         r"link on its path leads round in a loop$"):
        check_output_dir(tmp_path / "a" / "x", "--out")
    with pytest.raises(ValueError, match=r"^--out: cannot create the folder '.*gone/x': '.*gone' "
                                         r"on its path is a symbolic link that leads to no file"):
        check_output_dir(tmp_path / "gone" / "x", "--out")
    from ono_env.train.export import main as export_main
    assert export_main([str(tmp_path / "a"), str(tmp_path / "x.safetensors")]) == 2
    assert "a symbolic link that leads to no file" in capsys.readouterr().err


def test_fifos_devices_and_folders_are_never_read(fifo, tmp_path, capsys):
    for what in (fifo, Path("/dev/zero"), tmp_path):
        with pytest.raises(ValueError, match=r"folder|not a regular file"):
            check_input_file(what, "thing", 100)
    from ono_env.train.export import main as export_main
    assert export_main([str(fifo), str(tmp_path / "x.safetensors")]) == 2
    assert "not a regular file" in capsys.readouterr().err
    for bad in (fifo, "/dev/zero"):
        assert arena_main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "4",
                           "--mirrored", "--paired-with", str(bad), "--no-progress"]) == 2
        assert "not a regular file" in capsys.readouterr().err
    for bad in (fifo, tmp_path):
        with pytest.raises(ValueError, match=r"replay file .*(not a regular file|folder)"):
            Replay.load(bad)


def test_export_into_a_folder_leaves_no_stray_file(tmp_path, capsys):
    from ono_env.train.export import main as export_main
    dest = tmp_path / "out.safetensors"
    dest.mkdir()
    assert export_main([str(shipped_models()["ppo-basic-2p"]), str(dest)]) == 2
    assert "is a folder" in capsys.readouterr().err and list(tmp_path.iterdir()) == [dest]


def test_a_damaged_arena_json_is_refused_not_printed_as_nan(tmp_path, capsys):
    out = tmp_path / "run"
    assert arena_main(["greedy", "random", "--rules", "basic", "--players", "2", "--games", "8",
                       "--mirrored", "--no-progress", "--no-rating", "--out", str(out)]) == 0
    data = read_arena_json(out)
    for value in (7.0, float("nan")):
        d = json.loads(json.dumps(data))
        d["per_deal"]["greedy"]["share"][0] = value
        (out / "arena.json").write_text(json.dumps(d))
        assert arena_main(["color", "random", "--rules", "basic", "--players", "2", "--games", "8",
                           "--mirrored", "--no-progress", "--no-rating",
                           "--paired-with", str(out)]) == 2
        err = capsys.readouterr().err
        assert "per_deal of 'greedy'" in err and "nan%" not in err and "700" not in err


def test_output_folders_are_checked_before_any_game(tmp_path, capsys):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert arena_main(["greedy", "random", "--record", "2", str(afile / "sub"), "--games", "4",
                       "--rules", "basic", "--players", "2", "--no-progress"]) == 2
    assert "--record: cannot create the folder" in capsys.readouterr().err
    assert arena_main(["greedy", "random", "--record", "0", str(tmp_path / "r")]) == 2
    assert "--record N DIR: N 0 is out of range" in capsys.readouterr().err
    from ono_env.apps.play import main as play_main
    assert play_main(["greedy", "--rules", "basic", "--players", "2",
                      "--replay", str(afile / "g.json")]) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_a_plan_far_beyond_the_games_asked_is_refused(capsys, monkeypatch):
    import ono_env.game as G

    assert arena_main(["random"] * 20 + ["--players", "10", "--games", "1"]) == 2
    err = capsys.readouterr().err
    assert "1 game would be 1,847,560" in err and "ask for at least 184,756 games" in err
    # past the cap: the largest whole plan under it (before: "at least 10,161,580", already
    # passed by the 100,000,000 asked)
    monkeypatch.setattr(G, "available_memory", lambda: None)   # memory not known
    assert arena_main(["random"] * 20 + ["--players", "10", "--games", "100000000"]) == 2
    err = capsys.readouterr().err
    assert ("100,000,000 games would be 101,615,800" in err
            and "ask for at most 99,768,240 games (100,000,000 in all at most)" in err), err
    # and within the memory free, a whole number of rounds (before: the cap's count, which
    # the memory check then refused): 20 GiB hold 20,889,918 games of 1,028 bytes at 10
    # players, 11 rounds of 1,847,560
    monkeypatch.setattr(G, "available_memory", lambda: 20 << 30)
    assert arena_main(["random"] * 20 + ["--players", "10", "--games", "100000000"]) == 2
    err = capsys.readouterr().err
    assert ("ask for at most 20,323,160 games (100,000,000 in all at most, the most this "
            "machine's free memory holds)" in err), err


@pytest.mark.parametrize("address, fragment", [("127.0.0.1:1", "cannot connect"),
                                               ("ray://127.0.0.1:1", "cannot connect"),
                                               ("no such:1", "allowed: local"),
                                               ("host:99999", "port 99999 is out of range; allowed: a port from 1")])
def test_ray_addresses_are_checked_and_bounded_in_time(address, fragment):
    import time
    t = time.perf_counter()
    with pytest.raises(ValueError, match=fragment):
        check_ray_address(address, reach=True)
    assert time.perf_counter() - t < 10


def test_a_port_that_does_not_speak_grpc_is_refused_in_bounded_time(monkeypatch):
    """Before: TCP alone was checked, and ray.init retried for about 12 minutes against a
    server that answers there in another protocol (here: one that accepts and says nothing)."""
    import socket
    import time

    import ono_env.arena.distributed as D

    monkeypatch.setattr(D, "RAY_CONNECT_SECONDS", 1.0)
    # on every interface: Ray reads 127.0.0.1 as this machine's network address, checked too
    with socket.create_server(("0.0.0.0", 0)) as server:
        port = server.getsockname()[1]
        t = time.perf_counter()
        with pytest.raises(ValueError, match=rf"^ray_address=127.0.0.1:{port}: a server answers "
                                             r"there but not as a Ray cluster does \(no gRPC "
                                             r"handshake within 1 s\)"):
            check_ray_address(f"127.0.0.1:{port}", reach=True)
        assert time.perf_counter() - t < 5
        # a head asked for over TLS: a plain handshake would fail where Ray's succeeds
        monkeypatch.setenv("RAY_USE_TLS", "1")
        assert check_ray_address(f"127.0.0.1:{port}", reach=True) == f"127.0.0.1:{port}"


@pytest.mark.parametrize("proxy", [None, "http://127.0.0.1:1"])
def test_a_grpc_server_passes_the_reach_check(proxy, monkeypatch):
    """With an http_proxy in the environment too: Ray's channels go straight to the address
    (before: the check went through the proxy and refused a head that was there)."""
    grpc = pytest.importorskip("grpc")
    if proxy is not None:
        for name in ("http_proxy", "https_proxy", "grpc_proxy"):
            monkeypatch.setenv(name, proxy)
        for name in ("no_proxy", "NO_PROXY", "no_grpc_proxy"):   # else 127.0.0.1 may skip it
            monkeypatch.delenv(name, raising=False)
    from concurrent.futures import ThreadPoolExecutor

    server = grpc.server(ThreadPoolExecutor(max_workers=1))
    port = server.add_insecure_port("0.0.0.0:0")   # where Ray reads 127.0.0.1 as well
    server.start()
    try:
        assert check_ray_address(f"127.0.0.1:{port}", reach=True) == f"127.0.0.1:{port}"
        assert check_ray_address(f"ray://127.0.0.1:{port}", reach=True) == f"ray://127.0.0.1:{port}"
    finally:
        server.stop(None)


@pytest.mark.parametrize("argv, message", [
    (["--ray", "no such:1"], "--ray 'no such:1'; allowed: local"),
    (["--ray", "127.0.0.1:1"], "--ray 127.0.0.1:1: cannot connect"),
    (["--ray", "--record", "1", "{tmp}/replays"], "--record is not available with --ray"),
])
def test_ono_arena_checks_ray_before_any_game_and_names_the_flag(argv, message, tmp_path, capsys):
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert arena_main(["greedy", "random", "--players", "2", "--games", "2", "--no-progress",
                       *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ono-arena: error: ") and "\n" not in err and message in err, err
    assert not (tmp_path / "replays").exists()


def test_ono_arena_counts_the_seats_before_it_reaches_for_ray(capsys, monkeypatch):
    """Before: --ray was connected to (seconds, or Ray's 20 tries) before the agents were
    found too few for the table."""
    import ono_env.apps.arena_cli as A

    def no_ray(address):
        raise AssertionError("Ray reached before the seats were counted")

    monkeypatch.setattr(A, "check_ray_flag", no_ray)
    assert arena_main(["greedy", "random", "--players", "4", "--ray", "auto"]) == 2
    assert "2 agents for 4 players: give at least 4" in capsys.readouterr().err


def test_a_bare_ray_flag_that_took_an_agents_name_says_so(capsys):
    """Before: '--ray random greedy' read 'random' as the address, and the error was about the
    agents left ("1 agent for 2 players", "give an AGENT to benchmark")."""
    from ono_env.apps.bench_cli import main as bench_main
    for run, argv, word in ((arena_main, ["--ray", "random", "greedy", "--players", "2"], "random"),
                            (bench_main, ["--ray", "greedy"], "greedy")):
        assert run(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(f"--ray {word!r}; allowed: local (a new local Ray), auto, host:port "
                            f"or ray://host:port; if it is an agent's name, a bare --ray took "
                            f"it as its address: write --ray local, or put --ray after the "
                            f"agents"), err


def test_bench_agent_refuses_workers_it_cannot_use():
    """Before: workers > 1 with ray_address or with an agent object ran one worker, silently."""
    from ono_env.agents import make_agent
    from ono_env.arena.suite import bench_agent
    with pytest.raises(ValueError, match=r"^workers = 2 and ray_address: Ray spreads"):
        bench_agent("greedy", tables=["basic-2p"], deals=2, workers=2, ray_address="local")
    with pytest.raises(ValueError, match=r"^workers = 3 with an agent object: each worker "):
        bench_agent(make_agent("greedy", "basic"), tables=["basic-2p"], deals=2, workers=3)


def test_environment_variables_are_checked_by_every_console_script(monkeypatch, capsys):
    monkeypatch.setenv("ONO_ENV_PREBUILT", "off")
    assert web_main(["--port", "0"]) == 2
    assert "ONO_ENV_PREBUILT='off'; allowed: 0 or 1" in capsys.readouterr().err
    assert arena_main(["greedy", "random"]) == 2
    assert "ONO_ENV_PREBUILT" in capsys.readouterr().err


# ---- one error shape ------------------------------------------------------------------------------
def test_routing_and_host_errors_are_json(client):
    r = client.get("/api/nothing")
    assert r.status_code == 404 and "no such page" in r.json()["error"]
    r = client.delete("/api/replays")   # the allowed methods named, in the header too
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD, POST"
    assert r.json()["error"] == "DELETE /api/replays: method not allowed here; allowed: GET, HEAD, POST"
    assert client.head("/").status_code == 200   # before: 405
    r = client.post("/static/app.js")   # the static files' own Allow stands (no empty one)
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
    assert r.json()["error"].endswith("method not allowed here; allowed: GET, HEAD")
    big = b"[" * (SMALL_BODY + 1)   # a method or path no route takes: that, not the size
    r = client.put("/api/replays", content=big)   # (before: 413, "at most 65536")
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD, POST"
    assert client.put("/api/nothing", content=big).status_code == 404
    r = client.post("/static/app.js", content=big)   # the static files take GET and HEAD
    assert r.status_code == 405 and r.headers["allow"] == "GET, HEAD"
    assert client.post("/api/games", content=big).status_code == 413   # a route: the size
    hosts = TestClient(create_app(allowed_hosts=["127.0.0.1"]), base_url="http://evil.example")
    r = hosts.get("/api/options")
    assert r.status_code == 400 and "is not served here" in r.json()["error"]


# ---- the core -------------------------------------------------------------------------------------
def test_positions_the_engine_cannot_reach_are_refused():
    from ono_env.game import VecGame
    g = VecGame("basic", 1, seed=0, max_decisions=50)
    d = g.to_dict(0)
    live = dict(d, decisions=60)
    with pytest.raises(ValueError, match="max_decisions=50"):
        g.set_position(0, live)
    pending = dict(d, phase="pending", pending_draw=2)
    top = pending["discard"][-1]
    if top.endswith("+2") or top == "W+4":
        pending["discard"] = pending["discard"][:-1] + ["R5"]
    with pytest.raises(ValueError, match="phase 'pending' on the top card"):
        g.set_position(0, pending)


def test_pettingzoo_last_after_every_agent_is_done():
    from ono_env import ono_v0
    env = ono_v0.env(rules="basic", num_players=2)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    while env.agents:
        obs, _, term, trunc, _ = env.last()
        env.step(None if term or trunc else int(rng.choice(np.flatnonzero(obs["action_mask"]))))
    with pytest.raises(RuntimeError, match="every agent is done"):
        env.last()


def test_the_vector_env_takes_a_numpy_seed():
    from ono_env.envs.gym_vector import OnoVectorEnv
    v = OnoVectorEnv(4, "basic", 2)
    a, _ = v.reset(seed=np.int64(3))
    b, _ = v.reset(seed=3)
    assert (a == b).all()


# ---- no client holds the server ---------------------------------------------------------------
@contextlib.contextmanager
def live_server(app):
    """``app`` served by uvicorn on a free loopback port, in a thread: yields ``call(method,
    path, body=None, timeout=120) -> (status, JSON answer)`` and the port."""
    import http.client
    import socket
    import threading
    import time

    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    from ono_env.apps.web.server import server_config
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port, log_level="warning"))
    server.install_signal_handlers = lambda: None
    threading.Thread(target=server.run, daemon=True).start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)

    def call(method, path, body=None, timeout=120):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request(method, path, body=None if body is None else json.dumps(body),
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        return r.status, json.loads(r.read())

    try:
        yield call, port
    finally:
        server.should_exit = True


def test_other_clients_are_answered_while_a_game_searches_at_the_largest_budget():
    """A real server on loopback: one client's three search agents think at the largest
    time budget the server allows (a second a decision: the window is seconds, whatever the
    machine's speed) while another client asks for the options, repeatedly."""
    import threading
    import time

    with live_server(create_app()) as (call, _port):
        status, view = call("POST", "/api/games", {"rules": "classic", "num_players": 4, "seed": 3,
                                                   "opponents": [f"pimc:{WEB_MAX_MS:g}ms"] * 3})
        assert status == 200
        searched = {}

        def search() -> None:   # the human's move: then three agents search in turn
            t = time.perf_counter()
            searched["status"], _ = call("POST", f"/api/games/{view['id']}/action",
                                         {"action": view["legal"][0]["id"], "move": view["move"]})
            searched["seconds"] = time.perf_counter() - t

        worker = threading.Thread(target=search)
        worker.start()
        served = 0   # other requests answered while the search still ran
        time.sleep(0.05)
        while worker.is_alive() and served < 5:
            assert call("GET", "/api/options", timeout=60)[0] == 200
            served += worker.is_alive()
        worker.join()
        assert searched["status"] == 200
        # a stalled server answers the first only after the search, and none after it
        assert served == 5, (served, searched)


def _held_search(monkeypatch):
    """``(entered, released, request)``: the server's agent "pimc:1" (a search agent: a
    client's deals wait in turn, and are given up should it hang up) plays as greedy once
    ``released`` is set, setting ``entered`` as it starts to think; ``request``, a new game's
    raw HTTP request in which it plays first."""
    import threading

    from ono_env.apps.web import server
    from ono_env.game import VecGame
    from ono_env.rules import RuleSet

    entered, released = threading.Event(), threading.Event()
    factory = server.default_agent_factory

    class Held:   # "pimc:1" (a search agent: the client's deals wait in turn) plays as greedy
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def act(self, *args, **kwargs):
            entered.set()
            released.wait(60)
            return self.inner.act(*args, **kwargs)

    def held_factory(rules, allowed, models=None):
        build = factory(rules, allowed, models)
        return lambda name: Held(build("greedy")) if name == "pimc:1" else build(name)
    monkeypatch.setattr(server, "default_agent_factory", held_factory)
    rules = RuleSet.preset("basic", num_players=2)
    seed = next(s for s in range(100) if VecGame(rules, 1, seed=s).current_player[0] == 0)
    body = json.dumps({"rules": "basic", "num_players": 2, "opponents": ["pimc:1"],
                       "seat": 1, "seed": seed}).encode()   # the agent plays first
    request = (b"POST /api/games HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
               b"application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
    return entered, released, request


def _counting(app, ended):
    """``app``, appending to ``ended`` as each request ends (True for an HTTP one)."""
    async def counted(scope, receive, send):
        try:
            await app(scope, receive, send)
        finally:
            ended.append(scope["type"] == "http")
    return counted


def test_work_queued_for_a_client_that_hung_up_starts_nothing(monkeypatch, search_turns):
    """A real server on loopback: a client's two deals wait behind its searching one, and it
    hangs up on them. Before, both were dealt after it had gone (their agents searched: 20
    such 10-player deals held a thread for 13 minutes) and kept as tables nobody holds."""
    import socket
    import threading
    import time

    entered, released, request = _held_search(monkeypatch)
    safety = threading.Timer(60, released.set)
    safety.start()
    app = create_app()
    ended: list[int] = []   # the requests the app has finished
    try:
        with live_server(_counting(app, ended)) as (_call, port):
            first = socket.create_connection(("127.0.0.1", port), timeout=60)
            first.sendall(request)
            assert entered.wait(30)   # its agent is thinking
            queued = [socket.create_connection(("127.0.0.1", port), timeout=60)
                      for _ in range(2)]
            for s in queued:
                s.sendall(request)
            deadline = time.monotonic() + 30
            while len(search_turns) < 3 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert len(search_turns) == 3   # both wait for the client's turn
            for s in queued:
                s.close()
            time.sleep(0.5)
            released.set()
            answer = b""
            while b"\r\n\r\n" not in answer and (chunk := first.recv(65536)):
                answer += chunk
            first.close()
            deadline = time.monotonic() + 60
            while sum(ended) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert answer.startswith(b"HTTP/1.1 200"), answer
            assert sum(ended) == 3
            assert len(app.state.tables.ids()) == 1   # the first client's game alone
    finally:
        released.set()
        safety.cancel()


def test_a_game_whose_client_hung_up_while_it_was_dealt_is_not_kept(monkeypatch):
    """A real server on loopback: a client asks for a game whose search agent plays first,
    and hangs up while it thinks. Before, the deal ran to its end in its thread and was kept:
    a game nobody knows of, holding one of the server's places and one of its address's
    for IDLE_SECONDS (a browser that retried met its own invisible game)."""
    import socket
    import threading
    import time

    from ono_env.apps.web.table import Tables

    entered, released, request = _held_search(monkeypatch)
    seen: list[threading.Event] = []   # each deal's hang-up flag, as the server passes it
    new = Tables.new
    monkeypatch.setattr(Tables, "new", lambda self, *a, gone=None, **k:
                        seen.append(gone) or new(self, *a, gone=gone, **k))
    safety = threading.Timer(60, released.set)
    safety.start()
    app = create_app()
    ended: list[int] = []
    try:
        with live_server(_counting(app, ended)) as (call, port):
            client = socket.create_connection(("127.0.0.1", port), timeout=60)
            client.sendall(request)
            assert entered.wait(30)   # its agent is thinking
            client.close()
            assert seen[0].wait(30)   # the server has seen the hang-up
            released.set()
            deadline = time.monotonic() + 60
            while sum(ended) < 1 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert sum(ended) == 1
            assert app.state.tables.ids() == set()
            # a client that waits for its game has it, as before
            status, view = call("POST", "/api/games", {"rules": "basic", "num_players": 2,
                                                       "opponents": ["pimc:1"], "seat": 1},
                                timeout=60)
            assert status == 200 and app.state.tables.ids() == {view["id"]}
    finally:
        released.set()
        safety.cancel()


def test_connections_past_the_most_are_answered_503(monkeypatch):
    """Before: nothing bounded the connections, and each one's small body went uncounted by
    MAX_BODIES: 3,000 connections sending 60 KB slowly took the server to 437 MB."""
    import http.client
    import socket
    import time

    from ono_env.apps.web import server
    monkeypatch.setattr(server, "MAX_CONNECTIONS", 3)

    def status(port):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        c.request("GET", "/api/options")
        r = c.getresponse()
        r.read()
        c.close()
        return r.status
    with live_server(create_app()) as (_call, port):
        idle = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(2)]
        time.sleep(0.2)   # the server has taken both
        assert status(port) == 503   # its own connection is the third
        idle.pop().close()
        for _ in range(100):   # until the server has seen it close
            if status(port) == 200:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("a closed connection's place was not freed")
        idle[0].close()


def test_a_connection_that_sends_no_whole_request_in_time_is_closed(monkeypatch):
    """Before: a connection that sent nothing, or part of its headers, was held for as long
    as its client kept it open (uvicorn times only the wait between requests), and some
    hundreds of them used up the server's file descriptors."""
    import socket
    import time

    from ono_env.apps.web import server
    monkeypatch.setattr(server, "HEADER_SECONDS", 1.0)

    def until_closed(s):
        s.settimeout(30)
        data = b""
        while True:
            more = s.recv(65536)
            if not more:
                return data
            data += more

    with live_server(create_app()) as (call, port):
        silent = socket.create_connection(("127.0.0.1", port))
        partial = socket.create_connection(("127.0.0.1", port))
        partial.sendall(b"GET /api/options HTTP/1.1\r\nHost: 127.0.0.1\r\nAcc")
        kept = socket.create_connection(("127.0.0.1", port))   # a request, then part of one
        kept.sendall(b"GET /api/options HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        time.sleep(0.5)
        kept.sendall(b"GET /api/options HTTP/1.1\r\nHo")
        t = time.perf_counter()
        for s in (silent, partial):
            answer = until_closed(s)
            assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n")
            # as every error body is (before: empty)
            assert json.loads(answer.split(b"\r\n\r\n", 1)[1]) == {
                "error": "no whole request's headers within 1 s (the most allowed)"}
        answers = until_closed(kept)
        assert answers.startswith(b"HTTP/1.1 200 OK") and answers.count(b"HTTP/1.1 ") == 2
        assert answers.split(b"HTTP/1.1 ")[-1].startswith(b"408 Request Timeout")
        assert time.perf_counter() - t < 10
        for s in (silent, partial, kept):
            s.close()
        assert call("GET", "/api/options")[0] == 200   # a request in time is answered


def test_bodies_that_never_finish_hold_bounded_memory_and_are_let_go(monkeypatch):
    """Before: each request that sent most of a 4 MiB body and then stalled held it for as
    long as the client kept the connection open, however many such requests one client made
    (100 held 400 MB). Now the large bodies held at once have a budget (here 2 MiB and 50 kB), charged
    as their bytes arrive: past it an upload is answered 503, while connections that sent only
    headers hold nothing and the small bodies of the games' requests are always served; and a
    body that does not arrive in time is answered 408 and let go."""
    import socket
    import time

    from ono_env.apps.web.server import MAX_BODY

    def stalled(port, sent):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /api/replays HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                  b"application/json\r\nContent-Length: %d\r\n\r\n" % MAX_BODY + b"[" * sent)
        return s

    def answer(s):
        s.settimeout(30)
        data = b""
        while b"\r\n\r\n" not in data:
            more = s.recv(65536)
            if not more:
                break
            data += more
        return data.split(b"\r\n", 1)[0]

    def upload(call):
        return call("POST", "/api/replays", "x" * 100_000)   # not a replay: 400 once read

    from ono_env.apps.web import server
    monkeypatch.setattr(server, "UPLOADS_PER_CLIENT", 100)   # every connection here is one client's
    budget = (2 << 20) + 50_000
    app = create_app(max_bodies=budget, body_seconds=5.0)
    with live_server(app) as (call, port):
        headers_only = [stalled(port, 0) for _ in range(20)]
        time.sleep(0.3)
        assert upload(call)[0] == 400          # headers alone hold nothing of the budget
        held = [stalled(port, 1 << 20), stalled(port, 1 << 20)]   # 2 MiB of the budget held
        time.sleep(0.5)
        status, body = upload(call)
        assert status == 503 and f"at most {budget:,} bytes of uploads" in body["error"], body
        assert call("POST", "/api/agents", {"rules": "basic"})[0] == 200   # a small body
        # a small body sent in chunks is no upload either (before: charged from its first
        # byte, it was answered 503 here: 60,000 bytes with 50,000 of the budget left)
        chunk = json.dumps({"rules": "basic", "pad": "x" * 60_000}).encode()
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /api/agents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                  b"application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                  + b"%x\r\n" % len(chunk) + chunk + b"\r\n0\r\n\r\n")
        assert answer(s) == b"HTTP/1.1 400 Bad Request"   # read, and refused for its 'pad'
        s.close()
        t = time.perf_counter()
        assert [answer(s) for s in held] == [b"HTTP/1.1 408 Request Timeout"] * 2
        assert time.perf_counter() - t < 20
        for s in held + headers_only:
            s.close()
        assert upload(call)[0] == 400          # the budget is back


@pytest.mark.parametrize("kwargs, fragment", [
    ({"max_bodies": 0}, "max_bodies=0; allowed: an integer >= 65,536"),
    ({"max_bodies": True}, "max_bodies=True (bool)"),
    ({"body_seconds": 0}, "body_seconds=0; allowed: a number of seconds above 0"),
    ({"body_seconds": float("inf")}, "body_seconds=inf"),
    ({"body_seconds": "30"}, "body_seconds='30'"),
])
def test_the_body_limits_are_checked(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        create_app(**kwargs)
    assert fragment in str(info.value)


def test_a_model_whose_rules_metadata_is_not_a_rule_set_is_blamed_on_its_rules(tmp_path):
    # before: "metadata 'num_players' is 2; expected the player count of its rules"
    from safetensors.numpy import load_file, save_file

    from ono_env.agents.learned import META_KEY
    src = shipped_models()["ppo-basic-2p"]
    meta, _ = read_model(src)
    path = tmp_path / "m.safetensors"
    save_file(load_file(str(src)), str(path),
              metadata={META_KEY: json.dumps(dict(meta, rules={"preset": "nosuch"}))})
    with pytest.raises(ValueError, match=r"damaged model: metadata 'rules' .*expected an object "
                                         r"of every rule option, num_players \(a whole number\) among them"):
        load_agent(path, "basic")
