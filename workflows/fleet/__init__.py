"""What every turn and worker of a namespace shares: the ledgers of rate-limit keys
(`RateLimiterWorkflow`) and of tenants (`TenantLedgerWorkflow`) as long-lived workflows, their
pure arithmetic, and the fair share of workers between tenants.
"""
