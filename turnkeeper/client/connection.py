"""One way to reach Temporal, shared by the worker and the console command."""

from __future__ import annotations

import asyncio
from typing import Any, Final

from temporalio.client import Client
from temporalio.envconfig import ClientConfig

from turnkeeper.client.settings_error import SettingsError
from turnkeeper.client.telemetry_options import telemetry_options
from turnkeeper.ground.logs import get_logger
from turnkeeper.payloads.content_store import ContentStore
from turnkeeper.payloads.encryption_codec import MissingKeyHook
from turnkeeper.payloads.keyring import Keyring
from turnkeeper.payloads.payload_storage import turn_data_converter
from turnkeeper.payloads.stores import StoreLocation, StoreSettings, open_store

DEFAULT_ADDRESS: Final = "localhost:7233"
DEFAULT_NAMESPACE: Final = "default"

# Long enough for a TLS handshake with Temporal Cloud, short enough that a blackholed address
# (a firewall that drops packets) does not look like a hang.
CONNECT_TIMEOUT_S: Final = 15.0

log = get_logger(__name__)


class TemporalUnreachableError(ConnectionError):
    """No Temporal server answered at the configured address."""

    def __init__(self, address: str, namespace: str, cause: str) -> None:
        super().__init__(
            f"Cannot reach Temporal at {address} (namespace {namespace!r}): start a local server "
            "with `python worker.py --dev`, or point TEMPORAL_ADDRESS at a running one."
        )
        self.address = address
        self.namespace = namespace
        self.cause = cause


def connect_config(
    *, address: str | None = None, namespace: str | None = None, from_env: bool = True
) -> dict[str, Any]:
    """Keyword arguments for `Client.connect`, without the data converter.

    Precedence: explicit arguments, then the environment and the profile in the Temporal config
    file (`TEMPORAL_*`, `TEMPORAL_PROFILE`), then `localhost:7233` / `default`.

    Raises:
        SettingsError: The profile is not in the config file, or the file does not parse.
    """
    config: dict[str, Any] = {}
    if from_env:
        try:
            config.update(ClientConfig.load_client_connect_config())
        except RuntimeError as err:
            # The SDK's ConfigError (a RuntimeError of its native module, not importable): a
            # TEMPORAL_PROFILE the file lacks, or a config file that is not TOML.
            problem = str(err).splitlines()[0]
            raise SettingsError(
                f"the Temporal config file or profile is unusable: {problem}"
            ) from None
    config.setdefault("target_host", DEFAULT_ADDRESS)
    config.setdefault("namespace", DEFAULT_NAMESPACE)
    if address:
        config["target_host"] = address
    if namespace:
        config["namespace"] = namespace
    return config


async def connect(
    *,
    address: str | None = None,
    namespace: str | None = None,
    from_env: bool = True,
    settings: StoreLocation | None = None,
    store: ContentStore | None = None,
    keyring: Keyring | None = None,
    on_missing_key: MissingKeyHook | None = None,
    require_encryption: bool = False,
) -> Client:
    """Connect a client that speaks the project's pydantic JSON.

    Args:
        address: `host:port` that overrides `TEMPORAL_ADDRESS` and the config file.
        namespace: Namespace that overrides `TEMPORAL_NAMESPACE` and the config file.
        from_env: Read `TEMPORAL_*` and the config file. The embedded dev server turns this off so
            that a Temporal Cloud API key in the environment does not switch TLS on for localhost.
        settings: Where the content store is, a worker's `Settings` for one (default:
            `TURNKEEPER_STORE_URL`, `TURNKEEPER_STORE_DIR` and `TURNKEEPER_DATA_DIR`, and none
            of the worker's other variables). Large payloads live there, so every client and
            worker of a turn must name the same store.
        store: The store itself, when the caller opened it already (a worker shares one); it
            must encrypt with the same keys (`open_store` does).
        keyring: The encryption keys (default: `TURNKEEPER_ENCRYPTION_KEYS`). Every client and
            worker of a turn needs the key its content was encrypted with.
        on_missing_key: Called when a payload names a key the keyring lacks (a worker stops).
        require_encryption: For a worker's client: mark what arrives unencrypted, for its
            workflows to refuse (`TURNKEEPER_REQUIRE_ENCRYPTION`).

    Raises:
        TemporalUnreachableError: Nothing answered at the address.
        SettingsError: The address or the Temporal config file cannot be used.
        EncryptionKeyError: `TURNKEEPER_ENCRYPTION_KEYS` is malformed.
        StoreLocationError: `TURNKEEPER_STORE_URL` does not name a store.
    """
    config = connect_config(address=address, namespace=namespace, from_env=from_env)
    keyring = Keyring.from_env() if keyring is None else keyring
    store = store or open_store(settings or StoreSettings.from_env(), keyring)
    converter = turn_data_converter(
        store, keyring, on_missing_key=on_missing_key, require_encryption=require_encryption
    )
    target, ns = config["target_host"], config["namespace"]
    try:
        client = await asyncio.wait_for(
            # The tracing plugin and Temporal's metrics runtime, when telemetry is configured.
            Client.connect(**config, data_converter=converter, **telemetry_options()),
            timeout=CONNECT_TIMEOUT_S,
        )
    except TimeoutError as err:
        raise TemporalUnreachableError(target, ns, f"no answer in {CONNECT_TIMEOUT_S:g}s") from err
    except RuntimeError as err:
        # The SDK reports transport failures as a bare RuntimeError("Failed client connect: ...");
        # anything else (a bug, a bad argument) is not ours to reword.
        if "Failed client connect" not in str(err):
            raise
        raise TemporalUnreachableError(target, ns, str(err)) from err
    except ValueError as err:
        # The SDK's answer to an address it cannot parse ("invalid target URL: invalid port").
        raise SettingsError(f"{target!r} is not a Temporal address (host:port): {err}") from None
    log.debug("temporal connected", address=target, namespace=ns)
    return client
