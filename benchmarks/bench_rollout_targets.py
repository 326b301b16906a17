"""One step of policy improvement from rollouts that see the hidden hands, at one table.

    python benchmarks/bench_rollout_targets.py --table ono-6 --steps 6000 --out docs/results/generalist/ono-6p-rollouts
    python benchmarks/bench_rollout_targets.py --table basic-3 --steps 4 --games 8 --betas 0.05 \
        --epochs 1 --batch 8 --deals 20 --out /tmp/r

A policy (``--model``: ``ppo-any`` or a model file) plays one seat, at random, against the
table's best baseline in every other seat (``--against``), ``--games`` games at once for
``--steps`` of its decisions in each of ``--procs`` processes (seeds ``--seed``,
``--seed`` + 1, ...). At each of its decisions with more than one legal action every legal
action is valued by ``--worlds`` playouts that see every opponent's hand (the stock order
sampled): the policy's network in the seat, the baseline in the others
(:class:`~ono_env.agents.search.SearchAgent` with ``view="hands"`` and
``playout_opponents``), so a value is the chance to win if the seat takes that action and
then plays on as the policy does, against these opponents. The values CHEAT and are training
targets only: the position is a sample of what the seat cannot see, so over the positions
that one observation stands for they average to the action's value from that observation,
and a policy fitted to them from the observation alone improves on the policy with what the
seat may know (one step of policy iteration, approximated by a network).

For every ``--betas`` value the policy's network is fitted from its own weights (Adam,
``--lr``, ``--epochs`` passes in minibatches of ``--batch`` rows, the policy's logits only)
to maximise ``sum_a pi(a|o) Q(a) - beta KL(pi_old(.|o) || pi(.|o))``, whose maximiser at
each observation is ``pi_old * exp(Q / beta)`` (normalised): a smaller ``beta`` moves
further. Each fitted policy is then paired with the policy on ``--deals`` mirrored deals of
the table (``bench_headroom.py``, every seating of each deal, 95% interval of the paired
difference over deals).

Writes the fitted model files into ``--models`` (default, in the current folder as
``ono-train``'s ``runs/``: ``runs/rollout-targets/<the name of
--out>``: they are not results, and each run's have a folder of their own, which its
results name; a folder holding the files a run would write is refused), and ``results.md``
and ``results.json`` into ``--out`` with the pairing in ``--out``/paired.
"""

from __future__ import annotations

import contextlib
import json
import math
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_args import (  # noqa: E402
    at_least,
    map_in_processes,
    out_folder,
    parser,
    path_arg,
    positive_finite,
    run_script,
    sub_run,
    within,
)
from bench_generalist import (  # noqa: E402
    one_table_args,
    one_table_setup,
)

from ono_env.agents.search import MAX_WORLDS  # noqa: E402
from ono_env.checks import MAX_SEED, remove_made_dirs  # noqa: E402

GAMES_MAX = 4096
MAX_PROCS = 64
"""The most processes of --procs (each forks with the model and plays its own games)."""
MAX_SLOT_STEPS = 100_000
"""The most decisions per game slot (``--steps``): every process's rows are kept in memory
until the fit, 16 times the default's (before, any count was taken, and ran until memory
ran out)."""
MAX_EPOCHS = 1_000
"""The most passes over the rows (``--epochs``; before, any count was taken)."""


