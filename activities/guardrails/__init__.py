"""The worker's guardrails (`agent.guardrails`): `@turnkeeper.guardrail` functions, the two
built in (`secrets`, `size_cap`), and the `check_guardrails` activity that runs them."""
