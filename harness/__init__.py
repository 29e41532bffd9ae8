"""What the tests and the benchmarks share: the real servers they start (Redis, nginx in
a namespace), the tiny in-vitro web as they crawl it, the fault campaign, the hostile
input and a real frontier for component work. Not part of the irlscrapy package; bench/
imports from here, never from tests/ (the layering test holds it to that)."""
