//! The API priority and fairness configuration a server keeps, as a real kube-apiserver v1.33+
//! does: upstream's mandatory and suggested PriorityLevelConfigurations and FlowSchemas after
//! start (with the APF controller's `Dangling` status and upstream's Table columns), and the
//! ensurer's rules across a restart of a durable server: `apf.kubernetes.io/autoupdate-spec`
//! `"true"` restores a drifted spec, `"false"` keeps the user's, deleted objects come back,
//! mandatory specs are always restored, objects annotated `"true"` that the configuration no
//! longer names are deleted.

mod common;

use common::*;
use korral_apiserver::ServerConfig;
use serde_json::{Value, json};

const FLOW_SCHEMAS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas";
const LEVELS: &str = "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations";
const AUTO_UPDATE: &str = "apf.kubernetes.io/autoupdate-spec";
const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

async fn send(env: &TestEnv, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let content_type = body.map(|_| "application/json");
    raw(&env.client(), method, path, content_type, bytes).await
}

async fn get(env: &TestEnv, path: &str) -> Value {
    let (code, obj) = send(env, "GET", path, None).await;
    assert_eq!(code, 200, "GET {path}: {obj}");
    obj
}

/// A JSON merge patch that must succeed.
async fn merge(env: &TestEnv, path: &str, patch: &Value) -> Value {
    let (code, obj) = raw(
        &env.client(),
        "PATCH",
        path,
        Some("application/merge-patch+json"),
        patch.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "PATCH {path}: {obj}");
    obj
}

async fn delete(env: &TestEnv, path: &str) {
    let (code, status) = send(env, "DELETE", path, None).await;
    assert_eq!(code, 200, "DELETE {path}: {status}");
}

