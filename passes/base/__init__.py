"""What every pass builds on: the pass registry, IR walkers and linalg helpers, scalar bodies.

Below every pass: nothing here imports a pass."""
