"""The environments: ono_env's games behind the RL libraries' interfaces.

Above the core (they import it and the agents that fill the other seats), below the arena
and the applications (they import neither):

- :mod:`ono_env.envs.ono_v0`: PettingZoo AEC (also ``from ono_env import ono_v0``);
- :mod:`ono_env.envs.gym_env`: Gymnasium, registered as ``ono_env/Ono-v0``;
- :mod:`ono_env.envs.gym_vector`: its vector env (``gymnasium.make_vec``);
- :mod:`ono_env.envs.sb3`: a Stable-Baselines3 ``VecEnv``;
- :mod:`ono_env.envs.rllib_env`: RLlib's multi-agent env and its vector env;
- :mod:`ono_env.envs.openspiel`: an OpenSpiel game (``pyspiel.load_game("python_ono")``);
- :mod:`ono_env.envs.learner_batch` and :mod:`ono_env.envs.opponents`: one learner's games
  against agent opponents, which the single-agent envs share.

Each loads its RL library, so this package imports none of them itself.
"""
