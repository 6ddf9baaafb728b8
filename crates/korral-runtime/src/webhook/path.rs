//! The paths kubebuilder gives typed webhooks: `/mutate-<group with dashes>-<version>-<kind>`
//! and `/validate-...` (controller-runtime's `generateMutatePath` / `generateValidatePath`;
//! the core group gives `/mutate--v1-pod`).

use kube::Resource;

/// `prefix-<group with dashes>-<version>-<kind lowercased>`.
fn path(prefix: &str, group: &str, version: &str, kind: &str) -> String {
    format!(
        "/{prefix}-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

/// The defaulting webhook path of `K`, e.g. `/mutate-cache-example-com-v1alpha1-memcached`.
pub fn mutate_path<K: Resource<DynamicType = ()>>() -> String {
    path("mutate", &K::group(&()), &K::version(&()), &K::kind(&()))
}

/// The validating webhook path of `K`, e.g. `/validate-cache-example-com-v1alpha1-memcached`.
pub fn validate_path<K: Resource<DynamicType = ()>>() -> String {
    path("validate", &K::group(&()), &K::version(&()), &K::kind(&()))
}

/// The conversion webhook path (one for every kind, as controller-runtime's).
pub const CONVERT_PATH: &str = "/convert";

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn kubebuilder_paths() {
        assert_eq!(mutate_path::<Pod>(), "/mutate--v1-pod");
        assert_eq!(
            validate_path::<Deployment>(),
            "/validate-apps-v1-deployment"
        );
        assert_eq!(
            path("mutate", "cache.example.com", "v1alpha1", "Memcached"),
            "/mutate-cache-example-com-v1alpha1-memcached"
        );
    }
}
