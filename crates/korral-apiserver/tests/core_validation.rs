//! core/v1 kinds beyond Pods through the server, against upstream's answers
//! (`k8s-reference/builtin/{create,invalid}-{service,secret,configmap,pv,pvc,...}-*.json`):
//! defaults of each captured create, each captured refusal with its code, reason, message and
//! causes (and that it changed nothing), NodePort allocation and its conflicts, and the new kinds.

mod common;

use common::*;
use serde_json::{Value, json};

async fn post(env: &TestEnv, path: &str, body: &Value) -> (u16, Value) {
    call(env, "POST", path, Some(body)).await
}

async fn put(env: &TestEnv, path: &str, body: &Value) -> (u16, Value) {
    call(env, "PUT", path, Some(body)).await
}

async fn get(env: &TestEnv, path: &str) -> (u16, Value) {
    call(env, "GET", path, None).await
}

/// Creates and expects 201, returning the stored object.
async fn created(env: &TestEnv, path: &str, body: &Value) -> Value {
    let (code, obj) = post(env, path, body).await;
    assert_eq!(code, 201, "{obj}");
    obj
}

const SERVICES: &str = "/api/v1/namespaces/default/services";
const SECRETS: &str = "/api/v1/namespaces/default/secrets";
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

fn node_port_of(obj: &Value, i: usize) -> i64 {
    obj["spec"]["ports"][i]["nodePort"].as_i64().unwrap_or(0)
}

#[tokio::test]
async fn services_get_upstream_defaults_and_node_ports() {
    let env = TestEnv::start().await.expect("env");
    let web = json!({"ports": [{"port": 80}], "selector": {"app": "web"}});

    // create-service-clusterip.json
    let ip = created(&env, SERVICES, &service("web", web.clone())).await;
    let spec = &ip["spec"];
    assert_eq!(
        spec["ports"],
        json!([{"protocol": "TCP", "port": 80, "targetPort": 80}])
    );
    assert_eq!(spec["type"], "ClusterIP");
    assert_eq!(spec["sessionAffinity"], "None");
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["clusterIPs"], json!([spec["clusterIP"]]));
    assert!(spec.get("externalTrafficPolicy").is_none());

    // create-service-nodeport.json
    let mut np_spec = web.clone();
    np_spec["type"] = json!("NodePort");
    let np = created(&env, SERVICES, &service("np", np_spec)).await;
    assert!((30000..=32767).contains(&node_port_of(&np, 0)), "{np}");
    assert_eq!(np["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(np["spec"]["internalTrafficPolicy"], "Cluster");

    // create-service-loadbalancer.json
    let mut lb_spec = web.clone();
    lb_spec["type"] = json!("LoadBalancer");
    let lb = created(&env, SERVICES, &service("lb", lb_spec)).await;
    assert!((30000..=32767).contains(&node_port_of(&lb, 0)), "{lb}");
    assert_ne!(node_port_of(&lb, 0), node_port_of(&np, 0));
    assert_eq!(lb["spec"]["allocateLoadBalancerNodePorts"], true);
    assert_eq!(lb["spec"]["externalTrafficPolicy"], "Cluster");
    assert_eq!(lb["status"], json!({"loadBalancer": {}}));

    // create-service-externalname.json
    let ext = created(
        &env,
        SERVICES,
        &service(
            "ext",
            json!({"type": "ExternalName", "externalName": "example.com"}),
        ),
    )
    .await;
    assert_eq!(
        ext["spec"],
        json!({"type": "ExternalName", "sessionAffinity": "None", "externalName": "example.com"})
    );
}

#[tokio::test]
async fn services_are_refused_as_upstream_refuses_them() {
    let env = TestEnv::start().await.expect("env");
    // invalid-service-externalname-missing.json
    let missing = post(
        &env,
        SERVICES,
        &service("ext2", json!({"type": "ExternalName"})),
    )
    .await;
    assert_invalid(
        &missing,
        "Service \"ext2\" is invalid: spec.externalName: Required value",
        &[("FieldValueRequired", "Required value", "spec.externalName")],
    );
    // invalid-service-nodeport-range.json
    let range = post(
        &env,
        SERVICES,
        &service(
            "np2",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 20000}]}),
        ),
    )
    .await;
    assert_invalid(
        &range,
        "Service \"np2\" is invalid: spec.ports[0].nodePort: Invalid value: 20000: provided port is not in the valid range. The range of valid ports is 30000-32767",
        &[(
            "FieldValueInvalid",
            "Invalid value: 20000: provided port is not in the valid range. The range of valid ports is 30000-32767",
            "spec.ports[0].nodePort",
        )],
    );
    // invalid-service-nodeport-taken.json
    let np = json!({"type": "NodePort", "selector": {"app": "web"},
        "ports": [{"port": 80, "nodePort": 32503}]});
    created(&env, SERVICES, &service("np", np.clone())).await;
    let taken = post(&env, SERVICES, &service("np3", np.clone())).await;
    assert_invalid(
        &taken,
        "Service \"np3\" is invalid: spec.ports[0].nodePort: Invalid value: 32503: provided port is already allocated",
        &[(
            "FieldValueInvalid",
            "Invalid value: 32503: provided port is already allocated",
            "spec.ports[0].nodePort",
        )],
    );
    assert_eq!(get(&env, &format!("{SERVICES}/np3")).await.0, 404);
    // No ports on a ClusterIP Service; a port number out of range.
    let no_ports = post(&env, SERVICES, &service("bare", json!({}))).await;
    assert_invalid(
        &no_ports,
        "Service \"bare\" is invalid: spec.ports: Required value",
        &[("FieldValueRequired", "Required value", "spec.ports")],
    );
    let zero = post(
        &env,
        SERVICES,
        &service("zero", json!({"ports": [{"port": 0, "targetPort": 8080}]})),
    )
    .await;
    assert_invalid(
        &zero,
        "Service \"zero\" is invalid: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
        &[(
            "FieldValueInvalid",
            "Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ports[0].port",
        )],
    );

    // Service names are DNS-1035 labels: no leading digit.
    let digit = post(
        &env,
        SERVICES,
        &service("1web", json!({"ports": [{"port": 80}]})),
    )
    .await;
    assert_invalid(
        &digit,
        "Service \"1web\" is invalid: metadata.name: Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"1web\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
            "metadata.name",
        )],
    );

    // invalid-service-clusterip-change.json
    let web = created(
        &env,
        SERVICES,
        &service(
            "web",
            json!({"ports": [{"port": 80}], "selector": {"app": "web"}}),
        ),
    )
    .await;
    let mut changed = web.clone();
    changed["spec"]["clusterIP"] = json!("10.0.0.99");
    let answer = put(&env, &format!("{SERVICES}/web"), &changed).await;
    assert_invalid(
        &answer,
        "Service \"web\" is invalid: spec.clusterIPs[0]: Invalid value: [\"10.0.0.99\"]: may not change once set",
        &[(
            "FieldValueInvalid",
            "Invalid value: [\"10.0.0.99\"]: may not change once set",
            "spec.clusterIPs[0]",
        )],
    );
    let (_, stored) = get(&env, &format!("{SERVICES}/web")).await;
    assert_eq!(stored["spec"]["clusterIP"], web["spec"]["clusterIP"]);
}

