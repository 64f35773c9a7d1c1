"""The ``newsquarry`` command line: the console-script client (``launch``), the resident
searcher (``daemon``) and the click commands (``app``, ``commands``).

Nothing is imported here: ``launch`` must cost a bare interpreter.
"""
