"""Running: the run loop and its listeners, the engine, resume, budget, estimate, user code."""
