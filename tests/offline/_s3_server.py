"""A real S3-protocol server on loopback (moto's server mode) with IAM checks turned on.

```python
with s3_server() as server:              # moto_server on 127.0.0.1, stopped afterwards
    server.environ                       # AWS_* variables of a reader allowed one bucket
    server.admin.put_object(...)         # a boto3 client allowed everything
```

The server checks signatures and policies (`INITIAL_NO_AUTH_ACTION_COUNT`): the first requests
create an administrator; then `environ` names a user whose policy allows the buckets in
`READABLE` only, so another bucket is denied and a wrong key is refused, as on AWS.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import pytest

READABLE: Final = ("traces", "results")
"""Buckets the reader may list, read and write."""
DENIED: Final = "private"
"""A bucket that exists but the reader may not touch."""
_SETUP_REQUESTS: Final = 3
"""Unauthenticated requests the server allows: CreateUser, CreateAccessKey, PutUserPolicy."""


@dataclass(frozen=True)
class S3Server:
    """A running server: its endpoint, the reader's environment and an admin client."""

    endpoint: str
    environ: dict[str, str]
    admin: Any


def _free_port() -> int:
    """A free TCP port on loopback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait(endpoint: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    """Return once the server accepts connections; RuntimeError when it exits or never does."""
    host, port = endpoint.rsplit("//", 1)[1].split(":")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moto_server exited with {process.returncode}")
        try:
            with socket.create_connection((host, int(port)), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("moto_server did not start in time")


def _user(iam: Any, name: str, policy: dict[str, Any]) -> dict[str, str]:
    """Create an IAM user with an inline policy; its access key."""
    iam.create_user(UserName=name)
    key = iam.create_access_key(UserName=name)["AccessKey"]
    iam.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
    return {
        "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
        "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
    }


def _statement(resources: list[str], actions: str = "s3:*") -> dict[str, Any]:
    """A policy allowing `actions` (every S3 action by default) on `resources`."""
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": [actions], "Resource": resources}],
    }


@contextmanager
def s3_server() -> Iterator[S3Server]:
    """Start moto_server on loopback with IAM checks, create the buckets and the users."""
    import boto3

    endpoint = f"http://127.0.0.1:{_free_port()}"
    env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(_SETUP_REQUESTS))
    port = endpoint.rsplit(":", 1)[1]
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", port]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait(endpoint, process)
        base = {"AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": endpoint}
        anonymous = {"aws_access_key_id": "setup", "aws_secret_access_key": "setup"}
        iam = boto3.client("iam", endpoint_url=endpoint, region_name="us-east-1", **anonymous)
        admin_keys = _user(iam, "admin", _statement(["*"], "*"))
        admin_iam = boto3.client(
            "iam",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=admin_keys["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=admin_keys["AWS_SECRET_ACCESS_KEY"],
        )
        resources = [f"arn:aws:s3:::{b}" for b in READABLE] + [
            f"arn:aws:s3:::{b}/*" for b in READABLE
        ]
        reader = _user(admin_iam, "reader", _statement(resources))
        admin = boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id=admin_keys["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=admin_keys["AWS_SECRET_ACCESS_KEY"],
        )
        for bucket in (*READABLE, DENIED):
            admin.create_bucket(Bucket=bucket)
        yield S3Server(endpoint, {**base, **reader}, admin)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def s3_reader() -> Iterator[S3Server]:
    """`s3_server()` with its reader's variables set in this process's environment, restored
    afterwards (what a module-scoped fixture yields)."""
    with s3_server() as running:
        saved = {name: os.environ.get(name) for name in running.environ}
        os.environ.update(running.environ)
        try:
            yield running
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


@pytest.fixture(scope="module", name="server")
def reader_server() -> Iterator[S3Server]:
    """The `server` fixture of a test module that imports it: moto_server on 127.0.0.1 for the
    module, its reader's credentials in the environment (`s3_reader`)."""
    with s3_reader() as running:
        yield running
