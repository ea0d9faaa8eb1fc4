"""What an agent can call: the tool declarations, the handler context, the write rules, the tool families.

Nothing is imported here: each module is imported where it is used.
"""
