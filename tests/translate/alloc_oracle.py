"""The differential oracle: the upstream allocator library (tests/oracle, Go) and random scenarios for it.

``Oracle`` runs ``hack/oracle.sh``'s binary as one long-lived process: a scenario in the
shorthand of tests/data/alloc (see basic.yaml's header) goes in as one JSON line, upstream's
answer comes back as one line. :func:`scenarios` is the hypothesis strategy that draws them:
pools of two drivers with several slices, generations (older ones ignored, incomplete pools),
node targeting (nodeName, allNodes, nodeSelector), duplicate device names (invalid pools),
attributes and capacity, taints; claims with ExactCount and All requests, counts, CEL
selectors (some of which fail at run time), tolerations, firstAvailable subrequests,
matchAttribute and distinctAttribute constraints; devices already held by another claim.
:func:`verdict` puts both answers in one comparable form: ``("error", text)``,
``("unsatisfiable",)`` or ``("allocated", allocations)`` with shareIDs left out.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from tests.translate.alloc_scenarios import documents

ROOT = Path(__file__).resolve().parents[2]
NODE = ("node-1", "region-1")
DRIVERS = ("driver-a", "driver-b")
CLASSES: list[dict[str, Any]] = [
    {"name": "class-a", "selectors": [{"cel": {"expression": 'device.driver == "driver-a"'}}]},
    {"name": "class-b", "selectors": [{"cel": {"expression": 'device.driver == "driver-b"'}}]},
    {"name": "class-any"},
]
SELECTORS = [
    'device.attributes[device.driver].model == "a"',
    '"numa" in device.attributes[device.driver] && device.attributes[device.driver].numa == 1',
    'device.capacity[device.driver].memory.compareTo(quantity("2Gi")) >= 0',
    'device.attributes[device.driver].model != "b" || device.driver == "driver-b"',
]
ATTRIBUTES = ["driver-a/model", "driver-b/model", "driver-a/numa", "driver-b/numa"]
TAINT_KEYS = ["k1", "k2"]


def oracle_binary() -> Path:
    """Build the oracle if needed (hack/oracle.sh build) and return its path."""
    subprocess.run([str(ROOT / "hack" / "oracle.sh"), "build"], check=True, stdout=subprocess.DEVNULL)
    out = subprocess.run([str(ROOT / "hack" / "oracle.sh"), "env"], check=True, capture_output=True, text=True)
    return Path(out.stdout.strip())


class Oracle:
    """One running oracle process; :meth:`ask` sends a scenario and returns upstream's answer."""

    def __init__(self, binary: Path) -> None:
        self._proc = subprocess.Popen([str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, scenario: dict[str, Any]) -> dict[str, Any]:
        """Upstream's answer: ``{"allocations": [...] | None, "error": str, "variant": str}``.

        The library applies no API defaults, so the claims get the API server's first
        (``allocationMode: ExactCount``, ``count: 1``, tolerations' ``operator: Equal``).
        """
        docs = documents(scenario)
        for doc in docs:
            if doc["kind"] == "ResourceClaim":
                for request in doc["spec"]["devices"].get("requests") or []:
                    for exact in [request["exactly"]] if "exactly" in request else request["firstAvailable"]:
                        _default(exact)
        request = {
            "node": next(d for d in docs if d["kind"] == "Node"),
            "classes": [d for d in docs if d["kind"] == "DeviceClass"],
            "slices": [d for d in docs if d["kind"] == "ResourceSlice"],
            "claims": [
                {**d, "metadata": {**d["metadata"], "uid": f"uid-{d['metadata']['name']}"}}
                for d in docs
                if d["kind"] == "ResourceClaim" and d["metadata"]["name"] != "held"
            ],
            "allocated": [
                dict(zip(("driver", "pool", "device"), held.split("/"), strict=True))
                for held in scenario.get("allocated") or []
            ],
        }
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the oracle exited (status {self._proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        """Close its input (it exits at end of input), wait for it, close its output."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.close()
        self._proc.wait(timeout=10)
        self._proc.stdout.close()


def _compile_error(text: str) -> str:
    """A compile error up to ``CEL compile error``: cel-python words the detail its own way."""
    head, sep, _ = text.partition("CEL compile error: ")
    return head + sep if sep else text


def _default(exact: dict[str, Any]) -> None:
    """The API server's defaults for an exact request or subrequest (resource.k8s.io/v1)."""
    exact.setdefault("allocationMode", "ExactCount")
    if exact["allocationMode"] == "ExactCount":
        exact.setdefault("count", 1)
    for toleration in exact.get("tolerations") or []:
        toleration.setdefault("operator", "Equal")


def _strip(value: Any) -> Any:
    """shareIDs left out; empty strings too (Go's ``omitempty`` drops them, as the API server does)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "shareID" and v != ""}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def verdict_of_oracle(answer: dict[str, Any]) -> tuple[Any, ...]:
    """Upstream's answer as ``("error", text)``, ``("unsatisfiable",)`` or ``("allocated", [...])``."""
    if answer.get("error"):
        return ("error", _compile_error(answer["error"]))
    if answer.get("allocations") is None:
        return ("unsatisfiable",)
    return ("allocated", _strip(answer["allocations"]))


def verdict_of_simulation(outcomes: list[Any]) -> tuple[Any, ...]:
    """Our outcomes (the claims of one pod, held claim left out) in the same form."""
    kinds = {o.outcome for o in outcomes}
    assert len(kinds) == 1, [(o.name, o.outcome, o.reason) for o in outcomes]
    kind = kinds.pop()
    if kind == "error":
        return ("error", _compile_error(outcomes[0].reason))
    if kind == "unsatisfiable":
        return ("unsatisfiable",)
    return ("allocated", _strip([o.allocation for o in outcomes]))


# ---------------------------------------------------------------------------------- strategies


@st.composite
def _device(draw: st.DrawFn, name: str) -> dict[str, Any]:
    device: dict[str, Any] = {"name": name}
    attributes: dict[str, Any] = {}
    if draw(st.integers(0, 5)):
        attributes["model"] = {"string": draw(st.sampled_from(["a", "b"]))}
    if draw(st.booleans()):
        attributes["numa"] = {"int": draw(st.integers(0, 1))}
    if attributes:
        device["attributes"] = attributes
    if draw(st.integers(0, 5)):
        device["capacity"] = {"memory": {"value": draw(st.sampled_from(["1Gi", "2Gi", "4Gi"]))}}
    if not draw(st.integers(0, 6)):
        taint = {"key": draw(st.sampled_from(TAINT_KEYS)), "effect": draw(st.sampled_from(["NoSchedule", "NoExecute"]))}
        if draw(st.booleans()):
            taint["value"] = "v"
        device["taints"] = [taint]
    return device


_TARGETS: st.SearchStrategy[dict[str, Any]] = st.sampled_from(
    [
        *[{"nodeName": "node-1"}] * 5,
        {"nodeName": "node-2"},
        {"allNodes": True},
        {
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-1"]}]}
                ]
            }
        },
        {
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "region", "operator": "In", "values": ["region-2"]}]}
                ]
            }
        },
    ]
)


