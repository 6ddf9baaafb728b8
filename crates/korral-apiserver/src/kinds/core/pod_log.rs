//! `pods/log` and the container checks of the other pod connect subresources, as upstream's
//! `LogREST` and `LogLocation` decide them (`pkg/registry/core/pod/rest/log.go`,
//! `pkg/registry/core/pod/strategy.go`), with the kubelet's answers for the container's state.
//!
//! - The options are validated first (`ValidatePodLogOptions`: 422 `PodLogOptions` invalid);
//!   a malformed number is a 400.
//! - The container: the one named by `container` (any container, init or ephemeral), or the
//!   pod's only container; otherwise 400 with upstream's message listing the names.
//! - A pod without a node has an empty log (upstream answers an empty stream).
//! - On a node, the kubelet answers 400 for a container still waiting (`ContainerCreating`
//!   before it has a status) and for `previous` without a terminated earlier run; a running or
//!   terminated container's log is what it wrote: simulated containers run no process, so
//!   it is empty. `follow` keeps the stream open while the container runs.

use serde_json::Value;

use crate::ApiError;
use crate::error::Cause;
use crate::kinds::connect::{Connected, Follow};
use crate::meta;

/// The containers of every kind in `pod`, in upstream's visiting order (init, regular,
/// ephemeral).
fn container_names(pod: &Value) -> Vec<&str> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(|list| {
            meta::path(pod, &format!("spec.{list}"))
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
        })
        .filter_map(|c| c.get("name").and_then(Value::as_str))
        .collect()
}

/// The first value of the query parameter `name`.
fn param<'a>(query: &'a [(String, String)], name: &str) -> Option<&'a str> {
    query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Upstream's `validateContainer`: the container named in the query, or the pod's only one.
pub(crate) fn container_of(pod: &Value, query: &[(String, String)]) -> Result<String, ApiError> {
    let name = meta::name(pod);
    match param(query, "container").filter(|c| !c.is_empty()) {
        Some(container) if container_names(pod).contains(&container) => Ok(container.to_string()),
        Some(container) => Err(ApiError::bad_request(format!(
            "container {container} is not valid for pod {name}"
        ))),
        None => {
            let regular: Vec<&Value> = meta::path(pod, "spec.containers")
                .and_then(Value::as_array)
                .map(|l| l.iter().collect())
                .unwrap_or_default();
            match regular.as_slice() {
                [only] => Ok(only
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()),
                [] => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}"
                ))),
                _ => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {name}, choose one of: [{}]",
                    container_names(pod).join(" ")
                ))),
            }
        }
    }
}

/// An integer option, or upstream's 400 for one that does not parse.
fn int_option(query: &[(String, String)], name: &str) -> Result<Option<i64>, ApiError> {
    param(query, name)
        .map(|v| {
            v.parse::<i64>().map_err(|_| {
                ApiError::bad_request(format!(
                    "strconv.ParseInt: parsing {v:?}: invalid syntax (for the {name} option)"
                ))
            })
        })
        .transpose()
}

/// A boolean option as upstream's query conversion reads it.
fn bool_option(query: &[(String, String)], name: &str) -> Result<bool, ApiError> {
    match param(query, name) {
        None | Some("" | "false" | "0" | "False" | "FALSE" | "f" | "F") => Ok(false),
        Some("true" | "1" | "True" | "TRUE" | "t" | "T") => Ok(true),
        Some(other) => Err(ApiError::bad_request(format!(
            "strconv.ParseBool: parsing {other:?}: invalid syntax (for the {name} option)"
        ))),
    }
}

