"""A small evaluator of the template's intrinsic functions, for the values an operator would give.

`Deployment(template, params, region)` resolves parameters (their defaults unless given), pseudo
parameters (the partition follows the region), conditions, mappings and the functions the template
uses, so a test can read the ARN a policy grants or the layer a function gets in aws-cn. A resource's
`Ref` or `GetAtt` becomes a placeholder `<Name>` / `<Name.Attribute>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

NO_VALUE = object()  # AWS::NoValue: the item or property is left out
ACCOUNT = "123456789012"
_SUB_VARIABLE = re.compile(r"\$\{([^}!][^}]*)\}")


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    return "aws-us-gov" if region.startswith("us-gov-") else "aws"


@dataclass
class Deployment:
    template: dict[str, Any]
    params: dict[str, str] = field(default_factory=dict)
    region: str = "us-east-1"

    @property
    def partition(self) -> str:
        return partition_of(self.region)

    def pseudo(self, name: str) -> Any:
        return {
            "AWS::Region": self.region,
            "AWS::Partition": self.partition,
            "AWS::AccountId": ACCOUNT,
            "AWS::URLSuffix": "amazonaws.com.cn" if self.partition == "aws-cn" else "amazonaws.com",
            "AWS::StackName": "rag-test",
            "AWS::NoValue": NO_VALUE,
        }[name]

    def ref(self, name: str) -> Any:
        if name.startswith("AWS::"):
            return self.pseudo(name)
        if name in self.template["Parameters"]:
            return str(self.params.get(name, self.template["Parameters"][name].get("Default", "")))
        assert name in self.template["Resources"], f"!Ref to nothing: {name}"
        return f"<{name}>"

    def condition(self, name: str) -> bool:
        return bool(self.value(self.template["Conditions"][name]))

    def refusals(self) -> list[str]:
        """The rules this deployment breaks: CloudFormation refuses it, saying why."""
        broken = []
        for name, rule in self.template.get("Rules", {}).items():
            applies = self.value(rule["RuleCondition"]) if "RuleCondition" in rule else True
            if applies and not all(self.value(a["Assert"]) for a in rule["Assertions"]):
                broken.append(name)
        return broken

    def grants(self, function: str) -> list[dict[str, Any]]:
        """The statements a function is allowed by, as deployed: its inline policies and the template's
        own managed policies it is given."""
        statements: list[dict[str, Any]] = []
        for policy in self.value(self.template["Resources"][function]["Properties"].get("Policies", [])):
            if isinstance(policy, str):  # a managed policy of this template, !Ref'd: "<Name>"
                policy = self.value(
                    self.template["Resources"][policy.strip("<>")]["Properties"]["PolicyDocument"]
                )
            found = policy["Statement"]
            statements += found if isinstance(found, list) else [found]
        return statements

    def value(self, node: Any) -> Any:
        """The node with every intrinsic function evaluated and AWS::NoValue dropped."""
        if isinstance(node, list):
            return [v for v in (self.value(item) for item in node) if v is not NO_VALUE]
        if not isinstance(node, dict):
            return node
        if len(node) == 1:
            ((key, arg),) = node.items()
            if key == "Ref" or key == "Condition" or key.startswith("Fn::"):
                return self._function(key, arg)
        return {k: v for k, v in ((k, self.value(v)) for k, v in node.items()) if v is not NO_VALUE}

    def _function(self, key: str, arg: Any) -> Any:
        match key:
            case "Ref":
                return self.ref(arg)
            case "Condition":
                return self.condition(arg)
            case "Fn::If":
                name, then, otherwise = arg
                return self.value(then if self.condition(name) else otherwise)
            case "Fn::Equals":
                left, right = (self.value(v) for v in arg)
                return str(left) == str(right)
            case "Fn::Not":
                return not self.value(arg[0])
            case "Fn::And":
                return all(self.value(v) for v in arg)
            case "Fn::Or":
                return any(self.value(v) for v in arg)
            case "Fn::Split":
                return self.value(arg[1]).split(arg[0])
            case "Fn::Select":
                return self.value(arg[1])[int(arg[0])]
            case "Fn::Join":
                return arg[0].join(str(v) for v in self.value(arg[1]))
            case "Fn::FindInMap":
                table, top, second = (self.value(v) for v in arg)
                return self.template["Mappings"][table][top][second]
            case "Fn::GetAtt":
                return f"<{'.'.join(arg if isinstance(arg, list) else arg.split('.'))}>"
            case "Fn::Sub":
                text, variables = (arg, {}) if isinstance(arg, str) else arg
                given = {name: self.value(v) for name, v in variables.items()}
                return _SUB_VARIABLE.sub(lambda m: str(self._sub(m.group(1), given)), text)
        raise AssertionError(f"no evaluator for {key}")

    def _sub(self, name: str, given: dict[str, Any]) -> Any:
        if name in given:
            return given[name]
        if "." in name and not name.startswith("AWS::"):
            return f"<{name}>"
        return self.ref(name)
