"""The shared base: errors, the data model, text folding, settings, ids and small helpers.

Every other layer may import it; it imports nothing of newsquarry's.
"""
