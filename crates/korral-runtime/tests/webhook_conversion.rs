//! Conversion by hub and spokes, fed the ConversionReview bodies a real kube-apiserver v1.36
//! posted (`tests/fixtures/admission/received-{12,17,19}-convert*`): Widget v1 (`spec.size`, the
//! stored version and the hub) and v2 (`spec.replicas`).

mod webhook_support;

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use korral_runtime::metrics::Registry;
use korral_runtime::webhook::WebhookServer;
use korral_runtime::webhook::conversion::{ConversionError, ConversionWebhook, Hub, HubAndSpokes};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use webhook_support::{connector, fixture, post, received_body, self_signed, write_cert};

/// The status both versions share.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WidgetStatus {
    /// Whether the widget is ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
}

mod v1 {
    use super::*;

    /// Widget v1.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "ref.example.com",
        version = "v1",
        kind = "Widget",
        namespaced,
        status = "WidgetStatus"
    )]
    pub struct WidgetSpec {
        /// How many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub size: Option<i64>,
    }
}

mod v2 {
    use super::*;

    /// Widget v2.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(
        group = "ref.example.com",
        version = "v2",
        kind = "Widget",
        namespaced,
        status = "WidgetStatus"
    )]
    pub struct WidgetSpec {
        /// How many.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub replicas: Option<i64>,
    }
}

mod v3 {
    use super::*;

    /// Widget v3: a byte-sized count, so converting a large v1 size fails.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "ref.example.com", version = "v3", kind = "Widget", namespaced)]
    pub struct WidgetSpec {
        /// How many, at most 255.
        pub count: u8,
    }
}

impl TryFrom<v1::Widget> for v3::Widget {
    type Error = String;

    fn try_from(w: v1::Widget) -> Result<Self, String> {
        let size = w.spec.size.unwrap_or_default();
        let count = u8::try_from(size).map_err(|_| format!("size {size} does not fit v3"))?;
        Ok(Self {
            metadata: w.metadata,
            spec: v3::WidgetSpec { count },
        })
    }
}

impl From<v3::Widget> for v1::Widget {
    fn from(w: v3::Widget) -> Self {
        Self {
            metadata: w.metadata,
            spec: v1::WidgetSpec {
                size: Some(i64::from(w.spec.count)),
            },
            status: None,
        }
    }
}

mod other {
    use super::*;

    /// Another kind, to show a spoke must share the hub's kind.
    #[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
    #[kube(group = "ref.example.com", version = "v2", kind = "Gadget", namespaced)]
    pub struct GadgetSpec {
        /// Anything.
        pub x: Option<i64>,
    }
}

const CONVERTED: &str = "ref.example.com/converted-from";

impl Hub for v1::Widget {}

impl From<v1::Widget> for v2::Widget {
    fn from(w: v1::Widget) -> Self {
        let mut metadata = w.metadata;
        // A careless converter renames; the name must come back as it was.
        metadata.name = metadata.name.map(|n| format!("{n}-v2"));
        metadata.uid = None;
        // Annotations are the converter's to change.
        metadata
            .annotations
            .get_or_insert_with(BTreeMap::new)
            .insert(CONVERTED.to_owned(), "v1".to_owned());
        Self {
            metadata,
            spec: v2::WidgetSpec {
                replicas: w.spec.size,
            },
            status: w.status,
        }
    }
}

impl From<v2::Widget> for v1::Widget {
    fn from(w: v2::Widget) -> Self {
        let mut metadata = w.metadata;
        if let Some(annotations) = metadata.annotations.as_mut() {
            annotations.remove(CONVERTED);
            if annotations.is_empty() {
                metadata.annotations = None;
            }
        }
        Self {
            metadata,
            spec: v1::WidgetSpec {
                size: w.spec.replicas,
            },
            status: w.status,
        }
    }
}

impl From<other::Gadget> for v1::Widget {
    fn from(g: other::Gadget) -> Self {
        v1::Widget::new("", v1::WidgetSpec { size: g.spec.x })
    }
}

impl From<v1::Widget> for other::Gadget {
    fn from(w: v1::Widget) -> Self {
        other::Gadget::new("", other::GadgetSpec { x: w.spec.size })
    }
}

