"""Load a CloudFormation / SAM YAML template into plain Python data.

PyYAML's safe loader rejects CloudFormation's short-form intrinsic functions (``!Ref``,
``!Sub``, ``!GetAtt`` ...). This loader turns each of them into the long form that
CloudFormation itself uses in JSON templates::

    !Ref Foo                  -> {"Ref": "Foo"}
    !GetAtt Foo.Arn           -> {"Fn::GetAtt": ["Foo", "Arn"]}
    !Sub "x-${AWS::Region}"   -> {"Fn::Sub": "x-${AWS::Region}"}
    !If [Cond, a, b]          -> {"Fn::If": ["Cond", "a", "b"]}
    !Condition IsProd         -> {"Condition": "IsProd"}

Used by the local dev server (to create the DynamoDB table from ``template.yaml``, the one
source of truth) and by the packaging tests. Standard library + PyYAML only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

__all__ = ["CfnLoader", "load_template", "loads_template", "sub_variables"]

# Short-form tags that map to "Fn::<Name>".
_FN_TAGS = frozenset(
    {
        "And",
        "Base64",
        "Cidr",
        "Equals",
        "FindInMap",
        "ForEach",
        "GetAZs",
        "GetAtt",
        "If",
        "ImportValue",
        "Join",
        "Length",
        "Not",
        "Or",
        "Select",
        "Split",
        "Sub",
        "ToJsonString",
        "Transform",
    }
)


class CfnLoader(yaml.SafeLoader):
    """SafeLoader that understands CloudFormation's intrinsic function tags."""


# CloudFormation reads dates such as AWSTemplateFormatVersion: 2010-09-09 as strings:
# drop the implicit timestamp resolver so they stay strings here too.
CfnLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}


def _construct_node(loader: CfnLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    raise yaml.constructor.ConstructorError(None, None, f"unexpected node {node!r}", node.start_mark)


def _construct_intrinsic(loader: CfnLoader, tag_suffix: str, node: yaml.Node) -> Any:
    value = _construct_node(loader, node)
    if tag_suffix == "Ref":
        return {"Ref": value}
    if tag_suffix == "Condition":
        return {"Condition": value}
    if tag_suffix == "GetAtt" and isinstance(value, str):
        # "Resource.Attribute" (the attribute may itself contain dots, e.g. Endpoint.Address)
        resource, _, attribute = value.partition(".")
        return {"Fn::GetAtt": [resource, attribute]}
    if tag_suffix in _FN_TAGS:
        return {f"Fn::{tag_suffix}": value}
    raise yaml.constructor.ConstructorError(
        None, None, f"unknown CloudFormation tag !{tag_suffix}", node.start_mark
    )


CfnLoader.add_multi_constructor("!", _construct_intrinsic)


def loads_template(text: str) -> dict[str, Any]:
    """Parse template text (YAML or JSON) into a dict with long-form intrinsics."""
    data = yaml.load(text, Loader=CfnLoader)  # CfnLoader is a SafeLoader subclass
    if not isinstance(data, dict):
        raise ValueError("a CloudFormation template must be a mapping at the top level")
    return data


def load_template(path: str | Path) -> dict[str, Any]:
    """Read and parse a CloudFormation / SAM template file."""
    return loads_template(Path(path).read_text(encoding="utf-8"))


_SUB_VAR = re.compile(r"\$\{([^}!]+)\}")


def sub_variables(template_string: str) -> list[str]:
    """The ``${...}`` names a ``Fn::Sub`` string refers to (``${!Literal}`` excluded)."""
    return _SUB_VAR.findall(template_string)
