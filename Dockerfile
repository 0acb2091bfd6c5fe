# The turnkeeper worker. Build context: the repository root (docker compose does this for you).
# No secret is baked in: ANTHROPIC_API_KEY and TEMPORAL_API_KEY come from the environment at run time.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# An unprivileged user. The volume mount points exist and belong to it before any volume is
# mounted, so that fresh named volumes inherit that ownership and the worker can write to them.
RUN useradd --create-home --uid 1000 turnkeeper \
 && mkdir -p /workspace /data \
 && chown turnkeeper:turnkeeper /workspace /data

# bubblewrap, for the run_python and run_shell tools; in a container they also need a seccomp
# profile that allows unshare and mount (docs/sandbox.md, "For the operator").
RUN apt-get update \
 && apt-get install -y --no-install-recommends bubblewrap \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
# Only the sources: a local .turnkeeper/ or workspace/ must never end up in the image.
COPY pyproject.toml README.md worker.py ./
COPY contracts/ contracts/
COPY workflows/ workflows/
COPY activities/ activities/
COPY turnkeeper/ turnkeeper/
# The s3 extra: the content store of a cluster is S3 or MinIO (TURNKEEPER_STORE_URL=s3://…).
RUN pip install '.[s3,openai]'

USER turnkeeper
ENV AGENT_WORKSPACE=/workspace \
    TURNKEEPER_DATA_DIR=/data
# SIGTERM (docker stop, a Kubernetes rollout) drains in-flight calls, then exits 0.
STOPSIGNAL SIGTERM
CMD ["python", "worker.py"]