fn webhook() -> ConversionWebhook {
    ConversionWebhook::new()
        .kind(
            HubAndSpokes::<v1::Widget>::new()
                .spoke::<v2::Widget>()
                .spoke::<v3::Widget>(),
        )
        .expect("widget conversions")
}

/// Converts `objects` to `desired` through `webhook.review`; returns the response.
fn convert(webhook: &ConversionWebhook, objects: Vec<Value>, desired: &str) -> Value {
    let review = json!({
        "kind": "ConversionReview",
        "apiVersion": "apiextensions.k8s.io/v1",
        "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": objects},
    });
    webhook
        .review(review.to_string().as_bytes())
        .expect("review")["response"]
        .clone()
}

#[test]
fn captured_request_converts_v2_to_v1_keeping_metadata() {
    let webhook = webhook();
    let body = received_body("received-12-convert-convert-.json");
    let review = webhook.review(body.as_bytes()).expect("review");
    assert_eq!(review["kind"], "ConversionReview");
    assert_eq!(review["apiVersion"], "apiextensions.k8s.io/v1");
    let response = &review["response"];
    assert_eq!(response["uid"], "e50ff452-dedb-4a4f-b565-3912244c19da");
    assert_eq!(
        response["result"],
        json!({"metadata": {}, "status": "Success"})
    );
    let original =
        fixture("received-12-convert-convert-.json")["body"]["request"]["objects"][0].clone();
    let converted = &response["convertedObjects"][0];
    assert_eq!(converted["apiVersion"], "ref.example.com/v1");
    assert_eq!(converted["kind"], "Widget");
    assert_eq!(converted["spec"], json!({"size": 3}));
    assert_eq!(converted["metadata"], original["metadata"]);
}

#[test]
fn captured_request_converts_v1_to_v2_with_status() {
    let webhook = webhook();
    let body = received_body("received-17-convert-convert-.json");
    let response = webhook.review(body.as_bytes()).expect("review")["response"].clone();
    let converted = &response["convertedObjects"][0];
    assert_eq!(converted["apiVersion"], "ref.example.com/v2");
    assert_eq!(converted["spec"], json!({"replicas": 3}));
    assert_eq!(converted["status"], json!({"ready": true}));
    // Name, namespace, uid and resourceVersion are the request's; the annotation the converter
    // added stays.
    let metadata = &converted["metadata"];
    assert_eq!(metadata["name"], "w1");
    assert_eq!(metadata["namespace"], "ref-adm");
    assert_eq!(metadata["uid"], "cf20ba80-941f-49ff-b1a0-9d47090016ef");
    assert_eq!(metadata["resourceVersion"], "57256");
    assert_eq!(metadata["annotations"], json!({CONVERTED: "v1"}));
}

#[test]
fn v1_to_v2_to_v1_round_trip_preserves_everything() {
    let webhook = webhook();
    let original =
        fixture("received-19-convert-convert-.json")["body"]["request"]["objects"][0].clone();
    let mut labelled = original.clone();
    labelled["metadata"]["labels"] = json!({"app": "w"});
    let there = convert(
        &webhook,
        vec![original.clone(), labelled.clone()],
        "ref.example.com/v2",
    );
    let v2_objects = there["convertedObjects"]
        .as_array()
        .expect("objects")
        .clone();
    assert_eq!(v2_objects.len(), 2);
    assert_eq!(v2_objects[1]["metadata"]["labels"], json!({"app": "w"}));
    let back = convert(&webhook, v2_objects, "ref.example.com/v1");
    assert_eq!(back["result"]["status"], "Success");
    assert_eq!(back["convertedObjects"][0], original);
    assert_eq!(back["convertedObjects"][1], labelled);
}

