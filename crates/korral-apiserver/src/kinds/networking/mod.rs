//! `networking.k8s.io/v1`: Ingresses, IngressClasses, NetworkPolicies, and the address kinds
//! IPAddress and ServiceCIDR.

use k8s_openapi::api::networking::v1 as api;

use serde_json::{Map, Value, json};

mod validation;

use super::KindDef;
use super::printer::{AGE, Column, Printer, age, joined, or_none, selector_at, text};
use super::strategy::{Context, Strategy, strip_status};
use crate::error::Cause;
use crate::registry::{NameRule, ResourceInfo};
use validation::{list, set, string};

/// The legacy annotation naming an Ingress's class (upstream's
/// `networkingv1beta1.AnnotationIngressClass`), still honoured beside `spec.ingressClassName`.
pub(crate) const INGRESS_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The ServiceCIDR upstream's control plane keeps for its service range (`kubernetes`), as its
/// default-ServiceCIDR controller creates it: the range in `spec.cidrs`, and (written through
/// `/status`, see [`default_service_cidr_status`]) a `Ready` condition.
pub(crate) fn default_service_cidr(range: &str) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "ServiceCIDR",
        "metadata": {"name": "kubernetes"},
        "spec": {"cidrs": [range]},
    })
}

/// The status upstream's controller applies to the default ServiceCIDR once it matches the
/// server's range: `Ready=True` with its message and no reason.
pub(crate) fn default_service_cidr_status(now: &str) -> Value {
    json!({"conditions": [{
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": now,
        "reason": "",
        "message": "Kubernetes default Service CIDR is ready",
    }]})
}

const GROUP: &str = "networking.k8s.io";

/// The kinds of `networking.k8s.io/v1`.
pub(super) fn kinds() -> Vec<KindDef> {
    vec![
        KindDef::new(
            GROUP,
            "v1",
            "ingressclasses",
            "IngressClass",
            IngressClassStrategy,
        )
        .schema::<api::IngressClass>()
        .cluster_scoped()
        .generation()
        .printer(INGRESS_CLASSES),
        KindDef::new(GROUP, "v1", "ingresses", "Ingress", IngressStrategy)
            .schema::<api::Ingress>()
            .short(&["ing"])
            .status()
            .generation()
            .printer(INGRESSES),
        KindDef::new(GROUP, "v1", "ipaddresses", "IPAddress", IpAddressStrategy)
            .schema::<api::IPAddress>()
            .cluster_scoped()
            .short(&["ip"])
            .names(NameRule::PathSegment)
            .printer(IP_ADDRESSES),
        KindDef::new(
            GROUP,
            "v1",
            "networkpolicies",
            "NetworkPolicy",
            NetworkPolicyStrategy,
        )
        .schema::<api::NetworkPolicy>()
        .short(&["netpol"])
        .generation()
        .printer(NETWORK_POLICIES),
        KindDef::new(
            GROUP,
            "v1",
            "servicecidrs",
            "ServiceCIDR",
            ServiceCidrStrategy,
        )
        .schema::<api::ServiceCIDR>()
        .cluster_scoped()
        .status()
        .generation()
        .printer(SERVICE_CIDRS),
    ]
}

/// The `spec` of an object, `null` when absent.
fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// The `spec` object of `obj`, created when absent.
fn spec_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let root = obj.as_object_mut()?;
    root.entry("spec")
        .or_insert_with(|| json!({}))
        .as_object_mut()
}

/// Ingresses: upstream's strategy starts their status with an empty load balancer.
#[derive(Debug, Clone, Copy)]
struct IngressStrategy;

impl Strategy for IngressStrategy {
    fn prepare_for_create(&self, _info: &ResourceInfo, obj: &mut Value, _ctx: &Context) {
        strip_status(obj);
        if let Some(root) = obj.as_object_mut() {
            root.insert("status".into(), json!({"loadBalancer": {}}));
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::ingress_create(obj)
    }

    /// Through `/status` only the load balancer rules (as upstream's status strategy).
    fn validate_update(&self, obj: &Value, _old: &Value, ctx: &Context) -> Vec<Cause> {
        if ctx.subresource == Some("status") {
            return validation::ingress_status(obj);
        }
        validation::ingress_spec(spec(obj), "spec")
    }
}

/// IngressClasses: a controller that never changes; parameters default to the `Cluster`
/// scope (upstream's `SetDefaults_IngressClass`).
#[derive(Debug, Clone, Copy)]
struct IngressClassStrategy;

impl Strategy for IngressClassStrategy {
    fn default(&self, obj: &mut Value) {
        if let Some(params) = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("parameters"))
            .and_then(Value::as_object_mut)
            && params.get("scope").is_none_or(Value::is_null)
        {
            params.insert("scope".into(), json!("Cluster"));
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::ingress_class_spec(spec(obj), "spec")
    }

