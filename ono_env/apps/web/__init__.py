"""The web table: play ONO against agents in the browser and watch replays (``ono-web``).

:mod:`ono_env.apps.web.table` holds the games (no web library needed); :mod:`ono_env.apps.web.server`
is the FastAPI app and the console script, from the ``[web]`` extra.
"""