/// IP families as a single-stack IPv4 cluster's allocator answers them (its causes alone, before
/// validation), the load balancer fields of the spec, and `services/status` load balancer
/// ingress points as `ValidateLoadBalancerStatus` checks them (`ipMode` defaulted to `VIP`).
#[tokio::test]
async fn ip_families_load_balancer_fields_and_status() {
    let env = TestEnv::start().await.expect("env");
    let port = json!([{"port": 80}]);
    let answer = post(
        &env,
        SERVICES,
        &service(
            "dual",
            json!({"ports": port, "selector": {"app": "x"}, "ipFamilyPolicy": "RequireDualStack",
            "sessionAffinity": "Sticky"}),
        ),
    )
    .await;
    assert_invalid(
        &answer,
        "Service \"dual\" is invalid: spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services",
            "spec.ipFamilyPolicy",
        )],
    );
    let answer = post(
        &env,
        SERVICES,
        &service("v6", json!({"ports": port, "ipFamilies": ["IPv6"]})),
    )
    .await;
    assert_invalid(
        &answer,
        "Service \"v6\" is invalid: spec.ipFamilies[0]: Invalid value: \"IPv6\": not configured on this cluster",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"IPv6\": not configured on this cluster",
            "spec.ipFamilies[0]",
        )],
    );
    // PreferDualStack settles on the cluster's one family.
    let prefer = created(
        &env,
        SERVICES,
        &service(
            "prefer",
            json!({"ports": port, "ipFamilyPolicy": "PreferDualStack"}),
        ),
    )
    .await;
    assert_eq!(prefer["spec"]["ipFamilies"], json!(["IPv4"]));

    let answer = post(
        &env,
        SERVICES,
        &service("ranges", json!({"ports": port, "loadBalancerSourceRanges": ["10.0.0.0/8", "nope"],
            "loadBalancerClass": "example.com/lb", "ports": [{"port": 80, "appProtocol": "not valid"}]})),
    )
    .await;
    assert_invalid(
        &answer,
        "Service \"ranges\" is invalid: [spec.ports[0].appProtocol: Invalid value: \"not valid\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]'), spec.loadBalancerSourceRanges: Forbidden: may only be used when `type` is 'LoadBalancer', spec.loadBalancerSourceRanges[1]: Invalid value: \"nope\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64), spec.loadBalancerClass: Forbidden: may only be used when `type` is 'LoadBalancer']",
        &[
            (
                "FieldValueInvalid",
                "Invalid value: \"not valid\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "spec.ports[0].appProtocol",
            ),
            (
                "FieldValueForbidden",
                "Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.loadBalancerSourceRanges",
            ),
            (
                "FieldValueInvalid",
                "Invalid value: \"nope\": must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
                "spec.loadBalancerSourceRanges[1]",
            ),
            (
                "FieldValueForbidden",
                "Forbidden: may only be used when `type` is 'LoadBalancer'",
                "spec.loadBalancerClass",
            ),
        ],
    );

    let lb = created(
        &env,
        SERVICES,
        &service(
            "edge",
            json!({"type": "LoadBalancer", "ports": port,
            "loadBalancerSourceRanges": [" 10.0.0.0/8 "]}),
        ),
    )
    .await;
    let status_path = format!("{SERVICES}/edge/status");
    let mut with_ingress = lb.clone();
    with_ingress["status"] = json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}, {"hostname": "lb.example.com"}]}});
    let (code, stored) = put(&env, &status_path, &with_ingress).await;
    assert_eq!(code, 200, "{stored}");
    assert_eq!(
        stored["status"]["loadBalancer"]["ingress"][0]["ipMode"],
        "VIP"
    );
    let mut bad = stored.clone();
    bad["status"] = json!({"loadBalancer": {"ingress": [{"ip": "not-an-ip"}, {"hostname": "10.0.0.1", "ipMode": "Proxy"}]}});
    let (code, body) = put(&env, &status_path, &bad).await;
    assert_eq!(code, 422, "{body}");
    let fields: Vec<&str> = body["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "status.loadBalancer.ingress[0].ip",
            "status.loadBalancer.ingress[1].ipMode",
            "status.loadBalancer.ingress[1].hostname",
        ],
        "{body}"
    );
    let (_, now) = get(&env, &format!("{SERVICES}/edge")).await;
    assert_eq!(
        now["status"], stored["status"],
        "the refused write changed nothing"
    );
}

