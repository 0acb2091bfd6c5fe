"""Remote A2A agents as tools of a turn (`agent.a2a_agents`).

config.py          The worker's agents (`TURNKEEPER_A2A_CONFIG`): where, how to authenticate.
remote.py          One HTTP client per agent, its card and the `a2a-sdk` client built from it.
answers.py         What a remote task's state and parts mean for the model.
failures.py        What went wrong, in a sentence; whether the network was to blame.
a2a_activity.py    The activities: describe the agents, send, poll, cancel.
unconfigured.py    The same activities on a worker without agents, without the SDK.
"""
