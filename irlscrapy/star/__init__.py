"""STAR, Spam Tracking and Avoidance through Reputation (IRLbot VI): a PLD's budget
from its in-degree in the PLD graph.

- :mod:`.indegree`: the PLD in-degree store (two DRUMs and their refresh);
- :mod:`.budgets`: the budget functions, from in-degree rank to budget.

:class:`irlscrapy.middlewares.star.StarMiddleware` feeds it each crawled page's PLD edges.
"""
