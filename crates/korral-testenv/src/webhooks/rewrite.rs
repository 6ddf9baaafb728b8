//! Pointing webhook client configurations at the local webhook server: a `service` reference
//! becomes `url: https://<host>:<port><path>` (the service's path kept) with the local CA as
//! `caBundle`, as envtest's `ModifyWebhookDefinitions` and `ModifyConversionWebhooks` do.

use serde_json::{Map, Value, json};

/// The path a conversion webhook is served on when the CRD names none (controller-runtime's
/// and kubebuilder's `/convert`).
pub const DEFAULT_CONVERSION_PATH: &str = "/convert";

/// The review versions a rewritten conversion webhook accepts when the CRD names none.
const DEFAULT_CONVERSION_REVIEW_VERSIONS: [&str; 1] = ["v1"];

/// `https://<host>:<port>`, with an IPv6 literal in brackets.
pub fn base_url(host: &str, port: u16) -> String {
    if host.parse::<std::net::Ipv6Addr>().is_ok() {
        format!("https://[{host}]:{port}")
    } else {
        format!("https://{host}:{port}")
    }
}

/// `base` followed by `path` (a missing leading `/` added; empty means `/`).
fn join(base: &str, path: &str) -> String {
    if path.starts_with('/') {
        format!("{base}{path}")
    } else {
        format!("{base}/{path}")
    }
}

/// The client config pointing at `base` + the path of `current`'s service (or `default_path`
/// when it names none), trusting `ca_bundle` (base64 of the CA PEM, as the API carries it).
fn local_client_config(current: &Value, base: &str, default_path: &str, ca_bundle: &str) -> Value {
    let path = current["service"]["path"].as_str().unwrap_or(default_path);
    json!({"url": join(base, path), "caBundle": ca_bundle})
}

/// Points every webhook of a Mutating- or ValidatingWebhookConfiguration that calls a
/// `service` at the local server (`base` + the service's path, `/` when it has none) with
/// `ca_bundle`. Webhooks configured by `url` are left as they are: they already name where
/// they are served. Answers how many webhooks were rewritten.
pub fn point_webhooks_at(configuration: &mut Value, base: &str, ca_bundle: &str) -> usize {
    let Some(webhooks) = configuration
        .get_mut("webhooks")
        .and_then(Value::as_array_mut)
    else {
        return 0;
    };
    let mut rewritten = 0;
    for webhook in webhooks {
        let Some(webhook) = webhook.as_object_mut() else {
            continue;
        };
        let current = webhook.get("clientConfig").cloned().unwrap_or(Value::Null);
        if current.get("service").is_none_or(Value::is_null) {
            continue;
        }
        webhook.insert(
            "clientConfig".to_owned(),
            local_client_config(&current, base, "/", ca_bundle),
        );
        rewritten += 1;
    }
    rewritten
}

/// Makes a CustomResourceDefinition convert through the local server: strategy `Webhook`,
/// client config `base` + the path of its current service reference ([`DEFAULT_CONVERSION_PATH`]
/// when it has none) with `ca_bundle`, its `conversionReviewVersions` kept (`["v1"]` when
/// unset).
pub fn point_conversion_at(crd: &mut Value, base: &str, ca_bundle: &str) {
    let Some(spec) = crd.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let conversion = spec
        .entry("conversion")
        .or_insert_with(|| Value::Object(Map::new()));
    if !conversion.is_object() {
        *conversion = Value::Object(Map::new());
    }
    let current_webhook = conversion["webhook"].clone();
    let versions = match &current_webhook["conversionReviewVersions"] {
        Value::Array(versions) if !versions.is_empty() => Value::Array(versions.clone()),
        _ => json!(DEFAULT_CONVERSION_REVIEW_VERSIONS),
    };
    let client_config = local_client_config(
        &current_webhook["clientConfig"],
        base,
        DEFAULT_CONVERSION_PATH,
        ca_bundle,
    );
    conversion["strategy"] = json!("Webhook");
    conversion["webhook"] = json!({
        "clientConfig": client_config,
        "conversionReviewVersions": versions,
    });
}

