//! Large lists are streamed (written item by item in chunks, not built whole first) and say
//! exactly what a paginated list of the same snapshot says: the same items, in the same order,
//! in every view (objects, `Table`, metadata only) and for kubectl's protobuf-first `Accept`.

mod common;

use common::TestEnv;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use serde_json::Value;

/// ConfigMaps created; enough for a body of several MiB, many chunks.
const COUNT: usize = 5000;

/// The Accept header of kubectl (`protobuf` first, JSON as fallback).
const PROTOBUF_FIRST: &str = "application/vnd.kubernetes.protobuf, application/json";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io, application/json";
const METADATA: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";

/// A raw GET: the response's headers and its JSON body.
async fn get(
    client: &kube::Client,
    path: &str,
    accept: &str,
) -> anyhow::Result<(http::HeaderMap, Value)> {
    let request = http::Request::get(path)
        .header("accept", accept)
        .body(Vec::new())?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    anyhow::ensure!(response.status() == 200, "{path}: {}", response.status());
    let headers = response.headers().clone();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    Ok((headers, serde_json::from_slice(&bytes)?))
}

/// Every item of `path` read in pages of `limit`, following `continue`, with the revision of
/// the first page (all pages come from its snapshot).
async fn paginated(
    client: &kube::Client,
    path: &str,
    accept: &str,
    array: &str,
    limit: usize,
) -> anyhow::Result<(Vec<Value>, String)> {
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut items = Vec::new();
    let mut token = String::new();
    let mut revision = None;
    loop {
        let page_path = if token.is_empty() {
            format!("{path}{sep}limit={limit}")
        } else {
            format!("{path}{sep}limit={limit}&continue={token}")
        };
        let (_, page) = get(client, &page_path, accept).await?;
        let page_items = page[array].as_array().cloned().unwrap_or_default();
        anyhow::ensure!(page_items.len() <= limit, "page over the limit");
        items.extend(page_items);
        let rv = page["metadata"]["resourceVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        anyhow::ensure!(
            revision.get_or_insert_with(|| rv.clone()) == &rv,
            "pages of different revisions"
        );
        match page["metadata"]["continue"].as_str() {
            Some(next) if !next.is_empty() => token = next.to_string(),
            _ => break,
        }
    }
    Ok((items, revision.unwrap_or_default()))
}

/// The name of a listed object, a table row's object or a metadata-only item.
fn name(item: &Value) -> &str {
    item["metadata"]["name"]
        .as_str()
        .or_else(|| item["object"]["metadata"]["name"].as_str())
        .unwrap_or_default()
}

