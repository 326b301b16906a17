"""Training for ono_env (installed as ``ono_env.train``; the ``ono-train``, ``ono-export`` and
``ono-exploit`` console scripts).

``ono-train`` reads a config (:mod:`ono_env.train.config`; the shipped ones are
``configs/train/*.yaml``) and trains with one of three backends: the lean PPO of
:mod:`ono_env.train.ppo` (``algo: ppo``, the default), SB3-contrib's MaskablePPO
(:mod:`ono_env.train.maskable_ppo`) or RLlib (:mod:`ono_env.train.rllib`). What they share
(opponent leagues, evaluation, the final arena, resolving ``auto`` fields) is
:mod:`ono_env.train.run`; saving models as safetensors is :mod:`ono_env.train.nets` and
:mod:`ono_env.train.export`. It needs the ``[train]`` extra (torch).
"""