#[tokio::test]
async fn node_ports_are_kept_on_update_and_released_on_delete() {
    let env = TestEnv::start().await.expect("env");
    let spec = json!({"type": "NodePort", "selector": {"app": "a"},
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]});
    let svc = created(&env, SERVICES, &service("a", spec.clone())).await;
    let (p0, p1) = (node_port_of(&svc, 0), node_port_of(&svc, 1));
    assert_ne!(p0, p1);

    // A PUT without nodePorts keeps them.
    let mut update = svc.clone();
    update["spec"]["ports"] = spec["ports"].clone();
    let (code, after) = put(&env, &format!("{SERVICES}/a"), &update).await;
    assert_eq!(code, 200, "{after}");
    assert_eq!((node_port_of(&after, 0), node_port_of(&after, 1)), (p0, p1));

    // Another Service may not take them; once `a` is gone, it may.
    let mut wanted = spec.clone();
    wanted["ports"] = json!([{"port": 80, "nodePort": p0}]);
    let (code, _) = post(&env, SERVICES, &service("b", wanted.clone())).await;
    assert_eq!(code, 422);
    let (code, _) = call(&env, "DELETE", &format!("{SERVICES}/a"), None).await;
    assert_eq!(code, 200);
    let b = created(&env, SERVICES, &service("b", wanted)).await;
    assert_eq!(node_port_of(&b, 0), p0);

    // Turning a NodePort Service into a ClusterIP one with a node port of its own is refused;
    // with the node ports it had, they (and the external traffic policy) are dropped and
    // released, as upstream's dropTypeDependentFields.
    let mut moved = b.clone();
    moved["spec"]["type"] = json!("ClusterIP");
    moved["spec"]["ports"][0]["nodePort"] = json!(if p0 == 32000 { 32001 } else { 32000 });
    let answer = put(&env, &format!("{SERVICES}/b"), &moved).await;
    assert_invalid(
        &answer,
        "Service \"b\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        &[(
            "FieldValueForbidden",
            "Forbidden: may not be used when `type` is 'ClusterIP'",
            "spec.ports[0].nodePort",
        )],
    );
    let mut back = b.clone();
    back["spec"]["type"] = json!("ClusterIP");
    let (code, cluster_ip) = put(&env, &format!("{SERVICES}/b"), &back).await;
    assert_eq!(code, 200, "{cluster_ip}");
    assert!(
        cluster_ip["spec"]["ports"][0].get("nodePort").is_none(),
        "{cluster_ip}"
    );
    assert!(cluster_ip["spec"].get("externalTrafficPolicy").is_none());
    assert_eq!(cluster_ip["spec"]["clusterIP"], b["spec"]["clusterIP"]);
    let mut again = spec.clone();
    again["ports"] = json!([{"port": 80, "nodePort": p0}]);
    created(&env, SERVICES, &service("c", again)).await;
}