/// Upstream's `ValidatePodLogOptions` on the query's options (422 for kind `PodLogOptions`).
fn validate_options(pod_name: &str, query: &[(String, String)]) -> Result<(), ApiError> {
    let mut causes = Vec::new();
    if let Some(tail) = int_option(query, "tailLines")?
        && tail < 0
    {
        causes.push(Cause::invalid(
            "tailLines",
            &Value::from(tail),
            "must be greater than or equal to 0",
        ));
    }
    if let Some(limit) = int_option(query, "limitBytes")?
        && limit < 1
    {
        causes.push(Cause::invalid(
            "limitBytes",
            &Value::from(limit),
            "must be greater than 0",
        ));
    }
    let since_seconds = int_option(query, "sinceSeconds")?;
    let since_time = param(query, "sinceTime");
    if let Some(time) = since_time
        && time.parse::<jiff::Timestamp>().is_err()
    {
        return Err(ApiError::bad_request(format!(
            "parsing time {time:?} as RFC3339 (for the sinceTime option)"
        )));
    }
    match (since_seconds, since_time) {
        (Some(_), Some(_)) => causes.push(Cause::forbidden(
            "",
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        )),
        (Some(seconds), None) if seconds < 1 => causes.push(Cause::invalid(
            "sinceSeconds",
            &Value::from(seconds),
            "must be greater than 0",
        )),
        _ => {}
    }
    for flag in [
        "follow",
        "previous",
        "timestamps",
        "insecureSkipTLSVerifyBackend",
    ] {
        bool_option(query, flag)?;
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("", "PodLogOptions", pod_name, causes))
    }
}

/// The status of `container` (of any kind) in `pod`.
fn container_status<'a>(pod: &'a Value, container: &str) -> Option<&'a Value> {
    [
        "initContainerStatuses",
        "containerStatuses",
        "ephemeralContainerStatuses",
    ]
    .into_iter()
    .flat_map(|list| {
        meta::path(pod, &format!("status.{list}"))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[])
    })
    .find(|s| s.get("name").and_then(Value::as_str) == Some(container))
}

/// Whether the container's current run is running.
fn running(pod: &Value, uid: &str, container: &str) -> bool {
    meta::uid(pod) == uid
        && container_status(pod, container)
            .and_then(|s| meta::path(s, "state.running"))
            .is_some()
}

/// `GET pods/log`: the container's log (empty for simulated containers) or upstream's refusal.
pub(crate) fn log(
    pod: &Value,
    key: String,
    query: &[(String, String)],
) -> Result<Connected, ApiError> {
    let name = meta::name(pod);
    validate_options(name, query)?;
    let container = container_of(pod, query)?;
    let node = meta::path(pod, "spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Ok(Connected {
            text: String::new(),
            follow: None,
        });
    }
    let status = container_status(pod, &container);
    let state = status.and_then(|s| s.get("state"));
    if bool_option(query, "previous")? {
        if status
            .and_then(|s| meta::path(s, "lastState.terminated"))
            .is_none()
        {
            return Err(ApiError::bad_request(format!(
                "previous terminated container \"{container}\" in pod \"{name}\" not found"
            )));
        }
        return Ok(Connected {
            text: String::new(),
            follow: None,
        });
    }
    let waiting = match state {
        None => Some("ContainerCreating"),
        Some(s) if s.get("running").is_some() || s.get("terminated").is_some() => None,
        Some(s) => Some(
            meta::path(s, "waiting.reason")
                .and_then(Value::as_str)
                .unwrap_or("ContainerCreating"),
        ),
    };
    if let Some(reason) = waiting {
        return Err(ApiError::bad_request(format!(
            "container \"{container}\" in pod \"{name}\" is waiting to start: {reason}"
        )));
    }
    let follow =
        (bool_option(query, "follow")? && running(pod, meta::uid(pod), &container)).then(|| {
            let uid = meta::uid(pod).to_string();
            Follow {
                key,
                open: Box::new(move |now: Option<&Value>| {
                    now.is_some_and(|p| running(p, &uid, &container))
                }),
            }
        });
    Ok(Connected {
        text: String::new(),
        follow,
    })
}

