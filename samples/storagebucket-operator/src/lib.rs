//! The StorageBucket operator, on Korral: resources that stand for something outside the
//! cluster, watched by polling.
//!
//! A `StorageBucket` (`demo.example.com/v1`) names an object-storage bucket: `spec.endpoint`
//! (an S3-compatible HTTP endpoint) and `spec.bucket`. Nothing in the cluster changes when the
//! bucket comes or goes, so the controller is driven by a periodic trigger: a leader-elected
//! runnable ([`PeriodicTrigger`]) sends a tick every interval on a channel; the controller
//! watches that channel ([`Channel`] source) through a map function that turns each tick into
//! a request for every StorageBucket in the cache. Each reconcile probes the bucket for real
//! (`HEAD <endpoint>/<bucket>` with a timeout, see [`probe`]) and patches `status.lastProbeTime`,
//! `status.available` and a `Ready` condition through the status subresource.
//!
//! Spec changes reconcile at once too (the primary watch passes generation changes only, so the
//! controller's own status writes do not loop back into probes).
//!
//! ```no_run
//! use korral::prelude::*;
//! use storagebucket_operator::ProbeSettings;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let mut manager = Manager::from_env().await?.build()?;
//! storagebucket_operator::add_to_manager(&mut manager, Scope::All, ProbeSettings::default())?;
//! manager.run(korral::manager::shutdown_signal()).await?;
//! # Ok(())
//! # }
//! ```

#![warn(missing_docs)]

pub mod probe;

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use korral::cache::CacheError;
use korral::conditions::{FALSE, TRUE, new_condition, set_condition};
use korral::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tracing::info;

pub use probe::{ProbeOutcome, bucket_url};

/// The controller's name (its metrics label and log field).
pub const CONTROLLER_NAME: &str = "storagebucket";
/// The condition reporting whether the bucket is reachable.
pub const READY: &str = "Ready";

/// An object-storage bucket outside the cluster.
// Several printer columns of the same type look like a duplicated attribute to clippy.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "demo.example.com",
    version = "v1",
    kind = "StorageBucket",
    namespaced,
    status = "StorageBucketStatus",
    derive = "PartialEq",
    doc = "An object-storage bucket outside the cluster, probed periodically over HTTP.",
    printcolumn(
        name = "Endpoint",
        type_ = "string",
        json_path = ".spec.endpoint",
        description = "The storage endpoint"
    ),
    printcolumn(
        name = "Bucket",
        type_ = "string",
        json_path = ".spec.bucket",
        description = "The bucket"
    ),
    printcolumn(
        name = "Available",
        type_ = "boolean",
        json_path = ".status.available",
        description = "Whether the last probe found the bucket"
    ),
    printcolumn(
        name = "Last Probe",
        type_ = "date",
        json_path = ".status.lastProbeTime",
        description = "When the bucket was last probed"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct StorageBucketSpec {
    /// The S3-compatible endpoint, `http://host[:port][/path]`.
    #[schemars(
        length(min = 8, max = 2048),
        regex(pattern = r"^http://[^/\s]+(/\S*)?$")
    )]
    pub endpoint: String,
    /// The bucket name (S3 rules: 3 to 63 lowercase letters, digits, dots and hyphens, starting
    /// and ending with a letter or digit).
    #[schemars(
        length(min = 3, max = 63),
        regex(pattern = r"^[a-z0-9][a-z0-9.-]*[a-z0-9]$")
    )]
    pub bucket: String,
}

/// What the last probe found.
#[derive(Deserialize, Serialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageBucketStatus {
    /// When the bucket was last probed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub last_probe_time: Option<String>,
    /// Whether the last probe found the bucket.
    #[serde(default)]
    pub available: bool,
    /// The `metadata.generation` the last probe used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Ready`: whether the bucket is reachable, with the reason and the probe's answer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "korral::conditions::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// The sample resource (`config/samples/demo_v1_storagebucket.yaml`), namespace unset.
pub fn sample() -> StorageBucket {
    StorageBucket::new(
        "storagebucket-sample",
        StorageBucketSpec {
            endpoint: "http://127.0.0.1:9000".to_owned(),
            bucket: "photos".to_owned(),
        },
    )
}

/// How often and how patiently buckets are probed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeSettings {
    /// The period of the trigger: every bucket is probed once per interval.
    pub interval: Duration,
    /// How long one probe may take (connecting included).
    pub timeout: Duration,
}

impl Default for ProbeSettings {
    /// A probe every 30 s, 5 s timeout.
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(30),
            timeout: Duration::from_secs(5),
        }
    }
}

/// How many buckets are probed at once. A probe waits on a remote endpoint for up to the probe
/// timeout, so with one worker a single unreachable endpoint would delay every other bucket's
/// probe by that long each period; eight workers bound that delay while keeping the number of
/// open connections to the storage service and of status writes small.
pub const MAX_CONCURRENT_RECONCILES: usize = 8;

/// What the reconciler works with.
#[derive(Clone)]
pub struct Context {
    /// Status writes go to the API server with this client.
    pub client: KorralClient,
    /// The probe timeout.
    pub timeout: Duration,
}

