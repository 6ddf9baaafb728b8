//! The RBAC bootstrap policy of an RBAC server is upstream kube-apiserver's (its
//! `bootstrappolicy` package, as its testdata lists the objects): the names of every
//! ClusterRole, ClusterRoleBinding, Role and RoleBinding, a few roles' rules exactly, and what
//! the `system:auth-delegator` role grants a service account bound to it.

mod common;

use std::collections::BTreeSet;

use common::{raw, rbac_env};
use korral_testenv::TestEnv;
use serde_json::{Value, json};

/// Upstream's ClusterRoles (testdata/cluster-roles.yaml for a default server).
const CLUSTER_ROLES: &[&str] = &[
    "admin",
    "cluster-admin",
    "edit",
    "system:aggregate-to-admin",
    "system:aggregate-to-edit",
    "system:aggregate-to-view",
    "system:auth-delegator",
    "system:basic-user",
    "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
    "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
    "system:certificates.k8s.io:kube-apiserver-client-approver",
    "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
    "system:certificates.k8s.io:kubelet-serving-approver",
    "system:certificates.k8s.io:legacy-unknown-approver",
    "system:discovery",
    "system:heapster",
    "system:kube-aggregator",
    "system:kube-controller-manager",
    "system:kube-dns",
    "system:kube-scheduler",
    "system:kubelet-api-admin",
    "system:monitoring",
    "system:node",
    "system:node-bootstrapper",
    "system:node-problem-detector",
    "system:node-proxier",
    "system:persistent-volume-provisioner",
    "system:public-info-viewer",
    "system:service-account-issuer-discovery",
    "system:volume-scheduler",
    "view",
];

/// Upstream's ClusterRoleBindings (testdata/cluster-role-bindings.yaml).
const CLUSTER_ROLE_BINDINGS: &[&str] = &[
    "cluster-admin",
    "system:basic-user",
    "system:discovery",
    "system:kube-controller-manager",
    "system:kube-dns",
    "system:kube-scheduler",
    "system:monitoring",
    "system:node",
    "system:node-proxier",
    "system:public-info-viewer",
    "system:service-account-issuer-discovery",
    "system:volume-scheduler",
];

/// Upstream's controllers with a role `system:controller:<name>` and a binding of the same
/// name (testdata/controller-roles.yaml and controller-role-bindings.yaml).
const CONTROLLERS: &[&str] = &[
    "attachdetach-controller",
    "certificate-controller",
    "clusterrole-aggregation-controller",
    "cronjob-controller",
    "daemon-set-controller",
    "deployment-controller",
    "device-taint-eviction-controller",
    "disruption-controller",
    "endpoint-controller",
    "endpointslice-controller",
    "endpointslicemirroring-controller",
    "ephemeral-volume-controller",
    "expand-controller",
    "generic-garbage-collector",
    "horizontal-pod-autoscaler",
    "job-controller",
    "legacy-service-account-token-cleaner",
    "namespace-controller",
    "node-controller",
    "persistent-volume-binder",
    "pod-garbage-collector",
    "pv-protection-controller",
    "pvc-protection-controller",
    "replicaset-controller",
    "replication-controller",
    "resource-claim-controller",
    "resourcequota-controller",
    "root-ca-cert-publisher",
    "route-controller",
    "selinux-warning-controller",
    "service-account-controller",
    "service-cidrs-controller",
    "service-controller",
    "statefulset-controller",
    "ttl-after-finished-controller",
    "ttl-controller",
    "validatingadmissionpolicy-status-controller",
    "volumeattributesclass-protection-controller",
];

/// Upstream's Roles, `namespace/name` (testdata/namespace-roles.yaml).
const ROLES: &[&str] = &[
    "kube-public/system:controller:bootstrap-signer",
    "kube-system/extension-apiserver-authentication-reader",
    "kube-system/system::leader-locking-kube-controller-manager",
    "kube-system/system::leader-locking-kube-scheduler",
    "kube-system/system:controller:bootstrap-signer",
    "kube-system/system:controller:cloud-provider",
    "kube-system/system:controller:token-cleaner",
];

/// Upstream's RoleBindings, `namespace/name` (testdata/namespace-role-bindings.yaml).
const ROLE_BINDINGS: &[&str] = &[
    "kube-public/system:controller:bootstrap-signer",
    "kube-system/system::extension-apiserver-authentication-reader",
    "kube-system/system::leader-locking-kube-controller-manager",
    "kube-system/system::leader-locking-kube-scheduler",
    "kube-system/system:controller:bootstrap-signer",
    "kube-system/system:controller:cloud-provider",
    "kube-system/system:controller:token-cleaner",
];

