//! Validation of PersistentVolumes, PersistentVolumeClaims, ResourceQuotas and the
//! `storage.k8s.io` kinds through the server, as kube-apiserver v1.36 answers: each refusal a 422
//! `Invalid` with upstream's message and causes, that changed nothing stored; update and
//! `/status` rules included.

mod common;

use common::*;
use serde_json::{Value, json};

/// Creates and expects 201, returning the stored object.
async fn created(env: &TestEnv, path: &str, body: &Value) -> Value {
    let (code, obj) = call(env, "POST", path, Some(body)).await;
    assert_eq!(code, 201, "{obj}");
    obj
}

/// Reads the object at `path`, changes it with `change` and writes it back to `path` +
/// `suffix` (`""` or `"/status"`); a write that lost a race with a controller (409) is redone
/// on the newer object, a few times at most.
async fn put_latest(
    env: &TestEnv,
    path: &str,
    suffix: &str,
    change: impl Fn(&mut Value),
) -> (u16, Value) {
    for _ in 0..20 {
        let (code, mut obj) = call(env, "GET", path, None).await;
        assert_eq!(code, 200, "{obj}");
        change(&mut obj);
        let answer = call(env, "PUT", &format!("{path}{suffix}"), Some(&obj)).await;
        if answer.0 != 409 {
            return answer;
        }
    }
    panic!("{path}{suffix}: every write conflicted");
}

/// Checks that nothing named `name` exists under `path` (a refused create stored nothing).
async fn absent(env: &TestEnv, path: &str, name: &str) {
    let (code, body) = call(env, "GET", &format!("{path}/{name}"), None).await;
    assert_eq!(code, 404, "{body}");
}

const QUOTAS: &str = "/api/v1/namespaces/default/resourcequotas";

/// A quota named `name` with `spec`.
fn quota(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn quota_scopes_and_selectors_are_checked_and_fixed() {
    let env = TestEnv::start().await.expect("env");
    // A scope that does not apply to a hard resource.
    let answer = call(
        &env,
        "POST",
        QUOTAS,
        Some(&quota(
            "q1",
            json!({"hard": {"secrets": "1"}, "scopes": ["BestEffort"]}),
        )),
    )
    .await;
    let detail = "Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: unsupported scope applied to resource";
    assert_invalid(
        &answer,
        &format!("ResourceQuota \"q1\" is invalid: spec.scopes: {detail}"),
        &[("FieldValueInvalid", detail, "spec.scopes")],
    );
    absent(&env, QUOTAS, "q1").await;

    // A selector whose operator and values do not fit its scope.
    let answer = call(
        &env,
        "POST",
        QUOTAS,
        Some(&quota(
            "q2",
            json!({"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "Terminating", "operator": "In", "values": ["x"]},
                {"scopeName": "PriorityClass", "operator": "NotIn"}]}}),
        )),
    )
    .await;
    let operator = "Invalid value: \"In\": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity";
    let values = "Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector";
    assert_invalid(
        &answer,
        &format!(
            "ResourceQuota \"q2\" is invalid: [spec.scopeSelector.matchExpressions.operator: {operator}, spec.scopeSelector.matchExpressions.values: {values}]"
        ),
        &[
            (
                "FieldValueInvalid",
                operator,
                "spec.scopeSelector.matchExpressions.operator",
            ),
            (
                "FieldValueRequired",
                values,
                "spec.scopeSelector.matchExpressions.values",
            ),
        ],
    );
    absent(&env, QUOTAS, "q2").await;

    // Scopes may not change once set; a status update checks only the status lists.
    created(
        &env,
        QUOTAS,
        &quota(
            "q3",
            json!({"hard": {"pods": "2"}, "scopes": ["NotBestEffort"]}),
        ),
    )
    .await;
    let q3 = format!("{QUOTAS}/q3");
    let answer = put_latest(&env, &q3, "", |q| {
        q["spec"]["scopes"] = json!(["BestEffort"])
    })
    .await;
    let immutable = "Invalid value: []core.ResourceQuotaScope{\"BestEffort\"}: field is immutable";
    assert_invalid(
        &answer,
        &format!("ResourceQuota \"q3\" is invalid: spec.scopes: {immutable}"),
        &[("FieldValueInvalid", immutable, "spec.scopes")],
    );
    let answer = put_latest(&env, &q3, "/status", |q| {
        q["status"] = json!({"hard": {"pods": "2"}, "used": {"pods": "-1"}});
    })
    .await;
    let negative = "Invalid value: \"-1\": must be greater than or equal to 0";
    assert_invalid(
        &answer,
        &format!("ResourceQuota \"q3\" is invalid: status.used[pods]: {negative}"),
        &[("FieldValueInvalid", negative, "status.used[pods]")],
    );
    let (code, now) = call(&env, "GET", &format!("{QUOTAS}/q3"), None).await;
    assert_eq!(code, 200, "{now}");
    assert_eq!(now["spec"]["scopes"], json!(["NotBestEffort"]), "{now}");
    assert_ne!(now["status"]["used"]["pods"], "-1", "{now}");
}

