//! HTTP caching of the OpenAPI documents as upstream's handlers do it (kube-openapi's
//! `handler` and `handler3`): `ETag` (quoted SHA-512 of the JSON), `If-None-Match` answered
//! 304, `/openapi/v3/<gv>?hash=` immutable when current and redirected (301) when stale, the
//! index revalidated by its `ETag` (kube-openapi's handler3; kube-aggregator sends none), and
//! kubectl's `--cache-dir` reusing the documents.

mod common;

use common::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

/// The upper-case hex SHA-512 of `bytes`: upstream's ETag and `?hash=`.
fn sha512(bytes: &[u8]) -> String {
    ring::digest::digest(&ring::digest::SHA512, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}

/// A header's value (empty when absent).
fn header(headers: &http::HeaderMap, name: &str) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// The `serverRelativeURL` the index lists for `gv`.
async fn listed_url(env: &TestEnv, gv: &str) -> String {
    let (code, index) = call(env, "GET", "/openapi/v3", None).await;
    assert_eq!(code, 200, "{index}");
    index["paths"][gv]["serverRelativeURL"]
        .as_str()
        .unwrap_or_else(|| panic!("{gv} listed: {index}"))
        .to_string()
}

/// The hash of a `serverRelativeURL`.
fn hash_of(url: &str) -> String {
    url.split_once("?hash=")
        .map(|(_, h)| h.to_string())
        .unwrap_or_default()
}

#[tokio::test]
async fn v3_documents_carry_their_hash_as_etag_and_answer_304() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let url = listed_url(&env, "apis/apps/v1").await;
    let hash = hash_of(&url);
    assert_eq!(hash.len(), 128, "{url}");

    // Without a hash: the document, its ETag, no caching directives.
    let (code, headers, body) =
        exchange(&client, "GET", "/openapi/v3/apis/apps/v1", &[], Vec::new()).await;
    assert_eq!(code, 200);
    assert_eq!(sha512(&body), hash, "the hash is the served bytes'");
    assert_eq!(header(&headers, "etag"), format!("\"{hash}\""));
    assert_eq!(header(&headers, "content-type"), "application/json");
    assert_eq!(header(&headers, "vary"), "Accept");
    assert!(!header(&headers, "last-modified").is_empty());
    assert!(headers.get("cache-control").is_none());
    assert!(headers.get("expires").is_none());

    // The same ETag back: 304, no body, the ETag again, no Last-Modified.
    let etag = format!("\"{hash}\"");
    let (code, headers, body) = exchange(
        &client,
        "GET",
        "/openapi/v3/apis/apps/v1",
        &[("if-none-match", &etag)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 304);
    assert!(body.is_empty());
    assert_eq!(header(&headers, "etag"), etag);
    assert!(headers.get("content-type").is_none());
    assert!(headers.get("last-modified").is_none());
    let (code, _, _) = exchange(
        &client,
        "GET",
        "/openapi/v3/apis/apps/v1",
        &[("if-none-match", "\"0123\"")],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200, "another ETag gets the document");

    // The listed URL: the same bytes, cacheable for good.
    let (code, headers, body) = exchange(&client, "GET", &url, &[], Vec::new()).await;
    assert_eq!(code, 200);
    assert_eq!(sha512(&body), hash);
    assert_eq!(header(&headers, "cache-control"), "public, immutable");
    assert_eq!(header(&headers, "vary"), "Accept");
    let expires = header(&headers, "expires");
    let next_year = (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(365 * 24))
        .strftime("%Y")
        .to_string();
    assert!(
        expires.ends_with(" UTC") && expires.contains(&next_year),
        "a year ahead: {expires}"
    );
    let (code, headers, _) = exchange(
        &client,
        "GET",
        &url,
        &[("if-none-match", &etag)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 304);
    assert_eq!(header(&headers, "cache-control"), "public, immutable");

    // A stale hash: redirected to the current URL, without a body.
    let (code, headers, body) = exchange(
        &client,
        "GET",
        "/openapi/v3/apis/apps/v1?hash=0123ABCD",
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 301);
    assert_eq!(header(&headers, "location"), url);
    assert_eq!(header(&headers, "etag"), etag);
    assert!(headers.get("cache-control").is_none());
    assert!(body.is_empty());

    // The core group's document too.
    let core = listed_url(&env, "api/v1").await;
    assert!(core.starts_with("/openapi/v3/api/v1?hash="), "{core}");
    let (code, headers, body) = exchange(&client, "GET", &core, &[], Vec::new()).await;
    assert_eq!(code, 200);
    assert_eq!(format!("\"{}\"", sha512(&body)), header(&headers, "etag"));
    env.shutdown().await;
}

#[tokio::test]
async fn a_changed_group_version_redirects_its_old_url() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd");
    env.install_crd(crd).await.expect("install");
    let before = listed_url(&env, "apis/ref.example.org/v1").await;
    let apps = listed_url(&env, "apis/apps/v1").await;

    // A new field in the schema: a new document with a new hash; other groups keep theirs.
    let mut changed = widget_crd();
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["color"] = serde_json::json!({"type": "string"});
    let (code, current) = call(
        &env,
        "GET",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.ref.example.org",
        None,
    )
    .await;
    assert_eq!(code, 200, "{current}");
    changed["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    let (code, updated) = call(
        &env,
        "PUT",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.ref.example.org",
        Some(&changed),
    )
    .await;
    assert_eq!(code, 200, "{updated}");
    let after = until(
        "the index lists the changed document",
        || async { Value::String(listed_url(&env, "apis/ref.example.org/v1").await) },
        |url| url.as_str() != Some(before.as_str()),
    )
    .await;
    let after = after.as_str().unwrap_or_default().to_string();
    assert_eq!(listed_url(&env, "apis/apps/v1").await, apps);

    let (code, headers, _) = exchange(&client, "GET", &before, &[], Vec::new()).await;
    assert_eq!(code, 301, "the old URL is stale");
    assert_eq!(header(&headers, "location"), after);
    let (code, headers, body) = exchange(&client, "GET", &after, &[], Vec::new()).await;
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "cache-control"), "public, immutable");
    let doc: Value = serde_json::from_slice(&body).expect("JSON");
    assert!(
        doc["components"]["schemas"]["org.example.ref.v1.Widget"]["properties"]["spec"]
            ["properties"]["color"]
            .is_object(),
        "the new document"
    );
    // The old ETag no longer matches.
    let old_etag = format!("\"{}\"", hash_of(&before));
    let (code, _, _) = exchange(
        &client,
        "GET",
        "/openapi/v3/apis/ref.example.org/v1",
        &[("if-none-match", &old_etag)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    env.shutdown().await;
}

#[tokio::test]
async fn unknown_v3_paths_are_bare_404s() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    for path in [
        "/openapi/v3/apis/nope.example.com/v1",
        "/openapi/v3/apis/apps/v1/",
        "/openapi/v3/apis/apps",
        "/openapi/v3/",
    ] {
        let (code, _, body) = exchange(&client, "GET", path, &[], Vec::new()).await;
        assert_eq!(code, 404, "{path}");
        assert!(
            body.is_empty(),
            "{path}: {}",
            String::from_utf8_lossy(&body)
        );
    }
    // Only the OpenAPI 3 protobuf form accepted: not produced here.
    let (code, headers, body) = exchange(
        &client,
        "GET",
        "/openapi/v3/apis/apps/v1",
        &[(
            "accept",
            "application/com.github.proto-openapi.spec.v3.v1.0+protobuf",
        )],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 406);
    assert_eq!(header(&headers, "vary"), "Accept");
    assert!(body.is_empty());
    env.shutdown().await;
}