fn secret(name: &str, ty: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "type": ty, "data": data})
}

/// base64 of `s`.
fn b64(s: &str) -> Value {
    use base64::Engine;
    json!(base64::engine::general_purpose::STANDARD.encode(s))
}

#[tokio::test]
async fn secrets_of_built_in_types() {
    let env = TestEnv::start().await.expect("env");
    // The captured creates (create-secret-*.json).
    let ok = [
        (
            "basic",
            "kubernetes.io/basic-auth",
            json!({"username": b64("u"), "password": b64("p")}),
        ),
        (
            "cfg",
            "kubernetes.io/dockercfg",
            json!({".dockercfg": b64("{\"r\":{}}")}),
        ),
        (
            "reg",
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": b64("{\"auths\":{}}")}),
        ),
        (
            "ssh",
            "kubernetes.io/ssh-auth",
            json!({"ssh-privatekey": b64("k")}),
        ),
        (
            "tls1",
            "kubernetes.io/tls",
            json!({"tls.crt": b64("c"), "tls.key": b64("k")}),
        ),
    ];
    for (name, ty, data) in ok {
        let obj = created(&env, SECRETS, &secret(name, ty, data.clone())).await;
        assert_eq!(obj["type"], ty);
        assert_eq!(obj["data"], data);
    }
    // create-secret-opaque.json: stringData is folded into data, the type defaults to Opaque.
    let opaque = created(
        &env,
        SECRETS,
        &json!({"metadata": {"name": "opaque"}, "stringData": {"password": "s3cret"}, "data": {"raw": "AAEC"}}),
    )
    .await;
    assert_eq!(opaque["type"], "Opaque");
    assert_eq!(
        opaque["data"],
        json!({"password": "czNjcmV0", "raw": "AAEC"})
    );
    assert!(opaque.get("stringData").is_none());
    // create-secret-service-account-token.json
    let sa = json!({"metadata": {"name": "sa1-token",
        "annotations": {"kubernetes.io/service-account.name": "sa1"}},
        "type": "kubernetes.io/service-account-token"});
    created(&env, SECRETS, &sa).await;

    // invalid-secret-tls-missing-key.json
    let tls = post(
        &env,
        SECRETS,
        &secret("tls", "kubernetes.io/tls", json!({"tls.crt": b64("c")})),
    )
    .await;
    assert_invalid(
        &tls,
        "Secret \"tls\" is invalid: data[tls.key]: Required value",
        &[("FieldValueRequired", "Required value", "data[tls.key]")],
    );
    // invalid-secret-dockerconfigjson.json
    let reg = post(
        &env,
        SECRETS,
        &secret(
            "reg2",
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": b64("{not json}")}),
        ),
    )
    .await;
    assert_invalid(
        &reg,
        "Secret \"reg2\" is invalid: data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'n' looking for beginning of object key string",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"<secret contents redacted>\": invalid character 'n' looking for beginning of object key string",
            "data[.dockerconfigjson]",
        )],
    );
    // A service account token without its annotation; a bad key.
    let no_sa = post(
        &env,
        SECRETS,
        &json!({"metadata": {"name": "t"}, "type": "kubernetes.io/service-account-token"}),
    )
    .await;
    assert_invalid(
        &no_sa,
        "Secret \"t\" is invalid: metadata.annotations[kubernetes.io/service-account.name]: Required value",
        &[(
            "FieldValueRequired",
            "Required value",
            "metadata.annotations[kubernetes.io/service-account.name]",
        )],
    );
    let bad_key = post(
        &env,
        SECRETS,
        &secret("k", "Opaque", json!({"a/b": b64("x")})),
    )
    .await;
    assert_eq!(bad_key.0, 422, "{}", bad_key.1);
    assert_eq!(bad_key.1["details"]["causes"][0]["field"], "data[a/b]");

    // invalid-secret-type-change.json
    let (_, mut basic) = get(&env, &format!("{SECRETS}/basic")).await;
    basic["type"] = json!("Opaque");
    let change = put(&env, &format!("{SECRETS}/basic"), &basic).await;
    assert_invalid(
        &change,
        "Secret \"ba\" is invalid: type: Invalid value: \"Opaque\": field is immutable"
            .replace("\"ba\"", "\"basic\"")
            .as_str(),
        &[(
            "FieldValueInvalid",
            "Invalid value: \"Opaque\": field is immutable",
            "type",
        )],
    );
}