def collect(job: tuple) -> dict:
    """One process's rows: (seed, steps, games, worlds, model, rules dict, baseline, path)."""
    seed, steps, games, worlds, model, rules_dict, against, path = job
    from ono_env.agents.registry import make_agent
    from ono_env.agents.search import SearchAgent
    from ono_env.envs.learner_batch import LearnerBatch
    from ono_env.rules import RuleSet
    rules = RuleSet.from_dict(rules_dict)
    policy = make_agent(model, rules)   # a name or a model file's path
    search = SearchAgent(rules, worlds, policy=policy, view="hands", margin=-1.0,
                         playout_opponents=against, name="rollout-targets")
    batch = LearnerBatch(rules, num_envs=games, opponents=against, seed=seed,
                         learner_seat="random", observation_version=2)
    obs = batch.reset(seed)
    rng = np.random.default_rng([seed, 7])
    obs_rows, M, V = [], [], []
    t0, done, wins = time.perf_counter(), 0, 0.0
    for _ in range(steps):
        mask = batch.action_masks()
        acts = policy.act(obs, mask, rng)
        rows = np.flatnonzero(mask.sum(axis=1) > 1)
        if len(rows):
            search.act_game(batch.game, rows, rng)
            obs_rows.append(obs[rows].astype(np.float16))
            M.append(mask[rows].copy())
            V.append(search.last_values.astype(np.float32))
        step = batch.step(acts)
        obs = step.obs
        done += int(step.dones.sum())
        wins += float((step.rewards[step.dones] > 0).sum())
    if not obs_rows:   # no decision with a choice: empty rows, refused by main with the reason
        obs_rows = [np.zeros((0, obs.shape[1]), np.float16)]
        M = [np.zeros((0, mask.shape[1]), bool)]
        V = [np.zeros((0, mask.shape[1]), np.float32)]
    np.savez(path, obs=np.concatenate(obs_rows), mask=np.concatenate(M), values=np.concatenate(V))
    return {"seed": seed, "rows": int(sum(len(o) for o in obs_rows)), "games": done, "wins": wins,
            "seconds": time.perf_counter() - t0}


def fit(model_path: Path, obs_rows: np.ndarray, Mk: np.ndarray, V: np.ndarray, beta: float, lr: float,
        epochs: int, batch: int, seed: int, out: Path) -> dict:
    """The policy's network fitted to the targets (module docstring); writes ``out``."""
    import torch

    from ono_env.agents.learned import read_model, write_model
    from ono_env.train.ppo import ActorCritic, masked_logits

    torch.manual_seed(seed)
    meta, net = read_model(model_path)

    def build() -> ActorCritic:
        m = ActorCritic(net.scale, net.hidden_sizes, net.activation, not net.has_value,
                        net.opponent_width)
        m.load_policy_net(net)
        return m

    model, old = build(), build()
    rng = np.random.default_rng(seed)

    def rows(idx):
        m = torch.from_numpy(Mk[idx])
        return (torch.from_numpy(obs_rows[idx].astype(np.float32)), m,
                torch.from_numpy(np.where(Mk[idx], V[idx], 0.0).astype(np.float32)))

    def logp(mdl, o, m):
        return torch.log_softmax(masked_logits(mdl(o)[0], m), 1).masked_fill(~m, 0.0)

    opt = torch.optim.Adam(model.parameters(), lr=lr)
    order = np.arange(len(obs_rows))
    t0 = time.perf_counter()
    for _ in range(epochs):
        rng.shuffle(order)
        for s in range(0, len(order) - batch + 1, batch):
            o, m, q = rows(order[s:s + batch])
            with torch.no_grad():
                lo = logp(old, o, m)
            ln = logp(model, o, m)
            p, po = ln.exp().masked_fill(~m, 0.0), lo.exp().masked_fill(~m, 0.0)
            loss = -(p * q).sum(1).mean() + beta * (po * (lo - ln)).sum(1).mean()
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
            opt.step()
    seconds = time.perf_counter() - t0
    moved, kl = [], []
    with torch.no_grad():   # how far it moved, over a sample of the rows
        for s in range(0, min(len(obs_rows), 65536), 8192):
            o, m, _ = rows(order[s:s + 8192])
            lo, ln = logp(old, o, m), logp(model, o, m)
            best_old = lo.masked_fill(~m, -np.inf).argmax(1)   # illegal actions hold 0 in lo
            moved.append(float((best_old != ln.masked_fill(~m, -np.inf).argmax(1)).float().mean()))
            kl.append(float((lo.exp().masked_fill(~m, 0.0) * (lo - ln)).sum(1).mean()))
    write_model(out, model.policy_net(), meta)
    return {"beta": beta, "model": str(out), "moved": statistics.mean(moved),
            "kl": statistics.mean(kl), "seconds": seconds}


