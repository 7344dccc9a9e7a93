"""Where a tool catalogue (or the MCP_SERVERS document) comes from: a file, an S3 object or an SSM
parameter, parsed as YAML or JSON. `setting` names the variable in every error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_orchestrator.errors import ConfigError

if TYPE_CHECKING:
    from rag_orchestrator.aws import AwsClients

CATALOG_SETTING = "TOOL_CATALOG_PATH"


def read_catalog_document(location: str, aws: AwsClients | None, setting: str = CATALOG_SETTING) -> Any:
    """The document at `location` (a path, `s3://bucket/key` or `ssm:/name`), parsed; a remote one
    read with `aws`."""
    if location.startswith(("s3://", "ssm:")):
        if aws is None:
            raise ConfigError(f"{setting}: {location} is in AWS, and no AWS client was given")
        return read_remote_document(location, aws, setting)
    return read_document(Path(location), setting)


def parse_document(text: str, source: str, suffix: str, setting: str = CATALOG_SETTING) -> Any:
    """A catalogue's text parsed as YAML or JSON by its `suffix` (an SSM parameter's has none: YAML)."""
    suffix = suffix.lower()
    if suffix not in ("", ".yaml", ".yml", ".json"):
        raise ConfigError(f"{setting}: {source} must end in .yaml, .yml or .json")
    try:
        if suffix == ".json":
            return json.loads(text)
        import yaml

        # libyaml's parser where the wheel has it (Lambda's layer does): the same documents, ~8x faster
        # (a 30-tool catalogue: 41 -> 5 ms of a cold start's CPU, docs/performance.md).
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (ValueError, ImportError) as exc:
        raise ConfigError(f"{setting}: {source} is not valid: {exc}") from None
    except Exception as exc:  # yaml.YAMLError, without importing yaml for JSON catalogues
        raise ConfigError(f"{setting}: {source} is not valid YAML: {exc}") from None


def read_document(path: Path, setting: str = CATALOG_SETTING) -> Any:
    """A catalogue file's content, parsed as YAML or JSON by its extension."""
    if path.suffix.lower() not in (".yaml", ".yml", ".json"):
        raise ConfigError(f"{setting}: {path} must end in .yaml, .yml or .json")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{setting}: cannot read {path}: {exc.strerror or exc}") from None
    return parse_document(text, str(path), path.suffix, setting)


def read_remote_document(location: str, aws: AwsClients, setting: str = CATALOG_SETTING) -> Any:
    """The catalogue in an S3 object (`s3://bucket/key`) or an SSM parameter (`ssm:/name`), parsed."""
    from rag_orchestrator.aws import error_code

    try:
        if location.startswith("ssm:"):
            name = location.removeprefix("ssm:")
            parameter = aws.client("ssm").get_parameter(Name=name, WithDecryption=True)
            return parse_document(parameter["Parameter"]["Value"], location, "", setting)
        bucket, _, key = location.removeprefix("s3://").partition("/")
        if not bucket or not key:
            raise ConfigError(f"{setting}: {location} must be s3://bucket/key")
        suffix = Path(key).suffix
        if suffix.lower() not in (".yaml", ".yml", ".json"):
            raise ConfigError(f"{setting}: {location} must end in .yaml, .yml or .json")
        body = aws.objects().get_object(Bucket=bucket, Key=key)["Body"].read()
        return parse_document(body.decode("utf-8"), location, suffix, setting)
    except ConfigError:
        raise
    except UnicodeDecodeError:
        raise ConfigError(f"{setting}: {location} is not UTF-8 text") from None
    except Exception as exc:  # botocore's ClientError and BotoCoreError, without importing botocore
        raise ConfigError(f"{setting}: cannot read {location} ({error_code(exc)})") from None
