"""``ono-train``: train an agent from a training config (``algo``: ``ppo``, ono_env's own masked
PPO, the default; ``maskable_ppo``, sb3-contrib's; ``rllib_ppo``, on Ray RLlib).

    ono-train default                                   # the README's run
    ono-train default total_steps=200000 ppo.learning_rate=1e-4
    ono-train my-run.yaml --print-config                # the checked config, then exit

The config is a YAML path or the name of a config shipped with the package (``default``,
``basic-60min``, ``classic-60min``, ``basic-4p``, ``rllib-basic``, ``generalist``), then
``key=value`` overrides; ``--help`` lists every field with its default and meaning.
Resolving and printing a config needs only the base install; training needs the ``[train]``
extra (torch, Stable-Baselines3, sb3-contrib, TensorBoard), or with ``algo: rllib_ppo`` the
``[ray]`` extra (Ray RLlib, torch).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ono_env.apps import console as cli
from ono_env.train.config import check_override_keys, describe_fields, dump_config, load_config


def build_parser() -> cli.ArgumentParser:
    from ono_env.configs import config_names

    fields = "\n".join(f"  {name} = {default}\n      {doc}" for name, default, doc in describe_fields())
    p = cli.ArgumentParser(
        prog="ono-train",
        description="Train an agent on ono_env from a training config (masked PPO).",
        epilog="config fields (key = default, where neither the config nor an override sets "
               "it; a shipped config sets many: --print-config shows a config's values):\n"
               + fields,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", help="config YAML path, or a shipped config's name "
                                  f"({', '.join(config_names('train'))})")
    p.add_argument("overrides", nargs="*", help="key=value overrides, dotted for nested fields "
                                                "(ppo.learning_rate=1e-4 total_steps=200000)")
    p.add_argument("--print-config", action="store_true",
                   help="print the config with the overrides applied and exit (its fields are "
                        "checked; each 'auto' stays as written and is filled in as a run "
                        "starts, in the run's config.yaml; the agents, model files, device, "
                        "checkpoint and folders it names are checked when a run starts)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    def body(args: argparse.Namespace) -> None:
        try:   # load_config keeps the last of a key: here, once each
            check_override_keys(args.overrides)
        except ValueError as exc:
            raise cli.UsageError(str(exc)) from None
        cfg = load_config(args.config, args.overrides)
        if args.print_config:
            print(dump_config(cfg), end="")
            return
        if cfg.algo == "rllib_ppo":
            from ono_env.train.rllib import train
        elif cfg.algo == "maskable_ppo":
            from ono_env.train.maskable_ppo import train
        else:
            from ono_env.train.ppo import train
        from ono_env.train.run import STOP_SIGNALS

        # from the console script, SIGTERM (kill, timeout, a job scheduler) and SIGHUP (a
        # closed terminal) save too
        train(cfg, stop_signals=STOP_SIGNALS)

    return cli.run(build_parser(), argv, body)


if __name__ == "__main__":
    sys.exit(main())