/// GET `path` as the admin: the JSON answer, which must be 200.
async fn get(env: &TestEnv, path: &str) -> Value {
    let (code, body) = raw(&env.client(), "GET", path, None, Vec::new()).await;
    assert_eq!(code, 200, "GET {path}: {body}");
    body
}

/// The bootstrap objects (labelled `kubernetes.io/bootstrapping=rbac-defaults`) of a list
/// path, as `namespace/name` (or `name` when cluster-scoped), each checked for upstream's
/// label and annotation.
async fn bootstrap_names(env: &TestEnv, path: &str) -> BTreeSet<String> {
    let list = get(
        env,
        &format!("{path}?labelSelector=kubernetes.io%2Fbootstrapping%3Drbac-defaults"),
    )
    .await;
    let items = list["items"].as_array().expect("items");
    items
        .iter()
        .map(|item| {
            let md = &item["metadata"];
            assert_eq!(
                md["annotations"]["rbac.authorization.kubernetes.io/autoupdate"], "true",
                "{md}"
            );
            let name = md["name"].as_str().expect("name");
            match md["namespace"].as_str() {
                Some(ns) => format!("{ns}/{name}"),
                None => name.to_string(),
            }
        })
        .collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn the_bootstrap_policy_is_upstreams() {
    let env = rbac_env().await;
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let controllers: Vec<String> = CONTROLLERS
        .iter()
        .map(|c| format!("system:controller:{c}"))
        .collect();

    let cluster_roles = bootstrap_names(&env, &format!("{rbac}/clusterroles")).await;
    let mut want = names(CLUSTER_ROLES);
    want.extend(controllers.iter().cloned());
    assert_eq!(cluster_roles, want);
    assert_eq!(cluster_roles.len(), 31 + 38);

    let cluster_role_bindings = bootstrap_names(&env, &format!("{rbac}/clusterrolebindings")).await;
    let mut want = names(CLUSTER_ROLE_BINDINGS);
    want.extend(controllers.iter().cloned());
    assert_eq!(cluster_role_bindings, want);
    assert_eq!(cluster_role_bindings.len(), 12 + 38);

    let roles = bootstrap_names(&env, &format!("{rbac}/roles")).await;
    assert_eq!(roles, names(ROLES));
    let role_bindings = bootstrap_names(&env, &format!("{rbac}/rolebindings")).await;
    assert_eq!(role_bindings, names(ROLE_BINDINGS));

    // Each controller's binding names its role and its service account in kube-system.
    let binding = get(
        &env,
        &format!("{rbac}/clusterrolebindings/system:controller:job-controller"),
    )
    .await;
    assert_eq!(
        binding["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:controller:job-controller"})
    );
    assert_eq!(
        binding["subjects"],
        json!([{"kind": "ServiceAccount", "name": "job-controller", "namespace": "kube-system"}])
    );
    // `system:node` is bound to nobody (the Node authorizer took over).
    let node = get(&env, &format!("{rbac}/clusterrolebindings/system:node")).await;
    assert!(node.get("subjects").is_none(), "{node}");
    let leader = get(
        &env,
        &format!("{rbac}/namespaces/kube-system/rolebindings/system::leader-locking-kube-controller-manager"),
    )
    .await;
    assert_eq!(
        leader["subjects"],
        json!([
            {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:kube-controller-manager"},
            {"kind": "ServiceAccount", "name": "kube-controller-manager", "namespace": "kube-system"},
            {"kind": "ServiceAccount", "name": "leader-election-controller", "namespace": "kube-system"},
        ])
    );
}

/// The rules of `path`, each as `(apiGroups, resources, resourceNames, verbs)` in order.
async fn rules(env: &TestEnv, path: &str) -> Vec<Value> {
    let role = get(env, path).await;
    assert_eq!(
        role["metadata"]["labels"]["kubernetes.io/bootstrapping"],
        "rbac-defaults"
    );
    role["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| {
            json!([
                r.get("apiGroups"),
                r.get("resources"),
                r.get("resourceNames"),
                r.get("verbs")
            ])
        })
        .collect()
}

