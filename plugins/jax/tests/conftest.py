"""hlort-jax tests: the JAX ones skip (one line, with the reason) when jax is not installed."""