/// What `exec`, `attach`, `portforward` and `proxy` of a pod answer: upstream's 400 for a pod
/// without a node; otherwise a 400 saying that no kubelet is reachable (not a 5xx, which
/// clients would retry).
pub(crate) fn unreachable_node(pod: &Value, subresource: &str) -> ApiError {
    let name = meta::name(pod);
    let node = meta::path(pod, "spec.nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return ApiError::bad_request(format!("pod {name} does not have a host assigned"));
    }
    ApiError::bad_request(format!(
        "pods/{subresource} of pod {name}: node \"{node}\" runs no kubelet korral-apiserver can \
         reach (the embedded control plane simulates nodes; it runs no containers)"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(node: Option<&str>, statuses: Value) -> Value {
        json!({"metadata": {"name": "web", "uid": "u1"},
               "spec": {"nodeName": node, "initContainers": [{"name": "init"}],
                        "containers": [{"name": "app"}, {"name": "side"}]},
               "status": {"containerStatuses": statuses}})
    }

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_container_is_named_or_the_only_one() {
        let p = pod(None, json!([]));
        let err = container_of(&p, &[]).expect_err("two containers");
        assert_eq!(
            err.message,
            "a container name must be specified for pod web, choose one of: [init app side]"
        );
        assert_eq!(err.code, 400);
        let err = container_of(&p, &q(&[("container", "nope")])).expect_err("unknown");
        assert_eq!(err.message, "container nope is not valid for pod web");
        assert_eq!(
            container_of(&p, &q(&[("container", "init")])).expect("init"),
            "init"
        );
        let single = json!({"metadata": {"name": "one"}, "spec": {"containers": [{"name": "c"}]}});
        assert_eq!(container_of(&single, &[]).expect("only"), "c");
    }

    #[test]
    fn options_are_validated_as_upstream() {
        let p = pod(None, json!([]));
        let err = log(
            &p,
            "k".into(),
            &q(&[
                ("container", "app"),
                ("tailLines", "-1"),
                ("limitBytes", "0"),
            ]),
        )
        .expect_err("invalid");
        assert_eq!(err.code, 422);
        assert_eq!(
            err.message,
            "PodLogOptions \"web\" is invalid: [tailLines: Invalid value: -1: must be greater than or equal to 0, limitBytes: Invalid value: 0: must be greater than 0]"
        );
        let err = log(
            &p,
            "k".into(),
            &q(&[
                ("container", "app"),
                ("sinceSeconds", "5"),
                ("sinceTime", "2026-01-01T00:00:00Z"),
            ]),
        )
        .expect_err("both");
        assert!(
            err.message
                .contains("at most one of `sinceTime` or `sinceSeconds`"),
            "{}",
            err.message
        );
        let err = log(
            &p,
            "k".into(),
            &q(&[("container", "app"), ("tailLines", "x")]),
        )
        .expect_err("malformed");
        assert_eq!(err.code, 400);
    }

    #[test]
    fn logs_follow_the_container_state() {
        let unscheduled = pod(None, json!([]));
        let got = log(&unscheduled, "k".into(), &q(&[("container", "app")])).expect("empty");
        assert_eq!(got.text, "");
        let creating = pod(Some("n1"), json!([]));
        let err = log(&creating, "k".into(), &q(&[("container", "app")])).expect_err("waiting");
        assert_eq!(
            err.message,
            "container \"app\" in pod \"web\" is waiting to start: ContainerCreating"
        );
        let pulling = pod(
            Some("n1"),
            json!([{"name": "app", "state": {"waiting": {"reason": "ImagePullBackOff"}}}]),
        );
        let err = log(&pulling, "k".into(), &q(&[("container", "app")])).expect_err("waiting");
        assert!(
            err.message
                .ends_with("is waiting to start: ImagePullBackOff")
        );
        let running_pod = pod(
            Some("n1"),
            json!([{"name": "app", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]),
        );
        let got = log(
            &running_pod,
            "k".into(),
            &q(&[("container", "app"), ("follow", "true")]),
        )
        .expect("running");
        let follow = got.follow.expect("follows a running container");
        assert!((follow.open)(Some(&running_pod)));
        assert!(!(follow.open)(None));
        let err = log(
            &running_pod,
            "k".into(),
            &q(&[("container", "app"), ("previous", "true")]),
        )
        .expect_err("no previous run");
        assert_eq!(
            err.message,
            "previous terminated container \"app\" in pod \"web\" not found"
        );
    }

    #[test]
    fn streams_need_a_node() {
        let p = pod(None, json!([]));
        assert_eq!(
            unreachable_node(&p, "exec").message,
            "pod web does not have a host assigned"
        );
        let on_node = unreachable_node(&pod(Some("n1"), json!([])), "exec");
        assert_eq!(on_node.code, 400);
        assert!(
            on_node.message.contains("runs no kubelet"),
            "{}",
            on_node.message
        );
    }
}
