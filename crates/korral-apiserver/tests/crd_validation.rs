//! CustomResourceDefinition validation over HTTP, as kube-apiserver v1.36 answers: 422
//! `Invalid` Status bodies (message, causes in order) for names, versions, printer columns,
//! selectable fields, the scale subresource, updates and `/status` writes; nothing is stored.

mod common;

use common::*;
use serde_json::{Value, json};

/// The CRD collection.
const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

/// The Widget CRD's own path.
const WIDGETS: &str =
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.ref.example.org";

/// The upstream message prefix for the Widget CRD.
const PREFIX: &str =
    "CustomResourceDefinition.apiextensions.k8s.io \"widgets.ref.example.org\" is invalid: ";

/// The DNS-1035 label message.
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Creating `crd` is refused as `message` with `causes`, and nothing is stored.
async fn refused(env: &TestEnv, crd: &Value, message: &str, causes: &[(&str, &str, &str)]) {
    let answer = call(env, "POST", CRDS, Some(crd)).await;
    assert_invalid(&answer, message, causes);
    let name = crd["metadata"]["name"].as_str().unwrap_or_default();
    let (code, _) = call(env, "GET", &format!("{CRDS}/{name}"), None).await;
    assert_eq!(code, 404, "a refused CRD is not stored");
}

#[tokio::test]
async fn names_are_checked_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let mut crd = widget_crd();
    crd["spec"]["names"]["kind"] = json!("Wid_get");
    crd["spec"]["names"]["listKind"] = json!("Wid_get");
    crd["spec"]["names"]["categories"] = json!(["All"]);
    let kind = format!(
        "Invalid value: \"Wid_get\": may have mixed case, but should otherwise match: {DNS1035}"
    );
    let category = format!("Invalid value: \"All\": {DNS1035}");
    let same = "Invalid value: \"Wid_get\": kind and listKind may not be the same";
    refused(
        &env,
        &crd,
        &format!(
            "{PREFIX}[spec.names.kind: {kind}, spec.names.listKind: {kind}, spec.names.listKind: {same}, spec.names.categories[0]: {category}]"
        ),
        &[
            ("FieldValueInvalid", &kind, "spec.names.kind"),
            ("FieldValueInvalid", &kind, "spec.names.listKind"),
            ("FieldValueInvalid", same, "spec.names.listKind"),
            ("FieldValueInvalid", &category, "spec.names.categories[0]"),
        ],
    )
    .await;
}

#[tokio::test]
async fn versions_are_checked_as_upstream() {
    let env = TestEnv::start().await.expect("env");
    let mut crd = widget_crd();
    crd["spec"]["versions"][1]["schema"] = Value::Null;
    crd["spec"]["versions"][1]["deprecationWarning"] = json!("gone soon");
    crd["spec"]["preserveUnknownFields"] = json!(true);
    let warning = "Invalid value: \"gone soon\": can only be set for deprecated versions";
    let defaults = "Invalid value: true: must be false in order to use defaults in the schema";
    let preserve = "Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead";
    refused(
        &env,
        &crd,
        &format!(
            "{PREFIX}[spec.versions[1].schema.openAPIV3Schema: Required value, spec.preserveUnknownFields: {defaults}, spec.versions[1].deprecationWarning: {warning}, spec.preserveUnknownFields: {preserve}]"
        ),
        &[
            (
                "FieldValueRequired",
                "Required value",
                "spec.versions[1].schema.openAPIV3Schema",
            ),
            ("FieldValueInvalid", defaults, "spec.preserveUnknownFields"),
            (
                "FieldValueInvalid",
                warning,
                "spec.versions[1].deprecationWarning",
            ),
            ("FieldValueInvalid", preserve, "spec.preserveUnknownFields"),
        ],
    )
    .await;
}

