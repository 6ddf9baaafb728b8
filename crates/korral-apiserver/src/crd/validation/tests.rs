//! Table-driven tests of CRD validation: each case edits a valid CRD and expects upstream's
//! causes (path, message) in upstream's order.

use serde_json::{Value, json};

use super::*;

/// A valid single-version CRD `widgets.ref.example.com` with a status subresource.
fn widget() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.ref.example.com"},
        "spec": {
            "group": "ref.example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "conversion": {"strategy": "None"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "replicas": {"type": "integer"}, "color": {"type": "string"}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
                "subresources": {"status": {}}
            }]
        }
    })
}

/// A second version of the widget's schema with a different property.
fn v2(storage: bool) -> Value {
    json!({"name": "v2", "served": true, "storage": storage,
           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
               "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}})
}

/// The summarised causes of creating `crd`.
fn create(crd: &Value) -> Vec<String> {
    let registry = Registry::with_builtins();
    validate(crd, None, &registry)
        .iter()
        .map(Cause::summary)
        .collect()
}

/// The summarised causes of updating `old` into `new`.
fn update(new: &Value, old: &Value) -> Vec<String> {
    let registry = Registry::with_builtins();
    validate(new, Some(old), &registry)
        .iter()
        .map(Cause::summary)
        .collect()
}

/// `widget()` edited by `edit`.
fn with(edit: impl FnOnce(&mut Value)) -> Value {
    let mut crd = widget();
    edit(&mut crd);
    crd
}

/// The DNS-1035 message.
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

#[test]
fn valid_crds_pass() {
    assert_eq!(create(&widget()), Vec::<String>::new());
    let two = with(|c| {
        c["spec"]["versions"][0]["subresources"] = Value::Null;
        c["spec"]["versions"]
            .as_array_mut()
            .expect("versions")
            .push(v2(false));
    });
    assert_eq!(create(&two), Vec::<String>::new());
}

#[test]
fn spec_level_rules() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            with(|c| {
                c["spec"]["group"] = json!("example");
                c["metadata"]["name"] = json!("widgets.example");
            }),
            vec!["spec.group: Invalid value: \"example\": should be a domain with at least one dot".into()],
        ),
        (
            with(|c| c["spec"]["scope"] = json!("Global")),
            vec!["spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"".into()],
        ),
        (
            with(|c| c["metadata"]["name"] = json!("gadgets.ref.example.com")),
            vec!["metadata.name: Invalid value: \"gadgets.ref.example.com\": must be spec.names.plural+\".\"+spec.group".into()],
        ),
        (
            with(|c| c["spec"]["preserveUnknownFields"] = json!(true)),
            vec!["spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead".into()],
        ),
        (
            with(|c| c["spec"]["names"]["listKind"] = json!("Widget")),
            vec!["spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same".into()],
        ),
        (
            with(|c| c["spec"]["names"]["shortNames"] = json!(["w_1"])),
            vec![format!("spec.names.shortNames[0]: Invalid value: \"w_1\": {DNS1035}")],
        ),
    ];
    for (crd, want) in cases {
        assert_eq!(create(&crd), want, "{}", crd["spec"]);
    }
}

#[test]
fn version_rules() {
    let cases: Vec<(Value, Vec<String>)> = vec![
        (
            with(|c| c["spec"]["versions"][0]["schema"] = Value::Null),
            vec!["spec.versions[0].schema.openAPIV3Schema: Required value".into()],
        ),
        (
            with(|c| c["spec"]["versions"][0]["name"] = json!("1beta")),
            vec![
                format!("spec.versions[0].name: Invalid value: \"1beta\": {DNS1035}"),
                format!("spec.version: Invalid value: \"1beta\": {DNS1035}"),
            ],
        ),
        (
            with(|c| c["spec"]["versions"][0]["deprecationWarning"] = json!("old")),
            vec!["spec.versions[0].deprecationWarning: Invalid value: \"old\": can only be set for deprecated versions".into()],
        ),
        (
            with(|c| {
                c["spec"]["versions"][0]["deprecated"] = json!(true);
                c["spec"]["versions"][0]["deprecationWarning"] = json!(format!("{}\u{7}", "x".repeat(256)));
            }),
            vec![
                format!("spec.versions[0].deprecationWarning: Invalid value: \"{}\\u0007\": must be <= 256 characters long", "x".repeat(256)),
                format!("spec.versions[0].deprecationWarning: Invalid value: \"{}\\u0007\": must only contain printable UTF-8 characters; non-printable character found at index 256", "x".repeat(256)),
            ],
        ),
    ];
    for (crd, want) in cases {
        assert_eq!(create(&crd), want, "{}", crd["spec"]);
    }
}

