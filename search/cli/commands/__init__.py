"""The click commands of ``newsquarry``, one module per subject; ``app`` adds them to the
group. Each imports ``common``, never ``app`` nor one another.
"""
