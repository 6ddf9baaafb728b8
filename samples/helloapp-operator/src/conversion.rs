//! HelloApp conversion: v2 ([`crate::v2::HelloApp`]) is the hub, v1 ([`crate::HelloApp`]) a
//! spoke: `size` ↔ `replicas`, `image` ↔ `repository` + `tag` (see [`crate::v2::split_image`]).
//! The status is the same in both.

use korral::webhook::conversion::{ConversionError, ConversionWebhook, Hub, HubAndSpokes};

use crate::v2;

impl Hub for v2::HelloApp {}

impl From<crate::HelloApp> for v2::HelloApp {
    fn from(app: crate::HelloApp) -> Self {
        let (repository, tag) = v2::split_image(&app.spec.image);
        Self {
            metadata: app.metadata,
            spec: v2::HelloAppSpec {
                replicas: app.spec.size,
                repository,
                tag,
            },
            status: app.status,
        }
    }
}

impl From<v2::HelloApp> for crate::HelloApp {
    fn from(app: v2::HelloApp) -> Self {
        Self {
            metadata: app.metadata,
            spec: crate::HelloAppSpec {
                image: app.spec.image(),
                size: app.spec.replicas,
            },
            status: app.status,
        }
    }
}

/// The `/convert` webhook of HelloApp (hub v2, spoke v1).
pub fn webhook() -> Result<ConversionWebhook, ConversionError> {
    ConversionWebhook::new().kind(HubAndSpokes::<v2::HelloApp>::new().spoke::<crate::HelloApp>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HelloAppSpec, HelloAppStatus};

    fn v1(image: &str, size: i32) -> crate::HelloApp {
        let mut app = crate::HelloApp::new(
            "app",
            HelloAppSpec {
                image: image.to_owned(),
                size,
            },
        );
        app.metadata.namespace = Some("default".to_owned());
        app.metadata.labels = Some([("team".to_owned(), "a".to_owned())].into());
        app.status = Some(HelloAppStatus {
            replicas: 2,
            ready_replicas: 1,
        });
        app
    }

    #[test]
    fn v1_round_trips_through_the_hub() {
        for image in [
            "nginxdemos/hello:plain-text",
            "nginx",
            "reg:5000/a/b:1",
            "x@sha256:ab",
        ] {
            let original = v1(image, 3);
            let hub: v2::HelloApp = original.clone().into();
            assert_eq!(hub.spec.replicas, 3);
            assert_eq!(hub.status, original.status);
            assert_eq!(hub.metadata, original.metadata);
            let back: crate::HelloApp = hub.into();
            assert_eq!(back, original, "{image}");
        }
        let hub: v2::HelloApp = v1("nginxdemos/hello:plain-text", 2).into();
        assert_eq!(hub.spec.repository, "nginxdemos/hello");
        assert_eq!(hub.spec.tag, "plain-text");
    }

    #[test]
    fn the_hub_round_trips_through_v1() {
        let mut hub = v2::HelloApp::new(
            "app",
            v2::HelloAppSpec {
                replicas: 4,
                repository: "ghcr.io/acme/hello".to_owned(),
                tag: "2.0".to_owned(),
            },
        );
        hub.status = Some(HelloAppStatus::default());
        let spoke: crate::HelloApp = hub.clone().into();
        assert_eq!(spoke.spec.image, "ghcr.io/acme/hello:2.0");
        assert_eq!(spoke.spec.size, 4);
        let back: v2::HelloApp = spoke.into();
        assert_eq!(back, hub);
    }

    #[test]
    fn the_v2_sample_is_the_v1_sample_converted() {
        let yaml = include_str!("../config/samples/apps_v2_helloapp.yaml");
        let v2: v2::HelloApp = serde_yaml_ng::from_str(yaml).expect("v2 sample");
        let converted: v2::HelloApp = crate::sample().into();
        assert_eq!(v2.spec, converted.spec);
        assert_eq!(v2.metadata.name, converted.metadata.name);
    }

    #[test]
    fn the_webhook_converts_both_versions() {
        let webhook = webhook().expect("webhook");
        assert_eq!(
            webhook.versions("apps.example.com", "HelloApp"),
            ["apps.example.com/v1", "apps.example.com/v2"]
        );
    }
}