#[test]
fn storage_and_unique_versions_render_the_internal_versions() {
    let crd = with(|c| {
        c["spec"]["versions"][0]["subresources"] = Value::Null;
        let mut dup = v2(true);
        dup["name"] = json!("v1");
        c["spec"]["versions"]
            .as_array_mut()
            .expect("versions")
            .push(dup);
    });
    let got = create(&crd);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got[0].starts_with("spec.versions: Invalid value: [{\"Name\":\"v1\",\"Served\":true,\"Storage\":true,\"Deprecated\":false,\"DeprecationWarning\":null,\"Schema\":{\"OpenAPIV3Schema\":{\"ID\":\"\","), "{}", got[0]);
    assert!(got[0].ends_with("\"Subresources\":null,\"AdditionalPrinterColumns\":null,\"SelectableFields\":null}]: must contain unique version names"), "{}", got[0]);
    assert!(
        got[1].ends_with(": must have exactly one version marked as storage version"),
        "{}",
        got[1]
    );
}

#[test]
fn shared_attributes_report_spec_level_paths() {
    // One version: its columns, scale and selectable fields are the spec's.
    let crd = with(|c| {
        let v = &mut c["spec"]["versions"][0];
        v["additionalPrinterColumns"] =
            json!([{"name": "Color", "type": "text", "jsonPath": ".spec.color"}]);
        v["subresources"]["scale"] = json!({"specReplicasPath": ".status.replicas", "statusReplicasPath": ".status.replicas"});
        v["selectableFields"] =
            json!([{"jsonPath": ".spec.replicas"}, {"jsonPath": ".spec.missing"}]);
    });
    assert_eq!(
        create(&crd),
        [
            "spec.subresources.scale.specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec",
            "spec.additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
            "spec.selectableFields[1].jsonPath: Invalid value: \".spec.missing\": is an invalid path: does not refer to a valid field",
        ]
    );
    // Two versions with different schemas: per-version paths.
    let crd = with(|c| {
        c["spec"]["versions"][0]["subresources"] = Value::Null;
        c["spec"]["versions"][0]["additionalPrinterColumns"] =
            json!([{"name": "C", "type": "string", "jsonPath": "spec.color"}]);
        let mut two = v2(false);
        two["selectableFields"] = json!([{"jsonPath": ".spec.size"}, {"jsonPath": ".spec.size"}]);
        c["spec"]["versions"]
            .as_array_mut()
            .expect("versions")
            .push(two);
    });
    assert_eq!(
        create(&crd),
        [
            "spec.versions[0].additionalPrinterColumns[0].JSONPath: Invalid value: \"spec.color\": must be a simple json path starting with .",
            "spec.versions[1].selectableFields[1].jsonPath: Duplicate value: \".spec.size\"",
        ]
    );
    // Same schema in both versions but selectable fields in one only: as upstream, refused.
    let crd = with(|c| {
        c["spec"]["versions"][0]["subresources"] = Value::Null;
        let mut two = c["spec"]["versions"][0].clone();
        two["name"] = json!("v2");
        two["storage"] = json!(false);
        two["selectableFields"] = json!([{"jsonPath": ".spec.color"}]);
        c["spec"]["versions"]
            .as_array_mut()
            .expect("versions")
            .push(two);
    });
    assert_eq!(
        create(&crd),
        [
            "spec.versions[1].selectableFields: Invalid value: \"\": may only be set when `version.schema.openAPIV3Schema` is not included"
        ]
    );
}

#[test]
fn status_subresource_limits_the_root_schema() {
    let crd = with(|c| {
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["type"] = json!("array");
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["items"] = json!({"type": "string"});
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] = Value::Null;
    });
    let got = create(&crd);
    assert_eq!(
        got.first().map(String::as_str),
        Some(
            "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"
        ),
        "{got:?}"
    );
}

