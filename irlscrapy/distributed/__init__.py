"""Many agents, one crawl: Cho's exchange mode over Redis (DESIGN.md, Multi-agent)."""
