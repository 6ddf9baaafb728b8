//! Connect subresources: the ones upstream serves by reaching a node or a pod rather than the
//! store (`pods/log`, `pods/exec`, `pods/attach`, `pods/portforward` and the `proxy` of pods,
//! services and nodes). Korral has no kubelet and no pod network: a pod's log is what its
//! simulated containers wrote (nothing), read with upstream's checks of the options and the
//! container; the streaming and proxying ones answer as upstream does where upstream refuses
//! (400 for a pod without a node, 503 for a service without endpoints) and otherwise 400 naming
//! what the embedded control plane lacks (a 5xx would make clients retry in vain).

use serde_json::Value;

use crate::ApiError;
use crate::objects::Objects;
use crate::registry::ResourceInfo;

/// A connect subresource of a kind, as discovery lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Connecter {
    /// The subresource (`log`).
    pub name: &'static str,
    /// The kind discovery names for it (`PodExecOptions`; `Pod` for `log`).
    pub kind: &'static str,
    /// The verbs it serves, as discovery lists them.
    pub verbs: &'static [&'static str],
}

/// The connect subresource of `info` named `subresource`.
pub(crate) fn find(info: &ResourceInfo, subresource: Option<&str>) -> Option<Connecter> {
    let sub = subresource?;
    info.connecters.iter().find(|c| c.name == sub).copied()
}

/// What a connect request answers with.
#[derive(Debug)]
pub(crate) struct Connected {
    /// The `text/plain` body written at once.
    pub text: String,
    /// When set, the body stays open (`follow`) until this says the object at `key` no longer
    /// produces output.
    pub follow: Option<Follow>,
}

/// Whether a followed stream stays open, given the object now stored (`None`: gone).
pub(crate) type StillOpen = Box<dyn Fn(Option<&Value>) -> bool + Send + Sync>;

/// A followed stream: open while `open` holds for the current object at `key`.
pub(crate) struct Follow {
    /// The storage key of the object followed.
    pub key: String,
    /// Whether the stream stays open given the object now stored at `key`.
    pub open: StillOpen,
}

impl std::fmt::Debug for Follow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follow").field("key", &self.key).finish()
    }
}

/// Serves a request of a connect subresource on the object `name`; `query` holds the request's
/// options (`container`, `tailLines`, …) and `method` was already checked against its verbs.
pub(crate) fn serve(
    objects: &Objects,
    info: &ResourceInfo,
    connecter: Connecter,
    namespace: Option<&str>,
    name: &str,
    query: &[(String, String)],
) -> Result<Connected, ApiError> {
    let object = objects.get(info, namespace, name)?;
    match (info.group.as_str(), info.resource.as_str(), connecter.name) {
        ("", "pods", "log") => {
            let key = Objects::key(info, namespace, name);
            super::core::pod_log::log(&object, key, query)
        }
        ("", "pods", "exec" | "attach") => {
            super::core::pod_log::container_of(&object, query)?;
            Err(super::core::pod_log::unreachable_node(
                &object,
                connecter.name,
            ))
        }
        ("", "pods", "portforward" | "proxy") => Err(super::core::pod_log::unreachable_node(
            &object,
            connecter.name,
        )),
        ("", "services", "proxy") => {
            let endpoints = objects
                .registry()
                .get("", "v1", "endpoints")
                .and_then(|e| objects.get(&e, namespace, name).ok());
            let ready = endpoints.as_deref().is_some_and(|e| {
                e.get("subsets").and_then(Value::as_array).is_some_and(|s| {
                    s.iter().any(|s| {
                        s.get("addresses")
                            .is_some_and(|a| a.as_array().is_some_and(|a| !a.is_empty()))
                    })
                })
            });
            if ready {
                Err(ApiError::bad_request(format!(
                    "service \"{name}\" has endpoints, but korral-apiserver has no pod network \
                     to reach them"
                )))
            } else {
                Err(ApiError::unavailable(format!(
                    "no endpoints available for service \"{name}\""
                )))
            }
        }
        ("", "nodes", "proxy") => Err(ApiError::bad_request(format!(
            "node \"{name}\" runs no kubelet korral-apiserver can reach (the embedded control \
             plane simulates nodes)"
        ))),
        _ => Err(ApiError::unknown_resource()),
    }
}