#[test]
fn update_rules() {
    let old = with(|c| {
        c["status"] = json!({"storedVersions": ["v1"],
            "conditions": [{"type": "Established", "status": "True"}],
            "acceptedNames": c["spec"]["names"].clone()});
    });
    let cases: Vec<(Value, Vec<String>)> = vec![
        (old.clone(), vec![]),
        (
            with(|c| {
                c["status"] = old["status"].clone();
                c["spec"]["group"] = json!("other.example.com");
                c["spec"]["names"]["plural"] = json!("gadgets");
                c["spec"]["names"]["kind"] = json!("Gadget");
                c["spec"]["names"]["listKind"] = json!("GadgetList");
                c["spec"]["scope"] = json!("Cluster");
            }),
            vec![
                "spec.scope: Invalid value: \"Cluster\": field is immutable".into(),
                "spec.names.kind: Invalid value: \"Gadget\": field is immutable".into(),
                "spec.group: Invalid value: \"other.example.com\": field is immutable".into(),
                "spec.names.plural: Invalid value: \"gadgets\": field is immutable".into(),
            ],
        ),
        (
            with(|c| {
                c["status"] = old["status"].clone();
                c["status"]["storedVersions"] = json!(["v0", "v1"]);
            }),
            vec!["status.storedVersions[0]: Invalid value: \"v0\": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions".into()],
        ),
    ];
    for (new, want) in cases {
        assert_eq!(update(&new, &old), want, "{}", new["spec"]);
    }
    // Not yet established: scope and kind may still change.
    let mut fresh = old.clone();
    fresh["status"]["conditions"] = json!([]);
    let changed = with(|c| {
        c["status"] = fresh["status"].clone();
        c["spec"]["scope"] = json!("Cluster");
    });
    assert_eq!(update(&changed, &fresh), Vec::<String>::new());
}

#[test]
fn too_many_selectable_fields_ratchet_on_update() {
    let many = |n: usize| {
        with(|c| {
            let props = &mut c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
                ["properties"];
            let mut fields = Vec::new();
            for i in 0..n {
                props[format!("f{i}")] = json!({"type": "string"});
                fields.push(json!({"jsonPath": format!(".spec.f{i}")}));
            }
            c["spec"]["versions"][0]["selectableFields"] = json!(fields);
            c["status"] = json!({"storedVersions": ["v1"]});
        })
    };
    assert_eq!(
        create(&many(9)),
        ["spec.selectableFields: Too many: 9: must have at most 8 items"]
    );
    assert_eq!(update(&many(9), &many(9)), Vec::<String>::new());
    assert_eq!(
        update(&many(10), &many(9)),
        ["spec.selectableFields: Too many: 10: must have at most 8 items"]
    );
}

#[test]
fn status_writes_check_only_accepted_names() {
    let mut crd = widget();
    crd["status"] =
        json!({"storedVersions": [], "acceptedNames": {"plural": "Widgets", "kind": "Widget"}});
    let got: Vec<String> = validate_status_update(&crd, &widget())
        .iter()
        .map(Cause::summary)
        .collect();
    assert_eq!(
        got,
        [format!(
            "status.acceptedNames.plural: Invalid value: \"Widgets\": {DNS1035}"
        )]
    );
}

#[test]
fn deprecation_warnings_must_be_printable() {
    for (text, index) in [
        ("tab\there", Some(3)),
        ("zero\u{200b}width", Some(4)),
        ("plain é ünicode", None),
    ] {
        let v = json!({"deprecated": true, "deprecationWarning": text});
        let got = validate_deprecation_warning(&v, "v");
        match index {
            None => assert!(got.is_empty(), "{text}: {got:?}"),
            Some(i) => assert!(
                got[0]
                    .message
                    .ends_with(&format!("non-printable character found at index {i}")),
                "{text}: {got:?}"
            ),
        }
    }
}

#[test]
fn unrecognized_review_versions_stored_by_an_older_server_may_stay() {
    let webhook = |versions: Value| {
        with(|c| {
            c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": "https://convert.example.com/convert"},
                "conversionReviewVersions": versions}});
        })
    };
    let message = "spec.conversion.conversionReviewVersions: Invalid value: []string{\"v2\"}: must include at least one of v1, v1beta1";
    assert_eq!(create(&webhook(json!(["v2"]))), [message]);
    // An update of a CRD stored with only unknown versions need not fix them.
    let stored = webhook(json!(["v2"]));
    let mut next = stored.clone();
    next["spec"]["versions"][0]["served"] = json!(true);
    next["metadata"]["labels"] = json!({"touched": "yes"});
    assert_eq!(update(&next, &stored), Vec::<String>::new());
    // One that had a recognized version may not drop it.
    assert_eq!(
        update(&webhook(json!(["v2"])), &webhook(json!(["v1"]))),
        [message]
    );
}
