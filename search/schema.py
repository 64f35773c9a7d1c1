"""A stable import path, not a module to use: ``newsquarry.search.schema.PossessiveFilter``
is the name Whoosh pickled into the table of contents of every index (the schema's analyzer).
The class lives in ``engine.schema``; this name keeps every index, older or newer, readable.
"""

from newsquarry.search.engine.schema import PossessiveFilter

__all__ = ["PossessiveFilter"]
