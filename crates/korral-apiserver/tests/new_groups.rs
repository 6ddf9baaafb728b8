//! The built-in APIs added last: apps/v1 ControllerRevisions, certificates.k8s.io/v1
//! CertificateSigningRequests (with their `approval` and `status` subresources) and
//! flowcontrol.apiserver.k8s.io/v1 FlowSchemas and PriorityLevelConfigurations (with the
//! mandatory `exempt` and `catch-all` objects) and resource.k8s.io/v1, against a real kube-apiserver v1.36's discovery
//! (`k8s-reference/`, copied into `fixtures/new_groups/`) and upstream's validation messages.

mod common;

use base64::Engine;
use common::*;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

const CSRS: &str = "/apis/certificates.k8s.io/v1/certificatesigningrequests";

/// A captured discovery document from `fixtures/new_groups/`.
fn fixture(name: &str) -> Value {
    let text = match name {
        "discovery-apps-v1" => include_str!("fixtures/new_groups/discovery-apps-v1.json"),
        "discovery-certificates-k8s-io-v1" => {
            include_str!("fixtures/new_groups/discovery-certificates-k8s-io-v1.json")
        }
        "discovery-flowcontrol-apiserver-k8s-io-v1" => {
            include_str!("fixtures/new_groups/discovery-flowcontrol-apiserver-k8s-io-v1.json")
        }
        "discovery-resource-k8s-io-v1" => {
            include_str!("fixtures/new_groups/discovery-resource-k8s-io-v1.json")
        }
        other => panic!("no fixture {other}"),
    };
    serde_json::from_str(text).expect("fixture json")
}

async fn send(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(&env.client(), method, path, content_type, bytes).await
}

/// A PATCH with a JSON merge patch.
async fn merge(env: &TestEnv, path: &str, patch: &Value) -> (u16, Value) {
    raw(
        &env.client(),
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        patch.to_string().into_bytes(),
    )
    .await
}

/// A GET with the Table Accept header.
async fn get_table(env: &TestEnv, path: &str) -> Value {
    let request = http::Request::builder()
        .method("GET")
        .uri(path)
        .header("accept", TABLE_ACCEPT)
        .body(Vec::new())
        .expect("request");
    let response = env
        .client()
        .send(request.map(kube::client::Body::from))
        .await
        .expect("send");
    assert_eq!(response.status().as_u16(), 200, "{path}");
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .expect("body")
        .to_bytes();
    serde_json::from_slice(&bytes).expect("table json")
}

/// The column names of a table.
fn column_names(table: &Value) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or("").to_string())
        .collect()
}

/// The resources of a discovery document as compared: name, singular name, scope, kind,
/// sorted verbs, short names, categories and storage version hash, sorted by name.
fn resources(doc: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = doc["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| {
            let mut verbs: Vec<String> = r["verbs"]
                .as_array()
                .expect("verbs")
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_string())
                .collect();
            verbs.sort();
            let or_empty = |v: &Value| if v.is_null() { json!([]) } else { v.clone() };
            json!({
                "name": r["name"], "singularName": r["singularName"], "namespaced": r["namespaced"],
                "kind": r["kind"], "verbs": verbs, "shortNames": or_empty(&r["shortNames"]),
                "categories": or_empty(&r["categories"]), "group": r["group"],
                "storageVersionHash": r["storageVersionHash"],
            })
        })
        .collect();
    out.sort_by_key(|r| r["name"].as_str().unwrap_or("").to_string());
    out
}

#[tokio::test]
async fn discovery_matches_captures() {
    let env = TestEnv::start().await.expect("env");
    for (path, capture) in [
        (
            "/apis/certificates.k8s.io/v1",
            "discovery-certificates-k8s-io-v1",
        ),
        ("/apis/apps/v1", "discovery-apps-v1"),
        (
            "/apis/flowcontrol.apiserver.k8s.io/v1",
            "discovery-flowcontrol-apiserver-k8s-io-v1",
        ),
        ("/apis/resource.k8s.io/v1", "discovery-resource-k8s-io-v1"),
    ] {
        let (code, doc) = send(&env, "GET", path, None).await;
        assert_eq!(code, 200, "{path}: {doc}");
        assert_eq!(resources(&doc), resources(&fixture(capture)), "{path}");
    }
}

