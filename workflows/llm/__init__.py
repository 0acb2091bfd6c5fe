"""The turn's model call: the one way its loop calls the model, the activity run through the
fallback chain within what is left of the time budget, and compaction, a step inside the call.
"""