const PVS: &str = "/api/v1/persistentvolumes";
const PVCS: &str = "/api/v1/namespaces/default/persistentvolumeclaims";

/// A PV named `name` with a 1Gi capacity, one access mode and the fields of `extra`.
fn pv(name: &str, extra: Value) -> Value {
    let mut spec = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec})
}

/// A claim named `name` for 1Gi with the fields of `extra`.
fn pvc(name: &str, extra: Value) -> Value {
    let mut spec =
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn volumes_need_affinity_sources_and_keep_them() {
    let env = TestEnv::start().await.expect("env");
    // A local volume without node affinity, and an iSCSI source missing its fields.
    let answer = call(
        &env,
        "POST",
        PVS,
        Some(&pv("local-pv", json!({"local": {"path": "/mnt/a/../b"}}))),
    )
    .await;
    let backsteps = "Invalid value: \"/mnt/a/../b\": must not contain '..'";
    let affinity = "Required value: Local volume requires node affinity";
    assert_invalid(
        &answer,
        &format!(
            "PersistentVolume \"local-pv\" is invalid: [spec.local.path: {backsteps}, spec.nodeAffinity: {affinity}]"
        ),
        &[
            ("FieldValueInvalid", backsteps, "spec.local.path"),
            ("FieldValueRequired", affinity, "spec.nodeAffinity"),
        ],
    );
    absent(&env, PVS, "local-pv").await;
    let answer = call(
        &env,
        "POST",
        PVS,
        Some(&pv("iscsi-pv", json!({"iscsi": {"lun": 300}}))),
    )
    .await;
    let range = "Invalid value: 300: must be between 0 and 255, inclusive";
    assert_invalid(
        &answer,
        &format!(
            "PersistentVolume \"iscsi-pv\" is invalid: [spec.iscsi.targetPortal: Required value, spec.iscsi.iqn: Required value, spec.iscsi.lun: {range}]"
        ),
        &[
            (
                "FieldValueRequired",
                "Required value",
                "spec.iscsi.targetPortal",
            ),
            ("FieldValueRequired", "Required value", "spec.iscsi.iqn"),
            ("FieldValueInvalid", range, "spec.iscsi.lun"),
        ],
    );

    // Node affinity, once set, only moves from beta labels to GA ones.
    let zone = |key: &str| {
        json!({"local": {"path": "/mnt/disk"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": key, "operator": "In", "values": ["z1"]}]}]}}})
    };
    created(
        &env,
        PVS,
        &pv("zoned", zone("failure-domain.beta.kubernetes.io/zone")),
    )
    .await;
    let path = format!("{PVS}/zoned");
    let (code, body) =
        put_latest(&env, &path, "", |v| {
            v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
                ["key"] = json!("topology.kubernetes.io/zone");
        })
        .await;
    assert_eq!(code, 200, "{body}");
    let answer =
        put_latest(&env, &path, "", |v| {
            v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
                ["key"] = json!("example.com/zone");
        })
        .await;
    let immutable = "Invalid value: core.VolumeNodeAffinity{Required:(*core.NodeSelector)(0xc000000000)}: field is immutable, except for updating from beta label to GA";
    assert_invalid(
        &answer,
        &format!("PersistentVolume \"zoned\" is invalid: nodeAffinity: {immutable}"),
        &[("FieldValueInvalid", immutable, "nodeAffinity")],
    );

    // A status write changing the phase gets a new transition time; its spec is not checked.
    let (code, before) = call(&env, "GET", &path, None).await;
    assert_eq!(code, 200, "{before}");
    let (code, after) = put_latest(&env, &path, "/status", |v| {
        v["status"]["phase"] = json!("Available");
        v["status"]["lastPhaseTransitionTime"] =
            before["status"]["lastPhaseTransitionTime"].clone();
    })
    .await;
    assert_eq!(code, 200, "{after}");
    assert_eq!(after["status"]["phase"], "Available", "{after}");
    assert!(
        after["status"]["lastPhaseTransitionTime"].is_string(),
        "{after}"
    );
}

#[tokio::test]
async fn claims_check_data_sources_and_status() {
    let env = TestEnv::start().await.expect("env");
    let answer = call(
        &env,
        "POST",
        PVCS,
        Some(&pvc(
            "restored",
            json!({"dataSource": {"kind": "PersistentVolumeClaim", "name": "a"},
                "dataSourceRef": {"kind": "PersistentVolumeClaim", "name": "b"}}),
        )),
    )
    .await;
    let mismatch = "Invalid value: field.Path{name:\"dataSource\", index:\"\", parent:(*field.Path)(0xc000000000)}: must match dataSourceRef";
    assert_invalid(
        &answer,
        &format!("PersistentVolumeClaim \"restored\" is invalid: spec: {mismatch}"),
        &[("FieldValueInvalid", mismatch, "spec")],
    );
    absent(&env, PVCS, "restored").await;
    let answer = call(
        &env,
        "POST",
        PVCS,
        Some(&pvc(
            "snap",
            json!({"dataSourceRef": {"kind": "VolumeSnapshot", "name": ""}}),
        )),
    )
    .await;
    let default_group = "Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup";
    assert_invalid(
        &answer,
        &format!(
            "PersistentVolumeClaim \"snap\" is invalid: [spec.dataSourceRef.name: Required value, spec.dataSourceRef: {default_group}]"
        ),
        &[
            (
                "FieldValueRequired",
                "Required value",
                "spec.dataSourceRef.name",
            ),
            ("FieldValueInvalid", default_group, "spec.dataSourceRef"),
        ],
    );

    // Status writes: allocated resources keyed by storage, known resize statuses.
    created(&env, PVCS, &pvc("grow", json!({}))).await;
    let path = format!("{PVCS}/grow");
    let answer = put_latest(&env, &path, "/status", |c| {
        c["status"]["allocatedResources"] = json!({"cpu": "1"});
        c["status"]["allocatedResourceStatuses"] = json!({"storage": "Growing"});
    })
    .await;
    let statuses = "Unsupported value: \"storage\": supported values: \"ControllerResizeInProgress\", \"ControllerResizeInfeasible\", \"NodeResizeInProgress\", \"NodeResizeInfeasible\", \"NodeResizePending\"";
    let cpu = "Unsupported value: \"cpu\": supported values: \"storage\"";
    assert_invalid(
        &answer,
        &format!(
            "PersistentVolumeClaim \"grow\" is invalid: [status.allocatedResourceStatus: {statuses}, status.allocatedResources: {cpu}]"
        ),
        &[
            (
                "FieldValueNotSupported",
                statuses,
                "status.allocatedResourceStatus",
            ),
            ("FieldValueNotSupported", cpu, "status.allocatedResources"),
        ],
    );
    let (code, body) = put_latest(&env, &path, "/status", |c| {
        c["status"]["allocatedResources"] = json!({"storage": "2Gi"});
        c["status"]["allocatedResourceStatuses"] = json!({"storage": "ControllerResizeInProgress"});
    })
    .await;
    assert_eq!(code, 200, "{body}");
}

const STORAGE: &str = "/apis/storage.k8s.io/v1";

#[tokio::test]
async fn storage_kinds_check_their_fields_and_updates() {
    let env = TestEnv::start().await.expect("env");
    // StorageClass: allowed topologies with a repeated value and a repeated term.
    let classes = format!("{STORAGE}/storageclasses");
    let zone = |values: Value| json!({"matchLabelExpressions": [{"key": "topology.kubernetes.io/zone", "values": values}]});
    let answer = call(
        &env,
        "POST",
        &classes,
        Some(
            &json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "zoned"}, "provisioner": "example.com/disk",
            "allowedTopologies": [zone(json!(["a", "a"])), zone(json!(["a"]))]}),
        ),
    )
    .await;
    assert_invalid(
        &answer,
        "StorageClass.storage.k8s.io \"zoned\" is invalid: [allowedTopologies[0].matchLabelExpressions[0].values[1]: Duplicate value: \"a\", allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\"]",
        &[
            (
                "FieldValueDuplicate",
                "Duplicate value: \"a\"",
                "allowedTopologies[0].matchLabelExpressions[0].values[1]",
            ),
            (
                "FieldValueDuplicate",
                "Duplicate value: \"\"",
                "allowedTopologies[1].matchLabelExpressions",
            ),
        ],
    );
    absent(&env, &classes, "zoned").await;

    // CSIDriver: token requests.
    let drivers = format!("{STORAGE}/csidrivers");
    let answer = call(
        &env,
        "POST",
        &drivers,
        Some(&json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": "tokens.example.com"},
            "spec": {"tokenRequests": [{"audience": "vault", "expirationSeconds": 60}, {"audience": "vault"}]}})),
    )
    .await;
    let short = "Invalid value: 60: may not specify a duration less than 10 minutes";
    assert_invalid(
        &answer,
        &format!(
            "CSIDriver.storage.k8s.io \"tokens.example.com\" is invalid: [spec.tokenRequests[0].expirationSeconds: {short}, spec.tokenRequests[1].audience: Duplicate value: \"vault\"]"
        ),
        &[
            (
                "FieldValueInvalid",
                short,
                "spec.tokenRequests[0].expirationSeconds",
            ),
            (
                "FieldValueDuplicate",
                "Duplicate value: \"vault\"",
                "spec.tokenRequests[1].audience",
            ),
        ],
    );

    // VolumeAttributesClass: driver and parameters are fixed.
    let vacs = format!("{STORAGE}/volumeattributesclasses");
    created(
        &env,
        &vacs,
        &json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttributesClass",
            "metadata": {"name": "gold"}, "driverName": "d.example.com", "parameters": {"iops": "100"}}),
    )
    .await;
    let answer = put_latest(&env, &format!("{vacs}/gold"), "", |c| {
        c["driverName"] = json!("e.example.com");
    })
    .await;
    assert_invalid(
        &answer,
        "VolumeAttributesClass.storage.k8s.io \"gold\" is invalid: driverName: Forbidden: updates to driverName are forbidden.",
        &[(
            "FieldValueForbidden",
            "Forbidden: updates to driverName are forbidden.",
            "driverName",
        )],
    );

    // VolumeAttachment: a status write with a negative error code.
    let attachments = format!("{STORAGE}/volumeattachments");
    created(
        &env,
        &attachments,
        &json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment",
            "metadata": {"name": "va"}, "spec": {"attacher": "d.example.com", "nodeName": "n1",
            "source": {"persistentVolumeName": "pv1"}}}),
    )
    .await;
    let answer = put_latest(&env, &format!("{attachments}/va"), "/status", |v| {
        v["status"] =
            json!({"attached": false, "attachError": {"message": "boom", "errorCode": -5}});
    })
    .await;
    let code = "Invalid value: -5: must be between 0 and 2147483647, inclusive";
    assert_invalid(
        &answer,
        &format!(
            "VolumeAttachment.storage.k8s.io \"va\" is invalid: status.attachError.errorCode: {code}"
        ),
        &[("FieldValueInvalid", code, "status.attachError.errorCode")],
    );

    // CSIStorageCapacity: the class it reports for is fixed.
    let capacities = format!("{STORAGE}/namespaces/default/csistoragecapacities");
    created(
        &env,
        &capacities,
        &json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
            "metadata": {"name": "cap"}, "storageClassName": "fast", "capacity": "10Gi"}),
    )
    .await;
    let answer = put_latest(&env, &format!("{capacities}/cap"), "", |c| {
        c["storageClassName"] = json!("slow");
    })
    .await;
    let fixed = "Invalid value: \"slow\": field is immutable";
    assert_invalid(
        &answer,
        &format!("CSIStorageCapacity.storage.k8s.io \"cap\" is invalid: storageClassName: {fixed}"),
        &[("FieldValueInvalid", fixed, "storageClassName")],
    );
}
