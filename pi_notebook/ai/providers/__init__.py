"""Stream functions for concrete model APIs. ``faux`` is the scripted default."""
