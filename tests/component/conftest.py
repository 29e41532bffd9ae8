"""Fixtures shared by the component tests."""

from .agentfixture import make_agent  # noqa: F401 (an agent on a simulated clock)