/// A fresh PKCS#10 request for `name`, PEM encoded.
fn csr_pem(name: &str) -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem")
}

/// A self-signed certificate, PEM encoded (what a signer would write to the status).
fn certificate_pem() -> String {
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["alice".to_string()]).expect("params");
    params.self_signed(&key).expect("certificate").pem()
}

fn b64(data: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// A CertificateSigningRequest as a client sends it.
fn csr(name: &str) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1",
        "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": b64(&csr_pem(name)),
            "signerName": "example.com/signer",
            "usages": ["client auth"],
            "expirationSeconds": 86400,
        },
    })
}

#[tokio::test]
async fn csrs_record_who_asked_not_what_they_claim() {
    let env = TestEnv::start().await.expect("env");
    let mut body = csr("claims");
    body["spec"]["username"] = json!("mallory");
    body["spec"]["groups"] = json!(["system:masters"]);
    body["spec"]["extra"] = json!({"k": ["v"]});
    body["status"] = json!({"conditions": [{"type": "Approved", "status": "True"}]});
    let (code, created) = send(&env, "POST", CSRS, Some(&body)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["username"], "korral-admin");
    assert_eq!(
        created["spec"]["groups"],
        json!(["system:masters", "system:authenticated"])
    );
    assert!(created["spec"].get("extra").is_none());
    assert_eq!(created["status"], json!({}), "no pre-approved requests");

    // Another user (by impersonation) is recorded as that user.
    let alice = env
        .client_as_user("alice", &["team-a"])
        .await
        .expect("client");
    let api: Api<CertificateSigningRequest> = Api::all(alice);
    let typed: CertificateSigningRequest = serde_json::from_value(csr("alice")).expect("csr");
    let made = api
        .create(&PostParams::default(), &typed)
        .await
        .expect("create as alice");
    assert_eq!(made.spec.username.as_deref(), Some("alice"));
    assert_eq!(
        made.spec.groups,
        Some(vec![
            "team-a".to_string(),
            "system:authenticated".to_string()
        ])
    );

    // The spec is immutable: an update keeps it (and the status) as stored.
    let mut changed = created.clone();
    changed["spec"]["signerName"] = json!("example.com/other");
    changed["spec"]["usages"] = json!(["server auth"]);
    changed["metadata"]["labels"] = json!({"team": "a"});
    let (code, updated) = send(&env, "PUT", &format!("{CSRS}/claims"), Some(&changed)).await;
    assert_eq!(code, 200, "{updated}");
    assert_eq!(updated["spec"], created["spec"]);
    assert_eq!(updated["metadata"]["labels"]["team"], "a");

    // Field selector on the signer.
    let listed = Api::<CertificateSigningRequest>::all(env.client())
        .list(&ListParams::default().fields("spec.signerName=example.com/signer"))
        .await
        .expect("list");
    assert_eq!(listed.items.len(), 2);
    let none = Api::<CertificateSigningRequest>::all(env.client())
        .list(&ListParams::default().fields("spec.signerName=example.com/other"))
        .await
        .expect("list");
    assert!(none.items.is_empty());
}

#[tokio::test]
async fn invalid_csrs_are_refused_with_upstreams_messages() {
    let env = TestEnv::start().await.expect("env");
    let mut body = csr("bad");
    body["spec"]["request"] = json!(b64("hi"));
    body["spec"]["usages"] = json!([]);
    body["spec"]["signerName"] = json!("signer");
    body["spec"]["expirationSeconds"] = json!(60);
    let (code, status) = send(&env, "POST", CSRS, Some(&body)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "CertificateSigningRequest.certificates.k8s.io \"bad\" is invalid: [spec.request: Invalid value: []byte{0x68, 0x69}: PEM block type must be CERTIFICATE REQUEST, spec.usages: Required value, spec.signerName: Invalid value: \"signer\": must be a fully qualified domain and path of the form 'example.com/signer-name', spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)]"
    );
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["field"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        fields,
        [
            "spec.request",
            "spec.usages",
            "spec.signerName",
            "spec.expirationSeconds"
        ]
    );

    let mut legacy = csr("legacy");
    legacy["spec"]["signerName"] = json!("kubernetes.io/legacy-unknown");
    let (code, status) = send(&env, "POST", CSRS, Some(&legacy)).await;
    assert_eq!(code, 422);
    assert_eq!(
        status["message"],
        "CertificateSigningRequest.certificates.k8s.io \"legacy\" is invalid: spec.signerName: Invalid value: \"kubernetes.io/legacy-unknown\": the legacy signerName is not allowed via this API version"
    );

    let mut not_base64 = csr("b64");
    not_base64["spec"]["request"] = json!("!!!!");
    let (code, status) = send(&env, "POST", CSRS, Some(&not_base64)).await;
    assert_eq!(code, 400, "{status}");
    assert_eq!(
        status["message"],
        "CertificateSigningRequest in version \"v1\" cannot be handled as a CertificateSigningRequest: illegal base64 data at input byte 0"
    );
    let (code, list) = send(&env, "GET", CSRS, None).await;
    assert_eq!(code, 200);
    assert_eq!(list["items"], json!([]), "refused writes store nothing");
}

