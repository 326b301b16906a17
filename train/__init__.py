"""Training scripts for ono_env (MaskablePPO against the baselines and in self-play).

Nothing is here yet: the training issue adds it. The package is installed with ``ono_env``."""