#[test]
fn failures_answer_failed_with_a_message() {
    let webhook = webhook();
    let widget =
        fixture("received-17-convert-convert-.json")["body"]["request"]["objects"][0].clone();
    let mut gadget = widget.clone();
    gadget["kind"] = json!("Gadget");
    let response = convert(&webhook, vec![widget.clone(), gadget], "ref.example.com/v2");
    assert_eq!(response["uid"], "u-1");
    assert_eq!(
        response["result"],
        json!({
            "metadata": {},
            "status": "Failure",
            "message": "no conversion registered for ref.example.com/v1, Kind=Gadget"
        })
    );
    assert_eq!(response["convertedObjects"], json!([]));
    let unknown = convert(&webhook, vec![widget.clone()], "ref.example.com/v9");
    assert_eq!(
        unknown["result"]["message"],
        "converting Widget \"w1\" to ref.example.com/v9: unsupported desired apiVersion \
         \"ref.example.com/v9\""
    );
    let mut broken = widget;
    broken["spec"] = json!({"size": "three"});
    let failed = convert(&webhook, vec![broken], "ref.example.com/v2");
    assert_eq!(failed["result"]["status"], "Failure");
    let message = failed["result"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with("converting Widget \"w1\" to ref.example.com/v2: decoding the ref.example.com/v1 object:"),
        "{message}"
    );
    assert!(webhook.review(b"{").is_err());
    assert!(
        webhook
            .review(br#"{"kind":"ConversionReview","apiVersion":"apiextensions.k8s.io/v1"}"#)
            .is_err()
    );
}

#[test]
fn fallible_conversions_fail_with_their_message() {
    let webhook = webhook();
    assert_eq!(
        webhook.versions("ref.example.com", "Widget"),
        [
            "ref.example.com/v1",
            "ref.example.com/v2",
            "ref.example.com/v3"
        ]
    );
    let mut widget =
        fixture("received-17-convert-convert-.json")["body"]["request"]["objects"][0].clone();
    let fits = convert(&webhook, vec![widget.clone()], "ref.example.com/v3");
    assert_eq!(fits["convertedObjects"][0]["spec"], json!({"count": 3}));
    // v3 → v2 goes through the hub.
    let v3 = fits["convertedObjects"][0].clone();
    let v2 = convert(&webhook, vec![v3], "ref.example.com/v2");
    assert_eq!(v2["convertedObjects"][0]["spec"], json!({"replicas": 3}));
    widget["spec"]["size"] = json!(1000);
    let refused = convert(&webhook, vec![widget], "ref.example.com/v3");
    assert_eq!(
        refused["result"],
        json!({
            "metadata": {},
            "status": "Failure",
            "message": "converting Widget \"w1\" to ref.example.com/v3: size 1000 does not fit v3"
        })
    );
}

#[test]
fn spokes_of_another_kind_are_refused() {
    let refused =
        ConversionWebhook::new().kind(HubAndSpokes::<v1::Widget>::new().spoke::<other::Gadget>());
    assert!(matches!(
        refused,
        Err(ConversionError::SpokeOfAnotherKind { .. })
    ));
}

#[tokio::test]
async fn convert_is_served_over_tls() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let (cert, key) = self_signed(&["localhost"]);
    write_cert(dir.path(), &cert, &key);
    let registry = Registry::new();
    let mut server = WebhookServer::new()
        .host("127.0.0.1")
        .port(0)
        .cert_dir(dir.path())
        .cert_poll_interval(Duration::from_secs(1))
        .metrics_registry(registry.clone());
    server.conversion(webhook())?;
    assert!(server.conversion(webhook()).is_err(), "one /convert");
    let running = server.serve().await?;
    let client = connector(&cert);
    let reply = post(
        &client,
        running.local_addr(),
        "localhost",
        "/convert",
        "application/json",
        &received_body("received-12-convert-convert-.json"),
    )
    .await?;
    assert_eq!(reply.status, 200);
    let response = &reply.json()["response"];
    assert_eq!(response["convertedObjects"][0]["spec"], json!({"size": 3}));
    let bad = post(
        &client,
        running.local_addr(),
        "localhost",
        "/convert",
        "application/json",
        "nonsense",
    )
    .await?;
    assert_eq!(bad.status, 400);
    assert_eq!(
        registry.total(
            "controller_runtime_webhook_requests_total",
            &[("webhook", "/convert"), ("code", "400")]
        ),
        1.0
    );
    running.shutdown().await;
    Ok(())
}