#[tokio::test]
async fn roles_hold_upstreams_rules_in_order() {
    let env = rbac_env().await;
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let events = json!([
        ["", "events.k8s.io"],
        ["events"],
        null,
        ["create", "patch", "update"]
    ]);

    assert_eq!(
        rules(&env, &format!("{rbac}/clusterroles/system:auth-delegator")).await,
        vec![
            json!([
                ["authentication.k8s.io"],
                ["tokenreviews"],
                null,
                ["create"]
            ]),
            json!([
                ["authorization.k8s.io"],
                ["subjectaccessreviews"],
                null,
                ["create"]
            ]),
        ]
    );
    assert_eq!(
        rules(&env, &format!("{rbac}/clusterroles/system:node-proxier")).await,
        vec![
            json!([[""], ["endpoints", "services"], null, ["list", "watch"]]),
            json!([[""], ["nodes"], null, ["get", "list", "watch"]]),
            events.clone(),
            json!([
                ["networking.k8s.io"],
                ["servicecidrs"],
                null,
                ["list", "watch"]
            ]),
            json!([
                ["discovery.k8s.io"],
                ["endpointslices"],
                null,
                ["list", "watch"]
            ]),
        ]
    );
    assert_eq!(
        rules(
            &env,
            &format!("{rbac}/clusterroles/system:controller:deployment-controller")
        )
        .await,
        vec![
            json!([
                ["apps", "extensions"],
                ["deployments"],
                null,
                ["get", "list", "update", "watch"]
            ]),
            json!([
                ["apps", "extensions"],
                ["deployments/status"],
                null,
                ["update"]
            ]),
            json!([
                ["apps", "extensions"],
                ["deployments/finalizers"],
                null,
                ["update"]
            ]),
            json!([
                ["apps", "extensions"],
                ["replicasets"],
                null,
                [
                    "create", "delete", "get", "list", "patch", "update", "watch"
                ]
            ]),
            json!([[""], ["pods"], null, ["get", "list", "update", "watch"]]),
            events.clone(),
        ]
    );
    assert_eq!(
        rules(
            &env,
            &format!(
                "{rbac}/namespaces/kube-system/roles/extension-apiserver-authentication-reader"
            )
        )
        .await,
        vec![json!([
            [""],
            ["configmaps"],
            ["extension-apiserver-authentication"],
            ["get", "list", "watch"]
        ])]
    );
    // The aggregated roles keep upstream's selectors and labels.
    let edit = get(&env, &format!("{rbac}/clusterroles/edit")).await;
    assert_eq!(
        edit["aggregationRule"],
        json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-edit": "true"}}]})
    );
    assert_eq!(
        edit["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-admin"],
        "true"
    );
}

#[tokio::test]
async fn a_service_account_bound_to_auth_delegator_reviews_tokens_and_access() {
    let env = rbac_env().await;
    let (code, body) = raw(
        &env.client(),
        "POST",
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        Some("application/json"),
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "delegator"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
            "subjects": [{"kind": "ServiceAccount", "name": "proxy", "namespace": "default"}],
        })
        .to_string()
        .into_bytes(),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let proxy = env
        .client_as_service_account("default", "proxy")
        .await
        .expect("proxy client");
    let other = env
        .client_as_service_account("default", "other")
        .await
        .expect("other client");
    let token = env
        .service_account_token("default", "other")
        .await
        .expect("token");

    let token_review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                              "spec": {"token": token}})
    .to_string()
    .into_bytes();
    let access_review = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                               "spec": {"user": "system:serviceaccount:default:other",
                                        "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "default"}}})
    .to_string()
    .into_bytes();
    let tokens = "/apis/authentication.k8s.io/v1/tokenreviews";
    let access = "/apis/authorization.k8s.io/v1/subjectaccessreviews";
    let json = Some("application/json");

    let (code, review) = raw(&proxy, "POST", tokens, json, token_review.clone()).await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(review["status"]["authenticated"], true, "{review}");
    assert_eq!(
        review["status"]["user"]["username"],
        "system:serviceaccount:default:other"
    );
    let (code, review) = raw(&proxy, "POST", access, json, access_review.clone()).await;
    assert_eq!(code, 201, "{review}");
    assert_eq!(review["status"]["allowed"], false, "{review}");

    // Without the binding, neither review may be created.
    let (code, body) = raw(&other, "POST", tokens, json, token_review).await;
    assert_eq!(code, 403, "{body}");
    let (code, body) = raw(&other, "POST", access, json, access_review).await;
    assert_eq!(code, 403, "{body}");
}
