"""Following feeds, sitemaps and sites into the index (``newsquarry follow``).

``urls`` (canonical addresses, ids), ``fetch`` (HTTP: conditional requests, robots.txt,
the per-host rate limit, Retry-After), ``sources`` (feeds, sitemaps, home pages),
``state`` (the follower's SQLite file in the index folder), ``follower`` (poll rounds,
identity, the indexer). docs/follow.md describes it for users.
"""