/// The items of a list.
async fn items(env: &TestEnv, path: &str) -> Vec<Value> {
    get(env, path).await["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
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

/// The `Dangling` condition's status and reason.
fn dangling(schema: &Value) -> (String, String) {
    let conditions = schema["status"]["conditions"].as_array();
    let condition = conditions
        .and_then(|list| list.iter().find(|c| c["type"] == "Dangling"))
        .cloned()
        .unwrap_or_default();
    (
        condition["status"].as_str().unwrap_or("").to_string(),
        condition["reason"].as_str().unwrap_or("").to_string(),
    )
}

/// Upstream's suggested and mandatory FlowSchemas: name, priority level, matching precedence,
/// distinguisher method (`<none>` when unset), by name.
const EXPECTED_SCHEMAS: [(&str, &str, i64, &str); 13] = [
    ("catch-all", "catch-all", 10000, "ByUser"),
    ("endpoint-controller", "workload-high", 150, "ByUser"),
    ("exempt", "exempt", 1, "<none>"),
    ("global-default", "global-default", 9900, "ByUser"),
    (
        "kube-controller-manager",
        "workload-high",
        800,
        "ByNamespace",
    ),
    ("kube-scheduler", "workload-high", 800, "ByNamespace"),
    (
        "kube-system-service-accounts",
        "workload-high",
        900,
        "ByNamespace",
    ),
    ("probes", "exempt", 2, "<none>"),
    ("service-accounts", "workload-low", 9000, "ByUser"),
    ("system-leader-election", "leader-election", 100, "ByUser"),
    ("system-node-high", "node-high", 400, "ByUser"),
    ("system-nodes", "system", 500, "ByUser"),
    ("workload-leader-election", "leader-election", 200, "ByUser"),
];

/// Upstream's priority levels: name, type, nominal concurrency shares, lendable percent, and
/// queues / hand size / queue length limit (0 when the level does not queue), by name.
const EXPECTED_LEVELS: [(&str, &str, i64, i64, [i64; 3]); 8] = [
    ("catch-all", "Limited", 5, 0, [0, 0, 0]),
    ("exempt", "Exempt", 0, 0, [0, 0, 0]),
    ("global-default", "Limited", 20, 50, [128, 6, 50]),
    ("leader-election", "Limited", 10, 0, [16, 4, 50]),
    ("node-high", "Limited", 40, 25, [64, 6, 50]),
    ("system", "Limited", 30, 33, [64, 6, 50]),
    ("workload-high", "Limited", 40, 50, [128, 6, 50]),
    ("workload-low", "Limited", 100, 90, [128, 6, 50]),
];

fn schema_row(obj: &Value) -> (String, String, i64, String) {
    let spec = &obj["spec"];
    (
        obj["metadata"]["name"].as_str().unwrap_or("").to_string(),
        spec["priorityLevelConfiguration"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string(),
        spec["matchingPrecedence"].as_i64().unwrap_or(0),
        spec["distinguisherMethod"]["type"]
            .as_str()
            .unwrap_or("<none>")
            .to_string(),
    )
}

fn level_row(obj: &Value) -> (String, String, i64, i64, [i64; 3]) {
    let spec = &obj["spec"];
    let settings = if spec["type"] == "Exempt" {
        &spec["exempt"]
    } else {
        &spec["limited"]
    };
    let queuing = &spec["limited"]["limitResponse"]["queuing"];
    let int = |v: &Value| v.as_i64().unwrap_or(0);
    (
        obj["metadata"]["name"].as_str().unwrap_or("").to_string(),
        spec["type"].as_str().unwrap_or("").to_string(),
        int(&settings["nominalConcurrencyShares"]),
        int(&settings["lendablePercent"]),
        [
            int(&queuing["queues"]),
            int(&queuing["handSize"]),
            int(&queuing["queueLengthLimit"]),
        ],
    )
}

#[tokio::test]
async fn the_suggested_and_mandatory_configuration_is_there_after_start() {
    let env = TestEnv::start().await.expect("env");
    let schemas = items(&env, FLOW_SCHEMAS).await;
    let rows: Vec<_> = schemas.iter().map(schema_row).collect();
    let want: Vec<_> = EXPECTED_SCHEMAS
        .iter()
        .map(|(n, l, p, d)| (n.to_string(), l.to_string(), *p, d.to_string()))
        .collect();
    assert_eq!(rows, want);
    for schema in &schemas {
        let name = &schema["metadata"]["name"];
        assert_eq!(
            schema["metadata"]["annotations"][AUTO_UPDATE], "true",
            "{name}"
        );
        assert_eq!(schema["metadata"]["generation"], 1, "{name}");
        assert_eq!(dangling(schema), ("False".into(), "Found".into()), "{name}");
        // The producer's create and the APF controller's forced apply of `/status`.
        let mut managers: Vec<(&str, &str)> = schema["metadata"]["managedFields"]
            .as_array()
            .map(|m| {
                m.iter()
                    .filter_map(|e| Some((e["manager"].as_str()?, e["operation"].as_str()?)))
                    .collect()
            })
            .unwrap_or_default();
        managers.sort_unstable();
        assert_eq!(
            managers,
            [
                ("api-priority-and-fairness-config-consumer-v1", "Apply"),
                ("api-priority-and-fairness-config-producer-v1", "Update")
            ],
            "{name}"
        );
    }
    let levels = items(&env, LEVELS).await;
    let rows: Vec<_> = levels.iter().map(level_row).collect();
    let want: Vec<_> = EXPECTED_LEVELS
        .iter()
        .map(|(n, t, s, l, q)| (n.to_string(), t.to_string(), *s, *l, *q))
        .collect();
    assert_eq!(rows, want);
    for level in &levels {
        assert_eq!(level["metadata"]["annotations"][AUTO_UPDATE], "true");
        assert_eq!(
            level["status"],
            json!({}),
            "the controller writes no level status"
        );
    }

    // The rules, as upstream spells two of them.
    let probes = get(&env, &format!("{FLOW_SCHEMAS}/probes")).await;
    assert_eq!(
        probes["spec"]["rules"],
        json!([{
            "subjects": [{"kind": "Group", "group": {"name": "system:unauthenticated"}},
                {"kind": "Group", "group": {"name": "system:authenticated"}}],
            "nonResourceRules": [{"verbs": ["get"],
                "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
        }])
    );
    let endpoints = get(&env, &format!("{FLOW_SCHEMAS}/endpoint-controller")).await;
    assert_eq!(
        endpoints["spec"]["rules"],
        json!([{
            "subjects": [
                {"kind": "User", "user": {"name": "system:kube-controller-manager"}},
                {"kind": "ServiceAccount", "serviceAccount":
                    {"name": "endpoint-controller", "namespace": "kube-system"}},
                {"kind": "ServiceAccount", "serviceAccount":
                    {"name": "endpointslicemirroring-controller", "namespace": "kube-system"}},
            ],
            "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": [""],
                "resources": ["endpoints"], "namespaces": ["*"]}],
        }])
    );

    // Upstream's Table cells; FlowSchema rows by matching precedence, then name.
    let table = get_table(&env, FLOW_SCHEMAS).await;
    let order: Vec<&str> = table["rows"]
        .as_array()
        .map(|rows| rows.iter().filter_map(|r| r["cells"][0].as_str()).collect())
        .unwrap_or_default();
    let mut want: Vec<(i64, &str)> = EXPECTED_SCHEMAS.iter().map(|s| (s.2, s.0)).collect();
    want.sort_unstable();
    assert_eq!(order, want.iter().map(|(_, n)| *n).collect::<Vec<_>>());
    assert_eq!(order[..3], ["exempt", "probes", "system-leader-election"]);
    let row = table["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["cells"][0] == "probes"))
        .cloned()
        .unwrap_or_default();
    let cells = row["cells"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        [&cells[..4], &cells[5..]].concat(),
        [
            json!("probes"),
            json!("exempt"),
            json!(2),
            json!("<none>"),
            json!("False")
        ]
    );
    let table = get_table(&env, LEVELS).await;
    let row = table["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["cells"][0] == "leader-election"))
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        row["cells"].as_array().cloned().unwrap_or_default()[..6],
        [
            json!("leader-election"),
            json!("Limited"),
            json!(10),
            json!(16),
            json!(4),
            json!(50)
        ]
    );
}

#[tokio::test]
async fn the_annotation_rules_hold_across_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let start = || async {
        TestEnv::builder()
            .server_config(ServerConfig::durable(&data))
            .start()
            .await
            .expect("env")
    };
    let untouched_rv = {
        let env = start().await;
        // A suggested schema annotated "true" drifts: restored.
        merge(
            &env,
            &format!("{FLOW_SCHEMAS}/service-accounts"),
            &json!({"spec": {"matchingPrecedence": 7000}}),
        )
        .await;
        // A suggested level annotated "false" changes: kept.
        merge(
            &env,
            &format!("{LEVELS}/workload-low"),
            &json!({"metadata": {"annotations": {AUTO_UPDATE: "false"}},
                "spec": {"limited": {"nominalConcurrencyShares": 7}}}),
        )
        .await;
        // A suggested schema without the annotation, edited: kept, annotated "false".
        merge(
            &env,
            &format!("{FLOW_SCHEMAS}/kube-scheduler"),
            &json!({"metadata": {"annotations": {AUTO_UPDATE: null}},
                "spec": {"matchingPrecedence": 850}}),
        )
        .await;
        // A suggested schema kept by its user, pointing at a level that does not exist.
        merge(
            &env,
            &format!("{FLOW_SCHEMAS}/workload-leader-election"),
            &json!({"metadata": {"annotations": {AUTO_UPDATE: "false"}},
                "spec": {"priorityLevelConfiguration": {"name": "nope"}}}),
        )
        .await;
        // The exempt level's exempt settings are the administrator's; its annotation is not.
        merge(
            &env,
            &format!("{LEVELS}/exempt"),
            &json!({"metadata": {"annotations": {AUTO_UPDATE: "false"}},
                "spec": {"exempt": {"nominalConcurrencyShares": 10}}}),
        )
        .await;
        // Deleted suggested and mandatory objects come back.
        for path in [
            format!("{FLOW_SCHEMAS}/probes"),
            format!("{FLOW_SCHEMAS}/catch-all"),
            format!("{LEVELS}/global-default"),
            format!("{LEVELS}/catch-all"),
        ] {
            delete(&env, &path).await;
        }
        // Objects of the user's: one annotated "true" that no bootstrap object names (the
        // ensurer deletes it), one without the annotation (kept).
        for (name, annotations) in [("stale", json!({AUTO_UPDATE: "true"})), ("mine", json!({}))] {
            let schema = json!({
                "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
                "metadata": {"name": name, "annotations": annotations},
                "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
                    "matchingPrecedence": 5000,
                    "rules": [{"subjects": [{"kind": "User", "user": {"name": name}}],
                        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}]},
            });
            let (code, created) = send(&env, "POST", FLOW_SCHEMAS, Some(&schema)).await;
            assert_eq!(code, 201, "{created}");
        }
        let untouched = get(&env, &format!("{FLOW_SCHEMAS}/system-nodes")).await;
        env.shutdown().await;
        untouched["metadata"]["resourceVersion"].clone()
    };

    let env = start().await;
    let schema = |name: &str| format!("{FLOW_SCHEMAS}/{name}");
    let level = |name: &str| format!("{LEVELS}/{name}");

    let restored = get(&env, &schema("service-accounts")).await;
    assert_eq!(restored["spec"]["matchingPrecedence"], 9000);
    assert_eq!(restored["metadata"]["generation"], 3);

    let kept = get(&env, &level("workload-low")).await;
    assert_eq!(kept["spec"]["limited"]["nominalConcurrencyShares"], 7);
    assert_eq!(kept["metadata"]["annotations"][AUTO_UPDATE], "false");

    let edited = get(&env, &schema("kube-scheduler")).await;
    assert_eq!(edited["spec"]["matchingPrecedence"], 850);
    assert_eq!(edited["metadata"]["annotations"][AUTO_UPDATE], "false");

    let dangling_schema = get(&env, &schema("workload-leader-election")).await;
    assert_eq!(
        dangling_schema["spec"]["priorityLevelConfiguration"]["name"],
        "nope"
    );
    assert_eq!(
        dangling(&dangling_schema),
        ("True".into(), "NotFound".into())
    );

    let exempt = get(&env, &level("exempt")).await;
    assert_eq!(exempt["spec"]["exempt"]["nominalConcurrencyShares"], 10);
    assert_eq!(exempt["metadata"]["annotations"][AUTO_UPDATE], "true");

    for path in [schema("probes"), schema("catch-all")] {
        let back = get(&env, &path).await;
        assert_eq!(back["metadata"]["generation"], 1, "{path}");
        assert_eq!(back["metadata"]["annotations"][AUTO_UPDATE], "true");
        assert_eq!(dangling(&back), ("False".into(), "Found".into()), "{path}");
    }
    let back = get(&env, &level("global-default")).await;
    assert_eq!(back["spec"]["limited"]["nominalConcurrencyShares"], 20);
    let back = get(&env, &level("catch-all")).await;
    assert_eq!(
        back["spec"]["limited"]["limitResponse"],
        json!({"type": "Reject"})
    );

    let (code, _) = send(&env, "GET", &schema("stale"), None).await;
    assert_eq!(code, 404, "an unwanted auto-updated object is deleted");
    get(&env, &schema("mine")).await;

    let untouched = get(&env, &schema("system-nodes")).await;
    assert_eq!(
        untouched["metadata"]["resourceVersion"], untouched_rv,
        "an object as the configuration has it is not written again"
    );
    let names: Vec<String> = items(&env, FLOW_SCHEMAS)
        .await
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    assert_eq!(names.len(), EXPECTED_SCHEMAS.len() + 1, "{names:?}");
    env.shutdown().await;
}
