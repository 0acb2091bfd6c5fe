"""What can be checked of docker-compose.yml and deploy/kubernetes without Docker or a cluster:
they parse, every image is pinned, every TURNKEEPER_* variable they set is one our code reads,
no secret is written in them, ports stay on loopback, the schema job runs before the server, the
probes and the scrape point at the health port, the search attributes are the contract's, the
stack will not run unencrypted, and every pod runs unprivileged behind a NetworkPolicy."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from turnkeeper.contracts.names import SEARCH_ATTRIBUTES

from turnkeeper.worker.run import GRACEFUL_SHUTDOWN

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
        d for d in deployments() if d["metadata"]["name"].startswith("turnkeeper-worker")
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


def test_the_production_stack_will_not_start_without_encryption_keys(
    compose: dict[str, Any],
) -> None:
    # Unset, a worker stores prompts, files and tool output in plaintext: the stack shaped like
    # production fails closed (compose stops on `${VAR:?…}`); only the dev profile may omit it.
    for name in ("worker", "codec-server"):
        keys = environment(compose["services"][name])["TURNKEEPER_ENCRYPTION_KEYS"]
        assert re.fullmatch(r"\$\{TURNKEEPER_ENCRYPTION_KEYS:\?[^}]+\}", keys), (name, keys)
    example = (ROOT / "deploy" / "env.example").read_text()
    before = example.split("\nTURNKEEPER_ENCRYPTION_KEYS=", 1)[0].rsplit("\n", 1)[-1]
    assert "Optional" not in before, before  # the comment above it says it is required


def deployments() -> list[dict[str, Any]]:
    return [d for d in kubernetes() if d["kind"] == "Deployment"]


def dockerfile_env(name: str) -> str:
    found = re.search(rf"\b{name}=(\S+)", (ROOT / "Dockerfile").read_text())
    assert found, name
    return found.group(1)


def test_kubernetes_pods_run_unprivileged_on_a_read_only_root() -> None:
    for deployment in deployments():
        name = deployment["metadata"]["name"]
        pod = deployment["spec"]["template"]["spec"]
        assert pod["automountServiceAccountToken"] is False, name
        assert pod["securityContext"]["runAsNonRoot"] is True, name
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, name
        empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
        for container in pod["containers"]:
            context = container["securityContext"]
            assert context["allowPrivilegeEscalation"] is False, name
            assert context["readOnlyRootFilesystem"] is True, name
            assert context["capabilities"] == {"drop": ["ALL"]}, name
            writable = {
                m["mountPath"] for m in container["volumeMounts"] if m["name"] in empty_dirs
            }
            assert "/tmp" in writable, name
            if name.startswith("turnkeeper-worker"):
                wanted = {dockerfile_env("AGENT_WORKSPACE"), dockerfile_env("TURNKEEPER_DATA_DIR")}
                assert wanted <= writable, (name, writable)


def policy_for(deployment: dict[str, Any]) -> dict[str, Any]:
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    [policy] = [
        d
        for d in kubernetes()
        if d["kind"] == "NetworkPolicy"
        and d["spec"]["podSelector"]["matchLabels"].items() <= labels.items()
    ]
    return policy["spec"]


def test_every_pod_has_a_network_policy_that_admits_only_its_own_port() -> None:
    for deployment in deployments():
        policy = policy_for(deployment)
        assert sorted(policy["policyTypes"]) == ["Egress", "Ingress"]
        [container] = deployment["spec"]["template"]["spec"]["containers"]
        served = {p["containerPort"] for p in container["ports"]}
        for rule in policy["ingress"]:
            assert rule["from"], rule  # from named peers, never from anywhere
            assert {p["port"] for p in rule["ports"]} <= served, rule


def test_no_pod_may_reach_the_cloud_metadata_endpoint() -> None:
    # A tool or an MCP server steered by a prompt must not fetch the node's cloud credentials.
    metadata = ipaddress.ip_address("169.254.169.254")
    for deployment in deployments():
        for rule in policy_for(deployment)["egress"]:
            for peer in rule.get("to", [{"ipBlock": {"cidr": "0.0.0.0/0"}}]):
                block = peer.get("ipBlock")
                if block is None:
                    continue
                excepted = [ipaddress.ip_network(c) for c in block.get("except", [])]
                if metadata in ipaddress.ip_network(block["cidr"]):
                    assert any(metadata in network for network in excepted), block


def test_compose_registers_the_same_search_attributes_and_bakes_in_no_key(
    compose: dict[str, Any],
) -> None:
    # The dev profile's server; the production stack's are checked in tests/deployment.
    dev = compose["services"]["temporal-dev"]
    flags = [arg for arg in dev["command"] if "search-attribute" in arg]
    declared = dict(flag.removeprefix("--search-attribute=").split("=") for flag in flags)
    assert declared == SEARCH_ATTRIBUTES
    assert "ANTHROPIC_API_KEY" in compose["services"]["worker-dev"]["environment"]