/// Whether a CRD's conversion webhook already calls `url` trusting `ca_bundle`.
pub fn converts_through(crd: &Value, base: &str, ca_bundle: &str) -> bool {
    let conversion = &crd["spec"]["conversion"];
    let config = &conversion["webhook"]["clientConfig"];
    conversion["strategy"] == "Webhook"
        && config["url"].as_str().is_some_and(|u| u.starts_with(base))
        && config["caBundle"] == ca_bundle
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "https://127.0.0.1:4321";

    #[test]
    fn service_references_become_local_urls_keeping_the_path() {
        let mut configuration = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "v"},
            "webhooks": [
                {
                    "name": "vmemcached-v1.kb.io",
                    "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": "/validate-cache-example-com-v1-memcached"}},
                    "failurePolicy": "Fail",
                },
                {
                    "name": "nopath.example.com",
                    "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 8443}, "caBundle": "T0xE"},
                },
                {
                    "name": "relative.example.com",
                    "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "check"}},
                },
                {
                    "name": "elsewhere.example.com",
                    "clientConfig": {"url": "https://hooks.example.com/x", "caBundle": "T0xE"},
                },
            ],
        });
        assert_eq!(point_webhooks_at(&mut configuration, BASE, "Q0E="), 3);
        let configs: Vec<&Value> = configuration["webhooks"]
            .as_array()
            .expect("webhooks")
            .iter()
            .map(|w| &w["clientConfig"])
            .collect();
        assert_eq!(
            configs,
            [
                &json!({"url": "https://127.0.0.1:4321/validate-cache-example-com-v1-memcached", "caBundle": "Q0E="}),
                &json!({"url": "https://127.0.0.1:4321/", "caBundle": "Q0E="}),
                &json!({"url": "https://127.0.0.1:4321/check", "caBundle": "Q0E="}),
                &json!({"url": "https://hooks.example.com/x", "caBundle": "T0xE"}),
            ]
        );
        // Everything else of a webhook is kept.
        assert_eq!(configuration["webhooks"][0]["failurePolicy"], "Fail");
        assert_eq!(configuration["webhooks"][0]["name"], "vmemcached-v1.kb.io");
    }

    #[test]
    fn a_configuration_without_webhooks_is_left_alone() {
        let mut configuration =
            json!({"kind": "MutatingWebhookConfiguration", "metadata": {"name": "m"}});
        let before = configuration.clone();
        assert_eq!(point_webhooks_at(&mut configuration, BASE, "Q0E="), 0);
        assert_eq!(configuration, before);
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        assert_eq!(base_url("::1", 9443), "https://[::1]:9443");
        assert_eq!(base_url("127.0.0.1", 9443), "https://127.0.0.1:9443");
        assert_eq!(base_url("localhost", 9443), "https://localhost:9443");
    }

    #[test]
    fn a_conversion_service_becomes_a_local_url_keeping_path_and_review_versions() {
        let mut crd = json!({
            "metadata": {"name": "helloapps.apps.example.com"},
            "spec": {
                "group": "apps.example.com",
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {"service": {"name": "webhook-service", "namespace": "system", "path": "/convert-here"}},
                        "conversionReviewVersions": ["v1", "v1beta1"],
                    },
                },
            },
        });
        point_conversion_at(&mut crd, BASE, "Q0E=");
        assert_eq!(
            crd["spec"]["conversion"],
            json!({
                "strategy": "Webhook",
                "webhook": {
                    "clientConfig": {"url": "https://127.0.0.1:4321/convert-here", "caBundle": "Q0E="},
                    "conversionReviewVersions": ["v1", "v1beta1"],
                },
            })
        );
        assert!(converts_through(&crd, BASE, "Q0E="));
        assert!(!converts_through(&crd, BASE, "T0xE"));
        assert!(!converts_through(&crd, "https://127.0.0.1:1", "Q0E="));
    }

    #[test]
    fn a_crd_without_conversion_gets_the_default_path_and_v1_reviews() {
        for conversion in [Value::Null, json!({"strategy": "None"})] {
            let mut crd = json!({"spec": {"group": "g"}});
            if !conversion.is_null() {
                crd["spec"]["conversion"] = conversion;
            }
            assert!(!converts_through(&crd, BASE, "Q0E="));
            point_conversion_at(&mut crd, BASE, "Q0E=");
            assert_eq!(
                crd["spec"]["conversion"],
                json!({
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {"url": "https://127.0.0.1:4321/convert", "caBundle": "Q0E="},
                        "conversionReviewVersions": ["v1"],
                    },
                })
            );
        }
    }
}