#[tokio::test]
async fn the_v3_index_is_revalidated_by_its_etag_not_its_date() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, headers, body) = exchange(&client, "GET", "/openapi/v3", &[], Vec::new()).await;
    assert_eq!(code, 200);
    // Upstream sets no type: Go sniffs the JSON as text (as the reference capture shows).
    assert_eq!(
        header(&headers, "content-type"),
        "text/plain; charset=utf-8"
    );
    let etag = header(&headers, "etag");
    assert_eq!(etag, format!("\"{}\"", sha512(&body)));
    let modified = header(&headers, "last-modified");
    assert!(modified.ends_with(" GMT"), "{modified}");
    let index: Value = serde_json::from_slice(&body).expect("JSON");
    assert!(index["paths"]["apis/apps/v1"]["serverRelativeURL"].is_string());
    // Unchanged: the ETag back is answered 304.
    let (code, _, body) = exchange(
        &client,
        "GET",
        "/openapi/v3",
        &[("if-none-match", &etag), ("if-modified-since", &modified)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 304);
    assert!(body.is_empty());
    // A CRD added in the same second as the cached copy: kubectl's cache revalidates with
    // both headers; the ETag decides, so the new index comes back, not a 304 by date (the
    // race that once made `kubectl explain` miss a just-established CRD).
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd");
    env.install_crd(crd).await.expect("install");
    let (code, headers, body) = exchange(
        &client,
        "GET",
        "/openapi/v3",
        &[("if-none-match", &etag), ("if-modified-since", &modified)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert_ne!(header(&headers, "etag"), etag);
    let index: Value = serde_json::from_slice(&body).expect("JSON");
    assert!(
        index["paths"]["apis/ref.example.org/v1"]["serverRelativeURL"].is_string(),
        "{index}"
    );
    // Its date is "now": a client holding a copy from a later time gets 304.
    let later = (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(3600))
        .strftime("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    let (code, headers, body) = exchange(
        &client,
        "GET",
        "/openapi/v3",
        &[("if-modified-since", &later)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 304);
    assert!(body.is_empty());
    assert!(headers.get("content-type").is_none());
    let earlier = "Mon, 01 Jan 2024 00:00:00 GMT";
    let (code, _, _) = exchange(
        &client,
        "GET",
        "/openapi/v3",
        &[("if-modified-since", earlier)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    env.shutdown().await;
}

#[tokio::test]
async fn v2_forms_share_the_json_etag_and_answer_304() {
    let env = TestEnv::start().await.expect("env");
    let client = env.client();
    let (code, headers, json) = exchange(&client, "GET", "/openapi/v2", &[], Vec::new()).await;
    assert_eq!(code, 200);
    let etag = header(&headers, "etag");
    assert_eq!(etag, format!("\"{}\"", sha512(&json)));
    assert_eq!(header(&headers, "vary"), "Accept");
    let modified = header(&headers, "last-modified");
    assert!(modified.ends_with(" GMT"), "{modified}");

    let protobuf = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
    let (code, headers, bytes) = exchange(
        &client,
        "GET",
        "/openapi/v2",
        &[("accept", protobuf)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(
        header(&headers, "content-type"),
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    assert_eq!(
        header(&headers, "etag"),
        etag,
        "the JSON's hash for both forms"
    );
    assert_eq!(header(&headers, "last-modified"), modified);
    assert_ne!(bytes, json);

    for accept in [None, Some(protobuf)] {
        let mut ask = vec![("if-none-match", etag.as_str())];
        ask.extend(accept.map(|a| ("accept", a)));
        let (code, headers, body) = exchange(&client, "GET", "/openapi/v2", &ask, Vec::new()).await;
        assert_eq!(code, 304, "{accept:?}");
        assert!(body.is_empty());
        assert_eq!(header(&headers, "etag"), etag);
    }
    // Without an ETag to compare, the date decides.
    let (code, _, _) = exchange(
        &client,
        "GET",
        "/openapi/v2",
        &[("if-modified-since", &modified)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 304);
    let (code, _, _) = exchange(
        &client,
        "GET",
        "/openapi/v2",
        &[("if-match", "\"0123\"")],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 412);

    // Nothing acceptable: a bare 406.
    let (code, headers, body) = exchange(
        &client,
        "GET",
        "/openapi/v2",
        &[("accept", "text/html")],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 406);
    assert_eq!(header(&headers, "vary"), "Accept");
    assert!(body.is_empty());

    // A new kind: a new document, a new ETag.
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd");
    env.install_crd(crd).await.expect("install");
    let (code, headers, _) = exchange(
        &client,
        "GET",
        "/openapi/v2",
        &[("if-none-match", &etag)],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 200);
    assert_ne!(header(&headers, "etag"), etag);
    env.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_reuses_its_cache() {
    let env = TestEnv::start().await.expect("env");
    let cache = tempfile::tempdir().expect("cache dir");
    let args = ["explain", "deployments.spec.replicas", "-v=8"];
    // The response headers kubectl logs for its request of the apps/v1 document (-v=8).
    let answer = |log: &str| -> String {
        let mut lines = log.lines().skip_while(|l| {
            !(l.contains("GET https://") && l.contains("/openapi/v3/apis/apps/v1?hash="))
        });
        lines.next();
        lines
            .take_while(|l| !l.contains("GET https://"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let (ok, first, err) = kubectl(&env, cache.path(), &args).await;
    assert!(ok, "{err}");
    assert!(first.contains("Number of desired pods"), "{first}");
    let headers = answer(&err);
    assert!(
        headers.contains("Cache-Control: public, immutable"),
        "{err}"
    );
    assert!(
        !headers.contains("X-From-Cache"),
        "the first run downloads it: {headers}"
    );
    let (ok, second, err) = kubectl(&env, cache.path(), &args).await;
    assert!(ok, "{err}");
    assert_eq!(second, first);
    assert!(
        answer(&err).contains("X-From-Cache: 1"),
        "the second run takes the immutable document from its cache: {err}"
    );
    env.shutdown().await;
}
