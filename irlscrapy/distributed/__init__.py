"""Many agents, one crawl: Cho's exchange mode over Redis (docs/architecture.md, section 5)."""