#[tokio::test]
async fn a_streamed_list_of_5000_configmaps_equals_its_paginated_list_in_every_view()
-> anyhow::Result<()> {
    let env = TestEnv::start().await?;
    let client = env.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    futures::stream::iter(0..COUNT)
        .map(|i| {
            let api = api.clone();
            async move {
                let cm = ConfigMap {
                    metadata: ObjectMeta {
                        name: Some(format!("cm-{i:05}")),
                        labels: Some([("parity".to_string(), (i % 2).to_string())].into()),
                        ..ObjectMeta::default()
                    },
                    data: Some(
                        [("payload".to_string(), format!("{i}-{}", "x".repeat(900)))].into(),
                    ),
                    ..ConfigMap::default()
                };
                api.create(&PostParams::default(), &cm).await
            }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;

    let path = "/api/v1/namespaces/default/configmaps";
    // Nothing is written from here on: the whole list and the pages see one revision.
    let (headers, whole) = get(&client, path, "application/json").await?;
    assert_eq!(whole["kind"], "ConfigMapList");
    assert_eq!(whole["apiVersion"], "v1");
    let items = whole["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), COUNT);
    // Several MiB are streamed: no Content-Length (HTTP/1.1 chunked or HTTP/2 data frames).
    assert!(
        headers.get(http::header::CONTENT_LENGTH).is_none(),
        "{headers:?}"
    );
    assert_eq!(headers[http::header::CONTENT_TYPE], "application/json");
    let revision = whole["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        whole["metadata"].get("continue").is_none(),
        "{}",
        whole["metadata"]
    );

    let (paged, paged_revision) =
        paginated(&client, path, "application/json", "items", 700).await?;
    assert_eq!(paged_revision, revision);
    assert_eq!(paged.len(), COUNT);
    assert!(paged == items, "the pages differ from the whole list");
    let names: Vec<&str> = items.iter().map(name).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted, "items in key order");

    // kubectl's protobuf-first Accept: the same list as a protobuf ConfigMapList, whose items
    // carry no apiVersion/kind (the list's envelope names them).
    let request = http::Request::get(path)
        .header("accept", PROTOBUF_FIRST)
        .body(Vec::new())?;
    let response = client.send(request.map(kube::client::Body::from)).await?;
    assert_eq!(
        response.headers()[http::header::CONTENT_TYPE],
        "application/vnd.kubernetes.protobuf"
    );
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await?
        .to_bytes();
    let proto =
        korral_apiserver::fuzzing::decode_protobuf_object(&bytes).map_err(anyhow::Error::msg)?;
    assert_eq!(proto["metadata"]["resourceVersion"], revision.as_str());
    // Each item as its own protobuf encoding decodes (Go's normal form: empty `omitempty`
    // strings such as a managedFields entry's manager are dropped).
    let mut bare = Vec::new();
    for item in whole["items"].as_array().into_iter().flatten() {
        let bytes =
            korral_apiserver::fuzzing::encode_protobuf_object(item).map_err(anyhow::Error::msg)?;
        let mut item = korral_apiserver::fuzzing::decode_protobuf_object(&bytes)
            .map_err(anyhow::Error::msg)?;
        if let Some(item) = item.as_object_mut() {
            item.remove("apiVersion");
            item.remove("kind");
        }
        bare.push(item);
    }
    assert!(
        proto["items"] == Value::Array(bare),
        "protobuf-first list differs"
    );

    // A Table: one row per object, the same names in the same order as its own pages.
    let (_, table) = get(&client, path, TABLE).await?;
    assert_eq!(table["kind"], "Table");
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .map(|c| c.iter().filter_map(|d| d["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(columns, ["Name", "Data", "Age"]);
    let rows = table["rows"].as_array().cloned().unwrap_or_default();
    assert_eq!(rows.len(), COUNT);
    assert_eq!(rows.iter().map(name).collect::<Vec<_>>(), names);
    assert!(rows.iter().all(|r| r["cells"][1] == 1), "Data column");
    let (paged_rows, _) = paginated(&client, path, TABLE, "rows", 900).await?;
    // The Age cell (index 2) is relative to the time of each answer: a second may pass between
    // the whole list and its pages, so it is left out of the comparison.
    let without_age = |rows: &[Value]| -> Vec<Value> {
        rows.iter()
            .map(|r| {
                let mut r = r.clone();
                if let Some(cells) = r["cells"].as_array_mut() {
                    cells.remove(2);
                }
                r
            })
            .collect()
    };
    assert!(
        without_age(&paged_rows) == without_age(&rows),
        "the table's pages differ from the whole table"
    );

    // Metadata only: the same names, no data.
    let (_, partial) = get(&client, path, METADATA).await?;
    assert_eq!(partial["kind"], "PartialObjectMetadataList");
    let partial_items = partial["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(partial_items.iter().map(name).collect::<Vec<_>>(), names);
    assert!(partial_items.iter().all(|i| i.get("data").is_none()));
    let (paged_partial, _) = paginated(&client, path, METADATA, "items", 1200).await?;
    assert!(paged_partial == partial_items, "metadata pages differ");

    // A label selector: half the objects, whole and paginated alike.
    let selected = format!("{path}?labelSelector=parity%3D1");
    let (_, odd) = get(&client, &selected, "application/json").await?;
    let odd_items = odd["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(odd_items.len(), COUNT / 2);
    assert!(
        odd_items
            .iter()
            .all(|i| i["metadata"]["labels"]["parity"] == "1")
    );
    let (paged_odd, _) = paginated(&client, &selected, "application/json", "items", 333).await?;
    assert!(paged_odd == odd_items, "selected pages differ");

    // A small list still carries its length.
    let (headers, one) = get(&client, &format!("{path}?limit=1"), "application/json").await?;
    assert_eq!(one["items"].as_array().map(Vec::len), Some(1));
    assert!(
        headers.get(http::header::CONTENT_LENGTH).is_some(),
        "{headers:?}"
    );
    Ok(())
}