    fn validate_update(&self, obj: &Value, old: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::ingress_class_update(spec(obj), spec(old))
    }
}

/// NetworkPolicies: ports default to TCP; `policyTypes` default to `Ingress` (and `Egress` when
/// egress rules exist), as upstream's `SetDefaults_NetworkPolicySpec`.
#[derive(Debug, Clone, Copy)]
struct NetworkPolicyStrategy;

impl Strategy for NetworkPolicyStrategy {
    fn default(&self, obj: &mut Value) {
        let Some(spec) = spec_mut(obj) else {
            return;
        };
        spec.entry("podSelector").or_insert_with(|| json!({}));
        for direction in ["ingress", "egress"] {
            let Some(rules) = spec.get_mut(direction).and_then(Value::as_array_mut) else {
                continue;
            };
            for rule in rules {
                let Some(ports) = rule.get_mut("ports").and_then(Value::as_array_mut) else {
                    continue;
                };
                for port in ports.iter_mut().filter_map(Value::as_object_mut) {
                    if port.get("protocol").is_none_or(Value::is_null) {
                        port.insert("protocol".into(), json!("TCP"));
                    }
                }
            }
        }
        let types_unset = spec
            .get("policyTypes")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if types_unset {
            let egress = spec
                .get("egress")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty());
            let types = if egress {
                json!(["Ingress", "Egress"])
            } else {
                json!(["Ingress"])
            };
            spec.insert("policyTypes".into(), types);
        }
    }

    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::network_policy_spec(spec(obj), "spec")
    }
}

/// IPAddresses: named by their address, with an immutable parent reference.
#[derive(Debug, Clone, Copy)]
struct IpAddressStrategy;

impl Strategy for IpAddressStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::ip_address(obj)
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        let mut errs = self.validate(obj, ctx);
        errs.extend(crate::kinds::workload::immutable(
            spec(obj),
            spec(old),
            "parentRef",
            "spec",
        ));
        errs
    }
}

/// ServiceCIDRs: one or two CIDRs, immutable once set (only a second family may be added).
#[derive(Debug, Clone, Copy)]
struct ServiceCidrStrategy;

impl Strategy for ServiceCidrStrategy {
    fn validate(&self, obj: &Value, _ctx: &Context) -> Vec<Cause> {
        validation::service_cidr(spec(obj))
    }

    fn validate_update(&self, obj: &Value, old: &Value, ctx: &Context) -> Vec<Cause> {
        let mut errs = self.validate(obj, ctx);
        let (new, old) = (list(spec(obj), "cidrs"), list(spec(old), "cidrs"));
        let upgrade = old.len() == 1 && new.len() == 2 && new[0] == old[0];
        if new != old && !upgrade {
            errs.push(crate::validation::names::invalid_value(
                "spec.cidrs",
                &Value::Array(new.to_vec()),
                "field is immutable",
            ));
        }
        errs
    }
}

// ---------------------------------------------------------------------------------------------
// Printers (upstream's `pkg/printers/internalversion`)
// ---------------------------------------------------------------------------------------------

/// The widest load-balancer address list shown without `-o wide`.
const LOAD_BALANCER_WIDTH: usize = 16;

const INGRESSES: Printer = Printer {
    columns: &[
        Column::new(
            "Class",
            "The name of the IngressClass resource that should be used for additional configuration",
        ),
        Column::new(
            "Hosts",
            "Hosts that incoming requests are matched against before the ingress rule",
        ),
        Column::new(
            "Address",
            "Address is a list containing ingress points for the load-balancer",
        ),
        Column::new("Ports", "Ports of TLS configurations that open"),
        AGE,
    ],
    cells: |obj| {
        let spec = spec(obj);
        let rules = list(spec, "rules");
        // Upstream lists up to three hosts, and "more" once a rule follows the third.
        let mut shown: Vec<&str> = Vec::new();
        let mut more = false;
        for rule in rules {
            if shown.len() == 3 {
                more = true;
            }
            let host = string(rule, "host");
            if !more && !host.is_empty() {
                shown.push(host);
            }
        }
        let hosts = if shown.is_empty() {
            "*".to_string()
        } else if more {
            format!("{} + {} more...", shown.join(","), rules.len() - 3)
        } else {
            shown.join(",")
        };
        let mut address: String = crate::meta::path(obj, "status.loadBalancer.ingress")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|i| match string(i, "ip") {
                        "" => string(i, "hostname"),
                        ip => ip,
                    })
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        if address.len() > LOAD_BALANCER_WIDTH {
            address.truncate(LOAD_BALANCER_WIDTH - 3);
            address.push_str("...");
        }
        let ports = if list(spec, "tls").is_empty() {
            "80"
        } else {
            "80, 443"
        };
        vec![
            json!(or_none(string(spec, "ingressClassName"))),
            json!(hosts),
            json!(address),
            json!(ports),
            age(obj),
        ]
    },
};