@st.composite
def _pool(draw: st.DrawFn, driver: str, pool: str) -> list[dict[str, Any]]:
    newest = draw(st.integers(1, 2))
    slices = draw(st.integers(1, 2))
    count = slices + (1 if not draw(st.integers(0, 7)) else 0)
    out = []
    number = 0
    for s in range(slices + (1 if newest > 1 and draw(st.booleans()) else 0)):
        generation = newest if s < slices else newest - 1
        devices = []
        for _ in range(draw(st.integers(0 if s else 1, 4))):
            duplicate = number > 0 and not draw(st.integers(0, 30))
            devices.append(draw(_device(f"d{number - 1 if duplicate else number}")))
            number += 0 if duplicate else 1
        out.append(
            {
                "name": f"{driver}-{pool}-{s}",
                "driver": driver,
                "pool": pool,
                "generation": generation,
                "count": count,
                **draw(_TARGETS),
                "devices": devices,
            }
        )
    return out


_TOLERATIONS = st.sampled_from(
    [
        {"key": "k1", "operator": "Exists"},
        {"key": "k1", "operator": "Equal", "value": "v", "effect": "NoSchedule"},
        {"operator": "Exists"},
        {"key": "k2", "operator": "Equal", "value": "", "effect": "NoExecute"},
    ]
)


@st.composite
def _exact(draw: st.DrawFn) -> dict[str, Any]:
    exact: dict[str, Any] = {"deviceClassName": draw(st.sampled_from([c["name"] for c in CLASSES]))}
    if draw(st.integers(0, 2)) == 0:
        exact["selectors"] = [{"cel": {"expression": draw(st.sampled_from(SELECTORS))}}]
    if not draw(st.integers(0, 6)):
        exact["allocationMode"] = "All"
    else:
        exact["allocationMode"] = "ExactCount"
        exact["count"] = draw(st.sampled_from([1, 1, 1, 2, 2, 3]))
    if not draw(st.integers(0, 3)):
        exact["tolerations"] = [draw(_TOLERATIONS)]
    return exact


@st.composite
def _claim(draw: st.DrawFn) -> dict[str, Any]:
    requests: list[dict[str, Any]] = []
    for r in range(draw(st.integers(1, 2))):
        if not draw(st.integers(0, 3)):
            subs = [{"name": f"sub-{s}", **draw(_exact())} for s in range(draw(st.integers(1, 3)))]
            requests.append({"name": f"req-{r}", "firstAvailable": subs})
        else:
            requests.append({"name": f"req-{r}", "exactly": draw(_exact())})
    claim: dict[str, Any] = {"requests": requests}
    if not draw(st.integers(0, 2)):
        kind = draw(st.sampled_from(["matchAttribute", "matchAttribute", "distinctAttribute"]))
        constraint: dict[str, Any] = {kind: draw(st.sampled_from(ATTRIBUTES))}
        if draw(st.booleans()):
            constraint["requests"] = [draw(st.sampled_from([r["name"] for r in requests]))]
        claim["constraints"] = [constraint]
    return claim


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    """A random scenario in the shorthand of tests/data/alloc (see the module docstring)."""
    slices: list[dict[str, Any]] = []
    for driver in DRIVERS:
        for pool in draw(st.lists(st.sampled_from(["p1", "p2"]), unique=True, min_size=1, max_size=2)):
            slices += draw(_pool(driver, pool))
    devices = sorted({f"{s['driver']}/{s['pool']}/{d['name']}" for s in slices for d in s["devices"]})
    allocated = draw(st.lists(st.sampled_from(devices), unique=True, max_size=2)) if devices else []
    scenario: dict[str, Any] = {
        "node": list(NODE),
        "classes": CLASSES,
        "slices": slices,
        "claims": draw(st.lists(_claim(), min_size=1, max_size=2)),
    }
    if allocated:
        scenario["allocated"] = allocated
    return scenario
