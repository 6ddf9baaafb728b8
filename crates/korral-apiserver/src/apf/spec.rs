//! The fields of stored FlowSchemas and PriorityLevelConfigurations the filter reads (our own
//! types: k8s-openapi's differ between Kubernetes versions in which fields are optional).

use serde::Deserialize;

/// `metadata` and `spec` of a stored object.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Stored<S> {
    /// Its metadata.
    #[serde(default)]
    pub(super) metadata: Metadata,
    /// Its spec.
    pub(super) spec: Option<S>,
}

/// `metadata.name` and `metadata.uid`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Metadata {
    /// The name.
    pub(super) name: Option<String>,
    /// The uid.
    pub(super) uid: Option<String>,
}

/// A FlowSchema's spec.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FlowSchemaSpec {
    /// Lower matches first.
    pub(super) matching_precedence: Option<i32>,
    /// The priority level of its requests.
    pub(super) priority_level_configuration: Option<Named>,
    /// `ByUser` or `ByNamespace`.
    pub(super) distinguisher_method: Option<Typed>,
    /// Its rules.
    #[serde(default)]
    pub(super) rules: Vec<PolicyRulesWithSubjects>,
}

/// A `{name}` reference or subject.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Named {
    /// The name.
    #[serde(default)]
    pub(super) name: String,
}

/// A `{type}` field.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Typed {
    /// The type.
    #[serde(default, rename = "type")]
    pub(super) type_: String,
}

/// One rule of a FlowSchema.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PolicyRulesWithSubjects {
    /// Who.
    #[serde(default)]
    pub(super) subjects: Vec<Subject>,
    /// Which resource requests.
    #[serde(default)]
    pub(super) resource_rules: Vec<ResourcePolicyRule>,
    /// Which non-resource requests.
    #[serde(default)]
    pub(super) non_resource_rules: Vec<NonResourcePolicyRule>,
}

/// A `User`, `Group` or `ServiceAccount` subject.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub(super) kind: String,
    /// For `User`.
    pub(super) user: Option<Named>,
    /// For `Group`.
    pub(super) group: Option<Named>,
    /// For `ServiceAccount`.
    pub(super) service_account: Option<ServiceAccountSubject>,
}

/// A service account subject.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct ServiceAccountSubject {
    /// Its namespace.
    #[serde(default)]
    pub(super) namespace: String,
    /// Its name, `*` for all of the namespace.
    #[serde(default)]
    pub(super) name: String,
}

/// A resource rule.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ResourcePolicyRule {
    /// Verbs.
    #[serde(default)]
    pub(super) verbs: Vec<String>,
    /// API groups.
    #[serde(default)]
    pub(super) api_groups: Vec<String>,
    /// `resource` or `resource/subresource`.
    #[serde(default)]
    pub(super) resources: Vec<String>,
    /// Whether cluster-scoped requests match.
    #[serde(default)]
    pub(super) cluster_scope: bool,
    /// Namespaces.
    #[serde(default)]
    pub(super) namespaces: Vec<String>,
}

/// A non-resource rule.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct NonResourcePolicyRule {
    /// Verbs.
    #[serde(default)]
    pub(super) verbs: Vec<String>,
    /// Paths, `*` or `prefix/*`.
    #[serde(default, rename = "nonResourceURLs")]
    pub(super) non_resource_urls: Vec<String>,
}

/// A PriorityLevelConfiguration's spec.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct PriorityLevelSpec {
    /// `Exempt` or `Limited`.
    #[serde(default, rename = "type")]
    pub(super) type_: String,
    /// For `Exempt`.
    pub(super) exempt: Option<Shares>,
    /// For `Limited`.
    pub(super) limited: Option<Limited>,
}

/// An exempt level's shares.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Shares {
    /// Its share of the server's concurrency limit.
    pub(super) nominal_concurrency_shares: Option<i32>,
    /// The percentage of its nominal seats other levels may borrow.
    pub(super) lendable_percent: Option<i32>,
}

/// A limited level.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Limited {
    /// Its share of the server's concurrency limit.
    pub(super) nominal_concurrency_shares: Option<i32>,
    /// The percentage of its nominal seats other levels may borrow.
    pub(super) lendable_percent: Option<i32>,
    /// The percentage of its nominal seats it may borrow (unset: no limit).
    pub(super) borrowing_limit_percent: Option<i32>,
    /// What happens to requests over the limit.
    pub(super) limit_response: Option<LimitResponse>,
}

/// `Reject` or `Queue`.
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct LimitResponse {
    /// `Reject` or `Queue`.
    #[serde(default, rename = "type")]
    pub(super) type_: String,
    /// For `Queue`.
    pub(super) queuing: Option<QueuingConfiguration>,
}

/// Queues.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct QueuingConfiguration {
    /// Number of queues.
    pub(super) queues: Option<i32>,
    /// Queues per flow.
    pub(super) hand_size: Option<i32>,
    /// Requests per queue.
    pub(super) queue_length_limit: Option<i32>,
}

/// A stored FlowSchema.
pub(super) type FlowSchema = Stored<FlowSchemaSpec>;
/// A stored PriorityLevelConfiguration.
pub(super) type PriorityLevel = Stored<PriorityLevelSpec>;
