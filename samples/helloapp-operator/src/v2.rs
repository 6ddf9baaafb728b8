//! `apps.example.com/v2` HelloApp: `spec.replicas` (v1's `size`) and the image split into
//! `spec.repository` and `spec.tag`. v2 is the hub (the storage version); v1 stays served and
//! converts through it (see [`crate::conversion`]).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::HelloAppStatus;

/// The desired state of a HelloApp, v2.
// Printer columns of the same type look like a duplicated attribute to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "apps.example.com",
    version = "v2",
    kind = "HelloApp",
    namespaced,
    status = "HelloAppStatus",
    derive = "PartialEq",
    doc = "A hello application: a Deployment running `repository:tag` with `replicas` replicas.",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas"
    ),
    printcolumn(
        name = "Repository",
        type_ = "string",
        json_path = ".spec.repository",
        description = "The image repository"
    ),
    printcolumn(
        name = "Tag",
        type_ = "string",
        json_path = ".spec.tag",
        description = "The image tag"
    ),
    printcolumn(
        name = "Replicas",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "Desired replicas"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct HelloAppSpec {
    /// How many replicas to run.
    #[schemars(range(min = 0))]
    pub replicas: i32,
    /// The image repository (`nginxdemos/hello`; a digest reference stays whole here).
    #[schemars(length(min = 1))]
    pub repository: String,
    /// The image tag (`plain-text`; empty: none, the runtime's `latest`).
    #[serde(default)]
    pub tag: String,
}

impl HelloAppSpec {
    /// The image reference: `repository:tag`, or the repository alone without a tag.
    pub fn image(&self) -> String {
        if self.tag.is_empty() {
            self.repository.clone()
        } else {
            format!("{}:{}", self.repository, self.tag)
        }
    }
}

/// Splits an image reference into repository and tag: the tag follows the last `:` after the
/// last `/` (so a registry port is not a tag); a digest reference (`@sha256:...`) or one
/// without a tag is all repository.
pub fn split_image(image: &str) -> (String, String) {
    if image.contains('@') {
        return (image.to_owned(), String::new());
    }
    let name_start = image.rfind('/').map_or(0, |i| i + 1);
    match image[name_start..].rfind(':') {
        Some(i) => {
            let at = name_start + i;
            (image[..at].to_owned(), image[at + 1..].to_owned())
        }
        None => (image.to_owned(), String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_split_at_the_tag_only() {
        let cases = [
            (
                "nginxdemos/hello:plain-text",
                ("nginxdemos/hello", "plain-text"),
            ),
            ("nginx", ("nginx", "")),
            (
                "localhost:5000/team/app:1.2",
                ("localhost:5000/team/app", "1.2"),
            ),
            ("localhost:5000/app", ("localhost:5000/app", "")),
            ("nginx@sha256:abcd", ("nginx@sha256:abcd", "")),
        ];
        for (image, (repository, tag)) in cases {
            assert_eq!(
                split_image(image),
                (repository.to_owned(), tag.to_owned()),
                "{image}"
            );
            let spec = HelloAppSpec {
                replicas: 1,
                repository: repository.to_owned(),
                tag: tag.to_owned(),
            };
            assert_eq!(spec.image(), image);
        }
    }
}
