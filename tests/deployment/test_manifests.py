"""What can be checked of docker-compose.yml and deploy/kubernetes without Docker or a cluster:
they parse, every image is pinned, every TURNKEEPER_* variable they set is one our code reads,
no secret is written in them, ports stay on loopback, the schema job runs before the server, the
probes and the scrape point at the health port, and the search attributes are the contract's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES

from turnkeeper.worker import GRACEFUL_SHUTDOWN

ROOT = Path(__file__).parent.parent.parent
SOURCES = ("turnkeeper", "activities", "contracts", "workflows")
SECRET_NAME = re.compile(r"PASSWORD|SECRET|TOKEN|API_KEY|ACCESS_KEY|ENCRYPTION_KEYS|PWD")
INTERPOLATION = re.compile(r"^\$\{[A-Z_]+(:?[-?][^}]*)?\}$")
DEV_PROFILE = {"temporal-dev", "worker-dev"}


def variables_our_code_reads() -> set[str]:
    found: set[str] = set()
    for folder in SOURCES:
        for path in (ROOT / folder).rglob("*.py"):
            found |= set(re.findall(r"\"(TURNKEEPER_[A-Z_]+)\"", path.read_text()))
    return found


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def environment(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        return dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {name: "" if value is None else str(value) for name, value in env.items()}


def test_the_stack_has_every_part_of_a_production_host(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) >= {
        "postgresql", "temporal-schema", "temporal", "temporal-namespace", "temporal-ui",
        "codec-server", "worker", "minio", "minio-bucket", "otel-collector", "jaeger",
        "prometheus", *DEV_PROFILE,
    }  # fmt: skip
    assert services["postgresql"]["image"].startswith("postgres:16.")
    assert services["temporal"]["image"].startswith("temporalio/server:")
    assert services["temporal-schema"]["image"].startswith("temporalio/admin-tools:")
    assert services["worker"]["deploy"]["replicas"] == 2
    assert environment(services["temporal"])["VISIBILITY_DBNAME"] == "temporal_visibility"
    assert environment(services["worker"])["TURNKEEPER_STORE_URL"].startswith("s3://")
    ui = environment(services["temporal-ui"])
    assert ui["TEMPORAL_CODEC_ENDPOINT"] == "http://127.0.0.1:8888"
    assert "127.0.0.1:8888:8888" in services["codec-server"]["ports"]
    for name, service in services.items():
        assert (service.get("profiles") == ["dev"]) == (name in DEV_PROFILE), name


def test_every_image_is_pinned(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        if "build" in service:
            continue
        image, _, tag = service["image"].rpartition(":")
        assert image and tag and tag != "latest" and re.search(r"\d", tag), (name, tag)


def test_the_schema_job_runs_before_the_server_and_the_namespace_job_after(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    assert services["temporal"]["depends_on"]["temporal-schema"] == {
        "condition": "service_completed_successfully"
    }
    assert services["temporal-schema"]["depends_on"]["postgresql"]["condition"] == (
        "service_healthy"
    )
    assert services["temporal-namespace"]["depends_on"]["temporal"]["condition"] == (
        "service_healthy"
    )
    assert services["worker"]["depends_on"]["temporal-namespace"]["condition"] == (
        "service_completed_successfully"
    )
    for name in ("postgresql", "temporal", "minio", "worker"):
        assert "healthcheck" in services[name], name


def test_the_namespace_job_creates_the_contracts_search_attributes(
    compose: dict[str, Any],
) -> None:
    script = "\n".join(compose["services"]["temporal-namespace"]["command"])
    created = dict(re.findall(r"\b([A-Z][A-Za-z]+)=(Keyword|Double|Int)\b", script))
    assert created == SEARCH_ATTRIBUTES


def test_every_turnkeeper_variable_is_one_our_code_reads(compose: dict[str, Any]) -> None:
    known = variables_our_code_reads()
    assert {"TURNKEEPER_HEALTH_PORT", "TURNKEEPER_DEPLOYMENT_NAME"} <= known
    for name, service in compose["services"].items():
        unknown = {v for v in environment(service) if v.startswith("TURNKEEPER_")} - known
        assert not unknown, (name, unknown)


def test_no_secret_is_written_in_the_file(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        for variable, value in environment(service).items():
            if SECRET_NAME.search(variable):
                assert INTERPOLATION.match(value), (name, variable)
    used = set(re.findall(r"\$\{([A-Z_]+)", (ROOT / "docker-compose.yml").read_text()))
    example = (ROOT / "deploy" / "env.example").read_text()
    documented = set(re.findall(r"^([A-Z_]+)=", example, re.MULTILINE))
    assert used <= documented, used - documented
    filled = re.findall(r"^([A-Z_]+)=\S", example, re.MULTILINE)
    assert not [name for name in filled if SECRET_NAME.search(name)]  # no secret in the example
    assert ".env" in (ROOT / ".gitignore").read_text().split()


def test_ports_are_bound_to_loopback_and_volumes_are_named(compose: dict[str, Any]) -> None:
    declared = set(compose["volumes"])
    for name, service in compose["services"].items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), (name, port)
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert source.startswith("./") or source in declared, (name, volume)
            if source.startswith("./"):
                assert (ROOT / source).is_file(), source


def test_prometheus_scrapes_the_workers_health_port(compose: dict[str, Any]) -> None:
    port = int(environment(compose["services"]["worker"])["TURNKEEPER_HEALTH_PORT"])
    config = yaml.safe_load((ROOT / "deploy" / "prometheus.yml").read_text())
    job = config["scrape_configs"][0]
    assert job["metrics_path"] == "/metrics"
    assert job["dns_sd_configs"][0] == {"names": ["worker"], "type": "A", "port": port}
    collector = yaml.safe_load((ROOT / "deploy" / "otel-collector.yaml").read_text())
    http = collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    endpoint = environment(compose["services"]["worker"])["OTEL_EXPORTER_OTLP_ENDPOINT"]
    assert endpoint.rsplit(":", 1)[1] == http.rsplit(":", 1)[1]


def kubernetes() -> list[dict[str, Any]]:
    documents = []
    for path in sorted((ROOT / "deploy" / "kubernetes").glob("*.yaml")):
        documents += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return documents


def test_the_worker_deployment_probes_the_health_port_and_drains() -> None:
    [deployment] = [
        d for d in kubernetes() if d["metadata"]["name"].startswith("turnkeeper-worker")
    ]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] > GRACEFUL_SHUTDOWN.total_seconds()
    [worker] = pod["containers"]
    env = {e["name"]: e for e in worker["env"]}
    port = int(env["TURNKEEPER_HEALTH_PORT"]["value"])
    assert [p["containerPort"] for p in worker["ports"] if p["name"] == "health"] == [port]
    assert worker["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert worker["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}
    assert worker["resources"]["requests"] and worker["resources"]["limits"]["memory"]
    assert env["TURNKEEPER_DEPLOYMENT_NAME"]["value"]
    annotations = deployment["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(port)


def test_kubernetes_manifests_pin_images_read_known_variables_and_hold_no_secret() -> None:
    known = variables_our_code_reads()
    documents = kubernetes()
    assert {d["kind"] for d in documents} >= {"Deployment", "Service"}
    for document in documents:
        if document["kind"] != "Deployment":
            continue
        for container in document["spec"]["template"]["spec"]["containers"]:
            tag = container["image"].rpartition(":")[2]
            assert tag and tag != "latest", container["image"]
            for variable in container.get("env", []):
                name = variable["name"]
                assert not name.startswith("TURNKEEPER_") or name in known, name
                if SECRET_NAME.search(name):
                    assert "secretKeyRef" in variable.get("valueFrom", {}), name
