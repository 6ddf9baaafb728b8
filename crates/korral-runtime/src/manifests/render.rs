//! Rendering an operator's manifests: CRDs, RBAC (ClusterRole, leader-election Role,
//! ServiceAccount, bindings) and the manager (Namespace, Deployment), as Kubernetes objects
//! grouped in files under `config/`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::rbac::{Permissions, Rule};
use super::{Manifests, ManifestsError};

/// What the deploy manifests are named after and where they go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorInfo {
    /// The project name (`memcached-operator`); objects are prefixed with it.
    pub name: String,
    /// The namespace the manager is deployed to (default `<name>-system`).
    pub namespace: String,
    /// The manager image (default `controller:latest`; `korral deploy --image` replaces it).
    pub image: String,
    /// The name of the leader-election Lease.
    pub leader_election_id: String,
}

impl OperatorInfo {
    /// The defaults for the operator `name` of `domain`.
    pub fn new(name: impl Into<String>, domain: &str) -> Self {
        let name = name.into();
        Self {
            namespace: format!("{name}-system"),
            image: "controller:latest".to_owned(),
            leader_election_id: format!("{name}.{domain}"),
            name,
        }
    }

    /// Sets the namespace.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets the image.
    pub fn image(mut self, image: impl Into<String>) -> Self {
        self.image = image.into();
        self
    }

    /// The manager's ServiceAccount.
    pub fn service_account(&self) -> String {
        format!("{}-controller-manager", self.name)
    }

    /// The manager's Deployment.
    pub fn deployment_name(&self) -> String {
        format!("{}-controller-manager", self.name)
    }
}

/// One file of manifests: its path relative to the project and its objects.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestFile {
    /// Where the file goes (`config/rbac/role.yaml`).
    pub path: String,
    /// The objects, in order.
    pub objects: Vec<Value>,
}

/// Every manifest of an operator, as printed by `--print-manifests` and read by `korral generate`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestSet {
    /// Always [`ManifestSet::API_VERSION`].
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    /// Always `ManifestSet`.
    pub kind: String,
    /// The operator's name.
    pub name: String,
    /// The files.
    pub files: Vec<ManifestFile>,
}

impl ManifestSet {
    /// The `apiVersion` of a printed manifest set.
    pub const API_VERSION: &'static str = "korral.rs/v1";
}

fn labels(info: &OperatorInfo, component: &str) -> Value {
    json!({
        "app.kubernetes.io/name": info.name,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": "korral",
    })
}

fn rules_json(rules: &[Rule]) -> Vec<Value> {
    rules
        .iter()
        .map(|r| {
            json!({
                "apiGroups": [r.group],
                "resources": r.resources,
                "verbs": r.verbs,
            })
        })
        .collect()
}

/// The permissions the manager needs for leader election in its own namespace.
pub fn leader_election_permissions() -> Permissions {
    let mut perms = Permissions::new();
    perms.add(Rule::new("", ["configmaps"]).verbs(super::rbac::OWN_VERBS));
    perms.add(Rule::new("coordination.k8s.io", ["leases"]).verbs(super::rbac::OWN_VERBS));
    perms.add(Rule::new("", ["events"]).verbs(["create", "patch"]));
    perms
}

pub(super) fn render(
    manifests: &Manifests,
    info: &OperatorInfo,
) -> Result<ManifestSet, ManifestsError> {
    let mut files = Vec::new();
    for crd in &manifests.crds {
        let group = &crd.spec.group;
        let plural = &crd.spec.names.plural;
        let object = serde_json::to_value(crd).map_err(|source| ManifestsError::SerializeCrd {
            name: crd.metadata.name.clone().unwrap_or_default(),
            source,
        })?;
        files.push(ManifestFile {
            path: format!("config/crd/bases/{group}_{plural}.yaml"),
            objects: vec![object],
        });
    }

    let rbac_labels = labels(info, "rbac");
    let sa = info.service_account();
    let manager_role = format!("{}-manager-role", info.name);
    let leader_role = format!("{}-leader-election-role", info.name);
    files.push(ManifestFile {
        path: "config/rbac/service_account.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": sa, "namespace": info.namespace, "labels": rbac_labels},
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/role.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": manager_role, "labels": rbac_labels},
            "rules": rules_json(&manifests.permissions.rules()),
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/role_binding.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": format!("{}-manager-rolebinding", info.name), "labels": rbac_labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": manager_role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": info.namespace}],
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/leader_election_role.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": leader_role, "namespace": info.namespace, "labels": rbac_labels},
            "rules": rules_json(&leader_election_permissions().rules()),
        })],
    });
    files.push(ManifestFile {
        path: "config/rbac/leader_election_role_binding.yaml".to_owned(),
        objects: vec![json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {
                "name": format!("{}-leader-election-rolebinding", info.name),
                "namespace": info.namespace,
                "labels": rbac_labels,
            },
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": leader_role},
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": info.namespace}],
        })],
    });

    files.push(ManifestFile {
        path: "config/manager/manager.yaml".to_owned(),
        objects: vec![
            json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": info.namespace,
                    "labels": {
                        "app.kubernetes.io/name": info.name,
                        "app.kubernetes.io/managed-by": "korral",
                        "control-plane": "controller-manager",
                    },
                },
            }),
            deployment(info),
        ],
    });
    Ok(ManifestSet {
        api_version: ManifestSet::API_VERSION.to_owned(),
        kind: "ManifestSet".to_owned(),
        name: info.name.clone(),
        files,
    })
}

fn deployment(info: &OperatorInfo) -> Value {
    let selector = json!({
        "control-plane": "controller-manager",
        "app.kubernetes.io/name": info.name,
    });
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": info.deployment_name(),
            "namespace": info.namespace,
            "labels": {
                "control-plane": "controller-manager",
                "app.kubernetes.io/name": info.name,
                "app.kubernetes.io/managed-by": "korral",
            },
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {
                    "labels": selector,
                    "annotations": {"kubectl.kubernetes.io/default-container": "manager"},
                },
                "spec": {
                    "serviceAccountName": info.service_account(),
                    "terminationGracePeriodSeconds": 10,
                    "securityContext": {
                        "runAsNonRoot": true,
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [{
                        "name": "manager",
                        "image": info.image,
                        "command": ["/manager"],
                        "args": [
                            "--leader-elect",
                            "--metrics-bind-address=:8080",
                            "--health-probe-bind-address=:8081",
                        ],
                        "env": [{
                            "name": "POD_NAMESPACE",
                            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
                        }],
                        "ports": [
                            {"name": "metrics", "containerPort": 8080, "protocol": "TCP"},
                            {"name": "probes", "containerPort": 8081, "protocol": "TCP"},
                        ],
                        "livenessProbe": {
                            "httpGet": {"path": "/healthz", "port": 8081},
                            "initialDelaySeconds": 15,
                            "periodSeconds": 20,
                        },
                        "readinessProbe": {
                            "httpGet": {"path": "/readyz", "port": 8081},
                            "initialDelaySeconds": 5,
                            "periodSeconds": 10,
                        },
                        "resources": {
                            "limits": {"cpu": "500m", "memory": "128Mi"},
                            "requests": {"cpu": "10m", "memory": "64Mi"},
                        },
                        "securityContext": {
                            "allowPrivilegeEscalation": false,
                            "readOnlyRootFilesystem": true,
                            "runAsNonRoot": true,
                            "capabilities": {"drop": ["ALL"]},
                        },
                    }],
                },
            },
        },
    })
}
