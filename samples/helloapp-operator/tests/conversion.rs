//! HelloApp conversion through the `/convert` webhook handler, as the API server sends a
//! ConversionReview: v1 objects to v2 (the hub) and back, unchanged after the round trip,
//! metadata kept.

use anyhow::{Context, Result, ensure};
use serde_json::{Value, json};

fn review(objects: Vec<Value>, desired: &str) -> Result<Vec<Value>> {
    let body = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "ConversionReview",
        "request": {
            "uid": "0d2d3b3c-1f6e-4a5e-9f3a-1d1f3c2b4a5e",
            "desiredAPIVersion": desired,
            "objects": objects,
        },
    });
    let webhook = helloapp_operator::conversion::webhook()?;
    let answer = webhook
        .review(body.to_string().as_bytes())
        .map_err(anyhow::Error::msg)?;
    let response = &answer["response"];
    ensure!(
        response["uid"] == "0d2d3b3c-1f6e-4a5e-9f3a-1d1f3c2b4a5e",
        "{answer}"
    );
    ensure!(response["result"]["status"] == "Success", "{answer}");
    Ok(response["convertedObjects"]
        .as_array()
        .context("convertedObjects")?
        .clone())
}

fn v1(name: &str, image: &str, size: i32) -> Value {
    json!({
        "apiVersion": "apps.example.com/v1",
        "kind": "HelloApp",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": format!("uid-{name}"),
            "resourceVersion": "42",
            "labels": {"team": "a"},
        },
        "spec": {"image": image, "size": size},
        "status": {"replicas": size, "readyReplicas": 1},
    })
}

#[test]
fn v1_objects_convert_to_the_hub_and_back_unchanged() -> Result<()> {
    let originals = vec![
        v1("a", "nginxdemos/hello:plain-text", 2),
        v1("b", "localhost:5000/hello", 0),
    ];
    let hub = review(originals.clone(), "apps.example.com/v2")?;
    ensure!(
        hub[0]
            == json!({
                "apiVersion": "apps.example.com/v2",
                "kind": "HelloApp",
                "metadata": originals[0]["metadata"],
                "spec": {"replicas": 2, "repository": "nginxdemos/hello", "tag": "plain-text"},
                "status": {"replicas": 2, "readyReplicas": 1},
            }),
        "{}",
        hub[0]
    );
    ensure!(
        hub[1]["spec"] == json!({"replicas": 0, "repository": "localhost:5000/hello", "tag": ""}),
        "{}",
        hub[1]
    );
    let back = review(hub, "apps.example.com/v1")?;
    ensure!(back == originals, "{back:?}");
    Ok(())
}

#[test]
fn v2_objects_convert_to_v1_and_back_unchanged() -> Result<()> {
    let original = json!({
        "apiVersion": "apps.example.com/v2",
        "kind": "HelloApp",
        "metadata": {"name": "c", "namespace": "default", "uid": "uid-c"},
        "spec": {"replicas": 3, "repository": "ghcr.io/acme/hello", "tag": "2.0"},
    });
    let spoke = review(vec![original.clone()], "apps.example.com/v1")?;
    ensure!(
        spoke[0]["spec"] == json!({"image": "ghcr.io/acme/hello:2.0", "size": 3}),
        "{}",
        spoke[0]
    );
    let back = review(spoke, "apps.example.com/v2")?;
    ensure!(back == [original], "{back:?}");
    Ok(())
}
