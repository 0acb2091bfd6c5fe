"""Local fakes of the services turnkeeper talks to, for tests that run without a network."""