/// Adds the StorageBucket controller and its leader-elected periodic trigger to `manager`,
/// for StorageBuckets in `scope`, and declares its CRD and permissions (for
/// `--print-manifests`).
pub fn add_to_manager(
    manager: &mut Manager,
    scope: Scope,
    settings: ProbeSettings,
) -> Result<(), CacheError> {
    let buckets = manager.cache().informer::<StorageBucket>(scope.clone())?;
    let (trigger, ticks) = PeriodicTrigger::new("storagebucket-probe", settings.interval);
    let every_bucket = move |_: &Tick| -> Vec<ObjectRef> {
        buckets
            .list()
            .iter()
            .filter_map(|bucket| ObjectRef::from_object(bucket.as_ref()))
            .collect()
    };
    let controller = Controller::new(manager.cache().clone(), CONTROLLER_NAME)
        .for_::<StorageBucket>(scope)
        .for_predicate(GenerationChanged)
        .watches(ticks, MapFn(every_bucket))
        .writes_status()
        .max_concurrent_reconciles(MAX_CONCURRENT_RECONCILES);
    manager.declare_crd::<StorageBucket>();
    let ctx = Context {
        client: manager.cached_client().clone(),
        timeout: settings.timeout,
    };
    manager.add_controller(controller, reconcile, Arc::new(ctx));
    trigger.add_to(manager);
    Ok(())
}

/// The status after a probe with `outcome` of `bucket`, at `now`.
pub fn status_after_probe(
    bucket: &StorageBucket,
    outcome: &ProbeOutcome,
    now: jiff::Timestamp,
) -> StorageBucketStatus {
    let url = bucket_url(&bucket.spec.endpoint, &bucket.spec.bucket);
    let generation = bucket.metadata.generation;
    let mut status = bucket.status.clone().unwrap_or_default();
    let mut ready = new_condition(
        READY,
        if outcome.is_available() { TRUE } else { FALSE },
        outcome.reason(),
        &outcome.message(&url),
        generation,
    );
    ready.last_transition_time = Time(now);
    set_condition(&mut status.conditions, ready);
    status.available = outcome.is_available();
    status.last_probe_time = Some(now.to_string());
    status.observed_generation = generation;
    status
}

/// Probes the bucket and records the outcome; see the [crate docs](crate).
pub async fn reconcile(bucket: Arc<StorageBucket>, ctx: Arc<Context>) -> ReconcileResult {
    if bucket.metadata.deletion_timestamp.is_some() {
        return Ok(Action::done());
    }
    let name = bucket.name_any();
    let Some(namespace) = bucket.namespace() else {
        return Err(ReconcileError::terminal(format!(
            "StorageBucket {name} has no namespace"
        )));
    };
    let url = bucket_url(&bucket.spec.endpoint, &bucket.spec.bucket);
    let outcome = probe::probe(&url, ctx.timeout).await;
    let status = status_after_probe(&bucket, &outcome, jiff::Timestamp::now());
    let was_available = bucket.status.as_ref().map(|s| s.available);
    if was_available != Some(status.available) {
        info!(%namespace, %name, %url, available = status.available, reason = outcome.reason(), "bucket availability changed");
    }
    ctx.client.patch_status(bucket.as_ref(), &status).await?;
    Ok(Action::done())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;
    use serde_json::json;

    #[test]
    fn the_crd_validates_endpoint_and_bucket() {
        let crd = serde_json::to_value(StorageBucket::crd()).expect("crd json");
        assert_eq!(crd["metadata"]["name"], "storagebuckets.demo.example.com");
        let version = &crd["spec"]["versions"][0];
        assert_eq!(version["subresources"]["status"], json!({}));
        let schema = &version["schema"]["openAPIV3Schema"]["properties"];
        assert_eq!(
            schema["spec"]["properties"]["endpoint"]["pattern"],
            r"^http://[^/\s]+(/\S*)?$"
        );
        assert_eq!(schema["spec"]["properties"]["bucket"]["maxLength"], 63);
        let conditions = &schema["status"]["properties"]["conditions"];
        assert_eq!(conditions["x-kubernetes-list-type"], "map");
        assert_eq!(
            schema["status"]["properties"]["lastProbeTime"]["format"],
            "date-time"
        );
    }

    #[test]
    fn the_ready_condition_follows_the_probe_and_keeps_its_transition_time() {
        let mut bucket = sample();
        bucket.metadata.generation = Some(2);
        let t1 = jiff::Timestamp::from_second(1_000).expect("t1");
        let up = status_after_probe(&bucket, &ProbeOutcome::Available(StatusCode::OK), t1);
        assert!(up.available);
        assert_eq!(up.conditions[0].status, "True");
        assert_eq!(up.conditions[0].reason, "BucketAvailable");
        assert_eq!(up.conditions[0].observed_generation, Some(2));
        assert_eq!(up.last_probe_time.as_deref(), Some("1970-01-01T00:16:40Z"));

        bucket.status = Some(up.clone());
        let t2 = jiff::Timestamp::from_second(2_000).expect("t2");
        let still = status_after_probe(&bucket, &ProbeOutcome::Available(StatusCode::OK), t2);
        assert_eq!(
            still.conditions[0].last_transition_time, up.conditions[0].last_transition_time,
            "same status: the transition time stays"
        );
        assert_ne!(still.last_probe_time, up.last_probe_time);

        let down = status_after_probe(&bucket, &ProbeOutcome::Unreachable("refused".into()), t2);
        assert!(!down.available);
        assert_eq!(down.conditions.len(), 1);
        assert_eq!(down.conditions[0].status, "False");
        assert_eq!(down.conditions[0].reason, "EndpointUnreachable");
        assert!(
            down.conditions[0]
                .message
                .contains("http://127.0.0.1:9000/photos")
        );
    }

    #[test]
    fn the_sample_matches_the_yaml() {
        let yaml = include_str!("../config/samples/demo_v1_storagebucket.yaml");
        let parsed: StorageBucket = serde_yaml_ng::from_str(yaml).expect("sample yaml");
        assert_eq!(parsed.spec, sample().spec);
        assert_eq!(parsed.metadata.name, sample().metadata.name);
    }
}