const INGRESS_CLASSES: Printer = Printer {
    columns: &[
        Column::new(
            "Controller",
            "Controller that is responsible for handling this class",
        ),
        Column::new(
            "Parameters",
            "A reference to a resource with additional parameters",
        ),
        AGE,
    ],
    cells: |obj| {
        let parameters = match set(spec(obj), "parameters") {
            None => "<none>".to_string(),
            Some(p) => {
                let mut kind = string(p, "kind").to_string();
                if let Some(group) = p.get("apiGroup").and_then(Value::as_str) {
                    kind = format!("{kind}.{group}");
                }
                format!("{kind}/{}", string(p, "name"))
            }
        };
        vec![
            json!(text(obj, "spec.controller")),
            json!(parameters),
            age(obj),
        ]
    },
};

const NETWORK_POLICIES: Printer = Printer {
    columns: &[
        Column::new(
            "Pod-Selector",
            "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is optional. If it is not specified, it defaults to an empty selector.",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(selector_at(obj, "spec.podSelector")), age(obj)],
};

const IP_ADDRESSES: Printer = Printer {
    columns: &[
        Column::new(
            "ParentRef",
            "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.",
        ),
        AGE,
    ],
    cells: |obj| {
        let parent = crate::meta::path(obj, "spec.parentRef").unwrap_or(&Value::Null);
        let group = string(parent, "group");
        let resource = if group.is_empty() {
            string(parent, "resource").to_string()
        } else {
            format!("{}.{group}", string(parent, "resource"))
        };
        let namespace = string(parent, "namespace");
        let reference = if namespace.is_empty() {
            format!("{resource}/{}", string(parent, "name"))
        } else {
            format!("{resource}/{namespace}/{}", string(parent, "name"))
        };
        vec![json!(reference), age(obj)]
    },
};

const SERVICE_CIDRS: Printer = Printer {
    columns: &[
        Column::new(
            "CIDRs",
            "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.",
        ),
        AGE,
    ],
    cells: |obj| vec![json!(joined(obj, "spec.cidrs")), age(obj)],
};

#[cfg(test)]
mod tests {
    use super::*;

    fn defaulted(mut obj: Value) -> Value {
        NetworkPolicyStrategy.default(&mut obj);
        obj
    }

    #[test]
    fn network_policies_default_as_upstream() {
        let obj = defaulted(json!({"spec": {"ingress": [{"ports": [{"port": 80}]}]}}));
        assert_eq!(obj["spec"]["policyTypes"], json!(["Ingress"]));
        assert_eq!(obj["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
        let obj = defaulted(json!({"spec": {"podSelector": {}, "egress": [{}]}}));
        assert_eq!(obj["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        let obj = defaulted(json!({"spec": {"policyTypes": ["Egress"], "egress": [{}]}}));
        assert_eq!(obj["spec"]["policyTypes"], json!(["Egress"]));
    }

    #[test]
    fn ingress_rows_as_upstream() {
        let obj = json!({"metadata": {"creationTimestamp": "2020-01-01T00:00:00Z"}, "spec": {
            "rules": [{"host": "a.example.com"}, {}, {"host": "c.example.com"}, {"host": "d.example.com"}, {"host": "e.example.com"}],
            "tls": [{}],
        }, "status": {"loadBalancer": {"ingress": [{"ip": "10.0.0.1"}, {"hostname": "lb.example.com"}]}}});
        let cells = (INGRESSES.cells)(&obj);
        assert_eq!(cells[0], "<none>");
        assert_eq!(
            cells[1],
            "a.example.com,c.example.com,d.example.com + 2 more..."
        );
        assert_eq!(cells[2], "10.0.0.1,lb.e...");
        assert_eq!(cells[3], "80, 443");
        let cells = (INGRESSES.cells)(&json!({"spec": {"ingressClassName": "nginx"}}));
        assert_eq!(
            cells[..4],
            [json!("nginx"), json!("*"), json!(""), json!("80")]
        );
    }
}
