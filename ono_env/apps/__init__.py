"""The applications: what a person runs (the console scripts' code and the web table).

The top floor of the package beside training (:mod:`ono_env.train`): nothing below imports
it. :mod:`ono_env.apps.console` holds what every console script shares (one-line errors,
argument types); :mod:`ono_env.apps.demo` (``ono-demo``), :mod:`ono_env.apps.play`
(``ono-play``), :mod:`ono_env.apps.arena_cli` (``ono-arena``), :mod:`ono_env.apps.bench_cli` (``ono-bench``)
and :mod:`ono_env.apps.web` (``ono-web``) are the scripts; each starts from
:mod:`ono_env.apps.launch`, which loads the script's module.
"""
