"""A minimal install of dra-webhook and the dra-bridge agent from the image, as plain objects
(what the chart renders, reduced to what the image e2e needs): ServiceAccounts with exactly the
RBAC of ``webhook/access.py`` and ``bridge/access.py``, the webhook's TLS Secret, Deployment,
Service and MutatingWebhookConfiguration, and the agent as a pod on the real node with the
node's kubelet, CDI and state directories mounted at their host paths.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

from dra_bridge.bridge.access import API_CALLS as BRIDGE_CALLS
from dra_bridge.kube.resources import ApiCall, rbac_rules
from dra_bridge.webhook.access import API_CALLS as WEBHOOK_CALLS
from tests.e2e.kubeapi import Obj, api_path
from tests.e2e.realnode import RealNode

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ADMISSION = "admissionregistration.k8s.io/v1"
HARDENED = {
    "runAsNonRoot": True,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


def service_account(ns: str, name: str, calls: tuple[ApiCall, ...]) -> list[tuple[str, Obj]]:
    """A ServiceAccount, a ClusterRole and a Role in ``ns`` granting exactly ``calls``, bound."""
    sa = [{"kind": "ServiceAccount", "name": name, "namespace": ns}]
    ref = {"apiGroup": "rbac.authorization.k8s.io", "name": f"{name}-{ns}"}
    out: list[tuple[str, Obj]] = [
        (api_path("v1", "serviceaccounts", ns), {"metadata": {"name": name}}),
        (f"{RBAC}/clusterroles", {"metadata": {"name": ref["name"]}, "rules": rbac_rules(calls)}),
        (
            f"{RBAC}/clusterrolebindings",
            {"metadata": {"name": ref["name"]}, "subjects": sa, "roleRef": {**ref, "kind": "ClusterRole"}},
        ),
    ]
    if rbac_rules(calls, "namespace"):
        out += [
            (
                f"{RBAC}/namespaces/{ns}/roles",
                {"metadata": {"name": ref["name"]}, "rules": rbac_rules(calls, "namespace")},
            ),
            (
                f"{RBAC}/namespaces/{ns}/rolebindings",
                {"metadata": {"name": ref["name"]}, "subjects": sa, "roleRef": {**ref, "kind": "Role"}},
            ),
        ]
    return out


def webhook(image: str, ns: str, certs: Any, selector: dict[str, str]) -> list[tuple[str, Obj]]:
    """dra-webhook in ``ns``, called in enforce mode for namespaces matching ``selector``."""
    tls = {
        k: base64.b64encode(Path(p).read_bytes()).decode()
        for k, p in (("tls.crt", certs.cert), ("tls.key", certs.key), ("ca.crt", certs.ca_cert))
    }
    labels = {"app": "dra-webhook"}
    args = [
        "serve",
        "--tls-cert-file=/certs/tls.crt",
        "--tls-key-file=/certs/tls.key",
        "--ca-bundle=/certs/ca.crt",
        f"--service-name=dra-webhook.{ns}.svc",
        "--api-version=resource.k8s.io/v1",
        *(f"--namespace-label={key}" for key in selector),  # its enrolment gate judges as the selector
    ]
    probe = {"httpGet": {"path": "/readyz", "port": 8443, "scheme": "HTTPS"}, "periodSeconds": 1}
    return [
        *service_account(ns, "dra-webhook", WEBHOOK_CALLS),
        (
            api_path("v1", "secrets", ns),
            {"metadata": {"name": "dra-webhook-tls"}, "type": "kubernetes.io/tls", "data": tls},
        ),
        (
            api_path("apps/v1", "deployments", ns),
            {
                "metadata": {"name": "dra-webhook"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": labels},
                    "template": {
                        "metadata": {"labels": labels},
                        "spec": {
                            "serviceAccountName": "dra-webhook",
                            "terminationGracePeriodSeconds": 1,
                            # a Service named dra-webhook would set DRA_WEBHOOK_PORT=tcp://..., the --port twin
                            "enableServiceLinks": False,
                            "containers": [
                                {
                                    "name": "webhook",
                                    "image": image,
                                    "imagePullPolicy": "Never",
                                    "command": ["dra-webhook"],
                                    "args": args,
                                    "readinessProbe": probe,
                                    "ports": [{"containerPort": 8443, "name": "https"}],
                                    "securityContext": HARDENED,
                                    "volumeMounts": [{"name": "certs", "mountPath": "/certs", "readOnly": True}],
                                }
                            ],
                            "volumes": [{"name": "certs", "secret": {"secretName": "dra-webhook-tls"}}],
                        },
                    },
                },
            },
        ),
        (
            api_path("v1", "services", ns),
            {
                "metadata": {"name": "dra-webhook"},
                "spec": {"selector": labels, "ports": [{"port": 443, "targetPort": "https"}]},
            },
        ),
        (
            api_path(ADMISSION, "mutatingwebhookconfigurations"),
            {
                "metadata": {"name": f"dra-webhook-{ns}"},
                "webhooks": [
                    {
                        "name": "enforce.image-e2e.dra-bridge.io",
                        "admissionReviewVersions": ["v1"],
                        "clientConfig": {
                            "service": {"namespace": ns, "name": "dra-webhook", "path": "/mutate/enforce"},
                            "caBundle": tls["ca.crt"],
                        },
                        "rules": [
                            {
                                "operations": ["CREATE"],
                                "apiGroups": [""],
                                "apiVersions": ["v1"],
                                "resources": ["pods"],
                                "scope": "Namespaced",
                            }
                        ],
                        "namespaceSelector": {"matchLabels": selector},
                        "sideEffects": "NoneOnDryRun",
                        "failurePolicy": "Fail",
                        "timeoutSeconds": 10,
                    }
                ],
            },
        ),
    ]


def agent(image: str, ns: str, node: RealNode, state_dir: Path) -> list[tuple[str, Obj]]:
    """The dra-bridge agent as a pod on ``node`` (root: it serves sockets in the kubelet's
    directories), each host directory mounted at its own path so that the socket paths it
    registers are the kubelet's."""
    dirs = {"kubelet": node.root_dir, "cdi": node.cdi_dir, "state": state_dir}
    field = {"fieldRef": {"fieldPath": "spec.nodeName"}}
    args = [
        "run",
        f"--kubelet-dir={node.root_dir}",
        f"--state-dir={state_dir}",
        f"--cdi-dir={node.cdi_dir}",
        "--poll-interval=0.5",
        "--settle-period=1",
        "--health-port=0",
        "--resource-api-version=v1",
    ]
    return [
        *service_account(ns, "dra-bridge", BRIDGE_CALLS),
        (
            api_path("v1", "pods", ns),
            {
                "metadata": {"name": "dra-bridge-agent", "labels": {"app": "dra-bridge"}},
                "spec": {
                    "serviceAccountName": "dra-bridge",
                    "nodeName": node.name,
                    "terminationGracePeriodSeconds": 5,
                    "enableServiceLinks": False,
                    "containers": [
                        {
                            "name": "agent",
                            "image": image,
                            "imagePullPolicy": "Never",
                            "command": ["dra-bridge"],
                            "args": args,
                            "env": [{"name": "DRA_BRIDGE_NODE_NAME", "valueFrom": field}],
                            "securityContext": {
                                "runAsUser": 0,
                                "runAsNonRoot": False,
                                "readOnlyRootFilesystem": True,
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [{"name": k, "mountPath": str(v)} for k, v in dirs.items()],
                        }
                    ],
                    "volumes": [
                        {"name": k, "hostPath": {"path": str(v), "type": "Directory"}} for k, v in dirs.items()
                    ],
                },
            },
        ),
    ]