#[tokio::test]
async fn immutable_secrets_and_config_maps_keep_their_data() {
    let env = TestEnv::start().await.expect("env");
    // create-configmap-immutable.json
    let cm = created(
        &env,
        CONFIGMAPS,
        &json!({"metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": true}),
    )
    .await;
    assert_eq!(cm["immutable"], true);
    // invalid-configmap-immutable-change.json
    let mut changed = cm.clone();
    changed["data"]["a"] = json!("2");
    let answer = put(&env, &format!("{CONFIGMAPS}/frozen"), &changed).await;
    assert_invalid(
        &answer,
        "ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
        &[(
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set",
            "data",
        )],
    );
    let mut unlocked = cm.clone();
    unlocked["immutable"] = json!(false);
    let answer = put(&env, &format!("{CONFIGMAPS}/frozen"), &unlocked).await;
    assert_invalid(
        &answer,
        "ConfigMap \"frozen\" is invalid: immutable: Forbidden: field is immutable when `immutable` is set",
        &[(
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set",
            "immutable",
        )],
    );
    // Labels may still change.
    let mut labelled = cm.clone();
    labelled["metadata"]["labels"] = json!({"x": "y"});
    assert_eq!(
        put(&env, &format!("{CONFIGMAPS}/frozen"), &labelled)
            .await
            .0,
        200
    );

    let s = created(
        &env,
        SECRETS,
        &json!({"metadata": {"name": "sealed"}, "data": {"k": b64("v")}, "immutable": true}),
    )
    .await;
    let mut changed = s.clone();
    changed["data"]["k"] = b64("w");
    let answer = put(&env, &format!("{SECRETS}/sealed"), &changed).await;
    assert_invalid(
        &answer,
        "Secret \"sealed\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
        &[(
            "FieldValueForbidden",
            "Forbidden: field is immutable when `immutable` is set",
            "data",
        )],
    );

    // Keys in data and binaryData at once.
    let both = post(
        &env,
        CONFIGMAPS,
        &json!({"metadata": {"name": "both"}, "data": {"a": "1"}, "binaryData": {"a": "eA=="}}),
    )
    .await;
    assert_invalid(
        &both,
        "ConfigMap \"both\" is invalid: binaryData[a]: Invalid value: \"a\": duplicate of key present in data",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"a\": duplicate of key present in data",
            "binaryData[a]",
        )],
    );
}

const PVCS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";

fn pvc(name: &str, size: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}})
}