/// The condition types of a CSR.
fn condition_types(obj: &Value) -> Vec<String> {
    obj["status"]["conditions"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|c| c["type"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn approval_sets_conditions_and_status_sets_the_certificate() {
    let env = TestEnv::start().await.expect("env");
    let (code, created) = send(&env, "POST", CSRS, Some(&csr("web"))).await;
    assert_eq!(code, 201, "{created}");
    let path = format!("{CSRS}/web");

    // The main resource ignores conditions; /status may not add approval conditions.
    let (code, ignored) = merge(
        &env,
        &path,
        &json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}}),
    )
    .await;
    assert_eq!(code, 200, "{ignored}");
    assert!(condition_types(&ignored).is_empty());
    let (code, refused) = merge(
        &env,
        &format!("{path}/status"),
        &json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}}),
    )
    .await;
    assert_eq!(code, 422, "{refused}");
    assert_eq!(
        refused["message"],
        "CertificateSigningRequest.certificates.k8s.io \"web\" is invalid: status.conditions: Forbidden: updates may not add a condition of type \"Approved\""
    );

    // Approve through /approval (kube-rs' patch_approval); the certificate stays unset there.
    let api: Api<CertificateSigningRequest> = Api::all(env.client());
    let approved = api
        .patch_approval(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {
                "certificate": b64(&certificate_pem()),
                "conditions": [{"type": "Approved", "reason": "Test", "message": "ok"}],
            }})),
        )
        .await
        .expect("approve");
    let status = approved.status.expect("status");
    assert!(status.certificate.is_none(), "approvers do not issue");
    let condition = &status.conditions.expect("conditions")[0];
    assert_eq!(condition.type_, "Approved");
    assert_eq!(condition.status, "True", "defaulted");
    assert!(condition.last_update_time.is_some());
    assert!(condition.last_transition_time.is_some());

    // Approved and Denied are exclusive.
    let (code, both) = merge(
        &env,
        &format!("{path}/approval"),
        &json!({"status": {"conditions": [
            {"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]}}),
    )
    .await;
    assert_eq!(code, 422, "{both}");
    assert_eq!(
        both["message"],
        "CertificateSigningRequest.certificates.k8s.io \"web\" is invalid: status.conditions: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive"
    );

    // The signer writes the certificate through /status; approval conditions stay as they are.
    let issued_pem = certificate_pem();
    let mut next: Value = serde_json::to_value(api.get("web").await.expect("get")).expect("json");
    next["status"]["certificate"] = json!(b64(&issued_pem));
    next["status"]["conditions"][0]["message"] = json!("rewritten by the signer");
    let (code, issued) = send(&env, "PUT", &format!("{path}/status"), Some(&next)).await;
    assert_eq!(code, 200, "{issued}");
    assert_eq!(issued["status"]["certificate"], json!(b64(&issued_pem)));
    assert_eq!(issued["status"]["conditions"][0]["message"], "ok");
    // ... once.
    next = issued.clone();
    next["status"]["certificate"] = json!(b64(&certificate_pem()));
    let (code, again) = send(&env, "PUT", &format!("{path}/status"), Some(&next)).await;
    assert_eq!(code, 422, "{again}");
    assert_eq!(
        again["details"]["causes"][0]["message"],
        "Forbidden: updates may not modify existing certificate content"
    );
    let (code, _) = send(&env, "POST", CSRS, Some(&csr("other"))).await;
    assert_eq!(code, 201);
    let (code, bad) = merge(
        &env,
        &format!("{CSRS}/other/status"),
        &json!({"status": {"certificate": b64("not a certificate")}}),
    )
    .await;
    assert_eq!(code, 422, "{bad}");
    assert_eq!(
        bad["message"],
        "CertificateSigningRequest.certificates.k8s.io \"other\" is invalid: status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
    );

    // The table: NAME AGE SIGNERNAME REQUESTOR REQUESTEDDURATION CONDITION.
    let table = get_table(&env, CSRS).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Age",
            "SignerName",
            "Requestor",
            "RequestedDuration",
            "Condition"
        ]
    );
    let cells = &table["rows"][1]["cells"];
    assert_eq!(cells[0], "web");
    assert_eq!(
        cells.as_array().expect("cells")[2..],
        [
            json!("example.com/signer"),
            json!("korral-admin"),
            json!("24h"),
            json!("Approved,Issued")
        ]
    );
    assert_eq!(table["rows"][0]["cells"][5], "Pending");
}

#[tokio::test]
async fn controller_revisions_keep_their_data() {
    let env = TestEnv::start().await.expect("env");
    let path = "/apis/apps/v1/namespaces/default/controllerrevisions";
    // An owner that exists (the garbage collector removes revisions of missing owners).
    let (code, owner) = send(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "web"}})),
    )
    .await;
    assert_eq!(code, 201, "{owner}");
    let revision = json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "web-1", "ownerReferences": [{"apiVersion": "v1",
            "kind": "ConfigMap", "name": "web", "uid": owner["metadata"]["uid"], "controller": true}]},
        "data": {"spec": {"replicas": 1}},
        "revision": 1,
    });
    let (code, created) = send(&env, "POST", path, Some(&revision)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["data"], json!({"spec": {"replicas": 1}}));

    let (code, status) = send(
        &env,
        "POST",
        path,
        Some(
            &json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "bad"}, "revision": -1}),
        ),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "ControllerRevision.apps \"bad\" is invalid: [data: Required value: data is mandatory, revision: Invalid value: -1: must be greater than or equal to 0]"
    );

    // The revision number may change; the data may not.
    let (code, renumbered) = merge(&env, &format!("{path}/web-1"), &json!({"revision": 3})).await;
    assert_eq!(code, 200, "{renumbered}");
    assert_eq!(renumbered["revision"], 3);
    let (code, status) = merge(
        &env,
        &format!("{path}/web-1"),
        &json!({"data": {"spec": {"replicas": 2}}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    let message = status["details"]["causes"][0]["message"]
        .as_str()
        .expect("message");
    assert!(
        message.starts_with("Invalid value: runtime.Unknown{TypeMeta:runtime.TypeMeta{APIVersion:\"\", Kind:\"\"}, Raw:[]uint8{0x7b, ")
            && message.ends_with("ContentType:\"application/json\"}: field is immutable"),
        "{message}"
    );

    let table = get_table(&env, path).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Controller", "Revision", "Age"]
    );
    assert_eq!(table["rows"][0]["cells"][1], "configmap/web");
    assert_eq!(table["rows"][0]["cells"][2], 3);
}

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";

#[tokio::test]
async fn mandatory_flow_control_objects_exist_at_start() {
    let env = TestEnv::start().await.expect("env");
    let (code, schemas) = send(&env, "GET", FLOW_SCHEMAS, None).await;
    assert_eq!(code, 200, "{schemas}");
    let names: Vec<&str> = schemas["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    // The mandatory ones among the suggested ones (tests/flowcontrol_bootstrap.rs lists all).
    assert!(
        names.contains(&"catch-all") && names.contains(&"exempt"),
        "{names:?}"
    );
    let exempt = &schemas["items"][names.iter().position(|n| *n == "exempt").unwrap_or(0)];
    assert_eq!(
        exempt["spec"],
        json!({
            "matchingPrecedence": 1,
            "priorityLevelConfiguration": {"name": "exempt"},
            "rules": [{
                "subjects": [{"kind": "Group", "group": {"name": "system:masters"}}],
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                    "clusterScope": true, "namespaces": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            }],
        })
    );
    assert_eq!(
        exempt["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"],
        "true"
    );
    assert_eq!(exempt["metadata"]["generation"], 1);
    let condition = &exempt["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"]
        ),
        (&json!("Dangling"), &json!("False"), &json!("Found"))
    );
    assert_eq!(
        condition["message"],
        "This FlowSchema references the PriorityLevelConfiguration object named \"exempt\" and it exists"
    );

    let (code, levels) = send(&env, "GET", &format!("{LEVELS}/catch-all"), None).await;
    assert_eq!(code, 200, "{levels}");
    assert_eq!(
        levels["spec"],
        json!({"type": "Limited", "limited": {"nominalConcurrencyShares": 5, "lendablePercent": 0,
            "limitResponse": {"type": "Reject"}}})
    );

    let table = get_table(&env, FLOW_SCHEMAS).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "PriorityLevel",
            "MatchingPrecedence",
            "DistinguisherMethod",
            "Age",
            "MissingPL"
        ]
    );
    // Rows by matching precedence, as upstream's printer sorts them: catch-all is last.
    let rows = table["rows"].as_array().expect("rows");
    let cells = rows[rows.len() - 1]["cells"].as_array().expect("cells");
    assert_eq!(
        [&cells[..4], &cells[5..]].concat(),
        [
            json!("catch-all"),
            json!("catch-all"),
            json!(10000),
            json!("ByUser"),
            json!("False")
        ]
    );
    let table = get_table(&env, LEVELS).await;
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Type",
            "NominalConcurrencyShares",
            "Queues",
            "HandSize",
            "QueueLengthLimit",
            "Age"
        ]
    );
    assert_eq!(
        table["rows"][1]["cells"].as_array().expect("cells")[..6],
        [
            json!("exempt"),
            json!("Exempt"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );

    // Their specs are fixed (but for the exempt level's exempt settings).
    let (code, status) = merge(
        &env,
        &format!("{FLOW_SCHEMAS}/catch-all"),
        &json!({"spec": {"matchingPrecedence": 9000}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "FlowSchema.flowcontrol.apiserver.k8s.io \"catch-all\" is invalid: spec: Invalid value: \"object\": spec of 'catch-all' must equal the fixed value"
    );
    let (code, tuned) = merge(
        &env,
        &format!("{LEVELS}/exempt"),
        &json!({"spec": {"exempt": {"nominalConcurrencyShares": 10}}}),
    )
    .await;
    assert_eq!(code, 200, "{tuned}");
    assert_eq!(tuned["metadata"]["generation"], 2);
}

#[tokio::test]
async fn flow_control_objects_get_upstream_defaults_and_validation() {
    let env = TestEnv::start().await.expect("env");
    let level = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
        "metadata": {"name": "batch"},
        "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}},
        "status": {"conditions": [{"type": "X", "status": "True"}]},
    });
    let (code, created) = send(&env, "POST", LEVELS, Some(&level)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["limited"],
        json!({"nominalConcurrencyShares": 30, "lendablePercent": 0,
            "limitResponse": {"type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}})
    );
    assert_eq!(created["status"], json!({}), "status is not set on create");

    let schema = json!({
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "batch"},
        "spec": {"priorityLevelConfiguration": {"name": "batch"},
            "distinguisherMethod": {"type": "ByNamespace"},
            "rules": [{"subjects": [{"kind": "ServiceAccount",
                "serviceAccount": {"name": "*", "namespace": "batch"}}],
                "resourceRules": [{"verbs": ["list", "watch"], "apiGroups": [""],
                    "resources": ["pods"], "namespaces": ["batch"]}]}]},
    });
    let (code, created) = send(&env, "POST", FLOW_SCHEMAS, Some(&schema)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["spec"]["matchingPrecedence"], 1000);

    let mut bad = schema.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["matchingPrecedence"] = json!(1);
    bad["spec"]["rules"][0]["resourceRules"][0]["verbs"] = json!(["*", "get"]);
    let (code, status) = send(&env, "POST", FLOW_SCHEMAS, Some(&bad)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "FlowSchema.flowcontrol.apiserver.k8s.io \"bad\" is invalid: [spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1, spec.rules[0].resourceRules[0].verbs: Invalid value: []string{\"*\", \"get\"}: if '*' is present, must not specify other verbs]"
    );

    let mut bad = level.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["limited"]["limitResponse"]["queuing"] = json!({"queues": 7, "handSize": 8});
    let (code, status) = send(&env, "POST", LEVELS, Some(&bad)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "PriorityLevelConfiguration.flowcontrol.apiserver.k8s.io \"bad\" is invalid: spec.limited.limitResponse.queuing.handSize: Invalid value: 8: should not be greater than queues (7)"
    );

    // Status writes are checked for condition types only.
    let (code, status) = merge(
        &env,
        &format!("{FLOW_SCHEMAS}/batch/status"),
        &json!({"status": {"conditions": [{"type": "Dangling"}, {"type": "Dangling"}]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "FlowSchema.flowcontrol.apiserver.k8s.io \"batch\" is invalid: status.conditions[1].type: Duplicate value: \"Dangling\""
    );
    let (code, written) = merge(
        &env,
        &format!("{FLOW_SCHEMAS}/batch/status"),
        &json!({"status": {"conditions": [{"type": "Dangling", "status": "False"}]}}),
    )
    .await;
    assert_eq!(code, 200, "{written}");
    assert_eq!(
        written["metadata"]["generation"], 1,
        "status writes keep the generation"
    );
}

const RESOURCE: &str = "/apis/resource.k8s.io/v1";

#[tokio::test]
async fn dynamic_resource_allocation_objects_are_stored_and_validated() {
    let env = TestEnv::start().await.expect("env");
    let class = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}});
    let (code, created) = send(
        &env,
        "POST",
        &format!("{RESOURCE}/deviceclasses"),
        Some(&class),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(created["metadata"]["generation"], 1);

    let claims = format!("{RESOURCE}/namespaces/default/resourceclaims");
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}});
    let (code, created) = send(&env, "POST", &claims, Some(&claim)).await;
    assert_eq!(code, 201, "{created}");
    assert_eq!(
        created["spec"]["devices"]["requests"][0]["exactly"],
        json!({"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1})
    );

    let mut bad = claim.clone();
    bad["metadata"]["name"] = json!("bad");
    bad["spec"]["devices"]["requests"][0]["exactly"] =
        json!({"deviceClassName": "gpu.example.com", "allocationMode": "All", "count": 2});
    let (code, status) = send(&env, "POST", &claims, Some(&bad)).await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "ResourceClaim.resource.k8s.io \"bad\" is invalid: spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'"
    );

    // The spec is immutable; the status is written through /status.
    let (code, status) = merge(
        &env,
        &format!("{claims}/gpu"),
        &json!({"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "other"}}]}}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "ResourceClaim.resource.k8s.io \"gpu\" is invalid: spec: Invalid value: \"object\": field is immutable"
    );
    let (code, status) = merge(
        &env,
        &format!("{claims}/gpu/status"),
        &json!({"status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u"}]}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Forbidden: may not be specified when `allocated` is not set"
    );
    let table = get_table(&env, &claims).await;
    assert_eq!(column_names(&table), ["Name", "State", "Age"]);
    assert_eq!(table["rows"][0]["cells"][1], "pending");

    let slices = format!("{RESOURCE}/resourceslices");
    let slice = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpu"},
        "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
            "pool": {"name": "node-1", "resourceSliceCount": 1, "generation": 0},
            "devices": [{"name": "gpu-0"}]}});
    let (code, created) = send(&env, "POST", &slices, Some(&slice)).await;
    assert_eq!(code, 201, "{created}");
    let (code, status) = merge(
        &env,
        &format!("{slices}/node-1-gpu"),
        &json!({"spec": {"nodeName": "node-2"}}),
    )
    .await;
    assert_eq!(code, 422, "{status}");
    assert_eq!(
        status["message"],
        "ResourceSlice.resource.k8s.io \"node-1-gpu\" is invalid: spec.nodeName: Invalid value: \"node-2\": field is immutable"
    );
    let (code, list) = send(
        &env,
        "GET",
        &format!("{slices}?fieldSelector=spec.nodeName%3Dnode-1"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{list}");
    assert_eq!(list["items"].as_array().map(Vec::len), Some(1));
    let table = get_table(&env, &slices).await;
    assert_eq!(
        column_names(&table),
        ["Name", "Node", "Driver", "Pool", "Age"]
    );
    assert_eq!(
        table["rows"][0]["cells"].as_array().expect("cells")[..4],
        [
            json!("node-1-gpu"),
            json!("node-1"),
            json!("gpu.example.com"),
            json!("node-1")
        ]
    );
}