def main() -> None:
    ap = parser(__doc__)
    one_table_args(ap, "the baseline in every other seat (best: the preset's best baseline)")
    ap.add_argument("--steps", type=int, default=6000, help="the policy's decisions per game slot")
    ap.add_argument("--games", type=int, default=128, help="games at once per process")
    ap.add_argument("--procs", type=int, default=2,
                    help=f"processes collecting (default 2, at most {MAX_PROCS})")
    ap.add_argument("--worlds", type=int, default=4, help="playouts per legal action")
    ap.add_argument("--betas", default="0.05,0.02,0.005,0.001",
                    help="the KL weights, comma-separated, each once: one fitted model each "
                         "(default 0.05,0.02,0.005,0.001)")
    ap.add_argument("--lr", type=float, default=2e-4, help="Adam's learning rate (default 2e-4)")
    ap.add_argument("--epochs", type=int, default=3, help="passes over the rows (default 3)")
    ap.add_argument("--batch", type=int, default=4096, help="rows per minibatch (default 4096)")
    ap.add_argument("--deals", type=int, default=10_000,
                    help="mirrored deals of the pairing (default 10,000)")
    ap.add_argument("--seed", type=int, default=11,
                    help="seed of the first process (--seed + k for process k; default 11)")
    ap.add_argument("--models", type=path_arg, default=None,
                    help="folder of the fitted model files (default: runs/rollout-targets/<the "
                         "name of --out>)")
    ap.add_argument("--out", type=path_arg, required=True,
                    help="folder of results.md, results.json and paired/")
    args = ap.parse_args()
    if args.models is None:   # a folder per run: two runs' models of one table never meet
        args.models = Path("runs/rollout-targets") / (args.out.resolve().name or "out")
    for name, most in (("steps", MAX_SLOT_STEPS), ("games", GAMES_MAX), ("procs", MAX_PROCS),
                       ("worlds", MAX_WORLDS),   # the search's limit
                       ("epochs", MAX_EPOCHS), ("batch", None), ("deals", None)):
        v = getattr(args, name)
        if most is None:
            at_least("bench_rollout_targets", f"--{name}", v, 1)
        else:
            within("bench_rollout_targets", f"--{name}", v, 1, most)
    rows = args.steps * args.games * args.procs   # the most rows the processes can collect
    if args.batch > rows:   # before: refused only after collecting them
        sys.exit(f"bench_rollout_targets: --batch {args.batch:,}: more than the {rows:,} rows "
                 f"that --steps {args.steps} --games {args.games} --procs {args.procs} collect "
                 f"at most; allowed: at most {rows:,}")
    # process k plays with seed --seed + k: each of them a seed the library takes
    within("bench_rollout_targets", "--seed", args.seed, 0, MAX_SEED - (args.procs - 1))
    try:
        betas = [float(b) for b in args.betas.split(",")]
    except ValueError:
        betas = []
    if not betas or not all(math.isfinite(b) and b > 0 for b in betas):
        sys.exit(f"bench_rollout_targets: --betas {args.betas!r}; allowed: finite numbers above "
                 f"0, comma-separated")
    names = [f"{b:g}" for b in betas]   # each names its model file, and an agent of the pairing
    for k, name in enumerate(names):
        if name in names[:k]:
            first = args.betas.split(",")[names.index(name)].strip()
            again = args.betas.split(",")[k].strip()
            if first == again:
                sys.exit(f"bench_rollout_targets: --betas: {again!r} is given twice; allowed: "
                         f"each beta once")
            sys.exit(f"bench_rollout_targets: --betas: {first!r} and {again!r} are one beta to "
                     f"6 significant digits (one model file, ...-beta-{name}.safetensors); "
                     f"allowed: betas apart in their first 6 significant digits")
    positive_finite("bench_rollout_targets", "--lr", args.lr)

    preset, players, against, rules, policy_file, _ = one_table_setup(args, "bench_rollout_targets")
    label = f"{preset}-{players}"
    for path, option in ((args.out, "--out"), (args.models, "--models")):
        if path.exists() and not path.is_dir():   # before either folder is made
            sys.exit(f"bench_rollout_targets: {option}: {str(path)!r} exists and is not a folder")
    out_folder(args.out, "bench_rollout_targets", writes=(
        "results.json", "results.md", "paired/results.json", "paired/results.md"))
    # the fitted models are named by table and beta, and an earlier run's results name them
    out_folder(args.models, "bench_rollout_targets", "--models",
               writes=[f"{label}-beta-{b:g}.safetensors" for b in betas])

    with tempfile.TemporaryDirectory() as tmp:
        jobs = [(args.seed + k, args.steps, args.games, args.worlds, args.model, rules.to_dict(),
                 against, f"{tmp}/rows-{k}.npz") for k in range(args.procs)]
        made = map_in_processes(collect, jobs, args.procs)
        parts = [np.load(j[-1]) for j in jobs]
        obs_rows = np.concatenate([p["obs"] for p in parts])
        Mk = np.concatenate([p["mask"] for p in parts])
        V = np.concatenate([p["values"] for p in parts])
    games = sum(m["games"] for m in made)
    if not len(obs_rows):   # nothing to fit: the steps asked met no decision with a choice
        remove_made_dirs()
        sys.exit(f"bench_rollout_targets: --steps {args.steps} x --games {args.games} x --procs "
                 f"{args.procs}: the policy met no decision with more than one legal action; "
                 f"allowed: more --steps or --games")
    print(f"{len(obs_rows):,} decisions from {games:,} games", file=sys.stderr)
    if len(obs_rows) < args.batch:   # the fit takes whole minibatches: it would fit nothing
        remove_made_dirs()
        sys.exit(f"bench_rollout_targets: --batch {args.batch}: the policy met {len(obs_rows):,} "
                 f"decisions with a choice, fewer than one minibatch, so the fit would change "
                 f"nothing; allowed: a --batch of at most {len(obs_rows):,}, or more --steps or "
                 f"--games")
    fits: list[dict] = []
    written: list[Path] = []
    paired = args.out / "paired"
    try:   # the models go again with a run that ends before its results name them
        for b in betas:
            written.append(args.models / f"{label}-beta-{b:g}.safetensors")
            fits.append(fit(policy_file, obs_rows, Mk, V, b, args.lr, args.epochs, args.batch,
                            args.seed, written[-1]))
            print(f"beta {b:g}: moved {fits[-1]['moved']:.1%} of the argmaxes", file=sys.stderr)
        pair_cmd = [sys.executable, str(HERE / "bench_headroom.py"), "--tables",
                    f"{preset}-{players}", "--agents",
                    ",".join([args.model] + [f["model"] for f in fits]), "--pair-with",
                    args.model, "--against", against, "--deals", str(args.deals),
                    "--out", str(paired)]
        sub_run("bench_rollout_targets", pair_cmd, stdout=subprocess.DEVNULL)
        rows = json.loads((paired / "results.json").read_text())["rows"]
    except BaseException:
        # before: a Ctrl-C while the fitted models were paired left them, and the same
        # command was then refused for them as an earlier run's results
        for path in written:
            path.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            paired.rmdir()   # where the paired run left it empty
        raise
    by_agent = {r["agent"]: r for r in rows}
    for f in fits:
        r = by_agent[f["model"]]
        f["share"], f["minus_model"] = r["share"], r["minus_paired"]
    base = by_agent[args.model]
    command = "python benchmarks/bench_rollout_targets.py " + shlex.join(sys.argv[1:])
    result = {"command": command, "table": label, "model": args.model, "against": against,
              "worlds": args.worlds, "decisions": len(obs_rows), "games": games,
              "collect": made, "model_share": base["share"], "deals": args.deals, "fits": fits}
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    seconds = max(m["seconds"] for m in made)
    wins = sum(m["wins"] for m in made)
    lines = [f"# Rollout targets at `{label}`", "", f"`{command}`", "",
             f"`{args.model}` in one seat, `{against}` in every other. {len(obs_rows):,} of its "
             f"decisions with more than one legal action, from {games:,} games "
             f"({args.procs} processes, {seconds / 60:.0f} minutes; it won {wins / max(games, 1):.1%} "
             f"of them), each legal action valued by {args.worlds} playouts that see every "
             f"opponent's hand (training targets only). Each fit starts from `{args.model}`'s "
             f"network ({args.epochs} passes, learning rate {args.lr:g}); \"moved\" is the share "
             f"of the decisions whose most likely action changed, over the first 65,536 rows "
             f"of the last pass's order. Paired with `{args.model}` "
             f"({base['share']:.1%}) on {args.deals:,} mirrored deals "
             f"([paired/results.md](paired/results.md)).", "",
             "| beta | moved | KL from the policy | share | minus the policy, same deals [95%] |",
             "|---|---|---|---|---|"]
    for f in fits:
        d = f["minus_model"]
        lines.append(f"| {f['beta']:g} | {f['moved']:.1%} | {f['kl']:.4f} | {f['share']:.1%} | "
                     f"{100 * d[0]:+.1f} [{100 * d[1]:+.1f}, {100 * d[2]:+.1f}] |")
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    run_script("bench_rollout_targets", main)
