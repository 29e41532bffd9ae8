"""Fixtures shared by the component tests."""

from .agentfixture import make_agent  # noqa: F401 (an agent on a simulated clock)
from .schedulerfixture import irl_scheduler  # noqa: F401 (a real IRL scheduler, opened)
