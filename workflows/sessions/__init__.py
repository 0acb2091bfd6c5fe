"""Sessions: `AgentSessionWorkflow`, one conversation of many turns, the state it owns, and
the activities that read and write a stored conversation.
"""