#[tokio::test]
async fn volumes_and_claims_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    // create-pv.json
    let pv = created(
        &env,
        "/api/v1/persistentvolumes",
        &json!({"metadata": {"name": "ref2-pv"}, "spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/pv"}}}),
    )
    .await;
    assert_eq!(
        pv["spec"],
        json!({"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/tmp/pv", "type": ""},
            "accessModes": ["ReadWriteOnce"], "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem"})
    );
    assert_eq!(pv["status"]["phase"], "Pending");
    assert!(pv["status"]["lastPhaseTransitionTime"].is_string());
    assert!(pv["metadata"].get("namespace").is_none());

    // create-pvc.json, with a quantity written back in canonical form.
    let claim = created(&env, PVCS, &pvc("pvc", "1024Mi")).await;
    assert_eq!(
        claim["spec"],
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
            "volumeMode": "Filesystem"})
    );
    assert_eq!(claim["status"], json!({"phase": "Pending"}));

    // invalid-pvc-shrink.json: a pending claim's spec is immutable.
    let shrink = put(&env, &format!("{PVCS}/pvc"), &{
        let mut c = claim.clone();
        c["spec"]["resources"]["requests"]["storage"] = json!("500Mi");
        c
    })
    .await;
    let message = "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n@@ -6,7 +6,7 @@\n  \"Resources\": {\n   \"Limits\": null,\n   \"Requests\": {\n-   \"storage\": \"1Gi\"\n+   \"storage\": \"500Mi\"\n   }\n  },\n  \"VolumeName\": \"\",\n";
    assert_invalid(
        &shrink,
        &format!("PersistentVolumeClaim \"pvc\" is invalid: spec: {message}"),
        &[("FieldValueForbidden", message, "spec")],
    );

    // invalid-pvc-shrink-bound.json: once bound, the request may grow but not go below the
    // capacity (growing also needs a class that allows expansion: PersistentVolumeClaimResize).
    created(
        &env,
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "expandable"}, "provisioner": "example.com/disk",
            "allowVolumeExpansion": true}),
    )
    .await;
    let mut expandable = pvc("pvc-bound", "1Gi");
    expandable["spec"]["storageClassName"] = json!("expandable");
    let bound_claim = created(&env, PVCS, &expandable).await;
    let mut status = bound_claim.clone();
    status["status"] =
        json!({"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
    let (code, bound) = put(&env, &format!("{PVCS}/pvc-bound/status"), &status).await;
    assert_eq!(code, 200, "{bound}");
    let mut smaller = bound.clone();
    smaller["spec"]["resources"]["requests"]["storage"] = json!("500Mi");
    let answer = put(&env, &format!("{PVCS}/pvc-bound"), &smaller).await;
    assert_invalid(
        &answer,
        "PersistentVolumeClaim \"pvc-bound\" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity",
        &[(
            "FieldValueForbidden",
            "Forbidden: field can not be less than status.capacity",
            "spec.resources.requests.storage",
        )],
    );
    let mut larger = bound.clone();
    larger["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    let (code, grown) = put(&env, &format!("{PVCS}/pvc-bound"), &larger).await;
    assert_eq!(code, 200, "{grown}");
    assert_eq!(grown["spec"]["resources"]["requests"]["storage"], "2Gi");

    // A claim without storage.
    let none = post(
        &env,
        PVCS,
        &json!({"metadata": {"name": "empty"}, "spec": {"accessModes": ["ReadWriteOnce"]}}),
    )
    .await;
    assert_invalid(
        &none,
        "PersistentVolumeClaim \"empty\" is invalid: spec.resources[storage]: Required value",
        &[(
            "FieldValueRequired",
            "Required value",
            "spec.resources[storage]",
        )],
    );

    // table-persistentvolumeclaims.json
    let request = http::Request::builder()
        .uri(format!("{PVCS}/pvc"))
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .expect("request");
    let table: Value = env.client().request(request).await.expect("table");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "pvc");
    assert_eq!(cells[1], "Pending");
    assert_eq!(cells[6], "<unset>");
    assert_eq!(cells[8], "Filesystem");
}

#[tokio::test]
async fn quotas_limit_ranges_and_replication_controllers() {
    use k8s_openapi::api::core::v1::{
        LimitRange, PersistentVolume, PersistentVolumeClaim, PodTemplate, ReplicationController,
        ResourceQuota,
    };
    use kube::api::{Api, ListParams, PostParams};

    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let pp = PostParams::default();

    // create-resourcequota.json through kube-rs, quantities canonical.
    let quotas: Api<ResourceQuota> = Api::namespaced(client.clone(), "default");
    let q: ResourceQuota = serde_json::from_value(json!({"metadata": {"name": "q"},
        "spec": {"hard": {"count/configmaps": "50", "pods": "10", "requests.cpu": "2000m", "requests.memory": "0.5Gi"}}}))
    .expect("quota");
    let q = quotas.create(&pp, &q).await.expect("create quota");
    let hard = serde_json::to_value(q.spec.clone().and_then(|s| s.hard)).expect("hard");
    assert_eq!(
        hard,
        json!({"count/configmaps": "50", "pods": "10", "requests.cpu": "2", "requests.memory": "512Mi"})
    );
    assert_eq!(
        quotas
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        1
    );
    // table-resourcequotas.json (the cells from the status are unit-tested beside the printer).
    let request = http::Request::builder()
        .uri("/api/v1/namespaces/default/resourcequotas/q")
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(Vec::new())
        .expect("request");
    let table: Value = client.request(request).await.expect("table");
    let names: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["Name", "Request", "Limit", "Age"]);
    assert_eq!(table["rows"][0]["cells"][0], "q");
    let bad = post(
        &env,
        "/api/v1/namespaces/default/resourcequotas",
        &json!({"metadata": {"name": "bad"}, "spec": {"hard": {"gpus": "1"}}}),
    )
    .await;
    assert_invalid(
        &bad,
        "ResourceQuota \"bad\" is invalid: spec.hard[gpus]: Invalid value: \"gpus\": must be a standard resource for quota",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"gpus\": must be a standard resource for quota",
            "spec.hard[gpus]",
        )],
    );

    // create-limitrange.json
    let ranges: Api<LimitRange> = Api::namespaced(client.clone(), "default");
    let lr: LimitRange = serde_json::from_value(json!({"metadata": {"name": "lr"}, "spec": {"limits": [
        {"type": "Container", "default": {"cpu": "0.5", "memory": "256Mi"}, "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]}}))
    .expect("limit range");
    let lr = ranges.create(&pp, &lr).await.expect("create limit range");
    let item = serde_json::to_value(&lr.spec.expect("spec").limits[0]).expect("item");
    assert_eq!(item["default"], json!({"cpu": "500m", "memory": "256Mi"}));
    let max_only = created(
        &env,
        "/api/v1/namespaces/default/limitranges",
        &json!({"metadata": {"name": "max"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}}),
    )
    .await;
    assert_eq!(
        max_only["spec"]["limits"][0],
        json!({"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "1"}, "defaultRequest": {"cpu": "1"}})
    );
    let inverted = post(
        &env,
        "/api/v1/namespaces/default/limitranges",
        &json!({"metadata": {"name": "inv"}, "spec": {"limits": [{"type": "Pod",
            "min": {"cpu": "1"}, "max": {"cpu": "500m"}}]}}),
    )
    .await;
    assert_invalid(
        &inverted,
        "LimitRange \"inv\" is invalid: spec.limits[0].min[cpu]: Invalid value: \"1\": min value 1 is greater than max value 500m",
        &[(
            "FieldValueInvalid",
            "Invalid value: \"1\": min value 1 is greater than max value 500m",
            "spec.limits[0].min[cpu]",
        )],
    );

    // create-replicationcontroller.json
    let rcs: Api<ReplicationController> = Api::namespaced(client.clone(), "default");
    let rc: ReplicationController = serde_json::from_value(json!({"metadata": {"name": "rc"},
        "spec": {"replicas": 0, "template": {"metadata": {"labels": {"app": "rc"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}))
    .expect("rc");
    let rc = rcs.create(&pp, &rc).await.expect("create rc");
    let rc_json = serde_json::to_value(&rc).expect("rc json");
    assert_eq!(rc_json["metadata"]["labels"], json!({"app": "rc"}));
    assert_eq!(rc_json["metadata"]["generation"], 1);
    assert_eq!(rc_json["spec"]["selector"], json!({"app": "rc"}));
    assert_eq!(rc_json["status"], json!({"replicas": 0}));
    let container = &rc_json["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["imagePullPolicy"], "Always");
    assert_eq!(container["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(
        rc_json["spec"]["template"]["spec"]["restartPolicy"],
        "Always"
    );
    let scale = rcs.get_scale("rc").await.expect("scale");
    assert_eq!(scale.spec.and_then(|s| s.replicas), Some(0));
    assert_eq!(
        scale.status.and_then(|s| s.selector).as_deref(),
        Some("app=rc"),
        "the plain label map is the Scale's selector"
    );
    let mismatch = post(
        &env,
        "/api/v1/namespaces/default/replicationcontrollers",
        &json!({"metadata": {"name": "rc2"}, "spec": {"selector": {"app": "other"},
            "template": {"metadata": {"labels": {"app": "rc"}},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    assert_invalid(
        &mismatch,
        "ReplicationController \"rc2\" is invalid: spec.template.metadata.labels: Invalid value: {\"app\":\"rc\"}: `selector` does not match template `labels`",
        &[(
            "FieldValueInvalid",
            "Invalid value: {\"app\":\"rc\"}: `selector` does not match template `labels`",
            "spec.template.metadata.labels",
        )],
    );

    // PodTemplates: the template is defaulted and validated as a pod's.
    let templates: Api<PodTemplate> = Api::namespaced(client.clone(), "default");
    let pt: PodTemplate = serde_json::from_value(json!({"metadata": {"name": "pt"},
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}))
    .expect("pod template");
    let pt = templates
        .create(&pp, &pt)
        .await
        .expect("create pod template");
    let pt_json = serde_json::to_value(&pt).expect("json");
    assert_eq!(
        pt_json["template"]["spec"]["containers"][0]["imagePullPolicy"],
        "IfNotPresent"
    );
    let no_image = post(
        &env,
        "/api/v1/namespaces/default/podtemplates",
        &json!({"metadata": {"name": "pt2"}, "template": {"spec": {"containers": [{"name": "c"}]}}}),
    )
    .await;
    assert_eq!(no_image.0, 422, "{}", no_image.1);
    assert_eq!(
        no_image.1["details"]["causes"][0]["field"],
        "template.spec.containers[0].image"
    );

    // kube-rs round trips of the cluster-scoped PV and a PVC.
    let pvs: Api<PersistentVolume> = Api::all(client.clone());
    let pv: PersistentVolume = serde_json::from_value(json!({"metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "nfs": {"server": "s", "path": "/x"}}}))
    .expect("pv");
    pvs.create(&pp, &pv).await.expect("create pv");
    assert_eq!(
        pvs.get("pv1")
            .await
            .expect("get pv")
            .status
            .and_then(|s| s.phase)
            .as_deref(),
        Some("Pending")
    );
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let claim: PersistentVolumeClaim = serde_json::from_value(pvc("c1", "1Gi")).expect("pvc");
    claims.create(&pp, &claim).await.expect("create pvc");
    assert_eq!(
        claims
            .list(&ListParams::default())
            .await
            .expect("list")
            .items
            .len(),
        1
    );
}

#[tokio::test]
async fn discovery_lists_the_core_kinds_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let (code, doc) = get(&env, "/api/v1").await;
    assert_eq!(code, 200);
    let resources = doc["resources"].as_array().expect("resources");
    let find = |name: &str| {
        resources
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} not served"))
    };
    for (name, kind, namespaced, short) in [
        ("limitranges", "LimitRange", true, "limits"),
        (
            "persistentvolumeclaims",
            "PersistentVolumeClaim",
            true,
            "pvc",
        ),
        ("persistentvolumes", "PersistentVolume", false, "pv"),
        (
            "replicationcontrollers",
            "ReplicationController",
            true,
            "rc",
        ),
        ("resourcequotas", "ResourceQuota", true, "quota"),
    ] {
        let r = find(name);
        assert_eq!(r["kind"], kind);
        assert_eq!(r["namespaced"], namespaced);
        assert_eq!(r["shortNames"], json!([short]));
    }
    assert!(find("podtemplates").get("shortNames").is_none());
    assert_eq!(find("replicationcontrollers")["categories"], json!(["all"]));
    for sub in [
        "persistentvolumeclaims/status",
        "persistentvolumes/status",
        "replicationcontrollers/scale",
        "replicationcontrollers/status",
        "resourcequotas/status",
    ] {
        find(sub);
    }
    // Upstream lists the core resources by name.
    let names: Vec<&str> = resources
        .iter()
        .filter_map(|r| r["name"].as_str())
        .filter(|n| !n.contains('/'))
        .collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    // The pod update subresources, with upstream's verbs.
    for sub in ["pods/ephemeralcontainers", "pods/resize", "pods/status"] {
        let r = find(sub);
        assert_eq!(r["kind"], "Pod", "{sub}");
        assert_eq!(r["verbs"], json!(["get", "patch", "update"]), "{sub}");
    }
}

/// Runs kubectl against the environment's kubeconfig; its exit status and stdout (stderr on
/// failure).
async fn kubectl(env: &TestEnv, args: &[&str]) -> (bool, String) {
    let kubeconfig = env.kubeconfig_path().to_path_buf();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let out = std::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(&args)
            .output()
            .expect("run kubectl");
        let text = if out.status.success() {
            String::from_utf8_lossy(&out.stdout).into_owned()
        } else {
            String::from_utf8_lossy(&out.stderr).into_owned()
        };
        (out.status.success(), text)
    })
    .await
    .expect("kubectl task")
}

#[tokio::test]
async fn kubectl_creates_node_port_services_and_quotas() {
    if std::process::Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        eprintln!("kubectl not installed; skipped");
        return;
    }
    let env = TestEnv::start().await.expect("env");
    let (ok, out) = kubectl(
        &env,
        &["create", "service", "nodeport", "np", "--tcp=80:8080"],
    )
    .await;
    assert!(ok, "{out}");
    let (_, svc) = get(&env, &format!("{SERVICES}/np")).await;
    assert!((30000..=32767).contains(&node_port_of(&svc, 0)), "{svc}");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8080);
    let (ok, out) = kubectl(
        &env,
        &[
            "create",
            "service",
            "nodeport",
            "np2",
            "--tcp=81:81",
            "--node-port=20000",
        ],
    )
    .await;
    assert!(!ok);
    assert!(
        out.contains(
            "provided port is not in the valid range. The range of valid ports is 30000-32767"
        ),
        "{out}"
    );
    let (ok, out) = kubectl(
        &env,
        &[
            "create",
            "service",
            "externalname",
            "ext",
            "--external-name=example.com",
        ],
    )
    .await;
    assert!(ok, "{out}");

    let (ok, out) = kubectl(
        &env,
        &["create", "quota", "q", "--hard=pods=10,requests.cpu=0.5"],
    )
    .await;
    assert!(ok, "{out}");
    let (_, quota) = get(&env, "/api/v1/namespaces/default/resourcequotas/q").await;
    assert_eq!(
        quota["spec"]["hard"],
        json!({"pods": "10", "requests.cpu": "500m"})
    );
    let (ok, out) = kubectl(&env, &["get", "quota"]).await;
    assert!(ok, "{out}");
    let header: Vec<&str> = out
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "REQUEST", "LIMIT", "AGE"]);
    let (ok, out) = kubectl(&env, &["get", "pvc,pv,rc,limits,podtemplates"]).await;
    assert!(ok, "{out}");
    let (ok, out) = kubectl(
        &env,
        &[
            "create",
            "secret",
            "docker-registry",
            "reg",
            "--docker-server=r.example.com",
            "--docker-username=u",
            "--docker-password=p",
        ],
    )
    .await;
    assert!(ok, "{out}");
    let (_, reg) = get(&env, &format!("{SECRETS}/reg")).await;
    assert_eq!(reg["type"], "kubernetes.io/dockerconfigjson");
    let (ok, out) = kubectl(
        &env,
        &["create", "secret", "generic", "gen", "--from-literal=a=b"],
    )
    .await;
    assert!(ok, "{out}");
    let (ok, out) = kubectl(
        &env,
        &["create", "secret", "generic", "bad", "--from-literal=a/b=c"],
    )
    .await;
    assert!(!ok, "{out}");
}