#[tokio::test]
async fn columns_selectable_fields_and_scale_paths_are_checked() {
    let env = TestEnv::start().await.expect("env");
    let mut crd = widget_crd();
    // v1 has its own schema and columns: per-version paths.
    let v1 = &mut crd["spec"]["versions"][0];
    v1["additionalPrinterColumns"] =
        json!([{"name": "Color", "type": "enum", "format": "hex", "jsonPath": "spec.color"}]);
    v1["selectableFields"] = json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.replicas"},
                                    {"jsonPath": ".status"}, {"jsonPath": ".spec.colour"}]);
    // Both versions share their subresources: a spec-level path, as upstream reports it.
    let scale = json!({"specReplicasPath": ".status.replicas", "statusReplicasPath": ".status.ready",
                       "labelSelectorPath": "status.selector"});
    for i in 0..2 {
        crd["spec"]["versions"][i]["subresources"]["scale"] = scale.clone();
    }
    let col = "spec.versions[0].additionalPrinterColumns[0]";
    let sel = "spec.versions[0].selectableFields";
    let causes = [
        (
            "FieldValueInvalid",
            "Invalid value: \"enum\": must be one of boolean,date,integer,number,string",
            format!("{col}.type"),
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \"hex\": must be one of byte,date,date-time,double,float,int32,int64,password",
            format!("{col}.format"),
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \"spec.color\": must be a simple json path starting with .",
            format!("{col}.JSONPath"),
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \".status\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            format!("{sel}[2].jsonPath"),
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \".spec.colour\": is an invalid path: does not refer to a valid field",
            format!("{sel}[3].jsonPath"),
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \".status.replicas\": should be a json path under .spec",
            "spec.subresources.scale.specReplicasPath".to_string(),
        ),
        (
            "FieldValueInvalid",
            "Invalid value: \"status.selector\": must be a simple json path starting with .",
            "spec.subresources.scale.labelSelectorPath".to_string(),
        ),
    ];
    let summary: Vec<String> = causes.iter().map(|(_, m, f)| format!("{f}: {m}")).collect();
    let want: Vec<(&str, &str, &str)> = causes
        .iter()
        .map(|(r, m, f)| (*r, *m, f.as_str()))
        .collect();
    refused(
        &env,
        &crd,
        &format!("{PREFIX}[{}]", summary.join(", ")),
        &want,
    )
    .await;
}

#[tokio::test]
async fn updates_keep_identity_and_status_writes_check_accepted_names() {
    let env = TestEnv::start().await.expect("env");
    install_widget_crd(&env).await;
    // Established: the scope and kind shape stored objects; group and plural name the CRD.
    let patch = json!({"spec": {"scope": "Cluster", "group": "other.example.org",
                                "names": {"kind": "Gadget", "listKind": "GadgetList"}}});
    let answer = raw(
        &env.client(),
        "PATCH",
        WIDGETS,
        Some("application/merge-patch+json"),
        patch.to_string().into_bytes(),
    )
    .await;
    let scope = "Invalid value: \"Cluster\": field is immutable";
    let kind = "Invalid value: \"Gadget\": field is immutable";
    let group = "Invalid value: \"other.example.org\": field is immutable";
    assert_invalid(
        &answer,
        &format!("{PREFIX}[spec.scope: {scope}, spec.names.kind: {kind}, spec.group: {group}]"),
        &[
            ("FieldValueInvalid", scope, "spec.scope"),
            ("FieldValueInvalid", kind, "spec.names.kind"),
            ("FieldValueInvalid", group, "spec.group"),
        ],
    );
    let (_, stored) = call(&env, "GET", WIDGETS, None).await;
    assert_eq!(stored["spec"]["scope"], "Namespaced", "nothing changed");

    // A /status write is checked only for its accepted names...
    let status_path = format!("{WIDGETS}/status");
    let bad = json!({"status": {"acceptedNames": {"plural": "Widgets", "kind": "Widget"}}});
    let answer = raw(
        &env.client(),
        "PATCH",
        &status_path,
        Some("application/merge-patch+json"),
        bad.to_string().into_bytes(),
    )
    .await;
    let plural = format!("Invalid value: \"Widgets\": {DNS1035}");
    assert_invalid(
        &answer,
        &format!("{PREFIX}status.acceptedNames.plural: {plural}"),
        &[("FieldValueInvalid", &plural, "status.acceptedNames.plural")],
    );
    // ...so a migration may rewrite the stored versions.
    let migrated = json!({"status": {"storedVersions": ["v1beta1"]}});
    let (code, body) = raw(
        &env.client(),
        "PATCH",
        &status_path,
        Some("application/merge-patch+json"),
        migrated.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["storedVersions"], json!(["v1beta1"]));
    // The next write of the main resource records the storage version again, as upstream's
    // PrepareForUpdate does.
    let label = json!({"metadata": {"labels": {"team": "a"}}});
    let (code, body) = raw(
        &env.client(),
        "PATCH",
        WIDGETS,
        Some("application/merge-patch+json"),
        label.to_string().into_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["storedVersions"], json!(["v1beta1", "v1"]));
}
